//! The automatic part of the decision rules (docs/ARCHITECTURE.md, "Decision rules", 2–4): what can be
//! answered without asking anyone.

use std::path::Path;

use crate::activity::Decider;
use crate::app_settings::AfterSecretMode;
use crate::decision::canary::Canaries;
use crate::decision::grants::{Asker, Effect, SessionGrants};
use crate::decision::own_state::OwnState;
use crate::policy::project::Project;
use crate::policy::sensitive;
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

/// What a grant may still say while a policy file does not parse: a deny grant denies; an
/// allow grant allows only if every broken file had a valid version in this app run.
fn while_broken(effect: Option<Effect>, grants_allow: bool) -> Option<Effect> {
    effect.filter(|e| *e == Effect::Deny || grants_allow)
}

const HARD_DENIAL: Verdict = Verdict::Auto(Action::Deny, Decider::HardDenial);

/// Applies rules 2–4 to what `asker` asks, reading the policy as it is on disk now.
/// `own` is the app's own state, which no sandboxed program may touch; `canaries` the
/// decoys whose read is denied at once.
pub fn decide(
    project: &Project,
    grants: &SessionGrants,
    own: &OwnState,
    canaries: &Canaries,
    asker: &Asker<'_>,
    access: &Access<'_>,
) -> Verdict {
    let snapshot = project.policy().current();
    let policy = snapshot.as_ref().as_ref().ok();
    // While a file does not parse, its last valid denials (ARCHITECTURE.md, "Decision
    // rules": a broken file never weakens a denial).
    let fallback = match policy {
        Some(_) => None,
        None => Some(project.policy().fallback_now()),
    };
    let denials = match (policy, &fallback) {
        (Some(p), _) => Some(&p.matcher),
        (None, Some(Some(f))) => Some(&f.denials),
        _ => None,
    };
    // None: the files parse, grants apply as they are.
    let grants_allow = fallback
        .as_ref()
        .map(|f| f.as_ref().is_some_and(|f| f.grants_allow));
    if let Access::Filesystem { path, .. } = access {
        // Before everything, `enabled: false` included: no answer, grant or entry lets a
        // sandboxed program touch the app's own settings, data or control socket.
        if own.denies(Path::new(path)) {
            return HARD_DENIAL;
        }
        // Then a canary: never a prompt, over every grant and entry, whatever the
        // operation (docs/ARCHITECTURE.md, "Canaries").
        if canaries.is_canary(Path::new(path)) {
            return Verdict::Auto(Action::Deny, Decider::Canary);
        }
    }
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
                if *deny_match || denials.is_some_and(|d| d.write_hard_denied(path)) {
                    return HARD_DENIAL;
                }
            } else if denials.is_some_and(|d| d.read_hard_denied(path)) {
                // Rule 3 for reads: a denyReadAlways root, or a named denyRead (a "never"
                // answer); the boundaries such as the bundled /home only ask
                // (docs/ARCHITECTURE.md, "Decision rules").
                return HARD_DENIAL;
            }
            let mut effect = grants.path_effect(asker, *operation, path);
            if effect == Some(Effect::Allow) {
                // A sensitive request is allowed only by an answer to itself: a grant
                // confirmed for its very location, never another request's grant.
                let global = &project.policy().paths().global;
                if let Some(found) = sensitive::of_request(path, project.home(), global) {
                    effect = grants.sensitive_path_effect(
                        asker,
                        *operation,
                        path,
                        Some(&found.location),
                    );
                }
            }
            if let Some(grants_allow) = grants_allow {
                effect = while_broken(effect, grants_allow);
            }
            if let Some(verdict) = granted(effect) {
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
            let mut effect = grants.target_effect(asker, operation, target);
            if let Some(grants_allow) = grants_allow {
                effect = while_broken(effect, grants_allow);
            }
            if let Some(verdict) = granted(effect) {
                return verdict;
            }
            // After a secret, only a grant made with the read in view allows (above): not
            // the policy either, whose allowNetwork added mid-run would let the sweep send
            // the secret out behind the person's back (docs/ARCHITECTURE.md, "After a secret").
            match asker.after_secret {
                Some(AfterSecretMode::Deny) => {
                    return Verdict::Auto(Action::Deny, Decider::AfterSecret)
                }
                Some(AfterSecretMode::Ask) => return Verdict::Ask,
                None => {}
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
        own: OwnState,
        canaries: Canaries,
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
            own: OwnState::default(),
            canaries: Canaries::default(),
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
            self.verdict(&access)
        }

        /// What the rules say about `access` for this world's asker.
        fn verdict(&self, access: &Access<'_>) -> Verdict {
            decide(
                &self.project,
                &self.grants,
                &self.own,
                &self.canaries,
                &self.asker(),
                access,
            )
        }

        fn asker(&self) -> Asker<'_> {
            Asker {
                key: &self.key,
                run: 1,
                program: None,
                after_secret: None,
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
            self.verdict(&access)
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
            self.verdict(&access)
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
    fn a_canary_is_denied_over_every_grant_and_entry_and_only_its_own_path() {
        let mut r = rules();
        r.policy(r#"{"filesystem":{"allowRead":["."]}}"#);
        r.grant(FsOperation::Read, "keys");
        assert_eq!(r.read("keys/id_rsa"), ALLOW_POLICY);
        let canaries = Canaries::default();
        let path = crate::lexical::normalize_lexically(&r.dir.join("keys/id_rsa"));
        canaries.add(&path, &[]).expect("added");
        r.canaries = canaries;
        let canary = Verdict::Auto(Action::Deny, Decider::Canary);
        assert_eq!(r.read("keys/id_rsa"), canary);
        assert_eq!(r.write("keys/id_rsa", false), canary);
        assert_eq!(r.read("keys/id_rsa.pub"), ALLOW_POLICY_OR_GRANT_READ);
        // The app's own state still comes first.
        r.own = OwnState::new(
            &r.dir.join("keys"),
            &r.dir.join("d"),
            &r.dir.join("l"),
            &r.dir.join("c"),
        );
        assert_eq!(r.read("keys/id_rsa"), HARD);
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

    /// A session grant given on `sub` (relative to the project) with `effect` and `limits`,
    /// confirmed for the sensitive location `confirmed_for` when given.
    fn grant_with(
        r: &Rules,
        sub: &str,
        effect: Effect,
        limits: &crate::decision::grants::Limits,
        confirmed_for: Option<&str>,
    ) {
        r.grants.add_confirmed(
            r.key.clone(),
            GrantScope::Filesystem {
                operation: FsOperation::Write,
                root: crate::lexical::normalize_lexically(&r.dir.join(sub)),
            },
            effect,
            limits,
            1,
            crate::decision::grants::Confirmed {
                sensitive: confirmed_for
                    .map(|c| crate::lexical::normalize_lexically(&r.dir.join(c))),
                after_secret: false,
            },
        );
    }

    const GRANTED: Verdict = Verdict::Auto(Action::Allow, Decider::SessionGrant);

    #[test]
    fn no_other_requests_grant_allows_a_sensitive_request() {
        use crate::decision::grants::{Lifetime, Limits};
        let r = rules();
        let limited = [
            Limits::default(),
            Limits {
                lifetime: Some(Lifetime::For(std::time::Duration::from_secs(3600))),
                program: None,
            },
            Limits {
                lifetime: Some(Lifetime::Run),
                program: None,
            },
        ];
        for limits in &limited {
            grant_with(&r, "../x/keys", Effect::Allow, limits, None);
        }
        assert_eq!(r.write("../x/keys/notes.txt", false), GRANTED);
        for sensitive in [
            "../x/keys/id_rsa",
            "../x/keys/server.key",
            "../x/keys/tls/site.pem",
            "../x/keys/.env.local",
        ] {
            assert_eq!(r.write(sensitive, false), Verdict::Ask, "{sensitive}");
        }
        // A deny grant still denies a sensitive request: it takes access away.
        grant_with(
            &r,
            "../x/keys/id_rsa",
            Effect::Deny,
            &Limits::default(),
            None,
        );
        assert_eq!(
            r.write("../x/keys/id_rsa", false),
            Verdict::Auto(Action::Deny, Decider::SessionGrant)
        );
    }

    #[test]
    fn a_grant_confirmed_on_a_sensitive_request_allows_that_location_only() {
        let r = rules();
        let limits = crate::decision::grants::Limits::default();
        grant_with(
            &r,
            "../x/keys",
            Effect::Allow,
            &limits,
            Some("../x/keys/id_rsa"),
        );
        assert_eq!(r.write("../x/keys/id_rsa", false), GRANTED);
        assert_eq!(r.write("../x/keys/notes.txt", false), GRANTED);
        assert_eq!(r.write("../x/keys/server.key", false), Verdict::Ask);
        assert_eq!(r.write("../x/keys/id_ed25519", false), Verdict::Ask);
    }

    #[test]
    fn a_folder_holding_credentials_is_sensitive_and_the_files_beside_it_are_not() {
        let r = rules();
        let limits = crate::decision::grants::Limits::default();
        grant_with(&r, "../home", Effect::Allow, &limits, None);
        assert_eq!(r.write("../home/notes.txt", false), GRANTED);
        assert_eq!(r.write("../home/.cargo/registry/x", false), GRANTED);
        // The folder itself holds ~/.cargo/credentials; the home holds them all.
        assert_eq!(r.write("../home/.cargo", false), Verdict::Ask);
        assert_eq!(r.write("../home", false), Verdict::Ask);
        assert_eq!(
            r.write("../home/.cargo/credentials.toml", false),
            Verdict::Ask
        );
        assert_eq!(r.write("../home/.ssh/config", false), Verdict::Ask);
        // (The global policy file is a bundled hard denial as well.)
        assert_eq!(
            r.write("../home/.config/opencode/sandbox.json", false),
            HARD
        );
    }

    #[test]
    fn the_apps_own_state_is_denied_over_grants_entries_and_a_disabled_sandbox() {
        let mut r = rules();
        let home = r.project.home().to_path_buf();
        r.own = OwnState::new(
            &home.join(".config/landstrip-tray"),
            &home.join(".local/share/landstrip-tray"),
            &home.join(".local/state/landstrip-tray/logs"),
            &r.dir.join("../run/landstrip-tray"),
        );
        let limits = crate::decision::grants::Limits::default();
        grant_with(&r, "../home", Effect::Allow, &limits, None);
        grant_with(&r, "../run", Effect::Allow, &limits, None);
        r.grant(FsOperation::Read, "../home");
        r.policy(&format!(
            r#"{{"filesystem":{{"allowWrite":["{h}"],"allowRead":["{h}"]}}}}"#,
            h = home.display()
        ));
        assert_eq!(r.write("../home/notes.txt", false), GRANTED);
        assert_eq!(
            r.write("../home/.config/landstrip-tray/settings.json", false),
            HARD
        );
        assert_eq!(
            r.write("../home/.local/share/landstrip-tray/activity.jsonl", false),
            HARD
        );
        assert_eq!(r.write("../run/landstrip-tray/control.sock", false), HARD);
        assert_eq!(
            r.read("../home/.local/share/landstrip-tray/journal/1"),
            HARD
        );
        r.policy(r#"{"enabled": false}"#);
        assert_eq!(
            r.write("../home/.config/landstrip-tray/settings.json", false),
            HARD
        );
        assert_eq!(
            r.write("../home/notes.txt", false),
            Verdict::Auto(Action::Allow, Decider::SandboxDisabled)
        );
    }

    #[test]
    fn a_broken_file_keeps_the_denials_of_its_last_valid_version_over_grants() {
        let r = rules();
        r.grant_dir("../x");
        r.policy(r#"{"filesystem":{"denyWrite":["../x/never"]}}"#);
        assert_eq!(r.write("../x/never/b.txt", false), HARD);
        assert_eq!(r.write("../x/other/b.txt", false), GRANTED);
        // An editor's half-written state.
        r.policy(r#"{"filesystem":{"denyWrite":["../x/nev"#);
        assert_eq!(r.write("../x/never/b.txt", false), HARD);
        // The bundled denials too, and the grants still allow the rest: the file had a
        // valid version in this run.
        assert_eq!(r.write("cfg/.env", false), HARD);
        assert_eq!(r.write("../x/other/b.txt", false), GRANTED);
        // Nothing the broken file says allows.
        assert_eq!(r.write("notes/a.txt", false), Verdict::Ask);
        // Valid again: as the file says now.
        r.policy(r#"{"filesystem":{"denyWrite":[]}}"#);
        assert_eq!(r.write("../x/never/b.txt", false), GRANTED);
    }

    #[test]
    fn a_file_broken_since_the_start_lets_no_grant_allow() {
        for broken_global in [false, true] {
            let r = rules();
            let file = if broken_global {
                r.project.policy().paths().global.clone()
            } else {
                r.dir.join(".opencode/sandbox.json")
            };
            std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
            std::fs::write(&file, "{ not json").expect("write");
            r.project.policy().invalidate();
            r.grant_dir("../x");
            assert_eq!(r.write("../x/a.txt", false), Verdict::Ask, "{file:?}");
            // Deny grants still deny, and the bundled denials still apply.
            let limits = crate::decision::grants::Limits::default();
            grant_with(&r, "../x/no", Effect::Deny, &limits, None);
            assert_eq!(
                r.write("../x/no/a.txt", false),
                Verdict::Auto(Action::Deny, Decider::SessionGrant)
            );
            assert_eq!(r.write("cfg/.env", false), HARD);
            // Once it parses, the grant applies.
            std::fs::write(&file, "{}").expect("write");
            r.project.policy().invalidate();
            assert_eq!(r.write("../x/a.txt", false), GRANTED, "{file:?}");
        }
    }

    /// What the rules say about a connect to 127.0.0.1:9 on run `run`, the run after a
    /// secret when `after` is given.
    fn connect_after(r: &Rules, run: u64, after: Option<AfterSecretMode>) -> Verdict {
        let asker = Asker {
            key: &r.key,
            run,
            program: None,
            after_secret: after,
        };
        let access = Access::Network {
            operation: NetOperation::Connect,
            target: "127.0.0.1:9",
        };
        decide(&r.project, &r.grants, &r.own, &r.canaries, &asker, &access)
    }

    fn grant_target(
        r: &Rules,
        effect: Effect,
        lifetime: Option<crate::decision::grants::Lifetime>,
        after_secret: bool,
    ) {
        r.grants.add_confirmed(
            r.key.clone(),
            GrantScope::Network {
                operation: NetOperation::Connect,
                target: "127.0.0.1:9".into(),
            },
            effect,
            &crate::decision::grants::Limits {
                lifetime,
                program: None,
            },
            1,
            crate::decision::grants::Confirmed {
                sensitive: None,
                after_secret,
            },
        );
    }

    #[test]
    fn after_a_secret_no_grant_made_before_the_read_and_no_policy_allows_a_connect() {
        use crate::decision::grants::Lifetime;
        let ask = Some(AfterSecretMode::Ask);
        let r = rules();
        // A grant made before the read, until quit and for this run: both allow the run
        // that read nothing, neither the run after a secret.
        grant_target(&r, Effect::Allow, None, false);
        grant_target(&r, Effect::Allow, Some(Lifetime::Run), false);
        assert_eq!(connect_after(&r, 1, None), GRANTED);
        assert_eq!(connect_after(&r, 1, ask), Verdict::Ask);
        // Nor does the policy, allowNetwork added mid-run.
        r.policy(r#"{"network":{"allowNetwork":true}}"#);
        assert_eq!(connect_after(&r, 2, None), GRANTED);
        assert_eq!(connect_after(&r, 1, ask), Verdict::Ask);
        // The setting "deny": denied without asking, by the after-secret rule.
        assert_eq!(
            connect_after(&r, 1, Some(AfterSecretMode::Deny)),
            Verdict::Auto(Action::Deny, Decider::AfterSecret)
        );
    }

    #[test]
    fn after_a_secret_the_run_limited_grant_made_with_the_read_in_view_allows_its_run_only() {
        use crate::decision::grants::Lifetime;
        let ask = Some(AfterSecretMode::Ask);
        let r = rules();
        grant_target(&r, Effect::Allow, Some(Lifetime::Run), true);
        assert_eq!(connect_after(&r, 1, ask), GRANTED);
        assert_eq!(connect_after(&r, 1, Some(AfterSecretMode::Deny)), GRANTED);
        assert_eq!(connect_after(&r, 2, ask), Verdict::Ask, "another run");
        // A deny grant still denies.
        grant_target(&r, Effect::Deny, None, false);
        assert_eq!(
            connect_after(&r, 1, ask),
            Verdict::Auto(Action::Deny, Decider::SessionGrant)
        );
    }
}
