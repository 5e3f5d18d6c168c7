//! The command line's grammar (clap) above `ctl` (whose words are in `ctl_words.rs`), and
//! its translation into what [`super::Invocation`] says. Paths are taken as `OsStr`, so a
//! directory whose name is not UTF-8 works.

use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use landstrip_tray_core::activity::now_ms;

use super::ctl_words::{CtlArgs, Usage};
use super::{Cli, Invocation, Launch};

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
        /// Which view: projects, policy, grants, activity, learn, canaries, remotes or general
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
    parse_at(args, now_ms())
}

/// [`parse`], with `ctl`'s "ago" (`policy learn --since`) counted back from `now_ms`.
fn parse_at<I, T>(args: I, now_ms: u64) -> Result<Invocation, clap::Error>
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
        Some(TopCommand::Ctl(ctl)) if ctl.is_bridge() => Invocation::Bridge,
        Some(TopCommand::Ctl(ctl)) => Invocation::Ctl(ctl.ctl(now_ms).map_err(usage_error)?),
    })
}

/// A usage error of the subcommand at `usage.path` (`ctl answer`, `ctl config set`), with
/// that subcommand's usage line (exit status 2); the top's if the path names none.
fn usage_error(usage: Usage) -> clap::Error {
    let mut top = Top::command();
    top.build();
    let found = usage
        .path
        .iter()
        .try_fold(&mut top, |cmd, name| cmd.find_subcommand_mut(name))
        .map(|cmd| cmd.clone());
    let mut cmd = found.unwrap_or(top);
    cmd.error(usage.kind, usage.message)
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;

    use landstrip_tray_core::activity::{ActivityFilter, Decision};
    use landstrip_tray_core::app_settings::PromptsGo;
    use landstrip_tray_core::decision::answer::{AnswerRequest, ChoiceKey};
    use landstrip_tray_core::decision::grants::Lifetime;
    use landstrip_tray_core::decision::scope::{PolicyTarget, ScopeKind};
    use landstrip_tray_core::surfaces::control::Request;
    use landstrip_tray_core::surfaces::ops::LearnRequest;

    use super::*;

    /// The clock `ctl` reads while these tests parse.
    const NOW: u64 = 1_764_588_605_000;

    fn parse(args: &[&str]) -> Result<Invocation, clap::Error> {
        parse_at(
            std::iter::once("landstrip-tray").chain(args.iter().copied()),
            NOW,
        )
    }

    /// A directory as typed, resolved against this process's cwd as `ctl` sends it.
    fn here(dir: &str) -> PathBuf {
        std::env::current_dir().expect("a cwd").join(dir)
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

    fn command(args: &[&str]) -> Request {
        match ctl(args) {
            Ok(Invocation::Ctl(ctl)) => ctl.request,
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
                assert_eq!(
                    ctl.request,
                    Request::AddProject {
                        dir: PathBuf::from(&dir),
                        persist: true
                    }
                )
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
        assert_eq!(command(&["status"]), Request::Status);
        assert_eq!(command(&["projects"]), Request::Projects);
        assert_eq!(
            command(&["pending", "--wait"]),
            Request::Pending { wait: true }
        );
        assert_eq!(
            command(&["answer", "3", "once"]),
            Request::Answer {
                id: 3,
                answer: AnswerRequest::once()
            }
        );
        assert_eq!(
            command(&["answer", "3", "deny"]),
            Request::Answer {
                id: 3,
                answer: AnswerRequest::deny()
            }
        );
        assert_eq!(
            command(&["answer", "3", "project", "--entry", "out"]),
            Request::Answer {
                id: 3,
                answer: AnswerRequest {
                    entry: Some("out".into()),
                    ..AnswerRequest::new(ChoiceKey::Project)
                }
            }
        );
        assert_eq!(
            command(&["answer", "--entry=~/x", "4", "global", "--wider"]),
            Request::Answer {
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
            Request::Answer {
                id: 5,
                answer: AnswerRequest {
                    confirmed: true,
                    ..AnswerRequest::session()
                }
            }
        );
        assert_eq!(
            command(&["answer", "5", "once", "--confirm-after-secret"]),
            Request::Answer {
                id: 5,
                answer: AnswerRequest {
                    confirmed_after_secret: true,
                    ..AnswerRequest::once()
                }
            }
        );
        assert_eq!(
            command(&["answer", "6", "project", "--scope", "parent"]),
            Request::Answer {
                id: 6,
                answer: AnswerRequest {
                    scope: Some(ScopeKind::Parent),
                    ..AnswerRequest::new(ChoiceKey::Project)
                }
            }
        );
        assert_eq!(
            command(&["add-project", "rel/dir"]),
            Request::AddProject {
                dir: here("rel/dir"),
                persist: true
            }
        );
        assert_eq!(
            command(&["remove-project", "/a"]),
            Request::RemoveProject {
                dir: "/a".into(),
                persist: true
            }
        );
        assert_eq!(
            command(&["take-over", "/a"]),
            Request::TakeOver { dir: "/a".into() }
        );
        assert_eq!(
            command(&["prefer", "rel", "terminal"]),
            Request::Prefer {
                dir: here("rel"),
                prompts: PromptsGo::Terminal
            }
        );
        assert_eq!(
            command(&["prefer", "/a", "here"]),
            Request::Prefer {
                dir: "/a".into(),
                prompts: PromptsGo::Here
            }
        );
        assert!(ctl(&["prefer", "/a", "tui"]).is_err());
        assert_eq!(command(&["pause"]), Request::Pause { secs: None });
        assert_eq!(
            command(&["pause", "1h30m"]),
            Request::Pause { secs: Some(5400) }
        );
        assert_eq!(command(&["pause", "90"]), Request::Pause { secs: Some(90) });
        assert_eq!(command(&["resume"]), Request::Resume);
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
            Request::Answer {
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
            Request::Answer {
                id: 3,
                answer: AnswerRequest {
                    lifetime: Some(Lifetime::Run),
                    ..AnswerRequest::session()
                }
            }
        );
        assert_eq!(
            command(&["answer", "4", "never", "--global", "--scope", "parent"]),
            Request::Answer {
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
            Request::Answer {
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
            Request::ChangePolicy {
                file: PolicyFile::Global,
                change: PolicyChange::Replace {
                    list: "allowRead".parse().unwrap(),
                    old: "~/a".into(),
                    new: "~".into(),
                },
                allow_broad: true,
            }
        );
        assert_eq!(command(&["policy", "undo"]), Request::UndoPolicy);
        assert_eq!(
            command(&["policy", "show", "p"]),
            Request::Policy { dir: here("p") }
        );
        assert_eq!(
            command(&["policy", "add", "--project", "p", "allowWrite", "out"]),
            Request::ChangePolicy {
                file: PolicyFile::Project(here("p")),
                change: PolicyChange::Add {
                    list: "allowWrite".parse().unwrap(),
                    entry: "out".into()
                },
                allow_broad: false,
            }
        );
        assert_eq!(
            command(&["policy", "remove", "--global", "allowedDomains", "x.org"]),
            Request::ChangePolicy {
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
            Request::ChangePolicy {
                file: PolicyFile::Global,
                change: PolicyChange::Set {
                    field: BoolField::AllowNetwork,
                    value: true
                },
                allow_broad: false,
            }
        );
        assert_eq!(command(&["config"]), Request::AppSettings);
        assert_eq!(
            command(&["config", "set", "promptTimeout", "30"]),
            Request::ChangeAppSetting {
                change: AppSettingChange::PromptTimeout(Some(30))
            }
        );
        assert_eq!(
            command(&["config", "set", "promptTimeout", "off"]),
            Request::ChangeAppSetting {
                change: AppSettingChange::PromptTimeout(None)
            }
        );
        assert_eq!(
            command(&["config", "set", "notificationSound", "false"]),
            Request::ChangeAppSetting {
                change: AppSettingChange::NotificationSound(false)
            }
        );
        assert_eq!(
            command(&["config", "set", "summarizeDenials", "true"]),
            Request::ChangeAppSetting {
                change: AppSettingChange::SummarizeDenials(true)
            }
        );
        assert_eq!(
            command(&["config", "set", "autostart", "true"]),
            Request::ChangeAppSetting {
                change: AppSettingChange::Autostart(true)
            }
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
        assert_eq!(command(&["grants"]), Request::Grants);
        assert_eq!(command(&["revoke", "7"]), Request::Revoke { id: 7 });
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
            Request::Activity {
                filter: ActivityFilter {
                    project: Some(here("p")),
                    decision: Some(Decision::Deny),
                    grep: Some("env".into()),
                    limit: Some(3),
                    ..ActivityFilter::default()
                }
            }
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
            Request::Learn {
                dir: here("p"),
                learn: LearnRequest {
                    session: Some("ses_1".into()),
                    since_ms: None,
                    until_ms: None,
                    target: PolicyTarget::Project,
                },
                save: true,
            }
        );
        assert_eq!(
            command(&["policy", "learn", "p", "--since", "7d", "--global"]),
            Request::Learn {
                dir: here("p"),
                learn: LearnRequest {
                    session: None,
                    since_ms: Some(NOW - 7 * 86_400 * 1000),
                    until_ms: None,
                    target: PolicyTarget::Global,
                },
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
    fn relative_directories_are_resolved_here() {
        use landstrip_tray_core::surfaces::ops::PolicyFile;
        let request = command(&["add-project", "some/dir"]);
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            request,
            Request::AddProject {
                dir: cwd.join("some/dir"),
                persist: true
            }
        );
        let request = command(&["policy", "set", "--project", "p", "enabled", "false"]);
        match request {
            Request::ChangePolicy {
                file: PolicyFile::Project(dir),
                ..
            } => assert_eq!(dir, cwd.join("p")),
            other => panic!("{other:?}"),
        }
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
