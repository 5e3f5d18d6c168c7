//! The operations the settings view and `ctl` share besides answering prompts: read the
//! policy in force, change a policy file, list and revoke session grants, read the
//! activity, read and change the app's own settings. One implementation, whichever surface asks; each one blocks (it reads or
//! writes files), so async callers run it on the blocking pool (docs/ARCHITECTURE.md,
//! "The answer path").

use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::activity::{read_log, ActivityEntry, ActivityFilter};
use crate::broker::PromptId;
use crate::grants::Grant;
use crate::insights;
use crate::policy::change::{ChangeError, ListField, PolicyChange};
use crate::policy::view::{path_dirs_from_env, policy_view, EffectiveView, PolicyView};
use crate::policy::{EditOutcome, PolicyError, PolicyPaths};
use crate::service::Service;
use crate::settings::{AppSettings, SettingsError};

/// Which sandbox.json a change goes to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "file", content = "dir")]
pub enum PolicyFile {
    /// `~/.config/opencode/sandbox.json`.
    Global,
    /// `<dir>/.opencode/sandbox.json`.
    Project(PathBuf),
}

impl PolicyFile {
    /// The file's path.
    pub fn path(&self, home: &Path) -> PathBuf {
        match self {
            PolicyFile::Global => crate::policy::global_path(home),
            PolicyFile::Project(dir) => PolicyPaths::new(home, dir).project,
        }
    }
}

/// Why an operation was not carried out. Nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    /// A project directory must be absolute (the server does not share the client's cwd).
    #[error("{}: the directory must be absolute", .0.display())]
    Relative(PathBuf),
    /// The change makes no sense before any file is read.
    #[error(transparent)]
    Change(#[from] ChangeError),
    /// The file cannot be read, does not parse, or cannot be written.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// No live grant has that id.
    #[error("no live session grant {0}")]
    NoGrant(u64),
    /// A prompt timeout outside [`PROMPT_TIMEOUT_SECS`].
    #[error(
        "a prompt timeout of {0} s is not allowed: give {min} to {max} seconds, or off",
        min = PROMPT_TIMEOUT_SECS.start(),
        max = PROMPT_TIMEOUT_SECS.end()
    )]
    Timeout(u64),
    /// This instance keeps no settings file (only a test service lacks one).
    #[error("this instance has no settings file")]
    NoSettings,
    /// The settings file cannot be read, does not parse, or cannot be written.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// The activity log could not be read.
    #[error("reading the activity log {}: {source}", file.display())]
    Activity {
        /// The log.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// What a policy change did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Changed {
    /// The file written (or that would have been).
    pub file: PathBuf,
    /// False when the file already said so (nothing was written).
    pub written: bool,
    /// The change, in words.
    pub description: String,
    /// Pending prompts the policy now answers.
    pub also_answered: Vec<PromptId>,
}

fn absolute(dir: &Path) -> Result<PathBuf, OpError> {
    if dir.is_absolute() {
        // The plugin keys files by the real path; so do we when the directory exists.
        Ok(std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()))
    } else {
        Err(OpError::Relative(dir.to_path_buf()))
    }
}

/// The policy in force for project `dir`: both files and the effective result, each
/// filesystem entry with how many requests it answered and when it last did (from the
/// activity log; see [`insights::hit_counts`]).
pub fn show_policy(service: &Service, dir: &Path) -> Result<PolicyView, OpError> {
    let dir = absolute(dir)?;
    let mut view = policy_view(&dir, service.home(), &path_dirs_from_env());
    if let Some(effective) = view.effective.as_mut() {
        let filter = ActivityFilter {
            project: Some(dir.clone()),
            ..ActivityFilter::default()
        };
        // The counts are an aid, not the policy: an unreadable log leaves them out
        // rather than hiding what is in force.
        match activity(service, &filter) {
            Ok(log) => fill_hits(effective, &log, &dir, service.home()),
            Err(e) => tracing::warn!("policy hit counts: {e}"),
        }
    }
    Ok(view)
}

/// Sets the hit count and last hit of every filesystem entry of `effective`.
fn fill_hits(effective: &mut EffectiveView, log: &[ActivityEntry], project: &Path, home: &Path) {
    for list in &mut effective.lists {
        let ListField::Filesystem(fs) = list.list else {
            continue;
        };
        let names: Vec<String> = list
            .entries
            .iter()
            .map(|e| e.explained.entry.clone())
            .collect();
        let counted = insights::hit_counts(&names, fs, log, project, home);
        for (entry, hits) in list.entries.iter_mut().zip(counted) {
            entry.hits = Some(hits.count);
            entry.last_hit_ms = hits.last_ms;
        }
    }
}

/// Applies `change` to `file`, minimally and atomically; a file that does not parse is
/// never written. Pending prompts the new policy covers are answered at once.
pub fn change_policy(
    service: &Service,
    file: &PolicyFile,
    change: &PolicyChange,
) -> Result<Changed, OpError> {
    change.check()?;
    let file = match file {
        PolicyFile::Project(dir) => PolicyFile::Project(absolute(dir)?),
        PolicyFile::Global => PolicyFile::Global,
    };
    let path = file.path(service.home());
    let outcome = change.apply_to_file(&path)?;
    let written = matches!(outcome, EditOutcome::Changed(_));
    // The file watch would notice too; answering now makes the effect immediate.
    let also_answered = if written {
        service.broker().sweep()
    } else {
        Vec::new()
    };
    Ok(Changed {
        file: path,
        written,
        description: change.describe(),
        also_answered,
    })
}

/// The path of a policy file, resolved as [`change_policy`] resolves it (a project
/// directory made absolute and real); for a surface that opens the file itself (in the
/// user's editor), so the page names a target and never a raw path.
pub fn policy_file_path(service: &Service, file: &PolicyFile) -> Result<PathBuf, OpError> {
    let file = match file {
        PolicyFile::Project(dir) => PolicyFile::Project(absolute(dir)?),
        PolicyFile::Global => PolicyFile::Global,
    };
    Ok(file.path(service.home()))
}

/// The live session grants.
pub fn grants(service: &Service) -> Vec<Grant> {
    service.broker().grants()
}

/// Revokes a session grant: the next matching query asks again.
pub fn revoke(service: &Service, id: u64) -> Result<(), OpError> {
    if service.broker().revoke_grant(id) {
        Ok(())
    } else {
        Err(OpError::NoGrant(id))
    }
}

/// The activity, from the persisted log when there is one (it survives restarts), else
/// from memory.
pub fn activity(service: &Service, filter: &ActivityFilter) -> Result<Vec<ActivityEntry>, OpError> {
    let log = service.broker().activity();
    match log.path() {
        Some(path) => {
            log.flush();
            read_log(path, filter).map_err(|source| OpError::Activity {
                file: path.to_path_buf(),
                source,
            })
        }
        None => {
            let filter = filter.prepared();
            let mut entries: Vec<ActivityEntry> = log
                .recent()
                .into_iter()
                .filter(|e| filter.accepts(e))
                .collect();
            if let Some(limit) = filter.limit {
                let skip = entries.len().saturating_sub(limit);
                entries.drain(..skip);
            }
            Ok(entries)
        }
    }
}

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
}

impl AppSettingsView {
    fn new(file: &Path, settings: &AppSettings) -> Self {
        Self {
            file: file.to_path_buf(),
            prompt_timeout_secs: settings.prompt_timeout_secs,
            summarize_denials: settings.summarize_denials,
            notification_sound: settings.notification_sound,
        }
    }
}

/// One change to the app's own settings: `{"key":"promptTimeout","value":30}` (`null`:
/// off), `{"key":"summarizeDenials","value":false}`, `{"key":"notificationSound",…}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "key", content = "value", rename_all = "camelCase")]
pub enum AppSettingChange {
    /// Deny an unanswered prompt once after this many seconds; None: never.
    PromptTimeout(Option<u64>),
    /// Quiet denial summaries on or off.
    SummarizeDenials(bool),
    /// The prompt notification's sound on or off.
    NotificationSound(bool),
}

impl AppSettingChange {
    /// Whether the value is allowed (the wire is not trusted to have checked).
    pub fn check(&self) -> Result<(), OpError> {
        match *self {
            AppSettingChange::PromptTimeout(Some(secs)) if !PROMPT_TIMEOUT_SECS.contains(&secs) => {
                Err(OpError::Timeout(secs))
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
        }
    }

    fn apply(&self, settings: &mut AppSettings) {
        match *self {
            AppSettingChange::PromptTimeout(secs) => settings.prompt_timeout_secs = secs,
            AppSettingChange::SummarizeDenials(on) => settings.summarize_denials = on,
            AppSettingChange::NotificationSound(on) => settings.notification_sound = on,
        }
    }
}

/// What changing an app setting did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppSettingChanged {
    /// The settings file written.
    pub file: PathBuf,
    /// The change, in words.
    pub description: String,
    /// The settings now.
    pub settings: AppSettingsView,
}

/// The app's own settings, as the file says now.
pub fn app_settings(service: &Service) -> Result<AppSettingsView, OpError> {
    let file = service.settings_file().ok_or(OpError::NoSettings)?;
    let settings = file.load()?;
    Ok(AppSettingsView::new(file.path(), &settings))
}

/// Changes one app setting: checked, written under the settings lock (atomic; a file that
/// does not parse is left alone), then applied at once: the timeout to the next prompt,
/// the summaries and the sound to the next notification (those are read per
/// notification).
pub fn change_app_setting(
    service: &Service,
    change: &AppSettingChange,
) -> Result<AppSettingChanged, OpError> {
    change.check()?;
    let file = service.settings_file().ok_or(OpError::NoSettings)?;
    let settings = file.update(|s| change.apply(s))?;
    service
        .broker()
        .set_prompt_timeout(settings.prompt_timeout_secs.map(Duration::from_secs));
    Ok(AppSettingChanged {
        file: file.path().to_path_buf(),
        description: change.describe(),
        settings: AppSettingsView::new(file.path(), &settings),
    })
}
