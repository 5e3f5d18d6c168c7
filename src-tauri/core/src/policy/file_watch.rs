//! Watching the policy files: the global `~/.config/opencode/sandbox.json` and each served
//! project's `.opencode/sandbox.json`, however they change (written in place, replaced by a
//! rename as editors and our own atomic writer do, created later together with their
//! directory, removed).
//!
//! Directories are watched, never the files themselves: a rename replaces the file's inode,
//! and a file that does not exist yet cannot be watched. For each file the deepest existing
//! directory on its path is watched (its parent once that exists, else the nearest existing
//! ancestor), and the set is brought up to date after every burst of events. A burst is
//! coalesced into one batch (see [`QUIET`] and [`LONGEST_BURST`]), handed to a callback
//! (which re-applies the policy to what is pending) and then announced as
//! [`PolicyChanged`] events. Everything runs on one thread of its own, so the callback may
//! do blocking file I/O.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecursiveMode, Watcher};
use tokio::sync::broadcast;

use super::cache::{global_path, project_path};

/// A burst ends once no event came for this long.
pub const QUIET: Duration = Duration::from_millis(50);

/// A burst is handled at the latest this long after its first event, even if events keep
/// coming, so a change is acted on well within a second.
pub const LONGEST_BURST: Duration = Duration::from_millis(250);

/// Policy events kept for a slow subscriber before it starts missing some.
const EVENT_CAPACITY: usize = 64;

/// A policy file changed on disk (its content, or whether it exists). Also sent once for
/// a project's file when the project starts being watched: what happened before is
/// unknown, so it is looked at then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyChanged {
    /// The file: a project's `.opencode/sandbox.json` or the global `sandbox.json`.
    pub file: PathBuf,
    /// The project whose file it is; `None` for the global file (it applies to every
    /// project).
    pub project: Option<PathBuf>,
}

/// Why the watch could not start.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// inotify could not be set up (no more instances, say).
    #[error("cannot watch the policy files: {0}")]
    Notify(#[from] notify::Error),
    /// The watch thread could not be started.
    #[error("cannot start the policy watch thread: {0}")]
    Thread(std::io::Error),
}

enum Msg {
    Fs(notify::Result<notify::Event>),
    Add(PathBuf),
    Remove(PathBuf),
    Stop,
}

/// The running watch. Dropping it stops the thread (without waiting for it).
pub struct PolicyWatch {
    tx: mpsc::Sender<Msg>,
    changes: broadcast::Sender<PolicyChanged>,
    thread: Option<JoinHandle<()>>,
}

impl PolicyWatch {
    /// Starts watching the global file under `home` (projects are added with
    /// [`PolicyWatch::watch_project`]). `on_change` runs on the watch thread once per
    /// burst with the files that changed, before they are announced to subscribers.
    pub fn start(
        home: &Path,
        on_change: impl Fn(&[PolicyChanged]) + Send + 'static,
    ) -> Result<Self, WatchError> {
        let (tx, rx) = mpsc::channel();
        let events = tx.clone();
        let watcher = notify::recommended_watcher(move |event| {
            let _ = events.send(Msg::Fs(event));
        })?;
        let (changes, _) = broadcast::channel(EVENT_CAPACITY);
        let mut state = State {
            watcher,
            targets: BTreeMap::new(),
            watched: BTreeMap::new(),
        };
        state.targets.insert(global_path(home), None);
        let publish = changes.clone();
        let thread = std::thread::Builder::new()
            .name("policy-watch".into())
            .spawn(move || state.run(rx, on_change, publish))
            .map_err(WatchError::Thread)?;
        Ok(Self {
            tx,
            changes,
            thread: Some(thread),
        })
    }

    /// Also watches the policy file of the project at `dir` (canonical).
    pub fn watch_project(&self, dir: &Path) {
        let _ = self.tx.send(Msg::Add(dir.to_path_buf()));
    }

    /// Stops watching the policy file of the project at `dir`.
    pub fn unwatch_project(&self, dir: &Path) {
        let _ = self.tx.send(Msg::Remove(dir.to_path_buf()));
    }

    /// Follows the changes, one event per changed file, each sent after the burst it
    /// belongs to was handed to `on_change`.
    pub fn subscribe(&self) -> broadcast::Receiver<PolicyChanged> {
        self.changes.subscribe()
    }
}

impl Drop for PolicyWatch {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Stop);
        // Not joined: the thread may be in the middle of `on_change`, and a drop must
        // not block an async worker. It exits at its next message.
        drop(self.thread.take());
    }
}

/// What the watch thread owns.
struct State {
    watcher: notify::RecommendedWatcher,
    /// Every watched file and the project it belongs to (`None`: the global file).
    targets: BTreeMap<PathBuf, Option<PathBuf>>,
    /// The directories watched now, with the identity (device, inode) they had then: a
    /// directory replaced under the same name needs a new watch.
    watched: BTreeMap<PathBuf, (u64, u64)>,
}

/// Files whose watched directory changed or that an event named.
type Dirty = BTreeSet<PathBuf>;

impl State {
    fn run(
        mut self,
        rx: mpsc::Receiver<Msg>,
        on_change: impl Fn(&[PolicyChanged]),
        publish: broadcast::Sender<PolicyChanged>,
    ) {
        // Nothing can be pending on a file before it is watched: the first look is free.
        self.reconcile();
        let mut dirty = Dirty::new();
        while let Ok(first) = rx.recv() {
            let mut stop = self.take(first, &mut dirty);
            // Coalesce the burst: until it goes quiet, or has lasted long enough.
            let started = Instant::now();
            while !stop {
                let left = LONGEST_BURST.saturating_sub(started.elapsed());
                match rx.recv_timeout(QUIET.min(left)) {
                    Ok(msg) => stop = self.take(msg, &mut dirty),
                    Err(mpsc::RecvTimeoutError::Timeout) => break,
                    Err(mpsc::RecvTimeoutError::Disconnected) => stop = true,
                }
            }
            if stop {
                return;
            }
            // Watch first, then act: a change made before the new watch took effect is
            // seen by `on_change` reading the disk, one made after raises another event.
            dirty.extend(self.reconcile());
            let changed: Vec<PolicyChanged> = std::mem::take(&mut dirty)
                .into_iter()
                .filter_map(|file| {
                    let project = self.targets.get(&file)?.clone();
                    Some(PolicyChanged { file, project })
                })
                .collect();
            if changed.is_empty() {
                continue;
            }
            tracing::debug!(?changed, "policy files changed");
            on_change(&changed);
            for change in changed {
                let _ = publish.send(change);
            }
        }
    }

    /// Applies one message; true when the thread must stop.
    fn take(&mut self, msg: Msg, dirty: &mut Dirty) -> bool {
        match msg {
            Msg::Stop => return true,
            Msg::Add(dir) => {
                let file = project_path(&dir);
                // Whatever happened before the watch existed is looked at once.
                dirty.insert(file.clone());
                self.targets.insert(file, Some(dir));
            }
            Msg::Remove(dir) => {
                let file = project_path(&dir);
                dirty.remove(&file);
                self.targets.remove(&file);
            }
            Msg::Fs(Err(e)) => {
                tracing::warn!("policy watch: {e}; looking at every policy file again");
                dirty.extend(self.targets.keys().cloned());
            }
            Msg::Fs(Ok(event)) => {
                if event.need_rescan() {
                    // The kernel's queue overflowed: events were lost.
                    dirty.extend(self.targets.keys().cloned());
                    return false;
                }
                if !relevant(&event.kind) {
                    return false;
                }
                for path in &event.paths {
                    // The file itself, or a directory on its path (created, removed,
                    // renamed, or a watched directory's own removal).
                    dirty.extend(
                        self.targets
                            .keys()
                            .filter(|file| file.starts_with(path))
                            .cloned(),
                    );
                }
            }
        }
        false
    }

    /// Brings the watched directories in line with what exists now; returns the files
    /// whose watched directory changed (a directory on their path appeared or went away).
    fn reconcile(&mut self) -> Dirty {
        let mut dirty = Dirty::new();
        // A directory may appear or vanish while we add watches: a few rounds settle it.
        for _ in 0..4 {
            let wanted = self.wanted();
            let stale: Vec<PathBuf> = self
                .watched
                .iter()
                .filter(|(dir, id)| wanted.get(*dir) != Some(id))
                .map(|(dir, _)| dir.clone())
                .collect();
            let missing: Vec<(PathBuf, (u64, u64))> = wanted
                .iter()
                .filter(|(dir, id)| self.watched.get(*dir) != Some(id))
                .map(|(dir, id)| (dir.clone(), *id))
                .collect();
            if stale.is_empty() && missing.is_empty() {
                break;
            }
            for dir in stale {
                // Gone already if the directory was removed: nothing to undo then.
                let _ = self.watcher.unwatch(&dir);
                self.watched.remove(&dir);
                dirty.extend(self.files_under(&dir));
            }
            for (dir, id) in missing {
                match self.watcher.watch(&dir, RecursiveMode::NonRecursive) {
                    Ok(()) => {
                        self.watched.insert(dir.clone(), id);
                    }
                    Err(e) => tracing::warn!("cannot watch {}: {e}", dir.display()),
                }
                dirty.extend(self.files_under(&dir));
            }
        }
        dirty
    }

    /// The directory to watch for each file, with its identity.
    fn wanted(&self) -> BTreeMap<PathBuf, (u64, u64)> {
        self.targets
            .keys()
            .filter_map(|file| deepest_existing_dir(file))
            .collect()
    }

    fn files_under(&self, dir: &Path) -> Vec<PathBuf> {
        self.targets
            .keys()
            .filter(|file| file.starts_with(dir))
            .cloned()
            .collect()
    }
}

/// Whether an event may mean a change of content or existence. Opening and reading a
/// file is not one (every policy load does that: counting it would loop).
fn relevant(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// The file's parent directory if it exists, else its nearest existing ancestor, with its
/// device and inode.
fn deepest_existing_dir(file: &Path) -> Option<(PathBuf, (u64, u64))> {
    use std::os::unix::fs::MetadataExt;
    file.ancestors().skip(1).find_map(|dir| {
        let meta = std::fs::metadata(dir).ok()?;
        meta.is_dir()
            .then(|| (dir.to_path_buf(), (meta.dev(), meta.ino())))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    const WAIT: Duration = Duration::from_secs(10);

    type Batches = Arc<Mutex<Vec<Vec<PolicyChanged>>>>;

    struct Rig {
        _root: tempfile::TempDir,
        home: PathBuf,
        project: PathBuf,
        watch: PolicyWatch,
        events: broadcast::Receiver<PolicyChanged>,
        batches: Batches,
    }

    impl Rig {
        async fn start() -> Self {
            let root = tempfile::tempdir().expect("tempdir");
            let base = std::fs::canonicalize(root.path()).expect("canonical");
            let home = base.join("home");
            let project = base.join("project");
            std::fs::create_dir_all(&home).expect("mkdir");
            std::fs::create_dir_all(&project).expect("mkdir");
            let batches = Batches::default();
            let seen = batches.clone();
            let watch = PolicyWatch::start(&home, move |changes| {
                seen.lock().expect("lock").push(changes.to_vec())
            })
            .expect("watch");
            let events = watch.subscribe();
            watch.watch_project(&project);
            let mut rig = Self {
                _root: root,
                home,
                project,
                watch,
                events,
                batches,
            };
            // Adding a project looks at its file once: that is the first event.
            let first = rig.next("the look at a newly added project").await;
            assert_eq!(first.project.as_deref(), Some(rig.project.as_path()));
            rig
        }

        async fn next(&mut self, what: &str) -> PolicyChanged {
            match tokio::time::timeout(WAIT, self.events.recv()).await {
                Ok(Ok(change)) => change,
                Ok(Err(e)) => panic!("policy events, awaiting {what}: {e}"),
                Err(_) => panic!("no policy event within {WAIT:?} for {what}"),
            }
        }

        /// Changes the global file and waits for its event: every event raised before
        /// has been handled by then (one thread, in order).
        async fn sentinel(&mut self) {
            let global = global_path(&self.home);
            std::fs::create_dir_all(global.parent().expect("parent")).expect("mkdir");
            let text = format!("{{\"enabled\": {}}}", !global.exists());
            std::fs::write(&global, text).expect("write");
            while self.next("the global file").await.file != global {}
        }

        fn batches(&self) -> usize {
            self.batches.lock().expect("lock").len()
        }

        /// The batches from `from` on that name the project's file.
        fn project_batches(&self, from: usize) -> usize {
            let file = project_path(&self.project);
            self.batches.lock().expect("lock")[from..]
                .iter()
                .filter(|b| b.iter().any(|c| c.file == file))
                .count()
        }
    }

    #[tokio::test]
    async fn a_project_file_created_with_its_directory_then_renamed_over_is_seen() {
        let mut rig = Rig::start().await;
        let file = project_path(&rig.project);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(&file, "{}").expect("write");
        let change = rig.next("the new .opencode/sandbox.json").await;
        assert_eq!(change.file, file);
        assert_eq!(change.project.as_deref(), Some(rig.project.as_path()));
        // Once `.opencode` exists it is watched itself: a rename into it is seen.
        let temp = file.with_extension("json.tmp");
        std::fs::write(&temp, "{\"enabled\": true}").expect("write temp");
        std::fs::rename(&temp, &file).expect("rename");
        assert_eq!(rig.next("the rename").await.file, file);
        // So is its removal, and the directory's, and both coming back.
        std::fs::remove_dir_all(file.parent().expect("parent")).expect("rm");
        assert_eq!(rig.next("the removal").await.file, file);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(&file, "{}").expect("write");
        assert_eq!(rig.next("the file written again").await.file, file);
    }

    #[tokio::test]
    async fn the_global_file_is_seen_when_its_directories_appear_late() {
        let mut rig = Rig::start().await;
        let file = global_path(&rig.home);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(&file, "{}").expect("write");
        let change = rig.next("the global sandbox.json").await;
        assert_eq!(
            change,
            PolicyChanged {
                file,
                project: None
            }
        );
    }

    #[tokio::test]
    async fn a_burst_is_one_batch_and_reading_is_no_change() {
        let mut rig = Rig::start().await;
        let file = project_path(&rig.project);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        rig.next("the new .opencode directory").await;
        let before = rig.batches();
        for i in 0..20 {
            std::fs::write(&file, format!("{{\"enabled\": {}}}", i % 2 == 0)).expect("write");
        }
        rig.sentinel().await;
        let burst = rig.project_batches(before);
        // Twenty writes make one batch, or a few when the machine is slow enough to
        // stretch them past the longest burst; never one per write.
        assert!((1..=5).contains(&burst), "{burst} batches for 20 writes");
        // Reading the file (as every policy load does) is no change.
        let before = rig.batches();
        std::fs::read_to_string(&file).expect("read");
        rig.sentinel().await;
        assert_eq!(rig.project_batches(before), 0);
    }

    #[tokio::test]
    async fn an_unwatched_project_raises_nothing() {
        let mut rig = Rig::start().await;
        let before = rig.batches();
        rig.watch.unwatch_project(&rig.project);
        let file = project_path(&rig.project);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(&file, "{}").expect("write");
        rig.sentinel().await;
        assert_eq!(rig.project_batches(before), 0);
    }
}
