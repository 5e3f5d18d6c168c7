//! Benchmark (not a test): auto-answered queries measured from outside, against the app
//! binary as a user runs it, alternating in one run with a trivial responder process
//! (`src/bin/trivial_responder.rs`: a thread per connection that copies the query_id and
//! answers allow). This process is the load generator: it speaks landstrip's side of the
//! protocol (the session hello, then 0.19-shaped filesystem queries) over loopback TCP.
//!
//! ```sh
//! cargo build --release -p landstrip-tray
//! LANDSTRIP_TRAY_BIN=$CARGO_TARGET_DIR/release/landstrip-tray \
//!   xvfb-run -a dbus-run-session -- cargo bench -p landstrip-tray-tests --bench load
//! ```
//!
//! The queries are writes under a directory outside the project that one prompt, answered
//! "for session" through `ctl` at the start, granted: the path real runs take after a
//! person said "allow for this session". It prints, app against trivial responder, with
//! the ratio:
//! - one connection in lock-step (send a query, wait for its answer): p50 and p99;
//! - 16 connections in lock-step: queries per second, p50 and p99;
//! - one connection with 16 queries in flight at any moment: queries per second;
//! - a real landstrip 0.19.2 run making 2,000 session-granted writes: wall time, and the
//!   same run with the directory in allowWrite (landstrip asks nothing);
//! - the write journal: 2,000 granted writes of new files with it off and on, 2,000
//!   overwrites of existing 4 KiB files off and on, and the journal's disk use;
//! - 1,000 connections open at once, 100 lock-step queries each: every answer checked,
//!   and the app's peak memory;
//! - 2,000 idle connections (the session hello, then nothing) held open: each presenter's
//!   threads and own PSS before and with them, and a run's lock-step p50 and p99 beside
//!   them.
//!
//! Every measurement is taken in `BENCH_ROUNDS` rounds (default 5) that alternate the two
//! presenters, so a change in the machine's load hits both; the spread of the per-round
//! ratios is printed beside the pooled figure. `BENCH_QUERIES` sets the lock-step count
//! per round (default 5,000). `LANDSTRIP_TRAY_BENCH_LIMITS=1` measures with limited grants
//! in place: the measured grant lapses in an hour, and four more of other folders of the
//! same session are limited to a duration, the program, a run (its connection kept open)
//! or deny. On a VM whose idle vCPUs are slow to wake, lock-step figures are bimodal from
//! round to round; `taskset -c 0` (the whole bench on one CPU) gives steady rounds.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use landstrip_tray_tests::bench::{env_number, micros, percentile, write_query_line};
use landstrip_tray_tests::memory::pss_tree_kib;
use landstrip_tray_tests::real_app::{path_str, AppWorld};
use landstrip_tray_tests::{
    finish, launch_landstrip_with_policy, write_landstrip_policy, Landstrip, PYTHON,
};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

const SESSION: &str = "ses_loadbench";
const CONNECTIONS: usize = 16;
const IN_FLIGHT: usize = 16;
const IDLE: usize = 2_000;
const WRITES: usize = 2_000;
const MANY: usize = 1_000;
const PER_CONNECTION: usize = 100;
const TAIL: u64 = 1_000;
const MANY_TIMEOUT: Duration = Duration::from_secs(300);

fn hello() -> String {
    format!("{{\"kind\":\"opencode-landstrip-session\",\"sessionID\":\"{SESSION}\"}}\n")
}

/// A query as landstrip 0.19.2 writes it, for a write of `dir/f<id>`.
fn query_line(id: u64, dir: &str) -> String {
    write_query_line(id, dir, "/usr/bin/python3")
}

fn answer_line(id: u64) -> String {
    format!("{{\"query_id\":\"{id}\",\"action\":\"allow\"}}\n")
}

/// Opens a connection and sends the session hello.
fn open(port: u16) -> (TcpStream, BufReader<TcpStream>) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    stream.write_all(hello().as_bytes()).expect("hello");
    let reader = BufReader::new(stream.try_clone().expect("clone"));
    (stream, reader)
}

/// `queries` lock-step queries on one new connection; each round trip, in order. Every
/// answer must be exactly the allow line for its id.
fn lock_step(port: u16, queries: u64, dir: &str) -> Vec<Duration> {
    let (mut writer, mut reader) = open(port);
    let mut answer = String::new();
    let mut times = Vec::with_capacity(queries as usize);
    for id in 1..=queries {
        let line = query_line(id, dir);
        let expected = answer_line(id);
        let start = Instant::now();
        writer.write_all(line.as_bytes()).expect("send");
        answer.clear();
        reader.read_line(&mut answer).expect("answer");
        times.push(start.elapsed());
        assert_eq!(answer, expected, "port {port}");
    }
    times
}

/// `CONNECTIONS` connections in lock-step at once; queries per second, and every round
/// trip (sorted).
fn throughput(port: u16, queries: u64, dir: &str) -> (f64, Vec<Duration>) {
    let start = Instant::now();
    let mut times: Vec<Duration> = std::thread::scope(|s| {
        let each: Vec<_> = (0..CONNECTIONS)
            .map(|_| s.spawn(|| lock_step(port, queries, dir)))
            .collect();
        each.into_iter()
            .flat_map(|t| t.join().expect("a lock-step connection"))
            .collect()
    });
    let qps = (CONNECTIONS as u64 * queries) as f64 / start.elapsed().as_secs_f64();
    times.sort();
    (qps, times)
}

/// One connection with up to `IN_FLIGHT` queries outstanding at any moment (a parallel
/// build's held syscalls share its run's one connection); queries per second. Answers must
/// come back in order, each exactly the allow line for its id.
fn in_flight(port: u16, queries: u64, dir: &str) -> f64 {
    let (mut writer, mut reader) = open(port);
    // A slot per query outstanding: the writer takes one before sending, the reader gives
    // it back with the answer.
    let (slots, freed) = std::sync::mpsc::sync_channel::<()>(IN_FLIGHT);
    let start = Instant::now();
    std::thread::scope(|s| {
        s.spawn(move || {
            let mut answer = String::new();
            for id in 1..=queries {
                answer.clear();
                reader.read_line(&mut answer).expect("answer");
                assert_eq!(answer, answer_line(id), "port {port}, in flight");
                let _ = freed.recv();
            }
        });
        for id in 1..=queries {
            slots.send(()).expect("the reader is gone");
            writer
                .write_all(query_line(id, dir).as_bytes())
                .expect("send");
        }
    });
    queries as f64 / start.elapsed().as_secs_f64()
}

/// Threads of `pid` now.
fn threads_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// What the idle-connections phase saw of one presenter.
struct Idle {
    threads_before: usize,
    threads_with: usize,
    pss_before_kib: u64,
    pss_with_kib: u64,
    /// Lock-step round trips of a run connecting while the idle ones are open.
    beside: Vec<Duration>,
}

/// `IDLE` connections that send the session hello and nothing more, held open while a
/// run asks `queries` lock-step queries; the presenter's threads and its own PSS (its
/// process alone: WebKit's, started before, do not serve queries) before and with them.
fn idle_connections(port: u16, pid: u32, queries: u64, dir: &str) -> Idle {
    let own_pss = |pid: u32| {
        landstrip_tray_tests::memory::pss_by_process(pid)
            .first()
            .map_or(0, |p| p.kib)
    };
    let (threads_before, pss_before_kib) = (threads_of(pid), own_pss(pid));
    let mut idle = Vec::with_capacity(IDLE);
    for _ in 0..IDLE {
        idle.push(open(port));
    }
    // Every idle connection admitted: a query on each of a last few is answered only once
    // the presenter serves it, and connections are admitted in order.
    for _ in 0..4 {
        let _ = lock_step(port, 1, dir);
    }
    let beside = lock_step(port, queries, dir);
    let (threads_with, pss_with_kib) = (threads_of(pid), own_pss(pid));
    drop(idle);
    Idle {
        threads_before,
        threads_with,
        pss_before_kib,
        pss_with_kib,
        beside,
    }
}

fn median_f(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn spread(v: &[f64]) -> String {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{min:.3}..{max:.3}")
}

/// The trivial responder, started as a process of its own; its port.
struct Trivial {
    child: tokio::process::Child,
    port: u16,
}

async fn start_trivial() -> Trivial {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_trivial_responder"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the trivial responder");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    tokio::time::timeout(
        Duration::from_secs(20),
        tokio::io::BufReader::new(stdout).read_line(&mut line),
    )
    .await
    .expect("the trivial responder did not print its port")
    .expect("read its port");
    let port = line.trim().parse().expect("a port");
    Trivial { child, port }
}

/// `VmHWM` (peak resident set) and `VmRSS` of `pid`, in KiB.
fn rss_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// A real landstrip run writing `WRITES` files in `dir`, fd 3 to `port`; its wall time.
async fn landstrip_run(world: &AppWorld, policy: &Path, port: u16, dir: &Path) -> Duration {
    let script = format!(
        "import os\nfor i in range({WRITES}):\n    open(os.path.join({:?}, f'f{{i}}'), 'w').close()\nprint('done')\n",
        path_str(dir)
    );
    let start = Instant::now();
    let child = launch_landstrip_with_policy(
        Landstrip::V0_19,
        policy,
        &world.project,
        &world.home,
        port,
        Some(SESSION),
        &[PYTHON, "-c", &script],
    );
    let done = finish(child).await;
    let elapsed = start.elapsed();
    assert_eq!(done.stdout.trim(), "done", "{done:?}");
    elapsed
}

/// A real landstrip run writing `BYTES` bytes to each of `WRITES` files in `dir`; its
/// wall time.
async fn landstrip_fill(
    world: &AppWorld,
    policy: &Path,
    port: u16,
    dir: &Path,
    bytes: usize,
) -> Duration {
    let script = format!(
        "import os\ndata = b'x' * {bytes}\nfor i in range({WRITES}):\n    with open(os.path.join({:?}, f'f{{i}}'), 'wb') as f:\n        f.write(data)\nprint('done')\n",
        path_str(dir)
    );
    let start = Instant::now();
    let child = launch_landstrip_with_policy(
        Landstrip::V0_19,
        policy,
        &world.project,
        &world.home,
        port,
        Some(SESSION),
        &[PYTHON, "-c", &script],
    );
    let done = finish(child).await;
    let elapsed = start.elapsed();
    assert_eq!(done.stdout.trim(), "done", "{done:?}");
    elapsed
}

/// The write journal's cost: `rounds` runs each of 2,000 granted writes of new files with
/// the journal off and on (alternating, each into a fresh folder under the granted one),
/// and of overwrites of existing 4 KiB files; the medians (ms) and the journal's disk use.
async fn journal_runs(
    world: &AppWorld,
    policy: &Path,
    port: u16,
    dir: &Path,
    rounds: usize,
) -> ([f64; 4], Vec<f64>, u64) {
    let mut runs: [Vec<f64>; 4] = Default::default();
    let mut ratios = Vec::new();
    for round in 0..=rounds {
        let mut times = [0.0; 4];
        for (slot, (journal, bytes)) in [("off", 0), ("on", 0), ("off", 4096), ("on", 4096)]
            .into_iter()
            .enumerate()
        {
            world.ctl_ok(&["config", "set", "journal", journal]).await;
            let fresh = dir.join(format!("journal-{round}-{slot}"));
            std::fs::create_dir_all(&fresh).expect("mkdir");
            if bytes > 0 {
                for i in 0..WRITES {
                    std::fs::write(fresh.join(format!("f{i}")), vec![b'o'; bytes]).expect("write");
                }
            }
            times[slot] = landstrip_fill(world, policy, port, &fresh, bytes)
                .await
                .as_secs_f64()
                * 1e3;
        }
        if round > 0 {
            for (slot, t) in times.iter().enumerate() {
                runs[slot].push(*t);
            }
            ratios.push(times[1] / times[0]);
        }
    }
    let journal = world.activity_file().with_file_name("journal");
    let disk = du_bytes(&journal);
    (runs.map(median_f), ratios, disk)
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

/// What the 1,000-connection phase saw.
struct Many {
    elapsed: Duration,
    answered: u64,
    peak_rss_kib: u64,
}

/// `MANY` connections opened at once, then `PER_CONNECTION` lock-step queries on each, all
/// running together; every answer checked against its id. Samples `pid`'s resident set
/// meanwhile (if given).
async fn many_connections(port: u16, dir: &str, pid: Option<u32>) -> Many {
    let sampling = Arc::new(AtomicBool::new(true));
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = pid.map(|pid| {
        let (sampling, peak) = (sampling.clone(), peak.clone());
        std::thread::spawn(move || {
            while sampling.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kib(pid).1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    });
    let start = Instant::now();
    let mut streams = Vec::with_capacity(MANY);
    for _ in 0..MANY {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        stream.write_all(hello().as_bytes()).await.expect("hello");
        streams.push(stream);
    }
    let answered = Arc::new(AtomicU64::new(0));
    let mut clients = tokio::task::JoinSet::new();
    for stream in streams {
        let (dir, answered) = (dir.to_owned(), answered.clone());
        clients.spawn(async move {
            let (read, mut write) = stream.into_split();
            let mut read = tokio::io::BufReader::new(read);
            let mut answer = String::new();
            for id in 1..=PER_CONNECTION as u64 {
                write
                    .write_all(query_line(id, &dir).as_bytes())
                    .await
                    .expect("send");
                answer.clear();
                read.read_line(&mut answer).await.expect("answer");
                assert_eq!(answer, answer_line(id), "lost or wrong answer");
                answered.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    tokio::time::timeout(MANY_TIMEOUT, async {
        while let Some(done) = clients.join_next().await {
            done.expect("a client failed");
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "{MANY} x {PER_CONNECTION}: only {} answered within {MANY_TIMEOUT:?}",
            answered.load(Ordering::Relaxed)
        )
    });
    let elapsed = start.elapsed();
    sampling.store(false, Ordering::Relaxed);
    if let Some(sampler) = sampler {
        let _ = sampler.join();
    }
    Many {
        elapsed,
        answered: answered.load(Ordering::Relaxed),
        peak_rss_kib: peak.load(Ordering::Relaxed),
    }
}

/// The first prompt's answer, "for session", through `ctl` as a person at a shell would
/// give it; the query that asked then gets its allow.
async fn grant_session(world: &AppWorld, port: u16, dir: &str, args: &[&str]) {
    let (_connection, answer) = answer_first(world, port, dir, args).await;
    assert_eq!(answer, answer_line(1), "the granted prompt's answer");
}

/// A query for a write in `dir` on a new connection, answered through `ctl answer ID
/// ARGS…`; the connection (kept open: a grant limited to the run lasts as long) and the
/// answer the query got.
async fn answer_first(
    world: &AppWorld,
    port: u16,
    dir: &str,
    args: &[&str],
) -> ((TcpStream, BufReader<TcpStream>), String) {
    let dir_s = dir.to_owned();
    let asking = tokio::task::spawn_blocking(move || {
        let (mut writer, mut reader) = open(port);
        writer
            .write_all(query_line(1, &dir_s).as_bytes())
            .expect("send");
        let mut answer = String::new();
        reader.read_line(&mut answer).expect("answer");
        ((writer, reader), answer)
    });
    let waited = world.ctl_ok(&["pending", "--wait", "--json"]).await;
    let items: serde_json::Value = serde_json::from_str(&waited).expect("ctl pending --json");
    let id = items[0]["id"].as_u64().expect("a prompt id").to_string();
    let mut answer = vec!["answer", id.as_str()];
    answer.extend_from_slice(args);
    world.ctl_ok(&answer).await;
    asking.await.expect("the asking connection")
}

/// With `LANDSTRIP_TRAY_BENCH_LIMITS=1`, the session grants a person would have in place
/// beside the measured one, each with a limit the query path checks (deadline, program,
/// run, deny effect), for other folders of the same session; the connections that must
/// stay open for them.
async fn limited_grants(world: &AppWorld, port: u16) -> Vec<(TcpStream, BufReader<TcpStream>)> {
    let others: [&[&str]; 4] = [
        &["session", "--for", "8h", "--program"],
        &["session", "--for", "run"],
        &["deny", "--session", "--for", "1h"],
        &["session", "--for", "15m", "--program"],
    ];
    let mut kept = Vec::new();
    for (i, args) in others.iter().enumerate() {
        let dir = world.outside.join(format!("other-{i}"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let (connection, answer) = answer_first(world, port, path_str(&dir), args).await;
        let action = if args[0] == "deny" { "deny" } else { "allow" };
        assert_eq!(
            answer,
            format!("{{\"query_id\":\"1\",\"action\":\"{action}\"}}\n"),
            "ctl answer {args:?}"
        );
        kept.push(connection);
    }
    kept
}

/// The landstrip policy with `dir` in allowWrite (built as the plugin builds it, from a
/// global sandbox.json in a scratch home): a run under it asks nothing.
fn allow_write_policy(world: &AppWorld, dir: &Path) -> PathBuf {
    let home = world.base.join("home-allow-write");
    let config = home.join(".config/opencode");
    std::fs::create_dir_all(&config).expect("mkdir");
    let policy = serde_json::json!({"filesystem": {"allowWrite": [dir]}});
    std::fs::write(config.join("sandbox.json"), policy.to_string()).expect("write");
    write_landstrip_policy(&home, &world.project, world.root.path())
}

/// How many of the `TAIL` queries under `tail_dir` the activity log (and its rotated
/// predecessor) records as allowed by the session grant.
fn tail_recorded(world: &AppWorld, tail_dir: &Path) -> usize {
    let file = world.activity_file();
    let mut rotated = file.clone().into_os_string();
    rotated.push(".1");
    let mut seen = std::collections::HashSet::new();
    for path in [PathBuf::from(rotated), file] {
        for line in std::fs::read_to_string(path).unwrap_or_default().lines() {
            let Ok(entry) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let subject = entry["subject"].as_str().unwrap_or_default();
            if entry["by"] == "session_grant" && entry["outcome"] == "allow" {
                if let Some(name) = Path::new(subject)
                    .strip_prefix(tail_dir)
                    .ok()
                    .and_then(|n| n.to_str())
                {
                    seen.insert(name.to_owned());
                }
            }
        }
    }
    seen.len()
}

fn row(name: &str, trivial: f64, app: f64, ratio: f64, target: &str, per_round: &str) {
    println!("{name:<36} {trivial:>12.1} {app:>12.1} {ratio:>7.3}  {target:<12} {per_round}");
}

#[tokio::main]
async fn main() {
    assert!(
        std::env::var_os("DISPLAY").is_some(),
        "run under `xvfb-run -a dbus-run-session -- cargo bench -p landstrip-tray-tests --bench load`"
    );
    let rounds = env_number("BENCH_ROUNDS", 5).max(1);
    let queries = env_number("BENCH_QUERIES", 5_000).max(10) as u64;
    let per_conn = (queries / 4).max(10);

    let world = AppWorld::new();
    // The app as a user starts it (its default log level); only the dialog's own debug
    // line is turned on, to await the prompt window's end before measuring, and the
    // window lingers 0.2 s instead of 30 s after the one prompt of the set-up.
    let mut app = world.start_with(
        &[&world.project],
        &[
            // The line is the shared linger's (app/idle.rs), not the dialog module's.
            (
                "RUST_LOG",
                "info,landstrip_tray::app::dialog=debug,landstrip_tray::app::idle=debug",
            ),
            ("LANDSTRIP_TRAY_DIALOG_LINGER_MS", "200"),
        ],
    );
    app.wait_for_control().await;
    let ours = app.serving(&world, &world.project).await;
    let trivial = start_trivial().await;
    let floor = trivial.port;
    let dir = world.outside.join("granted");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let dir_s = path_str(&dir).to_owned();

    // The measured grant: plain "for session", or, with the other limited grants in
    // place, one that lapses in an hour (its deadline is read on every query it answers).
    let limits = std::env::var("LANDSTRIP_TRAY_BENCH_LIMITS").is_ok_and(|v| v == "1");
    let _kept = if limits {
        limited_grants(&world, ours).await
    } else {
        Vec::new()
    };
    let grant: &[&str] = if limits {
        &["session", "--for", "1h"]
    } else {
        &["session"]
    };
    grant_session(&world, ours, &dir_s, grant).await;
    // While a run is connected the dialog's window is kept ready, so with the run-limited
    // grant's connection open it stays (as it does during every measured phase anyway).
    if !limits {
        app.wait_for_log("destroying its webview").await;
    }
    let (hwm_start, _) = rss_kib(app.pid);

    // Lock-step and 16 connections, alternating (which goes first alternates too).
    let mut one: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
    let mut p50_ratios = Vec::new();
    let mut p99_ratios = Vec::new();
    let mut many_qps: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let mut qps_ratios = Vec::new();
    let mut flight_qps: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let mut many_lat: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
    let mut many_p99_ratios = Vec::new();
    let mut flight_ratios = Vec::new();
    {
        let dir_s = dir_s.clone();
        let results = tokio::task::spawn_blocking(move || {
            let ports = [floor, ours];
            for port in ports {
                let _warm = lock_step(port, queries / 5, &dir_s);
                let _warm = throughput(port, per_conn / 5, &dir_s);
            }
            let mut rounds_out = Vec::new();
            for round in 0..rounds {
                let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
                let mut lat: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
                let mut qps = [0.0; 2];
                let mut qlat: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
                let mut flight = [0.0; 2];
                for &i in &order {
                    lat[i] = lock_step(ports[i], queries, &dir_s);
                    lat[i].sort();
                }
                for &i in &order {
                    (qps[i], qlat[i]) = throughput(ports[i], per_conn, &dir_s);
                }
                for &i in &order {
                    flight[i] = in_flight(ports[i], queries, &dir_s);
                }
                rounds_out.push((lat, qps, qlat, flight));
            }
            rounds_out
        })
        .await
        .expect("lock-step rounds");
        for ([floor_lat, our_lat], qps, [floor_q, our_q], flight) in results {
            many_p99_ratios
                .push(micros(percentile(&our_q, 0.99)) / micros(percentile(&floor_q, 0.99)));
            many_lat[0].extend(floor_q);
            many_lat[1].extend(our_q);
            flight_ratios.push(flight[1] / flight[0]);
            flight_qps[0].push(flight[0]);
            flight_qps[1].push(flight[1]);
            p50_ratios
                .push(micros(percentile(&our_lat, 0.5)) / micros(percentile(&floor_lat, 0.5)));
            p99_ratios
                .push(micros(percentile(&our_lat, 0.99)) / micros(percentile(&floor_lat, 0.99)));
            qps_ratios.push(qps[1] / qps[0]);
            one[0].extend(floor_lat);
            one[1].extend(our_lat);
            many_qps[0].push(qps[0]);
            many_qps[1].push(qps[1]);
        }
    }
    for v in one.iter_mut().chain(many_lat.iter_mut()) {
        v.sort();
    }

    // Real landstrip runs: against the trivial responder, the app, and with the directory
    // in allowWrite (no queries; fd 3 to the trivial responder, which hears nothing). The
    // first round warms caches and is not counted.
    let granted_policy = write_landstrip_policy(&world.home, &world.project, world.root.path());
    let open_policy = allow_write_policy(&world, &dir);
    let mut runs: [Vec<f64>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    let mut run_ratios = Vec::new();
    for round in 0..=rounds {
        let f = landstrip_run(&world, &granted_policy, floor, &dir).await;
        let o = landstrip_run(&world, &granted_policy, ours, &dir).await;
        let a = landstrip_run(&world, &open_policy, floor, &dir).await;
        if round > 0 {
            runs[0].push(f.as_secs_f64() * 1e3);
            runs[1].push(o.as_secs_f64() * 1e3);
            runs[2].push(a.as_secs_f64() * 1e3);
            run_ratios.push(o.as_secs_f64() / f.as_secs_f64());
        }
    }

    // The write journal: the same granted runs into new files, off and on; overwrites.
    let (journal, journal_ratios, journal_disk) =
        journal_runs(&world, &granted_policy, ours, &dir, rounds).await;

    // 1,000 connections x 100 queries, the trivial responder first, then the app.
    let floor_many = many_connections(floor, &dir_s, None).await;
    let (hwm_before_many, rss_before_many) = rss_kib(app.pid);
    let our_many = many_connections(ours, &dir_s, Some(app.pid)).await;
    let (hwm_after_many, rss_after_many) = rss_kib(app.pid);
    let (pss_after, procs) = pss_tree_kib(app.pid);

    // 2,000 idle connections, the trivial responder first, then the app.
    let trivial_pid = trivial.child.id().expect("the trivial responder runs");
    let app_pid = app.pid;
    let idle = {
        let dir_s = dir_s.clone();
        tokio::task::spawn_blocking(move || {
            [
                idle_connections(floor, trivial_pid, queries, &dir_s),
                idle_connections(ours, app_pid, queries, &dir_s),
            ]
        })
        .await
        .expect("idle connections")
    };

    // The last queries before a clean quit: each must be in the activity log afterwards
    // (the log is written in batches off the answer path, and rotates at 8 MiB, so only
    // the tail can be checked entry by entry).
    let tail_dir = dir.join("tail");
    let tail_s = path_str(&tail_dir).to_owned();
    tokio::task::spawn_blocking(move || lock_step(ours, TAIL, &tail_s))
        .await
        .expect("the last queries");
    app.quit().await;
    let recorded = tail_recorded(&world, &tail_dir);

    let now = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    println!(
        "load figures ({now}; app {}; {rounds} alternating rounds)",
        landstrip_tray_tests::real_app::app_binary().display()
    );
    let kernel = std::fs::read_to_string("/proc/version").unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "machine: {cores} cores; {}; absolute times move with the machine, ratios matter",
        kernel.split(" (").next().unwrap_or("").trim()
    );
    println!(
        "grants: {}",
        if limits {
            "the measured one `session --for 1h`, beside 4 limited ones of other folders (LANDSTRIP_TRAY_BENCH_LIMITS=1)"
        } else {
            "the measured one `session`, alone"
        }
    );
    println!(
        "{:<36} {:>12} {:>12} {:>7}  {:<12} per-round ratios",
        "", "trivial", "app", "ratio", "target"
    );
    let (f50, o50) = (
        micros(percentile(&one[0], 0.5)),
        micros(percentile(&one[1], 0.5)),
    );
    let (f99, o99) = (
        micros(percentile(&one[0], 0.99)),
        micros(percentile(&one[1], 0.99)),
    );
    row(
        &format!("1 conn lock-step p50 (us, {queries}/round)"),
        f50,
        o50,
        o50 / f50,
        "<= 1.10",
        &spread(&p50_ratios),
    );
    row(
        "1 conn lock-step p99 (us)",
        f99,
        o99,
        o99 / f99,
        "<= 3",
        &spread(&p99_ratios),
    );
    let (fq, oq) = (median_f(many_qps[0].clone()), median_f(many_qps[1].clone()));
    row(
        &format!("{CONNECTIONS} conn queries/s (median, {per_conn}/conn)"),
        fq,
        oq,
        oq / fq,
        ">= 0.80",
        &spread(&qps_ratios),
    );
    for (name, p, target) in [("p50", 0.5, ""), ("p99", 0.99, "<= 3")] {
        let (f, o) = (
            micros(percentile(&many_lat[0], p)),
            micros(percentile(&many_lat[1], p)),
        );
        let per_round = if p > 0.5 {
            spread(&many_p99_ratios)
        } else {
            String::new()
        };
        row(
            &format!("  {CONNECTIONS} conn lock-step {name} (us)"),
            f,
            o,
            o / f,
            target,
            &per_round,
        );
    }
    let (ff, of) = (
        median_f(flight_qps[0].clone()),
        median_f(flight_qps[1].clone()),
    );
    row(
        &format!("1 conn, {IN_FLIGHT} in flight, queries/s"),
        ff,
        of,
        of / ff,
        ">= 0.80",
        &spread(&flight_ratios),
    );
    let (fr, or, ar) = (
        median_f(runs[0].clone()),
        median_f(runs[1].clone()),
        median_f(runs[2].clone()),
    );
    row(
        &format!("landstrip {WRITES} granted writes (ms)"),
        fr,
        or,
        or / fr,
        "<= 1.05",
        &spread(&run_ratios),
    );
    row(
        "  same run, dir in allowWrite (ms)",
        ar,
        or,
        or / ar,
        "(app/none)",
        "",
    );
    println!("{:<36} {:>12} {:>12}", "write journal", "off", "on");
    row(
        &format!("  {WRITES} granted new files (ms)"),
        journal[0],
        journal[1],
        journal[1] / journal[0],
        "<= 1.10",
        &spread(&journal_ratios),
    );
    row(
        &format!("  {WRITES} overwrites of 4 KiB (ms)"),
        journal[2],
        journal[3],
        journal[3] / journal[2],
        "(report)",
        "",
    );
    println!(
        "  journal on disk after {} rounds (MB)   {:.1}",
        rounds + 1,
        journal_disk as f64 / (1 << 20) as f64
    );
    println!(
        "{:<36} {:>12.1} {:>12.1} {:>7.3}",
        format!("{MANY} conn x {PER_CONNECTION} queries (s)"),
        floor_many.elapsed.as_secs_f64(),
        our_many.elapsed.as_secs_f64(),
        our_many.elapsed.as_secs_f64() / floor_many.elapsed.as_secs_f64()
    );
    println!(
        "  answered (trivial / app)           {} / {} of {}",
        floor_many.answered,
        our_many.answered,
        MANY * PER_CONNECTION
    );
    let mb = |kib: u64| kib as f64 / 1024.0;
    println!(
        "  app RSS before / peak sampled / after (MB)   {:.1} / {:.1} / {:.1}",
        mb(rss_before_many),
        mb(our_many.peak_rss_kib.max(rss_after_many)),
        mb(rss_after_many)
    );
    println!(
        "  app VmHWM after set-up / before / after (MB) {:.1} / {:.1} / {:.1}",
        mb(hwm_start),
        mb(hwm_before_many),
        mb(hwm_after_many)
    );
    println!(
        "  PSS of the app's {procs} processes after (MB)   {:.1}",
        mb(pss_after)
    );
    let [mut idle_floor, mut idle_app] = idle;
    idle_floor.beside.sort();
    idle_app.beside.sort();
    println!(
        "{:<36} {:>12} {:>12}",
        format!("{IDLE} idle connections"),
        "trivial",
        "app"
    );
    println!(
        "  threads before / with them         {:>5} / {:<5} {:>5} / {:<5}  target: app <= 64 with them",
        idle_floor.threads_before, idle_floor.threads_with, idle_app.threads_before, idle_app.threads_with
    );
    println!(
        "  own PSS before / with them (MB)    {:>5.1} / {:<5.1} {:>5.1} / {:<5.1}  target: app <= 150 with them",
        mb(idle_floor.pss_before_kib),
        mb(idle_floor.pss_with_kib),
        mb(idle_app.pss_before_kib),
        mb(idle_app.pss_with_kib)
    );
    let (i50f, i99f, i50o, i99o) = (
        micros(percentile(&idle_floor.beside, 0.5)),
        micros(percentile(&idle_floor.beside, 0.99)),
        micros(percentile(&idle_app.beside, 0.5)),
        micros(percentile(&idle_app.beside, 0.99)),
    );
    println!(
        "  a run beside them, p50 / p99 (us)  {i50f:>5.1} / {i99f:<7.1} {i50o:>5.1} / {i99o:<7.1}  target: app p99 < 5000"
    );
    println!("activity: the last {TAIL} answers before a clean quit, recorded: {recorded}");
    assert_eq!(
        recorded as u64, TAIL,
        "the activity log lost entries at quit"
    );
}
