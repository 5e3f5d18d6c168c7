//! Benchmark (not a test): the settings window's figures (issue 7), measured from outside
//! against the real app binary. It prints each figure with its target and PASS or OVER;
//! it asserts nothing about speed.
//!
//! Run it under a virtual display and a private session bus, with the build the tests use:
//!
//! ```sh
//! cargo build -p landstrip-tray
//! xvfb-run -a dbus-run-session -- cargo bench -p landstrip-tray-tests --bench settings
//! ```
//!
//! (`LANDSTRIP_TRAY_BIN=…/release/landstrip-tray` measures a release build instead.)
//!
//! Two runs of the app, in one private world whose activity log holds 10,000 entries,
//! written before the app starts with the core's own activity writer:
//! 1. The app on its own, as a person runs it: idle memory (PSS of the app and every
//!    process it started, WebKit's included) before the settings window ever opened, with
//!    it open, and a while after it was closed; and request → window mapped, cold and warm.
//! 2. The app under tauri-driver (WebDriver): request → interactive (the window mapped on
//!    the X display AND the page ready), cold and warm; an add through the policy editor
//!    (typing, then Enter) → the new bytes on disk; the activity filter over the 10,000
//!    entries → the table repainted.
//!
//! "The request" is `OpenSettings` on the real control socket: what `landstrip-tray
//! settings` and a second start send, and what the tray's "Settings…" item asks for in
//! process. Times are taken without polling where an event exists: the X server's own map
//! events (`x11::MapWatch`) and the page's `settings-ready` performance mark, both on the
//! wall clock, compared with the wall clock when the request was sent. Polls (WebDriver,
//! every [`POLL`]) only say when to read those; their own figure is printed beside, with
//! WebDriver's round trip as its resolution.
//!
//! Mocked, because it cannot be real here: the desktop's tray host. `tests/fake_watcher.py`
//! (a StatusNotifierWatcher on the session bus) stands in for it; without one the app
//! opens the settings window at start, which would spoil "before it ever opened".
//!
//! Under automation the app creates its (hidden) prompt window at start and keeps it
//! (src-tauri/src/app/dialog/), so in run 2 WebKit is already up when the settings
//! window first opens; run 1 has the truly cold figure (to the window mapped).

use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use fantoccini::key::Key;
use fantoccini::Locator;
use landstrip_tray_core::activity::{
    read_log, ActivityEntry, ActivityFilter, ActivityLog, Decider, Outcome,
};
use landstrip_tray_core::surfaces::control::Client;
use landstrip_tray_tests::memory::{anonymous_tree_kib, pss_by_process, pss_tree_kib};
use landstrip_tray_tests::real_app::{path_str, AppWorld};
use landstrip_tray_tests::settings_window::{open_request, open_settings, switch_to_new_window};
use landstrip_tray_tests::tray_host::FakeWatcher;
use landstrip_tray_tests::webdriver::{Session, COMMAND_TIMEOUT};
use landstrip_tray_tests::x11::{request_close, MapEvent, MapWatch};
use landstrip_tray_tests::EVENT_TIMEOUT;
use notify::Watcher;
use tokio::sync::mpsc;

/// The settings window's title (src-tauri/src/app/settings.rs).
const TITLE: &str = "landstrip-tray settings";
/// How often the WebDriver polls look.
const POLL: Duration = Duration::from_millis(5);
/// Warm opens after the cold one.
const WARM_ROUNDS: usize = 7;
/// Adds through the policy editor.
const SAVE_ROUNDS: usize = 7;
/// Filter rounds (each narrows, then widens back).
const FILTER_ROUNDS: usize = 5;
/// Entries in the activity log.
const ENTRIES: usize = 10_000;
/// One in this many entries matches [`FILTER`].
const MATCH_EVERY: usize = 100;
/// The filter typed: one key, so one query and one repaint. No other field of the
/// entries (project, program, operation) has it.
const FILTER: char = '@';
/// How many rows the view shows at first (`ACTIVITY_PAGE` in ui/settings/model.js).
const VIEW_LIMIT: usize = 100;
/// Quiet time for the app to settle before a memory sample.
const SETTLE: Duration = Duration::from_secs(3);
/// How long after the window closed the last memory sample is taken.
const AFTER_CLOSE: Duration = Duration::from_secs(10);
/// How long the page must be still before a round types into it.
const QUIET: Duration = Duration::from_millis(300);
/// The project file's allowWrite add field (ui/settings/views/policy.js).
const ADD_WRITE: &str =
    "section[data-file='project'] [data-list='filesystem.allowWrite'] input[data-key]";

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn epoch_ms(t: SystemTime) -> f64 {
    ms(t.duration_since(UNIX_EPOCH).unwrap_or_default())
}

/// Median and worst, in ms.
fn median_max(values: &[f64]) -> (f64, f64) {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[v.len() - 1])
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Each process's PSS, in words: `landstrip-tray 97.1, WebKitWebProces 150.2`.
fn breakdown(pid: u32) -> String {
    pss_by_process(pid)
        .iter()
        .map(|p| format!("{} {:.1}", p.name, mib(p.kib)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One printed line: a figure, its target and the verdict.
fn figure(name: &str, value: f64, unit: &str, target: Option<f64>) {
    let verdict = match target {
        Some(t) if value <= t => format!("<= {t:>5.0} {unit}  PASS"),
        Some(t) => format!("<= {t:>5.0} {unit}  OVER"),
        None => String::new(),
    };
    println!("{name:<58} {value:>9.1} {unit:<3} {verdict}");
}

/// A line without a target (context for the figures).
fn note(name: &str, value: f64, unit: &str) {
    figure(name, value, unit, None);
}

/// Writes `ENTRIES` activity entries with the core's own writer, where the app reads them.
fn write_activity(world: &AppWorld) {
    let log = ActivityLog::open(&world.activity_file(), 64 << 20).expect("open the activity log");
    let project = path_str(&world.project).to_owned();
    let start = SystemTime::now() - Duration::from_secs(ENTRIES as u64);
    let entries = (0..ENTRIES)
        .map(|i| ActivityEntry {
            ts: epoch_ms(start + Duration::from_secs(i as u64)) as u64,
            project: project.clone(),
            session: Some(format!("ses_{:04}", i / 250)),
            kind: "filesystem".into(),
            operation: if i % 3 == 0 { "read" } else { "write" }.into(),
            subject: if i % MATCH_EVERY == 0 {
                format!("/srv/cache/{FILTER}v{i}/blob")
            } else {
                format!("/var/tmp/build/out-{i}.o")
            },
            exe: Some("/usr/bin/python3".into()),
            pid: Some(1000 + i as u32),
            outcome: if i % 4 == 0 {
                Outcome::Deny
            } else {
                Outcome::Allow
            },
            by: if i % 4 == 0 {
                Decider::User
            } else {
                Decider::Policy
            },
            detail: None,
            command: None,
            chain: Vec::new(),
        })
        .collect();
    log.record_all(entries);
    log.close();
}

/// Sends the settings request on a fresh connection (as `landstrip-tray settings` does,
/// connected first); returns the wall clock and the instant just before it was sent.
async fn request_settings(world: &AppWorld, view: &str) -> (SystemTime, Instant) {
    let mut client = Client::connect(&world.control_socket())
        .await
        .expect("connect to the control socket");
    let request = open_request(world, view);
    let sent = (SystemTime::now(), Instant::now());
    client.request(&request).await.expect("OpenSettings");
    sent
}

/// One memory sample of the app's process tree.
struct Sample {
    pss: u64,
    anonymous: u64,
    procs: usize,
    each: String,
}

fn sample(pid: u32) -> Sample {
    let (pss, procs) = pss_tree_kib(pid);
    Sample {
        pss,
        anonymous: anonymous_tree_kib(pid),
        procs,
        each: breakdown(pid),
    }
}

fn print_sample(what: &str, s: &Sample) {
    note(&format!("PSS {what} (MB)"), mib(s.pss), "MB");
    note("  anonymous (heaps)", mib(s.anonymous), "MB");
    println!("    {} processes, PSS: {}", s.procs, s.each);
}

/// Run 1: the app without WebDriver. Prints as it goes.
async fn standalone(world: &AppWorld, watcher: &mut FakeWatcher, maps: &mut MapWatch) {
    let mut app = world.start(&[&world.project]);
    app.wait_for_control().await;
    app.serving(world, &world.project).await;
    watcher.item_from(&app).await;
    tokio::time::sleep(SETTLE).await;
    let idle = sample(app.pid);

    let mut mapped = Vec::new();
    let mut open = None;
    let mut hidden = None;
    let mut closed = tokio::time::Instant::now();
    let mut destroyed_after = f64::NAN;
    let mut after_first = None;
    for round in 0..=WARM_ROUNDS {
        let (sent, _) = request_settings(world, "projects").await;
        let (window, at) = maps
            .next(MapEvent::Mapped, "the settings window mapped")
            .await;
        mapped.push(epoch_ms(at) - epoch_ms(sent));
        // No page signal reaches us without WebDriver: give the page time to load and
        // settle before closing it (and before the memory sample).
        tokio::time::sleep(if round == 0 { SETTLE } else { POLL * 100 }).await;
        if round == 0 {
            open = Some(sample(app.pid));
        }
        closed = tokio::time::Instant::now();
        request_close(&window).await;
        // Closing hides it; it is destroyed after the app's linger (src-tauri/src/app/settings.rs).
        maps.next(MapEvent::Unmapped, "the settings window hidden")
            .await;
        if round == 0 {
            tokio::time::sleep_until(closed + SETTLE).await;
            hidden = Some(sample(app.pid));
            let (_, at) = maps
                .next(MapEvent::Destroyed, "the hidden settings window destroyed")
                .await;
            destroyed_after = epoch_ms(at) - epoch_ms(SystemTime::now()) + ms(closed.elapsed());
            tokio::time::sleep_until(closed + AFTER_CLOSE).await;
            after_first = Some(sample(app.pid));
        }
    }
    maps.next(MapEvent::Destroyed, "the hidden settings window destroyed")
        .await;
    tokio::time::sleep_until(closed + AFTER_CLOSE).await;
    let after_all = sample(app.pid);
    let (open, hidden, after_first) = (
        open.expect("sampled"),
        hidden.expect("sampled"),
        after_first.expect("sampled"),
    );

    println!("-- the app on its own (no WebDriver), a tray host present");
    print_sample("before the settings window ever opened", &idle);
    print_sample("with the settings window open", &open);
    print_sample(
        &format!("{}s after it was closed (hidden, kept)", SETTLE.as_secs()),
        &hidden,
    );
    note(
        "  close -> the hidden window destroyed (the app's linger)",
        destroyed_after,
        "ms",
    );
    print_sample(
        &format!("{}s after it was closed", AFTER_CLOSE.as_secs()),
        &after_first,
    );
    print_sample(
        &format!(
            "{}s after {} opens and closes",
            AFTER_CLOSE.as_secs(),
            WARM_ROUNDS + 1
        ),
        &after_all,
    );
    figure(
        "idle memory after close - before open, PSS (MB)",
        mib(after_first.pss) - mib(idle.pss),
        "MB",
        Some(10.0),
    );
    figure(
        "  the same, anonymous (heaps) (MB)",
        mib(after_first.anonymous) - mib(idle.anonymous),
        "MB",
        Some(10.0),
    );
    figure(
        &format!("  after {} opens, PSS (MB)", WARM_ROUNDS + 1),
        mib(after_all.pss) - mib(idle.pss),
        "MB",
        Some(10.0),
    );
    figure(
        &format!("  after {} opens, anonymous (heaps) (MB)", WARM_ROUNDS + 1),
        mib(after_all.anonymous) - mib(idle.anonymous),
        "MB",
        Some(10.0),
    );
    note(
        "request -> window mapped, cold (first in the app's life)",
        mapped[0],
        "ms",
    );
    let (p50, max) = median_max(&mapped[1..]);
    note("request -> window mapped, warm median", p50, "ms");
    note("request -> window mapped, warm worst", max, "ms");
    app.quit().await;
}

/// Polls `script` (every [`POLL`], bounded) until it returns `true`; returns how long
/// that took since `since`, and the mean round trip of one poll.
async fn poll_until(session: &Session, what: &str, script: &str, since: Instant) -> (f64, f64) {
    let deadline = Instant::now() + EVENT_TIMEOUT;
    let (mut polls, mut spent) = (0u32, Duration::ZERO);
    loop {
        let asked = Instant::now();
        let value = session
            .client()
            .execute(script, vec![])
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        spent += asked.elapsed();
        polls += 1;
        if value.as_bool() == Some(true) {
            return (ms(since.elapsed()), ms(spent) / f64::from(polls));
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within {EVENT_TIMEOUT:?}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// What one open measured.
struct Open {
    /// request → max(mapped, ready), from the X event and the page's mark.
    interactive: f64,
    /// request → mapped.
    mapped: f64,
    /// request → the page's `settings-ready` mark.
    ready: f64,
    /// request → the page's navigation start (the webview and its web process up).
    navigation: f64,
    /// navigation start → DOMContentLoaded (the document, its scripts and modules).
    dcl: f64,
    /// DOMContentLoaded → ready (the first view's commands and render).
    after_dcl: f64,
    /// request → ready as seen by polling through WebDriver.
    polled: f64,
    /// One poll's round trip.
    rtt: f64,
}

/// Opens the settings window on `view` and measures it; the session is switched to it.
async fn timed_open(
    world: &AppWorld,
    session: &Session,
    maps: &mut MapWatch,
    view: &str,
) -> (Open, String) {
    let before = session
        .bounded("window handles", session.client().windows())
        .await;
    let (sent, since) = request_settings(world, view).await;
    switch_to_new_window(session, &before, POLL).await;
    let (polled, rtt) = poll_until(
        session,
        "the settings page ready",
        "return document.body.dataset.ready === 'true'",
        since,
    )
    .await;
    // The page's own clock: when its navigation started (the web process up), its
    // DOMContentLoaded (scripts and modules in), and its settings-ready mark.
    let page = session
        .bounded(
            "the page's timings",
            session.client().execute(
                "const m = performance.getEntriesByName('settings-ready')[0]; \
                 const n = performance.getEntriesByType('navigation')[0]; \
                 return m ? { origin: performance.timeOrigin, ready: m.startTime, \
                   dcl: n ? n.domContentLoadedEventEnd : null } : null",
                vec![],
            ),
        )
        .await;
    let origin = page["origin"]
        .as_f64()
        .expect("the page marks settings-ready (ui/settings/main.js)");
    let ready_at = origin + page["ready"].as_f64().expect("the mark's time");
    let dcl = page["dcl"].as_f64().unwrap_or(f64::NAN);
    let (window, mapped_at) = maps
        .next(MapEvent::Mapped, "the settings window mapped")
        .await;
    let sent = epoch_ms(sent);
    let mapped = epoch_ms(mapped_at) - sent;
    let ready = ready_at - sent;
    (
        Open {
            interactive: mapped.max(ready),
            mapped,
            ready,
            navigation: origin - sent,
            dcl,
            after_dcl: ready_at - origin - dcl,
            polled,
            rtt,
        },
        window,
    )
}

/// Opens the hidden settings window again (`handle`, kept by the app after a close) on
/// `view` and measures it: request → mapped again and the page's `settings-shown` mark
/// (its view reloaded). The session is left on that window.
async fn timed_show(
    world: &AppWorld,
    session: &Session,
    maps: &mut MapWatch,
    handle: &fantoccini::wd::WindowHandle,
    view: &str,
) -> Open {
    session
        .bounded(
            "switch to the hidden settings window",
            session.client().switch_to_window(handle.clone()),
        )
        .await;
    let count = "return performance.getEntriesByName('settings-shown').length";
    let before = session
        .bounded(
            "the page's shown marks",
            session.client().execute(count, vec![]),
        )
        .await
        .as_u64()
        .expect("a count");
    let (sent, since) = request_settings(world, view).await;
    let (polled, rtt) = poll_until(
        session,
        "the settings page shown again",
        &format!(
            "return performance.getEntriesByName('settings-shown').length > {before}              && document.body.dataset.ready === 'true'"
        ),
        since,
    )
    .await;
    let page = session
        .bounded(
            "the page's timings",
            session.client().execute(
                "const m = performance.getEntriesByName('settings-shown');                  return { origin: performance.timeOrigin, shown: m[m.length - 1].startTime }",
                vec![],
            ),
        )
        .await;
    let shown_at = page["origin"].as_f64().expect("timeOrigin")
        + page["shown"].as_f64().expect("the mark's time");
    let (_, mapped_at) = maps
        .next(MapEvent::Mapped, "the settings window mapped again")
        .await;
    let sent = epoch_ms(sent);
    let mapped = epoch_ms(mapped_at) - sent;
    let ready = shown_at - sent;
    Open {
        interactive: mapped.max(ready),
        mapped,
        ready,
        navigation: f64::NAN,
        dcl: f64::NAN,
        after_dcl: f64::NAN,
        polled,
        rtt,
    }
}

/// Closes the settings window as a window manager's close button does and waits until it
/// is hidden (the app keeps it a few seconds, then destroys it); the session goes back to
/// the dialog's handle.
async fn close(
    session: &Session,
    maps: &mut MapWatch,
    window: &str,
    home: &fantoccini::wd::WindowHandle,
) {
    request_close(window).await;
    maps.next(MapEvent::Unmapped, "the settings window hidden")
        .await;
    session
        .bounded(
            "back to the dialog window",
            session.client().switch_to_window(home.clone()),
        )
        .await;
}

/// The moments the project's sandbox.json changed (inotify, stamped on arrival).
fn watch_file(file: &Path) -> (notify::RecommendedWatcher, mpsc::UnboundedReceiver<Instant>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let name = file.file_name().expect("a file name").to_owned();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let at = Instant::now();
        // The atomic write renames a temporary file over it: only events naming the file.
        if event.is_ok_and(|e| e.paths.iter().any(|p| p.file_name() == Some(&name))) {
            let _ = tx.send(at);
        }
    })
    .expect("inotify watcher");
    watcher
        .watch(
            file.parent().expect("a directory"),
            notify::RecursiveMode::NonRecursive,
        )
        .expect("watch the project's .opencode directory");
    (watcher, rx)
}

/// Run 2, the adds: returns (Enter → bytes on disk, inert key round trip) per round, ms.
async fn saves(world: &AppWorld, session: &Session) -> (Vec<f64>, Vec<f64>) {
    let file = world.project_policy();
    let (_watcher, mut changes) = watch_file(&file);
    let (mut saved, mut inert) = (Vec::new(), Vec::new());
    for round in 0..SAVE_ROUNDS {
        let entry = path_str(&world.outside.join(format!("save-{round}"))).to_owned();
        // A save re-renders the view twice (after the command, and on the file's change
        // event, which can come a while later): a round starts once the page is still,
        // and starts again should the field be replaced under it all the same.
        let mut attempts = 0;
        let (inert_ms, pressed) = loop {
            attempts += 1;
            assert!(attempts <= 5, "{entry}: the field kept being replaced");
            settle_dom(session).await;
            let attempt = async {
                let input = session.client().find(Locator::Css(ADD_WRITE)).await?;
                input.clear().await?;
                input.send_keys(&entry).await?;
                // WebDriver's own round trip for a key that changes nothing (End: the
                // caret is at the end already).
                let asked = Instant::now();
                input.send_keys(&char::from(Key::End).to_string()).await?;
                let inert_ms = ms(asked.elapsed());
                while changes.try_recv().is_ok() {}
                let pressed = Instant::now();
                input.send_keys(&char::from(Key::Enter).to_string()).await?;
                Ok::<_, fantoccini::error::CmdError>((inert_ms, pressed))
            };
            match tokio::time::timeout(COMMAND_TIMEOUT, attempt).await {
                Ok(Ok(done)) => break done,
                Ok(Err(e)) if format!("{e:?}").contains("StaleElementReference") => continue,
                Ok(Err(e)) => panic!("typing {entry}: {e}\nlog:\n{}", session.log()),
                Err(_) => panic!("typing {entry}: no answer within {COMMAND_TIMEOUT:?}"),
            }
        };
        inert.push(inert_ms);
        let deadline = tokio::time::Instant::now() + EVENT_TIMEOUT;
        let on_disk = loop {
            let at = tokio::time::timeout_at(deadline, changes.recv())
                .await
                .unwrap_or_else(|_| panic!("{entry}: not on disk within {EVENT_TIMEOUT:?}"))
                .expect("the watcher runs");
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            if landstrip_tray_tests::settings_window::list(&text, "filesystem.allowWrite")
                .contains(&entry)
            {
                break at;
            }
        };
        saved.push(ms(on_disk.duration_since(pressed)));
        // The view reloads after a save: the next round types into the new field. (Looked
        // for by script: an element handle can go stale while the view re-renders.)
        poll_until(
            session,
            &format!("{entry} shown in the project file's list"),
            &format!(
                "return document.querySelector(\"section[data-file='project'] \
                 [data-list='filesystem.allowWrite'] li[data-entry='{entry}']\") !== null"
            ),
            Instant::now(),
        )
        .await;
    }
    (saved, inert)
}

/// The page's own time for the activity query alone (`settings_activity`, as the view
/// calls it), in ms; checks it returned `want` entries.
async fn query_ms(session: &Session, grep: Option<char>, want: usize) -> f64 {
    let script = "const done = arguments[arguments.length - 1]; \
        const filter = { limit: arguments[1] }; \
        if (arguments[0]) filter.grep = arguments[0]; \
        const t = performance.now(); \
        window.__TAURI_INTERNALS__.invoke('settings_activity', { filter }) \
          .then((r) => done([performance.now() - t, r.rows.length]), (e) => done([null, String(e)]));";
    let got = session
        .bounded(
            "time the activity query",
            session.client().execute_async(
                script,
                vec![
                    serde_json::json!(grep.map(String::from)),
                    serde_json::json!(VIEW_LIMIT),
                ],
            ),
        )
        .await;
    assert_eq!(
        got[1].as_u64(),
        Some(want as u64),
        "settings_activity: {got}"
    );
    got[0].as_f64().expect("a time")
}

/// The core's `read_log` on the app's log, as `settings_activity` runs it, timed in this
/// (optimized) process: the query's cost without the debug build's inflation. Median of
/// [`FILTER_ROUNDS`], in ms.
fn read_log_ms(world: &AppWorld, grep: Option<char>) -> f64 {
    let filter = ActivityFilter {
        grep: grep.map(String::from),
        limit: Some(VIEW_LIMIT),
        ..Default::default()
    };
    let times: Vec<f64> = (0..FILTER_ROUNDS)
        .map(|_| {
            let started = Instant::now();
            let read = read_log(&world.activity_file(), &filter).expect("read the activity log");
            assert!(!read.is_empty(), "the activity log is empty");
            ms(started.elapsed())
        })
        .collect();
    median_max(&times).0
}

/// Waits (bounded, one WebDriver command) until the page's DOM has not changed for
/// [`QUIET`].
async fn settle_dom(session: &Session) {
    let script = "const done = arguments[arguments.length - 1]; \
        const quiet = arguments[0]; \
        const seen = new MutationObserver(() => { clearTimeout(timer); timer = setTimeout(still, quiet); }); \
        const still = () => { seen.disconnect(); done(); }; \
        let timer = setTimeout(still, quiet); \
        seen.observe(document.body, { childList: true, subtree: true, attributes: true, characterData: true });";
    session
        .bounded(
            "the page still",
            session
                .client()
                .execute_async(script, vec![serde_json::json!(ms(QUIET))]),
        )
        .await;
}

/// Run 2, the filter: one round trip of typing a key with `want` rows afterwards.
struct Repaint {
    /// key sent → the row count seen changed, polling through WebDriver.
    polled: f64,
    /// The poll's round trip.
    rtt: f64,
    /// In the page: the input event → the table replaced and a frame later.
    in_page: f64,
    /// The page's own `data-render-ms`, when it has one.
    render_ms: Option<f64>,
    /// Of that, the page's own split: the command, building the rows, style and layout
    /// (`data-query-ms`, `data-dom-ms`, `data-layout-ms`).
    split: [Option<f64>; 3],
}

/// Installs the page-side clock, sends `key` to the filter field and waits for `want`
/// rows.
async fn filter_round(session: &Session, key: &str, want: usize) -> Repaint {
    // A capture listener on the document runs before the field's own handler; the
    // observer stamps the table once it shows `want` rows, after the next frame.
    let install = "const want = arguments[0]; \
        const rows = document.getElementById('activity-rows'); \
        const bench = window.__bench = { input: null, painted: null }; \
        document.addEventListener('input', () => { bench.input = performance.now(); }, { capture: true, once: true }); \
        const seen = new MutationObserver(() => { \
          if (rows.querySelectorAll('tbody tr').length !== want) return; \
          seen.disconnect(); \
          requestAnimationFrame(() => setTimeout(() => { bench.painted = performance.now(); }, 0)); \
        }); \
        seen.observe(rows, { childList: true, subtree: true });";
    session
        .bounded(
            "install the page clock",
            session
                .client()
                .execute(install, vec![serde_json::json!(want)]),
        )
        .await;
    let field = session.wait_css("#f-text").await;
    let sent = Instant::now();
    session
        .bounded("type the filter", field.send_keys(key))
        .await;
    let (polled, rtt) = poll_until(
        session,
        &format!("{want} activity rows"),
        &format!("return document.querySelectorAll('#activity-rows tbody tr').length === {want}"),
        sent,
    )
    .await;
    let read = "const b = window.__bench; \
        const own = document.querySelector('[data-render-ms]'); \
        const d = own ? own.dataset : {}; \
        return { input: b.input, painted: b.painted, own: d.renderMs ?? null, \
          split: [d.queryMs ?? null, d.domMs ?? null, d.layoutMs ?? null] };";
    let deadline = Instant::now() + EVENT_TIMEOUT;
    loop {
        let page = session
            .bounded(
                "read the page clock",
                session.client().execute(read, vec![]),
            )
            .await;
        if let (Some(input), Some(painted)) = (page["input"].as_f64(), page["painted"].as_f64()) {
            return Repaint {
                polled,
                rtt,
                in_page: painted - input,
                render_ms: page["own"].as_str().and_then(|v| v.parse().ok()),
                split: [0, 1, 2].map(|i| page["split"][i].as_str().and_then(|v| v.parse().ok())),
            };
        }
        assert!(
            Instant::now() < deadline,
            "the page clock never stamped the repaint: {page}"
        );
        tokio::time::sleep(POLL).await;
    }
}

async fn driven(world: &AppWorld, watcher: &mut FakeWatcher, maps: &mut MapWatch) {
    let session = Session::start(world, &[]).await;
    let pid = session.app_pid.expect("the app's pid");
    watcher.item_from_pid(pid, || session.log()).await;
    let home = session
        .bounded("the dialog's handle", session.client().window())
        .await;
    tokio::time::sleep(SETTLE).await;

    // Cold: the first window of the app's life; warm: shown again within the app's
    // linger after a close; then once more after the hidden window was destroyed (a new
    // webview and web process, as any open later than the linger).
    let before = session
        .bounded("window handles", session.client().windows())
        .await;
    let (cold, window) = timed_open(world, &session, maps, "projects").await;
    let handle = session
        .bounded("the settings window's handle", session.client().window())
        .await;
    assert!(!before.contains(&handle), "a new settings window");
    let mut opens = vec![cold];
    close(&session, maps, &window, &home).await;
    for _ in 0..WARM_ROUNDS {
        tokio::time::sleep(POLL * 100).await;
        opens.push(timed_show(world, &session, maps, &handle, "projects").await);
        close(&session, maps, &window, &home).await;
    }
    maps.next(MapEvent::Destroyed, "the hidden settings window destroyed")
        .await;
    tokio::time::sleep(SETTLE).await;
    let (after_linger, window) = timed_open(world, &session, maps, "projects").await;
    close(&session, maps, &window, &home).await;

    open_settings(world, &session, "policy").await;
    let (window, _) = maps
        .next(MapEvent::Mapped, "the policy window mapped")
        .await;
    let (saved, inert) = saves(world, &session).await;
    close(&session, maps, &window, &home).await;

    open_settings(world, &session, "activity").await;
    let (window, _) = maps
        .next(MapEvent::Mapped, "the activity window mapped")
        .await;
    poll_until(
        &session,
        "the activity table full",
        &format!(
            "return document.querySelectorAll('#activity-rows tbody tr').length === {VIEW_LIMIT}"
        ),
        Instant::now(),
    )
    .await;
    let wanted = ENTRIES / MATCH_EVERY;
    let (mut query_narrow, mut query_all) = (Vec::new(), Vec::new());
    for _ in 0..FILTER_ROUNDS {
        query_narrow.push(query_ms(&session, Some(FILTER), wanted).await);
        query_all.push(query_ms(&session, None, VIEW_LIMIT).await);
    }
    let (mut narrow, mut widen) = (Vec::new(), Vec::new());
    for _ in 0..FILTER_ROUNDS {
        settle_dom(&session).await;
        narrow.push(filter_round(&session, &FILTER.to_string(), wanted).await);
        settle_dom(&session).await;
        widen.push(
            filter_round(
                &session,
                &char::from(Key::Backspace).to_string(),
                VIEW_LIMIT,
            )
            .await,
        );
    }
    close(&session, maps, &window, &home).await;
    session.finish().await;

    println!("-- the app under tauri-driver (WebDriver), a tray host present");
    let cold = &opens[0];
    figure(
        "request -> interactive, cold (mapped and page ready)",
        cold.interactive,
        "ms",
        Some(500.0),
    );
    note("  request -> window mapped", cold.mapped, "ms");
    note(
        "  request -> page ready (its settings-ready mark)",
        cold.ready,
        "ms",
    );
    note(
        "  request -> ready seen by polling WebDriver",
        cold.polled,
        "ms",
    );
    let warm = &opens[1..];
    let (p50, max) = median_max(&warm.iter().map(|o| o.interactive).collect::<Vec<_>>());
    figure(
        &format!(
            "request -> interactive, warm median ({WARM_ROUNDS} re-opens of the hidden window)"
        ),
        p50,
        "ms",
        Some(150.0),
    );
    figure("request -> interactive, warm worst", max, "ms", Some(150.0));
    let (p50, _) = median_max(&warm.iter().map(|o| o.mapped).collect::<Vec<_>>());
    note("  warm request -> window mapped, median", p50, "ms");
    let (p50, _) = median_max(&warm.iter().map(|o| o.ready).collect::<Vec<_>>());
    note(
        "  warm request -> view reloaded (settings-shown), median",
        p50,
        "ms",
    );
    let (p50, _) = median_max(&warm.iter().map(|o| o.polled).collect::<Vec<_>>());
    note("  warm request -> ready seen by polling, median", p50, "ms");
    figure(
        "request -> interactive, after the hidden window was destroyed",
        after_linger.interactive,
        "ms",
        Some(150.0),
    );
    note("  request -> window mapped", after_linger.mapped, "ms");
    note(
        "  of which request -> navigation start",
        after_linger.navigation,
        "ms",
    );
    note(
        "  navigation start -> DOMContentLoaded",
        after_linger.dcl,
        "ms",
    );
    note("  DOMContentLoaded -> ready", after_linger.after_dcl, "ms");
    let (rtt, _) = median_max(&opens.iter().map(|o| o.rtt).collect::<Vec<_>>());
    note(
        "  polling resolution: one WebDriver poll (median)",
        rtt + ms(POLL),
        "ms",
    );

    // The raw figure includes WebDriver carrying the key to the page (part of its round
    // trip): an upper bound; less the whole round trip, a lower one.
    let (inert_p50, _) = median_max(&inert);
    let (p50, max) = median_max(&saved);
    figure(
        &format!("Enter -> bytes on disk, median ({SAVE_ROUNDS} adds)"),
        p50,
        "ms",
        Some(100.0),
    );
    figure("Enter -> bytes on disk, worst", max, "ms", Some(100.0));
    note(
        "  WebDriver round trip of an inert key (End), median",
        inert_p50,
        "ms",
    );
    let net: Vec<f64> = saved.iter().map(|s| (s - inert_p50).max(0.0)).collect();
    let (p50, max) = median_max(&net);
    note("  less that round trip, median", p50, "ms");
    note("  less that round trip, worst", max, "ms");

    for (name, rounds, rows) in [
        ("narrow to", &narrow, wanted),
        ("widen back to", &widen, VIEW_LIMIT),
    ] {
        let (p50, max) = median_max(&rounds.iter().map(|r| r.in_page).collect::<Vec<_>>());
        figure(
            &format!("filter {ENTRIES} entries ({name} {rows} rows): key -> repainted, median"),
            p50,
            "ms",
            Some(100.0),
        );
        figure("  ... worst", max, "ms", Some(100.0));
        let (p50, _) = median_max(&rounds.iter().map(|r| r.polled).collect::<Vec<_>>());
        note(
            "  key sent -> row count changed, seen by polling, median",
            p50,
            "ms",
        );
        let (rtt, _) = median_max(&rounds.iter().map(|r| r.rtt).collect::<Vec<_>>());
        note("  polling resolution (median)", rtt + ms(POLL), "ms");
        let queries = if rows == wanted {
            &query_narrow
        } else {
            &query_all
        };
        let (p50, _) = median_max(queries);
        note(
            "  of which the query alone (settings_activity), median",
            p50,
            "ms",
        );
        let grep = (rows == wanted).then_some(FILTER);
        note(
            "  that query's read_log, optimized build, in this process",
            read_log_ms(world, grep),
            "ms",
        );
        let own: Vec<f64> = rounds.iter().filter_map(|r| r.render_ms).collect();
        if own.is_empty() {
            println!("  (the page has no data-render-ms of its own)");
        } else {
            let (p50, max) = median_max(&own);
            note("  the page's own data-render-ms, median", p50, "ms");
            note("  the page's own data-render-ms, worst", max, "ms");
            for (i, what) in [
                "the command (data-query-ms)",
                "building the rows (data-dom-ms)",
                "style and layout (data-layout-ms)",
            ]
            .iter()
            .enumerate()
            {
                let part: Vec<f64> = rounds.iter().filter_map(|r| r.split[i]).collect();
                if !part.is_empty() {
                    note(
                        &format!("    of which {what}, median"),
                        median_max(&part).0,
                        "ms",
                    );
                }
            }
        }
    }
}

#[tokio::main]
async fn main() {
    assert!(
        std::env::var_os("DISPLAY").is_some(),
        "run under `xvfb-run -a dbus-run-session -- cargo bench -p landstrip-tray-tests --bench settings`"
    );
    let bus = std::env::var("DBUS_SESSION_BUS_ADDRESS")
        .expect("a session bus: run under `dbus-run-session`");
    let mut watcher = FakeWatcher::start(&bus).await;
    let mut maps = MapWatch::start(TITLE).await;
    let world = AppWorld::new();
    write_activity(&world);
    world.write_project_policy(&serde_json::json!({}));

    println!(
        "settings window figures ({}; debug build unless LANDSTRIP_TRAY_BIN says otherwise)",
        date()
    );
    println!("machine note: gVisor, 2 shared cores: absolute times are inflated; ratios matter");
    standalone(&world, &mut watcher, &mut maps).await;
    driven(&world, &mut watcher, &mut maps).await;
}

/// Today's date and time (UTC), for the heading.
fn date() -> String {
    std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}
