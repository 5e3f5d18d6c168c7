//! Benchmark (not a test): what a person waits for and what the app costs while idle,
//! measured from outside the app, the way a user sees it.
//!
//! Run it with the release build under a virtual display and a private session bus:
//!
//! ```sh
//! cargo build --release -p landstrip-tray
//! LANDSTRIP_TRAY_BIN=$CARGO_TARGET_DIR/release/landstrip-tray \
//!   xvfb-run -a dbus-run-session -- cargo bench -p landstrip-tray-tests --bench desktop
//! ```
//!
//! It starts Debian's dbusmock notification daemon and a fake tray host
//! (`tests/fake_watcher.py`: with no tray host the app would open its settings window at
//! start) on the session bus, the real app with its own directories and one project, and
//! then, with each query written by this process on a TCP connection of its own (as
//! landstrip does) and timed from the moment it was written:
//! - query → the notification server's `Notify` call (its `MethodCalled` signal);
//! - query → the prompt window mapped (the X server's `MapNotify`, on the root window with
//!   `SubstructureNotify`) and → painted: the window's pixels, read back every 10 ms with
//!   `XGetImage`, first show the picture they settle on (its upper 60 %, within 1 % of
//!   the pixels: the buttons below arm after the deliberate input delay). Cold: the first prompt after the app started, its
//!   run connected just before the query; warm: 19 more, one after another, each on a new
//!   connection once the last one's window was unmapped. A second app started afterwards
//!   gives the first prompt of a run that had been connected for a while, and more apps
//!   (`BENCH_COLD_STARTS`, 4) one cold prompt each, for the spread of the cold figure;
//! - the PSS of all the app's processes (WebKit's included) idle after start with no
//!   window open, and 35 s after the 20 prompts came and went; and that of an app started
//!   `--headless` (no display, no session bus), idle after start;
//! - the context switches of all its threads over 60 idle seconds (periodic wake-ups).
//!
//! The app's own log (its timestamps, `landstrip_tray::app::dialog=debug`) splits the cold
//! prompt into its steps. The pointer is parked in the screen's corner first: where Xvfb
//! starts it, at the centre, a tooltip would open over the window half a second after it
//! appears and count as the window still changing. `LANDSTRIP_TRAY_BENCH_FRAMES=1` prints
//! every picture read; with `LANDSTRIP_TRAY_BENCH_FRAMES_DIR=DIR` too, each is saved there
//! (PPM) with the box where it differs from the settled one.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime};

use futures_lite::StreamExt;
use landstrip_tray_tests::bench::{env_number, median};
use landstrip_tray_tests::memory::pss_by_process;
use landstrip_tray_tests::real_app::{AppWorld, RunningApp};
use landstrip_tray_tests::tray_host::FakeWatcher;
use landstrip_tray_tests::x11::{PaintWatch, Painting, RGB};
use landstrip_tray_tests::EVENT_TIMEOUT;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use zbus::message::Type;
use zbus::{Connection, MatchRule, MessageStream, OwnedVariant};

const PROMPTS: usize = 20;
/// After start, before the idle figure: the tray host's grace (4 s) and start-up work.
const SETTLE: Duration = Duration::from_secs(6);
/// "35 s after 20 prompts have come and gone".
const AFTER_PROMPTS: Duration = Duration::from_secs(35);
/// The idle span whose wake-ups are counted.
const IDLE_SPAN: Duration = Duration::from_secs(60);
/// How long the second app's run is connected before its first query.
const CONNECTED_FOR: Duration = Duration::from_secs(3);
/// How often and for how long the window's pixels are read after it is mapped.
const PAINT_POLL: Duration = Duration::from_millis(10);
const PAINT_SPAN: Duration = Duration::from_millis(1200);
/// The share of pixels that may still differ from the final picture.
const PAINT_TOLERANCE: f64 = 0.01;
/// The share of the window's rows compared: the buttons below arm (change colour) after
/// the dialog's deliberate 500 ms input delay, and its progress bar fills meanwhile.
const PAINT_TOP: f64 = 0.6;
/// A plain-ASCII part of the prompt window's title.
const TITLE_PART: &str = "a sandboxed program is asking";

/// One prompt, timed from its query.
#[derive(Debug, Clone, Copy)]
struct Round {
    notify: Duration,
    mapped: Duration,
    painted: Duration,
    /// The first picture with anything drawn in it.
    content: Duration,
    /// Pixel reads during the watch (its resolution).
    reads: usize,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn since(from: SystemTime, to: SystemTime) -> Duration {
    to.duration_since(from).unwrap_or_default()
}

fn row(label: &str, value: String, target: &str) {
    println!("{label:<58} {value:>10}  {target}");
}

fn verdict(value: f64, limit: f64) -> String {
    format!(
        "<= {limit:>5}  {}",
        if value <= limit { "PASS" } else { "OVER" }
    )
}

/// A filesystem write query for `path` with id `id`, as landstrip 0.19 writes it.
fn query_line(id: usize, path: &str) -> String {
    format!(
        "{{\"kind\":\"filesystem\",\"state\":\"query\",\"query_id\":\"{id}\",\"operation\":\"write\",\"path\":{path:?},\"requested_path\":{path:?},\"syscall\":\"openat\",\"reason\":\"allow_miss\",\"process\":{{\"pid\":1,\"exe\":\"/usr/bin/python3\",\"cwd\":\"/\"}}}}\n"
    )
}

/// Sends query `i` on `peer` and times its notification and its window (`tag` names the
/// round in the printed frames).
async fn prompt(
    world: &AppWorld,
    peer: &mut TcpStream,
    tag: &str,
    i: usize,
    calls: &mut MessageStream,
    paints: &mut PaintWatch,
) -> Round {
    let name = format!("bench-{i}.txt");
    let path = world.outside.join(&name);
    let line = query_line(i, path.to_str().expect("utf-8"));
    let sent_at = SystemTime::now();
    let sent = Instant::now();
    peer.write_all(line.as_bytes()).await.expect("send");
    let notified = async {
        loop {
            let msg = tokio::time::timeout(EVENT_TIMEOUT, calls.next())
                .await
                .expect("no Notify within the bound")
                .expect("the mock's calls")
                .expect("a message");
            let (method, args): (String, Vec<OwnedVariant>) =
                msg.body().deserialize().expect("MethodCalled");
            // The body names the path: other notifications are passed over.
            if method == "Notify" && format!("{args:?}").contains(&name) {
                return sent.elapsed();
            }
        }
    };
    let painted = paints.next_painting("the prompt window mapped");
    let (notify, painting): (Duration, Painting) = tokio::join!(notified, painted);
    if std::env::var_os("LANDSTRIP_TRAY_BENCH_FRAMES").is_some() {
        let frames_dir = std::env::var_os("LANDSTRIP_TRAY_BENCH_FRAMES_DIR");
        let last = &painting.frames.last().expect("a frame").1;
        let upto = (last.len() as f64 * PAINT_TOP) as usize;
        for (n, (at, pixels)) in painting.frames.iter().enumerate() {
            if let Some(dir) = &frames_dir {
                save_frame(
                    dir,
                    &format!("{tag}prompt-{i}-frame-{n}"),
                    &painting,
                    pixels,
                    last,
                );
            }
            eprintln!(
                "{tag}prompt {i}: frame at {:.1} ms, {:.1} % of the top differs from the last",
                ms(since(sent_at, *at)),
                100.0 * painting.differ(pixels, last, upto)
            );
        }
    }
    let settled = painting
        .settled(PAINT_TOP, PAINT_TOLERANCE)
        .unwrap_or_else(|| panic!("prompt {i}: no pixels read from window {}", painting.window));
    Round {
        notify,
        mapped: since(sent_at, painting.mapped),
        painted: since(sent_at, settled),
        content: since(sent_at, painting.first_content().unwrap_or(settled)),
        reads: painting.reads,
    }
}

/// Writes one picture as a PPM file in `dir` and prints the box where it differs from the
/// one the window settled on (what `LANDSTRIP_TRAY_BENCH_FRAMES_DIR` asks for: the way to
/// see what is still changing).
fn save_frame(
    dir: &std::ffi::OsStr,
    name: &str,
    painting: &Painting,
    pixels: &[u32],
    last: &[u32],
) {
    let w = painting.width.max(1);
    let h = pixels.len() / w;
    let mut ppm = format!("P6 {w} {h} 255\n").into_bytes();
    for p in pixels {
        ppm.extend_from_slice(&[(p >> 16) as u8, (p >> 8) as u8, *p as u8]);
    }
    let path = std::path::Path::new(dir).join(format!("{name}.ppm"));
    std::fs::write(&path, ppm).expect("write a frame");
    let differing = pixels
        .iter()
        .zip(last)
        .enumerate()
        .filter(|(_, (a, b))| (*a ^ *b) & RGB != 0);
    let (mut x0, mut y0, mut x1, mut y1) = (w, h, 0, 0);
    for (k, _) in differing {
        let (x, y) = (k % w, k / w);
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
    }
    eprintln!(
        "  {}: differs from the last in x {x0}..{x1}, y {y0}..{y1}",
        path.display()
    );
}

/// Context switches per thread (voluntary + involuntary) of every process in `pids`, by
/// `pid/tid`, with the thread's name.
fn context_switches(pids: &[u32]) -> HashMap<String, (String, u64)> {
    let mut threads = HashMap::new();
    for pid in pids {
        for task in std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let Ok(status) = std::fs::read_to_string(task.path().join("status")) else {
                continue;
            };
            let switches = status
                .lines()
                .filter(|l| l.contains("ctxt_switches"))
                .filter_map(|l| l.split_whitespace().last()?.parse::<u64>().ok())
                .sum::<u64>();
            let name = std::fs::read_to_string(task.path().join("comm"))
                .map(|n| n.trim().to_owned())
                .unwrap_or_default();
            threads.insert(
                format!("{pid}/{}", task.file_name().to_string_lossy()),
                (name, switches),
            );
        }
    }
    threads
}

/// PSS of the app and all its processes (MB), and each process's share in words.
fn pss(app: &RunningApp) -> (f64, String) {
    let each = pss_by_process(app.pid);
    let total = each.iter().map(|p| p.kib).sum::<u64>() as f64 / 1024.0;
    let words = each
        .iter()
        .map(|p| format!("{} {:.1}", p.name, p.kib as f64 / 1024.0))
        .collect::<Vec<_>>()
        .join(", ");
    let anonymous = each.iter().map(|p| p.anonymous_kib).sum::<u64>() as f64 / 1024.0;
    (
        total,
        format!(
            "{} processes (anonymous memory {anonymous:.1} MB): {words}",
            each.len()
        ),
    )
}

/// The app log's timestamp of the first line after `from` (a byte offset) containing
/// `needle`, as wall-clock time.
fn log_time(log: &str, from: usize, needle: &str) -> Option<SystemTime> {
    let line = log[from.min(log.len())..]
        .lines()
        .find(|l| l.contains(needle))?;
    parse_rfc3339(line.split_whitespace().next()?)
}

/// `2026-12-01T15:00:45.123456Z` → wall-clock time (UTC only, as the app logs).
fn parse_rfc3339(stamp: &str) -> Option<SystemTime> {
    let stamp = stamp.strip_suffix('Z')?;
    let (date, time) = stamp.split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let mut t = hms.split(':').map(|p| p.parse::<i64>().ok());
    let (h, min, s) = (t.next()??, t.next()??, t.next()??);
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + min * 60 + s;
    let nanos = format!("{frac:0<9}")[..9].parse::<u64>().ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs as u64) + Duration::from_nanos(nanos))
}

/// Starts the app with the world's project; returns once it serves and its control
/// socket is up.
async fn start_app(world: &AppWorld) -> (RunningApp, u16) {
    // `LANDSTRIP_TRAY_BENCH_APP_ENV=K=V,K2=V2`: extra environment for the app (experiments).
    let extra = std::env::var("LANDSTRIP_TRAY_BENCH_APP_ENV").unwrap_or_default();
    let env: Vec<(&str, &str)> = extra
        .split(',')
        .filter_map(|kv| kv.split_once('='))
        .collect();
    let mut app = world.start_with(&[&world.project], &env);
    app.wait_for_control().await;
    let port = app.serving(world, &world.project).await;
    (app, port)
}

/// Starts an app (see [`start_app`]), lets it settle with its tray item registered, and
/// connects a run to its project.
async fn settled_app(world: &AppWorld, watcher: &mut FakeWatcher) -> (RunningApp, TcpStream) {
    let (app, port) = start_app(world).await;
    watcher.item_from(&app).await;
    tokio::time::sleep(SETTLE).await;
    let peer = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    (app, peer)
}

#[tokio::main]
async fn main() {
    assert!(
        std::env::var_os("DISPLAY").is_some(),
        "run under `xvfb-run -a dbus-run-session -- cargo bench -p landstrip-tray-tests --bench desktop`"
    );
    let address = std::env::var("DBUS_SESSION_BUS_ADDRESS").expect("a session bus");
    let mut mock = tokio::process::Command::new("/usr/bin/python3")
        .args([
            "-m",
            "dbusmock",
            "--session",
            "--template",
            "notification_daemon",
            "-p",
        ])
        .arg(r#"{"capabilities": "body actions sound"}"#)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("python3-dbusmock");
    let waited = tokio::process::Command::new("gdbus")
        .args([
            "wait",
            "--session",
            "--timeout",
            "10",
            "org.freedesktop.Notifications",
        ])
        .status()
        .await
        .expect("gdbus");
    assert!(waited.success(), "the notification mock did not start");
    let mut watcher = FakeWatcher::start(&address).await;
    let bus = Connection::session().await.expect("session bus");
    let mut calls = MessageStream::for_match_rule(
        MatchRule::builder()
            .msg_type(Type::Signal)
            .interface("org.freedesktop.DBus.Mock")
            .member("MethodCalled")
            .build()
            .expect("match rule"),
        &bus,
        NonZeroUsize::new(4096),
    )
    .await
    .expect("subscribe");

    std::env::set_var(
        "LANDSTRIP_TRAY_APP_LOG",
        "info,landstrip_tray::app::dialog=debug",
    );
    let world = AppWorld::new();
    let mut paints = PaintWatch::start(
        TITLE_PART,
        &world.base.join("frames"),
        PAINT_POLL,
        PAINT_SPAN,
    )
    .await;
    let (mut app, port) = start_app(&world).await;
    watcher.item_from(&app).await;
    tokio::time::sleep(SETTLE).await;
    let (idle_start, procs_start) = pss(&app);

    let mut rounds = Vec::new();
    let mut cold_log = None;
    for i in 1..=PROMPTS {
        let log_from = app.log().len();
        let mut peer = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        let sent_at = SystemTime::now();
        rounds.push(prompt(&world, &mut peer, "", i, &mut calls, &mut paints).await);
        if i == 1 {
            cold_log = Some((sent_at, log_from));
        }
        // The run ends: the prompt is withdrawn, the notification closed, the window
        // hidden (after its note) before the next round.
        drop(peer);
        paints.next_unmap("the prompt window hidden").await;
    }
    let gone = Instant::now();
    let log = app.log();
    tokio::time::sleep_until((gone + AFTER_PROMPTS).into()).await;
    let (after_prompts, procs_after) = pss(&app);

    let pids: Vec<u32> = pss_by_process(app.pid).iter().map(|p| p.pid).collect();
    let before = context_switches(&pids);
    tokio::time::sleep(IDLE_SPAN).await;
    let after = context_switches(&pids);
    let mut woke: Vec<(String, u64)> = after
        .iter()
        .map(|(tid, (name, n))| {
            let was = before.get(tid).map_or(0, |(_, n)| *n);
            (format!("{name} ({tid})"), n.saturating_sub(was))
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    woke.sort_by_key(|w| std::cmp::Reverse(w.1));
    let wakeups: u64 = woke.iter().map(|(_, n)| n).sum();
    let _ = app.terminate().await;

    // A second app: the first prompt of a run that was connected for a while.
    let world2 = AppWorld::new();
    let (mut app2, mut peer) = settled_app(&world2, &mut watcher).await;
    // The scenario: a run that has been going a while before it asks.
    tokio::time::sleep(CONNECTED_FOR).await;
    let (connected_pss, connected_procs) = pss(&app2);
    let connected = prompt(&world2, &mut peer, "connected-", 1, &mut calls, &mut paints).await;
    drop(peer);
    paints.next_unmap("the second app's window hidden").await;
    let _ = app2.terminate().await;

    // More cold prompts, each from an app of its own: one per start is all there is, and
    // a single one moves by a hundred ms from run to run here.
    let mut colds = vec![rounds[0]];
    for k in 0..env_number("BENCH_COLD_STARTS", 4) {
        let world = AppWorld::new();
        let (mut app, mut peer) = settled_app(&world, &mut watcher).await;
        let tag = format!("cold-{k}-");
        colds.push(prompt(&world, &mut peer, &tag, 1, &mut calls, &mut paints).await);
        drop(peer);
        paints.next_unmap("a cold start's window hidden").await;
        let _ = app.terminate().await;
    }

    // The headless mode (`--headless`: no GTK, WebKit or window), as over SSH: no display
    // and no session bus; idle after start like the windowed figure.
    let world_headless = AppWorld::new();
    let project_arg = world_headless.project.clone().into_os_string();
    let mut headless = world_headless.start_without_display(&[
        std::ffi::OsStr::new("--headless"),
        std::ffi::OsStr::new("--project"),
        &project_arg,
    ]);
    headless.wait_for_control().await;
    headless
        .serving(&world_headless, &world_headless.project)
        .await;
    tokio::time::sleep(SETTLE).await;
    let (headless_idle, procs_headless) = pss(&headless);
    let _ = headless.terminate().await;

    let cold = rounds[0];
    let warm = &rounds[1..];
    let warm_of = |f: fn(&Round) -> Duration| median(warm.iter().map(f).collect());
    let warm_max = |f: fn(&Round) -> Duration| warm.iter().map(f).max().unwrap_or_default();
    let stamp = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    println!(
        "desktop figures ({stamp}; {PROMPTS} prompts; binary {})",
        landstrip_tray_tests::real_app::app_binary().display()
    );
    println!("machine note: gVisor, 2 shared cores: absolute times are inflated");
    let notify: Vec<Duration> = rounds.iter().map(|r| r.notify).collect();
    let n50 = ms(median(notify.clone()));
    let nmax = ms(notify.iter().copied().max().unwrap_or_default());
    row(
        "query -> Notify, p50 of 20 (ms)",
        format!("{n50:.1}"),
        &verdict(n50, 50.0),
    );
    row(
        "query -> Notify, worst (ms)",
        format!("{nmax:.1}"),
        &verdict(nmax, 50.0),
    );
    row(
        "query -> Notify, cold (ms)",
        format!("{:.1}", ms(cold.notify)),
        "",
    );
    row(
        "query -> window painted, cold (ms)",
        format!("{:.1}", ms(cold.painted)),
        &verdict(ms(cold.painted), 300.0),
    );
    row(
        "  query -> window mapped, cold (ms)",
        format!("{:.1}", ms(cold.mapped)),
        "",
    );
    row(
        "  query -> first content, cold (ms)",
        format!("{:.1}", ms(cold.content)),
        "",
    );
    let wp = ms(warm_of(|r| r.painted));
    let wpmax = ms(warm_max(|r| r.painted));
    row(
        "query -> window painted, warm p50 of 19 (ms)",
        format!("{wp:.1}"),
        &verdict(wp, 100.0),
    );
    row(
        "query -> window painted, warm worst (ms)",
        format!("{wpmax:.1}"),
        &verdict(wpmax, 100.0),
    );
    row(
        "  query -> window mapped, warm p50 (ms)",
        format!("{:.1}", ms(warm_of(|r| r.mapped))),
        "",
    );
    row(
        "  query -> first content, warm p50 (ms)",
        format!("{:.1}", ms(warm_of(|r| r.content))),
        "",
    );
    let cp = ms(connected.painted);
    row(
        &format!(
            "first prompt, run connected {}s before (ms)",
            CONNECTED_FOR.as_secs()
        ),
        format!("{cp:.1}"),
        &verdict(cp, 300.0),
    );
    row(
        "  its query -> window mapped (ms)",
        format!("{:.1}", ms(connected.mapped)),
        "",
    );
    row(
        "  its query -> Notify (ms)",
        format!("{:.1}", ms(connected.notify)),
        "",
    );
    let painted: Vec<Duration> = colds.iter().map(|r| r.painted).collect();
    let notified: Vec<Duration> = colds.iter().map(|r| r.notify).collect();
    let (cp50, cpmax) = (
        ms(median(painted.clone())),
        ms(painted.iter().copied().max().unwrap_or_default()),
    );
    let (cn50, cnmax) = (
        ms(median(notified.clone())),
        ms(notified.iter().copied().max().unwrap_or_default()),
    );
    let starts = colds.len();
    row(
        &format!("cold, {starts} app starts: window painted, median (ms)"),
        format!("{cp50:.1}"),
        &verdict(cp50, 300.0),
    );
    row(
        &format!("cold, {starts} app starts: window painted, worst (ms)"),
        format!("{cpmax:.1}"),
        &verdict(cpmax, 300.0),
    );
    row(
        &format!("cold, {starts} app starts: Notify, median / worst (ms)"),
        format!("{cn50:.1} / {cnmax:.1}"),
        &verdict(cnmax, 50.0),
    );
    println!(
        "    each (painted / Notify, ms): {}",
        colds
            .iter()
            .map(|r| format!("{:.0} / {:.0}", ms(r.painted), ms(r.notify)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let reads = rounds.iter().map(|r| r.reads).sum::<usize>();
    row(
        "  pixel reads per watch (resolution, ms)",
        format!(
            "{:.1}",
            ms(PAINT_SPAN) * rounds.len() as f64 / reads.max(1) as f64
        ),
        "",
    );
    if let Some((sent_at, from)) = cold_log {
        for (step, needle) in [
            ("  cold: query -> page ready (app log)", "dialog page ready"),
            (
                "  cold: query -> page rendered (app log)",
                "dialog rendered",
            ),
            ("  cold: query -> show called (app log)", "dialog shown"),
        ] {
            if let Some(at) = log_time(&log, from, needle) {
                row(step, format!("{:.1}", ms(since(sent_at, at))), "");
            }
        }
    }
    row(
        "idle PSS after start, no window (MB)",
        format!("{idle_start:.1}"),
        &verdict(idle_start, 100.0),
    );
    println!("    {procs_start}");
    row(
        "headless (--headless): idle PSS after start (MB)",
        format!("{headless_idle:.1}"),
        &verdict(headless_idle, 40.0),
    );
    println!("    {procs_headless}");
    row(
        "PSS 35 s after 20 prompts came and went (MB)",
        format!("{after_prompts:.1}"),
        &verdict(after_prompts, 150.0),
    );
    println!("    {procs_after}");
    row(
        "PSS while a run is connected, no prompt (MB)",
        format!("{connected_pss:.1}"),
        "",
    );
    println!("    {connected_procs}");
    row(
        &format!(
            "context switches in {} s idle, all threads",
            IDLE_SPAN.as_secs()
        ),
        wakeups.to_string(),
        "target: no periodic wake-ups",
    );
    for (thread, n) in woke.iter().take(8) {
        println!("    {n:>6}  {thread}");
    }
    let _ = mock.kill().await;
}
