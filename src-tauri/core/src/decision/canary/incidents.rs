//! The incidents of this app run: who read which canary, what was stopped, and what a
//! person did about it since (resume, kill). Kept in memory only: the processes they
//! hold end with the app's pidfds, and the activity log keeps the record (`by: canary`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::stopping::{RunProcesses, Signal};
use super::CanaryError;
use crate::activity::{Decider, Outcome};
use crate::origin::Origin;

/// At most this many incidents are kept (the oldest go first; their processes, if any
/// are still stopped, stay stopped and are said so in the log).
pub const MAX_INCIDENTS: usize = 256;

/// At most this many of the run's earlier requests are kept with an incident.
pub const MAX_EARLIER: usize = 20;

/// What became of the processes of a run that read a canary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IncidentState {
    /// The run's confined processes are stopped (SIGSTOP).
    Stopped,
    /// They were let go on (SIGCONT).
    Resumed,
    /// They were killed (SIGKILL).
    Killed,
    /// They have all exited.
    Gone,
    /// Nothing was stopped: the reader was not a confined process under a landstrip (a
    /// forged query names any pid), or it was gone before it could be stopped. The read
    /// was denied all the same.
    NotStopped,
}

impl IncidentState {
    /// The state in words.
    pub fn as_str(self) -> &'static str {
        match self {
            IncidentState::Stopped => "stopped",
            IncidentState::Resumed => "resumed",
            IncidentState::Killed => "killed",
            IncidentState::Gone => "gone",
            IncidentState::NotStopped => "not_stopped",
        }
    }
}

/// What a person does about an incident.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IncidentAction {
    /// SIGCONT to the processes stopped.
    Resume,
    /// SIGKILL to them (the run's held requests are denied too).
    Kill,
}

/// One of the run's requests before the canary read, as the activity log has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EarlierRequest {
    /// When, in ms since the epoch.
    pub at_ms: u64,
    /// `read`, `write`, `connect`…
    pub operation: String,
    /// The path or address.
    pub subject: String,
    /// What became of it.
    pub outcome: Outcome,
    /// Who settled it.
    pub by: Decider,
}

/// A canary read: who tripped which wire, when, and what became of the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Incident {
    /// Its id, counted from 1 in this app run.
    pub id: u64,
    /// The opencode session the run's hello named, or its `run:PROGRAM:PID`; null for a
    /// run without a hello (see `run`).
    pub session: Option<String>,
    /// The run: `<app start ms>.<connection id>`, as `ctl journal` names runs.
    pub run: String,
    /// The project directory.
    pub project: PathBuf,
    /// The canary read.
    pub path: String,
    /// The program that read it, when landstrip named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exe: Option<String>,
    /// The processes stopped (the run's confined processes), in pid order.
    pub pids: Vec<u32>,
    /// When, in ms since the epoch.
    pub at_ms: u64,
    /// What became of them.
    pub state: IncidentState,
    /// The command behind the read: the chain from the command landstrip started, and the
    /// opencode session's title where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Arc<Origin>>,
    /// The run's requests before the read, oldest first (at most [`MAX_EARLIER`]).
    #[serde(default)]
    pub earlier: Vec<EarlierRequest>,
}

struct Held {
    incident: Incident,
    processes: Option<RunProcesses>,
}

impl Held {
    /// The incident with its state as it is now: stopped or resumed processes that have
    /// all exited are gone.
    fn now(&mut self) -> &Incident {
        let live = matches!(
            self.incident.state,
            IncidentState::Stopped | IncidentState::Resumed
        );
        if live && self.processes.as_ref().is_none_or(RunProcesses::all_gone) {
            self.incident.state = IncidentState::Gone;
        }
        &self.incident
    }
}

/// The incidents of this app run.
#[derive(Default)]
pub struct Incidents {
    held: Mutex<(u64, Vec<Held>)>,
}

impl std::fmt::Debug for Incidents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Incidents").finish_non_exhaustive()
    }
}

impl Incidents {
    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, Vec<Held>)> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records `incident` (its id and state are set here from `processes`: stopped when
    /// any process was) and returns it as recorded.
    pub fn record(&self, mut incident: Incident, processes: Option<RunProcesses>) -> Incident {
        incident.pids = processes
            .as_ref()
            .map(RunProcesses::pids)
            .unwrap_or_default();
        incident.state = if incident.pids.is_empty() {
            IncidentState::NotStopped
        } else {
            IncidentState::Stopped
        };
        let mut held = self.lock();
        held.0 += 1;
        incident.id = held.0;
        if held.1.len() >= MAX_INCIDENTS {
            let old = held.1.remove(0);
            if old.incident.state == IncidentState::Stopped {
                tracing::warn!(
                    incident = old.incident.id,
                    pids = ?old.incident.pids,
                    "an old incident was forgotten; its processes stay stopped"
                );
            }
        }
        held.1.push(Held {
            incident: incident.clone(),
            processes,
        });
        incident
    }

    /// Whether `pid` of `run` read canary `path` before and was resumed since: a stop
    /// interrupts the reader's held syscall, and SIGCONT restarts it, so the same read
    /// comes back as a new query. It is denied again, never stopped again.
    pub fn resumed_reader(&self, run: &str, path: &str, pid: u32) -> bool {
        self.lock().1.iter_mut().any(|h| {
            h.incident.run == run
                && h.incident.path == path
                && h.incident.pids.contains(&pid)
                && h.now().state == IncidentState::Resumed
        })
    }

    /// The incidents, oldest first, their states as they are now.
    pub fn list(&self) -> Vec<Incident> {
        self.lock().1.iter_mut().map(|h| h.now().clone()).collect()
    }

    /// One incident as it is now.
    pub fn get(&self, id: u64) -> Option<Incident> {
        self.lock()
            .1
            .iter_mut()
            .find(|h| h.incident.id == id)
            .map(|h| h.now().clone())
    }

    /// Resumes or kills incident `id`'s processes (the same ones, through their pidfds).
    /// Refused once they were killed, are gone, or none was stopped; resuming a resumed
    /// incident sends SIGCONT again (harmless).
    pub fn act(&self, id: u64, action: IncidentAction) -> Result<Incident, CanaryError> {
        let mut held = self.lock();
        let entry = held
            .1
            .iter_mut()
            .find(|h| h.incident.id == id)
            .ok_or(CanaryError::NoIncident(id))?;
        let state = entry.now().state;
        if matches!(
            state,
            IncidentState::Killed | IncidentState::Gone | IncidentState::NotStopped
        ) {
            return Err(CanaryError::Ended {
                id,
                state: state.as_str(),
            });
        }
        let processes = entry.processes.as_ref().ok_or(CanaryError::Ended {
            id,
            state: IncidentState::NotStopped.as_str(),
        })?;
        match action {
            IncidentAction::Resume => {
                processes.signal(Signal::Cont);
                entry.incident.state = IncidentState::Resumed;
            }
            IncidentAction::Kill => {
                processes.signal(Signal::Kill);
                entry.incident.state = IncidentState::Killed;
            }
        }
        Ok(entry.incident.clone())
    }

    /// The incidents whose processes are stopped now (for the log when the app quits: they
    /// stay stopped).
    pub fn still_stopped(&self) -> Vec<Incident> {
        self.list()
            .into_iter()
            .filter(|i| i.state == IncidentState::Stopped)
            .collect()
    }
}
