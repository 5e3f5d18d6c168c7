//! Peer-uid lookups are batched: 200 connections made at once to a real query socket are
//! all admitted and answered with far fewer reads of the kernel's TCP tables than
//! connections (one read tells every connection waiting at that moment), so a burst of
//! connections never queues a run behind one table read each. Its own binary, so that the
//! listener's process-wide lookup counters count this test's connections only.

use std::sync::Arc;
use std::time::Duration;

use landstrip_tray_core::activity::ActivityLog;
use landstrip_tray_core::decision::broker::Broker;
use landstrip_tray_core::serving::listener::lookup_batches;
use tokio::net::TcpStream;
use tokio::task::JoinSet;

mod common;
use common::{ask, Listening};

/// Connections made at once.
const CONNECTIONS: usize = 200;

/// The most table reads the burst may take: well below one per connection (looked up one
/// by one, the burst takes [`CONNECTIONS`] reads), and above what a loaded machine needs
/// when connections trickle in while a read runs (a handful here).
const MOST_ROUNDS: usize = CONNECTIONS / 4;

/// Bounds every wait; generous for a loaded machine.
const WAIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_simultaneous_connections_are_told_apart_in_a_few_table_reads() {
    let served = Listening::start(Broker::new(Arc::new(ActivityLog::in_memory()))).await;
    let port = served.port;
    // A write inside the project: the bundled defaults allow it without asking.
    let query = served.allowed_write("1");
    let (largest_before, rounds_before) = lookup_batches();
    assert_eq!(
        (largest_before, rounds_before),
        (0, 0),
        "lookups ran before this test's connections: not its own binary?"
    );
    // All connect first (the connections queue in admission), then all ask.
    let mut streams = Vec::new();
    for _ in 0..CONNECTIONS {
        streams.push(
            TcpStream::connect(("127.0.0.1", port))
                .await
                .expect("connect"),
        );
    }
    let mut clients = JoinSet::new();
    for mut stream in streams {
        let query = query.clone();
        clients.spawn(async move { ask(&mut stream, &query).await });
    }
    let answers = tokio::time::timeout(WAIT, async {
        let mut answers = Vec::new();
        while let Some(answer) = clients.join_next().await {
            answers.push(answer.expect("client"));
        }
        answers
    })
    .await
    .expect("not every connection was answered in time");
    assert_eq!(answers.len(), CONNECTIONS);
    for answer in &answers {
        assert_eq!(answer.trim(), r#"{"query_id":"1","action":"allow"}"#);
    }
    let (largest, rounds) = lookup_batches();
    eprintln!(
        "{CONNECTIONS} connections told apart in {rounds} table reads (at most {MOST_ROUNDS}), up to {largest} connections in one"
    );
    assert!(
        (1..=MOST_ROUNDS).contains(&rounds),
        "{CONNECTIONS} connections took {rounds} peer-uid table reads: not batched (at most {MOST_ROUNDS})"
    );
    assert!(largest > 1, "no read told more than one connection");
    served.stop(WAIT).await;
}
