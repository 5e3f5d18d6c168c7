//! The operations the settings view and `ctl` share besides answering prompts: read the
//! policy in force, change a policy file, list and revoke session grants, read the
//! activity, learn entries from the answered prompts ([`learn`]), read and change the app's own settings ([`app_settings`]). One implementation, whichever surface asks; each one blocks (it reads or
//! writes files), so async callers run it on the blocking pool (docs/ARCHITECTURE.md,
//! "The answer path").

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::activity::{ActivityEntry, ActivityFilter};
use crate::app_settings::SettingsError;
use crate::decision::broker::PromptId;
use crate::decision::grants::Grant;
use crate::lexical::{AbsolutePath, RelativePath};
use crate::policy::cache::read_text;
use crate::policy::change::{ChangeError, ListField, PolicyChange};
use crate::policy::explain::{
    always_root_in_force, blocked_by_always, covered_by_other, explain, Explained,
};
use crate::policy::plugin::{LaterField, PluginConflict, PluginVersion, Version, PLUGIN_NAME};
use crate::policy::view::{
    explain_entry, path_dirs_from_env, policy_view, EffectiveView, PolicyView,
};
use crate::policy::{parse_overrides, EditOutcome, PolicyError, PolicyPaths, UndoError};
use crate::serving::service::Service;
use crate::surfaces::insights;

mod activity;
mod app_settings;
mod canary;
mod journal;
mod learn;
mod plugin_warnings;
mod remotes;
pub use activity::*;
pub use app_settings::*;
pub use canary::*;
pub use journal::*;
pub use learn::*;
pub use plugin_warnings::*;
pub use remotes::*;

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
    /// The entry would give very broad access and the change was not confirmed.
    #[error("{entry:?} in {list} would give very broad access: {reason}; it is saved only when confirmed")]
    Broad {
        /// The entry.
        entry: String,
        /// Its list.
        list: ListField,
        /// What it covers, in words.
        reason: String,
    },
    /// An allow entry equal to or under a denyReadAlways/denyWriteAlways root: it could
    /// never take effect, whatever anyone confirms.
    #[error("{entry:?} in {list} is equal to or under {root:?} of {always}, which no approval, session grant or allow entry may override; it is not saved")]
    UnderAlways {
        /// The entry.
        entry: String,
        /// Its list.
        list: ListField,
        /// The hard-denial root it is under.
        root: String,
        /// The list holding that root.
        always: ListField,
    },
    /// The change adds a field the user's opencode-landstrip rejects: with it in the file,
    /// every sandboxed command would fail.
    #[error("{field} is not saved: your {PLUGIN_NAME} ({version}) rejects it, and with it in the file every sandboxed command would fail; update the plugin to 0.19.9 or later first")]
    PluginRejects {
        /// The field.
        field: LaterField,
        /// The plugin detected.
        version: Version,
    },
    /// No policy write made through these operations is on record.
    #[error("there is no policy save to undo (only this app's own saves since it started)")]
    NothingToUndo,
    /// The file no longer holds what the last save wrote.
    #[error("{} changed since the last save, so it was not undone (undo restores a file only while it holds exactly what was saved)", file.display())]
    ChangedSince {
        /// The file.
        file: PathBuf,
    },
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
    /// This instance keeps no write journal (it could not open its directory).
    #[error("this instance keeps no write journal (see its log for why)")]
    NoJournal,
    /// A canary could not be added or removed, or an incident acted on.
    #[error(transparent)]
    Canary(#[from] crate::decision::canary::CanaryError),
    /// A journal limit out of range.
    #[error("{0}")]
    JournalLimit(String),
    /// The settings file cannot be read, does not parse, or cannot be written.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// The autostart entry cannot be read, written or removed.
    #[error(transparent)]
    Autostart(#[from] crate::app_settings::autostart::AutostartError),
    /// Only a filesystem read or write that was not hard-denied can become a policy entry.
    #[error("{0}: only a filesystem read or write a person answered or that was denied can become a policy entry")]
    NotGrantable(String),
    /// A remote's entry refused (a bad name or destination, a name taken).
    #[error(transparent)]
    Remote(#[from] crate::app_settings::remote::RemoteConfigError),
    /// No remote of that name.
    #[error("{0}: no remote of that name (see ctl remote list)")]
    NoRemote(String),
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
    /// Fields the file now holds that the user's opencode-landstrip rejects (or, its
    /// version unknown, may): the warning every edit of such a file carries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plugin_conflicts: Vec<PluginConflict>,
}

/// What an undo did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Undone {
    /// The file restored.
    pub file: PathBuf,
    /// True when the save had created it: it was removed again.
    pub removed: bool,
    /// The change undone, in words.
    pub description: String,
    /// Pending prompts the restored policy answers.
    pub also_answered: Vec<PromptId>,
}

/// An entry as it would be saved, checked before saving ([`check_entry`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryCheck {
    /// What landstrip will read it as; `broad` is set when saving it needs a confirmation.
    #[serde(flatten)]
    pub explained: Explained,
    /// An entry in force (same list) that already covers it.
    pub redundant_with: Option<String>,
    /// The file's list holds it already: saving changes nothing.
    pub duplicate: bool,
    /// Why it cannot be saved at all (validation as the plugin validates).
    pub invalid: Option<String>,
}

fn absolute(dir: &Path) -> Result<PathBuf, OpError> {
    let dir = AbsolutePath::new(dir).map_err(|RelativePath(dir)| OpError::Relative(dir))?;
    // The plugin keys files by the real path; so do we when the directory exists.
    Ok(std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.into_path_buf()))
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
/// never written. An entry that would give very broad access ([`check_entry`]'s `broad`)
/// is refused unless `allow_broad` says the user confirmed it. Pending prompts the new
/// policy covers are answered at once.
pub fn change_policy(
    service: &Service,
    file: &PolicyFile,
    change: &PolicyChange,
    allow_broad: bool,
) -> Result<Changed, OpError> {
    change_policy_all(service, file, std::slice::from_ref(change), allow_broad)
}

/// Applies `changes` in order to `file` in one read and one atomic write, the result
/// validated once more as a whole; if any change fails (or one gives very broad access
/// without `allow_broad`), nothing is written. Pending prompts the new policy covers are
/// answered at once.
pub fn change_policy_all(
    service: &Service,
    file: &PolicyFile,
    changes: &[PolicyChange],
    allow_broad: bool,
) -> Result<Changed, OpError> {
    for change in changes {
        change.check()?;
    }
    let file = absolute_file(file)?;
    if let Some(refused) = changes
        .iter()
        .find_map(|change| plugin_refusal(service, &file, change.later_field()?))
    {
        return Err(refused);
    }
    // Before the broad check: no confirmation lifts this one.
    for (list, entry) in changes.iter().filter_map(PolicyChange::new_entry) {
        if let Some(refused) = under_always(service, &file, None, list, entry) {
            return Err(refused);
        }
    }
    if !allow_broad {
        for (list, entry) in changes.iter().filter_map(PolicyChange::new_entry) {
            if let Some(reason) = broad_for(service, &file, None, list, entry) {
                return Err(OpError::Broad {
                    entry: entry.to_owned(),
                    list,
                    reason,
                });
            }
        }
    }
    let description = match changes {
        [] => "no change".to_owned(),
        [one] => one.describe(),
        many => many
            .iter()
            .map(PolicyChange::describe)
            .collect::<Vec<_>>()
            .join("; "),
    };
    let path = file.path(service.home());
    // Answered here, not by the file watch: the reply says what this change answered.
    let (outcome, also_answered) =
        service.write_policy(&path, description.clone(), |text| apply_all(text, changes))?;
    let written = matches!(outcome, EditOutcome::Changed(_));
    Ok(Changed {
        file: path,
        written,
        description,
        also_answered,
        plugin_conflicts: file_conflicts(service, &file),
    })
}

/// Each change applied to the text the previous one left (each edit validates its own
/// input and output); the final text is checked once more against the plugin's schema.
fn apply_all(text: Option<&str>, changes: &[PolicyChange]) -> Result<EditOutcome, PolicyError> {
    let mut current: Option<String> = text.map(str::to_owned);
    let mut changed = false;
    for change in changes {
        if let EditOutcome::Changed(next) = change.apply(current.as_deref())? {
            current = Some(next);
            changed = true;
        }
    }
    match current {
        Some(text) if changed => {
            parse_overrides(&text, Path::new("sandbox.json"))?;
            Ok(EditOutcome::Changed(text))
        }
        _ => Ok(EditOutcome::Unchanged),
    }
}

fn absolute_file(file: &PolicyFile) -> Result<PolicyFile, OpError> {
    Ok(match file {
        PolicyFile::Project(dir) => PolicyFile::Project(absolute(dir)?),
        PolicyFile::Global => PolicyFile::Global,
    })
}

/// Undoes the last policy write made through these operations (see
/// [`crate::policy::PolicyWriter::undo_last`]) and answers what the restored rules settle.
pub fn undo_last_save(service: &Service) -> Result<Undone, OpError> {
    let (undone, also_answered) = service.undo_policy_write().map_err(|e| match e {
        UndoError::NothingToUndo => OpError::NothingToUndo,
        UndoError::ChangedSince { file } => OpError::ChangedSince { file },
        UndoError::Policy(e) => e.into(),
    })?;
    Ok(Undone {
        removed: undone.removed,
        description: undone.description,
        file: undone.file,
        also_answered,
    })
}

/// Checks `entry` as it would be saved into `list` of `file` (replacing `replacing`,
/// when an entry is edited in place), without writing: what landstrip will read it as,
/// relative entries resolved against `project` (the file's own project, or for the
/// global file the project being looked at); whether it gives very broad access (saving
/// then needs the confirmation [`change_policy`] asks for — the same rule); whether an
/// entry in force already covers it; and why it cannot be saved at all, by the same
/// validation a save makes.
pub fn check_entry(
    service: &Service,
    file: &PolicyFile,
    project: Option<&Path>,
    list: ListField,
    entry: &str,
    replacing: Option<&str>,
) -> Result<EntryCheck, OpError> {
    let file = absolute_file(file)?;
    let project = match (&file, project) {
        (PolicyFile::Project(dir), _) => Some(dir.clone()),
        (PolicyFile::Global, Some(dir)) => Some(absolute(dir)?),
        (PolicyFile::Global, None) => None,
    };
    let home = service.home();
    let path_dirs = path_dirs_from_env();
    let base = project.as_deref().unwrap_or(home);
    let mut explained = explain_entry(list, entry, base, home, &path_dirs);
    explained.broad = broad_for(service, &file, project.as_deref(), list, entry);
    let change = match replacing {
        Some(old) => PolicyChange::Replace {
            list,
            old: old.to_owned(),
            new: entry.to_owned(),
        },
        None => PolicyChange::Add {
            list,
            entry: entry.to_owned(),
        },
    };
    // The same validation a save makes, on the file's text in memory.
    let path = file.path(home);
    let under = list
        .later_field()
        .and_then(|field| plugin_refusal(service, &file, field))
        .or_else(|| under_always(service, &file, project.as_deref(), list, entry));
    let (invalid, duplicate) = match change.check() {
        Err(e) => (Some(e.to_string()), false),
        Ok(()) if under.is_some() => (under.map(|e| e.to_string()), false),
        Ok(()) => match read_text(&path).and_then(|text| change.apply(text.as_deref())) {
            Err(e) => (Some(e.with_file(&path).to_string()), false),
            Ok(outcome) => (
                None,
                outcome == EditOutcome::Unchanged && replacing != Some(entry),
            ),
        },
    };
    let redundant_with = match (list, project.as_deref()) {
        (ListField::Filesystem(fs), Some(project)) if invalid.is_none() => {
            let view = policy_view(project, home, &path_dirs);
            let others: Vec<String> = view
                .effective
                .iter()
                .flat_map(|e| e.entries(list))
                .map(|(other, _)| other.to_owned())
                .filter(|other| Some(other.as_str()) != replacing)
                .collect();
            covered_by_other(entry, others.iter().map(String::as_str), fs, project, home)
                .map(str::to_owned)
        }
        _ => None,
    };
    Ok(EntryCheck {
        explained,
        redundant_with,
        duplicate,
        invalid,
    })
}

/// Why `entry` in `list` of `file` gives very broad access, if it does: for a project's
/// file, resolved against that project; for the global file, against every served
/// project and `project` (a relative entry means something different in each).
fn broad_for(
    service: &Service,
    file: &PolicyFile,
    project: Option<&Path>,
    list: ListField,
    entry: &str,
) -> Option<String> {
    let ListField::Filesystem(fs) = list else {
        return None;
    };
    let home = service.home();
    let path_dirs = path_dirs_from_env();
    let mut projects: Vec<PathBuf> = match file {
        PolicyFile::Project(dir) => vec![dir.clone()],
        PolicyFile::Global => service.list().into_iter().map(|p| p.dir).collect(),
    };
    projects.extend(project.map(Path::to_path_buf));
    if projects.is_empty() {
        // No project to resolve a relative entry against; absolute ones need none.
        projects.push(home.to_path_buf());
        let relative =
            !(entry.starts_with('/') || entry.starts_with('~') || entry.starts_with("$HOME"));
        if relative {
            return None;
        }
    }
    projects
        .iter()
        .find_map(|project| explain(entry, fs, project, home, &path_dirs).broad)
}

/// [`OpError::PluginRejects`] when the opencode-landstrip that loads `file` rejects
/// `field`: for a project's file, the one that project's opencode loads; for the global
/// file, the one any served project's (or the global config's) names. An unknown version
/// refuses nothing: the surfaces only warn then.
fn plugin_refusal(service: &Service, file: &PolicyFile, field: LaterField) -> Option<OpError> {
    let home = service.home();
    let projects: Vec<Option<PathBuf>> = match file {
        PolicyFile::Project(dir) => vec![Some(dir.clone())],
        PolicyFile::Global => std::iter::once(None)
            .chain(service.list().into_iter().map(|p| Some(p.dir)))
            .collect(),
    };
    projects
        .iter()
        .find_map(|dir| match PluginVersion::detect(home, dir.as_deref()) {
            PluginVersion::Known(version) if PluginVersion::Known(version).rejects(field) => {
                Some(OpError::PluginRejects { field, version })
            }
            _ => None,
        })
}

/// [`OpError::UnderAlways`] when `entry` added to `list` of `file` would be equal to or
/// under a hard-denial root: for a project's file, a root in force for that project (both
/// files as they are on disk); for the global file, one of the global file's own roots
/// (they apply to every project), a relative one resolved against every served project
/// and `project`.
fn under_always(
    service: &Service,
    file: &PolicyFile,
    project: Option<&Path>,
    list: ListField,
    entry: &str,
) -> Option<OpError> {
    let ListField::Filesystem(fs) = list else {
        return None;
    };
    let home = service.home();
    let found = match file {
        PolicyFile::Project(dir) => always_root_in_force(entry, fs, dir, home),
        PolicyFile::Global => {
            let guard = fs.blocked_by()?;
            let global = crate::policy::load_file(&file.path(home)).ok().flatten()?;
            let roots = global.filesystem.as_ref()?.list(guard)?;
            let mut projects: Vec<PathBuf> = service.list().into_iter().map(|p| p.dir).collect();
            projects.extend(project.map(Path::to_path_buf));
            if projects.is_empty() {
                projects.push(home.to_path_buf());
            }
            projects.iter().find_map(|dir| {
                blocked_by_always(entry, fs, roots.iter().map(String::as_str), dir, home)
                    .map(|root| (guard, root.to_owned()))
            })
        }
    }?;
    let (always, root) = found;
    Some(OpError::UnderAlways {
        entry: entry.to_owned(),
        list,
        root,
        always: ListField::Filesystem(always),
    })
}

/// The path of a policy file, resolved as [`change_policy`] resolves it (a project
/// directory made absolute and real); for a surface that opens the file itself (in the
/// user's editor), so the page names a target and never a raw path.
pub fn policy_file_path(service: &Service, file: &PolicyFile) -> Result<PathBuf, OpError> {
    Ok(absolute_file(file)?.path(service.home()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::activity::ActivityLog;
    use crate::decision::broker::Broker;
    use crate::policy::change::ListField;
    use crate::policy::FsList;
    use crate::serving::discovery::DiscoveryDir;
    use std::sync::Arc;

    struct Env {
        _root: tempfile::TempDir,
        home: PathBuf,
        project: PathBuf,
        service: Service,
    }

    impl Env {
        fn file(&self) -> PathBuf {
            self.project.join(".opencode/sandbox.json")
        }
    }

    /// A real service (no projects served) over a temporary home and project.
    fn env() -> Env {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().canonicalize().unwrap();
        let (home, project) = (base.join("home"), base.join("home/src/p"));
        std::fs::create_dir_all(&project).unwrap();
        let broker = Broker::new(Arc::new(ActivityLog::in_memory()));
        let service = Service::start(
            broker,
            home.clone(),
            DiscoveryDir::new(base.join("run")),
            None,
        );
        Env {
            _root: root,
            home,
            project,
            service,
        }
    }

    fn add(entry: &str) -> PolicyChange {
        PolicyChange::Add {
            list: ListField::Filesystem(FsList::AllowWrite),
            entry: entry.into(),
        }
    }

    #[tokio::test]
    async fn a_broad_entry_is_refused_without_the_confirmation() {
        let e = env();
        let file = PolicyFile::Project(e.project.clone());
        for broad in ["~", "/", "~/**"] {
            let err = change_policy(&e.service, &file, &add(broad), false).unwrap_err();
            assert!(matches!(err, OpError::Broad { .. }), "{broad}: {err}");
            assert!(!e.file().exists(), "{broad}: nothing written");
        }
        // The edit in place is held to the same rule.
        change_policy(&e.service, &file, &add("out"), false).unwrap();
        let before = std::fs::read(e.file()).unwrap();
        let replace = PolicyChange::Replace {
            list: ListField::Filesystem(FsList::AllowWrite),
            old: "out".into(),
            new: "~".into(),
        };
        let err = change_policy(&e.service, &file, &replace, false).unwrap_err();
        assert!(err.to_string().contains("your whole home folder"), "{err}");
        assert_eq!(std::fs::read(e.file()).unwrap(), before);
        // Confirmed, it is saved; an ordinary entry never needs the confirmation.
        assert!(
            change_policy(&e.service, &file, &replace, true)
                .unwrap()
                .written
        );
        // Deny lists take access away: never broad.
        let deny = PolicyChange::Add {
            list: ListField::Filesystem(FsList::DenyRead),
            entry: "/".into(),
        };
        assert!(
            change_policy(&e.service, &file, &deny, false)
                .unwrap()
                .written
        );
    }

    #[tokio::test]
    async fn an_allow_entry_under_an_always_root_is_refused_with_the_reason() {
        let e = env();
        let file = PolicyFile::Project(e.project.clone());
        let original = "{\n  \"filesystem\": {\"denyWriteAlways\": [\"locked\"], \"denyReadAlways\": [\"~/.ssh\"]}\n}\n";
        std::fs::create_dir_all(e.file().parent().unwrap()).unwrap();
        std::fs::write(e.file(), original).unwrap();
        let write = ListField::Filesystem(FsList::AllowWrite);
        let read = ListField::Filesystem(FsList::AllowRead);
        for (list, entry, root) in [
            (write, "locked", "locked"),
            (write, "locked/deep/er", "locked"),
            (read, "~/.ssh/config", "~/.ssh"),
        ] {
            let change = PolicyChange::Add {
                list,
                entry: entry.into(),
            };
            // Not even confirmed as broad.
            let err = change_policy(&e.service, &file, &change, true).unwrap_err();
            match &err {
                OpError::UnderAlways { root: r, .. } => assert_eq!(r, root, "{entry}"),
                other => panic!("{entry}: {other}"),
            }
            assert!(
                err.to_string()
                    .contains("no approval, session grant or allow entry may override"),
                "{err}"
            );
            assert_eq!(std::fs::read_to_string(e.file()).unwrap(), original);
            let check = check_entry(&e.service, &file, None, list, entry, None).unwrap();
            assert_eq!(check.invalid, Some(err.to_string()), "{entry}");
        }
        // The edit in place too, and a global entry under the global file's own root.
        let replace = PolicyChange::Replace {
            list: ListField::Filesystem(FsList::DenyWriteAlways),
            old: "locked".into(),
            new: "locked2".into(),
        };
        assert!(
            change_policy(&e.service, &file, &replace, false)
                .unwrap()
                .written
        );
        let into_locked2 = PolicyChange::Replace {
            list: write,
            old: "x".into(),
            new: "locked2/x".into(),
        };
        let err = change_policy(&e.service, &file, &into_locked2, false).unwrap_err();
        assert!(matches!(err, OpError::UnderAlways { .. }), "{err}");
        let global = PolicyFile::Global;
        let global_file = global.path(&e.home);
        std::fs::create_dir_all(global_file.parent().unwrap()).unwrap();
        std::fs::write(
            &global_file,
            r#"{"filesystem":{"denyWriteAlways":["/srv/vault"]}}"#,
        )
        .unwrap();
        let err = change_policy(&e.service, &global, &add("/srv/vault/a"), false).unwrap_err();
        assert!(matches!(err, OpError::UnderAlways { .. }), "{err}");
        // Beside a root, wider than it, or into another list: saved as usual.
        assert!(
            change_policy(&e.service, &file, &add("lockedx"), false)
                .unwrap()
                .written
        );
        assert!(
            change_policy(&e.service, &global, &add("/srv/vaultx"), false)
                .unwrap()
                .written
        );
        let deny = PolicyChange::Add {
            list: ListField::Filesystem(FsList::DenyWrite),
            entry: "locked2/y".into(),
        };
        assert!(
            change_policy(&e.service, &file, &deny, false)
                .unwrap()
                .written
        );
    }

    #[tokio::test]
    async fn an_edit_of_a_list_keeps_the_shell_and_windows_bytes() {
        let e = env();
        let file = PolicyFile::Project(e.project.clone());
        let shell = "\"shell\" : {  \"readAccess\":\"policy\" }";
        let windows =
            "\"windows\": {\n      \"appContainerMode\": \"lpac\",\"allowLoopback\" :false\n  }";
        let original = format!(
            "{{\n  {shell},\n  {windows},\n  \"filesystem\": {{ \"denyReadAlways\": [\"~/.ssh\"] }}\n}}\n"
        );
        std::fs::create_dir_all(e.file().parent().unwrap()).unwrap();
        std::fs::write(e.file(), &original).unwrap();
        assert!(
            change_policy(&e.service, &file, &add("out"), false)
                .unwrap()
                .written
        );
        let after = std::fs::read_to_string(e.file()).unwrap();
        assert!(after.contains(shell) && after.contains(windows), "{after}");
        assert!(after.contains("\"allowWrite\""), "{after}");
        let remove = PolicyChange::Remove {
            list: ListField::Filesystem(FsList::AllowWrite),
            entry: "out".into(),
        };
        change_policy(&e.service, &file, &remove, false).unwrap();
        let after = std::fs::read_to_string(e.file()).unwrap();
        assert!(after.contains(shell) && after.contains(windows), "{after}");
        assert!(
            after.starts_with(&format!("{{\n  {shell},\n  {windows},\n")),
            "{after}"
        );
    }

    #[tokio::test]
    async fn check_entry_explains_flags_and_validates_without_writing() {
        let e = env();
        let file = PolicyFile::Project(e.project.clone());
        std::fs::create_dir_all(e.home.join(".cargo")).unwrap();
        let list = ListField::Filesystem(FsList::AllowWrite);
        let check = |entry: &str, replacing: Option<&str>| {
            check_entry(&e.service, &file, None, list, entry, replacing).unwrap()
        };
        let cargo = check("~/.cargo", None);
        assert_eq!(cargo.explained.resolved, "~/.cargo");
        assert!(
            cargo.explained.meaning.contains("everything in it"),
            "{cargo:?}"
        );
        assert_eq!(cargo.invalid, None);
        assert!(check("~", None).explained.broad.is_some());
        // The default "." already covers a project folder.
        assert_eq!(check("build", None).redundant_with.as_deref(), Some("."));
        let empty = check("", None);
        assert!(empty.invalid.is_some(), "{empty:?}");
        change_policy(&e.service, &file, &add("out"), false).unwrap();
        assert!(check("out", None).duplicate);
        assert!(!check("out", Some("out")).duplicate);
        assert!(check("elsewhere", Some("missing")).invalid.is_some());
        // The global file: relative entries read against the project being looked at.
        let global = |entry: &str, project: Option<&Path>| {
            check_entry(&e.service, &PolicyFile::Global, project, list, entry, None).unwrap()
        };
        let build = global("build", Some(&e.project));
        assert_eq!(build.redundant_with.as_deref(), Some("."));
        assert!(
            build.explained.resolved.ends_with("src/p/build"),
            "{build:?}"
        );
        assert!(global("..", Some(&e.project)).explained.broad.is_none());
        assert!(global("../../..", Some(&e.project))
            .explained
            .broad
            .is_some());
        // No project at all (none served, none given): only absolute entries can be judged.
        assert!(global("../../..", None).explained.broad.is_none());
        assert!(global("~", None).explained.broad.is_some());
        // A file that does not parse: nothing can be saved into it.
        std::fs::write(e.file(), "{ nope").unwrap();
        let broken = check("x", None);
        assert!(
            broken
                .invalid
                .as_deref()
                .is_some_and(|m| m.contains("sandbox.json")),
            "{broken:?}"
        );
        assert_eq!(std::fs::read_to_string(e.file()).unwrap(), "{ nope");
    }

    #[tokio::test]
    async fn undo_restores_the_bytes_exactly_or_removes_a_created_file() {
        let e = env();
        let file = PolicyFile::Project(e.project.clone());
        assert!(matches!(
            undo_last_save(&e.service),
            Err(OpError::NothingToUndo)
        ));
        // Created by the save: the undo removes it again.
        change_policy(&e.service, &file, &add("out"), false).unwrap();
        assert!(e.file().exists());
        let undone = undo_last_save(&e.service).unwrap();
        assert!(undone.removed, "{undone:?}");
        assert_eq!(undone.file, e.file());
        assert!(!e.file().exists());
        assert!(matches!(
            undo_last_save(&e.service),
            Err(OpError::NothingToUndo)
        ));
        // An existing file, oddly formatted: its previous bytes come back exactly.
        let original = "{ \"filesystem\" : {\"allowWrite\":[\"a\" ,\"b\"]} }  \n\n";
        std::fs::create_dir_all(e.file().parent().unwrap()).unwrap();
        std::fs::write(e.file(), original).unwrap();
        change_policy(&e.service, &file, &add("out"), false).unwrap();
        let after_add = std::fs::read_to_string(e.file()).unwrap();
        let replace = PolicyChange::Replace {
            list: ListField::Filesystem(FsList::AllowWrite),
            old: "a".into(),
            new: "z".into(),
        };
        change_policy(&e.service, &file, &replace, false).unwrap();
        let undone = undo_last_save(&e.service).unwrap();
        assert!(!undone.removed);
        assert!(undone.description.contains("\"z\""), "{undone:?}");
        assert_eq!(
            std::fs::read_to_string(e.file()).unwrap(),
            after_add,
            "the last save only"
        );
        // Only one step back: the add stays.
        assert!(undo_last_save(&e.service).is_err());
        std::fs::write(e.file(), original).unwrap();
        change_policy(&e.service, &file, &add("out"), false).unwrap();
        undo_last_save(&e.service).unwrap();
        assert_eq!(std::fs::read(e.file()).unwrap(), original.as_bytes());
    }

    #[tokio::test]
    async fn undo_refuses_after_an_external_edit() {
        let e = env();
        let file = PolicyFile::Project(e.project.clone());
        change_policy(&e.service, &file, &add("out"), false).unwrap();
        let edited = "{\"filesystem\": {\"allowWrite\": [\"out\", \"by-hand\"]}}\n";
        std::fs::write(e.file(), edited).unwrap();
        let err = undo_last_save(&e.service).unwrap_err();
        assert!(matches!(err, OpError::ChangedSince { .. }), "{err}");
        assert!(err.to_string().contains("changed since"), "{err}");
        assert_eq!(std::fs::read_to_string(e.file()).unwrap(), edited);
        // Removed by hand: still refused, nothing re-created.
        std::fs::remove_file(e.file()).unwrap();
        assert!(undo_last_save(&e.service).is_err());
        assert!(!e.file().exists());
    }

    #[tokio::test]
    async fn own_writes_are_told_from_anyone_elses() {
        let e = env();
        let file = PolicyFile::Project(e.project.clone());
        assert!(!e.service.is_own_write(&e.file()), "nothing written yet");
        change_policy(&e.service, &file, &add("out"), false).unwrap();
        assert!(e.service.is_own_write(&e.file()), "our save");
        // Undone: the file is gone again, as our undo left it.
        undo_last_save(&e.service).unwrap();
        assert!(e.service.is_own_write(&e.file()), "our undo");
        change_policy(&e.service, &file, &add("out"), false).unwrap();
        let edited = "{\"filesystem\": {\"allowWrite\": [\"out\", \"by-hand\"]}}\n";
        std::fs::write(e.file(), edited).unwrap();
        assert!(!e.service.is_own_write(&e.file()), "an edit by hand");
        // A prompt's "for project" answer writes the file too: news to the settings view.
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let project = crate::policy::project::Project::new(e.project.clone(), e.home.clone());
        let mut conn = e.service.broker().connect(Arc::new(project), tx);
        let line = format!(
            r#"{{"kind":"filesystem","state":"query","query_id":"1","operation":"write","path":"{}","reason":"allow_miss"}}"#,
            e.home.join("elsewhere/a").display()
        );
        conn.on_line(line.as_bytes(), &mut Vec::new());
        let id = e.service.broker().pending()[0].id;
        let request = crate::decision::answer::AnswerRequest::new(
            crate::decision::answer::ChoiceKey::Project,
        );
        let answered = e.service.broker().answer(id, &request).unwrap();
        assert_eq!(answered.persisted.map(|(f, _)| f), Some(e.file()));
        assert!(!e.service.is_own_write(&e.file()), "a prompt's answer");
    }
}
