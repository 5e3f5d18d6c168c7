//! One run's connection as the broker sees it: lines in, immediate answers out.

use std::sync::Arc;

use super::{Broker, ConnId, RecentIds, Verdict};
use crate::activity::{now_ms, ActivityEntry, Decider, Outcome};
use crate::grants::GrantKey;
use crate::project::Project;
use crate::protocol::{decode_line, response_line, Action, IgnoreReason, Line, TerminalTrap};

/// The broker's side of one connection. Dropping it withdraws the connection's prompts.
pub struct Connection {
    broker: Broker,
    id: ConnId,
    project: Arc<Project>,
    key: GrantKey,
    seen: RecentIds,
    lines: u64,
    deferred: Vec<ActivityEntry>,
}

impl Connection {
    pub(super) fn new(broker: Broker, id: ConnId, project: Arc<Project>) -> Self {
        let key = GrantKey {
            project: project.dir().to_path_buf(),
            session: None,
        };
        Self {
            broker,
            id,
            project,
            key,
            seen: RecentIds::default(),
            lines: 0,
            deferred: Vec::new(),
        }
    }

    /// This connection's id.
    pub fn id(&self) -> ConnId {
        self.id
    }

    /// The opencode session named by the hello line, if any.
    pub fn session(&self) -> Option<&str> {
        self.key.session.as_deref()
    }

    /// Handles one line from the peer. Returns the response to write now, if the query
    /// was settled without asking; a prompt's answer arrives later on the channel.
    pub fn on_line(&mut self, line: &[u8]) -> Option<Vec<u8>> {
        self.lines += 1;
        match decode_line(line) {
            Line::Hello(session) => {
                // Only the first line may name the session: a later one could re-key grants.
                if self.lines == 1 {
                    self.key.session = Some(session.as_str().to_owned());
                }
                None
            }
            Line::Query(query) => {
                if !self.seen.insert(&query.id) {
                    return None;
                }
                let query = Arc::new(query);
                let action = self.decide(query.clone())?;
                Some(response_line(&query.id, action))
            }
            Line::Terminal(trap) => {
                self.report(&trap);
                None
            }
            // A query whose id is fine but whose body we cannot use: deny it rather than
            // leave its syscall held until the run ends.
            Line::Ignored(IgnoreReason::MalformedTrap {
                pending: Some(id),
                problem,
            }) => {
                tracing::debug!(conn = self.id, ?problem, "denying a query we cannot read");
                self.seen
                    .insert(&id)
                    .then(|| response_line(&id, Action::Deny))
            }
            Line::Ignored(reason) => {
                tracing::debug!(conn = self.id, ?reason, "ignored a line");
                None
            }
        }
    }

    fn decide(&mut self, query: Arc<crate::protocol::Query>) -> Option<Action> {
        let broker = &self.broker;
        let (action, by) = if broker.is_closed() {
            (Action::Deny, Decider::Quit)
        } else {
            match super::decide(&self.project, &broker.inner.grants, &self.key, &query) {
                Verdict::Auto(action, by) => (action, by),
                Verdict::Ask if broker.paused_denial() => (Action::Deny, Decider::Paused),
                Verdict::Ask => {
                    return broker.open_prompt(self.id, &self.project, &self.key, query)
                }
            }
        };
        // Recorded after the answer is on its way (see flush_activity): the log is not
        // on the round trip.
        self.deferred
            .push(broker.auto_entry(&self.project, &self.key, &query, action, by));
        Some(action)
    }

    /// Hands the records of this batch's automatic answers to the activity log. Called
    /// by the connection task once it has written the answers.
    pub fn flush_activity(&mut self) {
        if !self.deferred.is_empty() {
            self.broker
                .inner
                .activity
                .record_all(std::mem::take(&mut self.deferred));
        }
    }

    fn report(&self, trap: &TerminalTrap) {
        let (kind, operation, subject) = trap.summary();
        self.broker.inner.activity.record(ActivityEntry {
            ts: now_ms(),
            project: self.project.dir().to_string_lossy().into_owned(),
            session: self.key.session.clone(),
            kind,
            operation,
            subject,
            exe: None,
            pid: None,
            outcome: Outcome::Reported,
            by: Decider::Report,
            detail: None,
        });
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.flush_activity();
        self.broker.disconnect(self.id);
    }
}
