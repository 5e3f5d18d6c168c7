//! The core's real listener under hostile and broken clients while a real landstrip run is
//! being answered: a Python program under the real landstrip 0.19 writes files one after
//! another (each write a held syscall that the app answers through a session grant) and
//! times every write as the program sees it, while the test attacks the same port with
//! idle connections, endless lines, binary garbage, half-closed sockets, a peer that never
//! reads, one id repeated, a flood on one connection and a connect-and-close storm.
//! Nothing is mocked. The figures (p50/p99 per phase, memory before/after) are printed;
//! the assertions are that every write of the run was answered (none lost, none denied),
//! that every hostile client got exactly what the rules say, and that memory stays bounded.
//!
//! The core runs in this test's process (as `TestEnv` does everywhere), so the memory
//! figures are the process's: the core plus the hostile clients, whose own buffers are
//! kept small (streamed, never built whole). It is the only test of its binary, so that no
//! other test's memory, threads or connections are counted in its figures, nor in the
//! listener's process-wide counters it reads (as `idle_connections.rs` in the core);
//! another uid's run is refused in `other_uid.rs`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use landstrip_tray_core::decision::answer::AnswerRequest;
use landstrip_tray_core::serving::listener::MAX_ACTIVE;
use landstrip_tray_tests::{
    threads_named, write_landstrip_policy, Landstrip, TestEnv, EVENT_TIMEOUT, PYTHON,
};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

/// The legitimate program: writes `f0`, `f1`, … in argv[1] until a line arrives on stdin,
/// printing each write's duration in microseconds (or `EACCES <i>` and exit 13), then
/// `done <n>`. Paced (2 ms between writes) so it is a steady client, not a second load.
const TIMED_WRITES: &str = r#"
import os, select, sys, time
d = sys.argv[1]
i = 0
while True:
    if select.select([sys.stdin], [], [], 0)[0]:
        break
    p = os.path.join(d, "f%d" % i)
    t = time.perf_counter_ns()
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    except PermissionError:
        print("EACCES %d" % i, flush=True)
        sys.exit(13)
    dt = time.perf_counter_ns() - t
    os.close(fd)
    print(dt // 1000, flush=True)
    i += 1
    time.sleep(0.002)
print("done %d" % i, flush=True)
"#;

/// A landstrip 0.19 write query (newline-terminated) for `path` with string id `id`.
fn query(id: &str, path: &Path) -> String {
    let path = path.to_str().expect("utf-8 path");
    format!(
        "{{\"kind\":\"filesystem\",\"code\":\"FILESYSTEM_DENIED\",\"state\":\"query\",\"query_id\":\"{id}\",\"operation\":\"write\",\"path\":\"{path}\",\"requested_path\":\"{path}\",\"syscall\":\"openat\",\"reason\":\"allow_miss\",\"process\":{{\"pid\":4242,\"exe\":\"/usr/bin/dash\"}},\"mechanism\":\"seccomp\"}}\n"
    )
}

fn allow(id: &str) -> String {
    format!("{{\"query_id\":\"{id}\",\"action\":\"allow\"}}\n")
}

async fn connect(port: u16) -> TcpStream {
    let stream = tokio::time::timeout(EVENT_TIMEOUT, TcpStream::connect(("127.0.0.1", port)))
        .await
        .expect("connect in time")
        .expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    stream
}

/// Reads until the peer closes the connection (EOF or a reset), bounded; returns what came.
async fn until_closed(stream: &mut TcpStream, what: &str) -> Vec<u8> {
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match tokio::time::timeout(EVENT_TIMEOUT, stream.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return got,
            Ok(Ok(n)) => got.extend_from_slice(&chunk[..n]),
            Err(_) => panic!("the listener did not close {what} within {EVENT_TIMEOUT:?}"),
        }
    }
}

/// The next line from `reader`, bounded.
async fn next_line(reader: &mut BufReader<TcpStream>, what: &str) -> String {
    let mut line = String::new();
    let n = tokio::time::timeout(EVENT_TIMEOUT, reader.read_line(&mut line))
        .await
        .unwrap_or_else(|_| panic!("no answer line for {what} within {EVENT_TIMEOUT:?}"))
        .expect("read");
    assert!(n > 0, "EOF instead of an answer for {what}");
    line
}

/// This process's resident and proportional set sizes and its peak RSS, in KiB.
fn memory_kib() -> (u64, u64, u64) {
    let field = |text: &str, name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    (
        field(&status, "VmRSS:"),
        field(&rollup, "Pss:"),
        field(&status, "VmHWM:"),
    )
}

/// Makes sure this process may hold the connections the test opens (two fds each).
fn enough_descriptors(needed: u64) {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let soft = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    if soft >= needed {
        return;
    }
    let status = std::process::Command::new("prlimit")
        .arg(format!("--pid={}", std::process::id()))
        .arg(format!("--nofile={needed}:{needed}"))
        .status();
    assert!(
        matches!(status, Ok(s) if s.success()),
        "the open-files limit is {soft}; this test needs {needed} (prlimit failed: {status:?})"
    );
}

/// How long a run connecting right behind 1,000 new connections may wait for its answer.
/// The peer-uid lookups are batched (one table read for every connection waiting at that
/// moment); looked up one by one they cost tens of milliseconds each, so a run behind them
/// would wait tens of seconds. The bound tells those apart on a loaded machine; the figure
/// itself is printed.
const BEHIND_A_FLOOD: Duration = Duration::from_secs(5);

/// What 32 quiet connections may keep after a 1 MiB line each: half of the 32 MiB their
/// lines took, so that keeping each line's buffer fails, and the rest (the connections
/// themselves, the allocator's slack) passes.
const KEPT_AFTER_LONG_LINES_KIB: u64 = 16 * 1024;

/// The pseudo-phase of the run's writes while the test measures memory (not reported).
const MEASURING: usize = usize::MAX;

/// The samples of the legitimate run, by phase.
#[derive(Default)]
struct Samples {
    by_phase: BTreeMap<usize, Vec<u64>>,
    done: Option<u64>,
    failure: Option<String>,
}

/// Percentile (nearest rank) of sorted microsecond samples.
fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The legitimate run: started under the real landstrip with a session hello, its first
/// write answered "for this session" by the test, every later write then auto-answered.
struct LegitRun {
    child: Child,
    phase: Arc<AtomicUsize>,
    samples: Arc<Mutex<Samples>>,
    reader: tokio::task::JoinHandle<()>,
}

impl LegitRun {
    async fn start(env: &mut TestEnv) -> Self {
        let dir = env.outside.join("legit");
        std::fs::create_dir_all(&dir).expect("mkdir");
        let policy = write_landstrip_policy(&env.home, &env.project, env.root.path());
        let hello = r#"{"kind":"opencode-landstrip-session","sessionID":"ses_legit"}"#;
        let wrapper = format!(
            "exec 3<>/dev/tcp/127.0.0.1/{} && printf '%s\\n' '{hello}' >&3 && exec \"$@\"",
            env.discovered_port()
        );
        let mut child = Command::new("bash")
            .arg("-c")
            .arg(wrapper)
            .arg("bash")
            .arg(Landstrip::V0_19.binary())
            .args(["run", "--trap", "3", "-p"])
            .arg(&policy)
            .arg("--")
            .args([PYTHON, "-c", TIMED_WRITES, dir.to_str().expect("utf-8")])
            .current_dir(&env.project)
            .env("HOME", &env.home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn landstrip");
        let prompt = env.next_prompt().await;
        assert_eq!(prompt.session.as_deref(), Some("ses_legit"));
        env.broker()
            .answer(prompt.id, &AnswerRequest::session())
            .expect("answer the first write for the session");
        let phase = Arc::new(AtomicUsize::new(0));
        let samples = Arc::new(Mutex::new(Samples::default()));
        let stdout = child.stdout.take().expect("stdout");
        let reader = tokio::spawn({
            let (phase, samples) = (phase.clone(), samples.clone());
            async move {
                let mut lines = BufReader::new(stdout).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let mut s = samples.lock().unwrap_or_else(PoisonError::into_inner);
                    if let Ok(us) = line.parse::<u64>() {
                        let p = phase.load(Ordering::Relaxed);
                        s.by_phase.entry(p).or_default().push(us);
                    } else if let Some(n) = line.strip_prefix("done ") {
                        s.done = n.parse().ok();
                    } else {
                        s.failure = Some(line);
                    }
                }
            }
        });
        Self {
            child,
            phase,
            samples,
            reader,
        }
    }

    fn count(&self, phase: usize) -> usize {
        let s = self.samples.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(failure) = &s.failure {
            panic!("the legitimate run failed: {failure}");
        }
        s.by_phase.get(&phase).map_or(0, Vec::len)
    }

    /// Waits (bounded) until the run has made `n` writes during the current phase; a run
    /// whose query was lost stops making progress and fails here.
    async fn progress(&self, n: usize) {
        let phase = self.phase.load(Ordering::Relaxed);
        let deadline = Instant::now() + EVENT_TIMEOUT;
        while self.count(phase) < n {
            assert!(
                Instant::now() < deadline,
                "the legitimate run made {} of {n} writes in phase {phase} within {EVENT_TIMEOUT:?}: a query was lost or stalled",
                self.count(phase)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stops the program, checks every write it made succeeded, returns its samples.
    async fn finish(mut self) -> (BTreeMap<usize, Vec<u64>>, u64) {
        let mut stdin = self.child.stdin.take().expect("stdin");
        stdin
            .write_all(b"stop\n")
            .await
            .expect("tell the run to stop");
        drop(stdin);
        let status = tokio::time::timeout(EVENT_TIMEOUT, self.child.wait())
            .await
            .expect("the legitimate run did not exit in time")
            .expect("wait");
        tokio::time::timeout(EVENT_TIMEOUT, &mut self.reader)
            .await
            .expect("its output did not end")
            .expect("reader");
        let s = std::mem::take(&mut *self.samples.lock().unwrap_or_else(PoisonError::into_inner));
        assert_eq!(s.failure, None, "the legitimate run failed");
        assert!(status.success(), "the legitimate run exited with {status}");
        let done = s.done.expect("the run printed its count");
        let timed: usize = s.by_phase.values().map(Vec::len).sum();
        assert_eq!(
            timed as u64, done,
            "every write the run made was answered and timed"
        );
        (s.by_phase, done)
    }
}

/// A connection whose queries the bundled defaults allow (writes inside the project), so
/// the listener answers them at once.
fn project_query(env: &TestEnv, id: &str) -> String {
    query(id, &env.project.join(format!("out/{id}")))
}

/// Phase: 10 MiB without a newline on one connection. The listener drops the connection
/// once the line passes 1 MiB; the client sees its writes fail or the connection close.
async fn ten_mib_without_a_newline(port: u16) {
    let mut stream = connect(port).await;
    let chunk = vec![b'x'; 64 * 1024];
    let mut sent = 0usize;
    let total = 10 << 20;
    while sent < total {
        match tokio::time::timeout(EVENT_TIMEOUT, stream.write_all(&chunk)).await {
            Ok(Ok(())) => sent += chunk.len(),
            // Closed by the listener part-way: what we want.
            Ok(Err(_)) => break,
            Err(_) => panic!("writing the endless line stalled for {EVENT_TIMEOUT:?}"),
        }
    }
    let answers = until_closed(&mut stream, "the endless line").await;
    assert!(answers.is_empty(), "an endless line got {answers:?}");
    eprintln!(
        "  10 MiB without a newline: closed after {} KiB were accepted",
        sent >> 10
    );
}

/// Phase: 32 connections each send one line of exactly 1 MiB (the longest accepted) and
/// stay connected, quiet. The listener gives each line's buffer back once it is read, so
/// they cost little. Returns them, still open, and the RSS (KiB) before they connected.
async fn long_lines_then_quiet(env: &TestEnv, port: u16) -> (Vec<TcpStream>, u64) {
    let (before, _, _) = memory_kib();
    let mut line = vec![b'x'; landstrip_tray_core::wire::protocol::MAX_LINE];
    line.push(b'\n');
    let mut quiet = Vec::new();
    for _ in 0..32 {
        let mut stream = connect(port).await;
        tokio::time::timeout(EVENT_TIMEOUT, stream.write_all(&line))
            .await
            .expect("a 1 MiB line written in time")
            .expect("a line of exactly 1 MiB is accepted");
        quiet.push(stream);
    }
    drop(line);
    // Each line was read through: a query behind it on the same connection is answered.
    for (i, stream) in quiet.iter_mut().enumerate() {
        let id = format!("after-long-{i}");
        stream
            .write_all(project_query(env, &id).as_bytes())
            .await
            .expect("send");
        let mut answer = Vec::new();
        while !answer.ends_with(b"\n") {
            let mut chunk = [0u8; 256];
            let n = tokio::time::timeout(EVENT_TIMEOUT, stream.read(&mut chunk))
                .await
                .expect("no answer after a 1 MiB line")
                .expect("read");
            assert!(n > 0, "closed after a 1 MiB line");
            answer.extend_from_slice(&chunk[..n]);
        }
        assert_eq!(String::from_utf8_lossy(&answer), allow(&id));
    }
    (quiet, before)
}

/// Phase: 10 MiB of pseudo-random bytes (with the newlines chance puts in), then a valid
/// query on the same connection: garbage is ignored line by line and the query answered.
async fn binary_garbage(env: &TestEnv, port: u16) {
    let stream = connect(port).await;
    let (read, mut write) = stream.into_split();
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut chunk = vec![0u8; 64 * 1024];
    for _ in 0..160 {
        for byte in chunk.iter_mut() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            *byte = (seed >> 24) as u8;
        }
        tokio::time::timeout(EVENT_TIMEOUT, write.write_all(&chunk))
            .await
            .expect("garbage written in time")
            .expect("the listener dropped a connection for short garbage lines");
    }
    write
        .write_all(format!("\n{}", project_query(env, "after-garbage")).as_bytes())
        .await
        .expect("send");
    let mut reader = BufReader::new(read.reunite(write).expect("reunite"));
    assert_eq!(
        next_line(&mut reader, "the query after garbage").await,
        allow("after-garbage"),
        "garbage was answered, or the query after it was not"
    );
}

/// Phase: half-closed sockets. 200 connections each send an auto-answered query and shut
/// their write side: each gets its answer, then the listener closes. One more holds a
/// prompt and half-closes: its prompt is withdrawn (landstrip would deny it).
async fn half_closed(env: &mut TestEnv, port: u16) {
    for i in 0..200 {
        let mut stream = connect(port).await;
        let id = format!("half-{i}");
        stream
            .write_all(project_query(env, &id).as_bytes())
            .await
            .expect("send");
        stream.shutdown().await.expect("shut the write side");
        let got = until_closed(&mut stream, "a half-closed connection").await;
        assert_eq!(String::from_utf8_lossy(&got), allow(&id));
    }
    let mut held = connect(port).await;
    let target = env.outside.join("held/by-half-closed");
    held.write_all(query("held", &target).as_bytes())
        .await
        .expect("send");
    let prompt = env.next_prompt().await;
    assert_eq!(prompt.query.id.raw(), "\"held\"");
    held.shutdown().await.expect("shut the write side");
    let got = until_closed(&mut held, "the half-closed holder").await;
    assert!(got.is_empty(), "a withdrawn prompt was answered: {got:?}");
    let deadline = Instant::now() + EVENT_TIMEOUT;
    while env.broker().pending().iter().any(|p| p.id == prompt.id) {
        assert!(
            Instant::now() < deadline,
            "the half-closed run's prompt was not withdrawn"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Phase: a peer that writes queries and never reads its answers. The listener keeps
/// reading (as it must for landstrip) and drops the connection once 1 MiB of answers is
/// owed, so the writes start failing; memory stays bounded meanwhile.
async fn never_reads(env: &TestEnv, port: u16) {
    let mut stream = connect(port).await;
    let mut batch = String::new();
    let mut id = 0u64;
    let mut sent = 0usize;
    let started = Instant::now();
    loop {
        batch.clear();
        for _ in 0..200 {
            id += 1;
            batch.push_str(&project_query(env, &format!("nr{id}")));
        }
        match tokio::time::timeout(EVENT_TIMEOUT, stream.write_all(batch.as_bytes())).await {
            Ok(Ok(())) => sent += batch.len(),
            Ok(Err(_)) => break,
            Err(_) => panic!(
                "the listener stopped reading a peer that does not read its answers ({} MiB sent)",
                sent >> 20
            ),
        }
        assert!(
            sent < 1 << 30,
            "1 GiB of queries accepted without reading an answer"
        );
    }
    eprintln!(
        "  never reads: dropped after {id} queries ({} MiB) in {:?}",
        sent >> 20,
        started.elapsed()
    );
}

/// Peers that each send a byte a second: never quiet for `ACTIVE_IDLE` (2 s), each holds a
/// reader thread for as long as it trickles, and there are more of them than readers.
const SLOW_PEERS: usize = 40;

/// How many bytes (seconds) each slow peer trickles before sending the rest of its query.
const SLOW_SECONDS: u32 = 6;

/// Phase: [`SLOW_PEERS`] peers each send a byte of a query every second for
/// [`SLOW_SECONDS`] while the run goes on, then the rest: the run is answered meanwhile,
/// the `query-reader` threads never pass [`MAX_ACTIVE`] (nor the process's threads that
/// many over the phase's start), and every slow peer is answered.
async fn byte_a_second(env: &TestEnv, port: u16, run: &LegitRun) {
    let threads_at_start = all_threads();
    let mut peers = Vec::with_capacity(SLOW_PEERS);
    for i in 0..SLOW_PEERS {
        let line = project_query(env, &format!("slow-{i}"));
        peers.push((BufReader::new(connect(port).await), line));
    }
    let phase = run.phase.load(Ordering::Relaxed);
    let (mut most_readers, mut most_threads) = (0, 0);
    let started = tokio::time::Instant::now();
    for second in 0..SLOW_SECONDS {
        // The pace is the scenario (a byte a second), not a wait for an event.
        tokio::time::sleep_until(started + Duration::from_secs(second.into())).await;
        let at = second as usize;
        for (peer, line) in &mut peers {
            peer.get_mut()
                .write_all(&line.as_bytes()[at..=at])
                .await
                .expect("a slow peer's byte");
        }
        most_readers = most_readers.max(threads_named("query-reader"));
        most_threads = most_threads.max(all_threads());
    }
    // The run went on while every reader was held by a slow peer.
    let during = run.count(phase);
    most_readers = most_readers.max(threads_named("query-reader"));
    eprintln!(
        "  {SLOW_PEERS} slow peers for {:?}: the run made {during} writes meanwhile; at most {most_readers} query-reader threads (bound {MAX_ACTIVE}), {most_threads} threads in all ({threads_at_start} at the start)",
        started.elapsed()
    );
    assert!(
        during > 0,
        "the run made no write while {SLOW_PEERS} peers trickled"
    );
    assert!(
        most_readers <= MAX_ACTIVE,
        "{SLOW_PEERS} slow peers took {most_readers} query-reader threads (at most {MAX_ACTIVE})"
    );
    assert!(
        most_threads <= threads_at_start + MAX_ACTIVE,
        "{SLOW_PEERS} slow peers took the process from {threads_at_start} to {most_threads} threads"
    );
    // Then each says the rest, and each is answered.
    let skip = SLOW_SECONDS as usize;
    for (peer, line) in &mut peers {
        peer.get_mut()
            .write_all(&line.as_bytes()[skip..])
            .await
            .expect("a slow peer's rest");
    }
    for (i, (peer, _)) in peers.iter_mut().enumerate() {
        assert_eq!(
            next_line(peer, "a slow peer's query").await,
            allow(&format!("slow-{i}"))
        );
    }
}

/// This process's threads.
fn all_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .count()
}

/// Phase: one id 10,000 times on one connection, then another id: exactly one answer for
/// the repeated id, and the next answer is the new id's.
async fn same_id(env: &TestEnv, port: u16) {
    let stream = connect(port).await;
    let line = project_query(env, "same");
    let mut reader = BufReader::new(stream);
    for _ in 0..10 {
        reader
            .get_mut()
            .write_all(line.repeat(1000).as_bytes())
            .await
            .expect("send");
    }
    reader
        .get_mut()
        .write_all(project_query(env, "other").as_bytes())
        .await
        .expect("send");
    assert_eq!(
        next_line(&mut reader, "the repeated id").await,
        allow("same")
    );
    assert_eq!(
        next_line(&mut reader, "the id after the repeats").await,
        allow("other"),
        "a repeated id was answered twice"
    );
}

/// Phase: 100,000 valid queries on one connection, read back concurrently: every id
/// answered exactly once.
async fn flood(env: &TestEnv, port: u16) {
    const N: usize = 100_000;
    let stream = connect(port).await;
    let (read, mut write) = stream.into_split();
    let path = env.project.join("out/flood");
    let started = Instant::now();
    let writer = tokio::spawn(async move {
        let mut batch = String::new();
        for start in (0..N).step_by(500) {
            batch.clear();
            for i in start..start + 500 {
                batch.push_str(&query(&i.to_string(), &path));
            }
            write.write_all(batch.as_bytes()).await.expect("send");
        }
        write
    });
    let mut seen = vec![false; N];
    let mut lines = BufReader::new(read).lines();
    for n in 0..N {
        let line = tokio::time::timeout(EVENT_TIMEOUT, lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("the flood got {n} of {N} answers"))
            .expect("read")
            .expect("EOF in the flood");
        let answer: serde_json::Value = serde_json::from_str(&line).expect("an answer line");
        assert_eq!(answer["action"], "allow", "{line}");
        let id: usize = answer["query_id"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .expect("a flood id");
        assert!(!seen[id], "id {id} answered twice");
        seen[id] = true;
    }
    let elapsed = started.elapsed();
    let _write = writer.await.expect("writer");
    eprintln!(
        "  flood: {N} queries answered in {elapsed:?} ({:.0}/s)",
        N as f64 / elapsed.as_secs_f64()
    );
}

/// Phase: 10,000 connections opened and closed at once, four at a time; meanwhile a new
/// landstrip run (same session) connects and is answered, and it is timed.
async fn connect_and_close(env: &TestEnv, port: u16) {
    const N: usize = 10_000;
    let started = Instant::now();
    let storm = tokio::spawn(async move {
        let mut tasks = tokio::task::JoinSet::new();
        for k in 0..4 {
            tasks.spawn(async move {
                for _ in 0..N / 4 {
                    let stream = TcpStream::connect(("127.0.0.1", port))
                        .await
                        .unwrap_or_else(|e| panic!("connect {k}: {e}"));
                    drop(stream);
                }
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.expect("storm task");
        }
    });
    // Half-way through, a new run asks: how long until it is answered?
    while !storm.is_finished() && started.elapsed() < Duration::from_millis(300) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let asked = Instant::now();
    let stream = connect(port).await;
    let mut reader = BufReader::new(stream);
    reader
        .get_mut()
        .write_all(project_query(env, "during-storm").as_bytes())
        .await
        .expect("send");
    assert_eq!(
        next_line(&mut reader, "a new run during the storm").await,
        allow("during-storm")
    );
    let new_run = asked.elapsed();
    tokio::time::timeout(Duration::from_secs(60), storm)
        .await
        .expect("the connect-and-close storm did not end")
        .expect("storm");
    eprintln!(
        "  connect-and-close: {N} in {:?}; a new connection during it was answered in {new_run:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_run_is_answered_while_hostile_clients_attack_the_listener() {
    const IDLE: usize = 1000;
    enough_descriptors(3 * IDLE as u64 + 1024);
    let started = Instant::now();
    let mut env = TestEnv::start().await;
    let port = env.discovered_port();
    let run = LegitRun::start(&mut env).await;
    run.progress(100).await;
    let (rss0, pss0, _) = memory_kib();

    let phases = [
        "quiet",
        "1,000 idle connections",
        "10 MiB without a newline",
        "32 lines of 1 MiB, then quiet",
        "10 MiB binary garbage",
        "half-closed sockets",
        "a peer that never reads",
        "40 peers sending a byte a second",
        "10,000 queries with one id",
        "100,000 queries on one connection",
        "10,000 connect-and-close",
    ];
    let mut phase = 0;
    let mut next_phase = |run: &LegitRun| {
        phase += 1;
        run.phase.store(phase, Ordering::Relaxed);
        eprintln!("phase {phase}: {}", phases[phase]);
    };

    next_phase(&run);
    let mut idle = Vec::with_capacity(IDLE);
    for _ in 0..IDLE {
        idle.push(connect(port).await);
    }
    // A run connecting right behind them is told apart and answered without waiting for
    // a thousand lookups one by one.
    let asked = Instant::now();
    let mut reader = BufReader::new(connect(port).await);
    reader
        .get_mut()
        .write_all(project_query(&env, "behind-idle").as_bytes())
        .await
        .expect("send");
    assert_eq!(
        next_line(&mut reader, "a run behind 1,000 new connections").await,
        allow("behind-idle")
    );
    let behind = asked.elapsed();
    let (largest, rounds) = landstrip_tray_core::serving::listener::lookup_batches();
    eprintln!(
        "  a run connecting behind them was answered in {behind:?} ({rounds} peer lookups so far, up to {largest} connections each)"
    );
    assert!(
        behind < BEHIND_A_FLOOD,
        "a run waited {behind:?} behind 1,000 connections' peer lookups"
    );
    run.progress(50).await;
    let (rss_idle, _, _) = memory_kib();
    eprintln!(
        "  {IDLE} idle connections cost {} KiB",
        rss_idle.saturating_sub(rss0)
    );

    next_phase(&run);
    ten_mib_without_a_newline(port).await;
    run.progress(20).await;

    next_phase(&run);
    let (quiet, before) = long_lines_then_quiet(&env, port).await;
    // malloc_trim holds the allocator's locks while it hands memory back, so the run's
    // writes meanwhile are not this phase's.
    let current = run.phase.swap(MEASURING, Ordering::Relaxed);
    landstrip_tray_core::release_free_memory();
    let cost = memory_kib().0.saturating_sub(before);
    run.phase.store(current, Ordering::Relaxed);
    eprintln!("  32 quiet connections after a 1 MiB line each cost {cost} KiB");
    assert!(
        cost < KEPT_AFTER_LONG_LINES_KIB,
        "32 quiet connections keep {cost} KiB: their 1 MiB lines' buffers were kept"
    );
    run.progress(20).await;
    drop(quiet);

    next_phase(&run);
    binary_garbage(&env, port).await;
    run.progress(20).await;

    next_phase(&run);
    half_closed(&mut env, port).await;
    run.progress(20).await;

    next_phase(&run);
    never_reads(&env, port).await;
    run.progress(20).await;

    next_phase(&run);
    byte_a_second(&env, port, &run).await;
    run.progress(20).await;

    next_phase(&run);
    same_id(&env, port).await;
    run.progress(20).await;

    next_phase(&run);
    flood(&env, port).await;
    run.progress(20).await;

    next_phase(&run);
    connect_and_close(&env, port).await;
    run.progress(20).await;

    // The idle connections were kept all along, and are served now that they ask.
    let mut answered = 0;
    for (i, stream) in idle.iter_mut().enumerate() {
        stream
            .write_all(project_query(&env, &format!("idle-{i}")).as_bytes())
            .await
            .expect("an idle connection was dropped");
    }
    for (i, stream) in idle.into_iter().enumerate() {
        let mut reader = BufReader::new(stream);
        assert_eq!(
            next_line(&mut reader, "an idle connection's first query").await,
            allow(&format!("idle-{i}"))
        );
        answered += 1;
    }
    assert_eq!(answered, IDLE);

    let (by_phase, writes) = run.finish().await;
    landstrip_tray_core::release_free_memory();
    let (rss1, pss1, hwm) = memory_kib();

    eprintln!("legitimate run: {writes} session-granted writes, each timed by the program (µs)");
    eprintln!(
        "  {:<36} {:>6} {:>8} {:>8} {:>8}",
        "phase", "writes", "p50", "p99", "max"
    );
    let mut all = Vec::new();
    for (p, name) in phases.iter().enumerate() {
        let mut samples = by_phase.get(&p).cloned().unwrap_or_default();
        samples.sort_unstable();
        let p99 = percentile(&samples, 99.0);
        eprintln!(
            "  {name:<36} {:>6} {:>8} {:>8} {:>8}",
            samples.len(),
            percentile(&samples, 50.0),
            p99,
            samples.last().copied().unwrap_or(0)
        );
        all.extend(samples);
    }
    all.sort_unstable();
    eprintln!(
        "  {:<36} {:>6} {:>8} {:>8} {:>8}",
        "all",
        all.len(),
        percentile(&all, 50.0),
        percentile(&all, 99.0),
        all.last().copied().unwrap_or(0)
    );
    eprintln!(
        "memory (this process: the core and the clients): RSS {} -> {} MiB, PSS {} -> {} MiB, peak RSS {} MiB",
        rss0 >> 10,
        rss1 >> 10,
        pss0 >> 10,
        pss1 >> 10,
        hwm >> 10
    );
    eprintln!("total time {:?}", started.elapsed());

    assert!(
        rss1 < rss0 + 64 * 1024,
        "memory grew by {} MiB",
        (rss1 - rss0) >> 10
    );
    assert!(
        hwm < rss0 + 128 * 1024,
        "peak memory {} MiB over the start",
        (hwm - rss0) >> 10
    );
    // Generous, for a debug build on a shared machine: a listener that blocked the
    // runtime during a phase (the flood, garbage, a peer that never reads) would stall the
    // run for as long as the phase lasts, seconds. One phase's p99 is not asserted: some
    // phases are short and see a few dozen writes, so their p99 is one unlucky write.
    let p99 = percentile(&all, 99.0);
    assert!(
        p99 < 250_000,
        "the run's p99 was {p99} µs: the hostile clients held it up"
    );
    // The slowest write is reported, not asserted: on gVisor one write has been seen held
    // for as long as the never-reading peer's phase lasted (seconds), once in several
    // runs, and not yet explained. A write
    // that is never answered fails `progress` above instead.
    let max = all.last().copied().unwrap_or(0);
    if max > 1_000_000 {
        eprintln!("NOTE: one write of the run took {max} µs");
    }
    assert!(env.broker().pending().is_empty(), "prompts left over");
}
