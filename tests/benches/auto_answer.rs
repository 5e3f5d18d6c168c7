//! Benchmark (not a test): auto-answered queries through the real listener, against a
//! trivial responder measured in the same process run (a thread per connection that
//! copies the query_id text and answers allow, with no JSON parsing).
//!
//! `cargo bench -p landstrip-tray-tests --bench auto_answer` prints:
//! - one connection in lock-step (send a query, wait for its answer): p50/p99 latency;
//! - 16 connections in lock-step: queries per second;
//! - a real landstrip run making 2,000 session-granted writes: wall time;
//! - the write journal: those runs into new files with it off and on, and overwrites of
//!   existing 4 KiB files off and on, and the journal's disk use;
//!
//! each for both presenters, with our figure as a ratio of the trivial one's.
//! Set BENCH_QUERIES to change the per-connection query count (default 20,000).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use landstrip_tray_core::decision::answer::AnswerRequest;
use landstrip_tray_core::journal::{Journal, JournalConfig};
use landstrip_tray_tests::bench::{env_number, median, micros, percentile, write_query_line};
use landstrip_tray_tests::{finish, Landstrip, TestEnv, PYTHON};

const CONNECTIONS: usize = 16;
const RUNS: usize = 5;
const WRITES: usize = 2_000;

fn query_line(id: u64, dir: &str) -> String {
    write_query_line(id, dir, "/usr/bin/dash")
}

/// The floor: answers allow, copying only the query_id's raw text.
fn trivial_responder() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let _ = stream.set_nodelay(true);
            std::thread::spawn(move || {
                let mut writer = stream.try_clone().expect("clone");
                let mut reader = BufReader::new(stream);
                let mut line = String::new();
                while reader.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
                    if line.contains(r#""state":"query""#) {
                        if let Some(start) = line.find(r#""query_id":"#) {
                            let rest = &line[start + 11..];
                            let end = rest.find([',', '}']).unwrap_or(rest.len());
                            let answer =
                                format!("{{\"query_id\":{},\"action\":\"allow\"}}\n", &rest[..end]);
                            if writer.write_all(answer.as_bytes()).is_err() {
                                break;
                            }
                        }
                    }
                    line.clear();
                }
            });
        }
    });
    port
}

/// Lock-step queries on one connection; returns each round trip.
fn lock_step(port: u16, queries: u64, dir: &str) -> Vec<Duration> {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let mut writer = stream.try_clone().expect("clone");
    let mut reader = BufReader::new(stream);
    let mut answer = String::new();
    let mut times = Vec::with_capacity(queries as usize);
    for id in 1..=queries {
        let line = query_line(id, dir);
        let start = Instant::now();
        writer.write_all(line.as_bytes()).expect("send");
        answer.clear();
        reader.read_line(&mut answer).expect("answer");
        times.push(start.elapsed());
        assert!(answer.contains("\"allow\""), "not allowed: {answer}");
    }
    times
}

fn throughput(port: u16, queries: u64, dir: &str) -> f64 {
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..CONNECTIONS {
            s.spawn(|| lock_step(port, queries, dir));
        }
    });
    (CONNECTIONS as u64 * queries) as f64 / start.elapsed().as_secs_f64()
}

async fn landstrip_run(env: &TestEnv, port: u16, dir: &Path) -> Duration {
    let script = format!(
        "import os\nfor i in range({WRITES}):\n    open(os.path.join({:?}, f'f{{i}}'), 'w').close()\nprint('done')\n",
        dir.to_str().expect("utf-8")
    );
    let start = Instant::now();
    let child = env.launch_via(Landstrip::V0_19, port, None, &[PYTHON, "-c", &script]);
    let done = finish(child).await;
    let elapsed = start.elapsed();
    assert_eq!(done.stdout.trim(), "done", "{done:?}");
    elapsed
}

#[tokio::main]
async fn main() {
    let queries = env_number("BENCH_QUERIES", 20_000) as u64;
    let mut env = TestEnv::start().await;
    let ours = env.discovered_port();
    let floor = trivial_responder();
    let dir = env.outside.join("granted");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let dir_s = dir.to_str().expect("utf-8").to_owned();

    // One prompt answered "for session" makes every later query under the scope automatic.
    let first = tokio::task::spawn_blocking({
        let dir_s = dir_s.clone();
        move || lock_step(ours, 1, &dir_s)
    });
    let prompt = env.next_prompt().await;
    env.broker()
        .answer(prompt.id, &AnswerRequest::session())
        .expect("session grant");
    first.await.expect("first query");

    let run = |port: u16| {
        let dir_s = dir_s.clone();
        move || {
            let _warm = lock_step(port, queries / 10, &dir_s);
            let mut one = lock_step(port, queries, &dir_s);
            one.sort();
            let many = throughput(port, queries / 4, &dir_s);
            (one, many)
        }
    };
    let (floor_one, floor_many) = tokio::task::spawn_blocking(run(floor))
        .await
        .expect("floor");
    let (our_one, our_many) = tokio::task::spawn_blocking(run(ours)).await.expect("ours");

    println!("auto-answered queries ({queries} lock-step on one connection; {CONNECTIONS} connections x {} each)", queries / 4);
    println!(
        "{:<28} {:>12} {:>12} {:>8}",
        "", "trivial", "landstrip-tray", "ratio"
    );
    for (name, p) in [("1 conn p50 (us)", 0.50), ("1 conn p99 (us)", 0.99)] {
        let (f, o) = (
            micros(percentile(&floor_one, p)),
            micros(percentile(&our_one, p)),
        );
        println!("{name:<28} {f:>12.1} {o:>12.1} {:>8.3}", o / f);
    }
    println!(
        "{:<28} {floor_many:>12.0} {our_many:>12.0} {:>8.3}",
        "16 conn queries/s",
        our_many / floor_many
    );

    // Real landstrip runs, 2,000 queried writes each (the first run of each warms caches).
    let mut floor_runs = Vec::new();
    let mut our_runs = Vec::new();
    for i in 0..=RUNS {
        let f = landstrip_run(&env, floor, &dir).await;
        let o = landstrip_run(&env, ours, &dir).await;
        if i > 0 {
            floor_runs.push(f);
            our_runs.push(o);
        }
    }
    let (f, o) = (median(floor_runs), median(our_runs));
    println!(
        "{:<28} {:>12.1} {:>12.1} {:>8.3}",
        "landstrip 2000 writes (ms)",
        f.as_secs_f64() * 1e3,
        o.as_secs_f64() * 1e3,
        o.as_secs_f64() / f.as_secs_f64()
    );

    // The write journal: the same granted runs into new files with it off and on, and
    // overwrites of existing 4 KiB files, each round into fresh folders under the grant.
    let kept = tempfile::tempdir().expect("tempdir");
    let journal_dir = kept.path().join("journal");
    let journal = Journal::open(&journal_dir, JournalConfig::default()).expect("journal");
    env.broker().set_journal(journal.clone());
    let mut journal_runs: [Vec<f64>; 4] = Default::default();
    let mut ratios = Vec::new();
    for round in 0..=RUNS {
        let mut times = [0.0; 4];
        for (slot, (on, bytes)) in [(false, 0), (true, 0), (false, 4096), (true, 4096)]
            .into_iter()
            .enumerate()
        {
            journal.configure(JournalConfig {
                enabled: on,
                ..JournalConfig::default()
            });
            let fresh = dir.join(format!("journal-{round}-{slot}"));
            std::fs::create_dir_all(&fresh).expect("mkdir");
            for i in 0..WRITES * usize::from(bytes > 0) {
                std::fs::write(fresh.join(format!("f{i}")), vec![b'o'; bytes]).expect("write");
            }
            times[slot] = landstrip_fill(&env, ours, &fresh, bytes)
                .await
                .as_secs_f64()
                * 1e3;
        }
        if round > 0 {
            for (slot, t) in times.iter().enumerate() {
                journal_runs[slot].push(*t);
            }
            ratios.push(times[1] / times[0]);
        }
    }
    let [new_off, new_on, over_off, over_on] = journal_runs.map(|mut v| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    });
    ratios.sort_by(f64::total_cmp);
    println!(
        "{:<28} {:>12} {:>12} {:>8}",
        "write journal", "off", "on", "ratio"
    );
    println!(
        "{:<28} {new_off:>12.1} {new_on:>12.1} {:>8.3}  target <= 1.10, rounds {:.3}..{:.3}",
        "2000 new files (ms)",
        new_on / new_off,
        ratios[0],
        ratios[ratios.len() - 1]
    );
    println!(
        "{:<28} {over_off:>12.1} {over_on:>12.1} {:>8.3}  (report)",
        "2000 overwrites 4 KiB (ms)",
        over_on / over_off
    );
    println!(
        "journal on disk after {} rounds: {:.1} MB ({:.1} MB of kept contents)",
        RUNS + 1,
        du_bytes(&journal_dir) as f64 / (1 << 20) as f64,
        journal.stored_bytes() as f64 / (1 << 20) as f64
    );
    env.service.shutdown().await;
}

/// A real landstrip run writing `bytes` bytes to each of `WRITES` files in `dir`.
async fn landstrip_fill(env: &TestEnv, port: u16, dir: &Path, bytes: usize) -> Duration {
    let script = format!(
        "import os\ndata = b'x' * {bytes}\nfor i in range({WRITES}):\n    with open(os.path.join({:?}, f'f{{i}}'), 'wb') as f:\n        f.write(data)\nprint('done')\n",
        dir.to_str().expect("utf-8")
    );
    let start = Instant::now();
    let child = env.launch_via(Landstrip::V0_19, port, None, &[PYTHON, "-c", &script]);
    let done = finish(child).await;
    let elapsed = start.elapsed();
    assert_eq!(done.stdout.trim(), "done", "{done:?}");
    elapsed
}

/// The bytes of every file under `dir`.
fn du_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => du_bytes(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}
