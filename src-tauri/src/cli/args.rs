//! The command line's grammar (clap), and its translation into what [`super::Invocation`]
//! says. Paths are taken as `OsStr`, so a directory whose name is not UTF-8 works.

use std::ffi::OsStr;
use std::path::PathBuf;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use landstrip_tray_core::activity::{ActivityFilter, Decision};
use landstrip_tray_core::decision::answer::{AnswerRequest, ChoiceKey};
use landstrip_tray_core::decision::broker::PromptId;
use landstrip_tray_core::decision::grants::Lifetime;
use landstrip_tray_core::decision::scope::{PolicyTarget, ScopeKind};
use landstrip_tray_core::policy::change::{BoolField, ListField, PolicyChange};
use landstrip_tray_core::preferences::PromptsGo;
use landstrip_tray_core::surfaces::ops::{AppSettingChange, PolicyFile};

use super::{Cli, Ctl, CtlCommand, Invocation, Launch};

const ABOUT: &str = "A desktop tray presenter for the landstrip sandbox";

const LONG_ABOUT: &str = "A desktop tray presenter for the landstrip sandbox.

Hosts the landstrip query socket for each project and asks you about what sandboxed \
commands try to do. Projects come from the settings file and from --project. Started while \
it already runs, it hands its --project directories to the running instance and exits.";

const CTL_ABOUT: &str = "Control the running instance (no display needed)";

const CTL_LONG_ABOUT: &str = "Control this user's running landstrip-tray over its control \
socket. No display is needed, so it works over SSH and in scripts.";

const CTL_AFTER: &str = "Exit status: 0 done, 1 refused (the reason on stderr) or not \
running, 2 a command line that makes no sense.";

/// `landstrip-tray [--project DIR]... | ctl … | completions SHELL`
#[derive(Debug, Parser)]
#[command(
    name = "landstrip-tray",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    args_conflicts_with_subcommands = true
)]
struct Top {
    /// Serve DIR for this run (not saved to the settings); repeatable
    #[arg(short = 'p', long = "project", value_name = "DIR", value_parser = clap::value_parser!(PathBuf))]
    projects: Vec<PathBuf>,

    /// Run without a display: no tray, no windows, no notifications; requests wait for
    /// `ctl pending --wait` / `ctl answer` (or the prompt timeout)
    #[arg(long)]
    headless: bool,

    #[command(subcommand)]
    command: Option<TopCommand>,
}

#[derive(Debug, Subcommand)]
enum TopCommand {
    #[command(about = CTL_ABOUT, long_about = CTL_LONG_ABOUT, after_help = CTL_AFTER)]
    Ctl(CtlArgs),
    /// Open the settings window of the running app
    Settings {
        /// Which view: projects, policy, grants, activity, learn, general or settings
        #[arg(long, value_name = "V")]
        view: Option<String>,
        /// The project to select (relative: to this shell's directory)
        #[arg(long, value_name = "DIR", value_parser = clap::value_parser!(PathBuf))]
        project: Option<PathBuf>,
    },
    #[command(about = RUN_ABOUT, long_about = RUN_LONG_ABOUT)]
    Run(RunArgs),
    /// Print shell completions for bash, zsh or fish
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: Shell,
    },
}

const RUN_ABOUT: &str = "Run a program under landstrip, its questions asked by the running app";

const RUN_LONG_ABOUT: &str = "Run PROGRAM under landstrip with the project's merged sandbox.json \
(plus any -p files); what the policy does not allow is held and asked through the running \
app, which is asked to serve the project if it does not yet. Without the app it refuses to \
run anything, unless --no-prompt asks for plain landstrip denials. Exit status: the \
program's (128+N if signal N killed it); 125 the launcher could not start it; 127 no \
landstrip binary.";

/// `run [--project DIR] [-p POLICY]... [--no-prompt] -- PROGRAM [ARGS...]`
#[derive(Debug, Args)]
struct RunArgs {
    /// The project whose policy and prompts apply (default: this shell's directory)
    #[arg(long, value_name = "DIR", value_parser = clap::value_parser!(PathBuf))]
    project: Option<PathBuf>,
    /// Another landstrip policy file, merged after the project's; repeatable
    #[arg(short = 'p', long = "policy", value_name = "POLICY", value_parser = clap::value_parser!(PathBuf))]
    policies: Vec<PathBuf>,
    /// Do not ask: run with plain landstrip denials (no app needed)
    #[arg(long)]
    no_prompt: bool,
    /// The program and its arguments, after `--`
    #[arg(last = true, required = true, value_name = "PROGRAM", value_parser = clap::value_parser!(std::ffi::OsString))]
    program: Vec<std::ffi::OsString>,
}

/// The shells completions are printed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    /// GNU bash
    Bash,
    /// Z shell
    Zsh,
    /// fish
    Fish,
}

#[derive(Debug, Args)]
#[command(subcommand_required = true, arg_required_else_help = true)]
struct CtlArgs {
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
    /// The app's own settings: prompt timeout, denial summaries, notification sound, start at login
    Config {
        #[command(subcommand)]
        action: Option<ConfigWords>,
    },
}

const CONFIG_KEYS: &str = "KEY VALUE: promptTimeout off|SECONDS (5 to 3600), \
summarizeDenials true|false, notificationSound true|false, autostart true|false. Applies to \
the next prompt or notification; no restart. autostart writes or removes \
~/.config/autostart/landstrip-tray.desktop, which starts this binary at login.";

#[derive(Debug, Subcommand)]
enum ConfigWords {
    /// Change one setting, at once and in the settings file
    #[command(after_help = CONFIG_KEYS)]
    Set {
        /// promptTimeout, summarizeDenials, notificationSound or autostart
        #[arg(value_name = "KEY")]
        key: String,
        /// off or seconds for promptTimeout; true or false for the others
        #[arg(value_name = "VALUE")]
        value: String,
    },
}

/// `config set KEY VALUE` as a typed change; the running instance checks the range.
fn config_change(key: &str, value: &str) -> Result<AppSettingChange, String> {
    match key {
        "promptTimeout" => match value {
            "off" => Ok(AppSettingChange::PromptTimeout(None)),
            _ => value
                .parse()
                .map(|secs| AppSettingChange::PromptTimeout(Some(secs)))
                .map_err(|_| format!("{value:?} is not a prompt timeout: off or seconds")),
        },
        "summarizeDenials" => parse_bool(value).map(AppSettingChange::SummarizeDenials),
        "notificationSound" => parse_bool(value).map(AppSettingChange::NotificationSound),
        "autostart" => parse_bool(value).map(AppSettingChange::Autostart),
        _ => Err(format!(
            "{key:?} is not a setting: promptTimeout, summarizeDenials, notificationSound or autostart"
        )),
    }
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
    fn file(self) -> PolicyFile {
        match self.project {
            Some(dir) => PolicyFile::Project(dir),
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

fn parse_field(text: &str) -> Result<BoolField, String> {
    text.parse()
        .map_err(|e: landstrip_tray_core::policy::change::UnknownField| e.to_string())
}

fn parse_bool(text: &str) -> Result<bool, String> {
    match text {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(format!("{text:?} is not a value: true or false")),
    }
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

pub use landstrip_tray_core::duration::parse_duration;

/// The whole grammar, for help and completions.
pub fn command() -> clap::Command {
    Top::command()
}

/// Parses the full argument list (program name first). `Err` carries help and version
/// output too: print it and exit with [`clap::Error::exit_code`] (0 for those, 2 for a
/// usage error).
pub fn parse<I, T>(args: I) -> Result<Invocation, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let top = Top::try_parse_from(args)?;
    Ok(match top.command {
        None => Invocation::Run(Cli {
            projects: top.projects,
            headless: top.headless,
        }),
        Some(TopCommand::Completions { shell }) => Invocation::Completions(shell),
        Some(TopCommand::Run(run)) => Invocation::Launch(Launch {
            project: run.project,
            policies: run.policies,
            no_prompt: run.no_prompt,
            program: run.program,
        }),
        Some(TopCommand::Settings { view, project }) => Invocation::Settings { view, project },
        Some(TopCommand::Ctl(ctl)) => Invocation::Ctl(Ctl {
            command: ctl_command(ctl.command)?,
            json: ctl.json,
        }),
    })
}

fn ctl_command(words: CtlWords) -> Result<CtlCommand, clap::Error> {
    Ok(match words {
        CtlWords::Status => CtlCommand::Status,
        CtlWords::Projects => CtlCommand::Projects,
        CtlWords::Pending { wait } => CtlCommand::Pending { wait },
        CtlWords::Answer {
            id,
            choice,
            scope,
            entry,
            wider,
            confirm_sensitive,
            lifetime,
            program,
            session,
            global,
        } => {
            // Rules clap's attributes cannot say: they depend on the choice's value.
            if !choice.writes_entry() && (entry.is_some() || scope.is_some() || wider) {
                return Err(answer_usage(
                    "--entry, --scope and --wider go with project, global or never only",
                ));
            }
            if wider && entry.is_none() {
                return Err(answer_usage("--wider goes with --entry"));
            }
            if session && choice != ChoiceKey::Deny {
                return Err(answer_usage("--session goes with deny only"));
            }
            if global && choice != ChoiceKey::Never {
                return Err(answer_usage(
                    "--global goes with never only (allow globally: the global choice)",
                ));
            }
            let grants = choice == ChoiceKey::Session || session;
            if !grants && (lifetime.is_some() || program) {
                return Err(answer_usage(
                    "--for and --program go with session or deny --session only",
                ));
            }
            CtlCommand::Answer {
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
                },
            }
        }
        CtlWords::AddProject { dir } => CtlCommand::AddProject(dir),
        CtlWords::RemoveProject { dir } => CtlCommand::RemoveProject(dir),
        CtlWords::TakeOver { dir } => CtlCommand::TakeOver(dir),
        CtlWords::Prefer { dir, prompts } => CtlCommand::Prefer(dir, prompts),
        CtlWords::Pause { duration } => CtlCommand::Pause(duration),
        CtlWords::Resume => CtlCommand::Resume,
        CtlWords::Policy(PolicyWords::Show { dir }) => CtlCommand::PolicyShow(dir),
        CtlWords::Policy(PolicyWords::Add {
            file,
            list,
            entry,
            broad,
        }) => CtlCommand::ChangePolicy {
            file: file.file(),
            change: PolicyChange::Add { list, entry },
            allow_broad: broad,
        },
        CtlWords::Policy(PolicyWords::Replace {
            file,
            list,
            old,
            new,
            broad,
        }) => CtlCommand::ChangePolicy {
            file: file.file(),
            change: PolicyChange::Replace { list, old, new },
            allow_broad: broad,
        },
        CtlWords::Policy(PolicyWords::Undo) => CtlCommand::UndoPolicy,
        CtlWords::Policy(PolicyWords::Remove { file, list, entry }) => CtlCommand::ChangePolicy {
            file: file.file(),
            change: PolicyChange::Remove { list, entry },
            allow_broad: false,
        },
        CtlWords::Policy(PolicyWords::Set { file, field, value }) => CtlCommand::ChangePolicy {
            file: file.file(),
            change: PolicyChange::Set { field, value },
            allow_broad: false,
        },
        CtlWords::Policy(PolicyWords::Learn {
            dir,
            session,
            since,
            global,
            save,
        }) => CtlCommand::Learn {
            dir,
            session,
            since_secs: since,
            target: if global {
                PolicyTarget::Global
            } else {
                PolicyTarget::Project
            },
            save,
        },
        CtlWords::Grants => CtlCommand::Grants,
        CtlWords::Revoke { id } => CtlCommand::Revoke(id),
        CtlWords::Config { action: None } => CtlCommand::Config,
        CtlWords::Config {
            action: Some(ConfigWords::Set { key, value }),
        } => CtlCommand::ConfigSet(config_change(&key, &value).map_err(config_usage)?),
        CtlWords::Activity {
            project,
            decision,
            grep,
            limit,
        } => CtlCommand::Activity(ActivityFilter {
            project,
            decision: decision.map(|d| match d {
                DecisionArg::Allow => Decision::Allow,
                DecisionArg::Deny => Decision::Deny,
            }),
            grep,
            limit,
            ..ActivityFilter::default()
        }),
    })
}

/// A usage error of `ctl answer`, with that subcommand's usage line (exit status 2).
fn answer_usage(message: &str) -> clap::Error {
    let mut top = Top::command();
    top.build();
    let answer = top
        .find_subcommand_mut("ctl")
        .and_then(|ctl| ctl.find_subcommand_mut("answer"))
        .map(|answer| answer.clone());
    let mut cmd = answer.unwrap_or(top);
    cmd.error(ErrorKind::ArgumentConflict, message)
}

/// A usage error of `ctl config set` (exit status 2), with its usage line.
fn config_usage(message: String) -> clap::Error {
    let mut top = Top::command();
    top.build();
    let set = top
        .find_subcommand_mut("ctl")
        .and_then(|ctl| ctl.find_subcommand_mut("config"))
        .and_then(|config| config.find_subcommand_mut("set"))
        .map(|set| set.clone());
    let mut cmd = set.unwrap_or(top);
    cmd.error(ErrorKind::InvalidValue, message)
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;

    use super::*;

    fn parse(args: &[&str]) -> Result<Invocation, clap::Error> {
        super::parse(std::iter::once("landstrip-tray").chain(args.iter().copied()))
    }

    fn run(args: &[&str]) -> Cli {
        match parse(args) {
            Ok(Invocation::Run(cli)) => cli,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    fn ctl(args: &[&str]) -> Result<Invocation, clap::Error> {
        parse(&[&["ctl"], args].concat())
    }

    fn command(args: &[&str]) -> CtlCommand {
        match ctl(args) {
            Ok(Invocation::Ctl(ctl)) => ctl.command,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    /// The error's message and exit status.
    fn refused(result: Result<Invocation, clap::Error>) -> (String, i32) {
        match result {
            Err(e) => (e.render().to_string(), e.exit_code()),
            Ok(other) => panic!("accepted: {other:?}"),
        }
    }

    #[test]
    fn the_grammar_is_consistent() {
        super::command().debug_assert();
    }

    #[test]
    fn projects_repeat() {
        let cli = run(&["--project", "/a", "--project=/b", "-p", "c"]);
        assert_eq!(
            cli.projects,
            vec![PathBuf::from("/a"), "/b".into(), "c".into()]
        );
        assert_eq!(run(&[]), Cli::default());
    }

    #[test]
    fn headless_is_a_flag_of_the_app_itself() {
        let cli = run(&["--headless", "--project", "/a"]);
        assert!(cli.headless);
        assert_eq!(cli.projects, vec![PathBuf::from("/a")]);
        assert!(!run(&[]).headless);
        assert!(parse(&["--headless", "ctl", "status"]).is_err());
    }

    #[test]
    fn a_project_path_need_not_be_utf8() {
        let dir = OsString::from_vec(b"/tmp/caf\xe9".to_vec());
        let args = [
            OsString::from("landstrip-tray"),
            "--project".into(),
            dir.clone(),
        ];
        match super::parse(args) {
            Ok(Invocation::Run(cli)) => assert_eq!(cli.projects, vec![PathBuf::from(&dir)]),
            other => panic!("{other:?}"),
        }
        let args = [
            OsString::from("landstrip-tray"),
            "ctl".into(),
            "add-project".into(),
            dir.clone(),
        ];
        match super::parse(args) {
            Ok(Invocation::Ctl(ctl)) => {
                assert_eq!(ctl.command, CtlCommand::AddProject(PathBuf::from(&dir)))
            }
            other => panic!("{other:?}"),
        }
        // Where text is needed, a non-UTF-8 word is a usage error, not a panic.
        let args = [
            OsString::from("landstrip-tray"),
            "ctl".into(),
            "answer".into(),
            "1".into(),
            "project".into(),
            "--entry".into(),
            dir,
        ];
        assert_eq!(refused(super::parse(args)).1, 2);
    }

    #[test]
    fn help_and_version_exit_0_and_usage_errors_2() {
        for args in [
            &["--help"][..],
            &["-h"],
            &["--version"],
            &["-V"],
            &["ctl", "--help"],
            &["ctl", "answer", "--help"],
            &["help", "ctl"],
            &["ctl", "help", "pause"],
            &["completions", "--help"],
        ] {
            let e = parse(args).expect_err("help is printed through the error");
            assert_eq!(e.exit_code(), 0, "{args:?}");
        }
        let (version, _) = refused(parse(&["--version"]));
        assert_eq!(
            version,
            format!("landstrip-tray {}\n", env!("CARGO_PKG_VERSION"))
        );
        let (help, _) = refused(parse(&["ctl", "--help"]));
        for word in [
            "status",
            "projects",
            "pending",
            "answer",
            "add-project",
            "remove-project",
            "take-over",
            "prefer",
            "pause",
            "resume",
            "policy",
            "grants",
            "revoke",
            "activity",
            "--json",
            "Exit status",
        ] {
            assert!(help.contains(word), "{word} in {help}");
        }
        let (help, _) = refused(parse(&["ctl", "policy", "add", "--help"]));
        for word in [
            "--project",
            "--global",
            "<LIST>",
            "<ENTRY>",
            "allowedDomains",
        ] {
            assert!(help.contains(word), "{word} in {help}");
        }
        let (help, _) = refused(parse(&["--help"]));
        assert!(help.contains("settings"), "{help}");
        let (help, _) = refused(parse(&["ctl", "answer", "--help"]));
        for word in ["--scope", "--entry", "--wider", "--confirm-sensitive"] {
            assert!(help.contains(word), "{word} in {help}");
        }

        for args in [
            &["--frob"][..],
            &["--project"],
            &["ctl"],
            &["ctl", "--json"],
            &["completions"],
            &["completions", "powershell"],
            &["--project", "/a", "ctl", "status"],
        ] {
            assert_eq!(refused(parse(args)).1, 2, "{args:?}");
        }
    }

    #[test]
    fn ctl_commands_parse() {
        assert_eq!(command(&["status"]), CtlCommand::Status);
        assert_eq!(command(&["projects"]), CtlCommand::Projects);
        assert_eq!(
            command(&["pending", "--wait"]),
            CtlCommand::Pending { wait: true }
        );
        assert_eq!(
            command(&["answer", "3", "once"]),
            CtlCommand::Answer {
                id: 3,
                answer: AnswerRequest::once()
            }
        );
        assert_eq!(
            command(&["answer", "3", "deny"]),
            CtlCommand::Answer {
                id: 3,
                answer: AnswerRequest::deny()
            }
        );
        assert_eq!(
            command(&["answer", "3", "project", "--entry", "out"]),
            CtlCommand::Answer {
                id: 3,
                answer: AnswerRequest {
                    entry: Some("out".into()),
                    ..AnswerRequest::new(ChoiceKey::Project)
                }
            }
        );
        assert_eq!(
            command(&["answer", "--entry=~/x", "4", "global", "--wider"]),
            CtlCommand::Answer {
                id: 4,
                answer: AnswerRequest {
                    entry: Some("~/x".into()),
                    wider: true,
                    ..AnswerRequest::new(ChoiceKey::Global)
                }
            }
        );
        assert_eq!(
            command(&["answer", "5", "session", "--confirm-sensitive"]),
            CtlCommand::Answer {
                id: 5,
                answer: AnswerRequest {
                    confirmed: true,
                    ..AnswerRequest::session()
                }
            }
        );
        assert_eq!(
            command(&["answer", "6", "project", "--scope", "parent"]),
            CtlCommand::Answer {
                id: 6,
                answer: AnswerRequest {
                    scope: Some(ScopeKind::Parent),
                    ..AnswerRequest::new(ChoiceKey::Project)
                }
            }
        );
        assert_eq!(
            command(&["add-project", "rel/dir"]),
            CtlCommand::AddProject("rel/dir".into())
        );
        assert_eq!(
            command(&["remove-project", "/a"]),
            CtlCommand::RemoveProject("/a".into())
        );
        assert_eq!(
            command(&["take-over", "/a"]),
            CtlCommand::TakeOver("/a".into())
        );
        assert_eq!(
            command(&["prefer", "rel", "terminal"]),
            CtlCommand::Prefer("rel".into(), PromptsGo::Terminal)
        );
        assert_eq!(
            command(&["prefer", "/a", "here"]),
            CtlCommand::Prefer("/a".into(), PromptsGo::Here)
        );
        assert!(ctl(&["prefer", "/a", "tui"]).is_err());
        assert_eq!(command(&["pause"]), CtlCommand::Pause(None));
        assert_eq!(command(&["pause", "1h30m"]), CtlCommand::Pause(Some(5400)));
        assert_eq!(command(&["pause", "90"]), CtlCommand::Pause(Some(90)));
        assert_eq!(command(&["resume"]), CtlCommand::Resume);
        for args in [&["pending", "--json"][..], &["--json", "pending"]] {
            match ctl(args) {
                Ok(Invocation::Ctl(c)) => assert!(c.json, "{args:?}"),
                other => panic!("{other:?}"),
            }
        }
        match ctl(&["status"]) {
            Ok(Invocation::Ctl(c)) => assert!(!c.json),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn answer_limits_never_and_deny_for_the_session_parse() {
        let err = |args: &[&str]| {
            let (message, code) = refused(ctl(args));
            assert_eq!(code, 2, "{args:?}: {message}");
            message
        };
        assert_eq!(
            command(&["answer", "3", "session", "--for", "15m", "--program"]),
            CtlCommand::Answer {
                id: 3,
                answer: AnswerRequest {
                    lifetime: Some(Lifetime::For(std::time::Duration::from_secs(900))),
                    program: true,
                    ..AnswerRequest::session()
                }
            }
        );
        assert_eq!(
            command(&["answer", "3", "session", "--for", "run"]),
            CtlCommand::Answer {
                id: 3,
                answer: AnswerRequest {
                    lifetime: Some(Lifetime::Run),
                    ..AnswerRequest::session()
                }
            }
        );
        assert_eq!(
            command(&["answer", "4", "never", "--global", "--scope", "parent"]),
            CtlCommand::Answer {
                id: 4,
                answer: AnswerRequest {
                    global: true,
                    scope: Some(ScopeKind::Parent),
                    ..AnswerRequest::never()
                }
            }
        );
        assert_eq!(
            command(&["answer", "5", "deny", "--session", "--for", "1h"]),
            CtlCommand::Answer {
                id: 5,
                answer: AnswerRequest {
                    session: true,
                    lifetime: Some(Lifetime::For(std::time::Duration::from_secs(3600))),
                    ..AnswerRequest::deny()
                }
            }
        );
        assert!(
            err(&["answer", "1", "session", "--for", "soon"]).contains("not \"run\" or a duration")
        );
        assert!(err(&["answer", "1", "once", "--for", "1h"]).contains("--for and --program"));
        assert!(err(&["answer", "1", "deny", "--program"]).contains("--for and --program"));
        assert!(err(&["answer", "1", "once", "--session"]).contains("--session goes with deny"));
        assert!(err(&["answer", "1", "project", "--global"]).contains("--global goes with never"));
    }

    #[test]
    fn ctl_usage_errors_say_what_is_wrong() {
        let err = |args: &[&str]| {
            let (message, code) = refused(ctl(args));
            assert_eq!(code, 2, "{args:?}: {message}");
            message
        };
        assert!(err(&[]).contains("Usage"));
        assert!(err(&["answer", "x", "once"]).contains("not a request id"));
        assert!(err(&["answer", "1", "maybe"]).contains("not a choice"));
        assert!(err(&["answer", "1"]).contains("<CHOICE>"));
        let message = err(&["answer", "1", "once", "--entry", "e"]);
        assert!(
            message.contains("--entry, --scope and --wider go with project, global or never only")
                && message.contains("ctl answer"),
            "{message}"
        );
        assert!(err(&["answer", "1", "deny", "--scope", "exact"]).contains("--scope"));
        assert!(err(&["answer", "1", "session", "--entry", "e", "--wider"]).contains("--entry"));
        assert!(err(&["answer", "1", "global", "--wider"]).contains("--wider goes with --entry"));
        assert!(err(&["answer", "1", "global", "--scope", "wide"]).contains("--scope"));
        assert!(
            err(&["answer", "1", "global", "--scope", "exact", "--entry", "e"])
                .contains("cannot be used with")
        );
        assert!(err(&["status", "--entry", "e"]).contains("--entry"));
        assert!(err(&["status", "--confirm-sensitive"]).contains("--confirm-sensitive"));
        assert!(err(&["add-project"]).contains("<DIR>"));
        assert!(err(&["add-project", "a", "b"]).contains("unexpected argument"));
        assert!(err(&["pause", "soon"]).contains("not a duration"));
        assert!(err(&["pause", "1m", "2m"]).contains("unexpected argument"));
        assert!(err(&["status", "extra"]).contains("unexpected argument"));
        assert!(err(&["status", "--wait"]).contains("--wait"));
        assert!(err(&["frob"]).contains("frob"));
        assert!(err(&["status", "--frob"]).contains("--frob"));
    }

    #[test]
    fn policy_grants_activity_and_settings_parse() {
        use landstrip_tray_core::policy::change::{BoolField, PolicyChange};
        use landstrip_tray_core::surfaces::ops::{AppSettingChange, PolicyFile};
        assert_eq!(
            command(&[
                "policy",
                "replace",
                "--global",
                "allowRead",
                "~/a",
                "~",
                "--broad"
            ]),
            CtlCommand::ChangePolicy {
                file: PolicyFile::Global,
                change: PolicyChange::Replace {
                    list: "allowRead".parse().unwrap(),
                    old: "~/a".into(),
                    new: "~".into(),
                },
                allow_broad: true,
            }
        );
        assert_eq!(command(&["policy", "undo"]), CtlCommand::UndoPolicy);
        assert_eq!(
            command(&["policy", "show", "p"]),
            CtlCommand::PolicyShow("p".into())
        );
        assert_eq!(
            command(&["policy", "add", "--project", "p", "allowWrite", "out"]),
            CtlCommand::ChangePolicy {
                file: PolicyFile::Project("p".into()),
                change: PolicyChange::Add {
                    list: "allowWrite".parse().unwrap(),
                    entry: "out".into()
                },
                allow_broad: false,
            }
        );
        assert_eq!(
            command(&["policy", "remove", "--global", "allowedDomains", "x.org"]),
            CtlCommand::ChangePolicy {
                file: PolicyFile::Global,
                change: PolicyChange::Remove {
                    list: "network.allowedDomains".parse().unwrap(),
                    entry: "x.org".into()
                },
                allow_broad: false,
            }
        );
        assert_eq!(
            command(&["policy", "set", "--global", "network.allowNetwork", "true"]),
            CtlCommand::ChangePolicy {
                file: PolicyFile::Global,
                change: PolicyChange::Set {
                    field: BoolField::AllowNetwork,
                    value: true
                },
                allow_broad: false,
            }
        );
        assert_eq!(command(&["config"]), CtlCommand::Config);
        assert_eq!(
            command(&["config", "set", "promptTimeout", "30"]),
            CtlCommand::ConfigSet(AppSettingChange::PromptTimeout(Some(30)))
        );
        assert_eq!(
            command(&["config", "set", "promptTimeout", "off"]),
            CtlCommand::ConfigSet(AppSettingChange::PromptTimeout(None))
        );
        assert_eq!(
            command(&["config", "set", "notificationSound", "false"]),
            CtlCommand::ConfigSet(AppSettingChange::NotificationSound(false))
        );
        assert_eq!(
            command(&["config", "set", "summarizeDenials", "true"]),
            CtlCommand::ConfigSet(AppSettingChange::SummarizeDenials(true))
        );
        assert_eq!(
            command(&["config", "set", "autostart", "true"]),
            CtlCommand::ConfigSet(AppSettingChange::Autostart(true))
        );
        for (bad, says) in [
            (&["config", "set", "frob", "1"][..], "not a setting"),
            (
                &["config", "set", "promptTimeout", "soon"],
                "not a prompt timeout",
            ),
            (
                &["config", "set", "notificationSound", "yes"],
                "true or false",
            ),
            (&["config", "set", "promptTimeout"], "VALUE"),
        ] {
            let (message, code) = refused(ctl(bad));
            assert_eq!(code, 2, "{bad:?}: {message}");
            assert!(message.contains(says), "{bad:?}: {message}");
        }
        assert_eq!(command(&["grants"]), CtlCommand::Grants);
        assert_eq!(command(&["revoke", "7"]), CtlCommand::Revoke(7));
        assert_eq!(
            command(&[
                "activity",
                "--project",
                "p",
                "--decision",
                "deny",
                "--grep",
                "env",
                "--limit",
                "3"
            ]),
            CtlCommand::Activity(ActivityFilter {
                project: Some("p".into()),
                decision: Some(Decision::Deny),
                grep: Some("env".into()),
                limit: Some(3),
                ..ActivityFilter::default()
            })
        );
        assert_eq!(
            parse(&["settings", "--view", "policy", "--project", "p"]).unwrap(),
            Invocation::Settings {
                view: Some("policy".into()),
                project: Some("p".into())
            }
        );
        assert_eq!(
            parse(&["settings"]).unwrap(),
            Invocation::Settings {
                view: None,
                project: None
            }
        );
    }

    #[test]
    fn policy_learn_parses_a_session_or_a_duration_not_both() {
        assert_eq!(
            command(&["policy", "learn", "p", "--session", "ses_1", "--save"]),
            CtlCommand::Learn {
                dir: "p".into(),
                session: Some("ses_1".into()),
                since_secs: None,
                target: PolicyTarget::Project,
                save: true,
            }
        );
        assert_eq!(
            command(&["policy", "learn", "p", "--since", "7d", "--global"]),
            CtlCommand::Learn {
                dir: "p".into(),
                session: None,
                since_secs: Some(7 * 86_400),
                target: PolicyTarget::Global,
                save: false,
            }
        );
        let (message, code) = refused(ctl(&[
            "policy",
            "learn",
            "p",
            "--session",
            "s",
            "--since",
            "1h",
        ]));
        assert_eq!(code, 2, "{message}");
        assert!(message.contains("cannot be used with"), "{message}");
        let (message, code) = refused(ctl(&["policy", "learn", "p", "--since", "soon"]));
        assert_eq!(code, 2, "{message}");
    }

    #[test]
    fn policy_usage_errors_name_what_is_known() {
        let err = |args: &[&str]| {
            let (message, code) = refused(ctl(args));
            assert_eq!(code, 2, "{args:?}: {message}");
            message
        };
        assert!(
            err(&["policy", "set", "--project", "p", "enabled", "notabool"])
                .contains("true or false")
        );
        let message = err(&["policy", "add", "--global", "allowEverything", "x"]);
        assert!(
            message.contains("allowWrite") && message.contains("allowedDomains"),
            "{message}"
        );
        let message = err(&["policy", "set", "--global", "frob", "true"]);
        assert!(message.contains("network.allowNetwork"), "{message}");
        // Exactly one file.
        err(&["policy", "add", "allowWrite", "x"]);
        err(&[
            "policy",
            "add",
            "--global",
            "--project",
            "p",
            "allowWrite",
            "x",
        ]);
        err(&["policy", "show"]);
        assert!(err(&["revoke", "x"]).contains("not a grant id"));
        err(&["activity", "--decision", "maybe"]);
        err(&["activity", "--limit", "many"]);
    }

    #[test]
    fn completions_for_three_shells() {
        for (word, shell) in [
            ("bash", Shell::Bash),
            ("zsh", Shell::Zsh),
            ("fish", Shell::Fish),
        ] {
            match parse(&["completions", word]) {
                Ok(Invocation::Completions(got)) => assert_eq!(got, shell),
                other => panic!("{word}: {other:?}"),
            }
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s"), Some(90));
        assert_eq!(parse_duration("15m"), Some(900));
        assert_eq!(parse_duration("1h"), Some(3600));
        assert_eq!(parse_duration("1h30m"), Some(5400));
        assert_eq!(parse_duration("2d"), Some(172_800));
        assert_eq!(parse_duration("45"), Some(45));
        for bad in ["", "0", "0s", "m", "1h30", "1x", "-5m", "1.5h"] {
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
    }
}
