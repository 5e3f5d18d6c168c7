//! The tray of the real app binary, driven the way a panel drives it: the app registers its
//! StatusNotifierItem with the panel's StatusNotifierWatcher, the test reads the item's
//! icon and its menu (`com.canonical.dbusmenu.GetLayout` on the object its `Menu` property
//! names) and clicks menu items (`Event(id, "clicked", …)`), and checks what each click
//! does with real landstrip 0.19.2 runs: Review brings the prompt window back on the X
//! display, Pause prompts denies what would ask (`ctl status`, the run's own result, the
//! activity log) until Resume, Quit denies what is held and ends the app; the icon is the
//! idle, waiting or paused picture of `icons/` as the state says. (The app shows a state by
//! its picture alone: appindicator's `Status` stays `Active` and `AttentionIconName` empty;
//! `IconName` is the PNG tray-icon writes for each change, compared pixel for pixel.)
//!
//! Mocked, because it cannot be real here: the panel's StatusNotifierWatcher
//! (`tests/fake_watcher.py`; there is no panel under Xvfb; the panel's half, reading and
//! clicking, is this test's own D-Bus calls) and the desktop's notification server
//! (Debian's dbusmock). Run under `xvfb-run -a dbus-run-session --`, after
//! `cargo build -p landstrip-tray`.

use landstrip_tray_tests::finish;
use landstrip_tray_tests::notification_server::NotificationServer;
use landstrip_tray_tests::real_app::{
    assert_refused, assert_written, path_str, AppWorld, RunningApp, EXIT_TIMEOUT,
};
use landstrip_tray_tests::tray_host::{FakeWatcher, MenuEntry, TrayItem, TrayState};
use landstrip_tray_tests::x11::{self, MapEvent, MapWatch, DIALOG_TITLE};
use serde_json::Value;

/// The menu's labels (src-tauri/src/tray_view.rs and src-tauri/src/app/tray.rs), matched
/// as prefixes where the app adds a count or a time.
const REVIEW: &str = "Review ";
const NOTHING_WAITING: &str = "No requests waiting";
const PAUSE: &str = "Pause prompts";
const PAUSE_15M: &str = "For 15 minutes";
const PAUSE_1H: &str = "For 1 hour";
const PAUSE_FOREVER: &str = "Until resumed";
const RESUME: &str = "Resume prompts";
const QUIT: &str = "Quit";
const REMOTES: &str = "Remote machines";
const MANAGE_REMOTES: &str = "Manage remote machines…";
/// The settings window's title (src-tauri/src/app/settings.rs).
const SETTINGS_TITLE: &str = "landstrip-tray settings";

/// The app on a private session bus with a panel's watcher (and a notification server),
/// serving the world's project, and its tray item once the watcher has it. The bus and its
/// services live as long as this does.
struct TrayApp {
    app: RunningApp,
    item: TrayItem,
    _watcher: FakeWatcher,
    _server: NotificationServer,
}

async fn start(world: &AppWorld) -> TrayApp {
    let server = NotificationServer::start(&world.base.join("bus"), "body actions sound").await;
    // The panel is there before the app: it finds a tray host at start.
    let mut watcher = FakeWatcher::start(&server.bus.address).await;
    let mut app = world.start_with(&[&world.project], &server.app_env());
    app.serving(world, &world.project).await;
    app.wait_for_control().await;
    watcher.item_from(&app).await;
    let item = TrayItem::of(&server.bus.address, app.pid).await;
    TrayApp {
        app,
        item,
        _watcher: watcher,
        _server: server,
    }
}

/// `ctl status --json`'s pause state.
async fn pause_state(world: &AppWorld) -> Value {
    let status: Value =
        serde_json::from_str(&world.ctl_ok(&["status", "--json"]).await).expect("status JSON");
    status["pause"].clone()
}

/// The menu is the one for `pending` requests waiting with prompts `paused` or not: the
/// Review item's text and whether it can be clicked, Resume's, and the pause items'.
fn menu_is(menu: &MenuEntry, pending: usize, paused: bool) -> bool {
    let review_ok = match pending {
        0 => menu.find(NOTHING_WAITING).is_some_and(|e| !e.enabled()),
        1 => menu
            .find("Review 1 waiting request…")
            .is_some_and(MenuEntry::enabled),
        n => menu
            .find(&format!("Review {n} waiting requests…"))
            .is_some_and(MenuEntry::enabled),
    };
    let resume = menu.find(RESUME);
    let resume_ok = if paused {
        resume.is_some_and(|e| e.enabled() && e.label().starts_with("Resume prompts (paused, "))
    } else {
        resume.is_some_and(|e| !e.enabled() && e.label() == RESUME)
    };
    let pause_ok = [PAUSE_15M, PAUSE_1H, PAUSE_FOREVER]
        .iter()
        .all(|label| menu.find(label).is_some_and(|e| e.enabled() != paused));
    review_ok && resume_ok && pause_ok
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_icon_and_menu_follow_idle_waiting_and_paused_and_pause_and_resume_work() {
    let world = AppWorld::new();
    let mut tray = start(&world).await;
    let (app, item) = (&mut tray.app, &tray.item);
    let port = app.port();

    // The menu a panel shows: every item, the pause items in their submenu.
    let menu = item.layout().await;
    for label in [
        NOTHING_WAITING,
        PAUSE,
        RESUME,
        "Settings…",
        "Activity…",
        QUIT,
    ] {
        menu.item(label);
    }
    let submenu = menu.item(PAUSE);
    for label in [PAUSE_15M, PAUSE_1H, PAUSE_FOREVER] {
        assert!(
            submenu.children.iter().any(|c| c.label() == label),
            "{label:?} is not in the Pause prompts submenu:\n{menu}"
        );
    }

    // Idle: nothing held.
    item.wait_state(TrayState::Idle, "with nothing held").await;
    item.wait_menu("the idle menu", |m| menu_is(m, 0, false))
        .await;

    // Waiting: a real run's write is held.
    let target = world.outside.join("waiting.txt");
    let (run, id) = world.held_write(port, &target).await;
    item.wait_state(TrayState::Waiting, "with a write held")
        .await;
    item.wait_menu("the menu with 1 request waiting", |m| menu_is(m, 1, false))
        .await;
    world.ctl_ok(&["answer", &id, "once"]).await;
    assert_written(&finish(run).await, &target);
    item.wait_state(TrayState::Idle, "once the write is answered")
        .await;
    item.wait_menu("the menu once the request is answered", |m| {
        menu_is(m, 0, false)
    })
    .await;

    // Pause prompts → Until resumed.
    assert_eq!(pause_state(&world).await["paused"], false);
    item.click_item(PAUSE_FOREVER).await;
    item.wait_state(TrayState::Paused, "after Until resumed")
        .await;
    let menu = item
        .wait_menu("the paused menu", |m| menu_is(m, 0, true))
        .await;
    assert_eq!(
        menu.item(RESUME).label(),
        "Resume prompts (paused, until resumed; 0 denied)",
        "{menu}"
    );
    let state = pause_state(&world).await;
    assert_eq!(
        state["paused"], true,
        "Until resumed did not pause: {state}"
    );
    assert_eq!(state["remaining_secs"], Value::Null, "{state}");

    // A write that would ask is denied at once: the run fails, nothing is held, and the
    // activity says the pause decided it; the menu counts it.
    let target = world.outside.join("while-paused.txt");
    assert_refused(&finish(world.write(port, &target)).await, &target);
    assert_eq!(world.ctl_ok(&["pending"]).await, "No requests waiting.\n");
    let entry = world
        .activity_entry("the paused write", |e| e["subject"] == path_str(&target))
        .await;
    assert_eq!(entry["outcome"], "deny", "{entry}");
    assert_eq!(entry["by"], "paused", "{entry}");
    item.wait_menu("the paused menu counting 1 denied", |m| {
        m.find(RESUME)
            .is_some_and(|e| e.label() == "Resume prompts (paused, until resumed; 1 denied)")
    })
    .await;
    item.wait_state(TrayState::Paused, "after the paused denial")
        .await;

    // Resume: asked again.
    item.click_item(RESUME).await;
    item.wait_state(TrayState::Idle, "after Resume").await;
    item.wait_menu("the menu once resumed", |m| menu_is(m, 0, false))
        .await;
    assert_eq!(pause_state(&world).await["paused"], false);
    let target = world.outside.join("after-resume.txt");
    let (run, id) = world.held_write(port, &target).await;
    item.wait_state(TrayState::Waiting, "with a write held after Resume")
        .await;

    // Paused wins over waiting, and a timed pause says how long: For 15 minutes.
    item.click_item(PAUSE_15M).await;
    item.wait_state(TrayState::Paused, "after For 15 minutes, a write held")
        .await;
    let menu = item
        .wait_menu("the menu paused for 15 minutes", |m| menu_is(m, 1, true))
        .await;
    let resume = menu.item(RESUME).label().to_owned();
    assert!(
        resume.starts_with("Resume prompts (paused, 15 min left; ")
            || resume.starts_with("Resume prompts (paused, 14 min left; "),
        "after For 15 minutes, Resume does not say 15 min left: {resume:?}; the menu:\n{menu}"
    );
    let state = pause_state(&world).await;
    assert_eq!(
        state["paused"], true,
        "For 15 minutes did not pause: {state}"
    );
    let left = state["remaining_secs"].as_u64().expect("a timed pause");
    assert!((800..=900).contains(&left), "15 min paused, {left}s left");
    // The request held before the pause still waits for a person.
    assert!(
        world
            .ctl_ok(&["pending"])
            .await
            .contains("after-resume.txt"),
        "pausing dropped the request already held"
    );
    item.click_item(RESUME).await;
    item.wait_state(TrayState::Waiting, "after Resume, the write still held")
        .await;
    item.wait_menu("the menu resumed with 1 waiting", |m| menu_is(m, 1, false))
        .await;
    assert_eq!(pause_state(&world).await["paused"], false);
    world.ctl_ok(&["answer", &id, "once"]).await;
    assert_written(&finish(run).await, &target);
    item.wait_state(TrayState::Idle, "once the last write is answered")
        .await;

    app.assert_running();
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_shows_the_prompt_again_and_quit_denies_what_is_held_and_exits() {
    let world = AppWorld::new();
    let mut tray = start(&world).await;
    let (app, item) = (&mut tray.app, &tray.item);
    let port = app.port();
    let mut maps = MapWatch::start_for(DIALOG_TITLE, app.pid).await;

    // A held write: its prompt comes on screen by itself.
    let target = world.outside.join("reviewed.txt");
    let (mut run, _id) = world.held_write(port, &target).await;
    let (window, _) = maps
        .next(
            MapEvent::Mapped,
            "the prompt window shown for the held write",
        )
        .await;
    item.wait_menu("Review enabled for the held write", |m| {
        m.find(REVIEW).is_some_and(MenuEntry::enabled)
    })
    .await;

    // Put away without answering (as a window manager iconifies it: unmapped; the test
    // display has none).
    x11::xdotool(&["windowunmap", &window]).await;
    maps.next(MapEvent::Unmapped, "the prompt window unmapped")
        .await;
    assert!(
        x11::windows(app.pid, DIALOG_TITLE, true).await.is_empty(),
        "the prompt window is still on screen"
    );
    assert!(
        run.try_wait().expect("try_wait").is_none(),
        "putting the window away answered the request"
    );

    // Review… brings it back.
    item.click_item(REVIEW).await;
    let (again, _) = maps
        .next(MapEvent::Mapped, "the prompt window shown again by Review")
        .await;
    assert_eq!(again, window, "Review showed another window");
    assert!(
        !x11::windows(app.pid, DIALOG_TITLE, true).await.is_empty(),
        "the prompt window is not on screen after Review"
    );
    assert!(
        run.try_wait().expect("try_wait").is_none(),
        "Review answered the request"
    );

    // Quit: the app ends, and the held write is denied by quitting.
    item.click_item(QUIT).await;
    let status = tokio::time::timeout(EXIT_TIMEOUT, app.exited())
        .await
        .unwrap_or_else(|_| {
            panic!(
                "the app did not exit within {EXIT_TIMEOUT:?} of Quit; its log:\n{}",
                app.log()
            )
        })
        .expect("wait for the app");
    assert_eq!(status.code(), Some(0), "{status}; its log:\n{}", app.log());
    assert_refused(&finish(run).await, &target);
    let entry = world
        .activity_entry("the held write", |e| e["subject"] == path_str(&target))
        .await;
    assert_eq!(entry["outcome"], "deny", "{entry}");
    assert_eq!(entry["by"], "quit", "not denied by quitting: {entry}");
    assert!(
        world.record(&world.project).is_none(),
        "Quit left the discovery file behind"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_remote_machines_submenu_lists_each_remote_and_opens_their_settings() {
    let world = AppWorld::new();
    let tray = start(&world).await;
    let item = &tray.item;
    // No remote: no submenu.
    let menu = item.layout().await;
    assert!(menu.find(REMOTES).is_none(), "{menu}");
    // Two remotes on loopback ports nothing listens on (the real ssh is refused there).
    for name in ["devbox", "buildbox"] {
        let port = landstrip_tray_tests::webdriver::free_port();
        landstrip_tray_tests::sshd::add_unreachable(&world, name, port).await;
    }
    // The submenu is redrawn item by item: waited for until whole, a line for each remote
    // (by name) first and the way to their settings last.
    let menu = item
        .wait_menu("both remotes' lines and Manage in their submenu", |m| {
            m.find(REMOTES).is_some_and(|s| {
                let labels: Vec<&str> = s.children.iter().map(MenuEntry::label).collect();
                labels.len() == 4
                    && labels[0].starts_with("buildbox (127.0.0.1) — unreachable")
                    && labels[1].starts_with("devbox (127.0.0.1) — unreachable")
                    && labels[3] == MANAGE_REMOTES
            })
        })
        .await;
    assert!(menu.item(MANAGE_REMOTES).enabled(), "{menu}");
    // It opens the settings window.
    let mut maps = MapWatch::start_for(SETTINGS_TITLE, tray.app.pid).await;
    item.click_item(MANAGE_REMOTES).await;
    maps.next(
        MapEvent::Mapped,
        "the settings window after Manage remote machines",
    )
    .await;
    // On the Remote machines view (the app says which it opened).
    landstrip_tray_tests::until_some("the log naming the view", || async {
        tray.app
            .log()
            .contains("settings: opening the remotes view")
            .then_some(())
    })
    .await;
    // Removed: the submenu leaves the menu.
    world.ctl_ok(&["remote", "remove", "devbox"]).await;
    world.ctl_ok(&["remote", "remove", "buildbox"]).await;
    item.wait_menu("the menu without remotes", |m| m.find(REMOTES).is_none())
        .await;
}
