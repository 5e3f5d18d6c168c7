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
                Err(_) => return Err(self.close_locked(&mut state, Closed::Gone)),
            }
        }
        state.queued.extend_from_slice(rest);
        if state.queued.len() > MAX_UNSENT {
            return Err(self.close_locked(&mut state, Closed::Stalled));
        }
        if !state.flushing {
            state.flushing = true;
            let sink = Arc::clone(self);
            let started = std::thread::Builder::new()
                .name("query-flush".into())
                .stack_size(64 * 1024)
                .spawn(move || sink.flush());
            if started.is_err() {
                state.flushing = false;
                return Err(self.close_locked(&mut state, Closed::Gone));
            }
        }
        Ok(())
    }

    /// The flusher: writes what is queued, waiting on the peer (bounded by the socket's
    /// write timeout), until nothing is left.
    fn flush(&self) {
        loop {
            let chunk = {
                let mut state = self.state();
                if state.queued.is_empty() || state.closed.is_some() {
                    state.flushing = false;
                    self.idle.notify_all();
                    return;
                }
                std::mem::take(&mut state.queued)
            };
            if (&self.socket).write_all(&chunk).is_err() {
                let mut state = self.state();
                state.flushing = false;
                self.close_locked(&mut state, Closed::Gone);
                self.idle.notify_all();
                return;
            }
        }
    }

    /// Waits up to `grace` for what is owed to be written, then closes the connection.
    /// Blocks the caller: run it off any async runtime.
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
        self.close_locked(&mut state, Closed::Gone);
    }

    /// Closes the connection now: the reader's blocked read returns, and what is owed is
    /// dropped (the peer is gone or misbehaved).
    pub(super) fn close(&self) {
        let mut state = self.state();
        self.close_locked(&mut state, Closed::Gone);
    }

    fn close_locked(&self, state: &mut State, why: Closed) -> Closed {
        if state.closed.is_none() {
            state.closed = Some(why);
            state.queued = Vec::new();
            // Both ways: the reader thread blocked in `read` wakes with end of file, and a
            // flusher blocked in `write` fails.
            let _ = self.socket.shutdown(Shutdown::Both);
        }
        state.closed.unwrap_or(why)
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
    fn what_the_socket_cannot_take_now_is_written_in_order_once_the_peer_reads() {
        let (ours, mut peer) = pair();
        let sink = AnswerSink::new(ours);
        // More than the socket takes while the peer reads nothing, then 256 KiB more
        // (under the cap): that rest is queued behind a flusher, and none of it may be
        // lost or reordered.
        let mut expected = Vec::new();
        let mut i = 0;
        let mut behind = 0;
        while behind < 256 * 1024 {
            let bytes = line(i);
            expected.extend_from_slice(&bytes);
            sink.send(&bytes).expect("queued");
            i += 1;
            if sink.state().flushing {
                behind += bytes.len();
            }
            assert!(
                expected.len() < 64 << 20,
                "the socket took 64 MiB at once: the queue was never used"
            );
        }
        let reader = std::thread::spawn(move || {
            let mut got = vec![0u8; expected.len()];
            peer.read_exact(&mut got).expect("every byte owed arrives");
            assert!(
                got == expected,
                "the answers arrived changed or out of order"
            );
        });
        reader.join().expect("reader");
        sink.finish(Duration::from_secs(10));
        assert_eq!(sink.state().closed, Some(Closed::Gone));
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
        // Closed both ways: the peer reads what was taken, then end of file.
        let mut rest = Vec::new();
        let _ = peer.read_to_end(&mut rest);
        assert_eq!(sink.send(b"x\n"), Err(Closed::Stalled));
    }
}
