//! Reading the persisted activity log back: filtered, newest last, from the rotated file
//! and the current one, so what was asked and answered survives a restart. Used by the
//! activity view and `ctl activity`.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{ActivityEntry, Outcome};

/// Which entries to return.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityFilter {
    /// Only this project's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<PathBuf>,
    /// Only allowed, or only denied (withdrawn and reported entries are neither).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// Only entries whose subject, program, command (or a process of its chain), session,
    /// project or detail contain this text (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grep: Option<String>,
    /// Only one session's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Only entries at or after this time (ms since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_ms: Option<u64>,
    /// At most this many, the newest (None: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

/// Allowed or denied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// The query was allowed.
    Allow,
    /// The query was denied.
    Deny,
}

impl ActivityFilter {
    /// Whether `entry` passes. `grep` must already be lowercase (see [`Self::prepared`]).
    pub fn accepts(&self, entry: &ActivityEntry) -> bool {
        if let Some(project) = &self.project {
            if Path::new(&entry.project) != project {
                return false;
            }
        }
        match self.decision {
            Some(Decision::Allow) if entry.outcome != Outcome::Allow => return false,
            Some(Decision::Deny) if entry.outcome != Outcome::Deny => return false,
            _ => {}
        }
        if self.session.is_some() && entry.session != self.session {
            return false;
        }
        if self.since_ms.is_some_and(|since| entry.ts < since) {
            return false;
        }
        if let Some(needle) = &self.grep {
            let fields = [
                Some(entry.subject.as_str()),
                entry.exe.as_deref(),
                entry.session.as_deref(),
                Some(entry.project.as_str()),
                entry.detail.as_deref(),
                Some(entry.operation.as_str()),
                entry.command.as_deref(),
            ];
            let matches = |f: &str| f.to_lowercase().contains(needle.as_str());
            if !fields.into_iter().flatten().any(matches)
                && !entry.chain.iter().any(|link| matches(link))
            {
                return false;
            }
        }
        true
    }

    /// The same filter with `grep` lowercased once.
    pub fn prepared(&self) -> Self {
        let mut filter = self.clone();
        filter.grep = filter
            .grep
            .take()
            .map(|g| g.to_lowercase())
            .filter(|g| !g.is_empty());
        filter
    }
}

/// The rotated file that holds the entries before the current file's.
pub fn rotated_path(path: &Path) -> PathBuf {
    let mut old = path.as_os_str().to_owned();
    old.push(".1");
    PathBuf::from(old)
}

/// Reads the log at `path` (and its rotated predecessor), oldest first, keeping the
/// entries `filter` accepts (the newest `limit` of them). Lines that do not parse (a torn
/// last line, a newer format) are skipped. A missing file is an empty log.
///
/// Quick over a long log (the settings window's activity filter runs it at each key):
/// lines that cannot match the text are left out before any parsing, and the rest are
/// parsed newest first (all of them, for [`read_log_counted`]'s total).
pub fn read_log(path: &Path, filter: &ActivityFilter) -> io::Result<Vec<ActivityEntry>> {
    read_log_counted(path, filter).map(|(entries, _)| entries)
}

/// [`read_log`], plus how many entries the filter accepted in all (beyond `limit`), so a
/// view can say "showing 200 of 9,871". Every candidate line is parsed for the total; the
/// text pre-filter still spares the lines that cannot match.
pub fn read_log_counted(
    path: &Path,
    filter: &ActivityFilter,
) -> io::Result<(Vec<ActivityEntry>, usize)> {
    let filter = filter.prepared();
    let mut files = Vec::new();
    for file in [rotated_path(path), path.to_path_buf()] {
        match std::fs::read(&file) {
            Ok(bytes) => files.push(bytes),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    let needle = filter.grep.as_deref().filter(|n| plain(n));
    let candidates: Vec<&[u8]> = files
        .iter()
        .flat_map(|bytes| bytes.split(|b| *b == b'\n'))
        .filter(|line| needle.is_none_or(|n| may_contain(line, n)))
        .collect();
    let limit = filter.limit.unwrap_or(usize::MAX);
    let mut kept = Vec::new();
    let mut total = 0;
    for line in candidates.into_iter().rev() {
        let Ok(entry) = serde_json::from_slice::<ActivityEntry>(line) else {
            continue;
        };
        if filter.accepts(&entry) {
            total += 1;
            if kept.len() < limit {
                kept.push(entry);
            }
        }
    }
    kept.reverse();
    Ok((kept, total))
}

/// Whether a (lowercase) text can be looked for in raw lines: printable ASCII, with
/// nothing JSON would escape.
fn plain(needle: &str) -> bool {
    needle
        .bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
}

/// False only when no field of `line` can contain `needle` (plain, lowercase): the line
/// is ASCII without escapes, so every string in it appears there verbatim, and it does
/// not contain the text in any case. Anything else (non-ASCII text, whose lowercase may
/// be ASCII; an escape) is left to the parsed comparison.
fn may_contain(line: &[u8], needle: &str) -> bool {
    if !line.is_ascii() || line.contains(&b'\\') {
        return true;
    }
    let needle = needle.as_bytes();
    // `contains` on one byte is memchr: most lines are ruled out by it alone.
    let first = needle[0];
    if !line.contains(&first) && !line.contains(&first.to_ascii_uppercase()) {
        return false;
    }
    line.windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::activity::{now_ms, ActivityLog, Decider};

    fn entry(i: u64, project: &str, outcome: Outcome, subject: &str) -> ActivityEntry {
        ActivityEntry {
            ts: 1_000 + i,
            project: project.to_owned(),
            session: Some(format!("ses_{}", i % 2)),
            kind: "filesystem".into(),
            operation: "write".into(),
            subject: subject.to_owned(),
            exe: Some("/usr/bin/Python3".into()),
            pid: Some(7),
            outcome,
            by: Decider::User,
            detail: None,
            command: None,
            chain: Vec::new(),
        }
    }

    #[test]
    fn the_persisted_log_is_read_back_filtered_across_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("activity.jsonl");
        // A tiny rotation bound: the first entries end up in activity.jsonl.1.
        let log = ActivityLog::open(&path, 600).unwrap();
        for i in 0..10 {
            let outcome = if i % 3 == 0 {
                Outcome::Deny
            } else {
                Outcome::Allow
            };
            let project = if i < 5 { "/p/a" } else { "/p/b" };
            log.record(entry(i, project, outcome, &format!("/x/file{i}")));
            log.flush();
        }
        log.close();
        assert!(rotated_path(&path).exists(), "the test rotates the log");
        let all = read_log(&path, &ActivityFilter::default()).unwrap();
        // Rotation keeps one old file: everything since the last rotation is there, in order.
        assert!(all.len() >= 3, "{}", all.len());
        assert!(all.windows(2).all(|w| w[0].ts < w[1].ts));
        assert_eq!(all.last().unwrap().subject, "/x/file9");

        let denied_b = read_log(
            &path,
            &ActivityFilter {
                project: Some("/p/b".into()),
                decision: Some(Decision::Deny),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(denied_b
            .iter()
            .all(|e| e.project == "/p/b" && e.outcome == Outcome::Deny));
        assert!(denied_b.iter().any(|e| e.subject == "/x/file9"));

        let grep = read_log(
            &path,
            &ActivityFilter {
                grep: Some("PYTHON3".into()),
                limit: Some(2),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(grep.len(), 2);
        assert_eq!(grep[1].subject, "/x/file9", "the newest are kept");
        let (page, total) = read_log_counted(
            &path,
            &ActivityFilter {
                limit: Some(2),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(page.len(), 2);
        assert_eq!(total, all.len(), "the total counts beyond the limit");
        let none = read_log(
            &path,
            &ActivityFilter {
                grep: Some("nothing like it".into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn the_quick_text_check_never_drops_a_match() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("activity.jsonl");
        let line = |i, subject: &str| {
            serde_json::to_string(&entry(i, "/p", Outcome::Allow, subject)).unwrap()
        };
        // The Kelvin sign lowercases to an ASCII k, written raw or as an escape; a quote
        // is escaped in the file; other lines are plain ASCII.
        let lines = [
            line(1, "/x/Kelvin"),
            line(2, "/x/\u{212a}elvin"),
            r#"{"ts":3,"project":"/p","kind":"filesystem","operation":"write","subject":"/x/\u212aelvin","outcome":"allow","by":"user"}"#.to_owned(),
            line(4, "/x/say \"hi\""),
            line(5, "/x/other"),
        ];
        std::fs::write(&path, lines.join("\n")).unwrap();
        let grep = |text: &str, limit| {
            read_log(
                &path,
                &ActivityFilter {
                    grep: Some(text.into()),
                    limit,
                    ..Default::default()
                },
            )
            .unwrap()
            .into_iter()
            .map(|e| e.ts)
            .collect::<Vec<_>>()
        };
        assert_eq!(grep("kelvin", None), vec![1001, 1002, 3]);
        assert_eq!(
            grep("KELVIN", Some(2)),
            vec![1002, 3],
            "the newest are kept"
        );
        assert_eq!(grep("say \"hi", None), vec![1004]);
        assert_eq!(grep("other", None), vec![1005]);
        assert!(grep("absent", None).is_empty());
        let all = read_log(
            &path,
            &ActivityFilter {
                limit: Some(3),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(
            all.iter().map(|e| e.ts).collect::<Vec<_>>(),
            vec![3, 1004, 1005]
        );
    }

    #[test]
    fn torn_lines_are_skipped_and_a_missing_log_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("activity.jsonl");
        assert!(read_log(&path, &ActivityFilter::default())
            .unwrap()
            .is_empty());
        let good = serde_json::to_string(&entry(1, "/p", Outcome::Allow, "/a")).unwrap();
        std::fs::write(&path, format!("{good}\n{{\"ts\":12,\"proj\n{good}")).unwrap();
        let read = read_log(&path, &ActivityFilter::default()).unwrap();
        assert_eq!(read.len(), 2);
        let since = read_log(
            &path,
            &ActivityFilter {
                since_ms: Some(now_ms()),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(since.is_empty());
    }
}
