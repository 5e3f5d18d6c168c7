//! Reader threads hand their connections back: connections that asked are served on
//! `query-reader` threads (counted by name in /proc, not by the listener's own
//! bookkeeping); once they fall quiet each goes back to its loop after [`ACTIVE_IDLE`], and
//! the idle reader threads end after [`READER_KEEP`], so the count returns to none; the
//! connections are still open and answered when they ask again. Its own binary, so that
//! no other test's readers are counted.

use std::sync::Arc;
use std::time::{Duration, Instant};

use landstrip_tray_core::activity::ActivityLog;
use landstrip_tray_core::decision::broker::Broker;
use landstrip_tray_core::serving::listener::{ACTIVE_IDLE, MAX_ACTIVE, READER_KEEP};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

mod common;
use common::Listening;

/// Connections that ask at once (fewer than [`MAX_ACTIVE`]: each may get a reader).
const BUSY: usize = 8;

/// What a loaded machine may add to the promise (a connection back after [`ACTIVE_IDLE`],
/// its reader gone [`READER_KEEP`] later).
const HAND_BACK_MARGIN: Duration = Duration::from_secs(10);

/// Bounds every other wait; generous for a loaded machine.
const WAIT: Duration = Duration::from_secs(60);

/// How often the thread count is looked at while waiting for it to fall (a thread's end
/// has no event to await).
const POLL: Duration = Duration::from_millis(100);

/// This process's threads named `query-reader`.
fn readers() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim_end() == "query-reader")
        .count()
}

/// Each stream asks `query` at once (an id answered once per connection: a new one each
/// round); every stream back, in order, once each has its answer.
async fn ask_all(
    streams: Vec<BufReader<TcpStream>>,
    served: &Listening,
    id: &str,
) -> Vec<BufReader<TcpStream>> {
    let query = served.allowed_write(id);
    let want = format!(r#"{{"query_id":"{id}","action":"allow"}}"#);
    let mut asking = JoinSet::new();
    for (i, mut stream) in streams.into_iter().enumerate() {
        let (query, want) = (query.clone(), want.clone());
        asking.spawn(async move {
            stream
                .get_mut()
                .write_all(query.as_bytes())
                .await
                .expect("send");
            let mut line = String::new();
            stream.read_line(&mut line).await.expect("read the answer");
            assert_eq!(line.trim(), want, "connection {i}");
            (i, stream)
        });
    }
    let mut answered = tokio::time::timeout(WAIT, asking.join_all())
        .await
        .expect("not every connection was answered in time");
    answered.sort_by_key(|(i, _)| *i);
    answered.into_iter().map(|(_, s)| s).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_connections_go_back_to_their_loop_and_the_reader_threads_end() {
    let served = Listening::start(Broker::new(Arc::new(ActivityLog::in_memory()))).await;
    let port = served.port;
    assert_eq!(readers(), 0, "reader threads before any connection");

    let mut streams = Vec::new();
    for _ in 0..BUSY {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        streams.push(BufReader::new(stream));
    }
    let streams = ask_all(streams, &served, "1").await;
    let quiet_since = Instant::now();
    let busy = readers();
    eprintln!("{BUSY} connections asked: {busy} query-reader threads");
    assert!(
        (1..=MAX_ACTIVE).contains(&busy),
        "{BUSY} connections that asked are served by {busy} reader threads"
    );

    // Quiet now: each connection goes back after ACTIVE_IDLE, each reader ends READER_KEEP
    // after its last connection.
    let bound = ACTIVE_IDLE + READER_KEEP + HAND_BACK_MARGIN;
    let deadline = quiet_since + bound;
    while readers() > 0 {
        assert!(
            Instant::now() < deadline,
            "{} query-reader threads still run {:?} after the connections fell quiet (ACTIVE_IDLE {ACTIVE_IDLE:?} + READER_KEEP {READER_KEEP:?} + margin {HAND_BACK_MARGIN:?}): connections not handed back",
            readers(),
            quiet_since.elapsed()
        );
        tokio::time::sleep(POLL).await;
    }
    eprintln!(
        "the reader threads ended {:?} after the connections fell quiet (promised: ACTIVE_IDLE {ACTIVE_IDLE:?} + READER_KEEP {READER_KEEP:?}; bound with a margin of {HAND_BACK_MARGIN:?}: {bound:?})",
        quiet_since.elapsed()
    );

    // Handed back, not dropped: each connection is still served.
    ask_all(streams, &served, "2").await;
    served.stop(WAIT).await;
}
