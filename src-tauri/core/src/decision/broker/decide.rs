//! The automatic part of the decision rules (docs/ARCHITECTURE.md, "Decision rules", 2–4): what can be
//! answered without asking anyone.

use std::path::Path;

use crate::activity::Decider;
use crate::decision::grants::{Asker, Effect, SessionGrants};
use crate::serving::project::Project;
use crate::wire::protocol::{Access, Action, FsOperation, NetOperation};

/// What the rules say about a query before anyone is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Answer now.
    Auto(Action, Decider),
    /// Ask the user.
    Ask,
}

/// What a live session grant says, as a verdict.
fn granted(effect: Option<Effect>) -> Option<Verdict> {
    effect.map(|effect| match effect {
        Effect::Allow => Verdict::Auto(Action::Allow, Decider::SessionGrant),
        Effect::Deny => Verdict::Auto(Action::Deny, Decider::SessionGrant),
    })
}

/// Applies rules 2–4 to what `asker` asks, reading the policy as it is on disk now.
pub fn decide(
    project: &Project,
    grants: &SessionGrants,
    asker: &Asker<'_>,
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
            } else if policy.is_some_and(|p| p.matcher.read_hard_denied(path)) {
                // Rule 3 for reads: a denyReadAlways root, or a named denyRead (a "never"
                // answer); the boundaries such as the bundled /home only ask
                // (docs/ARCHITECTURE.md, "Decision rules").
                return Verdict::Auto(Action::Deny, Decider::HardDenial);
            }
            if let Some(verdict) = granted(grants.path_effect(asker, *operation, path)) {
                return verdict;
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
            if let Some(verdict) = granted(grants.target_effect(asker, operation, target)) {
                return verdict;
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

#[cfg(test)]
mod tests {
    //! Every interaction of the rules, against real policy files in a temporary directory
    //! (the policy cache reads them as they are on disk at each call).
    use super::*;
    use crate::decision::grants::{GrantKey, GrantScope};
    use std::path::PathBuf;

    struct Rules {
        _root: tempfile::TempDir,
        project: Project,
        dir: PathBuf,
        grants: SessionGrants,
        key: GrantKey,
    }

    fn rules() -> Rules {
        let root = tempfile::tempdir().expect("tempdir");
        let base = root.path().canonicalize().expect("canonical");
        let dir = base.join("proj");
        let home = base.join("home");
        std::fs::create_dir_all(dir.join(".opencode")).expect("mkdir");
        std::fs::create_dir_all(&home).expect("mkdir");
        let key = GrantKey {
            project: dir.clone(),
            session: Some("ses_1".into()),
        };
        Rules {
            _root: root,
            project: Project::new(dir.clone(), home),
            dir,
            grants: SessionGrants::default(),
            key,
        }
    }

    impl Rules {
        /// Rewrites the project's sandbox.json (a new size each time, so the stat-based
        /// cache cannot miss it within the same second).
        fn policy(&self, json: &str) {
            std::fs::write(self.dir.join(".opencode/sandbox.json"), json).expect("write");
            self.project.policy().invalidate();
        }

        fn write(&self, path: &str, deny_match: bool) -> Verdict {
            // Relative to the project; `../outside/…` is outside every bundled allowWrite.
            // landstrip sends resolved paths.
            let path = crate::lexical::normalize_lexically(&self.dir.join(path))
                .display()
                .to_string();
            let access = Access::Filesystem {
                operation: FsOperation::Write,
                path: &path,
                deny_match,
            };
            decide(&self.project, &self.grants, &self.asker(), &access)
        }

        fn asker(&self) -> Asker<'_> {
            Asker {
                key: &self.key,
                run: 1,
                program: None,
            }
        }

        fn read(&self, path: &str) -> Verdict {
            let path = crate::lexical::normalize_lexically(&self.dir.join(path))
                .display()
                .to_string();
            let access = Access::Filesystem {
                operation: FsOperation::Read,
                path: &path,
                deny_match: true,
            };
            decide(&self.project, &self.grants, &self.asker(), &access)
        }

        fn grant_dir(&self, sub: &str) {
            self.grant(FsOperation::Write, sub);
        }

        fn grant(&self, operation: FsOperation, sub: &str) {
            self.grants.add(
                self.key.clone(),
                GrantScope::Filesystem {
                    operation,
                    root: crate::lexical::normalize_lexically(&self.dir.join(sub)),
                },
            );
        }

        fn net(&self, operation: NetOperation) -> Verdict {
            let access = Access::Network {
                operation,
                target: "127.0.0.1:9",
            };
            decide(&self.project, &self.grants, &self.asker(), &access)
        }
    }

    const ALLOW_POLICY: Verdict = Verdict::Auto(Action::Allow, Decider::Policy);
    const HARD: Verdict = Verdict::Auto(Action::Deny, Decider::HardDenial);
    /// A read the session grant covers (the bundled allowRead "." does too; the grant is
    /// looked at first).
    const ALLOW_POLICY_OR_GRANT_READ: Verdict = Verdict::Auto(Action::Allow, Decider::SessionGrant);

    #[test]
    fn a_deny_write_added_on_disk_after_launch_denies_what_was_allowed() {
        let r = rules();
        // The project root is in the bundled allowWrite: allowed by the policy now.
        assert_eq!(r.write("notes/a.txt", false), ALLOW_POLICY);
        r.policy(r#"{"filesystem":{"denyWrite":["notes"]}}"#);
        assert_eq!(r.write("notes/a.txt", false), HARD);
        assert_eq!(r.write("other/a.txt", false), ALLOW_POLICY);
    }

    #[test]
    fn a_hard_denial_beats_a_session_grant() {
        let r = rules();
        r.policy(r#"{"filesystem":{"allowWrite":[]}}"#);
        r.grant_dir("cfg");
        assert_eq!(
            r.write("cfg/settings.toml", false),
            Verdict::Auto(Action::Allow, Decider::SessionGrant)
        );
        // Bundled denyWrite: **/.env; and landstrip's own deny_match flag.
        assert_eq!(r.write("cfg/.env", false), HARD);
        assert_eq!(r.write("cfg/plain.txt", true), HARD);
    }

    #[test]
    fn enabled_false_allows_even_a_dotenv_write() {
        // The decision order puts `enabled: false` first: the plugin does not sandbox such
        // a project at all, so nothing it could ask about is held back (ARCHITECTURE.md,
        // "Decision rules").
        let r = rules();
        assert_eq!(r.write(".env", false), HARD);
        r.policy(r#"{"enabled": false}"#);
        assert_eq!(
            r.write(".env", true),
            Verdict::Auto(Action::Allow, Decider::SandboxDisabled)
        );
        r.policy(r#"{"enabled": true }"#);
        assert_eq!(r.write(".env", false), HARD);
    }

    #[test]
    fn the_network_policy_on_disk_answers_connect_and_bind_separately() {
        let r = rules();
        assert_eq!(r.net(NetOperation::Connect), Verdict::Ask);
        assert_eq!(r.net(NetOperation::Bind), Verdict::Ask);
        r.policy(r#"{"network":{"allowNetwork":true}}"#);
        assert_eq!(r.net(NetOperation::Connect), ALLOW_POLICY);
        assert_eq!(r.net(NetOperation::Bind), Verdict::Ask);
        r.policy(r#"{"network":{"allowLocalBinding":true}}"#);
        assert_eq!(r.net(NetOperation::Connect), Verdict::Ask);
        assert_eq!(r.net(NetOperation::Bind), ALLOW_POLICY);
        assert_eq!(r.net(NetOperation::Other("sendto".into())), Verdict::Ask);
    }

    #[test]
    fn a_policy_file_that_does_not_parse_decides_nothing() {
        let r = rules();
        r.policy("{ not json");
        // Not even what the bundled defaults would allow: the plugin refuses to run on a
        // broken file, so the person is asked.
        assert_eq!(r.write("notes/a.txt", false), Verdict::Ask);
        // A hard denial landstrip itself saw still denies.
        assert_eq!(r.write("a.txt", true), HARD);
    }

    #[test]
    fn a_session_grant_belongs_to_its_session_only() {
        let mut r = rules();
        assert_eq!(r.write("../outside/cfg/a", false), Verdict::Ask);
        r.grant_dir("../outside/cfg");
        assert_eq!(
            r.write("../outside/cfg/a", false),
            Verdict::Auto(Action::Allow, Decider::SessionGrant)
        );
        r.key.session = Some("ses_2".into());
        assert_eq!(r.write("../outside/cfg/a", false), Verdict::Ask);
    }

    #[test]
    fn a_never_read_entry_denies_while_a_boundary_asks() {
        let r = rules();
        let home = r.project.home().display().to_string();
        r.policy(&format!(r#"{{"filesystem":{{"denyRead":["{home}"]}}}}"#));
        assert_eq!(r.read("../home/docs/a"), Verdict::Ask);
        r.policy(&format!(
            r#"{{"filesystem":{{"denyRead":["{home}", "{home}/docs"]}}}}"#
        ));
        assert_eq!(r.read("../home/docs/a"), HARD);
        assert_eq!(r.read("../home/other/a"), Verdict::Ask);
    }

    #[test]
    fn a_deny_grant_denies_and_beats_an_allow_grant() {
        use crate::decision::grants::{Effect, Limits};
        let r = rules();
        r.policy(r#"{"filesystem":{"allowWrite":[]}}"#);
        r.grant_dir("cfg");
        let root = crate::lexical::normalize_lexically(&r.dir.join("cfg/private"));
        r.grants.add_limited(
            r.key.clone(),
            GrantScope::Filesystem {
                operation: FsOperation::Write,
                root,
            },
            Effect::Deny,
            &Limits::default(),
            1,
        );
        assert_eq!(
            r.write("cfg/private/a", false),
            Verdict::Auto(Action::Deny, Decider::SessionGrant)
        );
        assert_eq!(
            r.write("cfg/a", false),
            Verdict::Auto(Action::Allow, Decider::SessionGrant)
        );
    }

    #[test]
    fn always_roots_deny_reads_and_writes_over_grants_and_allow_entries() {
        let r = rules();
        // Allowed by the bundled allowRead/allowWrite ("."), and by session grants.
        r.grant(FsOperation::Read, "keys");
        r.grant(FsOperation::Write, "locked");
        assert_eq!(r.read("keys/id"), ALLOW_POLICY_OR_GRANT_READ);
        assert_eq!(
            r.write("locked/a", false),
            Verdict::Auto(Action::Allow, Decider::SessionGrant)
        );
        r.policy(
            r#"{"filesystem":{"denyReadAlways":["keys"],"denyWriteAlways":["locked"],
                "allowRead":["keys/id"],"allowWrite":["locked/a"]}}"#,
        );
        assert_eq!(r.read("keys/id"), HARD);
        assert_eq!(r.read("keys"), HARD);
        assert_eq!(r.write("locked/a", false), HARD);
        assert_eq!(r.write("locked", false), HARD);
        // Beside them, and the other operation, as before.
        assert_eq!(r.read("keysx/a"), ALLOW_POLICY);
        assert_eq!(r.read("locked/a"), ALLOW_POLICY);
        assert_eq!(
            r.write("keys/id", false),
            Verdict::Auto(Action::Allow, Decider::Policy)
        );
    }
}
