//! Where one connection's answers go. Whoever answers (the connection's reader thread for
//! what the rules settle, the answer forwarder for a person's decision) writes through the
//! sink, which never waits on the peer: the socket takes the bytes at once, or they are
//! queued and a flusher thread of the connection's own writes them as the peer reads.

use std::io::{self, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsFd;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

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

/// The write side of one connection (a clone of its socket), shared by everyone who
/// answers on it. Lines are whole on the wire: one writer at a time, in order of arrival.
pub(super) struct AnswerSink {
    socket: TcpStream,
    state: Mutex<State>,
    /// Raised when the flusher has nothing left (or gave up).
    idle: Condvar,
}

#[derive(Default)]
struct State {
    /// Bytes owed and not yet handed to the socket.
    queued: Vec<u8>,
    /// Bytes the flusher took from `queued` and is writing now (owed too).
    in_flight: usize,
    /// A flusher thread is writing: every new byte goes behind `queued`.
    flushing: bool,
    closed: Option<Closed>,
}

impl AnswerSink {
    /// A sink writing on `socket` (a blocking socket whose write timeout bounds how long
    /// the flusher waits for a peer that stopped reading).
    pub(super) fn new(socket: TcpStream) -> Arc<Self> {
        Arc::new(Self {
            socket,
            state: Mutex::new(State::default()),
            idle: Condvar::new(),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes `bytes` (whole answer lines) now, or queues them behind what is owed.
    /// Never waits on the peer.
    pub(super) fn send(self: &Arc<Self>, bytes: &[u8]) -> Result<(), Closed> {
        let mut state = self.state();
        if let Some(why) = state.closed {
            return Err(why);
        }
        let mut rest = bytes;
        if !state.flushing && state.queued.is_empty() {
            match crate::sys::send_now(self.socket.as_fd(), bytes) {
                Ok(n) if n == bytes.len() => return Ok(()),
                Ok(n) => rest = &bytes[n..],
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => return Err(self.close_locked(&mut state, Closed::Gone, Shutdown::Both)),
            }
        }
        state.queued.extend_from_slice(rest);
        if state.queued.len() + state.in_flight > MAX_UNSENT {
            return Err(self.close_locked(&mut state, Closed::Stalled, Shutdown::Both));
        }
        if state.flushing {
            return Ok(());
        }
        // Bytes sent meanwhile queue behind this one: the flusher is as good as started.
        state.flushing = true;
        drop(state);
        let sink = Arc::clone(self);
        let started = std::thread::Builder::new()
            .name("query-flush".into())
            .stack_size(64 * 1024)
            .spawn(move || sink.flush());
        if started.is_err() {
            let mut state = self.state();
            state.flushing = false;
            self.idle.notify_all();
            return Err(self.close_locked(&mut state, Closed::Gone, Shutdown::Both));
        }
        Ok(())
    }

    /// The flusher: writes what is queued, waiting on the peer (bounded by the socket's
    /// write timeout), until nothing is left.
    fn flush(&self) {
        loop {
            let chunk = {
                let mut state = self.state();
                state.in_flight = 0;
                if state.queued.is_empty() || state.closed.is_some() {
                    state.flushing = false;
                    self.idle.notify_all();
                    return;
                }
                let chunk = std::mem::take(&mut state.queued);
                state.in_flight = chunk.len();
                chunk
            };
            if (&self.socket).write_all(&chunk).is_err() {
                let mut state = self.state();
                state.flushing = false;
                state.in_flight = 0;
                self.close_locked(&mut state, Closed::Gone, Shutdown::Both);
                self.idle.notify_all();
                return;
            }
        }
    }

    /// Waits up to `grace` for what is owed to be written, then ends our side's writing
    /// (the peer reads end of file after the last answer; the connection is closed once
    /// the peer closes it, or by [`AnswerSink::close`]). Blocks the caller: run it off
    /// any async runtime.
    pub(super) fn finish(&self, grace: Duration) {
        let deadline = Instant::now() + grace;
        let mut state = self.state();
        while state.closed.is_none() && (state.flushing || !state.queued.is_empty()) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state = self
                .idle
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        // Only the write side: a query the peer sends meanwhile is read (and denied into a
        // closed sink) rather than answered by a reset that would discard the answers
        // still on their way.
        self.close_locked(&mut state, Closed::Gone, Shutdown::Write);
    }

    /// Closes the connection now: the reader's blocked read returns, and what is owed is
    /// dropped (the peer is gone or misbehaved).
    pub(super) fn close(&self) {
        let mut state = self.state();
        self.close_locked(&mut state, Closed::Gone, Shutdown::Both);
    }

    /// Marks the sink closed (keeping the first reason), drops what is owed and shuts the
    /// socket down `how`. Both ways (again, after `finish`): the reader thread blocked in
    /// `read` wakes with end of file, and a flusher blocked in `write` fails.
    fn close_locked(&self, state: &mut State, why: Closed, how: Shutdown) -> Closed {
        let closed = *state.closed.get_or_insert(why);
        state.queued = Vec::new();
        let _ = self.socket.shutdown(how);
        closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;

    /// A connected pair on loopback: the sink's side and the peer's.
    fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let peer = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (ours, _) = listener.accept().expect("accept");
        ours.set_write_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        // Every wait of the tests is bounded.
        peer.set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        (ours, peer)
    }

    /// Numbered lines, so that order and completeness can be checked.
    fn line(i: usize) -> Vec<u8> {
        format!("{{\"query_id\":\"{i}\",\"action\":\"allow\"}}\n").into_bytes()
    }

    #[test]
    fn what_the_socket_cannot_take_now_is_written_in_order_as_the_peer_reads() {
        // Whether a send lands while the flusher writes is up to the scheduler: several
        // rounds make the case that would interleave lines all but certain to come up.
        for _ in 0..6 {
            slow_peer_round();
        }
    }

    fn slow_peer_round() {
        let (ours, mut peer) = pair();
        let sink = AnswerSink::new(ours);
        // A peer reading slowly all along, until end of file.
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            let mut chunk = [0u8; 4096];
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
        // bursts, so that some go out while the flusher writes and the queue is empty:
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
            if sink.state().flushing {
                queued_seen = true;
            }
            if queued_seen {
                behind += bytes.len();
                // Now and then a pause in which the flusher catches up.
                if i % 128 == 0 {
                    std::thread::sleep(Duration::from_micros(500));
                }
            }
            assert!(
                expected.len() < 64 << 20,
                "the socket took 64 MiB at once: the queue was never used"
            );
        }
        sink.finish(Duration::from_secs(20));
        assert_eq!(sink.state().closed, Some(Closed::Gone));
        let got = reader.join().expect("reader");
        assert_eq!(got.len(), expected.len(), "answers lost or added");
        assert!(
            got == expected,
            "the answers arrived changed or out of order"
        );
    }

    #[test]
    fn a_peer_that_never_reads_is_dropped_once_the_cap_is_owed() {
        let (ours, mut peer) = pair();
        let sink = AnswerSink::new(ours);
        let mut sent = 0usize;
        let why = loop {
            match sink.send(&line(sent)) {
                Ok(()) => sent += 1,
                Err(why) => break why,
            }
            assert!(sent < 10_000_000, "never dropped");
        };
        assert_eq!(why, Closed::Stalled);
        assert!(
            sent * line(sent).len() <= 64 << 20,
            "{sent} answers owed before the peer was dropped"
        );
        // Closed both ways: the peer reads what the socket had taken, then end of file
        // (not its read timeout).
        let mut rest = Vec::new();
        peer.read_to_end(&mut rest)
            .expect("end of file after what was sent");
        assert!(sink.send(b"x\n") == Err(Closed::Stalled));
    }
}
