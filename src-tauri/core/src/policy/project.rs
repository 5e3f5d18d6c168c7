//! A served project: its directory and the policy files that apply to it.

use std::path::{Path, PathBuf};

use super::PolicyCache;

/// A project directory the app serves, with a cached view of its policy files.
pub struct Project {
    dir: PathBuf,
    home: PathBuf,
    policy: PolicyCache,
}

impl Project {
    /// A project at `dir` (already canonical) for a user whose home is `home`.
    pub fn new(dir: PathBuf, home: PathBuf) -> Self {
        let policy = PolicyCache::new(&home, &dir);
        Self { dir, home, policy }
    }

    /// The project directory (canonical).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The user's home directory.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The policy as it is on disk now (cheap when nothing changed).
    pub fn policy(&self) -> &PolicyCache {
        &self.policy
    }
}

impl std::fmt::Debug for Project {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Project").field("dir", &self.dir).finish()
    }
}
