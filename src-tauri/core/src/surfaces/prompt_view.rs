//! What the prompt dialog shows and accepts, built from the broker's pending prompts
//! without a display: the view model of one prompt, the preview of a project or global
//! grant and the checks an answer must pass (which prompt it shows next: `dialog_queue.rs`).

use std::path::Path;

use serde::Serialize;

use crate::decision::answer::RuleError;
use crate::decision::broker::{PendingPrompt, PromptId};
use crate::decision::scope::{session_scope, PolicyTarget};
use crate::origin::program::program_name;
use crate::origin::text::shorten_middle;
use crate::origin::Origin;
use crate::policy::sensitive::{self, Sensitive};
use crate::surfaces::after_secret_view::{after_secret_choices, AfterSecretView};
pub use crate::surfaces::preview::{GrantPreview, PreviewOption};
use crate::wire::protocol::{FsAccess, FsOperation, NetAccess, NetOperation, QueryKind, Reason};
pub use crate::words::{home_relative, Shown};

pub use crate::decision::answer::ChoiceKey;
pub use crate::surfaces::choice::ChoiceView;

/// The program that made the request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProgramView {
    /// The executable's file name, or "A program".
    pub name: String,
    /// The executable's full path, when known.
    pub exe: Option<String>,
    /// Its pid, when known.
    pub pid: Option<u32>,
    /// Its working directory, when known.
    pub cwd: Option<Shown>,
}

/// One process between landstrip and the request, as the dialog lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainLinkView {
    /// Its pid.
    pub pid: u32,
    /// The program as people know it.
    pub program: String,
    /// Its command line: one line, long arguments shortened in the middle (`text`), and
    /// all of it (`full`).
    pub argv: Shown,
}

/// The command behind the request (secrets already masked), as the dialog shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OriginView {
    /// The asking process's command as people read it (`npm ci`), short and in full.
    pub command: Shown,
    /// The rest of the sentence after the command: " in ~/src/app wants to write ~/x."
    pub sentence_rest: String,
    /// The processes from the command landstrip started (first) down to the asking one.
    pub chain: Vec<ChainLinkView>,
    /// More parents were there than were read.
    pub chain_cut: bool,
    /// The opencode session's title, when opencode's store names it.
    pub session_title: Option<String>,
    /// The agent's own description of the command (opencode 1.x's bash tool call's).
    pub description: Option<String>,
    /// The command as the agent wrote it (opencode 2's shell tool call's), where it
    /// differs from the command landstrip started.
    pub agent_command: Option<String>,
}

/// Why the prompt is sensitive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SensitiveView {
    /// What the location holds.
    pub what: String,
    /// The location.
    pub location: Shown,
}

impl SensitiveView {
    fn new(found: &Sensitive, home: &Path) -> Self {
        Self {
            what: found.what.to_owned(),
            location: Shown::path(&found.location, home),
        }
    }
}

/// What a filesystem session grant never covers, said wherever its scope is shown: a
/// sensitive request is allowed only by an answer to itself (ARCHITECTURE.md, "Decision
/// rules").
pub const STILL_ASK: &str = " Sensitive files in it (keys, .env, credentials) still ask.";

/// The offer to answer every prompt one session grant would settle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BulkView {
    /// How many prompts (the shown one included).
    pub count: usize,
    /// The button text.
    pub label: String,
}

/// One duration the chooser beside "Session" offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LifetimeOption {
    /// What the answer's `for` says: `""` (until the app quits), `"run"`, or a duration.
    pub value: String,
    /// Its text, e.g. "for 15 minutes".
    pub label: String,
}

/// The limits a session grant (or denial) may be given in the dialog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionLimitsView {
    /// The durations offered, in the order the key cycles through them.
    pub options: Vec<LifetimeOption>,
    /// The key that moves to the next duration.
    pub shortcut: char,
    /// The value the chooser starts at: the one chosen last time in this project (the app
    /// fills it in; `""` is "until quit"), else [`DEFAULT_LIFETIME`].
    pub chosen: Option<String>,
    /// The program a grant can be limited to; None when landstrip did not name it.
    pub program: Option<String>,
    /// The key that limits the grant to that program (on or off).
    pub program_shortcut: char,
}

/// The duration the dialog's chooser starts at in a project where none was chosen yet: an
/// hour, so that a grant given without a thought lapses about when the person's attention
/// does, and one that lapses mid-task asks again at most once per scope still in use
/// (docs/BENCHMARKS.md, "Prompts"). `ctl answer ID session` without `--for` is not the
/// dialog: it grants until quit, as a script asking for exactly that expects.
pub const DEFAULT_LIFETIME: &str = "1h";

/// The durations the dialog offers beside "Session", in order.
pub const LIFETIMES: [(&str, &str); 6] = [
    ("", "until landstrip-tray quits"),
    ("run", "until this run ends"),
    ("5m", "for 5 minutes"),
    ("15m", "for 15 minutes"),
    ("1h", "for 1 hour"),
    ("8h", "for 8 hours"),
];

/// Everything the dialog shows for one pending prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptView {
    /// The prompt to answer.
    pub id: PromptId,
    /// `filesystem` or `network`.
    pub kind: &'static str,
    /// `read`, `write`, `connect`, `bind`, …
    pub operation: String,
    /// The question, e.g. "Allow write access?".
    pub title: String,
    /// One sentence: who wants what.
    pub summary: String,
    /// The path (home-relative) or the network address.
    pub subject: Shown,
    /// What the program asked for, when it differs from the resolved path.
    pub requested: Option<String>,
    /// The program behind the request.
    pub program: ProgramView,
    /// The held syscall and its flags, e.g. "openat (O_WRONLY, O_CREAT)".
    pub syscall: Option<String>,
    /// Why the policy did not allow it, in words.
    pub reason: Option<String>,
    /// The project the run belongs to.
    pub project: Shown,
    /// The opencode session, when the launcher named one.
    pub session: Option<String>,
    /// What "for session" covers (filesystem: the scope; network: the address).
    pub session_scope: Shown,
    /// Who a session grant is for, in words.
    pub session_holder: String,
    /// This prompt's place in the queue (1-based).
    pub position: usize,
    /// How many prompts are waiting, this one included.
    pub total: usize,
    /// The buttons, in the order shown.
    pub choices: Vec<ChoiceView>,
    /// The path is sensitive: Deny is the default and persistent grants need a second
    /// confirmation.
    pub sensitive: Option<SensitiveView>,
    /// Several pending prompts share this one's session scope.
    pub bulk: Option<BulkView>,
    /// The duration chooser and the program limit beside "Session".
    pub session_limits: SessionLimitsView,
    /// The command behind the request, when it could be read.
    pub origin: Option<OriginView>,
    /// The secret its run read earlier, on a network request or a write outside the
    /// project of a run after a secret: shown in red.
    pub after_secret: Option<AfterSecretView>,
    /// Why allowing this write could not be undone ("cannot be undone: too large"), set
    /// by the dialog from the write journal; None when it could be, or nothing is kept.
    pub undo: Option<String>,
    /// The remote machine the request waits on (its name here), None for this machine's:
    /// named in the title and the sentence too.
    pub host: Option<String>,
}

/// What the dialog page receives on every change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DialogUpdate {
    /// The prompt to show; `None` when nothing is waiting.
    pub view: Option<PromptView>,
    /// A short note about the prompt that was on screen (withdrawn, answered elsewhere).
    pub notice: Option<String>,
}

/// Builds the view of `prompt`, the `position`-th (1-based) of `total` waiting; `covered`
/// is how many other pending prompts a session answer would settle too.
pub fn build_view(
    prompt: &PendingPrompt,
    home: &Path,
    position: usize,
    total: usize,
    covered: usize,
) -> PromptView {
    // Another machine's paths are judged by its user's home (`~`, sensitive locations).
    let home = prompt.home(home);
    let query = &prompt.query;
    let process = query.process.clone().unwrap_or_default();
    let name = program_name(query.process.as_ref()).unwrap_or_else(|| "A program".to_owned());
    let program = ProgramView {
        name: name.clone(),
        exe: process.exe.clone(),
        pid: process.pid,
        cwd: process
            .cwd
            .as_deref()
            .map(|c| Shown::path(Path::new(c), home)),
    };
    let session_holder = session_holder(prompt.session.as_deref());
    let project = Shown::path(&prompt.project, home);
    let (title, summary, subject, requested, reason, scope, sensitive, persistable) =
        match &query.kind {
            QueryKind::Filesystem(fs) => {
                let path = Path::new(&fs.path);
                let scope = prompt
                    .session_scope
                    .clone()
                    .unwrap_or_else(|| session_scope(path, &prompt.project, home));
                let (title, verb) = match fs.operation {
                    FsOperation::Write => ("Allow write access?", "write to"),
                    FsOperation::Read => ("Allow read access?", "read"),
                };
                (
                    title.to_owned(),
                    format!("{name} wants to {verb} a file its sandbox does not allow."),
                    Shown::path(path, home),
                    requested_path(fs),
                    Some(fs_reason(fs)),
                    Shown::path(&scope, home),
                    sensitive::guarding(path, home).map(|s| SensitiveView::new(&s, home)),
                    true,
                )
            }
            QueryKind::Network(net) => {
                let (title, verb) = match net.operation {
                    NetOperation::Connect => ("Allow network connection?".to_owned(), "connect to"),
                    NetOperation::Bind => ("Allow listening on a port?".to_owned(), "listen on"),
                    NetOperation::Other(ref op) => (format!("Allow network {op}?"), "use"),
                };
                (
                    title,
                    format!("{name} wants to {verb} an address its sandbox does not allow."),
                    Shown::plain(&net.target),
                    None,
                    Some(net_reason(net)),
                    Shown::plain(&net.target),
                    None,
                    false,
                )
            }
        };
    // With the command behind it known, the sentence starts with that command.
    let origin = origin_view(
        prompt.origin.as_deref(),
        program.cwd.as_ref(),
        sentence_verb(&query.kind),
        &subject,
    );
    let summary = match &origin {
        Some(o) if !o.command.text.is_empty() => format!("{}{}", o.command.text, o.sentence_rest),
        _ => summary,
    };
    // Another machine's request says so first, in the title and the sentence.
    let (title, summary) = match prompt.host_name() {
        Some(host) => (format!("{host}: {title}"), format!("On {host}: {summary}")),
        None => (title, summary),
    };
    let syscall = query.syscall.as_ref().map(|syscall| {
        let flags = match &query.kind {
            QueryKind::Filesystem(fs) if !fs.flags.is_empty() => {
                format!(" ({})", fs.flags.join(", "))
            }
            _ => String::new(),
        };
        format!("{syscall}{flags}")
    });
    let after_secret = prompt
        .after_secret
        .as_ref()
        .map(|read| AfterSecretView::new(read, home, !persistable));
    let choices = match &after_secret {
        Some(read) if read.network => after_secret_choices(&scope.text, read),
        _ => choices(persistable, sensitive.is_some(), &scope, &session_holder),
    };
    // After a secret, a network request is answered for itself only.
    let covered = match &after_secret {
        Some(read) if read.network => 0,
        _ => covered,
    };
    let bulk = (covered > 0).then(|| {
        let count = covered + 1;
        // The count is what the grant will really allow: covered_by_session_answer leaves
        // out the sensitive requests, which still ask.
        let label = if persistable {
            format!(
                "Allow all {count} pending under {} for this session",
                scope.text
            )
        } else {
            format!(
                "Allow all {count} pending to {} for this session",
                scope.text
            )
        };
        BulkView { count, label }
    });
    PromptView {
        id: prompt.id,
        kind: match query.kind {
            QueryKind::Filesystem(_) => "filesystem",
            QueryKind::Network(_) => "network",
        },
        operation: match &query.kind {
            QueryKind::Filesystem(fs) => fs.operation.as_str().to_owned(),
            QueryKind::Network(net) => net.operation.as_str().to_owned(),
        },
        title,
        summary,
        host: prompt.host_name().map(str::to_owned),
        subject,
        requested,
        program,
        syscall,
        reason,
        project,
        session: prompt.session.clone(),
        session_scope: scope,
        session_holder,
        position,
        total,
        choices,
        sensitive,
        bulk,
        session_limits: SessionLimitsView {
            options: LIFETIMES
                .iter()
                .map(|(value, label)| LifetimeOption {
                    value: (*value).to_owned(),
                    label: (*label).to_owned(),
                })
                .collect(),
            shortcut: 'T',
            chosen: Some(DEFAULT_LIFETIME.to_owned()),
            program: process.exe.clone().filter(|exe| !exe.is_empty()),
            program_shortcut: 'R',
        },
        origin,
        after_secret,
        undo: None,
    }
}

/// Who a session grant is for, in words: an opencode session, a `landstrip-tray run`
/// (session `run:PROGRAM:PID`), or the project's runs without a session.
fn session_holder(session: Option<&str>) -> String {
    match session {
        Some(session) => match run_program(session) {
            Some(program) => format!("this run of {program}"),
            None => "this opencode session".to_owned(),
        },
        // How long is the duration chooser's to say.
        None => "this project's runs".to_owned(),
    }
}

/// The program of a `landstrip-tray run` session id, `run:PROGRAM:PID`.
fn run_program(session: &str) -> Option<String> {
    let (program, pid) = session.strip_prefix("run:")?.rsplit_once(':')?;
    (!program.is_empty() && !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
        .then(|| crate::origin::text::printable(program))
}

/// The origin's view and the summary sentence it makes: "`npm ci` in ~/src/app wants to
/// write ~/.npm/_cacache/…".
fn origin_view(
    origin: Option<&Origin>,
    cwd: Option<&Shown>,
    verb: &str,
    subject: &Shown,
) -> Option<OriginView> {
    let origin = origin?;
    let asking = origin.asking();
    // Short enough that the sentence fits the dialog's two lines; the whole is a hover,
    // a key ("Full") away.
    let command = asking.map(|a| Shown {
        text: shorten_middle(&a.command.text, SENTENCE_COMMAND),
        full: a.command.full.clone(),
    });
    let opencode = origin.opencode.as_ref();
    if command.is_none() && opencode.is_none() {
        return None;
    }
    let place = cwd
        .map(|c| format!(" in {}", shorten_middle(&c.text, SENTENCE_PLACE)))
        .unwrap_or_default();
    let sentence_rest = format!(
        "{place} wants to {verb} {}.",
        shorten_middle(&subject.text, SENTENCE_SUBJECT)
    );
    Some(OriginView {
        command: command.unwrap_or_else(|| Shown::plain("")),
        sentence_rest,
        chain: origin
            .chain
            .iter()
            .map(|link| ChainLinkView {
                pid: link.pid,
                program: link.program.clone(),
                argv: link.argv.clone(),
            })
            .collect(),
        chain_cut: origin.chain_cut,
        session_title: opencode.and_then(|c| c.title.clone()),
        description: opencode.and_then(|c| c.description.clone()),
        agent_command: opencode.and_then(|c| c.command.clone()),
    })
}

/// What the request does, as the summary sentence says it.
fn sentence_verb(kind: &QueryKind) -> &'static str {
    match kind {
        QueryKind::Filesystem(fs) => match fs.operation {
            FsOperation::Write => "write",
            FsOperation::Read => "read",
        },
        QueryKind::Network(net) => match net.operation {
            NetOperation::Connect => "connect to",
            NetOperation::Bind => "listen on",
            NetOperation::Other(_) => "use",
        },
    }
}

/// How long the command, the working directory and the path or address may be in the
/// summary sentence.
const SENTENCE_COMMAND: usize = 44;
const SENTENCE_PLACE: usize = 32;
const SENTENCE_SUBJECT: usize = 44;

/// The program's own spelling of the path, when it says something the resolved path
/// does not (a relative path, a symlink, `..`).
fn requested_path(fs: &FsAccess) -> Option<String> {
    fs.requested_path
        .as_ref()
        .filter(|r| !r.is_empty() && r.as_str() != fs.path)
        .cloned()
}

/// Why the policy did not allow a filesystem request, in the policy's own words.
pub fn fs_reason(fs: &FsAccess) -> String {
    let (allow, deny) = match fs.operation {
        FsOperation::Read => ("allowRead", "denyRead"),
        FsOperation::Write => ("allowWrite", "denyWrite"),
    };
    match &fs.reason {
        Some(Reason::AllowMiss) | None => format!("not in {allow}"),
        Some(Reason::DenyMatch) => format!("not in {allow}: matches {deny}"),
        Some(Reason::Other(other)) => format!("not in {allow} ({other})"),
    }
}

/// Why the policy did not allow a network request.
pub fn net_reason(net: &NetAccess) -> String {
    match net.operation {
        NetOperation::Connect => "network access is off (allowNetwork is false)".to_owned(),
        NetOperation::Bind => "local binding is off (allowLocalBinding is false)".to_owned(),
        NetOperation::Other(ref op) => format!("the sandbox does not allow network {op}"),
    }
}

fn choices(
    persistable: bool,
    sensitive: bool,
    scope: &Shown,
    session_holder: &str,
) -> Vec<ChoiceView> {
    let mut list = vec![
        ChoiceView {
            key: ChoiceKey::Once,
            name: "once",
            label: "Allow once".to_owned(),
            short: "Allow once".to_owned(),
            shortcut: 'O',
            hint: "Allow this request only; the next one asks again.".to_owned(),
            default: !sensitive,
            two_step: false,
        },
        ChoiceView {
            key: ChoiceKey::Session,
            name: "session",
            label: "Allow for session".to_owned(),
            short: "Session".to_owned(),
            shortcut: 'S',
            hint: format!(
                "Allow {} for {session_holder} (or as long as chosen beside it); nothing is written to disk.{}",
                scope.text,
                if persistable { STILL_ASK } else { "" }
            ),
            default: false,
            two_step: sensitive,
        },
    ];
    if persistable {
        list.push(ChoiceView {
            key: ChoiceKey::Project,
            name: "project",
            label: "Allow for project…".to_owned(),
            short: "Project…".to_owned(),
            shortcut: 'P',
            hint: "Add an entry to the project's .opencode/sandbox.json (you see it first)."
                .to_owned(),
            default: false,
            two_step: true,
        });
        list.push(ChoiceView {
            key: ChoiceKey::Global,
            name: "global",
            label: "Allow globally…".to_owned(),
            short: "All projects…".to_owned(),
            shortcut: 'G',
            hint: "Add an entry to your global sandbox.json for every project (you see it first)."
                .to_owned(),
            default: false,
            two_step: true,
        });
    }
    list.push(ChoiceView {
        key: ChoiceKey::Deny,
        name: "deny",
        label: "Deny".to_owned(),
        short: "Deny".to_owned(),
        shortcut: 'D',
        hint: "The program gets “permission denied” (EACCES).".to_owned(),
        default: sensitive,
        two_step: false,
    });
    list.push(ChoiceView {
        key: ChoiceKey::Deny,
        name: "deny_session",
        label: "Deny for session".to_owned(),
        short: "Session".to_owned(),
        shortcut: 'X',
        hint: format!(
            "Deny this and, without asking, {} for {session_holder} (or as long as chosen); nothing is written to disk.",
            scope.text
        ),
        default: false,
        two_step: false,
    });
    // "Never" needs a field that can hold the request: a path, not a network address.
    if persistable {
        list.push(ChoiceView {
            key: ChoiceKey::Never,
            name: "never",
            label: "Never for project…".to_owned(),
            // On the "Or deny for" row, beside "Session".
            short: "Project…".to_owned(),
            shortcut: 'N',
            hint: "Deny, and add a deny entry to the project's .opencode/sandbox.json so it is never asked again (you see it first)."
                .to_owned(),
            default: false,
            two_step: true,
        });
        list.push(ChoiceView {
            key: ChoiceKey::Never,
            name: "never_global",
            label: "Never in any project…".to_owned(),
            short: "All projects…".to_owned(),
            shortcut: 'E',
            hint: "Deny, and add a deny entry to ~/.config/opencode/sandbox.json for every project (you see it first)."
                .to_owned(),
            default: false,
            two_step: true,
        });
    }
    list
}

/// The preview of a project or global grant of `prompt`: the file, the array, what it
/// holds now, and each offered scope's entry ([`crate::surfaces::preview`]). Network prompts have
/// nothing to persist.
pub fn preview_grant(
    prompt: &PendingPrompt,
    home: &Path,
    target: PolicyTarget,
) -> Result<GrantPreview, RuleError> {
    let QueryKind::Filesystem(fs) = &prompt.query.kind else {
        return Err(RuleError::NotPersistable);
    };
    Ok(super::preview::preview_grant(
        Path::new(&fs.path),
        fs.operation,
        &prompt.project,
        home,
        target,
    ))
}

/// The preview of a "never" answer to `prompt`: the file, the deny array, what it holds
/// now, and the exact path's and its folder's entries ([`crate::decision::answer::never_scopes`]).
/// Network prompts have no field that could hold them.
pub fn preview_never(
    prompt: &PendingPrompt,
    home: &Path,
    target: PolicyTarget,
) -> Result<GrantPreview, RuleError> {
    let QueryKind::Filesystem(fs) = &prompt.query.kind else {
        return Err(RuleError::NeverNotExpressible);
    };
    Ok(super::preview::preview_entries(
        crate::decision::answer::never_list(fs.operation),
        crate::decision::answer::never_scopes(prompt, home),
        &prompt.project,
        home,
        target,
    ))
}

/// A held write under the tests' project, for the phone page's tests.
#[cfg(test)]
pub(crate) use tests::write as test_write;

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::decision::prompt::RemoteHost;
    use crate::decision::scope::ScopeKind;
    use crate::wire::protocol::{decode_line, Line};

    const HOME: &str = "/home/dev";
    const PROJECT: &str = "/home/dev/src/proj";

    fn prompt(id: PromptId, trap: &str, session: Option<&str>) -> PendingPrompt {
        let Line::Query(query) = decode_line(trap.as_bytes()) else {
            panic!("not a query: {trap}");
        };
        PendingPrompt {
            id,
            connection: 1,
            project: PROJECT.into(),
            session: session.map(str::to_owned),
            query: Arc::new(query),
            received_ms: 0,
            session_scope: None,
            origin: None,
            after_secret: None,
            host: None,
        }
    }

    /// A held write of `path` under `PROJECT` (home `HOME`).
    pub(crate) fn write(id: PromptId, path: &str) -> PendingPrompt {
        prompt(
            id,
            &format!(
                r#"{{"kind":"filesystem","code":"FILESYSTEM_DENIED","state":"query","query_id":"{id}","operation":"write","path":"{path}","requested_path":"{path}","syscall":"openat","errno":"EACCES","flags":["O_WRONLY","O_CREAT","O_TRUNC"],"reason":"allow_miss","process":{{"pid":2434,"exe":"/usr/bin/python3.11","cwd":"/home/dev/src/proj"}},"mechanism":"seccomp"}}"#
            ),
            None,
        )
    }

    fn connect(id: PromptId) -> PendingPrompt {
        prompt(
            id,
            r#"{"kind":"network","code":"NETWORK_DENIED","state":"query","query_id":"8","operation":"connect","target":"127.0.0.1:9","syscall":"connect","errno":"EACCES","mechanism":"seccomp","process":{"pid":2506,"exe":"/usr/bin/python3.11","cwd":"/home/dev/src/proj"}}"#,
            Some("ses_1"),
        )
    }

    fn keys(view: &PromptView) -> Vec<(&'static str, char, bool)> {
        view.choices
            .iter()
            .map(|c| (c.name, c.shortcut, c.default))
            .collect()
    }

    fn home() -> &'static Path {
        Path::new(HOME)
    }

    #[test]
    fn a_remote_machine_s_request_names_it_in_the_title_and_the_sentence() {
        let prompt = PendingPrompt {
            host: Some(RemoteHost {
                name: "devbox".into(),
                home: HOME.into(),
            }),
            ..write(3, "/home/dev/notes/todo.txt")
        };
        let view = build_view(&prompt, home(), 1, 1, 0);
        assert_eq!(view.title, "devbox: Allow write access?");
        assert!(view.summary.starts_with("On devbox: "), "{}", view.summary);
        assert_eq!(view.host.as_deref(), Some("devbox"));
        let local = build_view(&write(3, "/home/dev/notes/todo.txt"), home(), 1, 1, 0);
        assert_eq!(local.title, "Allow write access?");
        assert!(local.host.is_none());
    }

    #[test]
    fn a_write_shows_its_full_context() {
        let view = build_view(&write(3, "/home/dev/notes/todo.txt"), home(), 1, 2, 0);
        assert_eq!(view.id, 3);
        assert_eq!(
            (view.kind, view.operation.as_str()),
            ("filesystem", "write")
        );
        assert_eq!(view.title, "Allow write access?");
        assert_eq!(
            view.summary,
            "python3.11 wants to write to a file its sandbox does not allow."
        );
        assert_eq!(view.subject.text, "~/notes/todo.txt");
        assert_eq!(view.subject.full, "/home/dev/notes/todo.txt");
        assert_eq!(view.requested, None, "the same path is not repeated");
        assert_eq!(view.program.exe.as_deref(), Some("/usr/bin/python3.11"));
        assert_eq!(view.program.pid, Some(2434));
        assert_eq!(view.program.cwd.as_ref().unwrap().text, "~/src/proj");
        assert_eq!(
            view.syscall.as_deref(),
            Some("openat (O_WRONLY, O_CREAT, O_TRUNC)")
        );
        assert_eq!(view.reason.as_deref(), Some("not in allowWrite"));
        assert_eq!(view.project.text, "~/src/proj");
        assert_eq!(view.session_scope.text, "~/notes");
        assert_eq!((view.position, view.total), (1, 2));
        assert_eq!(
            keys(&view),
            vec![
                ("once", 'O', true),
                ("session", 'S', false),
                ("project", 'P', false),
                ("global", 'G', false),
                ("deny", 'D', false),
                ("deny_session", 'X', false),
                ("never", 'N', false),
                ("never_global", 'E', false),
            ]
        );
        assert!(view.sensitive.is_none() && view.bulk.is_none());
    }

    #[test]
    fn a_read_of_a_deny_read_path_says_so_and_a_different_request_is_shown() {
        let p = prompt(
            1,
            r#"{"kind":"filesystem","state":"query","query_id":"1","operation":"read","path":"/home/dev/.cache/x","requested_path":"../../.cache/x","reason":"deny_match"}"#,
            Some("ses_9"),
        );
        let view = build_view(&p, home(), 1, 1, 0);
        assert_eq!(view.title, "Allow read access?");
        assert_eq!(
            view.reason.as_deref(),
            Some("not in allowRead: matches denyRead")
        );
        assert_eq!(view.requested.as_deref(), Some("../../.cache/x"));
        assert_eq!(view.session.as_deref(), Some("ses_9"));
        assert_eq!(view.session_holder, "this opencode session");
        assert_eq!(view.program.name, "A program");
        assert_eq!(view.syscall, None);
    }

    #[test]
    fn a_network_request_offers_once_session_deny() {
        let view = build_view(&connect(4), home(), 2, 3, 0);
        assert_eq!(view.title, "Allow network connection?");
        assert_eq!(view.subject.text, "127.0.0.1:9");
        assert_eq!(
            view.reason.as_deref(),
            Some("network access is off (allowNetwork is false)")
        );
        assert_eq!(
            keys(&view),
            vec![
                ("once", 'O', true),
                ("session", 'S', false),
                ("deny", 'D', false),
                ("deny_session", 'X', false),
            ]
        );
        assert_eq!((view.position, view.total), (2, 3));
    }

    #[test]
    fn another_machine_s_paths_are_judged_by_its_user_s_home() {
        let key = "/home/bob/.ssh/config";
        // Under this user's home (/home/dev) bob's key is nothing special: the control case.
        assert!(build_view(&write(1, key), home(), 1, 1, 0)
            .sensitive
            .is_none());
        let remote = PendingPrompt {
            host: Some(RemoteHost {
                name: "devbox".into(),
                home: "/home/bob".into(),
            }),
            ..write(1, key)
        };
        let view = build_view(&remote, home(), 1, 1, 0);
        let sensitive = view.sensitive.as_ref().expect("sensitive on devbox");
        assert_eq!(sensitive.location.text, "~/.ssh");
        assert_eq!(view.subject.text, "~/.ssh/config");
        let default: Vec<_> = view.choices.iter().filter(|c| c.default).collect();
        assert_eq!(default[0].key, ChoiceKey::Deny);
    }

    #[test]
    fn a_sensitive_path_defaults_to_deny_and_asks_twice_for_persistent_grants() {
        let view = build_view(&write(1, "/home/dev/.ssh/config"), home(), 1, 1, 0);
        let sensitive = view.sensitive.as_ref().expect("sensitive");
        assert_eq!(sensitive.what, "SSH keys and configuration");
        assert_eq!(sensitive.location.text, "~/.ssh");
        let default: Vec<_> = view.choices.iter().filter(|c| c.default).collect();
        assert_eq!(default.len(), 1);
        assert_eq!(default[0].key, ChoiceKey::Deny);
        let two_step: Vec<_> = view
            .choices
            .iter()
            .filter(|c| c.two_step)
            .map(|c| c.key)
            .collect();
        assert_eq!(
            two_step,
            vec![
                ChoiceKey::Session,
                ChoiceKey::Project,
                ChoiceKey::Global,
                ChoiceKey::Never,
                ChoiceKey::Never
            ]
        );
    }

    #[test]
    fn the_keys_are_all_different_and_the_chooser_offers_durations_and_the_program() {
        let view = build_view(&write(1, "/home/dev/notes/a"), home(), 1, 1, 0);
        let mut letters: Vec<char> = view.choices.iter().map(|c| c.shortcut).collect();
        let limits = &view.session_limits;
        letters.extend([limits.shortcut, limits.program_shortcut, 'A']);
        let count = letters.len();
        letters.sort_unstable();
        letters.dedup();
        assert_eq!(letters.len(), count, "a key used twice: {letters:?}");
        let values: Vec<&str> = limits.options.iter().map(|o| o.value.as_str()).collect();
        assert_eq!(values, ["", "run", "5m", "15m", "1h", "8h"]);
        assert_eq!(limits.chosen.as_deref(), Some(DEFAULT_LIFETIME));
        assert!(values.contains(&DEFAULT_LIFETIME));
        for value in values.iter().filter(|v| !v.is_empty()) {
            assert!(
                crate::decision::grants::Lifetime::parse(value).is_some(),
                "{value}"
            );
        }
        assert_eq!(limits.program.as_deref(), Some("/usr/bin/python3.11"));
        let unnamed = prompt(
            2,
            r#"{"kind":"filesystem","state":"query","query_id":"2","operation":"write","path":"/x/a"}"#,
            None,
        );
        assert_eq!(
            build_view(&unnamed, home(), 1, 1, 0).session_limits.program,
            None
        );
    }

    #[test]
    fn the_command_behind_a_request_leads_the_sentence_and_lists_its_chain() {
        use crate::origin::{ChainLink, OpencodeCall};
        let link = |pid, program: &str, argv: &str, command: &str| ChainLink {
            pid,
            exe: None,
            program: program.to_owned(),
            argv: Shown::plain(argv),
            command: Shown::plain(command),
        };
        let mut p = write(1, "/home/dev/.npm/_cacache/index-v5/aa/bb");
        p.session = Some("ses_7".into());
        p.origin = Some(Arc::new(Origin {
            chain: vec![
                link(
                    10,
                    "npm",
                    "bash -lc 'npm ci && npm test'",
                    "npm ci && npm test",
                ),
                link(11, "npm", "node …/npm-cli.js ci", "npm ci"),
            ],
            chain_cut: false,
            opencode: Some(OpencodeCall {
                session: "ses_7".into(),
                title: Some("Fix the build".into()),
                description: Some("Install dependencies".into()),
                command: Some("npm ci --force".into()),
            }),
        }));
        let view = build_view(&p, home(), 1, 1, 0);
        assert_eq!(
            view.summary,
            "npm ci in ~/src/proj wants to write ~/.npm/_cacache/index-v5/aa/bb."
        );
        let origin = view.origin.expect("an origin");
        assert_eq!(origin.command.text, "npm ci");
        assert_eq!(
            origin.sentence_rest,
            " in ~/src/proj wants to write ~/.npm/_cacache/index-v5/aa/bb."
        );
        let chain: Vec<&str> = origin.chain.iter().map(|l| l.argv.text.as_str()).collect();
        assert_eq!(
            chain,
            ["bash -lc 'npm ci && npm test'", "node …/npm-cli.js ci"]
        );
        assert_eq!(origin.session_title.as_deref(), Some("Fix the build"));
        assert_eq!(origin.description.as_deref(), Some("Install dependencies"));
        assert_eq!(origin.agent_command.as_deref(), Some("npm ci --force"));
        // What the query carries is still there.
        assert_eq!(view.program.exe.as_deref(), Some("/usr/bin/python3.11"));

        // A process that was gone: the sentence the query alone makes.
        let gone = write(2, "/tmp/x");
        let view = build_view(&gone, home(), 1, 1, 0);
        assert!(view.origin.is_none());
        assert_eq!(
            view.summary,
            "python3.11 wants to write to a file its sandbox does not allow."
        );
    }

    #[test]
    fn the_never_preview_lists_the_deny_array_and_the_narrow_scopes() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let p = temp_prompt(dir.path(), &home.join("notes/todo.txt"));
        let preview = preview_never(&p, &home, PolicyTarget::Global).unwrap();
        assert_eq!(preview.array, "filesystem.denyWrite");
        let entries: Vec<(&str, bool)> = preview
            .options
            .iter()
            .map(|o| (o.entry.as_str(), o.suggested))
            .collect();
        assert_eq!(entries, [("~/notes/todo.txt", true), ("~/notes", false)]);
        assert!(matches!(
            preview_never(&connect(2), &home, PolicyTarget::Project),
            Err(RuleError::NeverNotExpressible)
        ));
    }

    #[test]
    fn a_launcher_run_is_this_run_of_its_program() {
        let mut p = write(1, "/tmp/x");
        p.session = Some("run:make:4242".into());
        assert_eq!(
            build_view(&p, home(), 1, 1, 0).session_holder,
            "this run of make"
        );
        p.session = Some("run:a:b:12".into());
        assert_eq!(
            build_view(&p, home(), 1, 1, 0).session_holder,
            "this run of a:b"
        );
        p.session = Some("ses_abc".into());
        assert_eq!(
            build_view(&p, home(), 1, 1, 0).session_holder,
            "this opencode session"
        );
        p.session = Some("run:x:notapid".into());
        assert_eq!(
            build_view(&p, home(), 1, 1, 0).session_holder,
            "this opencode session"
        );
    }

    #[test]
    fn prompts_sharing_a_scope_offer_one_answer_for_all() {
        let view = build_view(&write(1, "/home/dev/.cargo/registry/a"), home(), 1, 12, 11);
        let bulk = view.bulk.expect("bulk");
        assert_eq!(bulk.count, 12);
        assert_eq!(
            bulk.label,
            "Allow all 12 pending under ~/.cargo/registry for this session"
        );
    }

    fn temp_prompt(dir: &Path, path: &Path) -> PendingPrompt {
        let mut p = write(1, &path.to_string_lossy());
        p.project = dir.join("proj");
        p
    }

    #[test]
    fn the_preview_names_the_file_the_array_and_each_entry() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("proj");
        std::fs::create_dir_all(project.join(".opencode")).unwrap();
        std::fs::write(
            project.join(".opencode/sandbox.json"),
            r#"{"filesystem":{"allowWrite":["out"]}}"#,
        )
        .unwrap();
        let p = temp_prompt(dir.path(), &project.join("out/a.o"));

        let preview = preview_grant(&p, &home, PolicyTarget::Project).unwrap();
        assert_eq!(
            preview.file.full,
            project.join(".opencode/sandbox.json").display().to_string()
        );
        assert!(preview.file_exists);
        assert_eq!(preview.array, "filesystem.allowWrite");
        assert_eq!(preview.current, vec!["out".to_owned()]);
        assert_eq!(preview.error, None);
        let entries: Vec<_> = preview
            .options
            .iter()
            .map(|o| (o.kind, o.entry.as_str(), o.suggested, o.already_listed))
            .collect();
        assert_eq!(
            entries,
            vec![
                (ScopeKind::Exact, "out/a.o", false, false),
                (ScopeKind::Parent, "out", false, true),
                (ScopeKind::Suggested, ".", true, false),
            ]
        );

        let global = preview_grant(&p, &home, PolicyTarget::Global).unwrap();
        assert!(!global.file_exists, "created on confirm");
        assert!(global.current.is_empty());
        assert_eq!(global.file.text, "~/.config/opencode/sandbox.json");
        let suggested = global.options.iter().find(|o| o.suggested).unwrap();
        assert_eq!(suggested.entry, project.display().to_string());
    }

    #[test]
    fn a_broken_policy_file_shows_in_the_preview_before_anything_is_confirmed() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join(".config/opencode")).unwrap();
        std::fs::write(home.join(".config/opencode/sandbox.json"), "{ not json").unwrap();
        let p = temp_prompt(dir.path(), Path::new("/tmp/build/out.o"));
        let preview = preview_grant(&p, &home, PolicyTarget::Global).unwrap();
        let error = preview.error.expect("an error");
        assert!(error.contains("sandbox.json"), "{error}");
        assert_eq!(
            preview_grant(&connect(2), &home, PolicyTarget::Global),
            Err(RuleError::NotPersistable)
        );
    }

    #[test]
    fn a_wide_scope_lists_the_sensitive_places_it_covers() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let p = temp_prompt(dir.path(), &home.join(".config/foo"));
        let preview = preview_grant(&p, &home, PolicyTarget::Global).unwrap();
        // The suggested scope stops short of ~/.config (it holds ~/.config/gh and others);
        // the parent option is that wide, and says so.
        let suggested = preview.options.iter().find(|o| o.suggested).unwrap();
        assert_eq!(suggested.entry, "~/.config/foo");
        assert!(suggested.covers_sensitive.is_empty());
        let parent = preview
            .options
            .iter()
            .find(|o| o.kind == ScopeKind::Parent)
            .unwrap();
        assert_eq!(parent.entry, "~/.config");
        assert!(parent
            .covers_sensitive
            .contains(&"~/.config/gcloud".to_owned()));
        // A folder entry lets keys written into it through too, and says so; the entry of
        // the one file asked about does not.
        assert_eq!(
            parent.covers_names,
            ["id_*", "*.key", "*.pem", ".env", ".env.*"]
        );
        let exact = preview
            .options
            .iter()
            .find(|o| o.kind == ScopeKind::Exact)
            .unwrap();
        assert!(exact.covers_names.is_empty());
    }

    #[test]
    fn after_a_secret_a_connect_offers_once_this_run_and_deny_by_default_and_a_write_its_usual_answers(
    ) {
        let home = Path::new(HOME);
        let read = crate::decision::after_secret::SecretRead {
            path: "/home/dev/.aws/credentials".into(),
            what: "AWS credentials".into(),
            at_ms: 42,
        };
        let marked = PendingPrompt {
            after_secret: Some(read.clone()),
            ..connect(1)
        };
        let view = build_view(&marked, home, 1, 4, 3);
        assert_eq!(
            keys(&view),
            [
                ("once", 'O', false),
                ("session", 'S', false),
                ("deny", 'D', true)
            ]
        );
        assert_eq!(view.choices[1].label, "Allow this address for this run");
        assert!(view.bulk.is_none(), "no bulk answer after a secret");
        let shown = view.after_secret.expect("marked");
        assert_eq!(
            (
                shown.path.text.as_str(),
                shown.what.as_str(),
                shown.at_ms,
                shown.network
            ),
            ("~/.aws/credentials", "AWS credentials", 42, true)
        );
        let write = write(2, "/tmp/out.txt");
        let usual = keys(&build_view(&write, home, 1, 1, 0));
        let marked = PendingPrompt {
            after_secret: Some(read),
            ..write
        };
        let view = build_view(&marked, home, 1, 1, 0);
        assert_eq!(keys(&view), usual, "a write keeps its usual answers");
        assert!(view.after_secret.is_some_and(|a| !a.network));
    }
}
