//! The query loops: a few threads (one per core, at most [`MAX_LOOPS`]) that hold every
//! admitted connection of every project. Each waits on an epoll set of its own, so an idle
//! connection costs its socket and a few hundred bytes rather than a thread and its stack.
//! A connection that has something to say is handed to a reader thread (`readers.rs`)
//! while it keeps talking, and comes back after [`ACTIVE_IDLE`](super::ACTIVE_IDLE) without a line. When
//! every reader is taken the loop serves the connection itself (one read per readiness
//! report, level-triggered, so a connection pouring lines in takes turns with the others).
//! Nothing is ever refused for want of a thread. Other threads reach a loop through
//! `loop_ref.rs`; a connection's own state and reading are in `served.rs`.

use std::collections::HashMap;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use super::loop_ref::{Command, LoopRef, Shared};
use super::readers::{readers, Job, Slot};
use super::served::{close, Close, Finishing, Served, READ_CHUNK};
use super::FLUSH_GRACE;
use crate::sys::{Epoll, EventFd};
use crate::wire::protocol::LineFramer;

/// At most this many loops, however many cores: more threads than cores only wake each
/// other.
pub const MAX_LOOPS: usize = 4;

/// The token of a loop's own wake-up; connections' tokens start above it.
const WAKE: u64 = 0;

/// A loop's stack: the decision path parses the policy files when they change.
const LOOP_STACK: usize = 2 * 1024 * 1024;

/// The loops, started on first use and kept for the process's life (independent of any
/// one async runtime: tests run many).
fn loops() -> &'static [Arc<Shared>] {
    static LOOPS: OnceLock<Vec<Arc<Shared>>> = OnceLock::new();
    LOOPS.get_or_init(|| {
        let files = crate::sys::raise_open_files_limit();
        tracing::debug!("query loops: up to {files} open files");
        let count = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
            .clamp(1, MAX_LOOPS);
        (0..count).filter_map(|i| start(i).ok()).collect()
    })
}

/// Starts loop `i`; logs and fails if it cannot.
fn start(i: usize) -> io::Result<Arc<Shared>> {
    let started = (|| {
        let shared = Arc::new(Shared {
            epoll: Epoll::new()?,
            wake: EventFd::new()?,
            commands: Mutex::new(Vec::new()),
            load: AtomicUsize::new(0),
        });
        shared.epoll.add(shared.wake.as_fd(), WAKE, false)?;
        let running = Arc::clone(&shared);
        std::thread::Builder::new()
            .name(format!("query-loop-{i}"))
            .stack_size(LOOP_STACK)
            .spawn(move || run(&running))?;
        Ok(shared)
    })();
    if let Err(e) = &started {
        tracing::error!("cannot start query loop {i}: {e}");
    }
    started
}

/// A place for a new connection in the least busy loop; None when no loop could be
/// started (the connection is then dropped, and landstrip denies what it would ask).
pub(super) fn place() -> Option<LoopRef> {
    static NEXT_TOKEN: AtomicU64 = AtomicU64::new(WAKE + 1);
    let shared = loops()
        .iter()
        .min_by_key(|l| l.load.load(Ordering::Relaxed))?;
    Some(LoopRef {
        shared: Arc::clone(shared),
        token: NEXT_TOKEN.fetch_add(1, Ordering::Relaxed),
    })
}

/// Threads serving query connections now, across every loop; for tests and diagnostics.
pub fn loop_threads() -> usize {
    loops().len()
}

/// A loop's own state.
struct Loop<'a> {
    shared: &'a Arc<Shared>,
    served: HashMap<u64, Served>,
    /// Connections with a deadline (answers queued, or finishing); may name closed ones.
    watched: Vec<u64>,
    /// Connections of this loop on a reader thread now, with the commands that came for
    /// them meanwhile (applied when they come back).
    active: HashMap<u64, Vec<Command>>,
}

impl Loop<'_> {
    fn apply(&mut self, command: Command, now: Instant) {
        let token = match &command {
            Command::Write(t) | Command::Finish(t) | Command::Close(t) => Some(*t),
            _ => None,
        };
        if let Some(parked) = token.and_then(|t| self.active.get_mut(&t)) {
            parked.push(command);
            return;
        }
        match command {
            Command::Return(token, served) => {
                let parked = self.active.remove(&token).unwrap_or_default();
                let mut served = *served;
                // Quiet now: it keeps nothing of its last burst while it waits.
                served.framer.release_all();
                // Answers may have queued while it was away.
                let write = !served.entry.sink.drained();
                if let Err(e) = self.shared.epoll.add(served.entry.sink.fd(), token, write) {
                    tracing::warn!("cannot watch a query connection again: {e}");
                    self.shared.load.fetch_sub(1, Ordering::Relaxed);
                    close(served);
                    return;
                }
                if write {
                    served.writing = Some(now);
                }
                self.served.insert(token, served);
                if write {
                    self.watch(token);
                }
                for command in parked {
                    self.apply(command, now);
                }
            }
            Command::Gone(token) => {
                self.active.remove(&token);
            }
            Command::Add(token, entry) => {
                let served = Served {
                    entry: *entry,
                    framer: LineFramer::new(),
                    writing: None,
                    finishing: None,
                    watched: false,
                };
                if let Err(e) = self.shared.epoll.add(served.entry.sink.fd(), token, false) {
                    tracing::warn!("cannot watch a query connection: {e}");
                    self.shared.load.fetch_sub(1, Ordering::Relaxed);
                    close(served);
                    return;
                }
                self.served.insert(token, served);
            }
            Command::Write(token) => {
                let Some(served) = self.served.get_mut(&token) else {
                    return;
                };
                if served.writing.is_none() {
                    served.writing = Some(now);
                    if self
                        .shared
                        .epoll
                        .modify(served.entry.sink.fd(), token, true)
                        .is_err()
                    {
                        self.close(token, Close::Quietly);
                        return;
                    }
                    self.watch(token);
                }
            }
            Command::Finish(token) => {
                let Some(served) = self.served.get_mut(&token) else {
                    return;
                };
                if served.finishing.is_none() {
                    served.finishing = Some(Finishing::Flushing(now + FLUSH_GRACE));
                    self.watch(token);
                }
            }
            Command::Close(token) => self.close(token, Close::Quietly),
        }
    }

    fn watch(&mut self, token: u64) {
        if let Some(served) = self.served.get_mut(&token) {
            if !served.watched {
                served.watched = true;
                self.watched.push(token);
            }
        }
    }

    fn close(&mut self, token: u64, why: Close) {
        let Some(served) = self.served.remove(&token) else {
            return;
        };
        if let Close::Because(what) = why {
            tracing::warn!(conn = served.entry.conn.id(), "{what}");
        }
        let _ = self.shared.epoll.delete(served.entry.sink.fd());
        self.shared.load.fetch_sub(1, Ordering::Relaxed);
        close(served);
    }

    /// Looks at every watched connection; drops from the list those with nothing due.
    fn sweep(&mut self, now: Instant) {
        let mut due = Vec::new();
        self.watched.retain(|token| {
            let Some(served) = self.served.get_mut(token) else {
                return false;
            };
            if let Err(why) = served.on_time(&self.shared.epoll, *token, now) {
                due.push((*token, why));
                return false;
            }
            let keep = served.deadline().is_some();
            served.watched = keep;
            keep
        });
        for (token, why) in due {
            self.close(token, why);
        }
    }

    /// How long the next wait may last: until the earliest deadline, or for ever.
    fn timeout(&self, now: Instant) -> Option<Duration> {
        self.watched
            .iter()
            .filter_map(|token| self.served.get(token)?.deadline())
            .min()
            .map(|at| at.saturating_duration_since(now))
    }
}

/// Hands `token`'s connection to a reader thread, if one is free or may be started;
/// false (and the connection stays) otherwise.
fn promote(state: &mut Loop<'_>, token: u64) -> bool {
    let Some(served) = state.served.get(&token) else {
        return false;
    };
    if served.writing.is_some() || served.finishing.is_some() {
        // The loop is writing or finishing it: keep it here.
        return false;
    }
    let Some(slot) = Slot::take() else {
        return false;
    };
    let Some(served) = state.served.remove(&token) else {
        return false;
    };
    let _ = state.shared.epoll.delete(served.entry.sink.fd());
    let job = Job {
        served,
        token,
        shared: Arc::clone(state.shared),
        slot,
    };
    match readers().submit(job) {
        Ok(()) => {
            state.active.insert(token, Vec::new());
            true
        }
        Err(job) => {
            // No reader can run it: the loop keeps serving it.
            let Job { served, .. } = *job;
            let fd_ok = state
                .shared
                .epoll
                .add(served.entry.sink.fd(), token, false)
                .is_ok();
            state.served.insert(token, served);
            if !fd_ok {
                state.close(token, Close::Quietly);
            }
            false
        }
    }
}

/// A loop's thread: waits, reads, decides, answers; for the process's life.
fn run(shared: &Arc<Shared>) {
    let mut state = Loop {
        shared,
        served: HashMap::new(),
        watched: Vec::new(),
        active: HashMap::new(),
    };
    let mut ready = Vec::with_capacity(256);
    let mut buf = vec![0u8; READ_CHUNK];
    let mut out = Vec::with_capacity(4096);
    loop {
        let timeout = state.timeout(Instant::now());
        ready.clear();
        if let Err(e) = shared.epoll.wait(&mut ready, timeout) {
            tracing::error!("query loop: {e}");
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        let now = Instant::now();
        for r in &ready {
            if r.token == WAKE {
                shared.wake.clear();
                let commands = std::mem::take(
                    &mut *shared
                        .commands
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner),
                );
                for command in commands {
                    state.apply(command, now);
                }
                continue;
            }
            if r.readable && !r.writable && promote(&mut state, r.token) {
                continue;
            }
            let Some(served) = state.served.get_mut(&r.token) else {
                continue;
            };
            // The decision path is the one complex thing a loop runs: a panic there ends
            // that connection, not the loop (where panics unwind: the release build
            // aborts on any panic, as it did with a thread per connection).
            let handled = catch_unwind(AssertUnwindSafe(|| {
                served.on_ready(*r, &shared.epoll, r.token, &mut buf, &mut out, now)
            }));
            match handled {
                Ok(Ok(())) => {
                    if served.writing.is_some() && !served.watched {
                        state.watch(r.token);
                    }
                }
                Ok(Err(why)) => state.close(r.token, why),
                Err(_) => {
                    out.clear();
                    state.close(
                        r.token,
                        Close::Because("panicked serving a query connection"),
                    );
                }
            }
        }
        if !state.watched.is_empty() {
            state.sweep(Instant::now());
        }
    }
}
