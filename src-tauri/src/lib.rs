//! landstrip-tray: the Tauri shell around the headless core.
//!
//! `cli` (the command line and the `ctl` client) and `tray_view` (what the tray shows) are
//! free of Tauri; `app` is the Tauri glue. See docs/ARCHITECTURE.md, "Layout".

pub mod app;
pub mod boot;
pub mod cli;
pub mod headless;
pub mod logs;
pub mod tray_view;

use std::error::Error;
use std::process::ExitCode;

use landstrip_tray_core::paths::AppPaths;

use cli::{Cli, Invocation};

/// How a binary starts the windowed app: `app::start` in `landstrip-tray`; none in
/// `landstrip-tray-headless`, which must not link GTK or WebKit (see [`run`]).
pub type Windowed = fn(Cli, AppPaths) -> Result<(), Box<dyn Error>>;

/// The headless binary beside `landstrip-tray` (src/bin/landstrip-tray-headless.rs).
pub const HEADLESS_BINARY: &str = "landstrip-tray-headless";

/// Runs the process: parses the command line, then runs `ctl`, prints completions, or
/// starts the app. Returns the exit code.
///
/// `windowed` is None in the headless binary, which then always serves headless. In the
/// windowed one, `--headless` hands the process over (exec) to the headless binary: a
/// process that has loaded GTK's and WebKit's libraries carries their relocated pages
/// for its whole life (25 MB of PSS here) even when it opens no window.
pub fn run(windowed: Option<Windowed>) -> ExitCode {
    // `ctl` is handled before anything else: no logging set-up, no Tauri, no display, so
    // it works over SSH. It needs no home directory either, only the runtime directory.
    // `args_os`: a path that is not UTF-8 is still a path.
    let cli = match cli::parse(std::env::args_os()) {
        Ok(Invocation::Run(cli)) => cli,
        Ok(Invocation::Ctl(ctl)) => {
            return cli::ctl::run_ctl(ctl, &landstrip_tray_core::paths::control_socket_from_env())
        }
        Ok(Invocation::Settings { view, project }) => {
            return cli::ctl::open_settings(
                &landstrip_tray_core::paths::control_socket_from_env(),
                view,
                project,
            )
        }
        Ok(Invocation::Launch(launch)) => return cli::run::launch(launch),
        Ok(Invocation::Bridge) => {
            return cli::ctl::run_bridge(&landstrip_tray_core::paths::control_socket_from_env())
        }
        Ok(Invocation::Completions(shell)) => {
            cli::completions(shell, &mut std::io::stdout().lock());
            return ExitCode::SUCCESS;
        }
        // Help and --version come this way too: printed to stdout, exit 0; a usage error
        // goes to stderr, exit 2.
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let windowed = match windowed {
        Some(_) if cli.headless => {
            // Returns only when there is no headless binary to run (a build that has
            // only this one): then this process serves headless itself.
            let err = exec_headless();
            eprintln!("landstrip-tray: {err}; serving headless in this process");
            None
        }
        other => other,
    };
    let paths = match AppPaths::from_env() {
        Ok(paths) => paths,
        Err(e) => {
            eprintln!("landstrip-tray: {e}");
            return ExitCode::FAILURE;
        }
    };
    // One instance per user: a running one takes this start's projects, and no display is
    // touched.
    if let Some(code) = cli::ctl::hand_off(&paths.control_socket, &cli) {
        return code;
    }
    // GTK aborts the process when it finds no display: say so in a sentence instead, before
    // anything is started or published.
    if windowed.is_some() && !boot::has_display(|name| std::env::var_os(name)) {
        eprintln!("landstrip-tray: {}", boot::NO_DISPLAY);
        return ExitCode::FAILURE;
    }
    // Only the instance that runs logs to the files (a start that handed off wrote its
    // few words to stderr).
    logs::init(&paths.log_dir);
    let started = match windowed {
        Some(start) => start(cli, paths),
        None => headless::run(cli, paths),
    };
    match started {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("landstrip-tray: {e}");
            logs::flush();
            ExitCode::FAILURE
        }
    }
}

/// Replaces this process with the headless binary beside it, given the same arguments.
/// Returns only on failure, with why.
fn exec_headless() -> String {
    use std::os::unix::process::CommandExt;
    let binary = match std::env::current_exe() {
        Ok(exe) => exe.with_file_name(HEADLESS_BINARY),
        Err(e) => return format!("cannot find this program's path: {e}"),
    };
    let err = std::process::Command::new(&binary)
        .args(std::env::args_os().skip(1))
        .exec();
    format!("cannot run {}: {err}", binary.display())
}
