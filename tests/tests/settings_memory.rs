//! The settings window gives its memory back: the real app binary (no WebDriver: under
//! automation the app keeps a hidden prompt webview for the driver, so a webview always
//! exists) on the test's X display. Closed, the window is hidden, then destroyed after the
//! app's linger; with no webview left, WebKit's network process (which WebKit itself keeps
//! for the app's life) is ended, and the next open starts a new one and a working page.
//! Nothing is mocked; no tray host is needed (the window is asked for on the control
//! socket, as `ctl settings` does).

use std::time::Duration;

use landstrip_tray_core::surfaces::control::Client;
use landstrip_tray_tests::memory::pss_by_process;
use landstrip_tray_tests::real_app::{AppWorld, RunningApp};
use landstrip_tray_tests::settings_window::open_request;
use landstrip_tray_tests::{x11, EVENT_TIMEOUT};
use tokio::time::Instant;

/// The settings window's title (src-tauri/src/app/settings.rs).
const SETTINGS_TITLE: &str = "landstrip-tray settings";

/// WebKit's network process as /proc names it.
const NETWORK: &str = "WebKitNetworkPr";

/// What the app logs when the settings page ran its first command.
const PAGE_STARTED: &str = "settings page started";

/// The app's processes of that name (its own children and theirs).
fn processes(app: &RunningApp, name: &str) -> usize {
    pss_by_process(app.pid)
        .iter()
        .filter(|p| p.name == name)
        .count()
}

/// Waits (bounded) until `done` holds, naming `what` if it never does.
async fn until(app: &RunningApp, what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + EVENT_TIMEOUT;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "{what}: not within {EVENT_TIMEOUT:?}; log:\n{}",
            app.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn request_settings(world: &AppWorld) {
    let mut client = Client::connect(&world.control_socket())
        .await
        .expect("connect to the control socket");
    client
        .request(&open_request(world, "projects"))
        .await
        .expect("OpenSettings");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_window_left_webkits_network_process_ends_and_the_next_open_works() {
    let world = AppWorld::new();
    let mut app = world.start_with(
        &[&world.project],
        &[("LANDSTRIP_TRAY_SETTINGS_LINGER_MS", "500")],
    );
    app.wait_for_control().await;
    // With no tray host the app opens the settings window by itself once, after a grace
    // (src-tauri/src/app/notifications.rs): that has happened before the test goes on.
    until(&app, "the app's no-tray-host start", || {
        app.log().contains("running without a tray icon")
    })
    .await;
    request_settings(&world).await;
    let shown = x11::wait_windows(
        app.pid,
        SETTINGS_TITLE,
        true,
        EVENT_TIMEOUT,
        "the settings window shown",
        |w| w.len() == 1,
        || app.log(),
    )
    .await;
    until(&app, "the page started", || {
        app.log().matches(PAGE_STARTED).count() == 1
    })
    .await;
    assert_eq!(processes(&app, NETWORK), 1, "{:?}", pss_by_process(app.pid));

    x11::request_close(&shown[0]).await;
    x11::wait_windows(
        app.pid,
        SETTINGS_TITLE,
        false,
        EVENT_TIMEOUT,
        "the hidden settings window destroyed",
        |w| w.is_empty(),
        || app.log(),
    )
    .await;
    until(&app, "WebKit's network process ended", || {
        processes(&app, NETWORK) == 0
    })
    .await;
    app.assert_running();

    // WebKit starts a new network process for the next webview, and the page works.
    request_settings(&world).await;
    x11::wait_windows(
        app.pid,
        SETTINGS_TITLE,
        true,
        EVENT_TIMEOUT,
        "the settings window shown again",
        |w| w.len() == 1,
        || app.log(),
    )
    .await;
    until(&app, "the new page started", || {
        app.log().matches(PAGE_STARTED).count() == 2
    })
    .await;
    assert_eq!(processes(&app, NETWORK), 1, "{:?}", pss_by_process(app.pid));
    app.quit().await;
}
