//! The service: serves a set of projects (a listener and a discovery file each), keeps the
//! discovery files right while other presenters come and go, answers what is pending when
//! the policy files change on disk, and shuts down so that nothing is left held or
//! published.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinHandle;

use crate::activity::{now_ms, ActivityEntry, Decider, Outcome};
pub use crate::app_settings::PromptsGo;
use crate::app_settings::{SettingsError, SettingsFile};
use crate::decision::broker::{Broker, PromptId, SweepTurn};
use crate::policy::project::Project;
use crate::policy::{
    EditOutcome, PolicyChanged, PolicyError, PolicyWatch, UndoError, UndoneEdit, Writer,
};
use crate::serving::discovery::{
    pid_alive, process_name, process_start, DiscoveryDir, DiscoveryRecord, PublishOutcome,
    ReadOutcome,
};
use crate::serving::listener::Listener;

mod events;
mod presenters;

use events::Events;
pub use events::UiRequest;
use presenters::{Contest, PresenterKey, Recheck};
pub use presenters::{
    OtherPresenter, PresenterEvent, DISCOVERY_LONGEST_BURST, DISCOVERY_QUIET, TAKE_BACK_ROUNDS,
};

/// Whether our discovery file is the one launchers find.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ProjectStatus {
    /// Our file is published: launchers reach us.
    Serving,
    /// Another live presenter (e.g. the opencode TUI) owns the file; launchers reach it,
    /// not us, until it exits or the user takes over.
    Conflict {
        /// The other presenter's pid.
        other_pid: u32,
        /// Its port.
        other_port: u16,
    },
    /// Prompts go here, but another presenter kept publishing its file over ours; after
    /// [`TAKE_BACK_ROUNDS`] take-backs the app leaves it alone until it exits (or the
    /// user takes over), so the two never rewrite the file in a loop.
    Contested {
        /// The other presenter's pid.
        other_pid: u32,
        /// Its port.
        other_port: u16,
        /// How often the app took the file back from it.
        rounds: u32,
    },
    /// The file could not be written.
    Unpublished {
        /// Why.
        error: String,
    },
}

/// A served project as the UI sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectInfo {
    /// The project directory (canonical).
    pub dir: PathBuf,
    /// Our listener's port.
    pub port: u16,
    /// The discovery file.
    pub discovery_file: PathBuf,
    /// Whether launchers reach us.
    pub status: ProjectStatus,
    /// Where its prompts go while another presenter wants them.
    #[serde(default)]
    pub prompts: PromptsGo,
}

/// Why a project could not be served.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The directory does not exist or cannot be resolved.
    #[error("{dir}: {source}")]
    BadDirectory {
        /// What was asked for.
        dir: PathBuf,
        /// Why it failed.
        source: io::Error,
    },
    /// The path is not a directory.
    #[error("{0}: not a directory")]
    NotADirectory(PathBuf),
    /// Binding the listener failed.
    #[error("cannot listen on 127.0.0.1: {0}")]
    Bind(io::Error),
    /// The project is not served.
    #[error("{0}: not served")]
    NotServed(PathBuf),
    /// The settings file could not be updated.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// The service has shut down.
    #[error("shutting down")]
    Closed,
    /// A file-system step could not run (the blocking pool is gone: shutting down).
    #[error("internal error: {0}")]
    Internal(String),
}

/// Runs blocking file work (stat, fsync, a connect probe) on the blocking pool, never on an
/// async worker (docs/ARCHITECTURE.md, "Layout").
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ServiceError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ServiceError::Internal(e.to_string()))
}

struct Served {
    project: Arc<Project>,
    port: u16,
    status: ProjectStatus,
    prompts: PromptsGo,
    contests: BTreeMap<PresenterKey, Contest>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
    pid_watch: Option<JoinHandle<()>>,
}

struct Inner {
    broker: Broker,
    home: PathBuf,
    discovery: DiscoveryDir,
    settings: Option<SettingsFile>,
    projects: Mutex<BTreeMap<PathBuf, Served>>,
    changes: watch::Sender<Vec<ProjectInfo>>,
    rechecks: mpsc::UnboundedSender<Recheck>,
    watcher: Mutex<Option<notify::RecommendedWatcher>>,
    policy_watch: Mutex<Option<PolicyWatch>>,
    /// The service's event hubs (policy changes, UI requests, presenter events).
    events: Events,
    /// Discovery re-checks run so far, per project (what coalescing saves, for tests).
    rechecks_run: Mutex<BTreeMap<PathBuf, u64>>,
    closed: std::sync::atomic::AtomicBool,
    /// The remote machines kept connected (docs/ARCHITECTURE.md, "Remote machines").
    remotes: crate::serving::remote::Remotes,
    /// The phone page: its files, its server when on, the paired devices.
    web: crate::serving::web::WebState,
}

/// The running service. Cheap to clone.
#[derive(Clone)]
pub struct Service {
    inner: Arc<Inner>,
}

impl Service {
    /// Starts the service (no projects yet) and its discovery-directory watch. Must be
    /// called inside a tokio runtime.
    pub fn start(
        broker: Broker,
        home: PathBuf,
        discovery: DiscoveryDir,
        settings: Option<SettingsFile>,
    ) -> Self {
        let (changes, _) = watch::channel(Vec::new());
        let (rechecks, rechecks_rx) = mpsc::unbounded_channel();
        let broker_for_remotes = broker.clone();
        let service = Self {
            inner: Arc::new(Inner {
                broker,
                home,
                discovery,
                settings,
                projects: Mutex::new(BTreeMap::new()),
                changes,
                rechecks,
                watcher: Mutex::new(None),
                policy_watch: Mutex::new(None),
                events: Events::new(),
                rechecks_run: Mutex::new(BTreeMap::new()),
                closed: std::sync::atomic::AtomicBool::new(false),
                remotes: crate::serving::remote::Remotes::new(broker_for_remotes),
                web: crate::serving::web::WebState::new(),
            }),
        };
        service.watch_discovery_dir();
        service.watch_policy_files();
        tokio::spawn(service.clone().recheck_loop(rechecks_rx));
        service.start_remotes();
        service
    }

    /// Starts keeping the settings' remote machines connected (the file read on the
    /// blocking pool).
    fn start_remotes(&self) {
        let Some(file) = self.inner.settings.clone() else {
            return;
        };
        let remotes = self.inner.remotes.clone();
        tokio::spawn(async move {
            match blocking(move || file.load()).await {
                Ok(Ok(settings)) => {
                    for remote in settings.remotes {
                        match remote.check() {
                            Ok(()) => remotes.start(remote),
                            Err(e) => tracing::warn!("remote machine not started: {e}"),
                        }
                    }
                }
                Ok(Err(e)) => tracing::warn!("remote machines not started: {e}"),
                Err(_) => {}
            }
        });
    }

    /// The remote machines kept connected.
    pub fn remotes(&self) -> &crate::serving::remote::Remotes {
        &self.inner.remotes
    }

    fn projects(&self) -> std::sync::MutexGuard<'_, BTreeMap<PathBuf, Served>> {
        self.inner
            .projects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `file` holds now exactly what this app's shared operations (the settings
    /// window, `ctl`) last left in it: a change event for it is their own write echoing
    /// back, not news. A prompt's "for project" answer is news to the settings view.
    /// Reads the file (blocking).
    pub fn is_own_write(&self, file: &Path) -> bool {
        self.inner.broker.own_writes().writer_of(file) == Some(Writer::Operations)
    }

    /// The shared operations' policy write, the whole protocol in one place: the sweep turn
    /// is taken first (so the file watch, seeing the app's own write, leaves the sweep to
    /// this), the app's one writer edits the file ([`crate::policy::PolicyWriter::edit`]:
    /// recorded as our own, minimal, atomic, kept for undo), and if the file changed every
    /// served project's cached policy is dropped (a same-size rewrite within one clock tick
    /// would keep its stamps) and every pending prompt decided again. The prompts that
    /// answered come back with the outcome, so the operation reports them.
    pub(crate) fn write_policy(
        &self,
        file: &Path,
        description: String,
        edit: impl FnOnce(Option<&str>) -> Result<EditOutcome, PolicyError>,
    ) -> Result<(EditOutcome, Vec<PromptId>), PolicyError> {
        let turn = self.inner.broker.sweep_turn();
        let outcome =
            self.inner
                .broker
                .writer()
                .edit(file, Writer::Operations, Some(description), edit)?;
        let answered = if matches!(outcome, EditOutcome::Changed(_)) {
            self.sweep_after_own_write(&turn)
        } else {
            Vec::new()
        };
        Ok((outcome, answered))
    }

    /// Undoes the shared operations' last policy write
    /// ([`crate::policy::PolicyWriter::undo_last`]) with the same protocol as
    /// [`Service::write_policy`]; the prompts the restored rules answered come back too.
    pub(crate) fn undo_policy_write(&self) -> Result<(UndoneEdit, Vec<PromptId>), UndoError> {
        let turn = self.inner.broker.sweep_turn();
        let undone = self.inner.broker.writer().undo_last()?;
        Ok((undone, self.sweep_after_own_write(&turn)))
    }

    fn sweep_after_own_write(&self, turn: &SweepTurn<'_>) -> Vec<PromptId> {
        for served in self
            .inner
            .projects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
        {
            served.project.policy().invalidate();
        }
        self.inner.broker.sweep(turn)
    }

    /// The broker answering this service's queries.
    pub fn broker(&self) -> &Broker {
        &self.inner.broker
    }

    /// The phone page's state.
    pub fn web(&self) -> &crate::serving::web::WebState {
        &self.inner.web
    }

    /// The app's settings file, when this service has one (the app always does).
    pub fn settings_file(&self) -> Option<&SettingsFile> {
        self.inner.settings.as_ref()
    }

    /// The user's home directory (`~` in policy entries and in what the UI shows).
    pub fn home(&self) -> &Path {
        &self.inner.home
    }

    /// The discovery directory.
    pub fn discovery(&self) -> &DiscoveryDir {
        &self.inner.discovery
    }

    /// Every served project.
    pub fn list(&self) -> Vec<ProjectInfo> {
        self.inner.changes.borrow().clone()
    }

    /// Follows the served projects and their status.
    pub fn subscribe(&self) -> watch::Receiver<Vec<ProjectInfo>> {
        self.inner.changes.subscribe()
    }

    /// Follows changes of the policy files on disk: the global file and every served
    /// project's. Each event comes after the pending prompts the policy now settles were
    /// answered. A burst of writes is one event per file; a project just served gets
    /// one for its file too. A subscriber that falls more than a few dozen events behind
    /// misses some (and is told so by `Lagged`).
    pub fn subscribe_policy(&self) -> broadcast::Receiver<PolicyChanged> {
        self.inner.events.policy.subscribe()
    }

    /// Asks the desktop surfaces to show something (the settings window, say). False when
    /// nothing listens (a headless service).
    pub fn request_ui(&self, request: UiRequest) -> bool {
        self.inner.events.ui.send(request).is_ok()
    }

    /// What the desktop surfaces are asked to show ([`Service::request_ui`]).
    pub fn subscribe_ui(&self) -> broadcast::Receiver<UiRequest> {
        self.inner.events.ui.subscribe()
    }

    /// What the app did about other presenters ([`PresenterEvent`]), for the quiet
    /// notification.
    pub fn subscribe_presenters(&self) -> broadcast::Receiver<PresenterEvent> {
        self.inner.events.presenters.subscribe()
    }

    fn policy_watch(&self, f: impl FnOnce(&PolicyWatch)) {
        let watch = self
            .inner
            .policy_watch
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(watch) = watch.as_ref() {
            f(watch);
        }
    }

    fn publish_list(&self) {
        let list: Vec<ProjectInfo> = self.projects().values().map(|s| self.info(s)).collect();
        self.inner.changes.send_replace(list);
    }

    fn info(&self, served: &Served) -> ProjectInfo {
        ProjectInfo {
            dir: served.project.dir().to_path_buf(),
            port: served.port,
            discovery_file: self.inner.discovery.file_for(served.project.dir()),
            status: served.status.clone(),
            prompts: served.prompts,
        }
    }

    /// Starts serving `dir` (a listener and its discovery file); `persist` also adds it to
    /// the settings file so it is served at the next start. Serving it twice is harmless.
    pub async fn add_project(
        &self,
        dir: &Path,
        persist: bool,
    ) -> Result<ProjectInfo, ServiceError> {
        if self.inner.closed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(ServiceError::Closed);
        }
        let asked = dir.to_path_buf();
        let dir = blocking(move || canonical_dir(&asked)).await??;
        let mut prompts = PromptsGo::default();
        if let Some(settings) = self.inner.settings.clone() {
            let added = dir.clone();
            let now = blocking(move || {
                if persist {
                    settings.update(|s| {
                        if !s.projects.contains(&added) {
                            s.projects.push(added);
                        }
                    })
                } else {
                    settings.load()
                }
            })
            .await?;
            match now {
                Ok(settings) => prompts = settings.prompts_for(&dir),
                Err(e) if persist => return Err(e.into()),
                Err(e) => tracing::warn!("{e}; prompts for {} come here", dir.display()),
            }
        }
        if let Some(served) = self.projects().get(&dir) {
            return Ok(self.info(served));
        }
        let listener = Listener::bind().await.map_err(ServiceError::Bind)?;
        let port = listener.port();
        let project = Arc::new(Project::new(dir.clone(), self.inner.home.clone()));
        let (stop, stop_rx) = watch::channel(false);
        let task = listener.spawn(project.clone(), self.inner.broker.clone(), stop_rx);
        let status = {
            let (this, dir) = (self.clone(), dir.clone());
            blocking(move || this.publish(&dir, port, false)).await?
        };
        let served = Served {
            project,
            port,
            status,
            prompts,
            contests: BTreeMap::new(),
            stop,
            task,
            pid_watch: None,
        };
        let conflict = matches!(served.status, ProjectStatus::Conflict { .. });
        let mut info = {
            let mut projects = self.projects();
            let info = self.info(&served);
            projects.insert(dir.clone(), served);
            info
        };
        self.after_status_change(&dir);
        if conflict && prompts == PromptsGo::Here {
            // Another presenter was there first; prompts come here all the same.
            let (this, d) = (self.clone(), dir.clone());
            blocking(move || this.recheck(&d)).await?;
            if let Some(served) = self.projects().get(&dir) {
                info = self.info(served);
            }
        }
        self.policy_watch(|w| w.watch_project(&dir));
        tracing::info!(project = %dir.display(), port, "serving");
        Ok(info)
    }

    /// Stops serving `dir`: its held queries are denied, its connections closed, its
    /// discovery file removed (if still ours); `persist` also drops it from the settings.
    pub async fn remove_project(&self, dir: &Path, persist: bool) -> Result<(), ServiceError> {
        let asked = dir.to_path_buf();
        let dir = blocking(move || canonical_dir(&asked).unwrap_or(asked)).await?;
        if persist {
            if let Some(settings) = self.inner.settings.clone() {
                let removed = dir.clone();
                blocking(move || settings.update(|s| s.projects.retain(|p| p != &removed)))
                    .await??;
            }
        }
        let served = self
            .projects()
            .remove(&dir)
            .ok_or_else(|| ServiceError::NotServed(dir.clone()))?;
        self.policy_watch(|w| w.unwatch_project(&dir));
        self.stop_served(served).await;
        self.publish_list();
        Ok(())
    }

    async fn stop_served(&self, served: Served) {
        let dir = served.project.dir().to_path_buf();
        self.inner.broker.deny_project(&dir);
        let _ = served.stop.send(true);
        if let Some(watch) = served.pid_watch {
            watch.abort();
        }
        let _ = served.task.await;
        let (discovery, port) = (self.inner.discovery.clone(), served.port);
        let removed = {
            let dir = dir.clone();
            blocking(move || discovery.remove_if_ours(&dir, port)).await
        };
        match removed {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                tracing::warn!(project = %dir.display(), "removing the discovery file: {e}")
            }
            Err(e) => tracing::warn!(project = %dir.display(), "removing the discovery file: {e}"),
        }
    }

    /// Sets where a served project's prompts go and saves it in the settings. "Here"
    /// takes the discovery file back at once if another presenter holds it; "terminal"
    /// leaves it to that presenter while it runs.
    pub async fn set_prompts(
        &self,
        dir: &Path,
        prompts: PromptsGo,
    ) -> Result<ProjectInfo, ServiceError> {
        let asked = dir.to_path_buf();
        let dir = blocking(move || canonical_dir(&asked)).await??;
        if !self.projects().contains_key(&dir) {
            return Err(ServiceError::NotServed(dir));
        }
        if let Some(settings) = self.inner.settings.clone() {
            let chosen = dir.clone();
            blocking(move || {
                settings.update(|s| {
                    s.project_prompts.insert(chosen, prompts);
                })
            })
            .await??;
        }
        let status = {
            let mut projects = self.projects();
            let served = projects
                .get_mut(&dir)
                .ok_or_else(|| ServiceError::NotServed(dir.clone()))?;
            served.prompts = prompts;
            served.status.clone()
        };
        tracing::info!(project = %dir.display(), prompts = prompts.as_str(), "prompts preference");
        let (this, d) = (self.clone(), dir.clone());
        match (prompts, status) {
            (PromptsGo::Here, ProjectStatus::Conflict { .. } | ProjectStatus::Contested { .. }) => {
                blocking(move || this.take_over(&d)).await??;
            }
            (PromptsGo::Terminal, ProjectStatus::Contested { .. }) => {
                blocking(move || this.recheck(&d)).await?;
            }
            _ => self.publish_list(),
        }
        self.projects()
            .get(&dir)
            .map(|s| self.info(s))
            .ok_or(ServiceError::NotServed(dir))
    }

    /// Publishes our discovery file even though another live presenter owns it. For a
    /// project whose prompts go here, the take-back rounds start again.
    pub fn take_over(&self, dir: &Path) -> Result<ProjectInfo, ServiceError> {
        let dir = canonical_dir(dir)?;
        let port = {
            let mut projects = self.projects();
            let served = projects
                .get_mut(&dir)
                .ok_or_else(|| ServiceError::NotServed(dir.clone()))?;
            for contest in served.contests.values_mut() {
                contest.rounds = 0;
                contest.reported = false;
            }
            served.port
        };
        let status = self.publish(&dir, port, true);
        if !self.still_served(&dir, port) {
            return Err(ServiceError::NotServed(dir));
        }
        self.set_status(&dir, status);
        self.projects()
            .get(&dir)
            .map(|s| self.info(s))
            .ok_or(ServiceError::NotServed(dir))
    }

    /// Denies everything held, stops every listener after its connections flushed their
    /// answers, and removes our discovery files. Idempotent.
    pub async fn shutdown(&self) {
        self.inner
            .closed
            .store(true, std::sync::atomic::Ordering::Release);
        self.inner.broker.shutdown();
        self.inner.remotes.stop_all();
        // The phone page goes with the app (its setting stays: it starts again with it).
        if let Some(running) = self.inner.web.running().take() {
            running.server.stop();
        }
        // Stopped runs are left stopped (a person decides, even after the app is gone).
        self.inner.broker.log_stopped_incidents();
        if let Some(journal) = self.inner.broker.journal() {
            journal.flush();
        }
        drop(
            self.inner
                .watcher
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
        drop(
            self.inner
                .policy_watch
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
        let served: Vec<Served> = std::mem::take(&mut *self.projects())
            .into_values()
            .collect();
        let stops = served.into_iter().map(|s| self.stop_served(s));
        for stop in stops {
            stop.await;
        }
        self.publish_list();
        let broker = self.inner.broker.clone();
        if let Err(e) = blocking(move || broker.activity().flush()).await {
            tracing::warn!("flushing the activity log: {e}");
        }
    }

    /// Watches the policy files (see [`crate::policy::file_watch`]): after a burst of changes
    /// the changed projects' cached policy is dropped, every pending prompt is decided
    /// again against the files as they are now, and the change is announced.
    fn watch_policy_files(&self) {
        let weak = Arc::downgrade(&self.inner);
        let on_change = move |changes: &[PolicyChanged]| {
            let Some(inner) = weak.upgrade() else { return };
            let global = changes.iter().any(|c| c.project.is_none());
            let affected: Vec<Arc<Project>> = inner
                .projects
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .values()
                .filter(|s| {
                    global
                        || changes
                            .iter()
                            .any(|c| c.project.as_deref() == Some(s.project.dir()))
                })
                .map(|s| s.project.clone())
                .collect();
            // The stamps would notice nearly every change; a change that keeps size and
            // times (a same-tick rewrite, `cp -p`) is only noticed here.
            for project in affected {
                project.policy().invalidate();
            }
            // An operation's own write sweeps right after it, within its turn, so that
            // its reply lists what it answered; one that has finished has swept already.
            let turn = inner.broker.sweep_turn();
            let all_own = changes
                .iter()
                .all(|c| inner.broker.own_writes().writer_of(&c.file).is_some());
            let answered = if all_own {
                Vec::new()
            } else {
                inner.broker.sweep(&turn)
            };
            drop(turn);
            if !answered.is_empty() {
                tracing::info!(
                    count = answered.len(),
                    "pending prompts answered by the policy files as they are now"
                );
            }
            for change in changes {
                let _ = inner.events.policy.send(change.clone());
            }
        };
        match PolicyWatch::start(&self.inner.home, on_change) {
            Ok(watch) => {
                *self
                    .inner
                    .policy_watch
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = Some(watch)
            }
            Err(e) => tracing::warn!("{e}; policy changes are seen only by new queries"),
        }
    }
}

/// Resolves a project directory the way the plugin hashes it (realpath).
fn canonical_dir(dir: &Path) -> Result<PathBuf, ServiceError> {
    let canonical = std::fs::canonicalize(dir).map_err(|source| ServiceError::BadDirectory {
        dir: dir.to_path_buf(),
        source,
    })?;
    if !canonical.is_dir() {
        return Err(ServiceError::NotADirectory(canonical));
    }
    Ok(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::activity::ActivityLog;

    const WAIT: Duration = Duration::from_secs(10);

    fn rechecks(service: &Service, dir: &Path) -> u64 {
        let run = service.inner.rechecks_run.lock().expect("lock");
        run.get(dir).copied().unwrap_or(0)
    }

    #[tokio::test]
    async fn a_burst_of_discovery_events_is_one_recheck() {
        let root = tempfile::tempdir().expect("tempdir");
        let base = std::fs::canonicalize(root.path()).expect("canonical");
        let home = base.join("home");
        let (a, c) = (base.join("a"), base.join("c"));
        for dir in [&home, &a, &c] {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        let log = ActivityLog::open(&base.join("activity.jsonl"), 1 << 20).expect("log");
        let broker = Broker::new(Arc::new(log));
        let discovery = DiscoveryDir::new(base.join("runtime"));
        let service = Service::start(broker, home, discovery.clone(), None);
        service.add_project(&a, false).await.expect("serve a");
        let before = rechecks(&service, &a);
        let file = discovery.file_for(&a);
        let ours = std::fs::read(&file).expect("read our record");
        {
            // The watch's handler waits for this lock: the burst's events pile up and
            // reach the re-check queue together, as a fast burst would.
            let _held = service.projects();
            for _ in 0..50 {
                std::fs::write(&file, &ours).expect("rewrite our record");
            }
        }
        // A project served after the burst: its events queue behind the burst's, and
        // `c` sorts after `a`, so once `c` was re-checked every event about `a` raised
        // before has been handled.
        let mut list = service.subscribe();
        service.add_project(&c, false).await.expect("serve c");
        std::fs::remove_file(discovery.file_for(&c)).expect("remove c's file");
        tokio::time::timeout(WAIT, async {
            while rechecks(&service, &c) == 0 {
                list.changed().await.expect("service alive");
            }
        })
        .await
        .expect("c was not re-checked in time");
        let burst = rechecks(&service, &a) - before;
        // One for the burst (two if `a`'s own publishing was still being looked at),
        // not one per event (over 50).
        assert!((1..=3).contains(&burst), "{burst} re-checks for one burst");
        service.shutdown().await;
    }
}
