//! Where one connection's answers go. Whoever answers (the query loop for what the rules
//! settle, the connection's forwarder for a person's decision) writes through the sink,
//! which never waits on the peer: the socket takes the bytes at once, or they are queued
//! and the connection's query loop writes them as the peer reads.

use std::io::{self, Read};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsFd;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::MAX_UNSENT;

/// Why the sink took nothing: the connection is being closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Closed {
    /// The peer stopped reading and more than [`MAX_UNSENT`] bytes were owed.
    #[error("the peer stopped reading its answers")]
    Stalled,
    /// The socket failed, or the connection was closed on our side.
    #[error("the connection is closed")]
    Gone,
}

/// One connection's socket (non-blocking), shared by everyone who answers on it and read
/// by its query loop. Lines are whole on the wire: one writer at a time, in order of
/// arrival.
pub(super) struct AnswerSink {
    socket: TcpStream,
    state: Mutex<State>,
    /// The loop serving the connection, told when answers start to queue.
    owner: Box<dyn Owner>,
}

/// Who serves the connection (its query loop, through its place there): told when answers
/// start to queue, to write them as the socket takes them. A trait, so that the sink names
/// no loop type: the loop's commands hold the sink.
pub(super) trait Owner: Send + Sync {
    /// Answers started to queue.
    fn write_pending(&self);
}

#[derive(Default)]
struct State {
    /// Bytes owed and not yet taken by the socket, oldest first.
    queued: Vec<u8>,
    closed: Option<Closed>,
}

impl AnswerSink {
    /// A sink writing on `socket` (non-blocking), served by the loop `owner`.
    pub(super) fn new(socket: TcpStream, owner: impl Owner + 'static) -> Arc<Self> {
        Arc::new(Self {
            socket,
            state: Mutex::new(State::default()),
            owner: Box::new(owner),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The socket itself (to switch it between blocking and not).
    pub(super) fn socket(&self) -> &TcpStream {
        &self.socket
    }

    /// The socket, for its loop to watch.
    pub(super) fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.socket.as_fd()
    }

    /// Reads what the socket holds now (`WouldBlock` when nothing).
    pub(super) fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        (&self.socket).read(buf)
    }

    /// Writes `bytes` (whole answer lines) now, or queues them behind what is owed for the
    /// loop to write as the peer reads. Never waits on the peer.
    pub(super) fn send(&self, bytes: &[u8]) -> Result<(), Closed> {
        let mut state = self.state();
        if let Some(why) = state.closed {
            return Err(why);
        }
        let mut rest = bytes;
        if state.queued.is_empty() {
            match crate::sys::send_now(self.socket.as_fd(), bytes) {
                Ok(n) if n == bytes.len() => return Ok(()),
                Ok(n) => rest = &bytes[n..],
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => return Err(self.close_locked(&mut state, Closed::Gone, Shutdown::Both)),
            }
        }
        let started = state.queued.is_empty();
        state.queued.extend_from_slice(rest);
        if state.queued.len() > MAX_UNSENT {
            return Err(self.close_locked(&mut state, Closed::Stalled, Shutdown::Both));
        }
        drop(state);
        if started {
            self.owner.write_pending();
        }
        Ok(())
    }

    /// Writes as much of the queue as the socket takes now: how many bytes went, and
    /// whether nothing is left (a closed sink has nothing left).
    pub(super) fn write_queued(&self) -> Result<(usize, bool), Closed> {
        let mut state = self.state();
        if state.closed.is_some() || state.queued.is_empty() {
            return Ok((0, true));
        }
        match crate::sys::send_now(self.socket.as_fd(), &state.queued) {
            Ok(n) => {
                state.queued.drain(..n);
                if state.queued.is_empty() {
                    // A burst's queue can be large; an idle connection keeps none of it.
                    state.queued = Vec::new();
                }
                Ok((n, state.queued.is_empty()))
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok((0, false)),
            Err(_) => Err(self.close_locked(&mut state, Closed::Gone, Shutdown::Both)),
        }
    }

    /// Nothing is owed (or the sink is closed).
    pub(super) fn drained(&self) -> bool {
        let state = self.state();
        state.closed.is_some() || state.queued.is_empty()
    }

    /// Ends our side's writing: the peer reads end of file after the last answer, and the
    /// connection is closed once the peer closes it (or by [`AnswerSink::close`]). What is
    /// still owed is dropped. A query the peer sends meanwhile is still read (and finds
    /// the sink closed) rather than answered by a reset that would discard the answers on
    /// their way.
    pub(super) fn end_writing(&self) {
        let mut state = self.state();
        self.close_locked(&mut state, Closed::Gone, Shutdown::Write);
    }

    /// Closes the connection now: what is owed is dropped (the peer is gone or
    /// misbehaved).
    pub(super) fn close(&self) {
        let mut state = self.state();
        self.close_locked(&mut state, Closed::Gone, Shutdown::Both);
    }

    /// Marks the sink closed (keeping the first reason), drops what is owed and shuts the
    /// socket down `how`.
    fn close_locked(&self, state: &mut State, why: Closed, how: Shutdown) -> Closed {
        let closed = *state.closed.get_or_insert(why);
        state.queued = Vec::new();
        let _ = self.socket.shutdown(how);
        closed
    }
}

#[cfg(test)]
mod tests {
    use super::super::loop_ref::LoopRef;
    use super::super::query_loop;
    use super::super::served::Entry;
    use super::*;
    use crate::activity::ActivityLog;
    use crate::decision::broker::Broker;
    use crate::policy::project::Project;
    use std::io::Read;
    use std::net::TcpListener;
    use std::time::{Duration, Instant};

    /// A connected pair on loopback: our side (non-blocking, as served) and the peer's.
    fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let peer = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (ours, _) = listener.accept().expect("accept");
        ours.set_nonblocking(true).expect("non-blocking");
        // Every wait of the tests is bounded.
        peer.set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        (ours, peer)
    }

    /// Numbered lines, so that order and completeness can be checked.
    fn line(i: usize) -> Vec<u8> {
        format!("{{\"query_id\":\"{i}\",\"action\":\"allow\"}}\n").into_bytes()
    }

    /// Our side of a pair served by a real query loop, as the listener hands it over.
    struct Served {
        sink: Arc<AnswerSink>,
        place: LoopRef,
        done: tokio::sync::oneshot::Receiver<()>,
        _runtime: tokio::runtime::Runtime,
        _dir: tempfile::TempDir,
    }

    fn served(ours: TcpStream) -> Served {
        let dir = tempfile::tempdir().expect("tempdir");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let broker = Broker::new(Arc::new(ActivityLog::in_memory()));
        let project = Arc::new(Project::new(dir.path().join("p"), dir.path().join("h")));
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let place = query_loop::place().expect("a query loop");
        let sink = AnswerSink::new(ours, place.clone());
        let (done_tx, done) = tokio::sync::oneshot::channel();
        place.add(Entry {
            sink: Arc::clone(&sink),
            conn: broker.connect(project, tx),
            runtime: runtime.handle().clone(),
            done: done_tx,
        });
        Served {
            sink,
            place,
            done,
            _runtime: runtime,
            _dir: dir,
        }
    }

    /// Waits (bounded) until the loop closed the connection.
    fn closed(mut done: tokio::sync::oneshot::Receiver<()>) {
        let deadline = Instant::now() + super::super::WRITE_STALL + Duration::from_secs(30);
        while !matches!(
            done.try_recv(),
            Err(tokio::sync::oneshot::error::TryRecvError::Closed)
        ) {
            assert!(
                Instant::now() < deadline,
                "the loop never closed the connection"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn what_the_socket_cannot_take_now_is_written_in_order_as_the_peer_reads() {
        // Whether a send lands while the loop writes the queue is up to the scheduler:
        // several rounds make the case that would interleave lines all but certain.
        for _ in 0..6 {
            slow_peer_round();
        }
    }

    fn slow_peer_round() {
        let (ours, mut peer) = pair();
        let served = served(ours);
        let sink = Arc::clone(&served.sink);
        // A peer that reads nothing until the socket is full and answers queue, then
        // reads slowly until end of file.
        let (start_tx, start) = std::sync::mpsc::channel::<()>();
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            let mut chunk = [0u8; 4096];
            start
                .recv_timeout(Duration::from_secs(60))
                .expect("the sender never filled the socket");
            loop {
                match peer.read(&mut chunk) {
                    Ok(0) => return got,
                    Ok(n) => got.extend_from_slice(&chunk[..n]),
                    Err(e) => panic!("reading the answers: {e}"),
                }
                // Slower than the sender (a peer busy elsewhere), not a synchronisation.
                std::thread::sleep(Duration::from_micros(200));
            }
        });
        // Sends until the socket is full and the queue is in use, then 256 KiB more in
        // bursts, so that some go out while the loop writes and the queue is empty:
        // none may be lost, reordered or cut into another.
        let mut expected = Vec::new();
        let mut i = 0;
        let mut behind = 0;
        let mut queued_seen = false;
        while behind < 256 * 1024 {
            let bytes = line(i);
            expected.extend_from_slice(&bytes);
            sink.send(&bytes).expect("queued");
            i += 1;
            if !queued_seen && !sink.drained() {
                queued_seen = true;
                start_tx.send(()).expect("the reader is waiting");
            }
            if queued_seen {
                behind += bytes.len();
                // Now and then a pause in which the loop catches up.
                if i % 128 == 0 {
                    std::thread::sleep(Duration::from_micros(500));
                }
            }
            assert!(
                expected.len() < 256 << 20,
                "the socket took 256 MiB without the peer reading: the queue was never used"
            );
        }
        // Everything written before the connection is finished, so that the test does
        // not hang on FLUSH_GRACE.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !sink.drained() {
            assert!(
                Instant::now() < deadline,
                "the loop never wrote the queue out"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        served.place.finish();
        let got = reader.join().expect("reader");
        closed(served.done);
        assert_eq!(got.len(), expected.len(), "answers lost or added");
        assert!(
            got == expected,
            "the answers arrived changed or out of order"
        );
    }

    #[test]
    fn a_peer_that_takes_none_of_its_queued_answers_is_dropped_after_the_stall_bound() {
        let (ours, mut peer) = pair();
        let served = served(ours);
        // Fill the socket until answers queue, well under the cap; then nothing more.
        let mut sent = 0usize;
        while served.sink.drained() {
            served.sink.send(&line(sent)).expect("queued");
            sent += 1;
            assert!(sent < 10_000_000, "the socket never filled");
        }
        let queued_at = Instant::now();
        closed(served.done);
        let after = queued_at.elapsed();
        eprintln!("dropped {after:?} after its answers started to queue");
        assert!(
            after >= super::super::WRITE_STALL,
            "dropped after {after:?}, before the stall bound"
        );
        // Closed both ways: the peer reads what the socket had taken, then end of file.
        let mut rest = Vec::new();
        peer.read_to_end(&mut rest)
            .expect("end of file after what was sent");
    }

    #[test]
    fn a_peer_that_never_reads_is_dropped_once_the_cap_is_owed() {
        let (ours, mut peer) = pair();
        let served = served(ours);
        let sink = &served.sink;
        let (mut sent, mut taken) = (0usize, 0usize);
        let (why, refused) = loop {
            let bytes = line(sent);
            match sink.send(&bytes) {
                Ok(()) => {
                    sent += 1;
                    taken += bytes.len();
                }
                Err(why) => break (why, bytes.len()),
            }
            assert!(sent < 10_000_000, "never dropped");
        };
        assert_eq!(why, Closed::Stalled);
        // Closed both ways: the peer reads what the socket buffers (ours and the peer's)
        // had taken, then end of file (not its read timeout).
        let mut buffered = Vec::new();
        peer.read_to_end(&mut buffered)
            .expect("end of file after what was sent");
        let buffered = buffered.len();
        // What the sink took is what the socket buffers held plus what it queued: dropped
        // once the queue passed MAX_UNSENT, and not before.
        eprintln!(
            "dropped after {taken} bytes taken: {buffered} in the socket buffers, {} queued (cap {MAX_UNSENT})",
            taken - buffered
        );
        assert!(
            taken <= MAX_UNSENT + buffered,
            "{taken} bytes taken from a peer that never reads: more than MAX_UNSENT ({MAX_UNSENT}) + the socket buffers ({buffered})"
        );
        assert!(
            taken + refused > MAX_UNSENT + buffered,
            "dropped with {} bytes queued, under MAX_UNSENT ({MAX_UNSENT})",
            taken + refused - buffered
        );
        assert!(sink.send(b"x\n") == Err(Closed::Stalled));
        // The loop sees the end and lets the connection go.
        closed(served.done);
    }
}
