//! What every start of the app needs before any surface exists, windowed or headless:
//! the activity log, the broker with the saved prompt timeout, the settings file and the
//! write journal.

use std::sync::Arc;
use std::time::Duration;

use landstrip_tray_core::activity::ActivityLog;
use landstrip_tray_core::app_settings::{AppSettings, SettingsFile};
use landstrip_tray_core::decision::broker::Broker;
use landstrip_tray_core::decision::canary::Canaries;
use landstrip_tray_core::decision::own_state::OwnState;
use landstrip_tray_core::journal::Journal;
use landstrip_tray_core::paths::AppPaths;
use tokio::signal::unix::{signal, Signal, SignalKind};

/// The activity log's size bound before it rotates.
const ACTIVITY_MAX_BYTES: u64 = 8 << 20;

/// The core pieces a start builds its surfaces on.
pub struct Core {
    /// The broker, its prompt timeout set from the settings.
    pub broker: Broker,
    /// The app's settings file.
    pub settings: SettingsFile,
    /// What the settings file held at start (defaults when it does not parse).
    pub saved: AppSettings,
}

/// Opens the activity log (in memory when its file cannot be opened), the settings file
/// (left as it is when it does not parse) and the broker.
pub fn open_core(paths: &AppPaths) -> Core {
    let activity = match ActivityLog::open(&paths.activity_file(), ACTIVITY_MAX_BYTES) {
        Ok(log) => log,
        Err(e) => {
            tracing::warn!(
                "activity log {}: {e}; keeping it in memory only",
                paths.activity_file().display()
            );
            ActivityLog::in_memory()
        }
    };
    let broker = Broker::new(Arc::new(activity));
    let settings = SettingsFile::new(paths.settings_file());
    let saved = match settings.load() {
        Ok(saved) => saved,
        Err(e) => {
            tracing::error!("{e} (the settings file is left as it is)");
            AppSettings::default()
        }
    };
    broker.set_prompt_timeout(saved.prompt_timeout_secs.map(Duration::from_secs));
    broker.set_after_secret(saved.after_secret);
    // The app's own settings, data and control socket: no sandboxed program may touch them.
    broker.set_own_state(own_state(paths));
    // What opencode knows about a prompt's call (its session title, the agent's words).
    broker.set_opencode_store(Some(
        landstrip_tray_core::origin::OpencodeStore::in_data_dir(&paths.user_data_dir),
    ));
    // The write journal, in the data directory (already the app's own state).
    let journal_dir = paths.journal_dir();
    match Journal::open(&journal_dir, saved.journal_config()) {
        Ok(journal) => {
            broker.set_journal(journal);
        }
        Err(e) => tracing::error!(
            "write journal {}: {e}; allowed writes are not journaled (no undo)",
            journal_dir.display()
        ),
    }
    // The canaries, listed in the data directory (the app's own state too).
    let canaries_file = paths.canaries_file();
    match Canaries::open(canaries_file.clone()) {
        Ok(canaries) => {
            broker.set_canaries(canaries);
        }
        // Never overwritten: a list that does not parse is left for the person to mend;
        // none of its canaries trips and none can be added or removed until it is.
        Err(e) => {
            tracing::error!(
                "{e}; none of its canaries trips, and none can be added or removed, until it is mended"
            );
            broker.set_canaries(Canaries::unreadable(canaries_file, e.to_string()));
        }
    }
    Core {
        broker,
        settings,
        saved,
    }
}

/// The app's own state, which the rules deny to every sandboxed program.
pub fn own_state(paths: &AppPaths) -> OwnState {
    let control_dir = paths
        .control_socket
        .parent()
        .unwrap_or(&paths.control_socket);
    OwnState::new(
        &paths.config_dir,
        &paths.data_dir,
        &paths.log_dir,
        control_dir,
    )
}

/// Whether a display server is named in the environment: an X display or a Wayland one.
/// GTK cannot start without one (it aborts the process), so the windowed app checks first.
pub fn has_display(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> bool {
    ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|name| var(name).is_some_and(|v| !v.is_empty()))
}

/// The sentence a start without a display and without `--headless` ends with.
pub const NO_DISPLAY: &str =
    "no display: set DISPLAY or WAYLAND_DISPLAY, or run `landstrip-tray --headless`";

/// The signals that quit cleanly: SIGTERM (a service manager, `kill`), SIGINT (Ctrl-C)
/// and SIGHUP (the terminal or session that started us went away).
pub struct QuitSignals {
    term: Signal,
    int: Signal,
    hup: Signal,
}

impl QuitSignals {
    /// Waits for the first of them, and logs which.
    pub async fn recv(&mut self) {
        tokio::select! {
            _ = self.term.recv() => tracing::info!("SIGTERM: quitting"),
            _ = self.int.recv() => tracing::info!("SIGINT: quitting"),
            _ = self.hup.recv() => tracing::info!("SIGHUP: quitting"),
        }
    }
}

/// Catches the quit signals; from this call on they no longer kill the process. Must be
/// called inside the tokio runtime.
pub fn quit_signals() -> Option<QuitSignals> {
    let catch =
        |kind| signal(kind).map_err(|e| tracing::warn!("cannot install signal handlers: {e}"));
    Some(QuitSignals {
        term: catch(SignalKind::terminate()).ok()?,
        int: catch(SignalKind::interrupt()).ok()?,
        hup: catch(SignalKind::hangup()).ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn an_x_or_a_wayland_display_counts_and_an_empty_one_does_not() {
        assert!(has_display(env(&[("DISPLAY", ":0")])));
        assert!(has_display(env(&[("WAYLAND_DISPLAY", "wayland-1")])));
        assert!(!has_display(env(&[])));
        assert!(!has_display(env(&[
            ("DISPLAY", ""),
            ("WAYLAND_DISPLAY", "")
        ])));
    }
}
