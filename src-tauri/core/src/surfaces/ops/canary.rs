//! Canaries and incidents as `ctl canary`, `ctl incidents`, the settings view and the
//! incident notification's buttons reach them (docs/ARCHITECTURE.md, "Canaries").

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::OpError;
use crate::decision::canary::{CanaryError, Incident, IncidentAction};
use crate::serving::service::Service;

/// One canary as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CanaryItem {
    /// The decoy's path.
    pub path: PathBuf,
    /// Whether a file is there now (a removed decoy still trips the wire: the read is
    /// still asked about).
    pub present: bool,
}

/// What adding a canary did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CanaryAdded {
    /// The canary's path.
    pub path: PathBuf,
    /// The decoy written (`aws`, `ssh_key`, `npmrc`, `env`); none when a file was there
    /// and was kept as it is.
    pub decoy: Option<String>,
}

/// The canaries, sorted.
pub fn canary_list(service: &Service) -> Vec<CanaryItem> {
    service
        .broker()
        .canaries()
        .list()
        .into_iter()
        .map(|path| CanaryItem {
            present: std::fs::symlink_metadata(&path).is_ok(),
            path,
        })
        .collect()
}

/// Adds a canary at `path` unless a served project's effective policy lets sandboxed
/// programs read it without asking (refused, naming the entry). Blocks (file work).
pub fn canary_add(service: &Service, path: &Path) -> Result<CanaryAdded, OpError> {
    // The app's own state is denied before any canary is looked at: one there never trips.
    if path.is_absolute() && service.broker().own_state().denies(path) {
        return Err(CanaryError::Refused {
            path: crate::lexical::normalize_lexically(path),
            reason: "it lies in the app's own files, which sandboxed programs are denied \
                     before any canary is looked at"
                .to_owned(),
        }
        .into());
    }
    let home = service.home().to_path_buf();
    let projects: Vec<(PathBuf, PathBuf)> = service
        .list()
        .into_iter()
        .map(|p| (p.dir, home.clone()))
        .collect();
    let shape = service.broker().canaries().add(path, &projects)?;
    Ok(CanaryAdded {
        path: crate::lexical::normalize_lexically(path),
        decoy: shape.map(|s| s.name().to_owned()),
    })
}

/// Drops `path` from the canaries (its file stays).
pub fn canary_remove(service: &Service, path: &Path) -> Result<(), OpError> {
    Ok(service.broker().canaries().remove(path)?)
}

/// The incidents of this app run, oldest first.
pub fn incidents(service: &Service) -> Vec<Incident> {
    service.broker().canaries().incidents().list()
}

/// Resumes or kills an incident's processes.
pub fn incident_act(
    service: &Service,
    id: u64,
    action: IncidentAction,
) -> Result<Incident, OpError> {
    Ok(service.broker().incident_act(id, action)?)
}
