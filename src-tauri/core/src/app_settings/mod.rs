//! The app's own settings file (projects served, prompt timeout, summaries, sound), in the platform config
//! directory. A file that does not parse is reported and never overwritten; fields this
//! version does not know (a newer one wrote them) are kept. Updates are read-modify-write
//! under a lock, serialised within the process and with other processes.
//!
//! Beside it: starting at login ([`autostart`]); the remote machines' entries ([`remote`]).

pub mod autostart;
pub mod remote;
mod web;

pub use web::{WebSensitive, WebSetting};

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::PoisonError;

use serde::{Deserialize, Serialize};

use crate::safe_fs::{self, FileLock, FileMode};

/// What the settings file holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppSettings {
    /// Project directories served at start.
    #[serde(default)]
    pub projects: Vec<PathBuf>,
    /// Deny a prompt nobody answered after this many seconds (never persists anything).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_timeout_secs: Option<u64>,
    /// Summarise terminal denials (at most one quiet notification per run).
    #[serde(default = "yes")]
    pub summarize_denials: bool,
    /// A new prompt's notification asks for a sound (the `sound-name` hint).
    #[serde(default = "yes")]
    pub notification_sound: bool,
    /// Where prompts go for a project without a choice of its own.
    #[serde(default, skip_serializing_if = "PromptsGo::is_default")]
    pub prompts_go: PromptsGo,
    /// Each project's own choice, by canonical directory.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub project_prompts: BTreeMap<PathBuf, PromptsGo>,
    /// The duration the dialog's chooser beside "Session" showed when a session grant was
    /// last given in each project (`""` until quit, `"run"`, or a duration), by directory.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub session_durations: BTreeMap<PathBuf, String>,
    /// What becomes of a network request of a run after a secret (docs/ARCHITECTURE.md,
    /// "After a secret"): ask (the default) or deny without asking.
    #[serde(default, skip_serializing_if = "AfterSecretMode::is_default")]
    pub after_secret: AfterSecretMode,
    /// Journal the writes a person allows, so they can be undone (`journal` on/off).
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub journal: bool,
    /// The journal's total size limit in bytes (default 1 GiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_limit: Option<u64>,
    /// One file's limit in the journal, in bytes (default 64 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_file_limit: Option<u64>,
    /// The remote machines whose requests are asked here, over SSH (docs/ARCHITECTURE.md,
    /// "Remote machines").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remotes: Vec<remote::RemoteConfig>,
    /// The phone page: on or off, and its address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub web: Option<WebSetting>,
    /// Whether the phone page may allow a sensitive or after-a-secret request.
    #[serde(default, skip_serializing_if = "WebSensitive::is_default")]
    pub web_sensitive: WebSensitive,
    /// Fields this version does not know (written by a newer one), written back unchanged.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl Default for AppSettings {
    fn default() -> Self {
        Self {
            projects: Vec::new(),
            prompt_timeout_secs: None,
            summarize_denials: true,
            notification_sound: true,
            prompts_go: PromptsGo::default(),
            project_prompts: BTreeMap::new(),
            session_durations: BTreeMap::new(),
            after_secret: AfterSecretMode::default(),
            journal: true,
            journal_limit: None,
            journal_file_limit: None,
            remotes: Vec::new(),
            web: None,
            web_sensitive: WebSensitive::default(),
            extra: serde_json::Map::new(),
        }
    }
}

impl AppSettings {
    /// What the write journal does, as these settings say.
    pub fn journal_config(&self) -> crate::journal::JournalConfig {
        crate::journal::JournalConfig {
            enabled: self.journal,
            limit: self.journal_limit.unwrap_or(crate::journal::DEFAULT_LIMIT),
            file_limit: self
                .journal_file_limit
                .unwrap_or(crate::journal::DEFAULT_FILE_LIMIT),
        }
    }

    /// Where `dir`'s prompts go: its own choice, else the app-wide default.
    pub fn prompts_for(&self, dir: &Path) -> PromptsGo {
        self.project_prompts
            .get(dir)
            .copied()
            .unwrap_or(self.prompts_go)
    }
}

/// Where a project's prompts go while another presenter (opencode's terminal UI) wants
/// them (docs/ARCHITECTURE.md, "Discovery").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptsGo {
    /// To this app: another presenter's discovery file is taken back.
    #[default]
    Here,
    /// To the other presenter while it runs; the app serves again when it exits.
    Terminal,
}

impl PromptsGo {
    fn is_default(&self) -> bool {
        *self == PromptsGo::default()
    }

    /// The word used in settings, `ctl` and the UI.
    pub fn as_str(self) -> &'static str {
        match self {
            PromptsGo::Here => "here",
            PromptsGo::Terminal => "terminal",
        }
    }
}

impl std::str::FromStr for PromptsGo {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "here" => Ok(PromptsGo::Here),
            "terminal" => Ok(PromptsGo::Terminal),
            other => Err(format!("{other:?}: expected here or terminal")),
        }
    }
}

/// What becomes of a network request (connect, bind) of a run that read a secret
/// (docs/ARCHITECTURE.md, "After a secret").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AfterSecretMode {
    /// A person is asked, the request marked with the earlier read.
    #[default]
    Ask,
    /// Denied at once, recorded `by: after_secret`.
    Deny,
}

impl AfterSecretMode {
    fn is_default(&self) -> bool {
        *self == AfterSecretMode::default()
    }

    /// The word used in settings, `ctl` and the UI.
    pub fn as_str(self) -> &'static str {
        match self {
            AfterSecretMode::Ask => "ask",
            AfterSecretMode::Deny => "deny",
        }
    }
}

impl std::str::FromStr for AfterSecretMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ask" => Ok(AfterSecretMode::Ask),
            "deny" => Ok(AfterSecretMode::Deny),
            other => Err(format!("{other:?}: expected ask or deny")),
        }
    }
}

fn yes() -> bool {
    true
}

/// The journal's default (on) is not written: a settings file says only what was changed.
fn is_yes(on: &bool) -> bool {
    *on
}

/// Why the settings could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// Reading or writing failed.
    #[error("{file}: {source}")]
    Io {
        /// The settings file.
        file: PathBuf,
        /// What failed.
        source: io::Error,
    },
    /// The file is a symbolic link: the app does not write through one.
    #[error(
        "{} is a symbolic link to {}: landstrip-tray does not write through links; edit {} by hand",
        file.display(),
        target.display(),
        target.display()
    )]
    Symlink {
        /// The settings file.
        file: PathBuf,
        /// Where the link points.
        target: PathBuf,
    },
    /// The file is not valid settings; it is left alone.
    #[error("{file}:{line}:{column}: {message}")]
    Invalid {
        /// The settings file.
        file: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
}

/// The settings file at a path.
#[derive(Debug, Clone)]
pub struct SettingsFile {
    path: PathBuf,
}

impl SettingsFile {
    /// The settings file at `path` (`<config dir>/settings.json`).
    pub fn new(path: PathBuf) -> Self {
        Self { path }
    }

    /// Where it lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads it; a missing file is the default settings.
    pub fn load(&self) -> Result<AppSettings, SettingsError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(AppSettings::default()),
            Err(source) => {
                return Err(SettingsError::Io {
                    file: self.path.clone(),
                    source,
                })
            }
        };
        serde_json::from_str(&text).map_err(|e| SettingsError::Invalid {
            file: self.path.clone(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })
    }

    /// The lock file beside the settings file that updates hold (the settings file
    /// itself is replaced by every write, so a lock on it would not hold).
    pub fn lock_path(&self) -> PathBuf {
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        safe_fs::parent_dir(&self.path).join(format!(".{name}.lock"))
    }

    /// Applies `change` to the current settings and writes them atomically, as one
    /// read-modify-write: concurrent updates (other threads, other processes) wait for
    /// each other, so none is lost. A file that does not parse is not touched; a symlink
    /// is not written through. Blocks (file I/O, the lock): not for an async worker.
    pub fn update(
        &self,
        change: impl FnOnce(&mut AppSettings),
    ) -> Result<AppSettings, SettingsError> {
        let io_err = |file: &Path| {
            let file = file.to_path_buf();
            move |source| SettingsError::Io { file, source }
        };
        // Our own threads queue here, so at most one at a time holds an fd on the flock.
        let in_process = safe_fs::path_lock(&self.path);
        let _held = in_process.lock().unwrap_or_else(PoisonError::into_inner);
        std::fs::create_dir_all(safe_fs::parent_dir(&self.path)).map_err(io_err(&self.path))?;
        let lock_path = self.lock_path();
        let _locked = FileLock::exclusive(&lock_path).map_err(io_err(&lock_path))?;
        if let Some(target) = safe_fs::symlink_target(&self.path).map_err(io_err(&self.path))? {
            return Err(SettingsError::Symlink {
                file: self.path.clone(),
                target,
            });
        }
        let mut settings = self.load()?;
        change(&mut settings);
        let mut text = serde_json::to_string_pretty(&settings)
            .map_err(|e| io_err(&self.path)(io::Error::other(e)))?;
        text.push('\n');
        safe_fs::write_atomic(&self.path, text.as_bytes(), FileMode::KeepOr(0o600))
            .map_err(io_err(&self.path))?;
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_is_default_and_updates_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let file = SettingsFile::new(dir.path().join("cfg/settings.json"));
        assert_eq!(file.load().unwrap(), AppSettings::default());
        file.update(|s| s.projects.push("/p".into())).unwrap();
        assert_eq!(file.load().unwrap().projects, vec![PathBuf::from("/p")]);
    }

    #[test]
    fn a_broken_file_is_reported_and_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{\n  \"projects\": [\"/p\",]\n}\n").unwrap();
        let file = SettingsFile::new(path.clone());
        let err = file.update(|s| s.projects.clear()).unwrap_err();
        assert!(err.to_string().contains("settings.json:2:"), "{err}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\n  \"projects\": [\"/p\",]\n}\n"
        );
    }

    #[test]
    fn unknown_fields_keep_the_projects_and_survive_an_update() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(
            &path,
            r#"{"projects": ["/a"], "launcher": {"shell": "zsh"}, "summarizeDenials": false}"#,
        )
        .unwrap();
        let file = SettingsFile::new(path.clone());
        let loaded = file.load().unwrap();
        assert_eq!(loaded.projects, vec![PathBuf::from("/a")]);
        assert!(!loaded.summarize_denials);
        file.update(|s| s.projects.push("/b".into())).unwrap();
        let written: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(
            written,
            serde_json::json!({
                "projects": ["/a", "/b"],
                "summarizeDenials": false,
                "notificationSound": true,
                "launcher": {"shell": "zsh"},
            })
        );
    }

    #[test]
    fn prompt_preferences_default_to_here_and_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, r#"{"projects": ["/a", "/b"], "later": 1}"#).unwrap();
        let file = SettingsFile::new(path.clone());
        let loaded = file.load().unwrap();
        assert_eq!(loaded.prompts_for(Path::new("/a")), PromptsGo::Here);
        file.update(|s| {
            s.project_prompts.insert("/b".into(), PromptsGo::Terminal);
        })
        .unwrap();
        let written: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(
            written,
            serde_json::json!({
                "projects": ["/a", "/b"],
                "summarizeDenials": true,
                "notificationSound": true,
                "projectPrompts": {"/b": "terminal"},
                "later": 1,
            })
        );
        let loaded = file.load().unwrap();
        assert_eq!(loaded.prompts_for(Path::new("/a")), PromptsGo::Here);
        assert_eq!(loaded.prompts_for(Path::new("/b")), PromptsGo::Terminal);
        std::fs::write(&path, r#"{"promptsGo": "terminal"}"#).unwrap();
        let loaded = file.load().unwrap();
        assert_eq!(loaded.prompts_for(Path::new("/a")), PromptsGo::Terminal);
        std::fs::write(&path, r#"{"promptsGo": "elsewhere"}"#).unwrap();
        assert!(matches!(file.load(), Err(SettingsError::Invalid { .. })));
    }

    #[test]
    fn a_new_file_is_private_and_an_existing_mode_is_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = SettingsFile::new(dir.path().join("settings.json"));
        file.update(|_| {}).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(file.path()), 0o600);
        std::fs::set_permissions(file.path(), std::fs::Permissions::from_mode(0o640)).unwrap();
        file.update(|s| s.projects.push("/p".into())).unwrap();
        assert_eq!(mode(file.path()), 0o640);
    }

    #[test]
    fn a_symlinked_settings_file_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        std::fs::write(&real, "{\"projects\": [\"/a\"]}\n").unwrap();
        let link = dir.path().join("settings.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let file = SettingsFile::new(link.clone());
        assert_eq!(file.load().unwrap().projects, vec![PathBuf::from("/a")]);
        let err = file.update(|s| s.projects.clear()).unwrap_err();
        assert!(matches!(err, SettingsError::Symlink { .. }), "{err}");
        assert!(
            err.to_string().contains(&real.display().to_string()),
            "{err}"
        );
        assert_eq!(
            std::fs::read_to_string(&real).unwrap(),
            "{\"projects\": [\"/a\"]}\n"
        );
    }

    #[test]
    fn concurrent_updates_from_threads_all_land() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cfg/settings.json");
        let threads: Vec<_> = (0..16)
            .map(|i| {
                let file = SettingsFile::new(path.clone());
                std::thread::spawn(move || {
                    file.update(|s| s.projects.push(format!("/p{i}").into()))
                        .unwrap();
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let mut projects = SettingsFile::new(path).load().unwrap().projects;
        projects.sort();
        let mut expected: Vec<PathBuf> = (0..16).map(|i| format!("/p{i}").into()).collect();
        expected.sort();
        assert_eq!(projects, expected);
    }

    /// Another process (python3 here, standing for a second landstrip-tray) holds the lock
    /// file mid-update: ours waits for it instead of losing its change or theirs.
    #[test]
    fn an_update_waits_for_another_process_holding_the_lock() {
        use std::io::{BufRead, BufReader, Write};
        use std::process::{Command, Stdio};
        use std::sync::mpsc;
        use std::time::Duration;

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{\"projects\": [\"/a\"]}\n").unwrap();
        let file = SettingsFile::new(path.clone());
        let script = r#"
import fcntl, json, os, sys
lock = open(sys.argv[1], "a")
fcntl.flock(lock, fcntl.LOCK_EX)
with open(sys.argv[2]) as f:
    data = json.load(f)
print("locked", flush=True)
sys.stdin.readline()
data["projects"].append("/theirs")
with open(sys.argv[2] + ".new", "w") as f:
    json.dump(data, f)
os.rename(sys.argv[2] + ".new", sys.argv[2])
"#;
        let mut child = Command::new("python3")
            .args(["-c", script])
            .arg(file.lock_path())
            .arg(&path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "locked");

        let (done_tx, done_rx) = mpsc::channel();
        let updater = {
            let file = file.clone();
            std::thread::spawn(move || {
                let result = file.update(|s| s.projects.push("/ours".into()));
                let _ = done_tx.send(result.map(|_| ()).map_err(|e| e.to_string()));
            })
        };
        // A negative observation needs a window: without the flock the update finishes at
        // once, while the other process still holds the lock.
        assert!(
            done_rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "the update finished while another process held the lock"
        );
        child.stdin.take().unwrap().write_all(b"go\n").unwrap();
        assert!(child.wait().unwrap().success());
        done_rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the update did not finish within 20 s after the lock was released")
            .unwrap();
        updater.join().unwrap();
        assert_eq!(
            file.load().unwrap().projects,
            vec![
                PathBuf::from("/a"),
                PathBuf::from("/theirs"),
                PathBuf::from("/ours")
            ]
        );
    }
}
