//! A canary read as the broker handles it (docs/ARCHITECTURE.md, "Canaries"): the read is
//! denied at once (rule 1's canary step in `decide`), the run's confined processes are
//! stopped, an incident is recorded and announced; a person later resumes or kills them.

use super::{Broker, BrokerEvent, ConnId};
use crate::activity::{now_ms, Decider};
use crate::decision::canary::stopping::RunProcesses;
use crate::decision::canary::{
    Canaries, CanaryError, EarlierRequest, Incident, IncidentAction, IncidentState, MAX_EARLIER,
};
use crate::decision::grants::GrantKey;
use crate::policy::project::Project;
use crate::wire::protocol::Query;
use std::path::Path;

impl Broker {
    /// Trips canaries from now on (set once at start); false when already set.
    pub fn set_canaries(&self, canaries: Canaries) -> bool {
        self.inner.canaries.set(canaries).is_ok()
    }

    /// The canaries and incidents (an empty list kept in memory until set).
    pub fn canaries(&self) -> &Canaries {
        self.inner.canaries.get_or_init(Canaries::default)
    }

    /// A canary read of `path` by `query` of run `conn`: stops the run's confined processes, records
    /// the incident with the run's earlier requests (since `run_started_ms`) and announces
    /// it. Called on the connection's reader before the denial is written, so the reader
    /// is stopped inside the syscall it asked about (the stop interrupts that syscall and
    /// SIGCONT restarts it: the read comes back, and is then denied without a new stop).
    /// None for such a read.
    pub(super) fn trip_canary(
        &self,
        conn: ConnId,
        project: &Project,
        key: &GrantKey,
        path: &str,
        query: &Query,
        run_started_ms: u64,
    ) -> Option<Incident> {
        let process = query.process.as_ref();
        let reader = process.and_then(|p| p.pid);
        let run = self.run_key(conn);
        if reader.is_some_and(|pid| self.canaries().incidents().resumed_reader(&run, path, pid)) {
            tracing::info!(
                conn,
                "a resumed reader's canary read came back; denied again"
            );
            return None;
        }
        let proc = self.origin_proc();
        let processes = process
            .and_then(|p| Some((p.pid?, p.exe.as_deref())))
            .and_then(|(pid, exe)| RunProcesses::stop(&proc, pid, exe));
        let mut incident = blank(project, key, path, conn, self);
        incident.exe = process.and_then(|p| p.exe.clone());
        incident.origin = self.read_origin(query, key.session.as_deref());
        incident.earlier =
            self.earlier_requests(project.dir(), key.session.as_deref(), run_started_ms);
        // The stop interrupted the run's other held syscalls too (SIGCONT restarts them,
        // and they ask again): their prompts would answer nothing, so they are denied now.
        let denied = self.deny_where_by(|p| p.prompt.connection == conn, Decider::Canary);
        if denied > 0 {
            tracing::info!(
                conn,
                denied,
                "the stopped run's waiting requests were denied"
            );
        }
        let watched = processes
            .as_ref()
            .map(RunProcesses::watch)
            .unwrap_or_default();
        let incident = self.canaries().incidents().record(incident, processes);
        self.announce_end(incident.id, watched);
        tracing::warn!(
            incident = incident.id,
            pids = ?incident.pids,
            state = incident.state.as_str(),
            "a sandboxed program read a canary"
        );
        let _ = self
            .inner
            .events
            .send(BrokerEvent::Incident(incident.clone()));
        Some(incident)
    }

    /// Once every process of incident `id` has exited (killed by hand, or ended after a
    /// resume), announces the incident again so the tray and the notification follow:
    /// a thread of its own waits on copies of the pidfds (nothing polls).
    fn announce_end(&self, id: u64, watched: Vec<std::os::fd::OwnedFd>) {
        if watched.is_empty() {
            return;
        }
        let broker = self.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("incident-{id}"))
            .spawn(move || {
                use std::os::fd::AsFd;
                for fd in &watched {
                    crate::sys::pidfd_wait_exit(fd.as_fd());
                }
                if let Some(incident) = broker.canaries().incidents().get(id) {
                    tracing::info!(
                        incident = id,
                        state = incident.state.as_str(),
                        "an incident's processes have all exited"
                    );
                    let _ = broker.inner.events.send(BrokerEvent::Incident(incident));
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(incident = id, "cannot watch the incident's processes: {e}");
        }
    }

    /// The run's requests before the read, from the activity log's recent records of its
    /// project and session since the run began.
    fn earlier_requests(
        &self,
        project: &Path,
        session: Option<&str>,
        since_ms: u64,
    ) -> Vec<EarlierRequest> {
        let project = project.to_string_lossy();
        let mut earlier: Vec<EarlierRequest> = self
            .inner
            .activity
            .recent()
            .into_iter()
            .filter(|e| e.ts >= since_ms && e.project == project && e.session.as_deref() == session)
            .filter(|e| e.by != Decider::Report)
            .map(|e| EarlierRequest {
                at_ms: e.ts,
                operation: e.operation,
                subject: e.subject,
                outcome: e.outcome,
                by: e.by,
            })
            .collect();
        let cut = earlier.len().saturating_sub(MAX_EARLIER);
        earlier.drain(..cut);
        earlier
    }

    /// Resumes or kills incident `id`'s processes; a kill also denies the run's held
    /// requests (`by: canary`). The incident as it is after.
    pub fn incident_act(&self, id: u64, action: IncidentAction) -> Result<Incident, CanaryError> {
        let incidents = self.canaries().incidents();
        let before = incidents.get(id).ok_or(CanaryError::NoIncident(id))?;
        if action == IncidentAction::Kill
            && matches!(
                before.state,
                IncidentState::Stopped | IncidentState::Resumed
            )
        {
            // Before the kill, while its processes cannot act on a denial: once they are
            // dead the run's end would withdraw them instead.
            if let Some(conn) = run_conn(&before.run) {
                self.deny_where_by(|p| p.prompt.connection == conn, Decider::Canary);
            }
        }
        let incident = incidents.act(id, action)?;
        tracing::warn!(
            incident = id,
            state = incident.state.as_str(),
            "an incident's processes were {}",
            incident.state.as_str()
        );
        let _ = self
            .inner
            .events
            .send(BrokerEvent::Incident(incident.clone()));
        Ok(incident)
    }

    /// Says in the log which incidents' processes stay stopped as the app quits.
    pub fn log_stopped_incidents(&self) {
        for incident in self.canaries().incidents().still_stopped() {
            tracing::warn!(
                incident = incident.id,
                pids = ?incident.pids,
                "the app quits; incident {}'s processes stay stopped (SIGCONT or SIGKILL them by hand)",
                incident.id
            );
        }
    }
}

/// The incident's fields every canary read has.
fn blank(project: &Project, key: &GrantKey, path: &str, conn: ConnId, broker: &Broker) -> Incident {
    Incident {
        id: 0,
        session: key.session.clone(),
        run: broker.run_key(conn),
        project: project.dir().to_path_buf(),
        path: path.to_owned(),
        exe: None,
        pids: Vec::new(),
        at_ms: now_ms(),
        state: IncidentState::NotStopped,
        origin: None,
        earlier: Vec::new(),
    }
}

/// The connection of a run key `<app start ms>.<conn>`.
fn run_conn(run: &str) -> Option<ConnId> {
    run.rsplit_once('.')?.1.parse().ok()
}
