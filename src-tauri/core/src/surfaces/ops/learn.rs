//! Learning entries from the prompts a person answered: the review (proposals against
//! the target file as it is now) and the sessions to learn from, both read from the
//! activity log (docs/ARCHITECTURE.md, "Shared operations").

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{absolute, activity, OpError, PolicyFile};
use crate::activity::{ActivityFilter, Decider};
use crate::decision::scope::PolicyTarget;
use crate::policy::change::{ListField, PolicyChange};
use crate::policy::{load_effective, FsList};
use crate::serving::service::Service;
use crate::surfaces::insights::{self, Learned};
use crate::words::home_relative;

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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
        if matches!(entry.by, Decider::User | Decider::Web) {
            summary.answered += 1;
        }
    }
    let mut list: Vec<SessionSummary> = by_id.into_values().collect();
    list.sort_by(|a, b| b.last_ms.cmp(&a.last_ms).then_with(|| a.id.cmp(&b.id)));
    Ok(list)
}
