//! The activity as the activity view shows it: each entry with its words (the project
//! home-relative, the program as every surface names it) and which follow-ups apply to
//! it, decided here rather than in the page.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::activity::{ActivityEntry, Decider, Outcome};
use crate::origin::program::{program_label, program_name};
use crate::wire::protocol::ProcessInfo;
use crate::words::home_relative;

/// One activity entry, ready to show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityRow {
    /// The entry as logged (handed back to ask about it).
    pub entry: ActivityEntry,
    /// The project, home-relative.
    pub project_shown: String,
    /// The target, home-relative for a path.
    pub subject_shown: String,
    /// The program in one phrase: "python3.11 (pid 2434)".
    pub program: String,
    /// Just its executable's name ("python3.11"), when logged.
    pub program_name: Option<String>,
    /// The policy answered it: "show the entry that allowed it" applies.
    pub explainable: bool,
    /// A person answered it, or it was denied, and a policy entry could allow it from now
    /// on: "make this a grant" applies.
    pub grantable: bool,
}

impl ActivityRow {
    /// The row for `entry`, paths written relative to `home`.
    pub fn new(entry: ActivityEntry, home: &Path) -> Self {
        let process = ProcessInfo {
            pid: entry.pid,
            exe: entry.exe.clone(),
            cwd: None,
        };
        let subject_shown = if entry.kind == "filesystem" {
            home_relative(Path::new(&entry.subject), home)
        } else {
            entry.subject.clone()
        };
        Self {
            project_shown: home_relative(Path::new(&entry.project), home),
            subject_shown,
            program: program_label(Some(&process)),
            program_name: program_name(Some(&process)),
            explainable: crate::surfaces::insights::answering_list(&entry).is_some(),
            grantable: grantable(&entry),
            entry,
        }
    }
}

/// Whether an entry of the policy could allow `entry` from now on. Only filesystem reads
/// and writes: a network answer is never persisted (docs/ARCHITECTURE.md, "The answer
/// path"), and a hard denial stays denied whatever the allow lists say. Nor what a
/// canary denied: an allow entry over a canary would let landstrip allow the read
/// without asking, and the wire would never trip again.
pub fn grantable(entry: &ActivityEntry) -> bool {
    let fs_request =
        entry.kind == "filesystem" && matches!(entry.operation.as_str(), "read" | "write");
    let denied = matches!(entry.outcome, Outcome::Deny | Outcome::Withdrawn);
    fs_request
        && !matches!(entry.by, Decider::HardDenial | Decider::Canary)
        && (matches!(entry.by, Decider::User | Decider::Web) || denied)
}

/// A page of the activity: the newest matching entries, newest first, and how many
/// matched in all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityPage {
    /// At most the filter's limit, newest first.
    pub rows: Vec<ActivityRow>,
    /// How many entries the filter accepts, shown or not.
    pub total: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: &str, operation: &str, outcome: Outcome, by: Decider) -> ActivityEntry {
        ActivityEntry {
            ts: 1,
            project: "/home/dev/p".into(),
            session: None,
            kind: kind.into(),
            operation: operation.into(),
            subject: "/home/dev/p/out.txt".into(),
            exe: Some("/usr/bin/python3.11".into()),
            pid: Some(42),
            outcome,
            by,
            detail: None,
            command: None,
            chain: Vec::new(),
        }
    }

    #[test]
    fn rows_carry_words_and_the_follow_ups_that_apply() {
        let home = Path::new("/home/dev");
        let row = ActivityRow::new(
            entry("filesystem", "write", Outcome::Allow, Decider::Policy),
            home,
        );
        assert_eq!(row.project_shown, "~/p");
        assert_eq!(row.subject_shown, "~/p/out.txt");
        assert_eq!(row.program, "python3.11 (pid 42)");
        assert_eq!(row.program_name.as_deref(), Some("python3.11"));
        assert!(row.explainable && !row.grantable);

        let asked = |outcome, by| {
            ActivityRow::new(entry("filesystem", "write", outcome, by), home).grantable
        };
        assert!(asked(Outcome::Allow, Decider::User));
        assert!(asked(Outcome::Deny, Decider::User));
        assert!(asked(Outcome::Deny, Decider::Timeout));
        assert!(asked(Outcome::Withdrawn, Decider::RunEnded));
        assert!(
            !asked(Outcome::Deny, Decider::HardDenial),
            "denyWrite wins anyway"
        );
        assert!(
            !asked(Outcome::Deny, Decider::Canary),
            "an entry over a canary would defuse it"
        );
        assert!(!asked(Outcome::Allow, Decider::SessionGrant));
        let net = ActivityRow::new(
            entry("network", "connect", Outcome::Deny, Decider::User),
            home,
        );
        assert!(
            !net.grantable && !net.explainable,
            "network answers are never persisted"
        );
        assert_eq!(net.subject_shown, "/home/dev/p/out.txt");
    }
}
