//! One admitted connection: handed to a query loop, which reads it and answers what the
//! rules settle, and a task of its own forwarding a person's answers to it.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, watch};

use super::loop_ref::LoopRef;
use super::query_loop;
use super::served::Entry;
use super::sink::AnswerSink;
use super::stopped;
use crate::decision::broker::{Broker, Outbound};
use crate::policy::project::Project;
use crate::wire::protocol::response_line;

/// Serves one connection until the peer closes it, it misbehaves, or `stop` turns true;
/// returns once its loop has closed it.
pub(super) async fn serve(
    stream: tokio::net::TcpStream,
    project: Arc<Project>,
    broker: Broker,
    mut stop: watch::Receiver<bool>,
) {
    // Non-blocking, as the loop needs it.
    let socket = match stream.into_std() {
        Ok(socket) => socket,
        Err(e) => {
            tracing::warn!("cannot serve a query connection: {e}");
            return;
        }
    };
    let Some(place) = query_loop::place() else {
        // Dropping the socket closes it: landstrip denies what it would have asked.
        tracing::error!("no query loop is running: dropping a query connection");
        return;
    };
    crate::sys::map_large_blocks();
    let sink = AnswerSink::new(socket, place.clone());
    let (tx, mut rx) = mpsc::unbounded_channel();
    let conn = broker.connect(project, tx);
    let (done_tx, mut done) = oneshot::channel::<()>();
    place.add(Entry {
        sink: Arc::clone(&sink),
        conn,
        runtime: tokio::runtime::Handle::current(),
        done: done_tx,
    });
    // If this task is dropped before the loop closed the connection (its runtime ended),
    // the loop is told to close it.
    let mut forwarder = Forwarder(Some(place));
    loop {
        tokio::select! {
            Some(Outbound::Answer(query, action)) = rx.recv() => {
                // A closed sink means the loop is ending the connection already.
                let _ = sink.send(&response_line(&query, action));
            }
            _ = &mut done => break,
            _ = stopped(&mut stop) => {
                // The broker denied everything held before raising `stop`; send it all,
                // then the loop flushes, ends writing and closes once the peer has (each
                // step bounded by FLUSH_GRACE).
                while let Ok(Outbound::Answer(query, action)) = rx.try_recv() {
                    let _ = sink.send(&response_line(&query, action));
                }
                if let Some(place) = &forwarder.0 {
                    place.finish();
                }
                let _ = done.await;
                break;
            }
        }
    }
    forwarder.0 = None;
}

/// Tells the loop to close the connection when dropped while still armed.
struct Forwarder(Option<LoopRef>);

impl Drop for Forwarder {
    fn drop(&mut self) {
        if let Some(place) = self.0.take() {
            place.close();
        }
    }
}
