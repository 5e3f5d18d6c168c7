//! The approve/deny dialog window (filled in by the dialog work).

use landstrip_tray_core::broker::PromptId;
use landstrip_tray_core::service::Service;
use tauri::AppHandle;

/// Starts showing the dialog whenever prompts are pending.
pub fn start(_app: &AppHandle, _service: &Service) {}

/// Brings the dialog to the front, on `focus` if given (else the oldest pending prompt).
pub fn open(_app: &AppHandle, _focus: Option<PromptId>) {}
