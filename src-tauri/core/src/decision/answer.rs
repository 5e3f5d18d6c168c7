//! The rules every surface applies to an answer (the dialog, notification buttons, `ctl`,
//! the settings view): which choices a prompt allows, which entries a project or global
//! grant may write, and when a sensitive path needs a second confirmation. An
//! [`AnswerRequest`] says what a person asked for; [`resolve`] turns it into a
//! [`Decision`], the only thing the broker carries out. See docs/ARCHITECTURE.md, "The
//! answer path".

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::decision::after_secret::SecretRead;
use crate::decision::grants::{Effect, Lifetime, Limits};
use crate::decision::prompt::PendingPrompt;
use crate::decision::scope::{grant_options, PolicyTarget, ScopeKind, ScopeOption};
use crate::policy::sensitive;
use crate::policy::{self, FsList};
use crate::wire::protocol::{FsOperation, QueryKind};

/// The answers a prompt can be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChoiceKey {
    /// Allow this request only.
    Once,
    /// Allow the session scope until the app quits.
    Session,
    /// Add an entry to the project's sandbox.json.
    Project,
    /// Add an entry to the global sandbox.json.
    Global,
    /// Deny (with `session`: deny the session scope for the session).
    Deny,
    /// Deny, and add a deny entry to the project's (or with `global`, the global)
    /// sandbox.json, so the same request is never asked again.
    Never,
}

impl ChoiceKey {
    /// Whether the grant outlives this one request and lets something through: a
    /// sensitive location needs the second confirmation for these.
    pub fn is_persistent(self) -> bool {
        matches!(self, Self::Session | Self::Project | Self::Global)
    }

    /// The policy file a project or global answer writes.
    pub fn target(self) -> Option<PolicyTarget> {
        match self {
            Self::Project => Some(PolicyTarget::Project),
            Self::Global => Some(PolicyTarget::Global),
            _ => None,
        }
    }

    /// Whether the answer writes an entry (so a scope or an entry may go with it).
    pub fn writes_entry(self) -> bool {
        matches!(self, Self::Project | Self::Global | Self::Never)
    }

    /// The word used on the command line and the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Once => "once",
            Self::Session => "session",
            Self::Project => "project",
            Self::Global => "global",
            Self::Deny => "deny",
            Self::Never => "never",
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// What a person asked for, from any surface. On the wire (control socket, dialog):
/// `{"choice":"project","scope":"parent"}`, `{"choice":"global","entry":"~/x","wider":true}`,
/// `{"choice":"session","for":"15m","program":true}`, `{"choice":"never","scope":"parent"}`,
/// `{"choice":"deny","session":true}`. Every field but `choice` may be left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerRequest {
    /// The button.
    pub choice: ChoiceKey,
    /// For project and global: which offered scope (the suggested one when neither this
    /// nor `entry` is given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<ScopeKind>,
    /// For project and global: the entry to write, as it will appear in the file. It
    /// must be one of the offered scopes' entries, or cover the request with `wider`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// The person means an entry wider than any offered scope.
    #[serde(default, skip_serializing_if = "is_false")]
    pub wider: bool,
    /// The person confirmed a grant beyond this request on a sensitive location.
    #[serde(default, skip_serializing_if = "is_false")]
    pub confirmed: bool,
    /// For session (and deny with `session`): how long the grant lives, `"run"` or a
    /// duration (`"15m"`); absent: until the app quits.
    #[serde(default, rename = "for", skip_serializing_if = "Option::is_none")]
    pub lifetime: Option<Lifetime>,
    /// For session (and deny with `session`): only requests of the program that asked.
    #[serde(default, skip_serializing_if = "is_false")]
    pub program: bool,
    /// For deny: also deny, for the session, everything a session grant would have allowed.
    #[serde(default, skip_serializing_if = "is_false")]
    pub session: bool,
    /// For never: the global sandbox.json instead of the project's.
    #[serde(default, skip_serializing_if = "is_false")]
    pub global: bool,
    /// The person allows once a network request of a run after a secret, that read in
    /// view (docs/ARCHITECTURE.md, "After a secret").
    #[serde(default, skip_serializing_if = "is_false")]
    pub confirmed_after_secret: bool,
}

impl AnswerRequest {
    /// A plain answer with no scope, entry or confirmation.
    pub fn new(choice: ChoiceKey) -> Self {
        Self {
            choice,
            scope: None,
            entry: None,
            wider: false,
            confirmed: false,
            lifetime: None,
            program: false,
            session: false,
            global: false,
            confirmed_after_secret: false,
        }
    }

    /// Allow once.
    pub fn once() -> Self {
        Self::new(ChoiceKey::Once)
    }

    /// Allow for the session.
    pub fn session() -> Self {
        Self::new(ChoiceKey::Session)
    }

    /// Deny.
    pub fn deny() -> Self {
        Self::new(ChoiceKey::Deny)
    }

    /// Never: a deny entry in the project's sandbox.json, the narrowest scope.
    pub fn never() -> Self {
        Self::new(ChoiceKey::Never)
    }

    /// Whether the answer adds a session grant (allow or deny).
    fn is_session_grant(&self) -> bool {
        self.choice == ChoiceKey::Session || (self.choice == ChoiceKey::Deny && self.session)
    }

    /// The file a project, global or never answer writes.
    fn target(&self) -> Option<PolicyTarget> {
        match self.choice {
            ChoiceKey::Never if self.global => Some(PolicyTarget::Global),
            ChoiceKey::Never => Some(PolicyTarget::Project),
            other => other.target(),
        }
    }
}

/// Why an answer is refused. The prompt stays pending.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum RuleError {
    /// Project and global grants write paths; a network address has none.
    #[error("a network request can only be allowed once or for the session")]
    NotPersistable,
    /// `scope`, `entry` or `wider` given with a choice that writes no entry.
    #[error("a scope or an entry goes with a project, global or never answer only")]
    ScopeWithoutTarget,
    /// A lifetime or a program limit given with a choice that adds no session grant.
    #[error("a time, run or program limit goes with a session grant only (session, or deny for the session)")]
    LimitWithoutGrant,
    /// `session` given with a choice other than deny.
    #[error("\"session\" goes with deny only (allow for the session is its own choice)")]
    SessionWithoutDeny,
    /// `global` given with a choice other than never.
    #[error("\"global\" goes with never only (allow globally is its own choice)")]
    GlobalWithoutNever,
    /// A program limit, but landstrip did not name the asking program.
    #[error("landstrip did not say which program asked, so the grant cannot be limited to it")]
    NoProgram,
    /// "Never" writes a path; no sandbox.json field holds a network address.
    #[error("no sandbox.json field can hold a network address: deny for the session instead (ctl: deny --session)")]
    NeverNotExpressible,
    /// "Never" takes an exact path or its folder only.
    #[error("never takes an exact path or its folder only: {0}")]
    NeverTooWide(String),
    /// Both an offered scope and an explicit entry.
    #[error("give either a scope or an entry, not both")]
    ScopeAndEntry,
    /// The scope asked for is not one offered for this request.
    #[error("the {0} scope is not offered for this request (offered: {1})")]
    UnknownScope(&'static str, String),
    /// The entry does not cover the request.
    #[error("{entry:?} does not cover {path}; offered entries: {offered}")]
    DoesNotCover {
        /// The entry asked for.
        entry: String,
        /// The request's path.
        path: String,
        /// What would have been accepted.
        offered: String,
    },
    /// The entry covers the request but is wider than every offered scope.
    #[error("{entry:?} is wider than the offered entries ({offered}); say it is meant to be wider (ctl: --wider)")]
    WiderNotConfirmed {
        /// The entry asked for.
        entry: String,
        /// What would have been accepted without the flag.
        offered: String,
    },
    /// The entry is empty or not something a policy file holds.
    #[error("{0:?} is not a usable policy entry")]
    BadEntry(String),
    /// The entry would be equal to or under a denyReadAlways/denyWriteAlways root in
    /// force for the project: it could never take effect.
    #[error("{entry:?} is equal to or under {root:?} of filesystem.{always}, which no approval, session grant or allow entry may override; answer once, or deny")]
    UnderAlways {
        /// The entry asked for.
        entry: String,
        /// The hard-denial root.
        root: String,
        /// The list holding it (`denyReadAlways` or `denyWriteAlways`).
        always: &'static str,
    },
    /// A network request of a run after a secret may be allowed once (confirmed) or for
    /// this address and this run only; nothing that outlives the run or reaches beyond the
    /// address.
    #[error("this run read {path} ({what}): its network requests may be allowed only once (ctl: once --confirm-after-secret) or for this address for this run (ctl: session --for run), never {choice}")]
    AfterSecretTooWide {
        /// The secret read earlier.
        path: String,
        /// What the location holds.
        what: String,
        /// The answer refused, in words.
        choice: &'static str,
    },
    /// Allowing once a network request of a run after a secret needs its confirmation.
    #[error("this run read {path} ({what}) before this request: confirm allowing it once with that read in view (ctl: --confirm-after-secret)")]
    AfterSecretNeedsConfirmation {
        /// The secret read earlier.
        path: String,
        /// What the location holds.
        what: String,
    },
    /// A sensitive location needs the second confirmation for any grant beyond this
    /// request.
    #[error("{what}: confirm the grant first (ctl: --confirm-sensitive)")]
    NeedsConfirmation {
        /// What the location holds.
        what: String,
    },
}

/// A validated answer: what the broker does. Only [`resolve`] makes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Allow this query only.
    Once,
    /// Add a session grant for its scope, with the chosen limits, and answer the query
    /// as the grant says (allow, or deny for "deny for the session").
    Session {
        /// Allow or deny.
        effect: Effect,
        /// The limits chosen.
        limits: Limits,
    },
    /// Add `entry` to `list` of the `target` file, then allow (an allow list) or deny (a
    /// deny list: a "never" answer).
    Persist {
        /// Which file.
        target: PolicyTarget,
        /// Which array.
        list: FsList,
        /// The entry, as written.
        entry: String,
    },
    /// Deny this query.
    Deny,
}

/// Which array a filesystem grant of `operation` goes into.
pub fn grant_list(operation: FsOperation) -> FsList {
    match operation {
        FsOperation::Read => FsList::AllowRead,
        FsOperation::Write => FsList::AllowWrite,
    }
}

/// Which array a "never" answer to `operation` goes into.
pub fn never_list(operation: FsOperation) -> FsList {
    match operation {
        FsOperation::Read => FsList::DenyRead,
        FsOperation::Write => FsList::DenyWrite,
    }
}

/// The scopes a "never" answer to `prompt` may write: the exact path (the default) and its
/// folder, but never the project or a directory holding it (that would deny the whole
/// project). Empty for network prompts.
pub fn never_scopes(prompt: &PendingPrompt, home: &Path) -> Vec<ScopeOption> {
    let QueryKind::Filesystem(fs) = &prompt.query.kind else {
        return Vec::new();
    };
    let project = crate::lexical::normalize_lexically(&prompt.project);
    grant_options(Path::new(&fs.path), &prompt.project, home)
        .into_iter()
        .filter(|o| o.kind != ScopeKind::Suggested)
        .filter(|o| !project.starts_with(&o.root))
        .map(|o| ScopeOption {
            suggested: o.kind == ScopeKind::Exact,
            ..o
        })
        .collect()
}

/// The scopes offered to persist a grant of `prompt` (empty for network prompts).
pub fn offered_scopes(prompt: &PendingPrompt, home: &Path) -> Vec<ScopeOption> {
    match &prompt.query.kind {
        QueryKind::Filesystem(fs) => grant_options(Path::new(&fs.path), &prompt.project, home),
        QueryKind::Network(_) => Vec::new(),
    }
}

fn scope_name(kind: ScopeKind) -> &'static str {
    match kind {
        ScopeKind::Exact => "exact",
        ScopeKind::Parent => "parent",
        ScopeKind::Suggested => "suggested",
    }
}

/// Checks `request` against the rules for `prompt` and says what to do. Nothing is
/// changed here; the broker applies the decision after it has claimed the prompt.
pub fn resolve(
    prompt: &PendingPrompt,
    home: &Path,
    request: &AnswerRequest,
) -> Result<Decision, RuleError> {
    let fs = match &prompt.query.kind {
        QueryKind::Filesystem(fs) => Some(fs),
        QueryKind::Network(_) => None,
    };
    let target = request.target();
    if !request.choice.writes_entry()
        && (request.scope.is_some() || request.entry.is_some() || request.wider)
    {
        return Err(RuleError::ScopeWithoutTarget);
    }
    if request.session && request.choice != ChoiceKey::Deny {
        return Err(RuleError::SessionWithoutDeny);
    }
    if request.global && request.choice != ChoiceKey::Never {
        return Err(RuleError::GlobalWithoutNever);
    }
    if !request.is_session_grant() && (request.lifetime.is_some() || request.program) {
        return Err(RuleError::LimitWithoutGrant);
    }
    if fs.is_none() {
        if let Some(read) = &prompt.after_secret {
            after_secret(read, request)?;
        }
    }
    // Limits narrow a grant; they never lift the confirmation a sensitive location needs.
    if request.choice.is_persistent() && !request.confirmed {
        if let Some(found) = fs.and_then(|fs| sensitive::guarding(Path::new(&fs.path), home)) {
            return Err(RuleError::NeedsConfirmation {
                what: found.what.to_owned(),
            });
        }
    }
    if request.is_session_grant() {
        let program = match request.program {
            false => None,
            true => Some(
                prompt
                    .query
                    .process
                    .as_ref()
                    .and_then(|p| p.exe.clone())
                    .filter(|exe| !exe.is_empty())
                    .ok_or(RuleError::NoProgram)?,
            ),
        };
        let limits = Limits {
            lifetime: request.lifetime,
            program,
        };
        let effect = match request.choice {
            ChoiceKey::Session => Effect::Allow,
            _ => Effect::Deny,
        };
        return Ok(Decision::Session { effect, limits });
    }
    let target = match request.choice {
        ChoiceKey::Once => return Ok(Decision::Once),
        ChoiceKey::Deny => return Ok(Decision::Deny),
        ChoiceKey::Session => unreachable!("a session grant is resolved above"),
        ChoiceKey::Project | ChoiceKey::Global | ChoiceKey::Never => {
            target.ok_or(RuleError::ScopeWithoutTarget)?
        }
    };
    let never = request.choice == ChoiceKey::Never;
    let Some(fs) = fs else {
        return Err(if never {
            RuleError::NeverNotExpressible
        } else {
            RuleError::NotPersistable
        });
    };
    let (list, options) = if never {
        if request.wider {
            return Err(RuleError::NeverTooWide(
                "a wider entry is not offered".to_owned(),
            ));
        }
        (never_list(fs.operation), never_scopes(prompt, home))
    } else {
        (grant_list(fs.operation), offered_scopes(prompt, home))
    };
    let offered = || {
        options
            .iter()
            .map(|o| format!("{:?}", o.entry(target)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let entry = match (&request.scope, &request.entry) {
        (Some(_), Some(_)) => return Err(RuleError::ScopeAndEntry),
        // An option is named by its narrowest kind when several coincide, so "suggested"
        // is also the exact path or its parent when the session scope is one of those
        // ("never" offers no session scope: its default is the exact path).
        (Some(kind), None) => options
            .iter()
            .find(|o| o.kind == *kind || (*kind == ScopeKind::Suggested && o.suggested && !never))
            .map(|o| o.entry(target).to_owned())
            .ok_or_else(|| RuleError::UnknownScope(scope_name(*kind), offered()))?,
        (None, None) => options
            .iter()
            .find(|o| o.suggested)
            .map(|o| o.entry(target).to_owned())
            .ok_or_else(|| RuleError::UnknownScope("suggested", offered()))?,
        (None, Some(entry)) if never => {
            let entry = entry.trim();
            options
                .iter()
                .find(|o| o.entry(target) == entry)
                .map(|o| o.entry(target).to_owned())
                .ok_or_else(|| RuleError::NeverTooWide(format!("offered: {}", offered())))?
        }
        (None, Some(entry)) => {
            let entry = entry.trim();
            if entry.is_empty() || entry.contains('\0') || entry.contains('\n') {
                return Err(RuleError::BadEntry(entry.to_owned()));
            }
            let is_offered = options.iter().any(|o| o.entry(target) == entry);
            if !is_offered {
                let path = Path::new(&fs.path);
                if !entry_covers(entry, list, path, &prompt.project, home) {
                    return Err(RuleError::DoesNotCover {
                        entry: entry.to_owned(),
                        path: fs.path.clone(),
                        offered: offered(),
                    });
                }
                if !request.wider {
                    return Err(RuleError::WiderNotConfirmed {
                        entry: entry.to_owned(),
                        offered: offered(),
                    });
                }
                if !request.confirmed {
                    if let Some(what) = wider_sensitive(entry, &prompt.project, home) {
                        return Err(RuleError::NeedsConfirmation { what });
                    }
                }
            }
            entry.to_owned()
        }
    };
    // Either file's entry would join the project's effective policy, where the root wins.
    if let Some((always, root)) =
        policy::explain::always_root_in_force(&entry, list, &prompt.project, home)
    {
        return Err(RuleError::UnderAlways {
            entry,
            root,
            always: always.json_key(),
        });
    }
    Ok(Decision::Persist {
        target,
        list,
        entry,
    })
}

/// The answers a network request of a run after a secret may have (docs/ARCHITECTURE.md,
/// "After a secret"): deny in any form; once, confirmed; allow for the session only for
/// its run (the grant is then made with the read in view and covers this address only);
/// never a grant for the project or everywhere.
fn after_secret(read: &SecretRead, request: &AnswerRequest) -> Result<(), RuleError> {
    let too_wide = |choice| RuleError::AfterSecretTooWide {
        path: read.path.clone(),
        what: read.what.clone(),
        choice,
    };
    match request.choice {
        ChoiceKey::Project => Err(too_wide("for the project")),
        ChoiceKey::Global => Err(too_wide("everywhere")),
        ChoiceKey::Session if request.lifetime != Some(Lifetime::Run) => {
            Err(too_wide("for the session beyond this run"))
        }
        ChoiceKey::Once if !request.confirmed_after_secret => {
            Err(RuleError::AfterSecretNeedsConfirmation {
                path: read.path.clone(),
                what: read.what.clone(),
            })
        }
        _ => Ok(()),
    }
}

/// Whether `entry`, written into `list`, would let landstrip allow `path`.
pub fn entry_covers(entry: &str, list: FsList, path: &Path, project: &Path, home: &Path) -> bool {
    policy::PolicyMatcher::single(list, entry, project, home).matches(list, path)
}

/// What sensitive location an explicit wider entry would open, if any. A glob can match
/// anywhere, so it always counts as sensitive.
fn wider_sensitive(entry: &str, project: &Path, home: &Path) -> Option<String> {
    if policy::is_glob(entry) {
        return Some(format!(
            "{entry:?} is a pattern that can match sensitive files"
        ));
    }
    let root: PathBuf = policy::resolve_entry(entry, project, home);
    sensitive::covered_by(&root, home)
        .first()
        .map(|s| format!("{} covers {}", entry, s.what))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use crate::wire::protocol::{decode_line, Line};

    fn prompt(line: &str, project: &str) -> PendingPrompt {
        let Line::Query(query) = decode_line(line.as_bytes()) else {
            panic!("not a query: {line}")
        };
        PendingPrompt {
            id: 1,
            connection: 1,
            project: PathBuf::from(project),
            session: None,
            query: Arc::new(query),
            received_ms: 0,
            session_scope: None,
            origin: None,
            after_secret: None,
            host: None,
        }
    }

    fn write(path: &str) -> PendingPrompt {
        prompt(
            &format!(
                r#"{{"kind":"filesystem","state":"query","query_id":"1","operation":"write","path":"{path}","reason":"allow_miss"}}"#
            ),
            "/home/u/proj",
        )
    }

    fn net() -> PendingPrompt {
        prompt(
            r#"{"kind":"network","state":"query","query_id":"2","operation":"connect","target":"127.0.0.1:9"}"#,
            "/home/u/proj",
        )
    }

    const HOME: &str = "/home/u";

    fn req(choice: ChoiceKey) -> AnswerRequest {
        AnswerRequest::new(choice)
    }

    /// A write's project or global answer: an `allowWrite` entry.
    fn persist(target: PolicyTarget, entry: &str) -> Decision {
        Decision::Persist {
            target,
            list: FsList::AllowWrite,
            entry: entry.to_owned(),
        }
    }

    #[test]
    fn a_project_or_global_answer_to_a_read_lands_in_allow_read() {
        let p = read("/home/u/docs/notes/a.md");
        let home = Path::new(HOME);
        for (choice, target) in [
            (ChoiceKey::Project, PolicyTarget::Project),
            (ChoiceKey::Global, PolicyTarget::Global),
        ] {
            let Ok(Decision::Persist {
                target: got,
                list,
                entry,
            }) = resolve(&p, home, &req(choice))
            else {
                panic!("{choice:?} on a read did not persist");
            };
            assert_eq!(
                (got, list),
                (target, FsList::AllowRead),
                "{choice:?}: {entry}"
            );
        }
        // And a write's in allowWrite, through the same rule.
        let w = write("/home/u/docs/notes/a.md");
        assert!(matches!(
            resolve(&w, home, &req(ChoiceKey::Project)),
            Ok(Decision::Persist {
                list: FsList::AllowWrite,
                ..
            })
        ));
    }

    #[test]
    fn plain_choices_resolve_to_themselves() {
        let p = write("/home/u/cache/a/b");
        let home = Path::new(HOME);
        assert_eq!(resolve(&p, home, &req(ChoiceKey::Once)), Ok(Decision::Once));
        assert_eq!(resolve(&p, home, &req(ChoiceKey::Deny)), Ok(Decision::Deny));
        assert_eq!(
            resolve(&p, home, &req(ChoiceKey::Session)),
            Ok(Decision::Session {
                effect: Effect::Allow,
                limits: Limits::default()
            })
        );
    }

    #[test]
    fn project_and_global_default_to_the_suggested_scope() {
        let p = write("/home/u/cache/a/b");
        let home = Path::new(HOME);
        assert_eq!(
            resolve(&p, home, &req(ChoiceKey::Global)),
            Ok(persist(PolicyTarget::Global, "~/cache"))
        );
        let mut r = req(ChoiceKey::Project);
        r.scope = Some(ScopeKind::Parent);
        assert_eq!(
            resolve(&p, home, &r),
            Ok(persist(PolicyTarget::Project, "~/cache/a"))
        );
    }

    #[test]
    fn the_suggested_scope_can_be_named_when_it_is_also_the_parent() {
        // ~/notes/todo.txt: the session scope ~/notes is the parent as well.
        let p = write("/home/u/notes/todo.txt");
        let mut r = req(ChoiceKey::Project);
        r.scope = Some(ScopeKind::Suggested);
        assert_eq!(
            resolve(&p, Path::new(HOME), &r),
            Ok(persist(PolicyTarget::Project, "~/notes"))
        );
    }

    #[test]
    fn an_offered_entry_is_accepted_as_is() {
        let p = write("/home/u/cache/a/b");
        let mut r = req(ChoiceKey::Global);
        r.entry = Some("~/cache/a/b".into());
        assert_eq!(
            resolve(&p, Path::new(HOME), &r),
            Ok(persist(PolicyTarget::Global, "~/cache/a/b"))
        );
    }

    #[test]
    fn an_entry_that_does_not_cover_the_request_is_refused() {
        let p = write("/home/u/cache/a/b");
        let mut r = req(ChoiceKey::Global);
        r.entry = Some("~/elsewhere".into());
        r.wider = true;
        assert!(matches!(
            resolve(&p, Path::new(HOME), &r),
            Err(RuleError::DoesNotCover { .. })
        ));
    }

    #[test]
    fn a_wider_entry_needs_the_flag() {
        let p = write("/home/u/cache/a/b");
        let mut r = req(ChoiceKey::Global);
        r.entry = Some("/home/u/cache/".into());
        let err = resolve(&p, Path::new(HOME), &r).unwrap_err();
        assert!(matches!(err, RuleError::WiderNotConfirmed { .. }), "{err}");
        r.entry = Some("~/cache/a/..".into());
        r.wider = true;
        assert_eq!(
            resolve(&p, Path::new(HOME), &r),
            Ok(persist(PolicyTarget::Global, "~/cache/a/.."))
        );
    }

    #[test]
    fn a_wider_entry_over_a_sensitive_location_needs_confirmation() {
        let p = write("/home/u/cache/a/b");
        let mut r = req(ChoiceKey::Global);
        r.entry = Some("~".into());
        r.wider = true;
        assert!(matches!(
            resolve(&p, Path::new(HOME), &r),
            Err(RuleError::NeedsConfirmation { .. })
        ));
        r.entry = Some("~/cache/**".into());
        assert!(matches!(
            resolve(&p, Path::new(HOME), &r),
            Err(RuleError::NeedsConfirmation { .. })
        ));
        r.confirmed = true;
        assert!(resolve(&p, Path::new(HOME), &r).is_ok());
    }

    #[test]
    fn a_sensitive_path_needs_confirmation_beyond_once() {
        let p = write("/home/u/.ssh/config");
        let home = Path::new(HOME);
        assert_eq!(resolve(&p, home, &req(ChoiceKey::Once)), Ok(Decision::Once));
        for choice in [ChoiceKey::Session, ChoiceKey::Project, ChoiceKey::Global] {
            assert!(
                matches!(
                    resolve(&p, home, &req(choice)),
                    Err(RuleError::NeedsConfirmation { .. })
                ),
                "{choice:?}"
            );
            let mut r = req(choice);
            r.confirmed = true;
            assert!(resolve(&p, home, &r).is_ok(), "{choice:?}");
        }
    }

    #[test]
    fn a_folder_holding_credentials_needs_confirmation_beyond_once() {
        // cargo's first request in a fresh home creates ~/.cargo: a grant of it would
        // cover ~/.cargo/credentials.toml.
        let p = write("/home/u/.cargo");
        let home = Path::new(HOME);
        assert_eq!(resolve(&p, home, &req(ChoiceKey::Once)), Ok(Decision::Once));
        for choice in [ChoiceKey::Session, ChoiceKey::Project] {
            assert!(
                matches!(
                    resolve(&p, home, &req(choice)),
                    Err(RuleError::NeedsConfirmation { .. })
                ),
                "{choice:?}"
            );
        }
    }

    #[test]
    fn network_prompts_cannot_be_persisted() {
        let p = net();
        let home = Path::new(HOME);
        assert_eq!(
            resolve(&p, home, &req(ChoiceKey::Project)),
            Err(RuleError::NotPersistable)
        );
        assert_eq!(
            resolve(&p, home, &req(ChoiceKey::Session)),
            Ok(Decision::Session {
                effect: Effect::Allow,
                limits: Limits::default()
            })
        );
    }

    #[test]
    fn scope_and_entry_go_with_project_or_global_only() {
        let p = write("/home/u/cache/a/b");
        let mut r = req(ChoiceKey::Once);
        r.entry = Some("~/cache".into());
        assert_eq!(
            resolve(&p, Path::new(HOME), &r),
            Err(RuleError::ScopeWithoutTarget)
        );
        let mut r = req(ChoiceKey::Project);
        r.entry = Some("~/cache".into());
        r.scope = Some(ScopeKind::Exact);
        assert_eq!(
            resolve(&p, Path::new(HOME), &r),
            Err(RuleError::ScopeAndEntry)
        );
        r.scope = None;
        r.entry = Some("  ".into());
        assert!(matches!(
            resolve(&p, Path::new(HOME), &r),
            Err(RuleError::BadEntry(_))
        ));
    }

    #[test]
    fn the_wire_form_is_flat() {
        let r: AnswerRequest =
            serde_json::from_str(r#"{"choice":"global","entry":"~/x","wider":true}"#).unwrap();
        assert_eq!(r.choice, ChoiceKey::Global);
        assert!(r.wider && !r.confirmed);
        assert_eq!(
            serde_json::to_string(&AnswerRequest::once()).unwrap(),
            r#"{"choice":"once"}"#
        );
    }

    fn with_exe(path: &str, exe: &str) -> PendingPrompt {
        prompt(
            &format!(
                r#"{{"kind":"filesystem","state":"query","query_id":"1","operation":"write","path":"{path}","reason":"allow_miss","process":{{"pid":7,"exe":"{exe}"}}}}"#
            ),
            "/home/u/proj",
        )
    }

    fn read(path: &str) -> PendingPrompt {
        prompt(
            &format!(
                r#"{{"kind":"filesystem","state":"query","query_id":"1","operation":"read","path":"{path}","reason":"deny_match"}}"#
            ),
            "/home/u/proj",
        )
    }

    fn never_at(target: PolicyTarget, list: FsList, entry: &str) -> Decision {
        Decision::Persist {
            target,
            list,
            entry: entry.to_owned(),
        }
    }

    #[test]
    fn session_limits_resolve_with_the_asking_program() {
        let p = with_exe("/home/u/cache/a", "/usr/bin/python3");
        let home = Path::new(HOME);
        let r: AnswerRequest =
            serde_json::from_str(r#"{"choice":"session","for":"15m","program":true}"#).unwrap();
        assert_eq!(
            resolve(&p, home, &r),
            Ok(Decision::Session {
                effect: Effect::Allow,
                limits: Limits {
                    lifetime: Some(Lifetime::For(std::time::Duration::from_secs(900))),
                    program: Some("/usr/bin/python3".into()),
                },
            })
        );
        // Without a program named by landstrip there is nothing to limit to.
        assert_eq!(
            resolve(&write("/home/u/cache/a"), home, &r),
            Err(RuleError::NoProgram)
        );
        let run: AnswerRequest =
            serde_json::from_str(r#"{"choice":"deny","session":true,"for":"run"}"#).unwrap();
        assert_eq!(
            resolve(&p, home, &run),
            Ok(Decision::Session {
                effect: Effect::Deny,
                limits: Limits {
                    lifetime: Some(Lifetime::Run),
                    program: None,
                },
            })
        );
    }

    #[test]
    fn limits_and_flags_go_with_their_choices_only() {
        let p = with_exe("/home/u/cache/a", "/bin/sh");
        let home = Path::new(HOME);
        let limited = |choice, lifetime, program| AnswerRequest {
            lifetime,
            program,
            ..req(choice)
        };
        for choice in [
            ChoiceKey::Once,
            ChoiceKey::Deny,
            ChoiceKey::Project,
            ChoiceKey::Never,
        ] {
            assert_eq!(
                resolve(&p, home, &limited(choice, Some(Lifetime::Run), false)),
                Err(RuleError::LimitWithoutGrant),
                "{choice:?}"
            );
            assert_eq!(
                resolve(&p, home, &limited(choice, None, true)),
                Err(RuleError::LimitWithoutGrant),
                "{choice:?}"
            );
        }
        let session_once = AnswerRequest {
            session: true,
            ..req(ChoiceKey::Once)
        };
        assert_eq!(
            resolve(&p, home, &session_once),
            Err(RuleError::SessionWithoutDeny)
        );
        let global_project = AnswerRequest {
            global: true,
            ..req(ChoiceKey::Project)
        };
        assert_eq!(
            resolve(&p, home, &global_project),
            Err(RuleError::GlobalWithoutNever)
        );
    }

    #[test]
    fn limits_do_not_lift_the_sensitive_confirmation() {
        let p = with_exe("/home/u/.ssh/config", "/bin/sh");
        let home = Path::new(HOME);
        let r = AnswerRequest {
            lifetime: Some(Lifetime::For(std::time::Duration::from_secs(90))),
            program: true,
            ..req(ChoiceKey::Session)
        };
        assert!(matches!(
            resolve(&p, home, &r),
            Err(RuleError::NeedsConfirmation { .. })
        ));
        let confirmed = AnswerRequest {
            confirmed: true,
            ..r
        };
        assert!(resolve(&p, home, &confirmed).is_ok());
        // Denying takes access away: neither deny for the session nor never asks twice.
        let deny_session = AnswerRequest {
            session: true,
            ..req(ChoiceKey::Deny)
        };
        assert!(resolve(&p, home, &deny_session).is_ok());
        assert_eq!(
            resolve(&p, home, &req(ChoiceKey::Never)),
            Ok(never_at(
                PolicyTarget::Project,
                FsList::DenyWrite,
                "~/.ssh/config"
            ))
        );
    }

    #[test]
    fn never_writes_the_exact_path_or_its_folder_into_the_deny_list() {
        let home = Path::new(HOME);
        let w = write("/home/u/cache/a/b");
        assert_eq!(
            resolve(&w, home, &req(ChoiceKey::Never)),
            Ok(never_at(
                PolicyTarget::Project,
                FsList::DenyWrite,
                "~/cache/a/b"
            ))
        );
        let parent: AnswerRequest =
            serde_json::from_str(r#"{"choice":"never","scope":"parent","global":true}"#).unwrap();
        assert_eq!(
            resolve(&w, home, &parent),
            Ok(never_at(
                PolicyTarget::Global,
                FsList::DenyWrite,
                "~/cache/a"
            ))
        );
        let r = read("/home/u/docs/x.txt");
        assert_eq!(
            resolve(&r, home, &req(ChoiceKey::Never)),
            Ok(never_at(
                PolicyTarget::Project,
                FsList::DenyRead,
                "~/docs/x.txt"
            ))
        );
        // The suggested (session) scope and anything wider are not offered.
        let suggested = AnswerRequest {
            scope: Some(ScopeKind::Suggested),
            ..req(ChoiceKey::Never)
        };
        assert!(matches!(
            resolve(&w, home, &suggested),
            Err(RuleError::UnknownScope("suggested", _))
        ));
        let wide = AnswerRequest {
            entry: Some("~/cache".into()),
            ..req(ChoiceKey::Never)
        };
        assert!(matches!(
            resolve(&w, home, &wide),
            Err(RuleError::NeverTooWide(_))
        ));
        let offered = AnswerRequest {
            entry: Some("~/cache/a".into()),
            ..req(ChoiceKey::Never)
        };
        assert_eq!(
            resolve(&w, home, &offered),
            Ok(never_at(
                PolicyTarget::Project,
                FsList::DenyWrite,
                "~/cache/a"
            ))
        );
    }

    #[test]
    fn never_does_not_offer_the_project_as_a_folder() {
        let home = Path::new(HOME);
        let p = write("/home/u/proj/out.txt");
        let kinds: Vec<ScopeKind> = never_scopes(&p, home).iter().map(|o| o.kind).collect();
        assert_eq!(kinds, vec![ScopeKind::Exact]);
        let parent = AnswerRequest {
            scope: Some(ScopeKind::Parent),
            ..req(ChoiceKey::Never)
        };
        assert!(matches!(
            resolve(&p, home, &parent),
            Err(RuleError::UnknownScope("parent", _))
        ));
        assert_eq!(
            resolve(&p, home, &req(ChoiceKey::Never)),
            Ok(never_at(
                PolicyTarget::Project,
                FsList::DenyWrite,
                "out.txt"
            ))
        );
    }

    #[test]
    fn never_cannot_be_said_of_a_network_request_but_deny_for_the_session_can() {
        let p = net();
        let home = Path::new(HOME);
        assert_eq!(
            resolve(&p, home, &req(ChoiceKey::Never)),
            Err(RuleError::NeverNotExpressible)
        );
        let r: AnswerRequest = serde_json::from_str(r#"{"choice":"deny","session":true}"#).unwrap();
        assert_eq!(
            resolve(&p, home, &r),
            Ok(Decision::Session {
                effect: Effect::Deny,
                limits: Limits::default()
            })
        );
    }

    #[test]
    fn the_new_fields_keep_the_wire_form_flat_and_old_answers_read_as_before() {
        let r: AnswerRequest =
            serde_json::from_str(r#"{"choice":"session","for":"15m","program":true}"#).unwrap();
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            serde_json::json!({"choice":"session","for":"15m","program":true})
        );
        assert!(
            serde_json::from_str::<AnswerRequest>(r#"{"choice":"session","for":"soon"}"#).is_err()
        );
        assert_eq!(
            serde_json::to_string(&AnswerRequest::deny()).unwrap(),
            r#"{"choice":"deny"}"#
        );
    }

    #[test]
    fn a_project_or_global_entry_under_an_always_root_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().canonicalize().unwrap();
        let (home, project) = (base.join("home"), base.join("proj"));
        std::fs::create_dir_all(project.join(".opencode")).unwrap();
        std::fs::write(
            project.join(".opencode/sandbox.json"),
            r#"{"filesystem":{"denyWriteAlways":["locked"]}}"#,
        )
        .unwrap();
        let path = project.join("locked/deep/a.txt");
        let p = prompt(
            &format!(
                r#"{{"kind":"filesystem","state":"query","query_id":"1","operation":"write","path":"{}","reason":"allow_miss"}}"#,
                path.display()
            ),
            &project.display().to_string(),
        );
        for (choice, scope) in [
            (ChoiceKey::Project, ScopeKind::Exact),
            (ChoiceKey::Global, ScopeKind::Exact),
            (ChoiceKey::Project, ScopeKind::Parent),
        ] {
            let mut r = req(choice);
            r.scope = Some(scope);
            let err = resolve(&p, &home, &r).unwrap_err();
            match &err {
                RuleError::UnderAlways { root, always, .. } => {
                    assert_eq!((root.as_str(), *always), ("locked", "denyWriteAlways"));
                }
                other => panic!("{choice:?}: {other}"),
            }
            assert!(err.to_string().contains("may override"), "{err}");
        }
        let mut wider = req(ChoiceKey::Project);
        wider.entry = Some("locked".into());
        wider.wider = true;
        assert!(matches!(
            resolve(&p, &home, &wider),
            Err(RuleError::UnderAlways { .. })
        ));
        // The suggested scope here is the whole project, wider than the root: saved (the
        // root still wins over it).
        assert_eq!(
            resolve(&p, &home, &req(ChoiceKey::Project)),
            Ok(persist(PolicyTarget::Project, "."))
        );
        // What writes no entry is the broker's to refuse (it hard-denies such a request).
        assert_eq!(
            resolve(&p, &home, &req(ChoiceKey::Once)),
            Ok(Decision::Once)
        );
        // A read of the same path has no denyReadAlways root over it.
        let read = prompt(
            &format!(
                r#"{{"kind":"filesystem","state":"query","query_id":"2","operation":"read","path":"{}","reason":"allow_miss"}}"#,
                path.display()
            ),
            &project.display().to_string(),
        );
        assert!(matches!(
            resolve(&read, &home, &req(ChoiceKey::Project)),
            Ok(Decision::Persist { .. })
        ));
    }

    #[test]
    fn after_a_secret_a_connect_is_allowed_once_confirmed_or_for_its_run_only() {
        let read = SecretRead {
            path: "/home/u/.aws/credentials".into(),
            what: "AWS credentials".into(),
            at_ms: 1,
        };
        let marked = PendingPrompt {
            after_secret: Some(read),
            ..net()
        };
        let home = Path::new(HOME);
        let for_ = |lifetime: Option<Lifetime>| AnswerRequest {
            lifetime,
            ..req(ChoiceKey::Session)
        };
        let hour = Some(Lifetime::For(std::time::Duration::from_secs(3600)));
        for (request, refused) in [
            (req(ChoiceKey::Session), "for the session beyond this run"),
            (for_(hour), "for the session beyond this run"),
            (req(ChoiceKey::Project), "for the project"),
            (req(ChoiceKey::Global), "everywhere"),
        ] {
            let err = resolve(&marked, home, &request).expect_err("refused");
            assert!(
                matches!(&err, RuleError::AfterSecretTooWide { choice, .. } if *choice == refused),
                "{request:?}: {err:?}"
            );
            assert!(
                err.to_string().contains("/home/u/.aws/credentials"),
                "{err}"
            );
        }
        assert!(matches!(
            resolve(&marked, home, &req(ChoiceKey::Once)),
            Err(RuleError::AfterSecretNeedsConfirmation { .. })
        ));
        let once = AnswerRequest {
            confirmed_after_secret: true,
            ..req(ChoiceKey::Once)
        };
        assert_eq!(resolve(&marked, home, &once), Ok(Decision::Once));
        assert!(matches!(
            resolve(&marked, home, &for_(Some(Lifetime::Run))),
            Ok(Decision::Session {
                effect: Effect::Allow,
                ..
            })
        ));
        // Denials in any form.
        assert_eq!(
            resolve(&marked, home, &req(ChoiceKey::Deny)),
            Ok(Decision::Deny)
        );
        let deny_session = AnswerRequest {
            session: true,
            ..req(ChoiceKey::Deny)
        };
        assert!(resolve(&marked, home, &deny_session).is_ok());
        // Unmarked, the same answers are the usual ones.
        assert_eq!(
            resolve(&net(), home, &req(ChoiceKey::Once)),
            Ok(Decision::Once)
        );
        assert!(resolve(&net(), home, &req(ChoiceKey::Session)).is_ok());
        // A marked write keeps its usual answers.
        let write = PendingPrompt {
            after_secret: marked.after_secret.clone(),
            ..write("/tmp/out.txt")
        };
        assert_eq!(
            resolve(&write, home, &req(ChoiceKey::Once)),
            Ok(Decision::Once)
        );
        assert!(resolve(&write, home, &req(ChoiceKey::Session)).is_ok());
        assert!(resolve(&write, home, &req(ChoiceKey::Project)).is_ok());
    }
}
