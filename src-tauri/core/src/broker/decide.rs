//! The automatic part of the decision rules (DESIGN.md §4, rules 2–4): what can be
//! answered without asking anyone.

use std::path::Path;

use crate::activity::Decider;
use crate::grants::{GrantKey, SessionGrants};
use crate::project::Project;
use crate::protocol::{Access, Action, FsOperation, NetOperation};

/// What the rules say about a query before anyone is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Answer now.
    Auto(Action, Decider),
    /// Ask the user.
    Ask,
}

/// Applies rules 2–4 to what a query asks, reading the policy as it is on disk now.
pub fn decide(
    project: &Project,
    grants: &SessionGrants,
    key: &GrantKey,
    access: &Access<'_>,
) -> Verdict {
    let snapshot = project.policy().current();
    let policy = snapshot.as_ref().as_ref().ok();
    if policy.is_some_and(|p| !p.config.enabled) {
        return Verdict::Auto(Action::Allow, Decider::SandboxDisabled);
    }
    match access {
        Access::Filesystem {
            operation,
            path,
            deny_match,
        } => {
            let path = Path::new(path);
            if *operation == FsOperation::Write {
                // Rule 3: approval never bypasses a hard denial, whether landstrip saw it
                // at launch or denyWrite gained it since.
                if *deny_match || policy.is_some_and(|p| p.matcher.write_hard_denied(path)) {
                    return Verdict::Auto(Action::Deny, Decider::HardDenial);
                }
            }
            if grants.covers_path(key, *operation, path) {
                return Verdict::Auto(Action::Allow, Decider::SessionGrant);
            }
            let allowed_now = policy.is_some_and(|p| match operation {
                FsOperation::Read => p.matcher.read_allowed(path),
                FsOperation::Write => p.matcher.write_allowed(path),
            });
            if allowed_now {
                return Verdict::Auto(Action::Allow, Decider::Policy);
            }
        }
        Access::Network { operation, target } => {
            if grants.covers_target(key, operation, target) {
                return Verdict::Auto(Action::Allow, Decider::SessionGrant);
            }
            let allowed_now = policy.is_some_and(|p| match operation {
                NetOperation::Connect => p.config.network.allow_network,
                NetOperation::Bind => p.config.network.allow_local_binding,
                NetOperation::Other(_) => false,
            });
            if allowed_now {
                return Verdict::Auto(Action::Allow, Decider::Policy);
            }
        }
    }
    Verdict::Ask
}
