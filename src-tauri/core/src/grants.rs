//! Session grants: what the user allowed "for session", kept in memory until the app
//! quits or the grant is revoked.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

use serde::Serialize;

use crate::protocol::{FsOperation, NetOperation};

/// Who a session grant belongs to: the opencode session named by the connection's hello,
/// or (without a hello) every run of the project.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct GrantKey {
    /// The project directory the run belongs to.
    pub project: PathBuf,
    /// The opencode session id, when the launcher sent one.
    pub session: Option<String>,
}

/// What a grant allows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum GrantScope {
    /// Reads or writes of `root` and everything under it.
    Filesystem {
        /// The operation allowed.
        operation: FsOperation,
        /// The covered path (directory root or exact file).
        root: PathBuf,
    },
    /// Connects or binds to exactly this `address:port`.
    Network {
        /// The operation allowed.
        operation: NetOperation,
        /// The exact target, as landstrip reports it.
        target: String,
    },
}

impl GrantScope {
    /// Whether this grant covers a filesystem request.
    pub fn covers_path(&self, op: FsOperation, path: &Path) -> bool {
        matches!(self, GrantScope::Filesystem { operation, root } if *operation == op && path.starts_with(root))
    }

    /// Whether this grant covers a network request.
    pub fn covers_target(&self, op: &NetOperation, wanted: &str) -> bool {
        matches!(self, GrantScope::Network { operation, target } if operation == op && target == wanted)
    }
}

/// One live session grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Grant {
    /// Stable id, for revoking.
    pub id: u64,
    /// Whose grant it is.
    pub key: GrantKey,
    /// What it allows.
    pub scope: GrantScope,
}

/// The live session grants of every run.
#[derive(Debug, Default)]
pub struct SessionGrants {
    grants: RwLock<Vec<Grant>>,
    next_id: AtomicU64,
}

impl SessionGrants {
    /// Adds a grant (a duplicate of a live one is not added twice); returns its id.
    pub fn add(&self, key: GrantKey, scope: GrantScope) -> u64 {
        let mut grants = self.grants.write().unwrap_or_else(|e| e.into_inner());
        if let Some(existing) = grants.iter().find(|g| g.key == key && g.scope == scope) {
            return existing.id;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        grants.push(Grant { id, key, scope });
        id
    }

    /// Whether a live grant of `key` covers the filesystem request.
    pub fn covers_path(&self, key: &GrantKey, op: FsOperation, path: &Path) -> bool {
        let grants = self.grants.read().unwrap_or_else(|e| e.into_inner());
        grants
            .iter()
            .any(|g| &g.key == key && g.scope.covers_path(op, path))
    }

    /// Whether a live grant of `key` covers the network request.
    pub fn covers_target(&self, key: &GrantKey, op: &NetOperation, target: &str) -> bool {
        let grants = self.grants.read().unwrap_or_else(|e| e.into_inner());
        grants
            .iter()
            .any(|g| &g.key == key && g.scope.covers_target(op, target))
    }

    /// Revokes a grant; false if no such grant was live.
    pub fn revoke(&self, id: u64) -> bool {
        let mut grants = self.grants.write().unwrap_or_else(|e| e.into_inner());
        let before = grants.len();
        grants.retain(|g| g.id != id);
        grants.len() != before
    }

    /// Every live grant, oldest first.
    pub fn list(&self) -> Vec<Grant> {
        self.grants
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(session: Option<&str>) -> GrantKey {
        GrantKey {
            project: "/p".into(),
            session: session.map(str::to_owned),
        }
    }

    #[test]
    fn a_path_grant_covers_its_tree_for_its_operation_and_key_only() {
        let grants = SessionGrants::default();
        grants.add(
            key(Some("ses_1")),
            GrantScope::Filesystem {
                operation: FsOperation::Write,
                root: "/tmp/out".into(),
            },
        );
        assert!(grants.covers_path(
            &key(Some("ses_1")),
            FsOperation::Write,
            Path::new("/tmp/out/a/b")
        ));
        assert!(grants.covers_path(
            &key(Some("ses_1")),
            FsOperation::Write,
            Path::new("/tmp/out")
        ));
        assert!(!grants.covers_path(
            &key(Some("ses_1")),
            FsOperation::Write,
            Path::new("/tmp/outside")
        ));
        assert!(!grants.covers_path(
            &key(Some("ses_1")),
            FsOperation::Read,
            Path::new("/tmp/out/a")
        ));
        assert!(!grants.covers_path(
            &key(Some("ses_2")),
            FsOperation::Write,
            Path::new("/tmp/out/a")
        ));
        assert!(!grants.covers_path(&key(None), FsOperation::Write, Path::new("/tmp/out/a")));
    }

    #[test]
    fn a_network_grant_is_an_exact_target() {
        let grants = SessionGrants::default();
        grants.add(
            key(None),
            GrantScope::Network {
                operation: NetOperation::Connect,
                target: "127.0.0.1:9".into(),
            },
        );
        assert!(grants.covers_target(&key(None), &NetOperation::Connect, "127.0.0.1:9"));
        assert!(!grants.covers_target(&key(None), &NetOperation::Connect, "127.0.0.1:90"));
        assert!(!grants.covers_target(&key(None), &NetOperation::Bind, "127.0.0.1:9"));
    }

    #[test]
    fn duplicates_share_an_id_and_revoking_removes_the_grant() {
        let grants = SessionGrants::default();
        let scope = GrantScope::Filesystem {
            operation: FsOperation::Read,
            root: "/x".into(),
        };
        let a = grants.add(key(None), scope.clone());
        let b = grants.add(key(None), scope);
        assert_eq!(a, b);
        assert_eq!(grants.list().len(), 1);
        assert!(grants.revoke(a));
        assert!(!grants.revoke(a));
        assert!(!grants.covers_path(&key(None), FsOperation::Read, Path::new("/x")));
    }
}
