//! The query socket: a TCP listener on 127.0.0.1 per served project, and the task that
//! serves each connection. A connection is read continuously whatever the UI is doing:
//! landstrip writes traps without blocking and gives up on a stalled socket.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncWriteExt, Interest};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use crate::broker::{Broker, Outbound};
use crate::project::Project;
use crate::protocol::{response_line, LineFramer};

/// Answers not yet taken by a peer that stopped reading; past this the connection is
/// dropped (landstrip itself always reads its answers).
pub const MAX_UNSENT: usize = 1 << 20;

/// How long a closing connection may take to flush its last answers.
pub const FLUSH_GRACE: Duration = Duration::from_secs(2);

/// A bound query socket for one project, not yet accepting.
pub struct Listener {
    listener: TcpListener,
    port: u16,
}

impl Listener {
    /// Binds 127.0.0.1 on an ephemeral port.
    pub async fn bind() -> io::Result<Self> {
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await?;
        let port = listener.local_addr()?.port();
        Ok(Self { listener, port })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Accepts and serves connections until `stop` turns true; then lets every
    /// connection flush what it owes and returns once they have all closed.
    pub async fn serve(
        self,
        project: Arc<Project>,
        broker: Broker,
        mut stop: watch::Receiver<bool>,
    ) {
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        let _ = stream.set_nodelay(true);
                        connections.spawn(admit(stream, peer, project.clone(), broker.clone(), stop.clone()));
                    }
                    Err(e) => {
                        // EMFILE and friends: back off briefly instead of spinning.
                        tracing::warn!(project = %project.dir().display(), "accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
                _ = stopped(&mut stop) => break,
            }
        }
        drop(self.listener);
        while connections.join_next().await.is_some() {}
    }
}

/// Serves a connection only if its peer runs as our uid: any local user can reach the
/// port, and an answer (or a prompt) must never go to someone else's program. Checked once
/// per connection, off the runtime (it reads procfs); queries cost nothing extra.
async fn admit(
    stream: TcpStream,
    peer: SocketAddr,
    project: Arc<Project>,
    broker: Broker,
    stop: watch::Receiver<bool>,
) {
    let Ok(local) = stream.local_addr() else {
        return;
    };
    let lookup = tokio::task::spawn_blocking(move || crate::peer::tcp_peer_uid(local, peer));
    let ours = crate::uid();
    match lookup.await {
        Ok(Ok(uid)) if uid == ours => serve_connection(stream, project, broker, stop).await,
        Ok(Ok(uid)) => tracing::warn!(
            project = %project.dir().display(),
            %peer,
            "refused a query connection from uid {uid} (only uid {ours} is served)"
        ),
        Ok(Err(e)) => tracing::warn!(
            project = %project.dir().display(),
            %peer,
            "refused a query connection whose uid cannot be told: {e}"
        ),
        Err(e) => {
            tracing::warn!(project = %project.dir().display(), %peer, "peer lookup failed: {e}")
        }
    }
}

/// Serves one connection until the peer closes it, it misbehaves, or `stop` turns true.
pub async fn serve_connection(
    stream: TcpStream,
    project: Arc<Project>,
    broker: Broker,
    mut stop: watch::Receiver<bool>,
) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut conn = broker.connect(project, tx);
    let mut framer = LineFramer::new();
    let mut buf = vec![0u8; 16 * 1024];
    let mut out: Vec<u8> = Vec::new();
    let mut stream = stream;
    loop {
        let interest = if out.is_empty() {
            Interest::READABLE
        } else {
            Interest::READABLE | Interest::WRITABLE
        };
        tokio::select! {
            ready = stream.ready(interest) => {
                let Ok(ready) = ready else { break };
                if ready.is_readable() {
                    match stream.try_read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => {
                            if framer.push(&buf[..n]).is_err() {
                                tracing::warn!(conn = conn.id(), "line over {} bytes: dropping the connection", crate::protocol::MAX_LINE);
                                break;
                            }
                            while let Some(line) = framer.next_line() {
                                conn.on_line(line, &mut out);
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(_) => break,
                    }
                }
            }
            Some(Outbound::Answer(id, action)) = rx.recv() => {
                out.extend_from_slice(&response_line(&id, action));
            }
            _ = stopped(&mut stop) => {
                // The broker denied everything held before raising `stop`; send it all.
                while let Ok(Outbound::Answer(id, action)) = rx.try_recv() {
                    out.extend_from_slice(&response_line(&id, action));
                }
                let _ = tokio::time::timeout(FLUSH_GRACE, stream.write_all(&out)).await;
                let _ = stream.shutdown().await;
                return;
            }
        }
        if !out.is_empty() {
            let written = stream.try_write(&out);
            conn.flush_activity();
            match written {
                Ok(n) => {
                    out.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => break,
            }
            if out.len() > MAX_UNSENT {
                tracing::warn!(
                    conn = conn.id(),
                    "peer stopped reading answers: dropping the connection"
                );
                break;
            }
        }
    }
    // Dropping `conn` withdraws its prompts; landstrip denies them when the socket closes.
    drop(conn);
}

/// Resolves once `stop` turns true (or its sender is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}
