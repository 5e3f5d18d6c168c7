//! The real app binary's process life under the test's X display (the shared runner,
//! `landstrip_tray_tests::real_app`), with the real landstrip 0.19.2: a non-UTF-8
//! directory on the command line is served, through `ctl` it is no panic; a non-UTF-8
//! value where text is needed is a usage error; the "no tray host" warning waits for a
//! host that comes a moment after the app, and that host gets the icon; without a host it
//! comes once, and a host that comes after it still gets the icon; a tray icon that cannot
//! be created does not stop the app from serving.
//!
//! Mocked, because it cannot be real here: the desktop's notification server (Debian's
//! dbusmock, `notification_server`) and the panel's StatusNotifierWatcher
//! (`tests/fake_watcher.py`); there is no panel under Xvfb.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Duration;

use landstrip_tray_tests::finish;
use landstrip_tray_tests::notification_server::NotificationServer;
use landstrip_tray_tests::real_app::{path_str, AppWorld, RunningApp};
use landstrip_tray_tests::tray_host::FakeWatcher;
use tokio::time::Instant;

/// The app's notification when nothing hosts tray icons (`NO_TRAY_SUMMARY` in the app).
const NO_TRAY_TITLE: &str = "landstrip-tray is running without a tray icon";

/// How long the app gives a tray host to appear before it warns, as the app says it at
/// start (its `TRAY_HOST_GRACE`), read rather than copied so the two cannot drift apart.
async fn tray_host_grace(app: &mut RunningApp) -> Duration {
    const SAID: &str = "giving a tray host ";
    app.wait_for_log(SAID).await;
    let log = app.log();
    let said = &log[log.find(SAID).expect("just seen") + SAID.len()..];
    let secs = said
        .split_once("s to appear")
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("no grace in the app's words: {said:.60}"));
    Duration::from_secs(secs)
}

/// A directory under the world's base whose name holds the byte 0xff (not UTF-8).
fn non_utf8_dir(world: &AppWorld, prefix: &str) -> PathBuf {
    let mut name = prefix.as_bytes().to_vec();
    name.push(0xff);
    let dir = world.base.join(OsStr::from_bytes(&name));
    assert!(dir.to_str().is_none(), "{dir:?} is UTF-8");
    std::fs::create_dir(&dir).expect("mkdir a non-UTF-8 directory");
    dir
}

/// Fails if the app binary panicked: exit code 101 or a panic message.
fn assert_no_panic(what: &str, code: Option<i32>, stderr: &str) {
    assert_ne!(code, Some(101), "{what}: exit 101 (a panic): {stderr}");
    assert!(!stderr.contains("panicked"), "{what} panicked: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_utf8_project_is_served_and_a_non_utf8_answer_entry_is_a_usage_error() {
    let world = AppWorld::new();
    let project = non_utf8_dir(&world, "project-");
    let mut app = world.start(&[&project]);
    app.serving(&world, &project).await;
    app.wait_for_control().await;
    assert_no_panic("--project <non-UTF-8>", None, &app.log());

    // Added at run time through ctl: not a panic. The control socket carries paths as
    // JSON text, so today the client refuses a non-UTF-8 directory with a message (and
    // nothing is half-added); if the wire learns such paths, the app must serve it.
    let added = non_utf8_dir(&world, "added-");
    let out = world
        .run_os(&[
            OsStr::new("ctl"),
            OsStr::new("add-project"),
            added.as_os_str(),
        ])
        .await;
    assert_no_panic("ctl add-project <non-UTF-8>", out.code, &out.stderr);
    match out.code {
        Some(0) => assert!(
            world.record(&added).is_some_and(|r| r.pid == app.pid),
            "ctl add-project <non-UTF-8> said yes, but the app does not serve {added:?}; its log:\n{}",
            app.log()
        ),
        Some(1) => {
            assert!(
                out.stderr.contains("UTF-8"),
                "refused without saying why: {out:?}"
            );
            assert!(
                world.record(&added).is_none(),
                "refused, yet a discovery file is there"
            );
        }
        _ => panic!("ctl add-project <non-UTF-8>: {out:?}"),
    }

    // Where the command needs text, a non-UTF-8 value is refused as usage, not a panic.
    let out = world
        .run_os(&[
            OsStr::new("ctl"),
            OsStr::new("answer"),
            OsStr::new("1"),
            OsStr::new("global"),
            OsStr::new("--entry"),
            OsStr::from_bytes(b"\xff"),
        ])
        .await;
    assert_no_panic("ctl answer --entry <non-UTF-8>", out.code, &out.stderr);
    assert_eq!(out.code, Some(2), "ctl answer --entry <non-UTF-8>: {out:?}");
    assert!(
        !out.stderr.trim().is_empty(),
        "no message for a non-UTF-8 entry: {out:?}"
    );

    app.assert_running();
    app.quit().await;
    assert_no_panic("the app", Some(0), &app.log());
    assert!(
        world.record(&project).is_none(),
        "the discovery file for the non-UTF-8 project was left behind"
    );
}

/// How long after the app starts waiting for a tray host the host comes, in the test of
/// a host that comes a moment after the app (well within the app's grace).
const MOMENT: Duration = Duration::from_secs(1);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tray_host_that_comes_a_moment_after_the_app_gets_the_icon_and_no_warning() {
    let world = AppWorld::new();
    let server = NotificationServer::start(&world.base.join("bus"), "body actions sound").await;
    // Started before the app, so that coming later costs only taking the name: the window
    // is the app's grace less the moment, not less the start of a Python process too.
    let mut watcher = FakeWatcher::ahead(&server.bus.address).await;
    let mut app = world.start_with(&[&world.project], &server.app_env());
    let grace = tray_host_grace(&mut app).await;
    let waiting_since = Instant::now();
    // The panel starting a moment after the app, as at a desktop's login: this pause is
    // the scenario, not a wait for an event.
    tokio::time::sleep(MOMENT).await;
    app.assert_running();
    watcher.come().await;
    eprintln!(
        "the tray host came {:?} after the app said it waits {grace:?} for one",
        waiting_since.elapsed()
    );
    // The app's verdict at the end of its wait: after it no warning can come.
    app.wait_for_log("tray host present").await;
    app.serving(&world, &world.project).await;
    watcher.item_from(&app).await;
    app.assert_running();
    app.quit().await;
    // Counted once the app has exited: over its whole run.
    let warnings = server.ids_titled(NO_TRAY_TITLE).await.len();
    let all = server.notifications().await;
    assert_eq!(
        warnings,
        0,
        "warned of no tray host although one came within the grace: {all:?}; the app's log:\n{}",
        app.log()
    );
    assert!(
        !app.log().contains("without a tray icon"),
        "logged no tray host:\n{}",
        app.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_tray_host_the_warning_comes_once() {
    let world = AppWorld::new();
    let mut server = NotificationServer::start(&world.base.join("bus"), "body actions sound").await;
    let mut app = world.start_with(&[&world.project], &server.app_env());
    app.serving(&world, &world.project).await;
    server.next_notify(&app, NO_TRAY_TITLE).await;
    app.assert_running();
    app.quit().await;
    let warnings = server.ids_titled(NO_TRAY_TITLE).await.len();
    let all = server.notifications().await;
    assert_eq!(warnings, 1, "over the app's whole run: {all:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tray_host_that_comes_after_the_warning_still_gets_the_icon() {
    let world = AppWorld::new();
    let mut server = NotificationServer::start(&world.base.join("bus"), "body actions sound").await;
    let mut app = world.start_with(&[&world.project], &server.app_env());
    app.serving(&world, &world.project).await;
    server.next_notify(&app, NO_TRAY_TITLE).await;
    let mut watcher = FakeWatcher::start(&server.bus.address).await;
    watcher.item_from(&app).await;
    app.assert_running();
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tray_icon_that_cannot_be_created_is_not_fatal() {
    let world = AppWorld::new();
    // tray-icon writes its icon files under $XDG_RUNTIME_DIR/tray-icon: a regular file
    // there makes creating the icon fail.
    std::fs::write(world.runtime.join("tray-icon"), "not a directory").expect("plant a file");
    let mut app = world.start(&[&world.project]);
    app.wait_for_log("cannot create the tray icon").await;
    let port = app.serving(&world, &world.project).await;
    app.wait_for_control().await;

    // Still serving: a real landstrip write is held as a prompt, and ctl lets it through.
    let target = world.outside.join("through.txt");
    let child = world.write(port, &target);
    let pending: serde_json::Value =
        serde_json::from_str(&world.ctl_ok(&["pending", "--wait", "--json"]).await)
            .expect("ctl pending --json");
    let prompt = pending
        .as_array()
        .and_then(|all| all.iter().find(|p| p["path"] == path_str(&target)))
        .unwrap_or_else(|| panic!("the write is not pending: {pending}"));
    let id = prompt["id"].as_u64().expect("a numeric id").to_string();
    world.ctl_ok(&["answer", &id, "once"]).await;
    let done = finish(child).await;
    assert_eq!(
        done.stdout.trim(),
        "ok",
        "{done:?}; the app's log:\n{}",
        app.log()
    );
    assert_eq!(std::fs::read_to_string(&target).expect("written"), "hello");

    app.assert_running();
    app.quit().await;
    assert!(
        world.record(&world.project).is_none(),
        "the discovery file was left behind"
    );
}
