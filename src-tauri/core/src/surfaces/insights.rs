//! What the activity log says about the policy: how often each entry answered a request
//! and when it last did (hit counts), and which entries a session's answers suggest
//! (learn from a session). Both read activity entries; neither touches a file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::activity::{ActivityEntry, Decider, Outcome};
use crate::decision::scope::{policy_entry, session_scope, PolicyTarget};
use crate::policy::sensitive;
use crate::policy::{resolve_entry, FsList, PolicyMatcher, SandboxConfig};

/// How often one entry of a list answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hits {
    /// The entry as the file spells it.
    pub entry: String,
    /// Requests it answered.
    pub count: u64,
    /// When it last did (ms since the epoch).
    pub last_ms: Option<u64>,
}

/// Which list answered an activity entry, if the policy did: allowRead or allowWrite for
/// a request the policy allowed, denyWrite for a hard-denied write (or denyWriteAlways:
/// see [`answered_by`]), denyReadAlways for a hard-denied read.
pub fn answering_list(entry: &ActivityEntry) -> Option<FsList> {
    if entry.kind != "filesystem" {
        return None;
    }
    match (entry.by, entry.outcome, entry.operation.as_str()) {
        (Decider::Policy, Outcome::Allow, "read") => Some(FsList::AllowRead),
        (Decider::Policy, Outcome::Allow, "write") => Some(FsList::AllowWrite),
        (Decider::HardDenial, Outcome::Deny, "write") => Some(FsList::DenyWrite),
        (Decider::HardDenial, Outcome::Deny, "read") => Some(FsList::DenyReadAlways),
        _ => None,
    }
}

/// Whether an entry of `list` may have answered `entry`: its [`answering_list`], and for a
/// hard-denied write denyWriteAlways as well as denyWrite.
pub fn answered_by(entry: &ActivityEntry, list: FsList) -> bool {
    answering_list(entry).is_some_and(|answering| {
        answering == list || (answering == FsList::DenyWrite && list == FsList::DenyWriteAlways)
    })
}

/// Counts, for each entry of `list`, the logged requests it answered: a request the policy
/// allowed (or hard-denied, for denyWrite) counts for the most specific entry that covers
/// it. Entries that answered nothing are listed with a count of 0.
pub fn hit_counts(
    entries: &[String],
    list: FsList,
    log: &[ActivityEntry],
    project: &Path,
    home: &Path,
) -> Vec<Hits> {
    // One matcher per entry, compiled once; specificity by the resolved entry's length.
    let compiled: Vec<(PolicyMatcher, usize)> = entries
        .iter()
        .map(|entry| {
            let specificity = resolve_entry(entry, project, home).as_os_str().len();
            (
                PolicyMatcher::single(list, entry, project, home),
                specificity,
            )
        })
        .collect();
    let mut hits: Vec<Hits> = entries
        .iter()
        .map(|entry| Hits {
            entry: entry.clone(),
            count: 0,
            last_ms: None,
        })
        .collect();
    for logged in log {
        if Path::new(&logged.project) != project || !answered_by(logged, list) {
            continue;
        }
        let path = Path::new(&logged.subject);
        let best = compiled
            .iter()
            .enumerate()
            .filter(|(_, (matcher, _))| matcher.matches(list, path))
            .max_by_key(|(_, (_, specificity))| *specificity)
            .map(|(i, _)| i);
        if let Some(i) = best {
            hits[i].count += 1;
            hits[i].last_ms = Some(hits[i].last_ms.map_or(logged.ts, |t| t.max(logged.ts)));
        }
    }
    hits
}

/// One entry a session's answers suggest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Proposal {
    /// Which list it goes into.
    #[serde(serialize_with = "list_key")]
    pub list: FsList,
    /// The entry as it would be written into the target file.
    pub entry: String,
    /// The directory it covers.
    pub root: PathBuf,
    /// How many of the session's answered requests it covers.
    pub covers: usize,
    /// Up to three of them, for the review.
    pub examples: Vec<String>,
}

fn list_key<S: serde::Serializer>(list: &FsList, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(list.json_key())
}

/// What to leave out of a proposal, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeftOut {
    /// The request's path.
    pub path: String,
    /// Why it is not proposed.
    pub reason: String,
}

/// A proposed set of entries and what was left out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Learned {
    /// The entries to review, one per list and root.
    pub proposals: Vec<Proposal>,
    /// Requests that are not proposed (sensitive, already allowed).
    pub left_out: Vec<LeftOut>,
}

/// Turns the filesystem requests a person allowed (or a session grant then allowed) in
/// `log` into entries for the `target` file: each widened to its session scope,
/// deduplicated, sensitive locations and what `current` already allows left out.
pub fn learn(
    log: &[ActivityEntry],
    project: &Path,
    home: &Path,
    current: &SandboxConfig,
    target: PolicyTarget,
) -> Learned {
    let matcher = PolicyMatcher::new(current, project, home);
    let mut by_root: BTreeMap<(u8, PathBuf), Proposal> = BTreeMap::new();
    let mut learned = Learned::default();
    for logged in log {
        let allowed_by_person = matches!(
            logged.by,
            Decider::User | Decider::Web | Decider::SessionGrant
        );
        if logged.kind != "filesystem"
            || logged.outcome != Outcome::Allow
            || !allowed_by_person
            || Path::new(&logged.project) != project
        {
            continue;
        }
        let list = match logged.operation.as_str() {
            "read" => FsList::AllowRead,
            "write" => FsList::AllowWrite,
            _ => continue,
        };
        let path = Path::new(&logged.subject);
        if let Some(found) = sensitive::classify(path, home) {
            learned.left_out.push(LeftOut {
                path: logged.subject.clone(),
                reason: format!("sensitive: {}", found.what),
            });
            continue;
        }
        let allowed_now = match list {
            FsList::AllowRead => matcher.read_allowed(path),
            _ => matcher.write_allowed(path),
        };
        if allowed_now {
            learned.left_out.push(LeftOut {
                path: logged.subject.clone(),
                reason: "already allowed by the policy".to_owned(),
            });
            continue;
        }
        let root = session_scope(path, project, home);
        if !sensitive::covered_by(&root, home).is_empty() {
            learned.left_out.push(LeftOut {
                path: logged.subject.clone(),
                reason: "its scope would cover a sensitive location".to_owned(),
            });
            continue;
        }
        let key = (list as u8, root.clone());
        let proposal = by_root.entry(key).or_insert_with(|| Proposal {
            list,
            entry: policy_entry(&root, target, project, home),
            root,
            covers: 0,
            examples: Vec::new(),
        });
        proposal.covers += 1;
        if proposal.examples.len() < 3 && !proposal.examples.contains(&logged.subject) {
            proposal.examples.push(logged.subject.clone());
        }
    }
    // A root under another proposed root of the same list adds nothing.
    let all: Vec<(FsList, PathBuf)> = by_root.values().map(|p| (p.list, p.root.clone())).collect();
    learned.proposals = by_root
        .into_values()
        .filter(|p| {
            !all.iter()
                .any(|(list, root)| *list == p.list && *root != p.root && p.root.starts_with(root))
        })
        .collect();
    learned
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::defaults;

    const PROJECT: &str = "/home/dev/proj";
    const HOME: &str = "/home/dev";

    fn logged(op: &str, subject: &str, by: Decider, outcome: Outcome, ts: u64) -> ActivityEntry {
        ActivityEntry {
            ts,
            project: PROJECT.into(),
            session: Some("ses_1".into()),
            kind: "filesystem".into(),
            operation: op.into(),
            subject: subject.into(),
            exe: None,
            pid: None,
            outcome,
            by,
            detail: None,
            command: None,
            chain: Vec::new(),
        }
    }

    #[test]
    fn each_request_counts_for_the_most_specific_entry() {
        let entries = vec![
            ".".to_owned(),
            "~/.cache".to_owned(),
            "~/.cache/pip".to_owned(),
            "/unused".to_owned(),
        ];
        let log = vec![
            logged(
                "write",
                "/home/dev/proj/a.txt",
                Decider::Policy,
                Outcome::Allow,
                10,
            ),
            logged(
                "write",
                "/home/dev/.cache/pip/x",
                Decider::Policy,
                Outcome::Allow,
                20,
            ),
            logged(
                "write",
                "/home/dev/.cache/pip/y",
                Decider::Policy,
                Outcome::Allow,
                30,
            ),
            logged(
                "write",
                "/home/dev/.cache/z",
                Decider::Policy,
                Outcome::Allow,
                40,
            ),
            // Not answered by the policy: not a hit.
            logged(
                "write",
                "/home/dev/proj/b",
                Decider::User,
                Outcome::Allow,
                50,
            ),
            logged(
                "read",
                "/home/dev/proj/c",
                Decider::Policy,
                Outcome::Allow,
                60,
            ),
        ];
        let hits = hit_counts(
            &entries,
            FsList::AllowWrite,
            &log,
            Path::new(PROJECT),
            Path::new(HOME),
        );
        let counts: Vec<(&str, u64, Option<u64>)> = hits
            .iter()
            .map(|h| (h.entry.as_str(), h.count, h.last_ms))
            .collect();
        assert_eq!(
            counts,
            vec![
                (".", 1, Some(10)),
                ("~/.cache", 1, Some(40)),
                ("~/.cache/pip", 2, Some(30)),
                ("/unused", 0, None),
            ]
        );
    }

    #[test]
    fn hard_denials_count_for_deny_write() {
        let entries = vec!["**/.env".to_owned()];
        let log = vec![logged(
            "write",
            "/home/dev/proj/.env",
            Decider::HardDenial,
            Outcome::Deny,
            5,
        )];
        let hits = hit_counts(
            &entries,
            FsList::DenyWrite,
            &log,
            Path::new(PROJECT),
            Path::new(HOME),
        );
        assert_eq!(hits[0].count, 1);
    }

    #[test]
    fn a_session_becomes_deduplicated_widened_entries_without_sensitive_ones() {
        let log = vec![
            logged(
                "write",
                "/home/dev/.cache/go/a",
                Decider::User,
                Outcome::Allow,
                1,
            ),
            logged(
                "write",
                "/home/dev/.cache/go/b",
                Decider::SessionGrant,
                Outcome::Allow,
                2,
            ),
            logged(
                "write",
                "/var/tmp/build/x.o",
                Decider::User,
                Outcome::Allow,
                3,
            ),
            // Reads ask only under denyRead (/home by default).
            logged(
                "read",
                "/home/dev/notes/x.md",
                Decider::User,
                Outcome::Allow,
                4,
            ),
            logged(
                "read",
                "/opt/sdk/lib/x.so",
                Decider::User,
                Outcome::Allow,
                4,
            ),
            logged(
                "write",
                "/home/dev/.ssh/known_hosts",
                Decider::User,
                Outcome::Allow,
                5,
            ),
            logged(
                "write",
                "/home/dev/proj/out/a",
                Decider::User,
                Outcome::Allow,
                6,
            ),
            logged("write", "/etc/denied", Decider::User, Outcome::Deny, 7),
        ];
        let learned = learn(
            &log,
            Path::new(PROJECT),
            Path::new(HOME),
            &defaults(),
            PolicyTarget::Project,
        );
        let proposed: Vec<(FsList, &str, usize)> = learned
            .proposals
            .iter()
            .map(|p| (p.list, p.entry.as_str(), p.covers))
            .collect();
        assert_eq!(
            proposed,
            vec![
                (FsList::AllowRead, "~/notes", 1),
                (FsList::AllowWrite, "~/.cache", 2),
                (FsList::AllowWrite, "/var/tmp/build", 1),
            ]
        );
        let reasons: Vec<(&str, &str)> = learned
            .left_out
            .iter()
            .map(|l| (l.path.as_str(), l.reason.as_str()))
            .collect();
        assert!(reasons.contains(&(
            "/home/dev/.ssh/known_hosts",
            "sensitive: SSH keys and configuration"
        )));
        assert!(reasons.contains(&("/home/dev/proj/out/a", "already allowed by the policy")));
        assert!(reasons.contains(&("/opt/sdk/lib/x.so", "already allowed by the policy")));
    }
}
