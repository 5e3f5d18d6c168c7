//! The command line and the `ctl` client: no Tauri here, so everything in this module runs
//! without a display (`ctl` works over SSH) and is tested without one. See
//! docs/ARCHITECTURE.md, "Layout".
//!
//! `landstrip-tray [--project DIR]...` runs the app; `landstrip-tray ctl COMMAND` talks to
//! the running one; `landstrip-tray run -- PROGRAM` runs a program under landstrip with its
//! questions asked by the running app; `landstrip-tray completions SHELL` prints shell
//! completions.

mod args;
pub mod ctl;
pub mod run;

use std::path::PathBuf;

use landstrip_tray_core::activity::ActivityFilter;
use landstrip_tray_core::decision::answer::AnswerRequest;
use landstrip_tray_core::decision::broker::PromptId;
use landstrip_tray_core::decision::scope::PolicyTarget;
use landstrip_tray_core::policy::change::PolicyChange;
use landstrip_tray_core::preferences::PromptsGo;
use landstrip_tray_core::surfaces::ops::{AppSettingChange, PolicyFile};

pub use args::{parse, parse_duration, Shell};

/// What the command line asked the app itself to do.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Cli {
    /// Projects to serve for this run (not saved to the settings).
    pub projects: Vec<PathBuf>,
    /// `--headless`: serve without a display (no GTK, no WebKit, no window).
    pub headless: bool,
}

/// What to do.
#[derive(Debug, PartialEq, Eq)]
pub enum Invocation {
    /// Run the app.
    Run(Cli),
    /// Talk to the running instance.
    Ctl(Ctl),
    /// Print shell completions.
    Completions(Shell),
    /// `run`: a program under landstrip, its queries asked through the running app.
    Launch(Launch),
    /// Open the running app's settings window.
    Settings {
        /// Which view.
        view: Option<String>,
        /// The project to select (as typed).
        project: Option<PathBuf>,
    },
}

/// A `run` command line.
#[derive(Debug, PartialEq, Eq)]
pub struct Launch {
    /// `--project DIR` as typed; None: the current directory.
    pub project: Option<PathBuf>,
    /// `-p POLICY` files, merged after the project's policy.
    pub policies: Vec<PathBuf>,
    /// `--no-prompt`: plain landstrip denials, no app needed.
    pub no_prompt: bool,
    /// The program and its arguments.
    pub program: Vec<std::ffi::OsString>,
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
    /// `prefer DIR here|terminal`
    Prefer(PathBuf, PromptsGo),
    /// `pause [DURATION]`, in seconds; None: until resumed.
    Pause(Option<u64>),
    /// `resume`
    Resume,
    /// `policy show DIR`
    PolicyShow(PathBuf),
    /// `policy add|remove|replace|set (--project DIR | --global) …`
    ChangePolicy {
        /// Which file (a project directory as typed).
        file: PolicyFile,
        /// The change.
        change: PolicyChange,
        /// `--broad`: the user confirmed an entry giving very broad access.
        allow_broad: bool,
    },
    /// `policy undo`
    UndoPolicy,
    /// `policy learn DIR [--session ID | --since DURATION] [--global] [--save]`
    Learn {
        /// The project directory as typed.
        dir: PathBuf,
        /// Only this session's answers.
        session: Option<String>,
        /// Only the last this many seconds.
        since_secs: Option<u64>,
        /// Which file the entries are for.
        target: PolicyTarget,
        /// Also write them.
        save: bool,
    },
    /// `grants`
    Grants,
    /// `revoke GRANT_ID`
    Revoke(u64),
    /// `activity [--project DIR] [--decision D] [--grep TEXT] [--limit N]`
    Activity(ActivityFilter),
    /// `config`
    Config,
    /// `config set KEY VALUE`
    ConfigSet(AppSettingChange),
}

/// Writes `shell`'s completion script for the whole command line.
pub fn completions(shell: Shell, out: &mut dyn std::io::Write) {
    let mut command = args::command();
    let name = command.get_name().to_owned();
    match shell {
        Shell::Bash => clap_complete::generate(clap_complete::Shell::Bash, &mut command, name, out),
        Shell::Zsh => clap_complete::generate(clap_complete::Shell::Zsh, &mut command, name, out),
        Shell::Fish => clap_complete::generate(clap_complete::Shell::Fish, &mut command, name, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_name_every_ctl_command() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let mut out = Vec::new();
            completions(shell, &mut out);
            let script = String::from_utf8(out).expect("UTF-8");
            for word in [
                "landstrip-tray",
                "ctl",
                "add-project",
                "take-over",
                "confirm-sensitive",
                "completions",
                "policy",
                "revoke",
                "activity",
                "settings",
                "config",
            ] {
                assert!(script.contains(word), "{shell:?} lacks {word}");
            }
        }
    }
}
