//! The words of `ctl journal` and `ctl config set` (clap) and the requests they build.

use clap::Subcommand;
use landstrip_tray_core::journal::{parse_size, UndoTarget};
use landstrip_tray_core::surfaces::control::Request;
use landstrip_tray_core::surfaces::ops::AppSettingChange;

#[derive(Debug, Subcommand)]
pub(super) enum JournalWords {
    /// Put back each path's state before the writes, newest write first; exit status 1 if
    /// any path was refused
    #[command(
        long_about = "Put back each path's state before the writes, newest write first: \
bytes and mode restored, a created file removed, a removed one recreated. Each path is \
restored or refused on its own; a path changed since its run ended is refused unless \
--force. Paths are walked without following symbolic links. Exit status 1 if any path was \
refused."
    )]
    Undo {
        /// The journal entries (see ctl journal)
        #[arg(value_name = "ID", value_parser = parse_entry_id, required_unless_present = "session", conflicts_with = "session")]
        ids: Vec<u64>,
        /// Every write of this session (or run)
        #[arg(long, value_name = "S")]
        session: Option<String>,
        /// List what would be done; change nothing
        #[arg(long)]
        dry_run: bool,
        /// Restore paths changed since their run ended too
        #[arg(long)]
        force: bool,
    },
}

const CONFIG_KEYS: &str = "KEY VALUE: promptTimeout off|SECONDS (5 to 3600), \
summarizeDenials true|false, notificationSound true|false, autostart true|false, journal \
on|off, journalLimit SIZE (default 1GiB), journalFileLimit SIZE (default 64MiB; SIZE: 2GiB, \
64MiB, 512KiB or bytes), afterSecret ask|deny (deny: a run's network requests after it read a \
secret are denied without asking), webSensitive allow|deny (allow: the phone page may allow a \
sensitive or after-a-secret request, with a second tap). Applies to \
the next prompt or notification; no restart. autostart writes or removes \
~/.config/autostart/landstrip-tray.desktop, which starts this binary at login.";

#[derive(Debug, Subcommand)]
pub(super) enum ConfigWords {
    /// Change one setting, at once and in the settings file
    #[command(after_help = CONFIG_KEYS)]
    Set {
        /// promptTimeout, summarizeDenials, notificationSound, autostart, journal,
        /// journalLimit, journalFileLimit, afterSecret or webSensitive
        #[arg(value_name = "KEY")]
        key: String,
        /// off or seconds for promptTimeout; true or false for the others
        #[arg(value_name = "VALUE")]
        value: String,
    },
}

/// `config set KEY VALUE` as a typed change; the running instance checks the range.
pub(super) fn config_change(key: &str, value: &str) -> Result<AppSettingChange, String> {
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
        "journal" => match value {
            "on" => Ok(true),
            "off" => Ok(false),
            _ => parse_bool(value),
        }
        .map(AppSettingChange::Journal),
        "journalLimit" => parse_size(value).map(AppSettingChange::JournalLimit),
        "journalFileLimit" => parse_size(value).map(AppSettingChange::JournalFileLimit),
        "afterSecret" => value.parse().map(AppSettingChange::AfterSecret),
        "webSensitive" => value.parse().map(AppSettingChange::WebSensitive),
        _ => Err(format!(
            "{key:?} is not a setting: promptTimeout, summarizeDenials, notificationSound, autostart, journal, journalLimit, journalFileLimit, afterSecret or webSensitive"
        )),
    }
}

impl JournalWords {
    /// The request for `ctl journal undo …`.
    pub(super) fn request(self) -> Request {
        match self {
            JournalWords::Undo {
                ids,
                session,
                dry_run,
                force,
            } => Request::JournalUndo {
                target: match session {
                    Some(session) => UndoTarget::Session(session),
                    None => UndoTarget::Ids(ids),
                },
                dry_run,
                force,
            },
        }
    }
}

pub(super) fn parse_bool(text: &str) -> Result<bool, String> {
    match text {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(format!("{text:?} is not a value: true or false")),
    }
}

fn parse_entry_id(text: &str) -> Result<u64, String> {
    text.parse()
        .map_err(|_| format!("{text:?} is not a journal entry id (see ctl journal)"))
}
