//! Where things live: home, the app's config and data directories, the discovery directory,
//! the control socket.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::serving::discovery::DiscoveryDir;

/// Every directory the app uses, resolved once at start (tests pass their own).
#[derive(Debug, Clone)]
pub struct AppPaths {
    /// The user's home (policy files and `~` entries are relative to it).
    pub home: PathBuf,
    /// The app's config directory (settings.json).
    pub config_dir: PathBuf,
    /// The app's data directory (activity log).
    pub data_dir: PathBuf,
    /// The app's log files: `$XDG_STATE_HOME/landstrip-tray/logs` (`~/.local/state/…`).
    pub log_dir: PathBuf,
    /// The user's data directory (`$XDG_DATA_HOME`), where opencode keeps its own data.
    pub user_data_dir: PathBuf,
    /// Where discovery files are published.
    pub discovery: DiscoveryDir,
    /// The control socket `landstrip-tray ctl` talks to (see [`control_socket_from_env`]).
    pub control_socket: PathBuf,
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
            // Logs are state (XDG: "actions history, logs"), not data; a platform without
            // a state directory keeps them beside the data.
            log_dir: dirs
                .state_dir()
                .unwrap_or_else(|| dirs.data_dir())
                .join("logs"),
            user_data_dir: base.data_dir().to_path_buf(),
            discovery: DiscoveryDir::from_env(),
            control_socket: control_socket_from_env(),
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

    /// The write journal: `$XDG_DATA_HOME/landstrip-tray/journal/`.
    pub fn journal_dir(&self) -> PathBuf {
        self.data_dir.join("journal")
    }

    /// The phone page's certificate and paired devices:
    /// `$XDG_DATA_HOME/landstrip-tray/web/`.
    pub fn web_dir(&self) -> PathBuf {
        self.data_dir.join("web")
    }

    /// The canary list: `$XDG_DATA_HOME/landstrip-tray/canaries.json`.
    pub fn canaries_file(&self) -> PathBuf {
        self.data_dir.join("canaries.json")
    }
}

/// The control socket's directory name under `$XDG_RUNTIME_DIR`.
pub const CONTROL_DIR_NAME: &str = "landstrip-tray";

/// The control socket's file name.
pub const CONTROL_SOCKET_NAME: &str = "control.sock";

/// `$XDG_RUNTIME_DIR/landstrip-tray/control.sock`, else
/// `<temp dir>/landstrip-tray-<uid>/control.sock`. Needs no home directory, so `ctl`
/// works wherever the environment is thin (cron, a bare SSH session).
pub fn control_socket_from_env() -> PathBuf {
    control_socket_from_vars(
        std::env::var_os("XDG_RUNTIME_DIR"),
        std::env::var_os("TMPDIR"),
        crate::uid(),
    )
}

/// [`control_socket_from_env`] with the variables passed in; empty counts as unset.
pub fn control_socket_from_vars(
    xdg_runtime_dir: Option<OsString>,
    tmpdir: Option<OsString>,
    uid: u32,
) -> PathBuf {
    let non_empty = |v: Option<OsString>| v.filter(|v| !v.is_empty()).map(PathBuf::from);
    let dir = match non_empty(xdg_runtime_dir) {
        Some(runtime) => runtime.join(CONTROL_DIR_NAME),
        // The temp dir is shared by every user: the uid keeps each user's socket apart.
        None => non_empty(tmpdir)
            .unwrap_or_else(|| PathBuf::from("/tmp"))
            .join(format!("{CONTROL_DIR_NAME}-{uid}")),
    };
    dir.join(CONTROL_SOCKET_NAME)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_socket_lives_in_the_runtime_dir_else_a_per_uid_temp_dir() {
        let path = |x: Option<&str>, t: Option<&str>| {
            control_socket_from_vars(x.map(Into::into), t.map(Into::into), 1000)
        };
        assert_eq!(
            path(Some("/run/user/1000"), Some("/var/tmp")),
            PathBuf::from("/run/user/1000/landstrip-tray/control.sock")
        );
        assert_eq!(
            path(None, Some("/var/tmp")),
            PathBuf::from("/var/tmp/landstrip-tray-1000/control.sock")
        );
        assert_eq!(
            path(Some(""), Some("")),
            PathBuf::from("/tmp/landstrip-tray-1000/control.sock")
        );
    }
}
