//! The presenter contest: keeping each served project's discovery file ours while other
//! presenters (opencode's TUI, another landstrip-tray) come and go: publishing, the
//! re-checks after discovery-directory events (coalesced), the take-back rounds, and
//! telling the user once.

use super::*;

/// How often, per start of another presenter, a project whose prompts go here takes its
/// discovery file back before leaving it to that presenter (no rewrite storm).
pub const TAKE_BACK_ROUNDS: u32 = 3;

/// Another presenter of a project, as the app saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OtherPresenter {
    /// Its pid.
    pub pid: u32,
    /// Its port.
    pub port: u16,
    /// Its process name (`/proc/<pid>/comm`), when readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl OtherPresenter {
    /// How the UI names it: "opencode's terminal prompts, pid N" for opencode's TUI.
    pub fn describe(&self) -> String {
        match self.name.as_deref() {
            Some(name) if name.contains("opencode") => {
                format!("opencode's terminal prompts, pid {}", self.pid)
            }
            Some(name) => format!("{name} (another presenter), pid {}", self.pid),
            None => format!("another presenter, pid {}", self.pid),
        }
    }
}

/// What the app did about another presenter publishing a served project's discovery
/// file while that project's prompts go here. Sent once per start of that presenter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum PresenterEvent {
    /// The file was taken back: prompts stay here.
    TookBack {
        /// The project.
        project: PathBuf,
        /// Who had published it.
        other: OtherPresenter,
    },
    /// The other presenter kept publishing; it keeps the file until it exits.
    Contested {
        /// The project.
        project: PathBuf,
        /// Who insists.
        other: OtherPresenter,
        /// How often the file was taken back from it.
        rounds: u32,
    },
}

/// Discovery-directory events coming closer together than this are one burst: each
/// project in it is re-checked once, after the burst.
pub const DISCOVERY_QUIET: Duration = Duration::from_millis(50);

/// A discovery burst is handled at the latest this long after its first event.
pub const DISCOVERY_LONGEST_BURST: Duration = Duration::from_millis(250);

/// A reason to look at a project's discovery file again.
pub(super) struct Recheck {
    pub(super) dir: PathBuf,
    /// The owner of the file we saw exit (its pidfd fired). It may linger as a zombie
    /// that kill(pid, 0) still finds, so its record is stale whatever that says.
    pub(super) exited: Option<u32>,
}

/// One start of another presenter: its pid and when that process started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct PresenterKey {
    pub(super) pid: u32,
    pub(super) start: Option<u64>,
}

/// What was done about one start of another presenter.
#[derive(Debug, Default)]
pub(super) struct Contest {
    /// Take-backs so far.
    pub(super) rounds: u32,
    /// The user was told of the first one.
    pub(super) told: bool,
    /// The user was told the app backed off.
    pub(super) reported: bool,
}

/// What [`Service::take_back`] decided under the lock.
pub(super) enum Step {
    Take { first: bool },
    BackOff { first: bool, rounds: u32 },
}

impl Service {
    pub(super) fn publish(&self, dir: &Path, port: u16, force: bool) -> ProjectStatus {
        match self.inner.discovery.publish(dir, port, force) {
            Ok(PublishOutcome::Conflict { other }) => {
                tracing::warn!(
                    project = %dir.display(),
                    other_pid = other.pid,
                    "another presenter (pid {}, port {}) owns the discovery file; launchers reach it, not us",
                    other.pid,
                    other.port
                );
                ProjectStatus::Conflict {
                    other_pid: other.pid,
                    other_port: other.port,
                }
            }
            Ok(outcome) => {
                tracing::debug!(project = %dir.display(), ?outcome, "published");
                ProjectStatus::Serving
            }
            Err(e) => ProjectStatus::Unpublished {
                error: e.to_string(),
            },
        }
    }

    pub(super) fn set_status(&self, dir: &Path, status: ProjectStatus) {
        let changed = match self.projects().get_mut(dir) {
            Some(served) if served.status != status => {
                served.status = status;
                true
            }
            _ => false,
        };
        if changed {
            self.after_status_change(dir);
        } else {
            self.publish_list();
        }
    }

    /// Watches a conflicting presenter's pid so its exit (even a crash that leaves its
    /// file behind) triggers a re-check; and announces the new list.
    pub(super) fn after_status_change(&self, dir: &Path) {
        {
            let mut projects = self.projects();
            if let Some(served) = projects.get_mut(dir) {
                if let Some(old) = served.pid_watch.take() {
                    old.abort();
                }
                if let ProjectStatus::Conflict { other_pid, .. }
                | ProjectStatus::Contested { other_pid, .. } = served.status
                {
                    let rechecks = self.inner.rechecks.clone();
                    let dir = dir.to_path_buf();
                    served.pid_watch = Some(tokio::spawn(async move {
                        match crate::sys::wait_for_exit(other_pid).await {
                            Ok(()) => {}
                            // Gone (and reaped) since publish() saw it live: no pidfd to
                            // wait on, and nothing else would ever give the file back to us.
                            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                            Err(e) => {
                                tracing::warn!(
                                    "cannot watch presenter pid {other_pid}: {e}; its exit will go unnoticed"
                                );
                                return;
                            }
                        }
                        let _ = rechecks.send(Recheck {
                            dir,
                            exited: Some(other_pid),
                        });
                    }));
                }
            }
        }
        self.publish_list();
    }

    /// Looks at a project's discovery file again and puts ours back if it is missing or
    /// stale; reports a conflict while another live presenter holds it.
    pub fn recheck(&self, dir: &Path) {
        self.recheck_after(dir, None);
    }

    pub(super) fn recheck_after(&self, dir: &Path, exited: Option<u32>) {
        let Some((port, prompts)) = self.projects().get(dir).map(|s| (s.port, s.prompts)) else {
            return;
        };
        *self
            .inner
            .rechecks_run
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(dir.to_path_buf())
            .or_default() += 1;
        let ours = |r: &DiscoveryRecord| r.pid == std::process::id() && r.port == port;
        let status = match self.inner.discovery.read(dir) {
            ReadOutcome::Record(record) if ours(&record) => ProjectStatus::Serving,
            ReadOutcome::Record(record) if Some(record.pid) == exited => {
                self.publish(dir, port, true)
            }
            // publish() itself tells a live owner (conflict) from a stale file (replace).
            _ => match self.publish(dir, port, false) {
                ProjectStatus::Conflict {
                    other_pid,
                    other_port,
                } if prompts == PromptsGo::Here => self.take_back(dir, port, other_pid, other_port),
                status => status,
            },
        };
        if self.still_served(dir, port) {
            self.set_status(dir, status);
        }
    }

    /// After publishing `port` for `dir` outside the projects' lock: whether the project
    /// is still served on that port. If it was removed (or the app is stopping, or it was
    /// added again on another port) meanwhile, its removal may have read the file before
    /// the publish wrote ours, so the record of `port` is taken out again here.
    pub(super) fn still_served(&self, dir: &Path, port: u16) -> bool {
        if self.projects().get(dir).map(|s| s.port) == Some(port) {
            return true;
        }
        let _ = self.inner.discovery.remove_if_ours(dir, port);
        false
    }

    /// Another live presenter published `dir`'s file and its prompts go here: writes ours
    /// back (atomically, as a take-over does), unless this start of that presenter already
    /// had [`TAKE_BACK_ROUNDS`]; tells the user once of each. Runs already connected to
    /// the other presenter stay with it: only launchers that look the port up later come
    /// here. Blocks (file I/O).
    pub(super) fn take_back(
        &self,
        dir: &Path,
        port: u16,
        other_pid: u32,
        other_port: u16,
    ) -> ProjectStatus {
        let key = PresenterKey {
            pid: other_pid,
            start: process_start(other_pid),
        };
        let step = {
            let mut projects = self.projects();
            let Some(served) = projects.get_mut(dir) else {
                return ProjectStatus::Conflict {
                    other_pid,
                    other_port,
                };
            };
            // Presenters that are gone are forgotten, so this stays small.
            served.contests.retain(|k, _| pid_alive(k.pid));
            let contest = served.contests.entry(key).or_default();
            if contest.rounds >= TAKE_BACK_ROUNDS {
                let first = !contest.reported;
                contest.reported = true;
                Step::BackOff {
                    first,
                    rounds: contest.rounds,
                }
            } else {
                contest.rounds += 1;
                let first = !contest.told;
                contest.told = true;
                Step::Take { first }
            }
        };
        let other = OtherPresenter {
            pid: other_pid,
            port: other_port,
            name: process_name(other_pid),
        };
        match step {
            Step::Take { first } => {
                let status = self.publish(dir, port, true);
                if first && status == ProjectStatus::Serving {
                    tracing::info!(
                        project = %dir.display(),
                        "{} published the discovery file; prompts stay here",
                        other.describe()
                    );
                    self.record_presenter(dir, &other, "take_back", "prompts stay here");
                    let _ = self.inner.events.presenters.send(PresenterEvent::TookBack {
                        project: dir.to_path_buf(),
                        other,
                    });
                }
                status
            }
            Step::BackOff { first, rounds } => {
                if first {
                    tracing::warn!(
                        project = %dir.display(),
                        "{} published the discovery file again after {rounds} take-backs; \
                         it keeps it until it exits",
                        other.describe()
                    );
                    self.record_presenter(
                        dir,
                        &other,
                        "contested",
                        &format!("taken back {rounds} times; left to it until it exits"),
                    );
                    let _ = self
                        .inner
                        .events
                        .presenters
                        .send(PresenterEvent::Contested {
                            project: dir.to_path_buf(),
                            other,
                            rounds,
                        });
                }
                ProjectStatus::Contested {
                    other_pid,
                    other_port,
                    rounds,
                }
            }
        }
    }

    /// Records what was done about another presenter in the activity log.
    pub(super) fn record_presenter(
        &self,
        dir: &Path,
        other: &OtherPresenter,
        operation: &str,
        detail: &str,
    ) {
        let exe = std::fs::read_link(format!("/proc/{}/exe", other.pid))
            .ok()
            .map(|p| p.display().to_string());
        self.inner.broker.activity().record(ActivityEntry {
            ts: now_ms(),
            project: dir.display().to_string(),
            session: None,
            kind: "presenter".to_owned(),
            operation: operation.to_owned(),
            subject: format!("{} (port {})", other.describe(), other.port),
            exe,
            pid: Some(other.pid),
            outcome: Outcome::Reported,
            by: Decider::Report,
            detail: Some(detail.to_owned()),
            command: None,
            chain: Vec::new(),
        });
    }

    /// Runs the re-checks asked for, one per project per burst: writing a discovery file
    /// raises several inotify events, and each would otherwise cost a read (and perhaps a
    /// connection to another presenter).
    pub(super) async fn recheck_loop(self, mut rx: mpsc::UnboundedReceiver<Recheck>) {
        while let Some(first) = rx.recv().await {
            let mut burst: BTreeMap<PathBuf, Option<u32>> = BTreeMap::new();
            let mut add = |Recheck { dir, exited }: Recheck| {
                let seen = burst.entry(dir).or_default();
                // An exit seen anywhere in the burst is kept: it is what makes a record stale.
                *seen = exited.or(*seen);
            };
            add(first);
            let deadline = tokio::time::Instant::now() + DISCOVERY_LONGEST_BURST;
            let mut open = true;
            while open {
                let until = deadline.min(tokio::time::Instant::now() + DISCOVERY_QUIET);
                match tokio::time::timeout_at(until, rx.recv()).await {
                    Ok(Some(recheck)) => add(recheck),
                    Ok(None) => open = false,
                    Err(_) => break,
                }
            }
            for (dir, exited) in burst {
                let service = self.clone();
                // Discovery checks may connect to another presenter's port (250 ms at most).
                let _ =
                    tokio::task::spawn_blocking(move || service.recheck_after(&dir, exited)).await;
            }
            if !open {
                return;
            }
        }
    }

    pub(super) fn watch_discovery_dir(&self) {
        use notify::Watcher;
        let dir = self.inner.discovery.path().to_path_buf();
        if let Err(e) = self.inner.discovery.ensure_dir() {
            tracing::warn!("discovery directory {}: {e}", dir.display());
        }
        let weak = Arc::downgrade(&self.inner);
        let handler = move |event: notify::Result<notify::Event>| {
            let Ok(event) = event else { return };
            if event.kind.is_access() {
                return;
            }
            let Some(inner) = weak.upgrade() else { return };
            let projects = inner.projects.lock().unwrap_or_else(|e| e.into_inner());
            for dir in projects.keys() {
                let file = inner.discovery.file_for(dir);
                if event.paths.iter().any(|p| p == &file) {
                    let _ = inner.rechecks.send(Recheck {
                        dir: dir.clone(),
                        exited: None,
                    });
                }
            }
        };
        match notify::recommended_watcher(handler) {
            Ok(mut watcher) => match watcher.watch(&dir, notify::RecursiveMode::NonRecursive) {
                Ok(()) => {
                    *self.inner.watcher.lock().unwrap_or_else(|e| e.into_inner()) = Some(watcher)
                }
                Err(e) => tracing::warn!("cannot watch {}: {e}", dir.display()),
            },
            Err(e) => tracing::warn!("cannot watch {}: {e}", dir.display()),
        }
    }
}
