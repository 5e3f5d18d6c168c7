//! A connection being served: its sink, its line framer and its deadlines, read and
//! answered by its query loop or, while it keeps talking, by a reader thread
//! (`query_loop.rs`, `readers.rs`), and closed by whichever holds it.

use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

use tokio::runtime::Handle;
use tokio::sync::oneshot;

use super::sink::{AnswerSink, Closed};
use super::{FLUSH_GRACE, WRITE_STALL};
use crate::decision::broker::Connection;
use crate::sys::{Epoll, Ready};
use crate::wire::protocol::LineFramer;

/// Bytes read from a ready socket at once: one buffer per loop or reader thread, not per
/// connection.
pub(super) const READ_CHUNK: usize = 64 * 1024;

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

/// A connection being served.
pub(super) struct Served {
    pub(super) entry: Entry,
    pub(super) framer: LineFramer,
    /// Answers are queued: when the socket last took some (or the queue started).
    pub(super) writing: Option<Instant>,
    /// The project is no longer served.
    pub(super) finishing: Option<Finishing>,
    /// In the loop's list of connections with a deadline.
    pub(super) watched: bool,
}

#[derive(Clone, Copy)]
pub(super) enum Finishing {
    /// Writing what is owed, until it is all out or the deadline.
    Flushing(Instant),
    /// Writing ended; waiting for the peer to close, until the deadline.
    Draining(Instant),
}

/// Why a connection is closed.
pub(super) enum Close {
    /// The peer closed it, or it failed: nothing to say.
    Quietly,
    /// Said in the log.
    Because(&'static str),
}

impl Served {
    /// The earliest time the loop must look at this connection again.
    pub(super) fn deadline(&self) -> Option<Instant> {
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
    pub(super) fn on_ready(
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
    pub(super) fn read(&mut self, buf: &mut [u8], out: &mut Vec<u8>) -> Result<bool, Close> {
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
    pub(super) fn on_time(&mut self, epoll: &Epoll, token: u64, now: Instant) -> Result<(), Close> {
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

/// Closes a connection: the socket both ways (landstrip denies what it still held), the
/// broker's side dropped (its prompts withdrawn), and whoever waits told.
pub(super) fn close(served: Served) {
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
