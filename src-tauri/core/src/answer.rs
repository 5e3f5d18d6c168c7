//! The rules every surface applies to an answer (the dialog, notification buttons, `ctl`,
//! the settings view): which choices a prompt allows, which entries a project or global
//! grant may write, and when a sensitive path needs a second confirmation. An
//! [`AnswerRequest`] says what a person asked for; [`resolve`] turns it into a
//! [`Decision`], the only thing the broker carries out. See docs/ARCHITECTURE.md, "The
//! answer path".

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::broker::PendingPrompt;
use crate::policy::{self, FsList};
use crate::protocol::{FsOperation, QueryKind};
use crate::scope::{grant_options, PolicyTarget, ScopeKind, ScopeOption};
use crate::sensitive;

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
    /// Deny.
    Deny,
}

impl ChoiceKey {
    /// Whether the grant outlives this one request.
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

    /// The word used on the command line and the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Once => "once",
            Self::Session => "session",
            Self::Project => "project",
            Self::Global => "global",
            Self::Deny => "deny",
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// What a person asked for, from any surface. On the wire (control socket, dialog):
/// `{"choice":"project","scope":"parent"}`, `{"choice":"global","entry":"~/x","wider":true}`.
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
}

/// Why an answer is refused. The prompt stays pending.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum RuleError {
    /// Project and global grants write paths; a network address has none.
    #[error("a network request can only be allowed once or for the session")]
    NotPersistable,
    /// `scope`, `entry` or `wider` given with a choice that writes no entry.
    #[error("a scope or an entry goes with a project or global answer only")]
    ScopeWithoutTarget,
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
    /// Allow it and add a session grant for its scope.
    Session,
    /// Add `entry` to `list` of the `target` file, then allow.
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
    let target = request.choice.target();
    if target.is_none() && (request.scope.is_some() || request.entry.is_some() || request.wider) {
        return Err(RuleError::ScopeWithoutTarget);
    }
    if request.choice.is_persistent() && !request.confirmed {
        if let Some(found) = fs.and_then(|fs| sensitive::classify(Path::new(&fs.path), home)) {
            return Err(RuleError::NeedsConfirmation {
                what: found.what.to_owned(),
            });
        }
    }
    let target = match request.choice {
        ChoiceKey::Once => return Ok(Decision::Once),
        ChoiceKey::Session => return Ok(Decision::Session),
        ChoiceKey::Deny => return Ok(Decision::Deny),
        ChoiceKey::Project | ChoiceKey::Global => target.ok_or(RuleError::ScopeWithoutTarget)?,
    };
    let Some(fs) = fs else {
        return Err(RuleError::NotPersistable);
    };
    let list = grant_list(fs.operation);
    let options = offered_scopes(prompt, home);
    let offered = || {
        options
            .iter()
            .map(|o| format!("{:?}", o.entry(target)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let entry = match (&request.scope, &request.entry) {
        (Some(_), Some(_)) => return Err(RuleError::ScopeAndEntry),
        (Some(kind), None) => options
            .iter()
            .find(|o| o.kind == *kind)
            .map(|o| o.entry(target).to_owned())
            .ok_or_else(|| RuleError::UnknownScope(scope_name(*kind), offered()))?,
        (None, None) => options
            .iter()
            .find(|o| o.suggested)
            .map(|o| o.entry(target).to_owned())
            .ok_or_else(|| RuleError::UnknownScope("suggested", offered()))?,
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
    Ok(Decision::Persist {
        target,
        list,
        entry,
    })
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

    use crate::protocol::{decode_line, Line};

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

    fn persist(target: PolicyTarget, entry: &str) -> Decision {
        Decision::Persist {
            target,
            list: FsList::AllowWrite,
            entry: entry.to_owned(),
        }
    }

    #[test]
    fn plain_choices_resolve_to_themselves() {
        let p = write("/home/u/cache/a/b");
        let home = Path::new(HOME);
        assert_eq!(resolve(&p, home, &req(ChoiceKey::Once)), Ok(Decision::Once));
        assert_eq!(resolve(&p, home, &req(ChoiceKey::Deny)), Ok(Decision::Deny));
        assert_eq!(
            resolve(&p, home, &req(ChoiceKey::Session)),
            Ok(Decision::Session)
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
    fn network_prompts_cannot_be_persisted() {
        let p = net();
        let home = Path::new(HOME);
        assert_eq!(
            resolve(&p, home, &req(ChoiceKey::Project)),
            Err(RuleError::NotPersistable)
        );
        assert_eq!(
            resolve(&p, home, &req(ChoiceKey::Session)),
            Ok(Decision::Session)
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
}
