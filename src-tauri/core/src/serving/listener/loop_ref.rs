//! How other threads reach a query loop: the commands they send it, the half of it they
//! share ([`Shared`]: its epoll set, its wake-up and its command list), and a connection's
//! place in it ([`LoopRef`]), which the connection's sink and forwarder hold.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::served::{Entry, Served};
use super::sink::Owner;
use crate::sys::{Epoll, EventFd};

/// What other threads ask of a loop.
pub(super) enum Command {
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

/// One loop, as the threads that talk to it see it.
pub(super) struct Shared {
    pub(super) epoll: Epoll,
    pub(super) wake: EventFd,
    pub(super) commands: Mutex<Vec<Command>>,
    /// Connections it serves now (a new one goes to the least busy loop).
    pub(super) load: AtomicUsize,
}

impl Shared {
    pub(super) fn send(&self, command: Command) {
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
    pub(super) shared: Arc<Shared>,
    pub(super) token: u64,
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

    /// Flush what is owed (within [`FLUSH_GRACE`](super::FLUSH_GRACE)), end writing, and close once the peer
    /// has (within another grace).
    pub(super) fn finish(&self) {
        self.shared.send(Command::Finish(self.token));
    }

    /// Close now (nothing if it is closed already).
    pub(super) fn close(&self) {
        self.shared.send(Command::Close(self.token));
    }
}

impl Owner for LoopRef {
    fn write_pending(&self) {
        LoopRef::write_pending(self);
    }
}
