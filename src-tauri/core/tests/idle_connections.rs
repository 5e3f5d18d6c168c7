//! A flood of idle connections to a real query socket (any local process allowed the
//! network can open them) costs descriptors and a little memory, not a thread each: the
//! threads serving queries stay at the query loops' count, and a run connecting meanwhile
//! is answered; all of them asking at once are answered with at most `MAX_ACTIVE` reader
//! threads. Its own binary, so that no other test's threads are counted.

use std::sync::Arc;
use std::time::Duration;

use landstrip_tray_core::activity::ActivityLog;
use landstrip_tray_core::decision::broker::Broker;
use landstrip_tray_core::serving::listener::{MAX_ACTIVE, MAX_LOOPS};
use tokio::net::TcpStream;

mod common;
use common::{ask, Listening};

const IDLE: usize = 2_000;
/// Bounds every wait; generous for a loaded machine.
const WAIT: Duration = Duration::from_secs(120);

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_idle_connections_add_no_thread_and_a_run_is_still_answered() {
    let files = landstrip_tray_core::raise_open_files_limit();
    assert!(
        files >= (2 * IDLE + 200) as u64,
        "this test needs {} open files; the hard limit allows {files}",
        2 * IDLE + 200
    );
    let broker = Broker::new(Arc::new(ActivityLog::in_memory()));
    let mut runs = broker.subscribe_runs();
    let served = Listening::start(broker).await;
    let port = served.port;
    let query = served.allowed_write("1");

    // One run first, so that everything started once is started before counting.
    let mut first = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let answer = ask(&mut first, &query).await;
    assert_eq!(answer.trim(), r#"{"query_id":"1","action":"allow"}"#);
    let before = threads();

    let mut idle = Vec::with_capacity(IDLE);
    for _ in 0..IDLE {
        idle.push(
            TcpStream::connect(("127.0.0.1", port))
                .await
                .expect("connect"),
        );
    }
    // Every one of them admitted and served (the broker counts each as an open run).
    tokio::time::timeout(WAIT, runs.wait_for(|n| *n > IDLE))
        .await
        .expect("not every idle connection was admitted in time")
        .expect("broker");
    let during = threads();
    eprintln!("threads: {before} before {IDLE} idle connections, {during} with them");
    assert!(
        during <= before + MAX_LOOPS,
        "{IDLE} idle connections took the process from {before} to {during} threads"
    );

    // A run connecting now is answered as before.
    let mut late = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let answer = tokio::time::timeout(WAIT, ask(&mut late, &query))
        .await
        .expect("a run was not answered beside the idle connections");
    assert_eq!(answer.trim(), r#"{"query_id":"1","action":"allow"}"#);

    // All of them asking at once: each is answered, and the reader threads that busy
    // connections get stay within their bound.
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let (peak, sampling) = (peak.clone(), sampling.clone());
        std::thread::spawn(move || {
            while sampling.load(std::sync::atomic::Ordering::Relaxed) {
                peak.fetch_max(threads(), std::sync::atomic::Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let mut asking = tokio::task::JoinSet::new();
    for mut stream in idle {
        let query = query.clone();
        asking.spawn(async move { ask(&mut stream, &query).await });
    }
    tokio::time::timeout(WAIT, async {
        while let Some(answer) = asking.join_next().await {
            assert_eq!(
                answer.expect("a client").trim(),
                r#"{"query_id":"1","action":"allow"}"#
            );
        }
    })
    .await
    .expect("not every busy connection was answered in time");
    sampling.store(false, std::sync::atomic::Ordering::Relaxed);
    sampler.join().expect("sampler");
    let peak = peak.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!("threads with all {IDLE} asking: at most {peak}");
    assert!(
        peak <= during + MAX_ACTIVE + 1,
        "{IDLE} busy connections took the process to {peak} threads (from {during})"
    );
    served.stop(WAIT).await;
}
