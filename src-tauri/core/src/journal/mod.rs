//! The write journal (docs/ARCHITECTURE.md, "The write journal"): before the app answers
//! *allow* to a held write that a person (or a session grant) allowed, the prior state of
//! the path the trap names is kept here, so the write can be taken back (`undo.rs`).
//! Stored in `<data dir>/journal/`: `index.jsonl` (one line per write, run end, eviction
//! or undo; appended, never synced) and `blobs/<id>` (a file's prior bytes), the
//! directories 0700 and the files 0600.

mod capture;
pub mod nofollow;
mod store;
mod undo;

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use nofollow::Fingerprint;

use crate::wire::protocol::{FsOperation, Query, QueryKind};
pub use undo::{UndoOutcome, UndoResult, UndoTarget};

/// The journal's total size limit by default (the prior contents kept): 1 GiB.
pub const DEFAULT_LIMIT: u64 = 1 << 30;
/// One file's limit by default: 64 MiB; a larger file's entry is `too_large`.
pub const DEFAULT_FILE_LIMIT: u64 = 64 << 20;

/// What the journal does, from the app's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalConfig {
    /// Journal at all.
    pub enabled: bool,
    /// The total of the prior contents kept; the oldest sessions go first past it.
    pub limit: u64,
    /// One file's limit.
    pub file_limit: u64,
}

impl Default for JournalConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            limit: DEFAULT_LIMIT,
            file_limit: DEFAULT_FILE_LIMIT,
        }
    }
}

/// The prior state of a journaled path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Before {
    /// Nothing was there: an undo removes what the write made.
    Absent,
    /// A regular file: its bytes and mode are kept.
    File,
    /// A folder: its mode is kept.
    Dir,
    /// A symbolic link: its target is kept.
    Symlink,
    /// A regular file over the per-file limit: not kept.
    TooLarge,
    /// Not restorable exactly (`why` says why).
    NotUndoable,
}

/// One journaled write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Its id.
    pub id: u64,
    /// The run (connection) that wrote it: `<app start ms>.<connection id>`.
    pub run: String,
    /// The session the request carried (the hello's: `ses_…` or `run:PROGRAM:PID`).
    pub session: Option<String>,
    /// The project directory.
    pub project: PathBuf,
    /// The path whose prior state is kept.
    pub path: String,
    /// The held syscall.
    pub syscall: Option<String>,
    /// What was there.
    pub before: Before,
    /// A file's or folder's permission bits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
    /// A file's size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// A link's target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Why it cannot be undone, for `too_large` and `not_undoable`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// When it was journaled (before the allow went out), ms since the epoch.
    pub at_ms: u64,
}

/// A journaled write as `ctl journal` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalItem {
    /// Its id.
    pub id: u64,
    /// The session the request carried; for a run without a hello, null (see `run`).
    pub session: Option<String>,
    /// The run: `<app start ms>.<connection id>`; `--session` takes it too.
    pub run: String,
    /// The project directory.
    pub project: PathBuf,
    /// The path.
    pub path: String,
    /// The held syscall.
    pub syscall: Option<String>,
    /// What was there before.
    pub before: Before,
    /// When it was journaled, ms since the epoch.
    pub at_ms: u64,
    /// Whether an undo can put it back now.
    pub undoable: bool,
    /// Why not, when it cannot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// When its run ended and what it touched was fingerprinted; null while it runs.
    pub ended_ms: Option<u64>,
}

/// A held write about to be allowed, as the broker knows it.
#[derive(Debug, Clone, Copy)]
pub struct Held<'a> {
    /// The connection.
    pub conn: u64,
    /// The session the request carries.
    pub session: Option<&'a str>,
    /// The project directory.
    pub project: &'a Path,
    /// The resolved path landstrip named.
    pub path: &'a str,
    /// The held syscall.
    pub syscall: Option<&'a str>,
    /// The path as the program passed it.
    pub requested_path: Option<&'a str>,
    /// The asking process's working directory.
    pub cwd: Option<&'a str>,
}

/// How a run left the paths it touched.
#[derive(Debug, Clone, Default)]
struct RunEnd {
    at_ms: u64,
    prints: HashMap<String, Fingerprint>,
}

#[derive(Default)]
struct State {
    entries: Vec<Entry>,
    ends: HashMap<String, RunEnd>,
    evicted: HashSet<u64>,
    undone: HashSet<u64>,
    /// Bytes of prior contents kept (blobs).
    stored: u64,
    store: Option<store::Store>,
}

/// The write journal. Shared (`Arc`) by the broker and the operations.
pub struct Journal {
    dir: PathBuf,
    started_ms: u64,
    next_id: AtomicU64,
    enabled: AtomicBool,
    limit: AtomicU64,
    file_limit: AtomicU64,
    state: Mutex<State>,
    /// Runs whose end is being fingerprinted (an undo waits for them, bounded).
    ending: Mutex<HashSet<String>>,
    ended: Condvar,
}

impl Journal {
    /// Opens (creating, 0700) the journal in `dir` and reads its index back.
    pub fn open(dir: &Path, config: JournalConfig) -> io::Result<Arc<Self>> {
        let (store, state) = store::Store::open(dir)?;
        let next = state.entries.iter().map(|e| e.id).max().unwrap_or(0) + 1;
        let journal = Self {
            dir: dir.to_path_buf(),
            started_ms: crate::activity::now_ms(),
            next_id: AtomicU64::new(next),
            enabled: AtomicBool::new(config.enabled),
            limit: AtomicU64::new(config.limit),
            file_limit: AtomicU64::new(config.file_limit),
            state: Mutex::new(State {
                store: Some(store),
                ..state
            }),
            ending: Mutex::new(HashSet::new()),
            ended: Condvar::new(),
        };
        Ok(Arc::new(journal))
    }

    /// Where it lives.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Applies the settings (on, the limits) from now on.
    pub fn configure(&self, config: JournalConfig) {
        self.enabled.store(config.enabled, Ordering::Release);
        self.limit.store(config.limit, Ordering::Release);
        self.file_limit.store(config.file_limit, Ordering::Release);
    }

    /// The settings in force.
    pub fn config(&self) -> JournalConfig {
        JournalConfig {
            enabled: self.enabled.load(Ordering::Acquire),
            limit: self.limit.load(Ordering::Acquire),
            file_limit: self.file_limit.load(Ordering::Acquire),
        }
    }

    /// Whether writes are journaled now.
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The run key of connection `conn` of this app start.
    pub fn run_key(&self, conn: u64) -> String {
        format!("{}.{conn}", self.started_ms)
    }

    /// Records the prior state of the path `held` names, before its allow goes out.
    /// Returns the entry's id; None when the journal is off. A failure to store is
    /// logged and the entry kept as `not_undoable`: the allow goes out either way (a
    /// person said yes; the journal loses only the means to undo).
    pub fn record(&self, held: &Held<'_>) -> Option<u64> {
        if !self.enabled() {
            return None;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let captured = capture::capture(self, id, held);
        let entry = Entry {
            id,
            run: self.run_key(held.conn),
            session: held.session.map(str::to_owned),
            project: held.project.to_path_buf(),
            path: captured.path,
            syscall: held.syscall.map(str::to_owned),
            before: captured.before,
            mode: captured.mode,
            size: captured.size,
            target: captured.target,
            why: captured.why,
            at_ms: crate::activity::now_ms(),
        };
        let mut state = self.state();
        if let Some(store) = state.store.as_mut() {
            if let Err(e) = store.append_buffered(&store::Line::Write(entry.clone())) {
                tracing::warn!("the write journal's index could not be written: {e}");
            }
        }
        state.entries.push(entry);
        Some(id)
    }

    /// Writes out the index lines still buffered (at quit; every other line does it).
    pub fn flush(&self) {
        if let Some(store) = self.state().store.as_mut() {
            if let Err(e) = store.flush() {
                tracing::warn!("the write journal's index could not be written: {e}");
            }
        }
    }

    /// Makes room for `size` more bytes of prior contents, evicting the oldest sessions
    /// first; false when even an empty journal could not hold them.
    fn reserve(&self, size: u64) -> bool {
        let limit = self.limit.load(Ordering::Acquire);
        if size > limit {
            return false;
        }
        let mut state = self.state();
        while state.stored + size > limit {
            if !store::evict_oldest(&self.dir, &mut state) {
                return false;
            }
        }
        state.stored += size;
        true
    }

    /// Gives back a reservation that was not used.
    fn unreserve(&self, size: u64) {
        let mut state = self.state();
        state.stored = state.stored.saturating_sub(size);
    }

    /// The run of connection `conn` ended: fingerprints what it touched, on a thread of
    /// its own (hashing may take a while; the connection's thread goes on).
    pub fn end_run(self: &Arc<Self>, conn: u64) {
        let run = self.run_key(conn);
        let paths: Vec<String> = {
            let state = self.state();
            let mut seen = HashSet::new();
            state
                .entries
                .iter()
                .filter(|e| e.run == run && seen.insert(e.path.clone()))
                .map(|e| e.path.clone())
                .collect()
        };
        if paths.is_empty() {
            return;
        }
        self.ending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(run.clone());
        let journal = self.clone();
        let spawned = std::thread::Builder::new()
            .name("journal-end".into())
            .spawn(move || journal.fingerprint_run(run, paths));
        if let Err(e) = spawned {
            tracing::warn!("cannot fingerprint a run's writes: {e}");
        }
    }

    fn fingerprint_run(&self, run: String, paths: Vec<String>) {
        let prints: HashMap<String, Fingerprint> = paths
            .into_iter()
            .map(|p| {
                let print = nofollow::fingerprint(Path::new(&p));
                (p, print)
            })
            .collect();
        let end = RunEnd {
            at_ms: crate::activity::now_ms(),
            prints,
        };
        {
            let mut state = self.state();
            if let Some(store) = state.store.as_mut() {
                let line = store::Line::End {
                    run: run.clone(),
                    at_ms: end.at_ms,
                    prints: end.prints.clone(),
                };
                if let Err(e) = store.append(&line) {
                    tracing::warn!("the write journal's index could not be written: {e}");
                }
            }
            state.ends.insert(run.clone(), end);
        }
        self.ending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&run);
        self.ended.notify_all();
    }

    /// Waits (at most `bound`) until no run's end is being fingerprinted.
    fn wait_for_ends(&self, bound: Duration) {
        let ending = self.ending.lock().unwrap_or_else(|e| e.into_inner());
        let _ = self
            .ended
            .wait_timeout_while(ending, bound, |e| !e.is_empty());
    }

    /// The journaled writes, oldest first; only those of `session` (a session or a run
    /// key) when given.
    pub fn list(&self, session: Option<&str>) -> Vec<JournalItem> {
        let state = self.state();
        state
            .entries
            .iter()
            .filter(|e| session.is_none_or(|s| in_session(e, s)))
            .map(|e| {
                let why = refusal(&state, e);
                JournalItem {
                    id: e.id,
                    session: e.session.clone(),
                    run: e.run.clone(),
                    project: e.project.clone(),
                    path: e.path.clone(),
                    syscall: e.syscall.clone(),
                    before: e.before,
                    at_ms: e.at_ms,
                    undoable: why.is_none(),
                    why,
                    ended_ms: state.ends.get(&e.run).map(|end| end.at_ms),
                }
            })
            .collect()
    }

    /// Why allowing `query` (a held write) could not be undone, said before a person
    /// answers: a syscall whose trap names another path than the one changed, a file over
    /// the per-file limit, a FIFO, socket or device. None for a read, a network request, a
    /// write that could be undone, or with the journal off. One `lstat`.
    pub fn undo_note(&self, query: &Query) -> Option<String> {
        let QueryKind::Filesystem(fs) = &query.kind else {
            return None;
        };
        if !self.enabled() || fs.operation != FsOperation::Write {
            return None;
        }
        if let Some(why) = capture::unrestorable(query.syscall.as_deref()) {
            return Some(why.to_owned());
        }
        let meta = std::fs::symlink_metadata(&fs.path).ok()?;
        let limit = self.config().file_limit;
        if meta.is_file() && meta.len() > limit {
            return Some(format!(
                "cannot be undone: too large ({} over the {} per-file limit)",
                format_size(meta.len()),
                format_size(limit)
            ));
        }
        let kind = meta.file_type();
        (!kind.is_file() && !kind.is_dir() && !kind.is_symlink()).then(|| {
            "cannot be undone: not a regular file, folder or link (never opened)".to_owned()
        })
    }

    /// How many bytes of prior contents are kept.
    pub fn stored_bytes(&self) -> u64 {
        self.state().stored
    }

    fn blob_path(&self, id: u64) -> PathBuf {
        self.dir.join("blobs").join(id.to_string())
    }
}

/// Whether `entry` belongs to `session` (a session, or a run key).
fn in_session(entry: &Entry, session: &str) -> bool {
    entry.session.as_deref() == Some(session) || entry.run == session
}

/// Why `entry` cannot be undone now, if it cannot.
fn refusal(state: &State, entry: &Entry) -> Option<String> {
    if state.undone.contains(&entry.id) {
        return Some("already undone".to_owned());
    }
    if state.evicted.contains(&entry.id) {
        return Some("evicted: the journal reached its size limit".to_owned());
    }
    match entry.before {
        Before::Absent | Before::File | Before::Dir | Before::Symlink => None,
        Before::TooLarge | Before::NotUndoable => Some(
            entry
                .why
                .clone()
                .unwrap_or_else(|| "cannot be undone".to_owned()),
        ),
    }
}

/// A size as typed: `2GiB`, `64MiB`, `512KiB`, `1G`, or bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a size: e.g. 2GiB, 64MiB, 512KiB"))?;
    let shift = match unit.trim() {
        "" | "B" => 0,
        "K" | "KiB" | "k" => 10,
        "M" | "MiB" => 20,
        "G" | "GiB" => 30,
        "T" | "TiB" => 40,
        other => {
            return Err(format!(
                "{other:?} is not a size unit: B, KiB, MiB, GiB or TiB"
            ))
        }
    };
    number
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// A size as people read it: `2GiB`, `64MiB`, `1000B`.
pub fn format_size(bytes: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= 1 << shift && bytes % (1 << shift) == 0 {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    format!("{bytes}B")
}

#[cfg(test)]
mod tests;
