//! The operations the settings view and `ctl` share besides answering prompts: read the
//! policy in force, change a policy file, list and revoke session grants, read the
//! activity. One implementation, whichever surface asks; each one blocks (it reads or
//! writes files), so async callers run it on the blocking pool (docs/ARCHITECTURE.md,
//! "The answer path").

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::activity::{read_log_counted, ActivityEntry, ActivityFilter, ActivityPage, ActivityRow};
use crate::broker::PromptId;
use crate::grants::Grant;
use crate::insights;
use crate::policy::change::{ChangeError, ListField, PolicyChange};
use crate::policy::merge::Source;
use crate::policy::preview::{preview_grant, GrantPreview};
use crate::policy::view::{path_dirs_from_env, policy_view, EffectiveView, PolicyView};
use crate::policy::{EditOutcome, PolicyError, PolicyPaths};
use crate::protocol::FsOperation;
use crate::scope::PolicyTarget;
use crate::service::Service;

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
    /// Only a filesystem read or write that was not hard-denied can become a policy entry.
    #[error("{0}: only a filesystem read or write a person answered or that was denied can become a policy entry")]
    NotGrantable(String),
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
/// from memory; oldest first.
pub fn activity(service: &Service, filter: &ActivityFilter) -> Result<Vec<ActivityEntry>, OpError> {
    activity_counted(service, filter).map(|(entries, _)| entries)
}

/// [`activity`] and how many entries matched in all, beyond the filter's limit.
fn activity_counted(
    service: &Service,
    filter: &ActivityFilter,
) -> Result<(Vec<ActivityEntry>, usize), OpError> {
    let log = service.broker().activity();
    match log.path() {
        Some(path) => {
            log.flush();
            read_log_counted(path, filter).map_err(|source| OpError::Activity {
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
            let total = entries.len();
            if let Some(limit) = filter.limit {
                let skip = entries.len().saturating_sub(limit);
                entries.drain(..skip);
            }
            Ok((entries, total))
        }
    }
}

/// The activity view's page: the newest entries `filter` accepts (at most its limit),
/// newest first, each with its words and follow-ups, and how many matched in all.
pub fn activity_page(service: &Service, filter: &ActivityFilter) -> Result<ActivityPage, OpError> {
    let (entries, total) = activity_counted(service, filter)?;
    let home = service.home();
    let rows = entries
        .into_iter()
        .rev()
        .map(|entry| ActivityRow::new(entry, home))
        .collect();
    Ok(ActivityPage { rows, total })
}

/// The policy entry that answered a logged request ("show the entry that allowed it").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AnsweringEntry {
    /// The project whose policy it is.
    pub project: PathBuf,
    /// The layer it comes from.
    pub source: Source,
    /// Its file (none for a bundled default).
    pub file: Option<PathBuf>,
    /// Its list, e.g. `filesystem.allowWrite`.
    pub list: ListField,
    /// The entry as its file spells it.
    pub entry: String,
}

/// Which entry of the project's effective policy, as it is on disk now, answers the
/// logged request `logged`: the most specific one that covers it, by the same matching as
/// the hit counts ([`insights::hit_counts`]). None when the policy did not answer it or
/// no entry covers it any more (it was removed since).
pub fn explain_activity(
    service: &Service,
    logged: &ActivityEntry,
) -> Result<Option<AnsweringEntry>, OpError> {
    let Some(fs) = insights::answering_list(logged) else {
        return Ok(None);
    };
    // The log names the project as the broker keyed it; hit_counts compares it as is.
    let project = Path::new(&logged.project);
    if !project.is_absolute() {
        return Err(OpError::Relative(project.to_path_buf()));
    }
    let home = service.home();
    let view = policy_view(project, home, &path_dirs_from_env());
    let Some(effective) = view.effective else {
        return Ok(None);
    };
    let list = ListField::Filesystem(fs);
    let Some(shown) = effective.lists.iter().find(|l| l.list == list) else {
        return Ok(None);
    };
    let names: Vec<String> = shown
        .entries
        .iter()
        .map(|e| e.explained.entry.clone())
        .collect();
    let counted = insights::hit_counts(&names, fs, std::slice::from_ref(logged), project, home);
    let Some(i) = counted.iter().position(|hits| hits.count > 0) else {
        return Ok(None);
    };
    let source = shown.entries[i].source;
    let file = match source {
        Source::Default => None,
        Source::Global => Some(PolicyFile::Global.path(home)),
        Source::Project => Some(PolicyFile::Project(project.to_path_buf()).path(home)),
    };
    Ok(Some(AnsweringEntry {
        project: project.to_path_buf(),
        source,
        file,
        list,
        entry: names[i].clone(),
    }))
}

/// The entry "make this a grant" would write for the logged request `logged` into the
/// `target` file: the same preview the prompt dialog shows for a project or global grant
/// (its options, the session scope suggested). Nothing is written; saving goes through
/// [`change_policy`].
pub fn activity_grant_preview(
    service: &Service,
    logged: &ActivityEntry,
    target: PolicyTarget,
) -> Result<GrantPreview, OpError> {
    let operation = match logged.operation.as_str() {
        "read" => FsOperation::Read,
        "write" => FsOperation::Write,
        _ => return Err(OpError::NotGrantable(logged.subject.clone())),
    };
    if !crate::activity::rows::grantable(logged) {
        return Err(OpError::NotGrantable(logged.subject.clone()));
    }
    let project = absolute(Path::new(&logged.project))?;
    let path = Path::new(&logged.subject);
    if !path.is_absolute() {
        return Err(OpError::Relative(path.to_path_buf()));
    }
    Ok(preview_grant(
        path,
        operation,
        &project,
        service.home(),
        target,
    ))
}
