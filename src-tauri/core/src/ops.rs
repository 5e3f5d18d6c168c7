//! The operations the settings view and `ctl` share besides answering prompts: read the
//! policy in force, change a policy file (one change or several in one write), learn
//! entries from the answered prompts, list and revoke session grants, read the activity. One implementation, whichever surface asks; each one blocks (it reads or
//! writes files), so async callers run it on the blocking pool (docs/ARCHITECTURE.md,
//! "The answer path").

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::activity::Decider;
use crate::activity::{read_log, ActivityEntry, ActivityFilter};
use crate::broker::PromptId;
use crate::display::home_relative;
use crate::grants::Grant;
use crate::insights::{self, Learned};
use crate::policy::change::{ChangeError, ListField, PolicyChange};
use crate::policy::view::{path_dirs_from_env, policy_view, EffectiveView, PolicyView};
use crate::policy::{
    edit_file, load_effective, parse_overrides, EditOutcome, FsList, PolicyError, PolicyPaths,
};
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
    change_policy_all(service, file, std::slice::from_ref(change))
}

/// Applies `changes` in order to `file` in one read and one atomic write, the result
/// validated once more as a whole; if any change fails, nothing is written. Pending
/// prompts the new policy covers are answered at once.
pub fn change_policy_all(
    service: &Service,
    file: &PolicyFile,
    changes: &[PolicyChange],
) -> Result<Changed, OpError> {
    for change in changes {
        change.check()?;
    }
    let file = match file {
        PolicyFile::Project(dir) => PolicyFile::Project(absolute(dir)?),
        PolicyFile::Global => PolicyFile::Global,
    };
    let path = file.path(service.home());
    let written = write_policy(&path, |text| apply_all(text, changes))?;
    // The file watch would notice too; answering now makes the effect immediate.
    let also_answered = if written {
        service.broker().sweep()
    } else {
        Vec::new()
    };
    let description = match changes {
        [] => "no change".to_owned(),
        [one] => one.describe(),
        many => many
            .iter()
            .map(PolicyChange::describe)
            .collect::<Vec<_>>()
            .join("; "),
    };
    Ok(Changed {
        file: path,
        written,
        description,
        also_answered,
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

/// THE write of a policy file by the shared operations: the file read once (missing:
/// `None`), `edit` applied, and the result written atomically when it changed
/// ([`edit_file`]: concurrent edits of one path serialised, a symlink refused). True if
/// it wrote.
fn write_policy(
    path: &Path,
    edit: impl FnOnce(Option<&str>) -> Result<EditOutcome, PolicyError>,
) -> Result<bool, OpError> {
    let outcome = edit_file(path, edit)?;
    Ok(matches!(outcome, EditOutcome::Changed(_)))
}

/// Which answered prompts to learn from, and for which file. Every filter given applies;
/// none: the project's whole log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LearnRequest {
    /// Only this opencode session's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Only at or after this time (ms since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_ms: Option<u64>,
    /// Only at or before this time (ms since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_ms: Option<u64>,
    /// The file the entries are for: `project` or `global`.
    pub target: PolicyTarget,
}

/// One list of the target file as it is now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CurrentList {
    /// `allowRead` or `allowWrite` (as a proposal names its list).
    #[serde(serialize_with = "fs_list_key")]
    pub list: FsList,
    /// Its entries, as the file spells them.
    pub entries: Vec<String>,
}

fn fs_list_key<S: serde::Serializer>(list: &FsList, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(list.json_key())
}

/// What [`learn`] proposes, with what the review needs beside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LearnReview {
    /// The target file.
    pub file: PathBuf,
    /// The target file, home-relative.
    pub shown: String,
    /// Which file it is.
    pub target: PolicyTarget,
    /// The target file's allowRead and allowWrite now (the diff's context).
    pub current: Vec<CurrentList>,
    /// How many logged requests were looked at.
    pub considered: usize,
    /// The proposals and what was left out.
    #[serde(flatten)]
    pub learned: Learned,
}

impl LearnReview {
    /// The changes that save every proposal into the target file.
    pub fn changes(&self) -> Vec<PolicyChange> {
        self.learned
            .proposals
            .iter()
            .map(|p| PolicyChange::Add {
                list: ListField::Filesystem(p.list),
                entry: p.entry.clone(),
            })
            .collect()
    }

    /// The target as a [`PolicyFile`] of project `dir`.
    pub fn policy_file(&self, dir: &Path) -> PolicyFile {
        match self.target {
            PolicyTarget::Global => PolicyFile::Global,
            PolicyTarget::Project => PolicyFile::Project(dir.to_path_buf()),
        }
    }
}

/// Turns the prompts answered in project `dir` (one session, a time range, or all) into
/// entries for the target file ([`insights::learn`]), against the policy in force now;
/// a policy file that does not parse refuses it (nothing can be saved into it either).
pub fn learn(
    service: &Service,
    dir: &Path,
    request: &LearnRequest,
) -> Result<LearnReview, OpError> {
    let dir = absolute(dir)?;
    let home = service.home();
    let loaded = load_effective(home, &dir)?;
    let (file, overrides) = match request.target {
        PolicyTarget::Project => (loaded.paths.project.clone(), loaded.project.as_ref()),
        PolicyTarget::Global => (loaded.paths.global.clone(), loaded.global.as_ref()),
    };
    let current = [FsList::AllowRead, FsList::AllowWrite]
        .into_iter()
        .map(|list| CurrentList {
            list,
            entries: overrides
                .and_then(|o| o.filesystem.as_ref())
                .and_then(|fs| fs.list(list))
                .map(<[String]>::to_vec)
                .unwrap_or_default(),
        })
        .collect();
    let filter = ActivityFilter {
        project: Some(dir.clone()),
        session: request.session.clone(),
        since_ms: request.since_ms,
        ..ActivityFilter::default()
    };
    let mut log = activity(service, &filter)?;
    if let Some(until) = request.until_ms {
        log.retain(|e| e.ts <= until);
    }
    let learned = insights::learn(&log, &dir, home, &loaded.config, request.target);
    Ok(LearnReview {
        shown: home_relative(&file, home),
        file,
        target: request.target,
        current,
        considered: log.len(),
        learned,
    })
}

/// One opencode session seen in a project's activity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    /// The session id.
    pub id: String,
    /// Its first logged request (ms since the epoch).
    pub first_ms: u64,
    /// Its last.
    pub last_ms: u64,
    /// How many of its prompts a person answered.
    pub answered: usize,
}

/// The sessions seen in project `dir`'s activity, the most recently active first.
pub fn sessions(service: &Service, dir: &Path) -> Result<Vec<SessionSummary>, OpError> {
    let dir = absolute(dir)?;
    let filter = ActivityFilter {
        project: Some(dir),
        ..ActivityFilter::default()
    };
    let mut by_id: std::collections::HashMap<String, SessionSummary> = Default::default();
    for entry in activity(service, &filter)? {
        let Some(id) = entry.session else { continue };
        let summary = by_id.entry(id.clone()).or_insert(SessionSummary {
            id,
            first_ms: entry.ts,
            last_ms: entry.ts,
            answered: 0,
        });
        summary.first_ms = summary.first_ms.min(entry.ts);
        summary.last_ms = summary.last_ms.max(entry.ts);
        if entry.by == Decider::User {
            summary.answered += 1;
        }
    }
    let mut list: Vec<SessionSummary> = by_id.into_values().collect();
    list.sort_by(|a, b| b.last_ms.cmp(&a.last_ms).then_with(|| a.id.cmp(&b.id)));
    Ok(list)
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
