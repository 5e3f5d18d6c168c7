//! The query loops: a few threads (one per core, at most [`MAX_LOOPS`]) that hold every
//! admitted connection of every project. Each waits on an epoll set of its own, so an idle
//! connection costs its socket and a few hundred bytes rather than a thread and its stack.
//! A connection that has something to say is handed to a reader thread of its own while
//! it keeps talking (at most [`MAX_ACTIVE`] at once, across the process): it blocks in
//! `read`, decides and answers inline, as the simplest responder would, so a query costs
//! a read and a send; after [`ACTIVE_IDLE`] without a line it goes back to its loop. When
//! every reader is taken the loop serves the connection itself (one read per readiness
//! report, level-triggered, so a connection pouring lines in takes turns with the others).
//! Nothing is ever refused for want of a thread.

use std::collections::HashMap;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use tokio::runtime::Handle;
use tokio::sync::oneshot;

use super::sink::{AnswerSink, Closed};
use super::{FLUSH_GRACE, WRITE_STALL};
use crate::decision::broker::Connection;
use crate::sys::{Epoll, EventFd, Ready};
use crate::wire::protocol::LineFramer;

/// At most this many loops, however many cores: more threads than cores only wake each
/// other.
pub const MAX_LOOPS: usize = 4;

/// Bytes read from a ready socket at once: one buffer per loop or reader thread, not per
/// connection.
const READ_CHUNK: usize = 64 * 1024;

/// Reader threads at most, across every loop: the threads a flood of busy connections can
/// cost, whatever their number.
pub const MAX_ACTIVE: usize = 32;

/// How long a reader thread waits for a connection's next line before handing it back to
/// its loop.
pub const ACTIVE_IDLE: Duration = Duration::from_secs(2);

/// A reader thread's stack: the decision path parses the policy files when they change.
const READER_STACK: usize = 1024 * 1024;

/// Reader threads running now.
static ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// A reader slot, given back when dropped.
struct Slot;

impl Slot {
    fn take() -> Option<Self> {
        ACTIVE
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |n| {
                (n < MAX_ACTIVE).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        ACTIVE.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The token of a loop's own wake-up; connections' tokens start above it.
const WAKE: u64 = 0;

/// A loop's stack: the decision path parses the policy files when they change.
const LOOP_STACK: usize = 2 * 1024 * 1024;

/// What other threads ask of a loop.
enum Command {
    /// Serve this connection.
    Add(u64, Box<Entry>),
    /// Answers queued on the connection: watch for room to write them.
    Write(u64),
    /// The project is no longer served: flush, end writing, close once the peer does.
    Finish(u64),
    /// The connection's forwarder is gone (say its runtime ended): close it now.
    Close(u64),
    /// A reader thread hands the connection back (it went quiet).
    Return(u64, Box<Served>),
    /// A reader thread closed the connection.
    Gone(u64),
}

/// A connection handed to a loop.
pub(super) struct Entry {
    /// Its socket and answers.
    pub sink: Arc<AnswerSink>,
    /// The broker's side of it.
    pub conn: Connection,
    /// The runtime its listener runs on: the decision path arms prompt timeouts there.
    pub runtime: Handle,
    /// Dropped once the connection is closed.
    pub done: oneshot::Sender<()>,
}

/// One loop, as the threads that talk to it see it.
struct Shared {
    epoll: Epoll,
    wake: EventFd,
    commands: Mutex<Vec<Command>>,
    /// Connections it serves now (a new one goes to the least busy loop).
    load: AtomicUsize,
}

impl Shared {
    fn send(&self, command: Command) {
        self.commands
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(command);
        self.wake.raise();
    }
}

/// A connection's place in a loop: held by its sink and its forwarder to tell the loop
/// what it cannot see on the socket.
#[derive(Clone)]
pub(super) struct LoopRef {
    shared: Arc<Shared>,
    token: u64,
}

impl LoopRef {
    /// Hands the connection to the loop, which serves it from now on.
    pub(super) fn add(&self, entry: Entry) {
        self.shared.load.fetch_add(1, Ordering::Relaxed);
        self.shared.send(Command::Add(self.token, Box::new(entry)));
    }

    /// Answers started to queue: the loop writes them as the socket takes them.
    pub(super) fn write_pending(&self) {
        self.shared.send(Command::Write(self.token));
    }

    /// Flush what is owed (within [`FLUSH_GRACE`]), end writing, and close once the peer
    /// has (within another grace).
    pub(super) fn finish(&self) {
        self.shared.send(Command::Finish(self.token));
    }

    /// Close now (nothing if it is closed already).
    pub(super) fn close(&self) {
        self.shared.send(Command::Close(self.token));
    }
}

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

/// A connection being served.
struct Served {
    entry: Entry,
    framer: LineFramer,
    /// Answers are queued: when the socket last took some (or the queue started).
    writing: Option<Instant>,
    /// The project is no longer served.
    finishing: Option<Finishing>,
    /// In the loop's list of connections with a deadline.
    watched: bool,
}

#[derive(Clone, Copy)]
enum Finishing {
    /// Writing what is owed, until it is all out or the deadline.
    Flushing(Instant),
    /// Writing ended; waiting for the peer to close, until the deadline.
    Draining(Instant),
}

/// Why a connection is closed.
enum Close {
    /// The peer closed it, or it failed: nothing to say.
    Quietly,
    /// Said in the log.
    Because(&'static str),
}

impl Served {
    /// The earliest time the loop must look at this connection again.
    fn deadline(&self) -> Option<Instant> {
        // While finishing, its own deadlines rule (the stall is not checked then).
        let stall = self
            .writing
            .filter(|_| self.finishing.is_none())
            .map(|since| since + WRITE_STALL);
        let finish = self.finishing.map(|f| match f {
            Finishing::Flushing(at) | Finishing::Draining(at) => at,
        });
        match (stall, finish) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Handles one readiness report.
    fn on_ready(
        &mut self,
        ready: Ready,
        epoll: &Epoll,
        token: u64,
        buf: &mut [u8],
        out: &mut Vec<u8>,
        now: Instant,
    ) -> Result<(), Close> {
        if ready.writable && self.writing.is_some() {
            self.write_queued(epoll, token, now)?;
        }
        if ready.readable {
            self.read(buf, out)?;
        }
        Ok(())
    }

    fn write_queued(&mut self, epoll: &Epoll, token: u64, now: Instant) -> Result<(), Close> {
        let (wrote, empty) = self.entry.sink.write_queued().map_err(|_| Close::Quietly)?;
        if empty {
            self.writing = None;
            epoll
                .modify(self.entry.sink.fd(), token, false)
                .map_err(|_| Close::Quietly)?;
        } else if wrote > 0 {
            self.writing = Some(now);
        }
        Ok(())
    }

    /// One read, and the answers to every whole line it completed; false when there was
    /// nothing to read (or, on a reader thread, nothing came within its timeout).
    fn read(&mut self, buf: &mut [u8], out: &mut Vec<u8>) -> Result<bool, Close> {
        if self.entry.done.is_closed() {
            // Nobody waits for this connection any more (its runtime ended).
            return Err(Close::Quietly);
        }
        let n = match self.entry.sink.read(buf) {
            Ok(0) => return Err(Close::Quietly),
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                return Ok(false)
            }
            Err(_) => return Err(Close::Quietly),
        };
        if self.framer.push(&buf[..n]).is_err() {
            return Err(Close::Because(
                "a line over the limit: dropping the connection",
            ));
        }
        let _runtime = self.entry.runtime.enter();
        while let Some(line) = self.framer.next_line() {
            self.entry.conn.on_line(line, out);
        }
        self.framer.release();
        if out.is_empty() {
            return Ok(true);
        }
        let sent = self.entry.sink.send(out);
        out.clear();
        self.entry.conn.flush_activity();
        match sent {
            Ok(()) => Ok(true),
            Err(Closed::Stalled) => Err(Close::Because(
                "peer stopped reading answers: dropping the connection",
            )),
            Err(Closed::Gone) => Err(Close::Quietly),
        }
    }

    /// Moves the connection along its deadlines; Err when it must close.
    fn on_time(&mut self, epoll: &Epoll, token: u64, now: Instant) -> Result<(), Close> {
        if let Some(since) = self.writing {
            if now >= since + WRITE_STALL && self.finishing.is_none() {
                return Err(Close::Because(
                    "peer stopped reading answers: dropping the connection",
                ));
            }
        }
        match self.finishing {
            Some(Finishing::Flushing(at)) if now >= at || self.entry.sink.drained() => {
                self.entry.sink.end_writing();
                if self.writing.take().is_some() {
                    // Nothing more will be written: stop watching for room.
                    epoll
                        .modify(self.entry.sink.fd(), token, false)
                        .map_err(|_| Close::Quietly)?;
                }
                self.finishing = Some(Finishing::Draining(now + FLUSH_GRACE));
            }
            Some(Finishing::Draining(at)) if now >= at => return Err(Close::Quietly),
            _ => {}
        }
        Ok(())
    }
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

/// Closes a connection: the socket both ways (landstrip denies what it still held), the
/// broker's side dropped (its prompts withdrawn), and whoever waits told.
fn close(served: Served) {
    served.entry.sink.close();
    let Entry {
        conn,
        runtime,
        done,
        ..
    } = served.entry;
    let _runtime = runtime.enter();
    // A panic dropping it must not take the loop (and every other connection) down.
    let _ = catch_unwind(AssertUnwindSafe(move || drop(conn)));
    drop(done);
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

/// A connection on its way to a reader thread, with its slot.
struct Job {
    served: Served,
    token: u64,
    shared: Arc<Shared>,
    slot: Slot,
}

/// The reader threads: started as busy connections need them (never more than
/// [`MAX_ACTIVE`], since each job holds a slot), each ending after [`READER_KEEP`] without
/// work.
struct Readers {
    jobs: Mutex<std::sync::mpsc::Receiver<Job>>,
    submit: Mutex<Submit>,
}

struct Submit {
    tx: std::sync::mpsc::Sender<Job>,
    /// Reader threads alive now.
    threads: usize,
}

/// How long a reader thread without work stays for the next busy connection.
pub const READER_KEEP: Duration = Duration::from_secs(30);

fn readers() -> &'static Readers {
    static READERS: OnceLock<Readers> = OnceLock::new();
    READERS.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        Readers {
            jobs: Mutex::new(rx),
            submit: Mutex::new(Submit { tx, threads: 0 }),
        }
    })
}

impl Readers {
    /// Queues `job` for a reader, starting one if every reader may be busy; gives the job
    /// back if none runs and none can be started.
    fn submit(&'static self, job: Job) -> Result<(), Box<Job>> {
        let mut submit = self.submit.lock().unwrap_or_else(PoisonError::into_inner);
        // Each job holds a slot: with fewer threads than slots taken, one more is needed.
        if submit.threads < ACTIVE.load(Ordering::Acquire) {
            let started = std::thread::Builder::new()
                .name("query-reader".into())
                .stack_size(READER_STACK)
                .spawn(move || self.work());
            match started {
                Ok(_) => submit.threads += 1,
                Err(e) if submit.threads == 0 => {
                    tracing::warn!("cannot start a query reader thread: {e}");
                    return Err(Box::new(job));
                }
                // The readers there are take it when one is free.
                Err(e) => tracing::warn!("cannot start another query reader thread: {e}"),
            }
        }
        submit.tx.send(job).map_err(|e| Box::new(e.0))
    }

    /// A reader thread: takes jobs until none comes for [`READER_KEEP`].
    fn work(&self) {
        loop {
            // Idle readers wait for the queue's lock in turn: the keep counts from now,
            // not from when this one gets the lock (else they would end one per keep).
            let idle_until = Instant::now() + READER_KEEP;
            let job = {
                let jobs = self.jobs.lock().unwrap_or_else(PoisonError::into_inner);
                match jobs.recv_timeout(idle_until.saturating_duration_since(Instant::now())) {
                    Ok(job) => job,
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                        // Decided under the submit lock, so that a job queued meanwhile is
                        // either seen here or given a new thread by its submitter.
                        let mut submit = self.submit.lock().unwrap_or_else(PoisonError::into_inner);
                        match jobs.try_recv() {
                            Ok(job) => job,
                            Err(_) => {
                                submit.threads -= 1;
                                return;
                            }
                        }
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                }
            };
            let Job {
                served,
                token,
                shared,
                slot,
            } = job;
            read_while_active(served, token, &shared, slot);
        }
    }
}

/// A reader thread: blocks in `read` on the connection, deciding and answering, until
/// nothing comes for [`ACTIVE_IDLE`] (then it goes back to its loop) or it ends.
fn read_while_active(mut served: Served, token: u64, shared: &Arc<Shared>, slot: Slot) {
    let blocking = |served: &Served, on: bool| {
        let socket = served.entry.sink.socket();
        socket.set_nonblocking(!on)?;
        socket.set_read_timeout(on.then_some(ACTIVE_IDLE))
    };
    let mut buf = vec![0u8; READ_CHUNK / 4];
    let mut out = Vec::with_capacity(4096);
    let mut ended = if blocking(&served, true).is_err() {
        None
    } else {
        loop {
            let read = catch_unwind(AssertUnwindSafe(|| served.read(&mut buf, &mut out)));
            match read {
                Ok(Ok(true)) => {
                    // What a person's answer queued while the peer's buffer was full.
                    if !served.entry.sink.drained() && served.entry.sink.write_queued().is_err() {
                        break Some(Close::Quietly);
                    }
                }
                Ok(Ok(false)) => break None,
                Ok(Err(why)) => break Some(why),
                Err(_) => {
                    break Some(Close::Because("panicked serving a query connection"));
                }
            }
        }
    };
    if ended.is_none() && blocking(&served, false).is_err() {
        ended = Some(Close::Quietly);
    }
    match ended {
        None => shared.send(Command::Return(token, Box::new(served))),
        Some(why) => {
            if let Close::Because(what) = why {
                tracing::warn!(conn = served.entry.conn.id(), "{what}");
            }
            shared.load.fetch_sub(1, Ordering::Relaxed);
            close(served);
            shared.send(Command::Gone(token));
        }
    }
    drop(slot);
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
