//! The `ctl` command line's words (clap) and the control request each one builds: the
//! words are declared here, the request once in the core's wire types
//! (`surfaces/control/wire.rs`), and nothing in between. Paths are taken as `OsStr`, so a
//! directory whose name is not UTF-8 works.

use std::ffi::OsStr;
use std::path::PathBuf;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Args, Subcommand, ValueEnum};
use landstrip_tray_core::activity::{ActivityFilter, Decision};
use landstrip_tray_core::app_settings::PromptsGo;
use landstrip_tray_core::decision::answer::{AnswerRequest, ChoiceKey};
use landstrip_tray_core::decision::broker::PromptId;
use landstrip_tray_core::decision::grants::Lifetime;
use landstrip_tray_core::decision::scope::{PolicyTarget, ScopeKind};
use landstrip_tray_core::policy::change::{BoolField, ListField, PolicyChange};
use landstrip_tray_core::policy::plugin::LaterField;
use landstrip_tray_core::surfaces::control::Request;
use landstrip_tray_core::surfaces::ops::{LearnRequest, PolicyFile};

use super::canary_words::{CanaryWords, IncidentWords};
use super::config_words::{config_change, parse_bool, ConfigWords, JournalWords};
use super::remote_words::{RemoteWords, BRIDGE_ABOUT};
use super::web_words::WebWords;
use super::{absolute, parse_duration, Ctl};

/// `ctl [--json] COMMAND …`
#[derive(Debug, Args)]
#[command(subcommand_required = true, arg_required_else_help = true)]
pub(super) struct CtlArgs {
    /// Print the reply as JSON
    #[arg(long, global = true)]
    json: bool,

    #[command(subcommand)]
    command: CtlWords,
}

#[derive(Debug, Subcommand)]
enum CtlWords {
    /// pid, projects, waiting requests, pause
    Status,
    /// The projects served and whether launchers reach them
    Projects,
    /// The requests waiting for an answer
    Pending {
        /// Wait until at least one request is waiting
        #[arg(long)]
        wait: bool,
    },
    /// Answer a waiting request
    #[command(
        long_about = "Answer a waiting request: allow once, allow for this session, deny, or \
allow and add an entry to the project's or the global sandbox.json (project|global: the \
scope's entry, by default the suggested one, or E, which must be an offered entry or cover \
the request with --wider); or never: deny and add a deny entry (the exact path, or its folder \
with --scope parent) to the project's sandbox.json, or the global one with --global. A \
session grant lasts until the app quits, or --for a duration (90s, 15m, 1h) or --for run \
(until that landstrip run ends), and with --program covers only the program that asked. \
deny --session also denies, without asking, what a session grant would have allowed. The \
running instance checks the answer with the dialog's rules."
    )]
    Answer {
        /// The request's id (see ctl pending)
        #[arg(value_parser = parse_id)]
        id: PromptId,
        /// The answer: allow once, for this session, or with an entry in the project's or
        /// the global sandbox.json; deny; or never (deny, and a deny entry in sandbox.json)
        #[arg(value_parser = ChoiceParser)]
        choice: ChoiceKey,
        /// project|global|never: which offered scope's entry to add (never: exact or parent)
        #[arg(long, value_enum, conflicts_with = "entry")]
        scope: Option<ScopeArg>,
        /// project|global|never: the entry to add, as it will appear in the file
        #[arg(long, value_name = "E")]
        entry: Option<String>,
        /// session (or deny --session): the grant lapses after DURATION (90s, 15m, 1h), or
        /// with "run" when that landstrip run ends
        #[arg(long = "for", value_name = "DURATION|run", value_parser = parse_lifetime)]
        lifetime: Option<Lifetime>,
        /// session (or deny --session): only requests of the program (exe) that asked
        #[arg(long)]
        program: bool,
        /// deny: also deny, without asking, what "session" would have allowed
        #[arg(long)]
        session: bool,
        /// never: the global sandbox.json instead of the project's
        #[arg(long)]
        global: bool,
        /// With --entry: it is wider than any offered scope, and meant
        #[arg(long)]
        wider: bool,
        /// Confirm a grant beyond once on a sensitive location
        #[arg(long)]
        confirm_sensitive: bool,
        /// once: allow a network request of a run that read a secret earlier, that read in view
        #[arg(long)]
        confirm_after_secret: bool,
    },
    /// Serve DIR (and save it in the settings)
    AddProject {
        /// The project directory (relative: to this shell's directory)
        #[arg(value_name = "DIR", value_parser = clap::value_parser!(PathBuf))]
        dir: PathBuf,
    },
    /// Stop serving DIR (and drop it from the settings)
    RemoveProject {
        /// The project directory (relative: to this shell's directory)
        #[arg(value_name = "DIR", value_parser = clap::value_parser!(PathBuf))]
        dir: PathBuf,
    },
    /// Publish DIR's discovery file over another presenter's
    TakeOver {
        /// The project directory (relative: to this shell's directory)
        #[arg(value_name = "DIR", value_parser = clap::value_parser!(PathBuf))]
        dir: PathBuf,
    },
    /// Where DIR's prompts go while opencode's terminal UI runs: here (the app takes them back) or terminal
    Prefer {
        /// The project directory (relative: to this shell's directory)
        #[arg(value_name = "DIR", value_parser = clap::value_parser!(PathBuf))]
        dir: PathBuf,
        /// here: prompts stay with this app; terminal: opencode's TUI takes them while it runs
        #[arg(value_name = "WHERE", value_parser = parse_prompts_go)]
        prompts: PromptsGo,
    },
    /// Deny what would ask, for DURATION (90s, 15m, 1h30m, 2d, bare seconds) or until resumed
    Pause {
        /// 90s, 15m, 1h, 1h30m, 2d, or seconds; none: until resumed
        #[arg(value_parser = parse_duration_arg)]
        duration: Option<u64>,
    },
    /// Ask again
    Resume,
    /// Show or change the sandbox.json files (global, project, effective)
    #[command(subcommand)]
    Policy(PolicyWords),
    /// The live session grants
    Grants,
    /// Revoke a session grant: the next matching request asks again
    Revoke {
        /// The grant's id (see ctl grants)
        #[arg(value_name = "GRANT_ID", value_parser = parse_grant_id)]
        id: u64,
    },
    /// What was asked and how it was answered, newest last
    Activity {
        /// Only this project's (relative: to this shell's directory)
        #[arg(long, value_name = "DIR", value_parser = clap::value_parser!(PathBuf))]
        project: Option<PathBuf>,
        /// Only allowed or only denied requests
        #[arg(long, value_enum)]
        decision: Option<DecisionArg>,
        /// Only entries whose path, target, program, session or project contain TEXT
        #[arg(long, value_name = "TEXT")]
        grep: Option<String>,
        /// At most N entries, the newest
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
    },
    /// The write journal: the writes a person allowed, each path's state before it; undo
    #[command(args_conflicts_with_subcommands = true)]
    Journal {
        /// Only this session's writes (its id as ctl pending shows it, or the run column's)
        #[arg(long, value_name = "S")]
        session: Option<String>,
        #[command(subcommand)]
        action: Option<JournalWords>,
    },
    /// Decoy credentials whose sandboxed read stops the run: add, list, remove
    #[command(subcommand)]
    Canary(CanaryWords),
    /// The canary reads of this app run: who read what, and what became of the run
    Incidents,
    /// Resume or kill a run a canary read stopped
    #[command(subcommand)]
    Incident(IncidentWords),
    /// The app's own settings: prompt timeout, denial summaries, notification sound, start at login
    Config {
        #[command(subcommand)]
        action: Option<ConfigWords>,
    },
    /// Other machines whose requests are asked here, over SSH: add, list, remove
    #[command(subcommand)]
    Remote(RemoteWords),
    #[command(about = BRIDGE_ABOUT)]
    Bridge,
    /// The phone page (HTTPS, off by default): status, on, off, pair, devices, revoke
    Web {
        #[command(subcommand)]
        action: Option<WebWords>,
    },
}

const LISTS: &str = "LIST: allowRead, allowWrite, denyRead, denyWrite, denyReadAlways, \
denyWriteAlways, allowedDomains, deniedDomains, allowUnixSockets";

const FIELDS: &str = "FIELD: enabled, network.allowNetwork, network.allowLocalBinding, \
network.allowAllUnixSockets; VALUE: true or false";

#[derive(Debug, Subcommand)]
enum PolicyWords {
    /// The global and project files and the effective policy, each entry with its source
    Show {
        /// The project directory (relative: to this shell's directory)
        #[arg(value_name = "DIR", value_parser = clap::value_parser!(PathBuf))]
        dir: PathBuf,
    },
    /// Add ENTRY to LIST of one sandbox.json (minimal, atomic edit)
    #[command(after_help = LISTS)]
    Add {
        #[command(flatten)]
        file: FileArg,
        /// The list
        #[arg(value_name = "LIST", value_parser = parse_list)]
        list: ListField,
        /// The entry, as it will appear in the file
        #[arg(value_name = "ENTRY")]
        entry: String,
        /// Save it even though it gives very broad access (refused without this)
        #[arg(long)]
        broad: bool,
    },
    /// Change OLD to NEW in LIST of one sandbox.json, in place (same position)
    #[command(after_help = LISTS)]
    Replace {
        #[command(flatten)]
        file: FileArg,
        /// The list
        #[arg(value_name = "LIST", value_parser = parse_list)]
        list: ListField,
        /// The entry, as the file spells it now
        #[arg(value_name = "OLD")]
        old: String,
        /// What it becomes
        #[arg(value_name = "NEW")]
        new: String,
        /// Save it even though NEW gives very broad access (refused without this)
        #[arg(long)]
        broad: bool,
    },
    /// Undo the last policy save made by the app (ctl or the settings window), if the
    /// file still holds exactly what it wrote
    Undo,
    /// Remove ENTRY from LIST of one sandbox.json
    #[command(after_help = LISTS)]
    Remove {
        #[command(flatten)]
        file: FileArg,
        /// The list
        #[arg(value_name = "LIST", value_parser = parse_list)]
        list: ListField,
        /// The entry, as the file spells it
        #[arg(value_name = "ENTRY")]
        entry: String,
    },
    /// Remove FIELD whole from one sandbox.json: a field the plugin's later releases added,
    /// which opencode-landstrip 0.19.1 rejects (`ctl policy show` says when)
    #[command(
        name = "remove-field",
        after_help = "FIELD: denyReadAlways, denyWriteAlways, shell, windows"
    )]
    RemoveField {
        #[command(flatten)]
        file: FileArg,
        /// The field
        #[arg(value_name = "FIELD", value_parser = parse_later_field)]
        field: LaterField,
    },
    /// Propose entries from the prompts answered in a project (a session, or recently), as
    /// a diff against the target file; --save writes them in one step
    Learn {
        /// The project directory (relative: to this shell's directory)
        #[arg(value_name = "DIR", value_parser = clap::value_parser!(PathBuf))]
        dir: PathBuf,
        /// Only the prompts answered in this opencode session
        #[arg(long, value_name = "ID", conflicts_with = "since")]
        session: Option<String>,
        /// Only the prompts answered in the last DURATION (30m, 1h, 7d)
        #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
        since: Option<u64>,
        /// Propose entries for the global file instead of the project's
        #[arg(long)]
        global: bool,
        /// Write the proposed entries into the file
        #[arg(long)]
        save: bool,
    },
    /// Set a boolean FIELD of one sandbox.json to VALUE
    #[command(after_help = FIELDS)]
    Set {
        #[command(flatten)]
        file: FileArg,
        /// The field
        #[arg(value_name = "FIELD", value_parser = parse_field)]
        field: BoolField,
        /// true or false
        #[arg(value_name = "VALUE", value_parser = parse_bool, action = clap::ArgAction::Set)]
        value: bool,
    },
}

/// Which sandbox.json: `--project DIR` or `--global`, exactly one.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
struct FileArg {
    /// The project's file, DIR/.opencode/sandbox.json (relative: to this shell's directory)
    #[arg(long, value_name = "DIR", value_parser = clap::value_parser!(PathBuf))]
    project: Option<PathBuf>,
    /// The global file, $XDG_CONFIG_HOME/opencode/sandbox.json (~/.config/…)
    #[arg(long)]
    global: bool,
}

impl FileArg {
    /// The file named, a relative project directory resolved against our cwd.
    fn file(self) -> PolicyFile {
        match self.project {
            Some(dir) => PolicyFile::Project(absolute(&dir)),
            None => PolicyFile::Global,
        }
    }
}

/// `--decision`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DecisionArg {
    /// Allowed requests
    Allow,
    /// Denied requests
    Deny,
}

fn parse_list(text: &str) -> Result<ListField, String> {
    text.parse()
        .map_err(|e: landstrip_tray_core::policy::change::UnknownField| e.to_string())
}

fn parse_later_field(text: &str) -> Result<LaterField, String> {
    text.parse()
}

fn parse_field(text: &str) -> Result<BoolField, String> {
    text.parse()
        .map_err(|e: landstrip_tray_core::policy::change::UnknownField| e.to_string())
}

fn parse_grant_id(text: &str) -> Result<u64, String> {
    text.parse()
        .map_err(|_| format!("{text:?} is not a grant id (see ctl grants)"))
}

/// `--scope`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ScopeArg {
    /// Only the requested path
    Exact,
    /// The directory holding it
    Parent,
    /// The scope "allow for this session" uses
    Suggested,
}

impl From<ScopeArg> for ScopeKind {
    fn from(scope: ScopeArg) -> Self {
        match scope {
            ScopeArg::Exact => Self::Exact,
            ScopeArg::Parent => Self::Parent,
            ScopeArg::Suggested => Self::Suggested,
        }
    }
}

const CHOICES: [ChoiceKey; 6] = [
    ChoiceKey::Once,
    ChoiceKey::Session,
    ChoiceKey::Project,
    ChoiceKey::Global,
    ChoiceKey::Deny,
    ChoiceKey::Never,
];

fn parse_lifetime(text: &str) -> Result<Lifetime, String> {
    Lifetime::parse(text).ok_or_else(|| {
        format!("{text:?} is not \"run\" or a duration such as 90s, 15m, 1h or 1h30m")
    })
}

/// Parses an answer's choice with the core's words, and says "not a choice" in its error
/// (while still listing the words for completions and help).
#[derive(Debug, Clone, Copy)]
struct ChoiceParser;

impl TypedValueParser for ChoiceParser {
    type Value = ChoiceKey;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<ChoiceKey, clap::Error> {
        let text = value.to_string_lossy();
        CHOICES
            .into_iter()
            .find(|c| c.as_str() == text)
            .ok_or_else(|| {
                let mut err = clap::Error::new(ErrorKind::InvalidValue).with_cmd(cmd);
                if let Some(arg) = arg {
                    err.insert(
                        ContextKind::InvalidArg,
                        ContextValue::String(arg.to_string()),
                    );
                }
                err.insert(
                    ContextKind::InvalidValue,
                    ContextValue::String(text.into_owned()),
                );
                err.insert(
                    ContextKind::Suggested,
                    ContextValue::StyledStrs(vec![
                        "it is not a choice: once, session, project, global or deny".into(),
                    ]),
                );
                err
            })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            CHOICES.into_iter().map(|c| PossibleValue::new(c.as_str())),
        ))
    }
}

fn parse_id(text: &str) -> Result<PromptId, String> {
    text.parse()
        .map_err(|_| format!("{text:?} is not a request id (see ctl pending)"))
}

fn parse_prompts_go(text: &str) -> Result<PromptsGo, String> {
    text.parse()
}

fn parse_duration_arg(text: &str) -> Result<u64, String> {
    parse_duration(text)
        .ok_or_else(|| format!("{text:?} is not a duration such as 90s, 15m, 1h or 1h30m"))
}

impl CtlArgs {
    /// `ctl bridge`: not a request but a conversation (`surfaces/bridge.rs`).
    pub(super) fn is_bridge(&self) -> bool {
        matches!(self.command, CtlWords::Bridge)
    }

    /// The `ctl` command line these words make; `now_ms` is our clock, which `--since`
    /// counts back from (the running instance's is the same machine's).
    pub(super) fn ctl(self, now_ms: u64) -> Result<Ctl, Usage> {
        Ok(Ctl {
            request: self.command.request(now_ms)?,
            json: self.json,
        })
    }
}

impl CtlWords {
    /// The request these words ask for; relative directories are resolved against our
    /// cwd, since the running instance has its own.
    fn request(self, now_ms: u64) -> Result<Request, Usage> {
        Ok(match self {
            CtlWords::Status => Request::Status,
            CtlWords::Projects => Request::Projects,
            CtlWords::Pending { wait } => Request::Pending { wait },
            CtlWords::Answer {
                id,
                choice,
                scope,
                entry,
                wider,
                confirm_sensitive,
                confirm_after_secret,
                lifetime,
                program,
                session,
                global,
            } => {
                // Rules clap's attributes cannot say: they depend on the choice's value.
                if !choice.writes_entry() && (entry.is_some() || scope.is_some() || wider) {
                    return Err(Usage::answer(
                        "--entry, --scope and --wider go with project, global or never only",
                    ));
                }
                if wider && entry.is_none() {
                    return Err(Usage::answer("--wider goes with --entry"));
                }
                if session && choice != ChoiceKey::Deny {
                    return Err(Usage::answer("--session goes with deny only"));
                }
                if global && choice != ChoiceKey::Never {
                    return Err(Usage::answer(
                        "--global goes with never only (allow globally: the global choice)",
                    ));
                }
                let grants = choice == ChoiceKey::Session || session;
                if !grants && (lifetime.is_some() || program) {
                    return Err(Usage::answer(
                        "--for and --program go with session or deny --session only",
                    ));
                }
                Request::Answer {
                    id,
                    answer: AnswerRequest {
                        choice,
                        scope: scope.map(ScopeKind::from),
                        entry,
                        wider,
                        confirmed: confirm_sensitive,
                        lifetime,
                        program,
                        session,
                        global,
                        confirmed_after_secret: confirm_after_secret,
                    },
                }
            }
            CtlWords::AddProject { dir } => Request::AddProject {
                dir: absolute(&dir),
                persist: true,
            },
            CtlWords::RemoveProject { dir } => Request::RemoveProject {
                dir: absolute(&dir),
                persist: true,
            },
            CtlWords::TakeOver { dir } => Request::TakeOver {
                dir: absolute(&dir),
            },
            CtlWords::Prefer { dir, prompts } => Request::Prefer {
                dir: absolute(&dir),
                prompts,
            },
            CtlWords::Pause { duration } => Request::Pause { secs: duration },
            CtlWords::Resume => Request::Resume,
            CtlWords::Policy(words) => words.request(now_ms),
            CtlWords::Grants => Request::Grants,
            CtlWords::Revoke { id } => Request::Revoke { id },
            CtlWords::Journal {
                session,
                action: None,
            } => Request::Journal { session },
            CtlWords::Journal {
                action: Some(words),
                ..
            } => words.request(),
            CtlWords::Canary(words) => words.request(),
            CtlWords::Incidents => Request::Incidents,
            CtlWords::Incident(words) => words.request(),
            CtlWords::Remote(words) => words.request(),
            // `parse` takes `ctl bridge` out before asking for a request (`is_bridge`).
            CtlWords::Bridge => Request::Status,
            CtlWords::Web { action: None } => Request::Web,
            CtlWords::Web {
                action: Some(words),
            } => words.request(),
            CtlWords::Config { action: None } => Request::AppSettings,
            CtlWords::Config {
                action: Some(ConfigWords::Set { key, value }),
            } => Request::ChangeAppSetting {
                change: config_change(&key, &value).map_err(Usage::config)?,
            },
            CtlWords::Activity {
                project,
                decision,
                grep,
                limit,
            } => Request::Activity {
                filter: ActivityFilter {
                    project: project.as_deref().map(absolute),
                    decision: decision.map(|d| match d {
                        DecisionArg::Allow => Decision::Allow,
                        DecisionArg::Deny => Decision::Deny,
                    }),
                    grep,
                    limit,
                    ..ActivityFilter::default()
                },
            },
        })
    }
}

impl PolicyWords {
    /// The request for `ctl policy …`.
    fn request(self, now_ms: u64) -> Request {
        match self {
            PolicyWords::Show { dir } => Request::Policy {
                dir: absolute(&dir),
            },
            PolicyWords::Add {
                file,
                list,
                entry,
                broad,
            } => Request::ChangePolicy {
                file: file.file(),
                change: PolicyChange::Add { list, entry },
                allow_broad: broad,
            },
            PolicyWords::Replace {
                file,
                list,
                old,
                new,
                broad,
            } => Request::ChangePolicy {
                file: file.file(),
                change: PolicyChange::Replace { list, old, new },
                allow_broad: broad,
            },
            PolicyWords::Undo => Request::UndoPolicy,
            PolicyWords::Remove { file, list, entry } => Request::ChangePolicy {
                file: file.file(),
                change: PolicyChange::Remove { list, entry },
                allow_broad: false,
            },
            PolicyWords::RemoveField { file, field } => Request::ChangePolicy {
                file: file.file(),
                change: PolicyChange::RemoveField { field },
                allow_broad: false,
            },
            PolicyWords::Set { file, field, value } => Request::ChangePolicy {
                file: file.file(),
                change: PolicyChange::Set { field, value },
                allow_broad: false,
            },
            PolicyWords::Learn {
                dir,
                session,
                since,
                global,
                save,
            } => Request::Learn {
                dir: absolute(&dir),
                learn: LearnRequest {
                    session,
                    since_ms: since.map(|s| now_ms.saturating_sub(s.saturating_mul(1000))),
                    until_ms: None,
                    target: if global {
                        PolicyTarget::Global
                    } else {
                        PolicyTarget::Project
                    },
                },
                save,
            },
        }
    }
}

/// A usage error these words found that clap's attributes cannot say: the subcommand it
/// belongs to (its path from the top) and what clap calls it. `args.rs` words it with that
/// subcommand's usage line (exit status 2): the whole grammar is there, and it holds these
/// words.
#[derive(Debug)]
pub(super) struct Usage {
    pub(super) path: &'static [&'static str],
    pub(super) kind: ErrorKind,
    pub(super) message: String,
}

impl Usage {
    /// Options of `ctl answer` that do not go together.
    fn answer(message: &str) -> Self {
        Usage {
            path: &["ctl", "answer"],
            kind: ErrorKind::ArgumentConflict,
            message: message.to_owned(),
        }
    }

    /// A value `ctl config set` refuses.
    fn config(message: String) -> Self {
        Usage {
            path: &["ctl", "config", "set"],
            kind: ErrorKind::InvalidValue,
            message,
        }
    }
}
