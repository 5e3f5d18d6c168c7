//! The reader threads of the query loops (`query_loop.rs`). A connection that has
//! something to say is handed to a reader thread of its own while it keeps talking (at
//! most [`MAX_ACTIVE`] at once, across the process): it blocks in `read`, decides and
//! answers inline, as the simplest responder would, so a query costs a read and a send;
//! after [`ACTIVE_IDLE`] without a line it goes back to its loop. A reader thread ends
//! after [`READER_KEEP`] without work.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use super::loop_ref::{Command, Shared};
use super::served::{close, Close, Served, READ_CHUNK};

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
pub(super) struct Slot;

impl Slot {
    pub(super) fn take() -> Option<Self> {
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

/// A connection on its way to a reader thread, with its slot.
pub(super) struct Job {
    pub(super) served: Served,
    pub(super) token: u64,
    pub(super) shared: Arc<Shared>,
    pub(super) slot: Slot,
}

/// The reader threads: started as busy connections need them (never more than
/// [`MAX_ACTIVE`], since each job holds a slot), each ending after [`READER_KEEP`] without
/// work.
pub(super) struct Readers {
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

pub(super) fn readers() -> &'static Readers {
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
    pub(super) fn submit(&'static self, job: Job) -> Result<(), Box<Job>> {
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
