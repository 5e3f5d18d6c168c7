//! Session grants: what the user allowed (or denied) "for session", kept in memory until
//! the app quits, the grant is revoked, or a limit chosen with it ends it: a duration, the
//! run it was given in, or the one program that asked. Never persisted.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;
use std::time::{Duration, Instant};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::app_settings::AfterSecretMode;
use crate::duration::{format_duration, parse_duration};
use crate::wire::protocol::{FsOperation, NetOperation};

/// Who a session grant belongs to: the opencode session named by the connection's hello,
/// or (without a hello) every run of the project.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GrantKey {
    /// The project directory the run belongs to.
    pub project: PathBuf,
    /// The opencode session id, when the launcher sent one.
    pub session: Option<String>,
}

/// What a grant allows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum GrantScope {
    /// Reads or writes of `root` and everything under it.
    Filesystem {
        /// The operation allowed.
        #[serde(deserialize_with = "fs_operation")]
        operation: FsOperation,
        /// The covered path (directory root or exact file).
        root: PathBuf,
    },
    /// Connects or binds to exactly this `address:port`.
    Network {
        /// The operation allowed.
        #[serde(deserialize_with = "net_operation")]
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

/// Reads a listed grant's filesystem operation back (a `ctl` reply) by its wire spelling.
fn fs_operation<'de, D: Deserializer<'de>>(d: D) -> Result<FsOperation, D::Error> {
    let name = String::deserialize(d)?;
    [FsOperation::Read, FsOperation::Write]
        .into_iter()
        .find(|op| op.as_str() == name)
        .ok_or_else(|| serde::de::Error::custom(format!("{name:?} is not read or write")))
}

/// Reads a listed grant's network operation back (a `ctl` reply), unknown ones kept.
fn net_operation<'de, D: Deserializer<'de>>(d: D) -> Result<NetOperation, D::Error> {
    String::deserialize(d).map(|name| NetOperation::from_wire(&name))
}

/// Identifies one run (one connection), as the broker numbers them.
pub type RunId = u64;

/// Whether a grant lets what it covers through or keeps it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    /// Allow without asking.
    Allow,
    /// Deny without asking.
    Deny,
}

/// How long a grant lives when it should not last until the app quits. On the wire and
/// the command line: `"run"`, or a duration such as `"90s"`, `"15m"`, `"1h"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lifetime {
    /// Until the run (connection) it was given in closes.
    Run,
    /// For this long from when it was given.
    For(Duration),
}

impl Lifetime {
    /// Reads `run` or a duration; None for anything else (or a zero duration).
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "run" => Some(Self::Run),
            _ => parse_duration(text).map(|secs| Self::For(Duration::from_secs(secs))),
        }
    }

    /// The word it is written as.
    pub fn as_text(&self) -> String {
        match self {
            Self::Run => "run".to_owned(),
            Self::For(d) => format_duration(d.as_secs()),
        }
    }
}

impl Serialize for Lifetime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.as_text())
    }
}

impl<'de> Deserialize<'de> for Lifetime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "{text:?} is not \"run\" or a duration such as 90s, 15m, 1h"
            ))
        })
    }
}

/// The limits a person chose for a session grant, beyond its session and scope.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Limits {
    /// How long it lives (None: until the app quits).
    pub lifetime: Option<Lifetime>,
    /// Only requests of this program (the asking process's executable).
    pub program: Option<String>,
}

/// Who is asking, as a grant is matched against it: the run's key, the run itself, and
/// the asking program when landstrip named it.
#[derive(Debug, Clone, Copy)]
pub struct Asker<'a> {
    /// Whose grants apply.
    pub key: &'a GrantKey,
    /// The run (connection) the request came on.
    pub run: RunId,
    /// The asking process's executable.
    pub program: Option<&'a str>,
    /// Set when the run is after a secret (docs/ARCHITECTURE.md, "After a secret"), with
    /// what the settings say to do with its network requests: only a grant made with the
    /// read in view may allow them. Looked up for network requests only (the one kind it
    /// changes); None otherwise.
    pub after_secret: Option<AfterSecretMode>,
}

/// One live session grant; read back from a `ctl` reply it has no deadline, only the
/// time it had left when it was listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// Stable id, for revoking.
    pub id: u64,
    /// Whose grant it is.
    pub key: GrantKey,
    /// What it covers.
    pub scope: GrantScope,
    /// Allow or deny what it covers.
    pub effect: Effect,
    /// How long it lives, as chosen (`"15m"`, `"run"`); absent: until the app quits.
    #[serde(rename = "for", skip_serializing_if = "Option::is_none")]
    pub lifetime: Option<Lifetime>,
    /// The run it is limited to, if any.
    pub run: Option<RunId>,
    /// The program it is limited to, if any.
    pub program: Option<String>,
    /// The sensitive location a person confirmed it for (a Session answer to a sensitive
    /// request): the only sensitive requests it may allow. None: it allows no sensitive
    /// request at all (docs/ARCHITECTURE.md, "Decision rules").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_for: Option<PathBuf>,
    /// Made in answer to a network request of a run after a secret, with the read in view
    /// ("allow this address for this run"): the only kind of allow grant such a request
    /// may use (docs/ARCHITECTURE.md, "After a secret").
    #[serde(default, skip_serializing_if = "is_false")]
    pub after_secret: bool,
    /// When it lapses (a time-limited grant).
    #[serde(skip)]
    pub deadline: Option<Instant>,
    /// Milliseconds left when it was listed (a time-limited grant).
    pub remaining_ms: Option<u64>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// What a person confirmed with a grant, beyond its scope and limits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Confirmed {
    /// The sensitive location a Session answer to a sensitive request was confirmed for.
    pub sensitive: Option<PathBuf>,
    /// The grant answers a network request of a run after a secret, the read in view.
    pub after_secret: bool,
}

impl Grant {
    fn lapsed(&self, now: &mut Option<Instant>) -> bool {
        match self.deadline {
            None => false,
            Some(deadline) => deadline <= *now.get_or_insert_with(Instant::now),
        }
    }

    /// Whether an allow grant may let this request through: any request that is not
    /// sensitive, and a sensitive one only for the location it was confirmed for.
    fn may_allow(&self, sensitive: Option<&Path>) -> bool {
        sensitive.is_none_or(|location| self.confirmed_for.as_deref() == Some(location))
    }

    /// Whether the grant applies to requests of `asker` (its time left is checked apart).
    fn applies_to(&self, asker: &Asker<'_>) -> bool {
        &self.key == asker.key
            && self.run.is_none_or(|run| run == asker.run)
            && self
                .program
                .as_deref()
                .is_none_or(|program| asker.program == Some(program))
    }

    /// Same holder, scope and limits (the effect and the deadline aside).
    fn same_place(&self, other: &Grant) -> bool {
        self.key == other.key
            && self.scope == other.scope
            && self.run == other.run
            && self.program == other.program
            && self.confirmed_for == other.confirmed_for
            && self.after_secret == other.after_secret
    }
}

/// The live session grants of every run.
#[derive(Debug, Default)]
pub struct SessionGrants {
    grants: RwLock<Vec<Grant>>,
    next_id: AtomicU64,
}

impl SessionGrants {
    /// Adds an allow grant with no limits; returns its id.
    pub fn add(&self, key: GrantKey, scope: GrantScope) -> u64 {
        self.add_limited(key, scope, Effect::Allow, &Limits::default(), 0)
    }

    /// Adds a grant given on run `run` with the chosen `limits`; returns its id. A live
    /// grant for the same holder, scope and limits is replaced (the newer answer wins: its
    /// effect and lifetime), keeping its id when the effect is the same.
    pub fn add_limited(
        &self,
        key: GrantKey,
        scope: GrantScope,
        effect: Effect,
        limits: &Limits,
        run: RunId,
    ) -> u64 {
        self.add_confirmed(key, scope, effect, limits, run, Confirmed::default())
    }

    /// [`Self::add_limited`] for a grant a person confirmed: on the sensitive location
    /// `confirmed.sensitive` (None: an ordinary grant, which never allows a sensitive
    /// request), or with a secret read in view (`confirmed.after_secret`).
    pub fn add_confirmed(
        &self,
        key: GrantKey,
        scope: GrantScope,
        effect: Effect,
        limits: &Limits,
        run: RunId,
        confirmed: Confirmed,
    ) -> u64 {
        let deadline = match limits.lifetime {
            Some(Lifetime::For(d)) => Some(Instant::now() + d),
            _ => None,
        };
        let grant = Grant {
            id: 0,
            key,
            scope,
            effect,
            lifetime: limits.lifetime,
            run: (limits.lifetime == Some(Lifetime::Run)).then_some(run),
            program: limits.program.clone(),
            confirmed_for: confirmed.sensitive,
            after_secret: confirmed.after_secret,
            deadline,
            remaining_ms: None,
        };
        let mut grants = self.grants.write().unwrap_or_else(|e| e.into_inner());
        let mut now = None;
        grants.retain(|g| !g.lapsed(&mut now));
        if let Some(existing) = grants
            .iter_mut()
            .find(|g| g.same_place(&grant) && g.effect == effect)
        {
            existing.lifetime = grant.lifetime;
            existing.deadline = grant.deadline;
            return existing.id;
        }
        grants.retain(|g| !g.same_place(&grant));
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        grants.push(Grant { id, ..grant });
        id
    }

    /// What the live grants of `asker` say about `matches`: a deny grant wins over an allow
    /// grant; None when no grant covers it. A lapsed grant covers nothing.
    fn effect(
        &self,
        asker: &Asker<'_>,
        matches: impl Fn(&GrantScope) -> bool,
        may_allow: impl Fn(&Grant) -> bool,
    ) -> Option<Effect> {
        let grants = self.grants.read().unwrap_or_else(|e| e.into_inner());
        let mut now = None;
        let mut found = None;
        for g in grants.iter() {
            if g.applies_to(asker) && matches(&g.scope) && !g.lapsed(&mut now) {
                if g.effect == Effect::Deny {
                    return Some(Effect::Deny);
                }
                if may_allow(g) {
                    found = Some(Effect::Allow);
                }
            }
        }
        found
    }

    /// What a live grant says about the filesystem request of `asker` that is not
    /// sensitive.
    pub fn path_effect(&self, asker: &Asker<'_>, op: FsOperation, path: &Path) -> Option<Effect> {
        self.sensitive_path_effect(asker, op, path, None)
    }

    /// What a live grant says about a filesystem request whose sensitive location is
    /// `sensitive` (None: not sensitive). A deny grant always applies; an allow grant to a
    /// sensitive request only when it was confirmed for that location.
    pub fn sensitive_path_effect(
        &self,
        asker: &Asker<'_>,
        op: FsOperation,
        path: &Path,
        sensitive: Option<&Path>,
    ) -> Option<Effect> {
        self.effect(
            asker,
            |scope| scope.covers_path(op, path),
            |g| g.may_allow(sensitive),
        )
    }

    /// What a live grant says about the network request of `asker`. A deny grant always
    /// applies; for a run after a secret, an allow grant only when it was made with the
    /// read in view (no grant made before the read allows what the run may now send).
    pub fn target_effect(
        &self,
        asker: &Asker<'_>,
        op: &NetOperation,
        target: &str,
    ) -> Option<Effect> {
        self.effect(
            asker,
            |scope| scope.covers_target(op, target),
            |g| asker.after_secret.is_none() || g.after_secret,
        )
    }

    /// Whether a live allow grant of `key` with no run or program limit covers the
    /// filesystem request.
    pub fn covers_path(&self, key: &GrantKey, op: FsOperation, path: &Path) -> bool {
        let asker = Asker {
            key,
            run: 0,
            program: None,
            after_secret: None,
        };
        self.path_effect(&asker, op, path) == Some(Effect::Allow)
    }

    /// Whether a live allow grant of `key` with no run or program limit covers the
    /// network request.
    pub fn covers_target(&self, key: &GrantKey, op: &NetOperation, target: &str) -> bool {
        let asker = Asker {
            key,
            run: 0,
            program: None,
            after_secret: None,
        };
        self.target_effect(&asker, op, target) == Some(Effect::Allow)
    }

    /// Revokes a grant; false if no such grant was live.
    pub fn revoke(&self, id: u64) -> bool {
        let mut grants = self.grants.write().unwrap_or_else(|e| e.into_inner());
        let mut now = None;
        grants.retain(|g| !g.lapsed(&mut now));
        let before = grants.len();
        grants.retain(|g| g.id != id);
        grants.len() != before
    }

    /// Ends the grants limited to run `run` (its connection closed); returns how many.
    pub fn end_run(&self, run: RunId) -> usize {
        let mut grants = self.grants.write().unwrap_or_else(|e| e.into_inner());
        let before = grants.len();
        grants.retain(|g| g.run != Some(run));
        before - grants.len()
    }

    /// Every live grant, oldest first, with the time left of those that lapse. Lapsed ones
    /// are dropped here.
    pub fn list(&self) -> Vec<Grant> {
        let mut grants = self.grants.write().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        grants.retain(|g| g.deadline.is_none_or(|d| d > now));
        grants
            .iter()
            .map(|g| Grant {
                remaining_ms: g.deadline.map(|d| {
                    u64::try_from(d.saturating_duration_since(now).as_millis()).unwrap_or(u64::MAX)
                }),
                ..g.clone()
            })
            .collect()
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

    fn write_scope(root: &str) -> GrantScope {
        GrantScope::Filesystem {
            operation: FsOperation::Write,
            root: root.into(),
        }
    }

    fn asker<'a>(key: &'a GrantKey, run: RunId, program: Option<&'a str>) -> Asker<'a> {
        Asker {
            key,
            run,
            program,
            after_secret: None,
        }
    }

    #[test]
    fn a_time_limited_grant_stops_matching_and_leaves_the_list_when_it_lapses() {
        // Long enough that the checks made under it never outlast it on a loaded machine
        // (their time is printed and checked); its end is a time, not an event, so the
        // test sleeps until it has certainly passed.
        const LIVES: Duration = Duration::from_secs(2);
        let grants = SessionGrants::default();
        let k = key(Some("ses_1"));
        let limits = Limits {
            lifetime: Some(Lifetime::For(LIVES)),
            program: None,
        };
        grants.add_limited(k.clone(), write_scope("/x"), Effect::Allow, &limits, 1);
        // Taken after the grant was made: its deadline is no later than this + LIVES.
        let added = Instant::now();
        let path = Path::new("/x/a");
        assert_eq!(
            grants.path_effect(&asker(&k, 1, None), FsOperation::Write, path),
            Some(Effect::Allow)
        );
        let listed = grants.list();
        assert_eq!(listed[0].lifetime, limits.lifetime);
        let lives_ms = u64::try_from(LIVES.as_millis()).unwrap_or(u64::MAX);
        assert!(listed[0].remaining_ms.is_some_and(|ms| ms <= lives_ms));
        let checked_in = added.elapsed();
        println!("the checks under the grant took {checked_in:?} of its {LIVES:?}");
        assert!(checked_in < LIVES, "the checks outlasted the grant");
        std::thread::sleep(LIVES.saturating_sub(added.elapsed()));
        assert_eq!(
            grants.path_effect(&asker(&k, 1, None), FsOperation::Write, path),
            None,
            "a lapsed grant covers nothing, listed or not"
        );
        assert!(grants.list().is_empty());
    }

    #[test]
    fn a_run_limited_grant_covers_its_run_only_and_ends_with_it() {
        let grants = SessionGrants::default();
        let k = key(None);
        let limits = Limits {
            lifetime: Some(Lifetime::Run),
            program: None,
        };
        grants.add_limited(k.clone(), write_scope("/x"), Effect::Allow, &limits, 7);
        let path = Path::new("/x/a");
        assert_eq!(
            grants.path_effect(&asker(&k, 7, None), FsOperation::Write, path),
            Some(Effect::Allow)
        );
        assert_eq!(
            grants.path_effect(&asker(&k, 8, None), FsOperation::Write, path),
            None
        );
        assert_eq!(grants.list()[0].run, Some(7));
        assert_eq!(grants.end_run(8), 0);
        assert_eq!(grants.end_run(7), 1);
        assert!(grants.list().is_empty());
    }

    #[test]
    fn a_program_limited_grant_covers_that_program_only() {
        let grants = SessionGrants::default();
        let k = key(None);
        let limits = Limits {
            lifetime: None,
            program: Some("/usr/bin/python3".into()),
        };
        grants.add_limited(k.clone(), write_scope("/x"), Effect::Allow, &limits, 1);
        let path = Path::new("/x/a");
        for (program, want) in [
            (Some("/usr/bin/python3"), Some(Effect::Allow)),
            (Some("/usr/bin/dash"), None),
            (None, None),
        ] {
            assert_eq!(
                grants.path_effect(&asker(&k, 2, program), FsOperation::Write, path),
                want,
                "{program:?}"
            );
        }
    }

    #[test]
    fn a_deny_grant_wins_and_the_newer_answer_replaces_the_older() {
        let grants = SessionGrants::default();
        let k = key(None);
        let none = Limits::default();
        let allow = grants.add_limited(k.clone(), write_scope("/x"), Effect::Allow, &none, 1);
        let deny_sub = grants.add_limited(k.clone(), write_scope("/x/sub"), Effect::Deny, &none, 1);
        let a = asker(&k, 1, None);
        assert_eq!(
            grants.path_effect(&a, FsOperation::Write, Path::new("/x/sub/f")),
            Some(Effect::Deny)
        );
        assert_eq!(
            grants.path_effect(&a, FsOperation::Write, Path::new("/x/f")),
            Some(Effect::Allow)
        );
        // Deny the very scope that was allowed: the allow grant goes.
        let deny = grants.add_limited(k.clone(), write_scope("/x"), Effect::Deny, &none, 1);
        assert_ne!(deny, allow);
        let ids: Vec<u64> = grants.list().iter().map(|g| g.id).collect();
        assert_eq!(ids, vec![deny_sub, deny]);
        assert_eq!(
            grants.path_effect(&a, FsOperation::Write, Path::new("/x/f")),
            Some(Effect::Deny)
        );
    }

    #[test]
    fn a_lifetime_reads_run_or_a_duration() {
        assert_eq!(Lifetime::parse("run"), Some(Lifetime::Run));
        assert_eq!(
            Lifetime::parse("15m"),
            Some(Lifetime::For(Duration::from_secs(900)))
        );
        assert_eq!(Lifetime::parse("soon"), None);
        assert_eq!(Lifetime::parse("0s"), None);
        assert_eq!(
            serde_json::to_string(&Lifetime::For(Duration::from_secs(90))).unwrap(),
            "\"1m30s\""
        );
        assert!(serde_json::from_str::<Lifetime>("\"forever\"").is_err());
    }
}
