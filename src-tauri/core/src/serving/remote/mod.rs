//! Remote machines over SSH (docs/ARCHITECTURE.md, "Remote machines"): for each remote in
//! the settings, one `ssh … landstrip-tray ctl bridge` kept connected (`link.rs`), its
//! requests put into the broker's view (`decision/broker/remote.rs`) and its state kept for
//! `ctl remote list`, Settings and the tray (`state.rs`). What the bridge sends is read as
//! untrusted input (`wire.rs`).

pub mod link;
pub mod state;
pub mod wire;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::activity::now_ms;
use crate::app_settings::remote::RemoteConfig;
use crate::decision::broker::Broker;
pub use state::RemoteState;

/// A remote as `ctl remote list` and Settings show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteView {
    /// Its name here.
    pub name: String,
    /// As `ssh` takes it.
    pub destination: String,
    /// `ssh -p`.
    pub port: Option<u16>,
    /// `ssh -i`.
    pub identity: Option<std::path::PathBuf>,
    /// `UserKnownHostsFile`.
    pub known_hosts: Option<std::path::PathBuf>,
    /// Where it stands.
    pub state: RemoteState,
    /// The state in words for a person (what to do about it).
    pub detail: String,
    /// Since when it is in that state (ms since the epoch).
    pub since_ms: u64,
    /// How many of its requests wait here.
    pub pending: usize,
}

/// One remote's state, shared by its connection task and the list.
pub(crate) struct Status {
    now: Mutex<(RemoteState, String, u64)>,
    changes: watch::Sender<u64>,
}

impl Status {
    /// A new state (the time kept only when the state itself changes).
    pub(crate) fn set(&self, state: RemoteState, detail: String) {
        {
            let mut now = self.now.lock().unwrap_or_else(|e| e.into_inner());
            let since = if now.0 == state { now.2 } else { now_ms() };
            *now = (state, detail, since);
        }
        self.changed();
    }

    /// Something shown changed (the state, or how many requests wait).
    pub(crate) fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }
}

struct Running {
    config: RemoteConfig,
    status: Arc<Status>,
    stop: watch::Sender<bool>,
}

impl Drop for Running {
    fn drop(&mut self) {
        // The task ends and its `ssh` child is killed (kill_on_drop).
        let _ = self.stop.send(true);
    }
}

/// The remote machines being kept connected. Cheap to clone.
#[derive(Clone)]
pub struct Remotes {
    broker: Broker,
    running: Arc<Mutex<BTreeMap<String, Running>>>,
    changes: watch::Sender<u64>,
}

impl Remotes {
    /// None connected yet.
    pub fn new(broker: Broker) -> Self {
        Self {
            broker,
            running: Arc::new(Mutex::new(BTreeMap::new())),
            changes: watch::channel(0).0,
        }
    }

    fn running(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Running>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts keeping `config` connected (in place of one of the same name). Must be
    /// called inside a tokio runtime.
    pub fn start(&self, config: RemoteConfig) {
        let (stop, stop_rx) = watch::channel(false);
        let status = Arc::new(Status {
            now: Mutex::new((RemoteState::Connecting, String::new(), now_ms())),
            changes: self.changes.clone(),
        });
        tokio::spawn(link::run(
            config.clone(),
            self.broker.clone(),
            status.clone(),
            stop_rx,
        ));
        let replaced = self.running().insert(
            config.name.clone(),
            Running {
                config,
                status,
                stop,
            },
        );
        drop(replaced);
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Stops keeping `name` connected; its requests leave this desktop at once. False
    /// when it was not running.
    pub fn stop(&self, name: &str) -> bool {
        let removed = self.running().remove(name);
        let was = removed.is_some();
        drop(removed);
        self.broker.drop_host(name);
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
        was
    }

    /// Stops every remote (quitting).
    pub fn stop_all(&self) {
        let names: Vec<String> = self.running().keys().cloned().collect();
        for name in names {
            self.stop(&name);
        }
    }

    /// Every remote with its state, by name.
    pub fn list(&self) -> Vec<RemoteView> {
        self.running()
            .values()
            .map(|r| {
                let (state, detail, since_ms) = r
                    .status
                    .now
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                RemoteView {
                    name: r.config.name.clone(),
                    destination: r.config.destination.clone(),
                    port: r.config.port,
                    identity: r.config.identity.clone(),
                    known_hosts: r.config.known_hosts.clone(),
                    state,
                    detail,
                    since_ms,
                    pending: self.broker.remote_count(&r.config.name),
                }
            })
            .collect()
    }

    /// Follows changes to [`Remotes::list`] (the tray redraws its lines from it).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}
