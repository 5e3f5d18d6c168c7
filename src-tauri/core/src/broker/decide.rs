//! The automatic part of the decision rules (DESIGN.md §4, rules 2–4): what can be
//! answered without asking anyone.

use std::path::Path;

use crate::activity::Decider;
use crate::grants::{GrantKey, SessionGrants};
use crate::project::Project;
use crate::protocol::{Action, FsOperation, NetOperation, Query, QueryKind, Reason};

/// What the rules say about a query before anyone is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Answer now.
    Auto(Action, Decider),
    /// Ask the user.
    Ask,
}

/// Applies rules 2–4 to a query, reading the policy as it is on disk now.
pub fn decide(project: &Project, grants: &SessionGrants, key: &GrantKey, query: &Query) -> Verdict {
    let snapshot = project.policy().current();
    let policy = snapshot.as_ref().as_ref().ok();
    if let Some(policy) = policy {
        if !policy.config.enabled {
            return Verdict::Auto(Action::Allow, Decider::SandboxDisabled);
        }
    }
    match &query.kind {
        QueryKind::Filesystem(fs) => {
            let path = Path::new(&fs.path);
            if fs.operation == FsOperation::Write {
                // Rule 3: approval never bypasses a hard denial, whether landstrip saw it
                // at launch or denyWrite gained it since.
                let denied_now = policy.is_some_and(|p| p.matcher.write_hard_denied(path));
                if fs.reason == Some(Reason::DenyMatch) || denied_now {
                    return Verdict::Auto(Action::Deny, Decider::HardDenial);
                }
            }
            if grants.covers_path(key, fs.operation, path) {
                return Verdict::Auto(Action::Allow, Decider::SessionGrant);
            }
            let allowed_now = policy.is_some_and(|p| match fs.operation {
                FsOperation::Read => p.matcher.read_allowed(path),
                FsOperation::Write => p.matcher.write_allowed(path),
            });
            if allowed_now {
                return Verdict::Auto(Action::Allow, Decider::Policy);
            }
        }
        QueryKind::Network(net) => {
            if grants.covers_target(key, &net.operation, &net.target) {
                return Verdict::Auto(Action::Allow, Decider::SessionGrant);
            }
            let allowed_now = policy.is_some_and(|p| match net.operation {
                NetOperation::Connect => p.config.network.allow_network,
                NetOperation::Bind => p.config.network.allow_local_binding,
                _ => false,
            });
            if allowed_now {
                return Verdict::Auto(Action::Allow, Decider::Policy);
            }
        }
    }
    Verdict::Ask
}
