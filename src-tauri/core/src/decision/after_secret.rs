//! After a secret (docs/ARCHITECTURE.md, "After a secret"): once a run has been allowed to
//! read a secret, the rest of that run — its connection, and for opencode its session,
//! until the app quits — is judged with the read in view. Its network requests are
//! marked, and no grant made before the read, no bulk answer and no sweep may allow them;
//! its writes outside the project are marked and keep their usual answers.
//!
//! This is the record of which runs and sessions read what, in memory only. What the app
//! never sees (a read the launch policy allows) never marks anything.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::decision::grants::{GrantKey, RunId};

/// How many opencode sessions are remembered as after a secret; past that the one whose
/// read is oldest is forgotten (each needs an allowed secret read, so only a run flooding
/// us with session hellos gets there).
pub const MAX_SESSIONS: usize = 4096;

/// The read that put a run after a secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretRead {
    /// The path read, as landstrip named it (the path only: nothing read is kept).
    pub path: String,
    /// What the location holds, e.g. "AWS credentials".
    pub what: String,
    /// When the read was allowed (ms since the epoch).
    pub at_ms: u64,
}

#[derive(Debug, Default)]
struct Reads {
    runs: HashMap<RunId, SecretRead>,
    sessions: HashMap<GrantKey, SecretRead>,
}

/// Which runs and sessions are after a secret.
#[derive(Debug, Default)]
pub struct AfterSecrets {
    /// Whether any read was ever noted: until then a lookup takes no lock.
    any: AtomicBool,
    reads: Mutex<Reads>,
}

impl AfterSecrets {
    fn reads(&self) -> std::sync::MutexGuard<'_, Reads> {
        self.reads.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes that run `run` (of `key`) was allowed to read a secret: the run, and its
    /// opencode session when the run named one, are after a secret from now on. The
    /// latest read is the one kept (the one a person is shown). True when the run was not
    /// after a secret before.
    pub fn note(&self, run: RunId, key: &GrantKey, read: SecretRead) -> bool {
        let mut reads = self.reads();
        if key.session.is_some() {
            if !reads.sessions.contains_key(key) && reads.sessions.len() >= MAX_SESSIONS {
                let oldest = reads
                    .sessions
                    .iter()
                    .min_by_key(|(_, r)| r.at_ms)
                    .map(|(k, _)| k.clone());
                if let Some(oldest) = oldest {
                    reads.sessions.remove(&oldest);
                }
            }
            reads.sessions.insert(key.clone(), read.clone());
        }
        let first = reads.runs.insert(run, read).is_none();
        self.any.store(true, Ordering::Release);
        first
    }

    /// The secret read run `run` (of `key`) is after, if any: its own, or its session's
    /// (another run of the same opencode session), the later of the two.
    pub fn of(&self, run: RunId, key: &GrantKey) -> Option<SecretRead> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        let reads = self.reads();
        let own = reads.runs.get(&run);
        let session = key
            .session
            .is_some()
            .then(|| reads.sessions.get(key))
            .flatten();
        match (own, session) {
            (Some(a), Some(b)) => Some(if b.at_ms > a.at_ms { b } else { a }.clone()),
            (a, b) => a.or(b).cloned(),
        }
    }

    /// Run `run` ended (its connection closed): its own mark goes; its session's stays.
    pub fn end_run(&self, run: RunId) {
        if self.any.load(Ordering::Acquire) {
            self.reads().runs.remove(&run);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn key(session: Option<&str>) -> GrantKey {
        GrantKey {
            project: PathBuf::from("/p"),
            session: session.map(str::to_owned),
        }
    }

    fn read(path: &str, at_ms: u64) -> SecretRead {
        SecretRead {
            path: path.into(),
            what: "AWS credentials".into(),
            at_ms,
        }
    }

    #[test]
    fn a_run_is_after_its_own_read_until_it_ends_and_its_session_until_the_app_quits() {
        let secrets = AfterSecrets::default();
        let (plain, session) = (key(None), key(Some("ses_1")));
        assert_eq!(secrets.of(1, &plain), None);
        assert!(
            secrets.note(1, &plain, read("/h/.aws/config", 4)),
            "the first"
        );
        assert!(!secrets.note(1, &plain, read("/h/.aws/credentials", 5)));
        assert_eq!(secrets.of(1, &plain), Some(read("/h/.aws/credentials", 5)));
        // Another run of the same project without a session: not after it.
        assert_eq!(secrets.of(2, &plain), None);
        secrets.end_run(1);
        assert_eq!(secrets.of(1, &plain), None);

        secrets.note(3, &session, read("/h/.ssh/id_rsa", 7));
        // A later run of the same session is after it too, and another session is not.
        assert_eq!(secrets.of(4, &session), Some(read("/h/.ssh/id_rsa", 7)));
        assert_eq!(secrets.of(4, &key(Some("ses_2"))), None);
        secrets.end_run(3);
        assert_eq!(secrets.of(4, &session), Some(read("/h/.ssh/id_rsa", 7)));
        // The later read is the one shown.
        secrets.note(4, &session, read("/h/.netrc", 9));
        assert_eq!(secrets.of(3, &session).map(|r| r.at_ms), Some(9));
    }

    #[test]
    fn the_sessions_remembered_are_bounded_and_the_oldest_goes_first() {
        let secrets = AfterSecrets::default();
        for i in 0..MAX_SESSIONS as u64 + 1 {
            let k = key(Some(&format!("ses_{i}")));
            secrets.note(i, &k, read("/h/.env", i));
            secrets.end_run(i);
        }
        assert_eq!(secrets.of(99_999, &key(Some("ses_0"))), None);
        assert!(secrets.of(99_999, &key(Some("ses_1"))).is_some());
        assert_eq!(secrets.reads().sessions.len(), MAX_SESSIONS);
    }
}
