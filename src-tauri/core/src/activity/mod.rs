//! The activity log: what was asked, what was answered and by whom. An append-only JSONL
//! file in the app's data directory, bounded in size, plus the most recent entries in
//! memory for the UI. Writing happens on a thread of its own so the hot path only queues.

mod query;

pub use query::{read_log, read_log_counted, rotated_path, ActivityFilter, Decision};

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Who (or what) settled a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decider {
    /// A person, in the dialog, a notification or the control command.
    User,
    /// A person on the phone page, from a paired device (named in the detail).
    Web,
    /// A live "allow for session" grant.
    SessionGrant,
    /// The policy files as they are on disk now.
    Policy,
    /// The project's policy says `enabled: false`.
    SandboxDisabled,
    /// A write matching denyWrite: approval never bypasses it.
    HardDenial,
    /// The user-set prompt timeout ran out.
    Timeout,
    /// The run's connection closed while the prompt was open.
    RunEnded,
    /// The app quit (or the project stopped being served) with the query held.
    Quit,
    /// Too many prompts open on one connection.
    Flood,
    /// Prompts were paused: what would have asked was denied (and counted).
    Paused,
    /// A network request of a run after a secret, denied without asking as the
    /// `afterSecret` setting says (docs/ARCHITECTURE.md, "After a secret").
    AfterSecret,
    /// A sandboxed read of a canary: denied at once, never asked, an incident recorded
    /// (docs/ARCHITECTURE.md, "Canaries").
    Canary,
    /// Not a query: a terminal trap, recorded only.
    Report,
    /// `ctl journal undo` (or the activity view's Undo) put a journaled write back.
    Undo,
    /// A remote machine's request left this desktop: settled on that machine, or the
    /// connection to it was lost (docs/ARCHITECTURE.md, "Remote machines").
    Remote,
}

/// What happened to a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Answered allow.
    Allow,
    /// Answered deny.
    Deny,
    /// Never answered: the run ended first (landstrip denies it by itself).
    Withdrawn,
    /// A terminal trap, never answered.
    Reported,
    /// An undo put a journaled path back to its state before the write.
    Restored,
    /// An undo left a journaled path as it is (the detail says why).
    Refused,
}

impl From<crate::wire::protocol::Action> for Outcome {
    fn from(action: crate::wire::protocol::Action) -> Self {
        match action {
            crate::wire::protocol::Action::Allow => Outcome::Allow,
            crate::wire::protocol::Action::Deny => Outcome::Deny,
        }
    }
}

/// One line of the activity log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityEntry {
    /// Milliseconds since the epoch.
    pub ts: u64,
    /// The project directory the run belongs to.
    pub project: String,
    /// The opencode session, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// `filesystem`, `network`, `launch`, …
    pub kind: String,
    /// `read`, `write`, `connect`, `bind`, … (empty for traps without one)
    pub operation: String,
    /// The path or network target.
    pub subject: String,
    /// The program that asked, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exe: Option<String>,
    /// Its pid, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// What happened.
    pub outcome: Outcome,
    /// Who decided.
    pub by: Decider,
    /// Extra words: the scope granted, the file written, an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// For a request a person was asked about: the asking process's command as people
    /// read it (`npm ci`), secrets masked (docs/ARCHITECTURE.md, "The command behind a
    /// request").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// And the processes from the command landstrip started down to it, each one's
    /// arguments, secrets masked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<String>,
}

/// An activity line borrowed from a query: the hot path serialises it at once instead of
/// building an [`ActivityEntry`]. Same JSON shape.
#[derive(Debug, Serialize)]
pub struct ActivityRef<'a> {
    /// Milliseconds since the epoch.
    pub ts: u64,
    /// The project directory.
    pub project: &'a str,
    /// The opencode session, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<&'a str>,
    /// `filesystem` or `network`.
    pub kind: &'a str,
    /// `read`, `write`, `connect`, `bind`, …
    pub operation: &'a str,
    /// The path or network target.
    pub subject: &'a str,
    /// The program that asked, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exe: Option<&'a str>,
    /// Its pid, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// What happened.
    pub outcome: Outcome,
    /// Who decided.
    pub by: Decider,
}

impl ActivityRef<'_> {
    /// Appends this record as one JSON line.
    pub fn write_line(&self, buf: &mut Vec<u8>) {
        if serde_json::to_writer(&mut *buf, self).is_ok() {
            buf.push(b'\n');
        }
    }
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// What the hot path hands the writer thread: JSON lines already serialised on the
/// caller's thread, so only one buffer crosses threads per batch (freeing many small
/// allocations on another thread contends on the allocator's locks).
enum Command {
    Lines(Vec<u8>),
    Flush(mpsc::SyncSender<()>),
}

/// The activity log.
pub struct ActivityLog {
    tx: Mutex<Option<Sender<Command>>>,
    recent: Arc<Mutex<VecDeque<Box<[u8]>>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    path: Option<PathBuf>,
}

/// How long the writer lets entries gather before writing them out.
const COALESCE: std::time::Duration = std::time::Duration::from_millis(20);

/// How many entries stay in memory for the UI.
pub const RECENT: usize = 500;

impl ActivityLog {
    /// Opens (creating) the log at `path`, rotating to `<path>.1` past `max_bytes`.
    pub fn open(path: &Path, max_bytes: u64) -> io::Result<Self> {
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let size = file.metadata()?.len();
        let sink = FileSink {
            path: path.to_path_buf(),
            max_bytes,
            out: BufWriter::new(file),
            size,
        };
        Self::start(Some(sink), Some(path.to_path_buf()))
    }

    /// A log kept in memory only (for tests and for when the data dir is unusable).
    pub fn in_memory() -> Self {
        match Self::start(None, None) {
            Ok(log) => log,
            // No thread: entries are dropped, and recent() stays empty.
            Err(_) => Self {
                tx: Mutex::new(None),
                recent: Arc::default(),
                writer: Mutex::new(None),
                path: None,
            },
        }
    }

    fn start(sink: Option<FileSink>, path: Option<PathBuf>) -> io::Result<Self> {
        let (tx, rx) = mpsc::channel();
        let recent = Arc::new(Mutex::new(VecDeque::with_capacity(RECENT)));
        let writer = Writer {
            sink,
            recent: recent.clone(),
        };
        let handle = std::thread::Builder::new()
            .name("activity-log".into())
            .spawn(move || writer.run(rx))?;
        Ok(Self {
            tx: Mutex::new(Some(tx)),
            recent,
            writer: Mutex::new(Some(handle)),
            path,
        })
    }

    /// The file behind the log, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Queues an entry; never blocks on disk.
    pub fn record(&self, entry: ActivityEntry) {
        self.record_all(vec![entry]);
    }

    /// Queues several entries at once (one hand-off to the writer thread).
    pub fn record_all(&self, entries: Vec<ActivityEntry>) {
        let mut lines = Vec::with_capacity(entries.len() * 256);
        for entry in &entries {
            if serde_json::to_writer(&mut lines, entry).is_ok() {
                lines.push(b'\n');
            }
        }
        self.record_lines(lines);
    }

    /// Queues JSON lines already serialised (see [`ActivityRef::write_line`]).
    pub fn record_lines(&self, lines: Vec<u8>) {
        if lines.is_empty() {
            return;
        }
        if let Some(tx) = self.tx.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            let _ = tx.send(Command::Lines(lines));
        }
    }

    /// Waits until everything queued so far is written.
    pub fn flush(&self) {
        let (done_tx, done_rx) = mpsc::sync_channel(1);
        let sent = match self.tx.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            Some(tx) => tx.send(Command::Flush(done_tx)).is_ok(),
            None => false,
        };
        if sent {
            let _ = done_rx.recv();
        }
    }

    /// The most recent entries, oldest first.
    pub fn recent(&self) -> Vec<ActivityEntry> {
        self.flush();
        let recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        recent
            .iter()
            .filter_map(|line| serde_json::from_slice(line).ok())
            .collect()
    }

    /// Writes out everything queued and stops the writer thread.
    pub fn close(&self) {
        drop(self.tx.lock().unwrap_or_else(|e| e.into_inner()).take());
        if let Some(handle) = self.writer.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = handle.join();
        }
    }
}

impl Drop for ActivityLog {
    fn drop(&mut self) {
        self.close();
    }
}

struct Writer {
    sink: Option<FileSink>,
    recent: Arc<Mutex<VecDeque<Box<[u8]>>>>,
}

impl Writer {
    fn run(mut self, rx: Receiver<Command>) {
        // Block for one command, then let a burst gather before draining it: senders to a
        // receiver that is not parked cost no wake-up, so a busy run wakes this thread at
        // most once per COALESCE, and an idle log not at all.
        while let Ok(first) = rx.recv() {
            if matches!(first, Command::Lines(_)) {
                std::thread::sleep(COALESCE);
            }
            let mut next = Some(first);
            while let Some(cmd) = next {
                match cmd {
                    Command::Lines(lines) => self.write(&lines),
                    Command::Flush(done) => {
                        self.flush();
                        let _ = done.send(());
                    }
                }
                next = rx.try_recv().ok();
            }
            self.flush();
        }
        self.flush();
    }

    fn write(&mut self, lines: &[u8]) {
        if let Some(sink) = self.sink.as_mut() {
            if let Err(e) = sink.append(lines) {
                tracing::warn!("activity log {}: {e}", sink.path.display());
            }
        }
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        for line in lines.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            if recent.len() == RECENT {
                recent.pop_front();
            }
            recent.push_back(line.into());
        }
    }

    fn flush(&mut self) {
        if let Some(sink) = self.sink.as_mut() {
            let _ = sink.out.flush();
        }
    }
}

struct FileSink {
    path: PathBuf,
    max_bytes: u64,
    out: BufWriter<File>,
    size: u64,
}

impl FileSink {
    fn append(&mut self, lines: &[u8]) -> io::Result<()> {
        if self.size > 0 && self.size + lines.len() as u64 > self.max_bytes {
            self.rotate()?;
        }
        self.out.write_all(lines)?;
        self.size += lines.len() as u64;
        Ok(())
    }

    fn rotate(&mut self) -> io::Result<()> {
        self.out.flush()?;
        let mut old = self.path.clone().into_os_string();
        old.push(".1");
        fs::rename(&self.path, &old)?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        self.out = BufWriter::new(file);
        self.size = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(subject: &str) -> ActivityEntry {
        ActivityEntry {
            ts: now_ms(),
            project: "/p".into(),
            session: None,
            kind: "filesystem".into(),
            operation: "write".into(),
            subject: subject.into(),
            exe: Some("/usr/bin/dash".into()),
            pid: Some(7),
            outcome: Outcome::Allow,
            by: Decider::SessionGrant,
            detail: None,
            command: None,
            chain: Vec::new(),
        }
    }

    #[test]
    fn entries_are_appended_as_json_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("activity.jsonl");
        let log = ActivityLog::open(&path, 1 << 20).unwrap();
        log.record(entry("/tmp/a"));
        log.record(entry("/tmp/b"));
        log.flush();
        let text = fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1]["subject"], "/tmp/b");
        assert_eq!(lines[1]["by"], "session_grant");
        assert_eq!(lines[1]["outcome"], "allow");
        assert_eq!(log.recent().len(), 2);
    }

    #[test]
    fn the_file_is_bounded_by_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("activity.jsonl");
        let log = ActivityLog::open(&path, 2_000).unwrap();
        for i in 0..100 {
            log.record(entry(&format!("/tmp/{i}")));
        }
        log.close();
        let current = fs::metadata(&path).unwrap().len();
        let old = fs::metadata(dir.path().join("activity.jsonl.1"))
            .unwrap()
            .len();
        assert!(current <= 2_000, "current {current}");
        assert!(old <= 2_000, "old {old}");
        let last = fs::read_to_string(&path).unwrap();
        assert!(last.contains("\"/tmp/99\""));
    }

    #[test]
    fn recent_keeps_only_the_newest() {
        let log = ActivityLog::in_memory();
        for i in 0..(RECENT + 10) {
            log.record(entry(&format!("/tmp/{i}")));
        }
        let recent = log.recent();
        assert_eq!(recent.len(), RECENT);
        assert_eq!(recent[0].subject, "/tmp/10");
    }
}
