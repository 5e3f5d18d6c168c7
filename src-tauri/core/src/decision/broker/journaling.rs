//! The write journal's hooks (docs/ARCHITECTURE.md, "The write journal"): a held write a
//! person allowed, or a session grant, has its path's prior state recorded before the
//! allow is written; a run's end fingerprints what it touched. Writes the policy files
//! allow are not journaled (landstrip would allow them itself at the next launch).

use std::sync::Arc;

use super::{Broker, ConnId};
use crate::activity::Decider;
use crate::journal::{Held, Journal};
use crate::wire::protocol::{Action, FsOperation, Query, QueryKind};

impl Broker {
    /// Journals allowed writes from now on (set once at start); false when already set.
    pub fn set_journal(&self, journal: Arc<Journal>) -> bool {
        self.inner.journal.set(journal).is_ok()
    }

    /// The write journal, when one was set.
    pub fn journal(&self) -> Option<&Arc<Journal>> {
        self.inner.journal.get()
    }

    /// Whether an answer `action` by `by` to a write is journaled: a person's allow, a
    /// session grant's, and (`after_answer`) what the sweep after a person's answer allows.
    pub(super) fn journals(action: Action, by: Decider, after_answer: bool) -> bool {
        action == Action::Allow
            && match by {
                Decider::User | Decider::Web | Decider::SessionGrant => true,
                Decider::Policy => after_answer,
                _ => false,
            }
    }

    /// Records `query`'s prior state if it is a write and the journal is on. Called
    /// before its allow is sent.
    pub(super) fn journal_query(
        &self,
        conn: ConnId,
        session: Option<&str>,
        project: &std::path::Path,
        query: &Query,
    ) {
        let Some(journal) = self.journal() else {
            return;
        };
        let QueryKind::Filesystem(fs) = &query.kind else {
            return;
        };
        if fs.operation != FsOperation::Write {
            return;
        }
        let process = query.process.as_ref();
        journal.record(&Held {
            conn,
            session,
            project,
            path: &fs.path,
            syscall: query.syscall.as_deref(),
            requested_path: fs.requested_path.as_deref(),
            cwd: process.and_then(|p| p.cwd.as_deref()),
        });
    }

    /// A run ended: the journal fingerprints what it wrote.
    pub(super) fn journal_run_ended(&self, conn: ConnId) {
        if let Some(journal) = self.journal() {
            journal.end_run(conn);
        }
    }
}
