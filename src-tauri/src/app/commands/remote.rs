//! The settings window's Remote machines commands: each builds its request for the core's
//! operations table (the one `ctl remote` goes through) and returns the reply.
//! capabilities/settings.json grants these to the `settings` window only.

use landstrip_tray_core::app_settings::remote::RemoteConfig;
use landstrip_tray_core::serving::remote::RemoteView;
use landstrip_tray_core::serving::service::Service;
use landstrip_tray_core::surfaces::control::{Reply, Request};
use tauri::State;

use super::IpcError;

/// The remote machines, by name, each with its state and how many requests wait.
#[tauri::command]
pub async fn settings_remotes(service: State<'_, Service>) -> Result<Vec<RemoteView>, IpcError> {
    operation!(service, Request::Remotes, Reply::Remotes(list) => list)
}

/// Saves a remote machine and starts connecting to it; checked by the core (a destination
/// starting with `-` is refused there too).
#[tauri::command]
pub async fn settings_remote_add(
    service: State<'_, Service>,
    remote: RemoteConfig,
) -> Result<RemoteView, IpcError> {
    operation!(service, Request::RemoteAdd { remote }, Reply::RemoteAdded(view) => view)
}

/// Forgets a remote machine; its requests leave this desktop (they wait on the remote).
#[tauri::command]
pub async fn settings_remote_remove(
    service: State<'_, Service>,
    name: String,
) -> Result<String, IpcError> {
    operation!(service, Request::RemoteRemove { name }, Reply::RemoteRemoved(name) => name)
}
