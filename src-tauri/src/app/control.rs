//! `landstrip-tray ctl` and the control socket; also hands a second start's arguments to
//! the running instance (filled in by the control work).

use landstrip_tray_core::service::Service;
use tauri::AppHandle;

/// Serves the control socket for the running instance.
pub fn serve(_app: &AppHandle, _service: &Service) -> Result<(), Box<dyn std::error::Error>> {
    Ok(())
}
