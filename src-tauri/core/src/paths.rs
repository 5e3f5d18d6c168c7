//! Where things live: home, the app's config and data directories, the discovery directory.

use std::path::PathBuf;

use crate::discovery::DiscoveryDir;

/// Every directory the app uses, resolved once at start (tests pass their own).
#[derive(Debug, Clone)]
pub struct AppPaths {
    /// The user's home (policy files and `~` entries are relative to it).
    pub home: PathBuf,
    /// The app's config directory (settings.json).
    pub config_dir: PathBuf,
    /// The app's data directory (activity log).
    pub data_dir: PathBuf,
    /// Where discovery files are published.
    pub discovery: DiscoveryDir,
}

/// The environment gave no home directory.
#[derive(Debug, thiserror::Error)]
#[error("cannot find the home directory (is HOME set?)")]
pub struct NoHome;

impl AppPaths {
    /// The platform's directories for this user (XDG on Linux).
    pub fn from_env() -> Result<Self, NoHome> {
        let base = directories::BaseDirs::new().ok_or(NoHome)?;
        let dirs = directories::ProjectDirs::from("", "", "landstrip-tray").ok_or(NoHome)?;
        Ok(Self {
            home: base.home_dir().to_path_buf(),
            config_dir: dirs.config_dir().to_path_buf(),
            data_dir: dirs.data_dir().to_path_buf(),
            discovery: DiscoveryDir::from_env(),
        })
    }

    /// The settings file.
    pub fn settings_file(&self) -> PathBuf {
        self.config_dir.join("settings.json")
    }

    /// The activity log.
    pub fn activity_file(&self) -> PathBuf {
        self.data_dir.join("activity.jsonl")
    }
}
