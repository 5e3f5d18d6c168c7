//! Canaries: decoy credentials that trip a wire (docs/ARCHITECTURE.md, "Canaries"). The
//! list lives in the app's data directory (`canaries.json`, part of the app's own state
//! no sandboxed program may touch); a sandboxed read of one is denied at once, never asked
//! (`decide`, right after the own-state rule), and recorded as an incident here.

pub mod decoy;
mod incidents;
pub mod stopping;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;

use crate::lexical::normalize_lexically;
use crate::policy::cache::load_effective;
use crate::policy::matcher::PolicyMatcher;
use crate::policy::merge::Source;
use crate::policy::schema::FsList;

pub use decoy::Shape;
pub use incidents::{
    EarlierRequest, Incident, IncidentAction, IncidentState, Incidents, MAX_EARLIER, MAX_INCIDENTS,
};

/// Why a canary could not be added, removed or kept.
#[derive(Debug, thiserror::Error)]
pub enum CanaryError {
    /// Not an absolute path.
    #[error("{}: a canary's path must be absolute", .0.display())]
    NotAbsolute(PathBuf),
    /// The wire would never trip: sandboxed programs read it without asking.
    #[error("{}: refused, the wire would never trip: {reason}", .path.display())]
    Refused {
        /// The path.
        path: PathBuf,
        /// Which project and entry let it be read without a question.
        reason: String,
    },
    /// Not on the list.
    #[error("{}: not a canary", .0.display())]
    Unknown(PathBuf),
    /// No incident has this id.
    #[error("no incident {0}")]
    NoIncident(u64),
    /// The incident's processes were killed or are gone: nothing left to resume or kill.
    #[error("incident {id}: its processes are {state}")]
    Ended {
        /// The incident.
        id: u64,
        /// Its state, in words.
        state: &'static str,
    },
    /// The list's file does not parse: it is never overwritten, so nothing is added or
    /// removed until a person mends it.
    #[error(
        "{}: the canary list does not parse ({problem}); mend or remove the file first (it is never overwritten)",
        .path.display()
    )]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// The decoy or the list could not be written or read.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The list's file is not what this app writes.
    #[error("{}: {source}", .path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        source: serde_json::Error,
    },
}

/// The canary list and the incidents of this app run. Cheap on the hot path: a read lock
/// and a set lookup, skipped entirely while the list is empty.
#[derive(Debug, Default)]
pub struct Canaries {
    /// Where the list is kept (none: in memory only, as in tests).
    file: Option<PathBuf>,
    paths: RwLock<BTreeSet<PathBuf>>,
    any: AtomicBool,
    /// Why the list's file could not be read (then the list is empty and stays so).
    unreadable: Option<String>,
    incidents: Incidents,
}

impl Canaries {
    /// The list kept in `file` (a JSON array of paths), read now; a missing file is an
    /// empty list.
    pub fn open(file: PathBuf) -> Result<Self, CanaryError> {
        let paths: BTreeSet<PathBuf> = match std::fs::read(&file) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| CanaryError::Parse {
                path: file.clone(),
                source,
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeSet::new(),
            Err(source) => return Err(CanaryError::Io { path: file, source }),
        };
        let canaries = Self {
            file: Some(file),
            ..Self::default()
        };
        canaries.any.store(!paths.is_empty(), Ordering::Release);
        *canaries.paths.write().unwrap_or_else(|e| e.into_inner()) = paths;
        Ok(canaries)
    }

    /// An empty list standing for `file`, which could not be read for `problem`: adding
    /// and removing are refused (saying why) rather than overwrite the person's file.
    pub fn unreadable(file: PathBuf, problem: String) -> Self {
        Self {
            file: Some(file),
            unreadable: Some(problem),
            ..Self::default()
        }
    }

    /// Refused while the list's file cannot be read.
    fn check_readable(&self) -> Result<(), CanaryError> {
        match (&self.unreadable, &self.file) {
            (Some(problem), Some(file)) => Err(CanaryError::Unreadable {
                path: file.clone(),
                problem: problem.clone(),
            }),
            _ => Ok(()),
        }
    }

    /// Whether a sandboxed access of `path` (resolved, as landstrip sends it) is a canary.
    pub fn is_canary(&self, path: &Path) -> bool {
        if !self.any.load(Ordering::Acquire) {
            return false;
        }
        self.paths
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains(path)
    }

    /// The canaries, sorted.
    pub fn list(&self) -> Vec<PathBuf> {
        self.paths
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    /// Adds `path` as a canary unless a served project (`projects`: directory and home)
    /// would let sandboxed programs read it without asking; writes a decoy there unless
    /// the path exists (an existing file is kept as it is). The shape written, if any.
    pub fn add(
        &self,
        path: &Path,
        projects: &[(PathBuf, PathBuf)],
    ) -> Result<Option<Shape>, CanaryError> {
        self.check_readable()?;
        if !path.is_absolute() {
            return Err(CanaryError::NotAbsolute(path.to_path_buf()));
        }
        let path = normalize_lexically(path);
        for (project, home) in projects {
            if let Some(reason) = refusal(&path, project, home) {
                return Err(CanaryError::Refused { path, reason });
            }
        }
        let shape = match decoy::create(&path) {
            Ok(shape) => Some(shape),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => None,
            Err(source) => return Err(CanaryError::Io { path, source }),
        };
        // landstrip reports resolved paths: a canary behind a symlinked directory is
        // kept in its resolved form too.
        let resolved = std::fs::canonicalize(&path).ok();
        let mut paths = self.paths.write().unwrap_or_else(|e| e.into_inner());
        let before = paths.clone();
        paths.insert(path);
        paths.extend(resolved);
        self.save(&paths).inspect_err(|_| *paths = before)?;
        self.any.store(true, Ordering::Release);
        Ok(shape)
    }

    /// Drops `path` from the list (the decoy file stays: it may be the user's own).
    pub fn remove(&self, path: &Path) -> Result<(), CanaryError> {
        self.check_readable()?;
        let path = normalize_lexically(path);
        let mut paths = self.paths.write().unwrap_or_else(|e| e.into_inner());
        if !paths.contains(&path) {
            return Err(CanaryError::Unknown(path));
        }
        let before = paths.clone();
        paths.remove(&path);
        if let Ok(resolved) = std::fs::canonicalize(&path) {
            paths.remove(&resolved);
        }
        self.save(&paths).inspect_err(|_| *paths = before)?;
        self.any.store(!paths.is_empty(), Ordering::Release);
        Ok(())
    }

    /// Writes the list through the one atomic writer (private, synced: never half a
    /// list).
    fn save(&self, paths: &BTreeSet<PathBuf>) -> Result<(), CanaryError> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        let io = |source| CanaryError::Io {
            path: file.clone(),
            source,
        };
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let text = serde_json::to_vec_pretty(paths).map_err(|source| CanaryError::Parse {
            path: file.clone(),
            source,
        })?;
        crate::safe_fs::write_atomic(file, &text, crate::safe_fs::FileMode::Exact(0o600))
            .map_err(io)
    }

    /// The incidents of this app run.
    pub fn incidents(&self) -> &Incidents {
        &self.incidents
    }
}

/// The layer a policy entry came from, in words.
fn layer(source: Source) -> &'static str {
    match source {
        Source::Default => "the bundled defaults",
        Source::Global => "the global policy",
        Source::Project => "the project's policy",
    }
}

/// Why `path` would never trip a wire for `project`: it lies under a denyReadAlways root
/// (landstrip reports such a read as information, never a question), or the effective
/// policy lets sandboxed programs read it without asking. None when a read would be
/// asked. A policy that does not parse refuses too (nothing can be told about it).
pub fn refusal(path: &Path, project: &Path, home: &Path) -> Option<String> {
    let loaded = match load_effective(home, project) {
        Ok(loaded) => loaded,
        Err(e) => {
            return Some(format!(
                "the policy of {} does not parse: {e}",
                project.display()
            ))
        }
    };
    let covering = |list: FsList| {
        loaded.fs_entries(list).find(|(entry, _)| {
            PolicyMatcher::single(list, entry, project, home).matches(list, path)
        })
    };
    if let Some((entry, source)) = covering(FsList::DenyReadAlways) {
        return Some(format!(
            "it lies under the denyReadAlways root \"{entry}\" ({} of {}): landstrip reports such a read, never asks",
            layer(source),
            project.display()
        ));
    }
    let matcher = PolicyMatcher::new(&loaded.config, project, home);
    if !matcher.read_allowed(path) {
        return None;
    }
    Some(match covering(FsList::AllowRead) {
        Some((entry, source)) => format!(
            "the allowRead entry \"{entry}\" ({} of {}) lets sandboxed programs read it without asking",
            layer(source),
            project.display()
        ),
        None => format!(
            "no denyRead of {} covers it: sandboxed programs read it without asking",
            project.display()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct World {
        _root: tempfile::TempDir,
        project: PathBuf,
        home: PathBuf,
    }

    fn world() -> World {
        let root = tempfile::tempdir().expect("tempdir");
        let base = root.path().canonicalize().expect("canonical");
        let project = base.join("home/proj");
        let home = base.join("home");
        std::fs::create_dir_all(project.join(".opencode")).expect("mkdir");
        World {
            _root: root,
            project,
            home,
        }
    }

    impl World {
        fn policy(&self, json: &str) {
            std::fs::write(self.project.join(".opencode/sandbox.json"), json).expect("write");
        }
        fn projects(&self) -> Vec<(PathBuf, PathBuf)> {
            vec![(self.project.clone(), self.home.clone())]
        }
    }

    #[test]
    fn a_path_read_without_asking_is_refused_naming_the_entry() {
        let w = world();
        w.policy(r#"{"filesystem":{"denyRead":["~"],"allowRead":["~/.aws"]}}"#);
        let canaries = Canaries::default();
        let path = w.home.join(".aws/credentials");
        let err = canaries.add(&path, &w.projects()).expect_err("refused");
        let text = err.to_string();
        assert!(text.contains("allowRead entry \"~/.aws\""), "{text}");
        assert!(!path.exists(), "no decoy is written for a refused path");
        assert!(canaries.list().is_empty());
    }

    #[test]
    fn a_path_under_an_always_root_is_refused_naming_the_root() {
        let w = world();
        w.policy(r#"{"filesystem":{"denyRead":["~"],"denyReadAlways":["~/.ssh"]}}"#);
        let canaries = Canaries::default();
        let err = canaries
            .add(&w.home.join(".ssh/id_ed25519"), &w.projects())
            .expect_err("refused");
        assert!(
            err.to_string().contains("denyReadAlways root \"~/.ssh\""),
            "{err}"
        );
    }

    #[test]
    fn an_asked_path_becomes_a_canary_kept_in_its_file() {
        let w = world();
        w.policy(r#"{"filesystem":{"denyRead":["~"]}}"#);
        let file = w.home.join("data/canaries.json");
        let canaries = Canaries::open(file.clone()).expect("open");
        let path = w.home.join(".ssh/id_rsa");
        let shape = canaries.add(&path, &w.projects()).expect("added");
        assert_eq!(shape, Some(Shape::SshKey));
        assert!(canaries.is_canary(&path));
        assert!(!canaries.is_canary(&w.home.join(".ssh/id_rsa.pub")));
        // Read back from its file, as the next app run does.
        let again = Canaries::open(file.clone()).expect("reopen");
        assert_eq!(again.list(), vec![path.clone()]);
        // An existing file is kept as it is.
        let own = w.home.join(".env");
        std::fs::write(&own, "MINE=1\n").expect("write");
        assert_eq!(canaries.add(&own, &w.projects()).expect("added"), None);
        assert_eq!(std::fs::read_to_string(&own).expect("read"), "MINE=1\n");
        canaries.remove(&path).expect("removed");
        assert!(!canaries.is_canary(&path));
        assert!(path.exists(), "removing a canary leaves its file");
        assert_eq!(
            Canaries::open(file.clone()).expect("reopen").list(),
            vec![own]
        );
        assert!(matches!(
            canaries.remove(&path),
            Err(CanaryError::Unknown(_))
        ));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file)
            .expect("the list")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }

    #[test]
    fn a_list_that_does_not_parse_refuses_changes_and_is_never_overwritten() {
        let w = world();
        w.policy(r#"{"filesystem":{"denyRead":["~"]}}"#);
        let file = w.home.join("canaries.json");
        std::fs::write(&file, "[\"/home/x\",").expect("write");
        let Err(e) = Canaries::open(file.clone()) else {
            panic!("a broken list opened")
        };
        let canaries = Canaries::unreadable(file.clone(), e.to_string());
        let path = w.home.join(".aws/credentials");
        let refused = canaries.add(&path, &w.projects()).expect_err("added");
        assert!(refused.to_string().contains("does not parse"), "{refused}");
        assert!(!path.exists(), "a decoy was written");
        assert!(canaries.remove(&path).is_err());
        assert_eq!(
            std::fs::read_to_string(&file).expect("read"),
            "[\"/home/x\","
        );
    }
}
