//! The query socket: a TCP listener on 127.0.0.1 per served project, the admission of each
//! connection (its peer's uid), and the serving of it: `serve` hands it to a query loop
//! (`query_loop`, reached through `loop_ref`) and forwards a person's answers, the loop or
//! a reader thread (`readers`) reads it (`served`), and answers go out through its `sink`.
//! A connection is read continuously whatever the UI is doing: landstrip writes traps
//! without blocking and gives up on a stalled socket.

mod loop_ref;
mod query_loop;
mod readers;
mod serve;
mod served;
mod sink;

pub use query_loop::{loop_threads, MAX_LOOPS};
pub use readers::{ACTIVE_IDLE, MAX_ACTIVE, READER_KEEP};

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Handle;
use tokio::sync::{oneshot, watch};
use tokio::task::{JoinHandle, JoinSet};

use crate::decision::broker::Broker;
use crate::policy::project::Project;
use crate::wire::peer::PeerError;

/// Answers not yet taken by a peer that stopped reading; past this the connection is
/// dropped (landstrip itself always reads its answers).
pub const MAX_UNSENT: usize = 1 << 20;

/// How long a closing connection may take to flush its last answers.
pub const FLUSH_GRACE: Duration = Duration::from_secs(2);

/// How long answers may stay queued with the peer taking none of them before the
/// connection is dropped (loopback buffers hold thousands of answers: such a peer stopped
/// reading).
pub const WRITE_STALL: Duration = Duration::from_secs(10);

/// Peer-uid lookups allowed to run at once, across every listener. Each one reads the
/// kernel's TCP tables on the lookup thread, and reading them costs tens of milliseconds
/// on a busy host whatever is looked up, so one lookup at a time tells every connection
/// waiting at that moment ([`crate::wire::peer::tcp_peer_uids`]): a burst of connections (or
/// someone connecting in a loop, of any uid) costs a few table reads, not one each,
/// and never queues a real run behind it for long. None is dropped.
pub const MAX_CONCURRENT_LOOKUPS: usize = 1;

/// A connection waiting for its peer's uid: our side, the peer's side, where to answer.
type Waiting = (
    SocketAddr,
    SocketAddr,
    oneshot::Sender<Result<u32, PeerError>>,
);

/// The most connections one lookup told at once, and how many table reads there were.
static LARGEST_BATCH: AtomicUsize = AtomicUsize::new(0);
static LOOKUP_ROUNDS: AtomicUsize = AtomicUsize::new(0);

/// The most connections one lookup told at once, and how many lookups ran in all; for
/// tests and diagnostics.
pub fn lookup_batches() -> (usize, usize) {
    (
        LARGEST_BATCH.load(Ordering::Relaxed),
        LOOKUP_ROUNDS.load(Ordering::Relaxed),
    )
}

/// The uid of the peer of `(local, peer)`, told together with every other connection
/// waiting at the same time.
async fn peer_uid(local: SocketAddr, peer: SocketAddr) -> Result<u32, PeerError> {
    let (tx, rx) = oneshot::channel();
    let queued = lookup_thread()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .send((local, peer, tx));
    if queued.is_err() {
        // No lookup thread (it could not be started): refusing is the safe reading.
        return Err(PeerError::NotFound { peer, local });
    }
    rx.await.unwrap_or(Err(PeerError::NotFound { peer, local }))
}

/// The lookups' own thread, started on first use and kept for the process's life: parked
/// while nobody connects, and independent of any one runtime (tests run many).
fn lookup_thread() -> &'static Mutex<std::sync::mpsc::Sender<Waiting>> {
    static SENDER: OnceLock<Mutex<std::sync::mpsc::Sender<Waiting>>> = OnceLock::new();
    SENDER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Waiting>();
        let started = std::thread::Builder::new()
            .name("peer-lookup".into())
            .spawn(move || lookup_rounds(rx));
        if let Err(e) = started {
            // `rx` is gone with the closure: every send fails and is refused.
            tracing::error!("cannot start the peer-lookup thread: {e}");
        }
        Mutex::new(tx)
    })
}

/// One table read per round, for every connection that queued before it began.
fn lookup_rounds(rx: std::sync::mpsc::Receiver<Waiting>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        batch.extend(rx.try_iter());
        LARGEST_BATCH.fetch_max(batch.len(), Ordering::Relaxed);
        LOOKUP_ROUNDS.fetch_add(1, Ordering::Relaxed);
        let pairs: Vec<(SocketAddr, SocketAddr)> = batch.iter().map(|w| (w.0, w.1)).collect();
        let uids = crate::wire::peer::tcp_peer_uids(&pairs);
        for ((_, _, tx), uid) in batch.into_iter().zip(uids) {
            // A connection that gave up waiting (stop) is fine.
            let _ = tx.send(uid);
        }
    }
}

/// The runtime every query socket's accepting, admission and answer forwarding runs on:
/// one thread of its own (`query-io`), a current-thread runtime, apart from Tauri's
/// shared one (where a wake-up on one worker wakes another to steal work, which costs more
/// than the work itself on a slow-syscall host; docs/BENCHMARKS.md, "Load"). Queries
/// themselves are read and answered on the query loops. None if the thread could not be
/// started; the caller's runtime serves instead.
fn query_runtime() -> Option<&'static Handle> {
    static RUNTIME: OnceLock<Option<Handle>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .thread_name("query-io")
                .build()
                .map_err(|e| tracing::warn!("query runtime: {e}; serving on the shared one"))
                .ok()?;
            let handle = runtime.handle().clone();
            std::thread::Builder::new()
                .name("query-io".into())
                .spawn(move || runtime.block_on(std::future::pending::<()>()))
                .map_err(|e| tracing::warn!("query thread: {e}; serving on the shared one"))
                .ok()?;
            Some(handle)
        })
        .as_ref()
}

/// A bound query socket for one project, not yet accepting. Held as a std socket until
/// it serves, so that it registers with the runtime that serves it.
pub struct Listener {
    listener: std::net::TcpListener,
    port: u16,
}

impl Listener {
    /// Binds 127.0.0.1 on an ephemeral port.
    pub async fn bind() -> io::Result<Self> {
        let listener = std::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        Ok(Self { listener, port })
    }

    /// Serves (see [`Listener::serve`]) on the query runtime, or on the caller's runtime
    /// if that could not be started.
    pub fn spawn(
        self,
        project: Arc<Project>,
        broker: Broker,
        stop: watch::Receiver<bool>,
    ) -> JoinHandle<()> {
        let serving = self.serve(project, broker, stop);
        match query_runtime() {
            Some(runtime) => runtime.spawn(serving),
            None => tokio::spawn(serving),
        }
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
        let listener = match TcpListener::from_std(self.listener) {
            Ok(listener) => listener,
            Err(e) => {
                tracing::error!(project = %project.dir().display(), "cannot serve the query socket: {e}");
                return;
            }
        };
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
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
        drop(listener);
        while connections.join_next().await.is_some() {}
    }
}

/// Serves a connection only if its peer runs as our uid: any local user can reach the
/// port, and an answer (or a prompt) must never go to someone else's program. Checked once
/// per connection, off the runtime (it reads procfs) on the lookup thread, together with
/// every connection waiting at the same moment; queries cost nothing extra.
async fn admit(
    stream: TcpStream,
    peer: SocketAddr,
    project: Arc<Project>,
    broker: Broker,
    mut stop: watch::Receiver<bool>,
) {
    let Ok(local) = stream.local_addr() else {
        return;
    };
    // Someone connecting and closing in a loop would have every connection looked up;
    // a peer that already hung up without a word has nothing to answer.
    if crate::sys::peer_hung_up(stream.as_fd()) {
        return;
    }
    let uid = tokio::select! {
        uid = peer_uid(local, peer) => uid,
        // Not served any more: landstrip denies what it would have asked.
        _ = stopped(&mut stop) => return,
    };
    let ours = crate::uid();
    match uid {
        Ok(uid) if uid == ours => serve::serve(stream, project, broker, stop).await,
        Ok(uid) => tracing::warn!(
            project = %project.dir().display(),
            %peer,
            "refused a query connection from uid {uid} (only uid {ours} is served)"
        ),
        Err(e) => tracing::warn!(
            project = %project.dir().display(),
            %peer,
            "refused a query connection whose uid cannot be told: {e}"
        ),
    }
}

/// Resolves once `stop` turns true (or its sender is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}
