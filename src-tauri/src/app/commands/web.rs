//! The settings window's phone page commands (Settings → General): each builds its
//! request for the core's operations table (the one `ctl web` goes through) and returns the
//! reply. capabilities/settings.json grants these to the `settings` window only.

use landstrip_tray_core::serving::service::Service;
use landstrip_tray_core::serving::web::DeviceInfo;
use landstrip_tray_core::surfaces::control::{Reply, Request};
use landstrip_tray_core::surfaces::web::{WebPairing, WebStatus};
use tauri::State;

use super::IpcError;

/// Whether the phone page serves, its URL, address and certificate fingerprint.
#[tauri::command]
pub async fn settings_web(service: State<'_, Service>) -> Result<WebStatus, IpcError> {
    operation!(service, Request::Web, Reply::Web(status) => status)
}

/// Turns the phone page on at `bind` (none: the saved address, or loopback), kept on.
#[tauri::command]
pub async fn settings_web_on(
    service: State<'_, Service>,
    bind: Option<String>,
) -> Result<WebStatus, IpcError> {
    operation!(service, Request::WebOn { bind }, Reply::Web(status) => status)
}

/// Turns the phone page off, kept off.
#[tauri::command]
pub async fn settings_web_off(service: State<'_, Service>) -> Result<WebStatus, IpcError> {
    operation!(service, Request::WebOff, Reply::Web(status) => status)
}

/// Mints a single-use pairing token: the URL, its expiry, the fingerprint, the QR rows.
#[tauri::command]
pub async fn settings_web_pair(service: State<'_, Service>) -> Result<WebPairing, IpcError> {
    operation!(service, Request::WebPair, Reply::WebPairing(pairing) => pairing)
}

/// The paired devices, oldest first.
#[tauri::command]
pub async fn settings_web_devices(
    service: State<'_, Service>,
) -> Result<Vec<DeviceInfo>, IpcError> {
    operation!(service, Request::WebDevices, Reply::WebDevices(devices) => devices)
}

/// Ends a paired device at once (`device`: its id or name).
#[tauri::command]
pub async fn settings_web_revoke(
    service: State<'_, Service>,
    device: String,
) -> Result<DeviceInfo, IpcError> {
    operation!(service, Request::WebRevoke { device }, Reply::WebRevoked(device) => device)
}
