//! One admitted connection: a thread of its own reading it (a blocking `read`, as the
//! simplest responder would: under a slow-syscall host the wake-up through an event loop
//! costs more than the query's work), and a task forwarding a person's answers to it.

use std::io::{self, Read};
use std::net::TcpStream;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, watch};

use super::sink::{AnswerSink, Closed};
use super::{stopped, FLUSH_GRACE, WRITE_STALL};
use crate::decision::broker::{Broker, Connection, Outbound};
use crate::serving::project::Project;
use crate::wire::protocol::{response_line, LineFramer, MAX_LINE};

/// The reader thread's stack: the decision path parses the policy files when they change.
const READER_STACK: usize = 1024 * 1024;

/// Serves one connection until the peer closes it, it misbehaves, or `stop` turns true;
/// returns once its reader thread has ended.
pub(super) async fn serve(
    stream: tokio::net::TcpStream,
    project: Arc<Project>,
    broker: Broker,
    mut stop: watch::Receiver<bool>,
) {
    let (socket, writer) = match blocking_pair(stream) {
        Ok(pair) => pair,
        Err(e) => {
            tracing::warn!("cannot serve a query connection: {e}");
            return;
        }
    };
    crate::sys::map_large_blocks();
    let sink = AnswerSink::new(writer);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let conn = broker.connect(project, tx);
    let id = conn.id();
    let (done_tx, mut done) = oneshot::channel::<()>();
    let reader_sink = Arc::clone(&sink);
    // The decision path arms prompt timeouts on the runtime serving this listener.
    let runtime = tokio::runtime::Handle::current();
    let started = std::thread::Builder::new()
        .name("query-conn".into())
        .stack_size(READER_STACK)
        .spawn(move || {
            let _entered = runtime.enter();
            read(socket, conn, &reader_sink);
            drop(done_tx);
        });
    if let Err(e) = started {
        // The closure, and with it the connection, is dropped: its socket closes and
        // landstrip denies what it would have asked.
        tracing::error!(
            conn = id,
            "cannot start a thread for a query connection: {e}"
        );
        return;
    }
    loop {
        tokio::select! {
            Some(Outbound::Answer(query, action)) = rx.recv() => {
                // A closed sink means the reader is ending the connection already.
                let _ = sink.send(&response_line(&query, action));
            }
            _ = &mut done => return,
            _ = stopped(&mut stop) => {
                // The broker denied everything held before raising `stop`; send it all.
                while let Ok(Outbound::Answer(query, action)) = rx.try_recv() {
                    let _ = sink.send(&response_line(&query, action));
                }
                let closing = Arc::clone(&sink);
                let _ = tokio::task::spawn_blocking(move || closing.finish(FLUSH_GRACE)).await;
                // The peer reads end of file after the last answer and closes, which ends
                // the reader's read; one that does not is cut off after the grace.
                if tokio::time::timeout(FLUSH_GRACE, &mut done).await.is_err() {
                    sink.close();
                    let _ = done.await;
                }
                return;
            }
        }
    }
}

/// The connection as two blocking std sockets: one to read, a clone to write (the clone
/// carries the write timeout the flusher waits within).
fn blocking_pair(stream: tokio::net::TcpStream) -> io::Result<(TcpStream, TcpStream)> {
    let socket = stream.into_std()?;
    socket.set_nonblocking(false)?;
    socket.set_write_timeout(Some(WRITE_STALL))?;
    let writer = socket.try_clone()?;
    Ok((socket, writer))
}

/// The reader thread: lines in, the rules' answers out through the sink, until the peer
/// closes, misbehaves, or the sink is closed. Dropping `conn` at the end withdraws its
/// prompts; landstrip denies them when the socket closes.
fn read(mut socket: TcpStream, mut conn: Connection, sink: &Arc<AnswerSink>) {
    let mut framer = LineFramer::new();
    let mut buf = vec![0u8; 16 * 1024];
    let mut out: Vec<u8> = Vec::new();
    loop {
        let n = match socket.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if framer.push(&buf[..n]).is_err() {
            tracing::warn!(
                conn = conn.id(),
                "line over {MAX_LINE} bytes: dropping the connection"
            );
            break;
        }
        while let Some(line) = framer.next_line() {
            conn.on_line(line, &mut out);
        }
        framer.release();
        if !out.is_empty() {
            let sent = sink.send(&out);
            out.clear();
            conn.flush_activity();
            match sent {
                Ok(()) => {}
                Err(Closed::Stalled) => {
                    tracing::warn!(
                        conn = conn.id(),
                        "peer stopped reading answers: dropping the connection"
                    );
                    break;
                }
                Err(Closed::Gone) => break,
            }
        }
    }
    sink.close();
    drop(conn);
}
