//! One run's connection as the broker sees it: lines in, immediate answers out.

use std::sync::Arc;

use super::{Broker, BrokerEvent, ConnId, RecentIds, Verdict};
use crate::activity::{now_ms, ActivityEntry, ActivityRef, Decider, Outcome};
use crate::decision::grants::{Asker, GrantKey};
use crate::journal::Held;
use crate::policy::project::Project;
use crate::wire::protocol::{
    parse_line, write_response, Access, Action, FsOperation, IgnoreReason, Line, Query,
    TerminalTrap,
};

/// The broker's side of one connection. Dropping it withdraws the connection's prompts.
pub struct Connection {
    broker: Broker,
    id: ConnId,
    project: Arc<Project>,
    key: GrantKey,
    seen: RecentIds,
    lines: u64,
    reports: u64,
    deferred: Vec<u8>,
    /// When the run began (its earlier requests are those since).
    started_ms: u64,
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
            reports: 0,
            deferred: Vec::new(),
            started_ms: now_ms(),
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

    /// Handles one line from the peer, appending to `out` the answer to write now when
    /// the query was settled without asking; a prompt's answer arrives later on the
    /// channel.
    pub fn on_line(&mut self, line: &[u8], out: &mut Vec<u8>) {
        self.lines += 1;
        let parsed = parse_line(line);
        // Hot path: a well-formed query the rules settle is answered from the borrowed
        // fields, without building the owned query at all.
        let mut counted = false;
        let mut tripped = false;
        if let Some((id, access)) = parsed.query() {
            if !self.seen.insert(&id) {
                return;
            }
            let (pid, exe) = parsed.process();
            match self.auto(&access, exe) {
                // A canary read: its run is stopped from the owned query below.
                Some((_, Decider::Canary)) => tripped = true,
                Some((action, by)) => {
                    if Broker::journals(action, by, false) {
                        let (syscall, requested, cwd) = parsed.fs_detail();
                        self.journal(&access, syscall, requested, cwd);
                    }
                    write_response(out, &id, action);
                    self.defer_record(&access, pid, exe, action, by);
                    return;
                }
                None => {}
            }
            counted = true;
        }
        match parsed.into_line() {
            Line::Hello(session) => {
                // Only the first line may name the session: a later one could re-key grants.
                if self.lines == 1 {
                    self.key.session = Some(session.as_str().to_owned());
                }
            }
            Line::Query(query) => {
                if !counted && !self.seen.insert(&query.id) {
                    return;
                }
                if tripped {
                    self.trip_canary(&query, out);
                    return;
                }
                if !counted {
                    let (pid, exe) = process_of(&query);
                    if let Some((action, by)) = self.auto(&query.access(), exe) {
                        if by == Decider::Canary {
                            self.trip_canary(&query, out);
                            return;
                        }
                        if Broker::journals(action, by, false) {
                            self.broker.journal_query(
                                self.id,
                                self.key.session.as_deref(),
                                self.project.dir(),
                                &query,
                            );
                        }
                        write_response(out, &query.id, action);
                        self.defer_record(&query.access(), pid, exe, action, by);
                        return;
                    }
                }
                self.ask(Arc::new(query), out);
            }
            Line::Terminal(trap) => self.report(trap),
            // A query whose id is fine but whose body we cannot use: deny it rather than
            // leave its syscall held until the run ends.
            Line::Ignored(IgnoreReason::MalformedTrap {
                pending: Some(id),
                problem,
            }) => {
                tracing::debug!(conn = self.id, ?problem, "denying a query we cannot read");
                if self.seen.insert(&id) {
                    write_response(out, &id, Action::Deny);
                }
            }
            Line::Ignored(reason) => tracing::debug!(conn = self.id, ?reason, "ignored a line"),
        }
    }

    /// Rules 2–4, or deny once the app is quitting; None when a person must decide.
    /// `program` is the asking process's executable, when landstrip named it.
    fn auto(&self, access: &Access<'_>, program: Option<&str>) -> Option<(Action, Decider)> {
        if self.broker.is_closed() {
            return Some((Action::Deny, Decider::Quit));
        }
        let asker = Asker {
            key: &self.key,
            run: self.id,
            program,
            after_secret: self.broker.after_secret_for(self.id, &self.key, access),
        };
        let own = self.broker.own_state();
        match super::decide(
            &self.project,
            &self.broker.inner.grants,
            own,
            self.broker.canaries(),
            &asker,
            access,
        ) {
            Verdict::Auto(action, by) => {
                if let (
                    Action::Allow,
                    Access::Filesystem {
                        operation: FsOperation::Read,
                        path,
                        ..
                    },
                ) = (action, access)
                {
                    // Before the answer is written: the run's next request sees it.
                    self.broker
                        .note_read(self.id, &self.project, &self.key, path);
                }
                Some((action, by))
            }
            Verdict::Ask => None,
        }
    }

    /// A canary read: the run is stopped and the incident recorded, then the read is
    /// denied (the reader wakes to EACCES only if a person resumes it).
    fn trip_canary(&mut self, query: &Query, out: &mut Vec<u8>) {
        if let crate::wire::protocol::QueryKind::Filesystem(fs) = &query.kind {
            self.broker.trip_canary(
                self.id,
                &self.project,
                &self.key,
                &fs.path,
                query,
                self.started_ms,
            );
        }
        write_response(out, &query.id, Action::Deny);
        let (pid, exe) = process_of(query);
        self.defer_record(&query.access(), pid, exe, Action::Deny, Decider::Canary);
    }

    /// Journals a write a session grant allows on the hot path, before its answer.
    fn journal(
        &self,
        access: &Access<'_>,
        syscall: Option<&str>,
        requested_path: Option<&str>,
        cwd: Option<&str>,
    ) {
        let Access::Filesystem {
            operation: FsOperation::Write,
            path,
            ..
        } = access
        else {
            return;
        };
        if let Some(journal) = self.broker.journal() {
            journal.record(&Held {
                conn: self.id,
                session: self.key.session.as_deref(),
                project: self.project.dir(),
                path,
                syscall,
                requested_path,
                cwd,
            });
        }
    }

    /// Opens a prompt, or denies at once while prompts are paused or the run floods us.
    fn ask(&mut self, query: Arc<Query>, out: &mut Vec<u8>) {
        if self.broker.paused_denial() {
            write_response(out, &query.id, Action::Deny);
            let (pid, exe) = process_of(&query);
            self.defer_record(&query.access(), pid, exe, Action::Deny, Decider::Paused);
            return;
        }
        if let Some(action) =
            self.broker
                .open_prompt(self.id, &self.project, &self.key, query.clone())
        {
            write_response(out, &query.id, action);
        }
    }

    /// Serialises the record of an automatic answer now (from borrowed fields); it is
    /// handed to the log after the answer is written (see flush_activity).
    fn defer_record(
        &mut self,
        access: &Access<'_>,
        pid: Option<u32>,
        exe: Option<&str>,
        action: Action,
        by: Decider,
    ) {
        let (kind, operation, subject) = match access {
            Access::Filesystem {
                operation, path, ..
            } => ("filesystem", operation.as_str(), *path),
            Access::Network { operation, target } => ("network", operation.as_str(), *target),
        };
        let project = self.project.dir().to_string_lossy();
        ActivityRef {
            ts: now_ms(),
            project: &project,
            session: self.key.session.as_deref(),
            kind,
            operation,
            subject,
            exe,
            pid,
            outcome: Outcome::from(action),
            by,
        }
        .write_line(&mut self.deferred);
    }

    /// Hands the records of this batch's automatic answers to the activity log. Called
    /// by the connection task once it has written the answers.
    pub fn flush_activity(&mut self) {
        if !self.deferred.is_empty() {
            // Sized for a typical batch so the next records do not grow it step by step.
            let lines = std::mem::replace(&mut self.deferred, Vec::with_capacity(1024));
            self.broker.inner.activity.record_lines(lines);
        }
    }

    fn report(&mut self, trap: TerminalTrap) {
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
            command: None,
            chain: Vec::new(),
        });
        self.reports += 1;
        // Nobody listening is fine: the record above is what must not be lost.
        let _ = self.broker.inner.events.send(BrokerEvent::Reported {
            connection: self.id,
            project: self.project.dir().to_path_buf(),
            session: self.key.session.clone(),
            trap: Arc::new(trap),
            count: self.reports,
        });
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.flush_activity();
        self.broker.disconnect(self.id);
    }
}

/// The asking process's pid and executable, if the query names them.
fn process_of(query: &Query) -> (Option<u32>, Option<&str>) {
    let process = query.process.as_ref();
    (
        process.and_then(|p| p.pid),
        process.and_then(|p| p.exe.as_deref()),
    )
}
