//! The activity as the surfaces read it: the persisted log filtered, the activity view's
//! page, which policy entry answered a logged request, and the entry "make this a grant"
//! would write (docs/ARCHITECTURE.md, "Shared operations").

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{absolute, OpError, PolicyFile};
use crate::activity::{read_log_counted, ActivityEntry, ActivityFilter};
use crate::decision::scope::PolicyTarget;
use crate::lexical::{AbsolutePath, RelativePath};
use crate::policy::change::ListField;
use crate::policy::merge::Source;
use crate::policy::view::{path_dirs_from_env, policy_view};
use crate::policy::FsList;
use crate::serving::service::Service;
use crate::surfaces::activity_rows::{ActivityPage, ActivityRow};
use crate::surfaces::insights;
use crate::surfaces::preview::{preview_grant, GrantPreview};
use crate::wire::protocol::FsOperation;

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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    let project = AbsolutePath::new(&logged.project)
        .map_err(|RelativePath(project)| OpError::Relative(project))?;
    let project = project.as_path();
    let home = service.home();
    let view = policy_view(project, home, &path_dirs_from_env());
    let Some(effective) = view.effective else {
        return Ok(None);
    };
    // A hard-denied write: a denyWriteAlways root first, as the decision looks.
    let candidates: &[FsList] = match fs {
        FsList::DenyWrite => &[FsList::DenyWriteAlways, FsList::DenyWrite],
        _ => std::slice::from_ref(&fs),
    };
    let found = candidates.iter().find_map(|&fs| {
        let list = ListField::Filesystem(fs);
        let shown = effective.lists.iter().find(|l| l.list == list)?;
        let names: Vec<String> = shown
            .entries
            .iter()
            .map(|e| e.explained.entry.clone())
            .collect();
        let counted = insights::hit_counts(&names, fs, std::slice::from_ref(logged), project, home);
        let i = counted.iter().position(|hits| hits.count > 0)?;
        Some((list, shown, names, i))
    });
    let Some((list, shown, names, i)) = found else {
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
    if !crate::surfaces::activity_rows::grantable(logged) {
        return Err(OpError::NotGrantable(logged.subject.clone()));
    }
    let project = absolute(Path::new(&logged.project))?;
    let path =
        AbsolutePath::new(&logged.subject).map_err(|RelativePath(path)| OpError::Relative(path))?;
    let path = path.as_path();
    Ok(preview_grant(
        path,
        operation,
        &project,
        service.home(),
        target,
    ))
}
