//! Freedesktop notifications for new prompts (filled in by the notifications work).

use landstrip_tray_core::service::Service;
use tauri::AppHandle;

/// Starts raising a notification for every new prompt.
pub fn start(_app: &AppHandle, _service: &Service) {}
