//! The settings window's canary and incident commands: each builds its request for the
//! core's operations table (the one `ctl canary` and `ctl incident` go through, and the
//! incident notification's buttons). capabilities/settings.json grants these to the
//! `settings` window only.

use std::path::PathBuf;

use landstrip_tray_core::decision::canary::{Incident, IncidentAction};
use landstrip_tray_core::serving::service::Service;
use landstrip_tray_core::surfaces::control::{Reply, Request};
use landstrip_tray_core::surfaces::ops::{CanaryAdded, CanaryItem};
use tauri::State;

use super::IpcError;

/// The canaries, sorted, each with whether its decoy is there.
#[tauri::command]
pub async fn settings_canaries(service: State<'_, Service>) -> Result<Vec<CanaryItem>, IpcError> {
    operation!(service, Request::Canaries, Reply::Canaries(items) => items)
}

/// Adds a canary at `path` (a decoy is written unless a file is there); refused where the
/// wire could never trip, naming the entry.
#[tauri::command]
pub async fn settings_canary_add(
    service: State<'_, Service>,
    path: PathBuf,
) -> Result<CanaryAdded, IpcError> {
    operation!(service, Request::CanaryAdd { path }, Reply::CanaryAdded(added) => added)
}

/// Drops the canary at `path` (its file stays).
#[tauri::command]
pub async fn settings_canary_remove(
    service: State<'_, Service>,
    path: PathBuf,
) -> Result<PathBuf, IpcError> {
    operation!(service, Request::CanaryRemove { path }, Reply::CanaryRemoved(path) => path)
}

/// The incidents of this app run, oldest first.
#[tauri::command]
pub async fn settings_incidents(service: State<'_, Service>) -> Result<Vec<Incident>, IpcError> {
    operation!(service, Request::Incidents, Reply::Incidents(list) => list)
}

/// Resumes or kills incident `id`'s processes; the incident as it is after.
#[tauri::command]
pub async fn settings_incident_act(
    service: State<'_, Service>,
    id: u64,
    action: IncidentAction,
) -> Result<Incident, IpcError> {
    operation!(service, Request::IncidentAct { id, action }, Reply::IncidentActed(incident) => incident)
}
