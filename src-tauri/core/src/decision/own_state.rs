//! The app's own state, which no sandboxed program may touch: its settings (a sandboxed
//! write could add a project, a remote machine, or turn prompts off), its data directory
//! (the activity log, and what later keeps keys and journals there), its logs and its
//! control socket's directory. Reads and writes anywhere in them are hard denials: no
//! answer, grant or policy entry lets them through (docs/ARCHITECTURE.md, "Decision
//! rules"). Nothing the app itself runs sandboxed reads them (`ctl` talks to the socket).

use std::path::{Path, PathBuf};

use crate::lexical::{is_normal, is_within, normalize_lexically};

/// The directories of the app's own state, as given and as resolved (landstrip reports
/// resolved paths, so a home behind a symlink is matched either way).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnState {
    /// The settings, data and log directories.
    dirs: Vec<PathBuf>,
    /// The control socket's directory (kept apart: a sandboxed `ctl` connects to the
    /// socket in it, which landstrip governs as a Unix socket, not as a file read).
    control: Vec<PathBuf>,
}

impl OwnState {
    /// No state to guard (a core used without the app's directories, as in tests).
    pub const NONE: OwnState = OwnState {
        dirs: Vec::new(),
        control: Vec::new(),
    };

    /// The state in `config_dir` (settings), `data_dir` (activity and later keys and
    /// journals), `log_dir` and the control socket's directory `control_dir`.
    pub fn new(config_dir: &Path, data_dir: &Path, log_dir: &Path, control_dir: &Path) -> Self {
        let mut state = Self::default();
        for dir in [config_dir, data_dir, log_dir] {
            push_forms(&mut state.dirs, dir);
        }
        push_forms(&mut state.control, control_dir);
        state
    }

    /// Hands the state to landstrip in a policy it is given (`landstrip-tray run`): every
    /// directory joins `denyWrite`, and all but the control socket's `denyRead`, so an
    /// allow entry of the files cannot open them to the program before the app is asked
    /// (landstrip then asks, and rule 1 denies).
    pub fn deny_in(&self, policy: &mut serde_json::Value) {
        let add = |list: &mut serde_json::Value, dirs: &mut dyn Iterator<Item = &PathBuf>| {
            if !list.is_array() {
                *list = serde_json::Value::Array(Vec::new());
            }
            if let Some(list) = list.as_array_mut() {
                for dir in dirs {
                    let dir = serde_json::Value::from(dir.to_string_lossy().into_owned());
                    if !list.contains(&dir) {
                        list.push(dir);
                    }
                }
            }
        };
        let fs = &mut policy["filesystem"];
        add(
            &mut fs["denyWrite"],
            &mut self.dirs.iter().chain(&self.control),
        );
        add(&mut fs["denyRead"], &mut self.dirs.iter());
    }

    /// Whether a sandboxed read or write of `path` touches the app's own state.
    pub fn denies(&self, path: &Path) -> bool {
        if self.dirs.is_empty() && self.control.is_empty() {
            return false;
        }
        // On the query path: bytes, not components, unless the path needs normalising.
        let normalized;
        let path = if is_normal(path) {
            path
        } else {
            normalized = normalize_lexically(path);
            normalized.as_path()
        };
        self.dirs
            .iter()
            .chain(&self.control)
            .any(|d| is_within(path, d))
    }
}

/// `dir` lexically normalised, and its resolved form when that differs (the directory or
/// its nearest existing ancestor resolved, the rest appended).
fn push_forms(into: &mut Vec<PathBuf>, dir: &Path) {
    let dir = normalize_lexically(dir);
    if dir.as_os_str().is_empty() || dir == Path::new("/") {
        return;
    }
    let resolved = resolve_existing(&dir);
    into.push(dir.clone());
    if resolved != dir {
        into.push(resolved);
    }
}

fn resolve_existing(dir: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = dir;
    loop {
        if let Ok(real) = at.canonicalize() {
            return rest.iter().rev().fold(real, |p: PathBuf, c| p.join(c));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                at = parent;
            }
            _ => return dir.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> OwnState {
        OwnState::new(
            Path::new("/h/.config/landstrip-tray"),
            Path::new("/h/.local/share/landstrip-tray"),
            Path::new("/h/.local/state/landstrip-tray/logs"),
            Path::new("/run/user/1000/landstrip-tray"),
        )
    }

    #[test]
    fn writes_anywhere_in_the_apps_state_are_denied() {
        let s = state();
        for path in [
            "/h/.config/landstrip-tray/settings.json",
            "/h/.config/landstrip-tray",
            "/h/.local/share/landstrip-tray/activity.jsonl",
            "/h/.local/share/landstrip-tray/journal/1",
            "/run/user/1000/landstrip-tray/control.sock",
            "/h/.local/state/landstrip-tray/logs/app.log",
            "/h/src/p/../../.config/landstrip-tray/settings.json",
        ] {
            assert!(s.denies(Path::new(path)), "{path}");
        }
        for path in [
            "/h/.config/landstrip-tray-other/x",
            "/h/.config/opencode/sandbox.json",
            "/h/.local/share",
            "/run/user/1000/other",
        ] {
            assert!(!s.denies(Path::new(path)), "{path}");
        }
    }

    #[test]
    fn reads_are_denied_as_writes_are() {
        let s = state();
        for path in [
            "/h/.local/share/landstrip-tray/activity.jsonl",
            "/h/.config/landstrip-tray/settings.json",
        ] {
            assert!(s.denies(Path::new(path)), "{path}");
        }
    }

    #[test]
    fn a_directory_behind_a_symlink_is_matched_by_its_resolved_path_too() {
        let root = tempfile::tempdir().expect("tempdir");
        let real = root.path().join("real-home");
        std::fs::create_dir_all(real.join(".local/share")).expect("mkdir");
        let link = root.path().join("home");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        let data = link.join(".local/share/landstrip-tray");
        let s = OwnState::new(
            &link.join(".config/x"),
            &data,
            &link.join("logs"),
            &link.join("run"),
        );
        let resolved = real
            .canonicalize()
            .expect("canonical")
            .join(".local/share/landstrip-tray/activity.jsonl");
        assert!(s.denies(&resolved));
        assert!(s.denies(&data.join("activity.jsonl")));
    }

    #[test]
    fn landstrip_is_handed_the_state_as_deny_entries() {
        let mut policy = serde_json::json!({"filesystem": {"denyWrite": ["/x"]}});
        state().deny_in(&mut policy);
        assert_eq!(
            policy["filesystem"]["denyWrite"],
            serde_json::json!([
                "/x",
                "/h/.config/landstrip-tray",
                "/h/.local/share/landstrip-tray",
                "/h/.local/state/landstrip-tray/logs",
                "/run/user/1000/landstrip-tray"
            ])
        );
        assert_eq!(
            policy["filesystem"]["denyRead"],
            serde_json::json!([
                "/h/.config/landstrip-tray",
                "/h/.local/share/landstrip-tray",
                "/h/.local/state/landstrip-tray/logs"
            ])
        );
    }

    #[test]
    fn an_empty_state_denies_nothing() {
        assert!(!OwnState::default().denies(Path::new("/any")));
    }
}
