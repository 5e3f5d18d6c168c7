//! The desktop going wrong around the real app binary, with the real landstrip 0.19.2:
//! the tray host (a panel's StatusNotifierWatcher) dying and coming back, and the whole
//! session bus dying and coming back at the same address. Throughout, a real landstrip
//! run's write is held and let through with `ctl answer` over the control socket (which
//! needs no bus), and afterwards the desktop is used again: the icon registers with the
//! new watcher, a new prompt's notification reaches the new bus.
//!
//! Mocked, because they cannot be real here: the panel's watcher (`tests/fake_watcher.py`)
//! and the desktop's notification server (Debian's dbusmock). The session bus is a real
//! `dbus-daemon` of the test's own (not the one `dbus-run-session` gives the suite), so it
//! can be killed without touching anything else.

use std::path::Path;
use std::time::Duration;

use landstrip_tray_tests::notification_server::{wait_owner, NotificationServer, PrivateBus};
use landstrip_tray_tests::real_app::{path_str, AppWorld, RunningApp};
use landstrip_tray_tests::tap::Tap;
use landstrip_tray_tests::tray_host::FakeWatcher;
use landstrip_tray_tests::{finish, PYTHON, WRITE};
use tokio::time::Instant;

/// The StatusNotifierWatcher's name.
const TRAY_WATCHER: &str = "org.kde.StatusNotifierWatcher";

const WITH_ACTIONS: &str = "body actions sound";

const WRITE_TITLE: &str = "Sandbox write blocked";

/// How soon after its query a prompt's notification must reach a bus that came back:
/// the app waits out at most a short back-off after the one failed attempt while the bus
/// was away (`RECONNECT_FIRST` in the app, 1 s), then connects.
const NOTIFY_AGAIN_WITHIN: Duration = Duration::from_secs(10);

/// A real landstrip run writes `name` outside the project; the app holds it as a prompt
/// (none other is pending), `ctl answer ID once` lets it through over the control socket.
async fn a_write_is_answered_through_ctl(world: &AppWorld, app: &mut RunningApp, name: &str) {
    let target = world.outside.join(name);
    let child = world.write(app.port(), &target);
    let pending: serde_json::Value =
        serde_json::from_str(&world.ctl_ok(&["pending", "--wait", "--json"]).await)
            .expect("ctl pending --json");
    let id = pending_id(&pending, &target);
    world.ctl_ok(&["answer", &id, "once"]).await;
    let done = finish(child).await;
    assert_eq!(
        done.stdout.trim(),
        "ok",
        "{name}: {done:?}; the app's log:\n{}",
        app.log()
    );
    assert_eq!(
        std::fs::read_to_string(&target).expect("written"),
        "hello",
        "{name}"
    );
    app.assert_running();
}

/// The id of the pending prompt for `target` in `ctl pending --json`'s answer.
fn pending_id(pending: &serde_json::Value, target: &Path) -> String {
    let prompt = pending
        .as_array()
        .and_then(|all| all.iter().find(|p| p["path"] == path_str(target)))
        .unwrap_or_else(|| panic!("{} is not pending: {pending}", target.display()));
    prompt["id"].as_u64().expect("a numeric id").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tray_host_restarting_gets_the_icon_again_and_serving_never_stops() {
    let world = AppWorld::new();
    let server = NotificationServer::start(&world.base.join("bus"), WITH_ACTIONS).await;
    let mut watcher = FakeWatcher::start(&server.bus.address).await;
    let mut app = world.start_with(&[&world.project], &server.app_env());
    app.serving(&world, &world.project).await;
    app.wait_for_control().await;
    watcher.item_from(&app).await;
    a_write_is_answered_through_ctl(&world, &mut app, "with-the-panel.txt").await;

    // The panel crashes: its name leaves the bus.
    watcher.stop().await;
    wait_owner(&server.conn, TRAY_WATCHER, false).await;
    app.wait_for_log("the tray host left the session bus").await;
    a_write_is_answered_through_ctl(&world, &mut app, "without-the-panel.txt").await;

    // A new panel: the app's icon registers with it, unasked.
    let mut again = FakeWatcher::start(&server.bus.address).await;
    again.item_from(&app).await;
    a_write_is_answered_through_ctl(&world, &mut app, "with-the-new-panel.txt").await;

    app.assert_running();
    app.quit().await;
    assert!(
        !app.log().contains("without a tray icon"),
        "a tray host was there at start, yet the app said there was none:\n{}",
        app.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_bus_dying_and_coming_back_stops_nothing_and_notifications_return() {
    let world = AppWorld::new();
    // A fixed socket path: the new bus listens where the old one did, so the app's
    // DBUS_SESSION_BUS_ADDRESS stays right.
    let socket = world.base.join("session-bus.sock");
    let address = format!("unix:path={}", socket.display());
    let bus_dir = world.base.join("bus");
    let mut server =
        NotificationServer::start_on(PrivateBus::start_at(&bus_dir, &socket).await, WITH_ACTIONS)
            .await;
    // The address without the daemon's guid: the next daemon there has another.
    assert!(
        server.bus.address.starts_with(&address),
        "{}",
        server.bus.address
    );
    let env = [
        ("DBUS_SESSION_BUS_ADDRESS", address.as_str()),
        ("NO_AT_BRIDGE", "1"),
    ];
    // A panel, so the app does not open its settings window for want of one.
    let mut watcher = FakeWatcher::start(&address).await;
    let mut app = world.start_with(&[&world.project], &env);
    app.serving(&world, &world.project).await;
    app.wait_for_control().await;
    watcher.item_from(&app).await;

    // A prompt notified on the first bus, still pending when that bus dies.
    let mut first = Tap::start(app.port()).await;
    let held = world.outside.join("held.txt");
    let first_run = world.launch(first.port, None, &[PYTHON, "-c", WRITE, path_str(&held)]);
    server.next_notify(&app, WRITE_TITLE).await;
    server.notifications().await;

    server.stop_bus().await;
    drop(watcher);
    app.wait_for_log("the session bus connection closed").await;
    app.assert_running();

    // Without any bus: a new prompt is still held and answered over the control socket.
    let lonely = world.outside.join("lonely.txt");
    let lonely_run = world.write(app.port(), &lonely);
    app.wait_for_log("cannot show desktop notifications").await;
    let pending: serde_json::Value =
        serde_json::from_str(&world.ctl_ok(&["pending", "--json"]).await)
            .expect("ctl pending --json");
    let id = pending_id(&pending, &lonely);
    world.ctl_ok(&["answer", &id, "once"]).await;
    let done = finish(lonely_run).await;
    assert_eq!(
        done.stdout.trim(),
        "ok",
        "{done:?}; the app's log:\n{}",
        app.log()
    );
    app.assert_running();

    // A new bus at the same address, a new notification server on it. Another program's
    // notification takes the server's first id, so a stale close of the old bus's ids
    // would hit it.
    let mut server =
        NotificationServer::start_on(PrivateBus::start_at(&bus_dir, &socket).await, WITH_ACTIONS)
            .await;
    let others: u32 = server
        .conn
        .call_method(
            Some("org.freedesktop.Notifications"),
            "/org/freedesktop/Notifications",
            Some("org.freedesktop.Notifications"),
            "Notify",
            &(
                "another-app",
                0u32,
                "",
                "Another program",
                "",
                Vec::<String>::new(),
                std::collections::HashMap::<&str, zbus::Variant<'_>>::new(),
                -1i32,
            ),
        )
        .await
        .expect("Notify from another program")
        .body()
        .deserialize()
        .expect("an id");

    let mut second = Tap::start(app.port()).await;
    let again = world.outside.join("again.txt");
    let second_run = world.launch(second.port, None, &[PYTHON, "-c", WRITE, path_str(&again)]);
    let notify = server.next_notify(&app, WRITE_TITLE).await;
    let notified = Instant::now();
    let queried = second.first_query().await.at;
    let delay = notified.duration_since(queried);
    eprintln!("query -> Notify on the bus that came back: {delay:?}");
    assert!(
        delay <= NOTIFY_AGAIN_WITHIN,
        "the notification came {delay:?} after its query; the app's log:\n{}",
        app.log()
    );
    assert!(
        notify.body.contains(path_str(&again)),
        "body: {:?}",
        notify.body
    );
    assert!(
        app.log().contains("connected to the session bus again"),
        "{}",
        app.log()
    );
    let new_id = *server
        .ids_titled(WRITE_TITLE)
        .await
        .first()
        .expect("the prompt's notification");
    assert_ne!(new_id, others);

    // The prompt from before the bus died is withdrawn: its notification went with the
    // old bus, nothing is closed on the new one. The new prompt's is closed.
    first.cut();
    assert_eq!(finish(first_run).await.stdout.trim(), "EACCES");
    second.cut();
    let closed = server.next_call(&app, "CloseNotification", |_| true).await;
    assert_eq!(closed[0].as_u64(), Some(u64::from(new_id)), "{closed:?}");
    assert_eq!(finish(second_run).await.stdout.trim(), "EACCES");

    app.assert_running();
    app.quit().await;
    // Counted once the app has exited: over its whole run.
    assert_eq!(
        server.closed_ids().await,
        [u64::from(new_id)],
        "only the new prompt's notification was closed on the new bus; the app's log:\n{}",
        app.log()
    );
}

/// The dialog's linger in the warm-window test (`LANDSTRIP_TRAY_DIALOG_LINGER_MS`).
const LINGER: Duration = Duration::from_millis(2000);

/// A run that connects gets the prompt dialog made ready (its webview created and its page
/// loaded, the window not shown: GTK makes no X window for a window never shown, so the
/// app's log is what says it) before it asks anything; once it has gone and nothing is
/// pending, the webview is destroyed after the linger, not before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connected_run_has_the_dialog_window_ready_and_it_goes_after_the_run() {
    use landstrip_tray_tests::x11::{self, DIALOG_TITLE};

    let world = AppWorld::new();
    let linger_ms = LINGER.as_millis().to_string();
    let mut app = world.start_with(
        &[&world.project],
        &[("LANDSTRIP_TRAY_DIALOG_LINGER_MS", &linger_ms)],
    );
    let port = app.serving(&world, &world.project).await;
    app.wait_for_control().await;
    assert!(
        !app.log().contains("dialog page ready"),
        "the dialog's page loaded before any run:\n{}",
        app.log()
    );

    // A real landstrip run that asks nothing (yet): its connection is open while it sleeps.
    let mut run = world.launch(port, None, &["/bin/sleep", "60"]);
    app.wait_for_log("dialog page ready").await;
    assert!(
        x11::windows(app.pid, DIALOG_TITLE, true).await.is_empty(),
        "the ready window is shown although nothing was asked"
    );
    let pending = world.ctl_ok(&["pending", "--json"]).await;
    assert_eq!(pending.trim(), "[]", "nothing was asked: {pending}");

    // The run ends: the webview goes after the linger, not before.
    run.kill().await.expect("end the run");
    let ended = Instant::now();
    app.wait_for_log("destroying its webview").await;
    assert!(
        ended.elapsed() >= LINGER * 3 / 4,
        "destroyed {:?} after the run ended, the linger is {LINGER:?}",
        ended.elapsed()
    );
    app.assert_running();
    app.quit().await;
}
