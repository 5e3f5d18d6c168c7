//! The command line: `landstrip-tray [--project DIR]...` runs the app;
//! `landstrip-tray ctl COMMAND` talks to the running one.

use std::path::PathBuf;

use landstrip_tray_core::answer::{AnswerRequest, ChoiceKey};
use landstrip_tray_core::broker::PromptId;
use landstrip_tray_core::scope::ScopeKind;

/// What the command line asked for.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Cli {
    /// Projects to serve for this run (not saved to the settings).
    pub projects: Vec<PathBuf>,
}

/// What to do, by the first argument.
#[derive(Debug, PartialEq, Eq)]
pub enum Invocation {
    /// Print [`USAGE`].
    Help,
    /// Run the app.
    Run(Cli),
    /// Talk to the running instance.
    Ctl(Ctl),
    /// Print [`CTL_USAGE`].
    CtlHelp,
}

/// A `ctl` command line.
#[derive(Debug, PartialEq, Eq)]
pub struct Ctl {
    /// The command.
    pub command: CtlCommand,
    /// Print the reply as JSON.
    pub json: bool,
}

/// A `ctl` command; directories are as typed (relative ones are resolved before sending).
#[derive(Debug, PartialEq, Eq)]
pub enum CtlCommand {
    /// `status`
    Status,
    /// `projects`
    Projects,
    /// `pending [--wait]`
    Pending {
        /// Wait until something is pending.
        wait: bool,
    },
    /// `answer ID CHOICE [--scope S | --entry E [--wider]] [--confirm-sensitive]`
    Answer {
        /// The prompt.
        id: PromptId,
        /// The answer, checked by the running instance with the dialog's rules.
        answer: AnswerRequest,
    },
    /// `add-project DIR`
    AddProject(PathBuf),
    /// `remove-project DIR`
    RemoveProject(PathBuf),
    /// `take-over DIR`
    TakeOver(PathBuf),
    /// `pause [DURATION]`, in seconds; None: until resumed.
    Pause(Option<u64>),
    /// `resume`
    Resume,
}

/// A command line that makes no sense.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CliError {
    /// `--project` without a directory.
    #[error("--project needs a directory")]
    MissingValue,
    /// Something we do not know.
    #[error("unknown argument {0:?} (usage: landstrip-tray [--project DIR]... | landstrip-tray ctl --help)")]
    Unknown(String),
    /// A `ctl` command line that makes no sense.
    #[error("{0} (see landstrip-tray ctl --help)")]
    Ctl(String),
}

/// The usage text.
pub const USAGE: &str = "usage: landstrip-tray [--project DIR]...\n       \
landstrip-tray ctl COMMAND [--json]   (landstrip-tray ctl --help)\n\n\
Hosts the landstrip query socket for each project and asks you about what sandboxed\n\
commands try to do. Projects come from the settings file and from --project. Started\n\
while it already runs, it hands its --project directories to the running instance.";

/// The `ctl` usage text.
pub const CTL_USAGE: &str = "usage: landstrip-tray ctl COMMAND [--json]

Talks to this user's running landstrip-tray (no display needed, so it works over SSH).

  status                        pid, projects, waiting requests, pause
  projects                      the projects served and whether launchers reach them
  pending [--wait]              the requests waiting for an answer
                                (--wait: until at least one is)
  answer ID once|session|deny   allow once, allow for this session, or deny
  answer ID project|global [--scope exact|parent|suggested | --entry E [--wider]]
                                allow, and add the scope's entry (default: suggested)
                                or E to the project's or the global sandbox.json; E must
                                be an offered entry, or cover the request with --wider
  answer ... --confirm-sensitive
                                confirm a grant beyond once on a sensitive location
  add-project DIR               serve DIR (and save it in the settings)
  remove-project DIR            stop serving DIR (and drop it from the settings)
  take-over DIR                 publish DIR's discovery file over another presenter's
  pause [DURATION]              deny what would ask, for 90s, 15m, 1h30m… or until resumed
  resume                        ask again

--json prints the reply as JSON. Exit status: 0 done, 1 refused (the reason on stderr)
or not running, 2 a command line that makes no sense.";

impl Cli {
    /// Parses the arguments after the program name.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Option<Self>, CliError> {
        let mut cli = Cli::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--project" | "-p" => cli
                    .projects
                    .push(args.next().ok_or(CliError::MissingValue)?.into()),
                "--help" | "-h" => return Ok(None),
                other => match other.strip_prefix("--project=") {
                    Some(dir) => cli.projects.push(dir.into()),
                    None => return Err(CliError::Unknown(other.to_owned())),
                },
            }
        }
        Ok(Some(cli))
    }
}

/// Parses the arguments after the program name: `ctl …` or the app's own.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Invocation, CliError> {
    let mut args = args.into_iter().peekable();
    if args.peek().is_some_and(|a| a == "ctl") {
        args.next();
        return parse_ctl(args);
    }
    Ok(match Cli::parse(args)? {
        Some(cli) => Invocation::Run(cli),
        None => Invocation::Help,
    })
}

fn parse_ctl(args: impl Iterator<Item = String>) -> Result<Invocation, CliError> {
    let usage = |message: String| Err(CliError::Ctl(message));
    let mut json = false;
    let mut wait = false;
    let mut entry = None;
    let mut scope = None;
    let mut wider = false;
    let mut confirmed = false;
    let mut words = Vec::new();
    let mut args = args;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--help" | "-h" => return Ok(Invocation::CtlHelp),
            "--json" => json = true,
            "--wait" => wait = true,
            "--entry" => match args.next() {
                Some(e) => entry = Some(e),
                None => return usage("--entry needs a value".into()),
            },
            "--wider" => wider = true,
            "--confirm-sensitive" => confirmed = true,
            "--scope" => match args.next().as_deref().map(parse_scope) {
                Some(Some(s)) => scope = Some(s),
                _ => return usage("--scope takes exact, parent or suggested".into()),
            },
            other if other.starts_with("--entry=") => {
                entry = other.strip_prefix("--entry=").map(str::to_owned);
            }
            other if other.starts_with('-') && other.len() > 1 => {
                return usage(format!("unknown option {other:?}"))
            }
            _ => words.push(arg),
        }
    }
    let mut words = words.into_iter();
    let Some(name) = words.next() else {
        return usage("which command?".into());
    };
    let rest: Vec<String> = words.collect();
    let one_dir = |rest: &[String]| -> Result<PathBuf, CliError> {
        match rest {
            [dir] => Ok(PathBuf::from(dir)),
            [] => Err(CliError::Ctl(format!("{name} needs a directory"))),
            _ => Err(CliError::Ctl(format!("{name} takes one directory"))),
        }
    };
    let no_more = |rest: &[String]| -> Result<(), CliError> {
        match rest.first() {
            None => Ok(()),
            Some(extra) => Err(CliError::Ctl(format!(
                "{name} takes no argument (got {extra:?})"
            ))),
        }
    };
    if wait && name != "pending" {
        return usage("--wait goes with pending only".into());
    }
    let command = match name.as_str() {
        "status" => no_more(&rest).map(|()| CtlCommand::Status)?,
        "projects" => no_more(&rest).map(|()| CtlCommand::Projects)?,
        "pending" => no_more(&rest).map(|()| CtlCommand::Pending { wait })?,
        "answer" => {
            let [id, choice] = rest.as_slice() else {
                return usage("usage: answer ID once|session|project|global|deny".into());
            };
            let Ok(id) = id.parse::<PromptId>() else {
                return usage(format!("{id:?} is not a request id (see ctl pending)"));
            };
            let choice = match choice.as_str() {
                "once" => ChoiceKey::Once,
                "session" => ChoiceKey::Session,
                "deny" => ChoiceKey::Deny,
                "project" => ChoiceKey::Project,
                "global" => ChoiceKey::Global,
                other => {
                    return usage(format!(
                        "{other:?} is not a choice: once, session, project, global or deny"
                    ))
                }
            };
            if choice.target().is_none() && (entry.is_some() || scope.is_some() || wider) {
                return usage("--entry, --scope and --wider go with project or global only".into());
            }
            if wider && entry.is_none() {
                return usage("--wider goes with --entry".into());
            }
            CtlCommand::Answer {
                id,
                answer: AnswerRequest {
                    choice,
                    scope: scope.take(),
                    entry: entry.take(),
                    wider: std::mem::take(&mut wider),
                    confirmed: std::mem::take(&mut confirmed),
                },
            }
        }
        "add-project" => CtlCommand::AddProject(one_dir(&rest)?),
        "remove-project" => CtlCommand::RemoveProject(one_dir(&rest)?),
        "take-over" => CtlCommand::TakeOver(one_dir(&rest)?),
        "pause" => match rest.as_slice() {
            [] => CtlCommand::Pause(None),
            [duration] => match parse_duration(duration) {
                Some(secs) => CtlCommand::Pause(Some(secs)),
                None => {
                    return usage(format!(
                        "{duration:?} is not a duration such as 90s, 15m, 1h or 1h30m"
                    ))
                }
            },
            _ => return usage("pause takes at most one duration".into()),
        },
        "resume" => no_more(&rest).map(|()| CtlCommand::Resume)?,
        other => return usage(format!("unknown command {other:?}")),
    };
    if entry.is_some() || scope.is_some() || wider || confirmed {
        return usage(
            "--entry, --scope, --wider and --confirm-sensitive go with answer only".into(),
        );
    }
    Ok(Invocation::Ctl(Ctl { command, json }))
}

fn parse_scope(word: &str) -> Option<ScopeKind> {
    match word {
        "exact" => Some(ScopeKind::Exact),
        "parent" => Some(ScopeKind::Parent),
        "suggested" => Some(ScopeKind::Suggested),
        _ => None,
    }
}

/// `90s`, `15m`, `1h`, `1h30m`, `2d`, or bare seconds (`90`), as seconds; None if it is
/// none of those or zero.
pub fn parse_duration(text: &str) -> Option<u64> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse().ok().filter(|&s| s > 0);
    }
    let mut total: u64 = 0;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return None,
        };
        let n: u64 = std::mem::take(&mut number).parse().ok()?;
        total = total.checked_add(n.checked_mul(unit)?)?;
    }
    (number.is_empty() && total > 0).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Cli>, CliError> {
        Cli::parse(args.iter().map(|s| s.to_string()))
    }

    fn ctl(args: &[&str]) -> Result<Invocation, CliError> {
        super::parse(
            std::iter::once("ctl")
                .chain(args.iter().copied())
                .map(String::from),
        )
    }

    fn command(args: &[&str]) -> CtlCommand {
        match ctl(args) {
            Ok(Invocation::Ctl(ctl)) => ctl.command,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    #[test]
    fn projects_repeat() {
        let cli = parse(&["--project", "/a", "--project=/b", "-p", "c"])
            .unwrap()
            .unwrap();
        assert_eq!(
            cli.projects,
            vec![PathBuf::from("/a"), "/b".into(), "c".into()]
        );
    }

    #[test]
    fn bad_arguments_are_named() {
        assert_eq!(parse(&["--project"]).unwrap_err(), CliError::MissingValue);
        assert_eq!(
            parse(&["--frob"]).unwrap_err(),
            CliError::Unknown("--frob".into())
        );
        assert_eq!(parse(&["--help"]).unwrap(), None);
    }

    #[test]
    fn ctl_commands_parse() {
        assert_eq!(command(&["status"]), CtlCommand::Status);
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
        assert_eq!(command(&["pause"]), CtlCommand::Pause(None));
        assert_eq!(command(&["pause", "1h30m"]), CtlCommand::Pause(Some(5400)));
        match ctl(&["pending", "--json"]).unwrap() {
            Invocation::Ctl(c) => assert!(c.json),
            other => panic!("{other:?}"),
        }
        assert_eq!(ctl(&["--help"]).unwrap(), Invocation::CtlHelp);
    }

    #[test]
    fn ctl_usage_errors_say_what_is_wrong() {
        let err = |args: &[&str]| match ctl(args) {
            Err(CliError::Ctl(message)) => message,
            other => panic!("{args:?}: {other:?}"),
        };
        assert!(err(&[]).contains("which command"));
        assert!(err(&["answer", "x", "once"]).contains("not a request id"));
        assert!(err(&["answer", "1", "maybe"]).contains("not a choice"));
        assert!(err(&["answer", "1", "once", "--entry", "e"]).contains("--entry"));
        assert!(err(&["status", "--entry", "e"]).contains("--entry"));
        assert!(err(&["answer", "1", "global", "--wider"]).contains("--wider"));
        assert!(err(&["answer", "1", "global", "--scope", "wide"]).contains("--scope"));
        assert!(err(&["add-project"]).contains("needs a directory"));
        assert!(err(&["pause", "soon"]).contains("not a duration"));
        assert!(err(&["status", "extra"]).contains("no argument"));
        assert!(err(&["status", "--wait"]).contains("--wait"));
        assert!(err(&["frob"]).contains("unknown command"));
        assert!(err(&["status", "--frob"]).contains("unknown option"));
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
