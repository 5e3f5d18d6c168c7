//! The command line and the `ctl` client: no Tauri here, so everything in this module runs
//! without a display (`ctl` works over SSH) and is tested without one. See
//! docs/ARCHITECTURE.md, "Layout".
//!
//! `landstrip-tray [--project DIR]...` runs the app; `landstrip-tray ctl COMMAND` talks to
//! the running one; `landstrip-tray run -- PROGRAM` runs a program under landstrip with its
//! questions asked by the running app; `landstrip-tray completions SHELL` prints shell
//! completions.

mod args;
mod canary_words;
mod config_words;
pub mod ctl;
mod ctl_words;
mod remote_words;
mod render;
mod render_canary;
mod render_journal;
mod render_remote;
mod render_web;
pub mod run;
mod table;
mod web_words;

use std::path::{Path, PathBuf};

use landstrip_tray_core::surfaces::control::Request;

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
    /// `ctl bridge`: a desktop's SSH link to this machine.
    Bridge,
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
    /// What to ask the running instance, ready for the wire: relative directories
    /// resolved against our cwd (the instance has its own), `--since` made a time.
    pub request: Request,
    /// Print the reply as JSON.
    pub json: bool,
}

/// `dir` resolved against our cwd (the running instance has its own); as typed if that
/// cannot be done.
fn absolute(dir: &Path) -> PathBuf {
    std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf())
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
