//! The app's own settings as the settings view and `ctl config` read and change them:
//! one typed change, validated here whichever surface sends it, written under the
//! settings lock and applied at once.

use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::OpError;
use crate::app_settings::autostart::Autostart;
use crate::app_settings::{AfterSecretMode, AppSettings, WebSensitive};
use crate::journal::format_size;
use crate::serving::service::Service;

/// The prompt timeouts allowed, in seconds: long enough to read a prompt, short enough
/// that a forgotten one is still a timeout.
pub const PROMPT_TIMEOUT_SECS: RangeInclusive<u64> = 5..=3600;

/// The app's own settings as the surfaces show them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppSettingsView {
    /// The settings file.
    pub file: PathBuf,
    /// Seconds before an unanswered prompt is denied once; None: prompts wait.
    pub prompt_timeout_secs: Option<u64>,
    /// Quiet summaries of a run's terminal denials.
    pub summarize_denials: bool,
    /// A new prompt's notification asks for a sound.
    pub notification_sound: bool,
    /// The session starts the app at login (its autostart entry is there and on).
    pub autostart: bool,
    /// The autostart entry, `$XDG_CONFIG_HOME/autostart/landstrip-tray.desktop`.
    pub autostart_file: PathBuf,
    /// What becomes of a network request of a run after a secret: `ask` or `deny`.
    #[serde(default)]
    pub after_secret: AfterSecretMode,
    /// Writes a person allows are journaled, so they can be undone.
    #[serde(default)]
    pub journal: bool,
    /// The journal's total limit, bytes.
    #[serde(default)]
    pub journal_limit: u64,
    /// One file's limit in the journal, bytes.
    #[serde(default)]
    pub journal_file_limit: u64,
    /// Whether the phone page may allow a sensitive or after-a-secret request.
    #[serde(default)]
    pub web_sensitive: WebSensitive,
}

impl AppSettingsView {
    /// Blocks: reads the autostart entry.
    fn new(file: &Path, settings: &AppSettings, autostart: &Autostart) -> Result<Self, OpError> {
        Ok(Self {
            file: file.to_path_buf(),
            prompt_timeout_secs: settings.prompt_timeout_secs,
            summarize_denials: settings.summarize_denials,
            notification_sound: settings.notification_sound,
            autostart: autostart.is_on()?,
            autostart_file: autostart.file().to_path_buf(),
            after_secret: settings.after_secret,
            journal: settings.journal,
            journal_limit: settings.journal_config().limit,
            journal_file_limit: settings.journal_config().file_limit,
            web_sensitive: settings.web_sensitive,
        })
    }
}

/// One change to the app's own settings: `{"key":"promptTimeout","value":30}` (`null`:
/// off), `{"key":"summarizeDenials","value":false}`, `{"key":"notificationSound",…}`,
/// `{"key":"autostart","value":true}`, `{"key":"afterSecret","value":"deny"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "key", content = "value", rename_all = "camelCase")]
pub enum AppSettingChange {
    /// Deny an unanswered prompt once after this many seconds; None: never.
    PromptTimeout(Option<u64>),
    /// Quiet denial summaries on or off.
    SummarizeDenials(bool),
    /// The prompt notification's sound on or off.
    NotificationSound(bool),
    /// Start at login on (the autostart entry written for the running binary) or off (it
    /// is removed). Kept in the entry alone, not in the settings file.
    Autostart(bool),
    /// Ask about, or deny without asking, a network request of a run after a secret
    /// (docs/ARCHITECTURE.md, "After a secret").
    AfterSecret(AfterSecretMode),
    /// The write journal on or off.
    Journal(bool),
    /// The journal's total limit, bytes (`ctl config set journalLimit 2GiB`).
    JournalLimit(u64),
    /// One file's limit in the journal, bytes (`journalFileLimit 64MiB`).
    JournalFileLimit(u64),
    /// Whether the phone page may allow a sensitive or after-a-secret request
    /// (`webSensitive allow`, with a second tap on the page) or not (`deny`, the default).
    WebSensitive(WebSensitive),
}

/// The smallest journal limits allowed: a limit under them keeps nothing useful.
const MIN_JOURNAL_LIMIT: u64 = 1 << 20;
const MIN_JOURNAL_FILE_LIMIT: u64 = 1 << 10;

impl AppSettingChange {
    /// Whether the value is allowed (the wire is not trusted to have checked).
    pub fn check(&self) -> Result<(), OpError> {
        match *self {
            AppSettingChange::PromptTimeout(Some(secs)) if !PROMPT_TIMEOUT_SECS.contains(&secs) => {
                Err(OpError::Timeout(secs))
            }
            AppSettingChange::JournalLimit(bytes) if bytes < MIN_JOURNAL_LIMIT => {
                Err(OpError::JournalLimit(format!(
                    "a journal limit of {} is too small: at least {}",
                    format_size(bytes),
                    format_size(MIN_JOURNAL_LIMIT)
                )))
            }
            AppSettingChange::JournalFileLimit(bytes) if bytes < MIN_JOURNAL_FILE_LIMIT => {
                Err(OpError::JournalLimit(format!(
                    "a per-file journal limit of {} is too small: at least {}",
                    format_size(bytes),
                    format_size(MIN_JOURNAL_FILE_LIMIT)
                )))
            }
            _ => Ok(()),
        }
    }

    /// The change, in words: "prompt timeout: 30 s".
    pub fn describe(&self) -> String {
        let on_off = |on: bool| if on { "on" } else { "off" };
        match *self {
            AppSettingChange::PromptTimeout(Some(secs)) => format!("prompt timeout: {secs} s"),
            AppSettingChange::PromptTimeout(None) => "prompt timeout: off".to_owned(),
            AppSettingChange::SummarizeDenials(on) => {
                format!("quiet denial summaries: {}", on_off(on))
            }
            AppSettingChange::NotificationSound(on) => {
                format!("notification sound: {}", on_off(on))
            }
            AppSettingChange::Autostart(on) => format!("start at login: {}", on_off(on)),
            AppSettingChange::AfterSecret(mode) => {
                format!("network after a secret: {}", mode.as_str())
            }
            AppSettingChange::Journal(on) => format!("write journal: {}", on_off(on)),
            AppSettingChange::JournalLimit(bytes) => {
                format!("write journal limit: {}", format_size(bytes))
            }
            AppSettingChange::JournalFileLimit(bytes) => {
                format!("write journal per-file limit: {}", format_size(bytes))
            }
            AppSettingChange::WebSensitive(mode) => {
                format!("phone page, sensitive requests: {}", mode.as_str())
            }
        }
    }

    fn apply(&self, settings: &mut AppSettings) {
        match *self {
            AppSettingChange::PromptTimeout(secs) => settings.prompt_timeout_secs = secs,
            AppSettingChange::SummarizeDenials(on) => settings.summarize_denials = on,
            AppSettingChange::NotificationSound(on) => settings.notification_sound = on,
            AppSettingChange::AfterSecret(mode) => settings.after_secret = mode,
            AppSettingChange::Journal(on) => settings.journal = on,
            AppSettingChange::JournalLimit(bytes) => settings.journal_limit = Some(bytes),
            AppSettingChange::JournalFileLimit(bytes) => settings.journal_file_limit = Some(bytes),
            AppSettingChange::WebSensitive(mode) => settings.web_sensitive = mode,
            AppSettingChange::Autostart(_) => {}
        }
    }
}

/// What changing an app setting did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppSettingChanged {
    /// The file written: the settings file, or for autostart its entry.
    pub file: PathBuf,
    /// True when the change removed `file` (autostart off).
    #[serde(default)]
    pub removed: bool,
    /// The change, in words.
    pub description: String,
    /// The settings now.
    pub settings: AppSettingsView,
}

/// The app's own settings, as the file says now.
pub fn show_app_settings(service: &Service) -> Result<AppSettingsView, OpError> {
    let file = service.settings_file().ok_or(OpError::NoSettings)?;
    let settings = file.load()?;
    AppSettingsView::new(file.path(), &settings, &Autostart::from_env()?)
}

/// Changes one app setting: checked, written under the settings lock (atomic; a file that
/// does not parse is left alone), then applied at once: the timeout to the next prompt,
/// the after-secret rule to the next request, the summaries and the sound to the next
/// notification (those are read per
/// notification). Autostart writes or removes its entry instead (atomic, for the running
/// binary). Blocks.
pub fn change_app_setting(
    service: &Service,
    change: &AppSettingChange,
) -> Result<AppSettingChanged, OpError> {
    change.check()?;
    let file = service.settings_file().ok_or(OpError::NoSettings)?;
    let autostart = Autostart::from_env()?;
    let (written, removed, settings) = match *change {
        AppSettingChange::Autostart(on) => {
            autostart.set(on)?;
            (autostart.file().to_path_buf(), !on, file.load()?)
        }
        _ => {
            let settings = file.update(|s| change.apply(s))?;
            service
                .broker()
                .set_prompt_timeout(settings.prompt_timeout_secs.map(Duration::from_secs));
            service.broker().set_after_secret(settings.after_secret);
            if let Some(journal) = service.broker().journal() {
                journal.configure(settings.journal_config());
            }
            (file.path().to_path_buf(), false, settings)
        }
    };
    Ok(AppSettingChanged {
        file: written,
        removed,
        description: change.describe(),
        settings: AppSettingsView::new(file.path(), &settings, &autostart)?,
    })
}
