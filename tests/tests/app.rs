//! The real app binary (`landstrip-tray`, built by `cargo build -p landstrip-tray`) under
//! the test's X display, each test with its own home, config, data and runtime
//! directories (the shared runner, `landstrip_tray_tests::real_app`): it publishes and
//! withdraws its discovery file, holds what a real landstrip run asks while nobody
//! answers, denies it all when told to quit by a signal (TERM, INT or HUP) and records
//! that quitting decided, and behaves around stale and live foreign discovery files.
//! Nothing here is mocked.

use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use landstrip_tray_core::serving::discovery::DiscoveryRecord;
use landstrip_tray_tests::real_app::{path_str, AppWorld, DirWatch, RunningApp};
use landstrip_tray_tests::tap::Tap;
use landstrip_tray_tests::{finish, EVENT_TIMEOUT};
use tokio::process::Command;

/// How long the app may take to put its file back once a conflicting owner is gone.
const REPUBLISH_TIMEOUT: Duration = Duration::from_secs(5);

/// Waits for the app's own record for the project and checks its form: exactly
/// `{"port":…,"pid":…,"ts":…}` and a newline, naming the app's pid and a port that
/// accepts TCP. Returns the port.
async fn await_own_record(
    world: &AppWorld,
    watch: &mut DirWatch,
    app: &mut RunningApp,
    within: Duration,
) -> u16 {
    let port = app
        .serving_within(world, &world.project, watch, within)
        .await;
    let text =
        std::fs::read_to_string(world.discovery_file(&world.project)).expect("read discovery file");
    assert!(text.ends_with('\n'), "no trailing newline: {text:?}");
    let value: serde_json::Value = serde_json::from_str(&text).expect("discovery JSON");
    let keys: Vec<&str> = value
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["port", "pid", "ts"], "{text}");
    assert_eq!(value["pid"], app.pid, "{text}");
    assert!(value["ts"].as_u64().is_some_and(|ts| ts > 0), "{text}");
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .unwrap_or_else(|e| panic!("the discovered port {port} does not accept TCP: {e}"));
    port
}

/// Publication, a held query nobody answers, then `signal`: before the signal the query
/// is pending in the app (listed by `ctl pending`, nothing answered on the wire, nothing
/// in the activity log); after it, the held write fails with EACCES, the app's only answer
/// on the wire is deny, the activity log says quitting denied it, the app exits 0 and its
/// discovery file is gone. `headless`: the app started with `--headless` (no display, no
/// session bus), as over SSH, instead of under the test's X display.
async fn held_query_is_denied_on(signal: &str, headless: bool) {
    let world = AppWorld::new();
    let mut watch = world.watch();
    let mut app = if headless {
        world.start_headless()
    } else {
        world.start(&[&world.project])
    };
    let port = await_own_record(&world, &mut watch, &mut app, EVENT_TIMEOUT).await;
    assert_eq!(
        std::fs::metadata(world.discovery.path())
            .expect("discovery dir")
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
    app.wait_for_control().await;

    let mut tap = Tap::start(port).await;
    let target = world.outside.join("held.txt");
    let mut child = world.write(tap.port, &target);
    let query = tap.first_query().await.trap;
    assert_eq!(query["kind"], "filesystem", "{query}");
    assert_eq!(query["operation"], "write", "{query}");
    assert_eq!(query["path"], path_str(&target), "{query}");
    // Nobody is there to answer: the query stays held, as a pending prompt of the app.
    let pending_json = world.ctl_ok(&["pending", "--wait", "--json"]).await;
    let pending: serde_json::Value =
        serde_json::from_str(&pending_json).expect("ctl pending --json");
    let paths: Vec<&str> = pending
        .as_array()
        .expect("an array")
        .iter()
        .filter_map(|p| p["path"].as_str())
        .collect();
    assert_eq!(paths, [path_str(&target)], "{pending}");
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "the sandboxed program finished while its write should be held"
    );
    assert_eq!(tap.replies(), "", "the app answered before anyone could");
    let undecided = std::fs::read_to_string(world.activity_file()).unwrap_or_default();
    assert!(
        !undecided.contains(path_str(&target)),
        "the held query was already decided: {undecided}"
    );
    app.assert_running();

    let code = app.signal(signal).await;
    let log = app.log();
    assert_eq!(
        code,
        Some(0),
        "SIG{signal}: exit status; the app's log:\n{log}"
    );
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");
    assert_eq!(done.code, Some(13), "{done:?}");
    assert!(!target.exists(), "the held write went through");
    let reply: serde_json::Value = serde_json::from_str(tap.replies().trim())
        .unwrap_or_else(|e| panic!("the app's answer {:?}: {e}", tap.replies()));
    assert_eq!(reply["query_id"], query["query_id"], "{reply}");
    assert_eq!(reply["action"], "deny", "{reply}");
    let entries: Vec<serde_json::Value> = std::fs::read_to_string(world.activity_file())
        .expect("the activity log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("an activity line"))
        .filter(|e: &serde_json::Value| e["subject"] == path_str(&target))
        .collect();
    assert_eq!(entries.len(), 1, "one decision for the query: {entries:?}");
    let entry = &entries[0];
    assert_eq!(entry["kind"], "filesystem", "{entry}");
    assert_eq!(entry["operation"], "write", "{entry}");
    assert_eq!(entry["outcome"], "deny", "{entry}");
    assert_eq!(entry["by"], "quit", "not denied by quitting: {entry}");
    assert!(
        !world.discovery_file(&world.project).exists(),
        "SIG{signal}: the discovery file was left behind; the app's log:\n{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_denies_the_held_query_exits_0_and_withdraws_the_discovery_file() {
    held_query_is_denied_on("TERM", false).await;
}

/// The README's `--headless` (and its systemd unit's stop) quits the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_to_the_headless_app_denies_the_held_query_exits_0_and_withdraws_the_discovery_file(
) {
    held_query_is_denied_on("TERM", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_denies_the_held_query_exits_0_and_withdraws_the_discovery_file() {
    held_query_is_denied_on("INT", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_denies_the_held_query_exits_0_and_withdraws_the_discovery_file() {
    held_query_is_denied_on("HUP", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_discovery_file_is_replaced_at_start() {
    let world = AppWorld::new();
    let dead_pid = {
        let mut exited = Command::new("true").spawn().expect("spawn true");
        let pid = exited.id().expect("pid");
        exited.wait().await.expect("wait");
        pid
    };
    // Held closed for the whole test: the app's own listener cannot be given it.
    let (_closed, closed_port) = landstrip_tray_tests::closed_port();
    let stale = DiscoveryRecord {
        port: closed_port,
        pid: dead_pid,
        ts: 1,
    };
    world.plant(&world.project, stale);
    assert_eq!(world.record(&world.project), Some(stale));

    let mut watch = world.watch();
    let mut app = world.start(&[&world.project]);
    let port = await_own_record(&world, &mut watch, &mut app, EVENT_TIMEOUT).await;
    assert_ne!(port, closed_port);
    app.assert_running();
    assert!(
        !app.log().contains("another presenter"),
        "a dead owner was reported as a conflict:\n{}",
        app.log()
    );
    assert_eq!(app.signal("TERM").await, Some(0));
    assert!(!world.discovery_file(&world.project).exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_owners_file_is_kept_until_it_exits_then_the_app_publishes() {
    let world = AppWorld::new();
    let mut owner = Command::new("sleep")
        .arg("60")
        .kill_on_drop(true)
        .spawn()
        .expect("spawn sleep");
    let owner_pid = owner.id().expect("pid");
    let owner_listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
    let owner_port = owner_listener.local_addr().expect("addr").port();
    let theirs = world.plant(
        &world.project,
        DiscoveryRecord {
            port: owner_port,
            pid: owner_pid,
            ts: 1,
        },
    );

    // The app-wide default: prompts go to the other presenter while it runs.
    world.write_settings(&serde_json::json!({ "promptsGo": "terminal" }));
    let mut watch = world.watch();
    let mut app = world.start(&[&world.project]);
    // Logged once the app has looked at the file and decided not to write it.
    app.wait_for_log(&format!(
        "another presenter (pid {owner_pid}, port {owner_port})"
    ))
    .await;
    assert_eq!(
        std::fs::read(world.discovery_file(&world.project)).expect("their file"),
        theirs,
        "the app overwrote a live presenter's discovery file"
    );
    app.assert_running();

    // The owner goes away: its socket closes, then its process exits.
    drop(owner_listener);
    owner.kill().await.expect("kill sleep");
    let port = await_own_record(&world, &mut watch, &mut app, REPUBLISH_TIMEOUT).await;
    assert_ne!(port, owner_port);
    app.assert_running();

    assert_eq!(app.signal("TERM").await, Some(0));
    assert!(!world.discovery_file(&world.project).exists());
}
