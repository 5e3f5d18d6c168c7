//! The app on GNOME Shell 43 (mutter 43), headless, with `GDK_BACKEND=wayland`, and GNOME's
//! own notification server; a real landstrip 0.19.2 run's held write each time.
//!
//! Measured here, and what the app does about it: mutter 43 gives the focus to a window as
//! it is mapped (one without a user time: ours), but refuses it to a window already on
//! screen that asks for it later (it is marked as wanting attention), and GNOME 43's
//! notifications send no activation token (no `ActivationToken` signal). So the prompt
//! takes the focus when it appears over another application's window, and when it is
//! behind one and the person clicks its notification the app maps it again
//! (src-tauri/src/app/dialog/window.rs, `reveal`).
//!
//! Input: a test-only GNOME Shell extension (tests/desktop/gnome-shell/) presses keys and
//! clicks banners through Clutter's virtual input devices (real input events, delivered by
//! mutter as a keyboard's or a mouse's would be) and reports windows and notifications;
//! GNOME 43 has no `Eval`. Nothing is mocked.

use std::time::Duration;

use landstrip_tray_tests::desktop::{
    find_window as window, Desktop, Editor, Options, DIALOG_TITLE, EDITOR_TITLE, SETTINGS_TITLE,
};
use landstrip_tray_tests::real_app::{path_str, AppWorld, RunningApp};
use landstrip_tray_tests::{finish, until_some};
use serde_json::Value;
use tokio::sync::Mutex;

/// One GNOME Shell at a time: two on two cores slow each other past the waits.
static ONE_DESKTOP: Mutex<()> = Mutex::const_new(());

const NOTIFICATION_TITLE: &str = "Sandbox write blocked";

/// The app on `desktop` with the editor focused, the settings window it opens at start
/// (GNOME has no tray host) already come and gone behind the editor.
async fn app_beside_editor(
    desktop: &Desktop,
    world: &AppWorld,
    env: &[(&str, String)],
) -> (RunningApp, Editor) {
    let editor = desktop.start_editor().await;
    let mut app = world.start_on(&[&world.project], env);
    app.serving(world, &world.project).await;
    // Waited for until it has the focus, not only listed: mutter may list a new window
    // before focusing it, and a click on the editor in between would be undone.
    desktop.focused_window(SETTINGS_TITLE).await;
    // The person goes back to work.
    desktop.activate_window(EDITOR_TITLE).await;
    desktop.focused_window(EDITOR_TITLE).await;
    (app, editor)
}

/// GNOME's notification for the request, once the shell holds it.
async fn request_notification(desktop: &Desktop) -> Value {
    until_some("GNOME holds the request's notification", || async {
        desktop
            .notifications()
            .await
            .into_iter()
            .find(|n| n["title"] == NOTIFICATION_TITLE)
    })
    .await
}

/// The user's answer for `target` in the activity log.
async fn answered_by_user(world: &AppWorld, target: &std::path::Path, outcome: &str) {
    let entry = world
        .activity_entry("the person's answer", |e| {
            e["subject"] == path_str(target) && e["outcome"] == outcome
        })
        .await;
    assert_eq!(entry["by"], "user", "{entry}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prompt_comes_over_another_apps_window_with_the_focus_and_a_key_answers_it() {
    let _one = ONE_DESKTOP.lock().await;
    let desktop = Desktop::start(Options::gnome()).await;
    let world = AppWorld::new();
    let (mut app, _editor) = app_beside_editor(&desktop, &world, &desktop.app_env()).await;

    // No tray host on GNOME without the extension: besides the settings window at start,
    // one quiet notice in GNOME's message tray says so.
    let notice = until_some("the no-tray notice is in GNOME's tray", || async {
        desktop
            .notifications()
            .await
            .into_iter()
            .find(|n| n["title"] == "landstrip-tray is running without a tray icon")
    })
    .await;
    assert_eq!(notice["app"], "landstrip-tray.desktop", "{notice}");

    let target = world.outside.join("gnome.txt");
    let mut child = world.ask_write(&target);
    let dialog = desktop.focused_window(DIALOG_TITLE).await;
    // GNOME knows whose windows these are: the desktop entry's name and icon, not a
    // generic "window:N" (the app id is the entry's name, landstrip-tray).
    assert_eq!(
        dialog.desktop_app.as_deref(),
        Some("landstrip-tray.desktop"),
        "{dialog:?}"
    );
    assert_eq!(dialog.app_name.as_deref(), Some("landstrip-tray"));
    let (x, y, w, h) = dialog.rect;
    assert!(
        x >= 0 && y >= 0 && x + w <= 1280 && y + h <= 800,
        "{dialog:?}"
    );
    // With GNOME's banner for the request, as a person sees it.
    desktop.banner_of(NOTIFICATION_TITLE).await;
    desktop
        .keep_screenshot("desktop-gnome-prompt-light.png", &dialog)
        .await;

    let presses = desktop.press_until_done("o", &mut child).await;
    let done = finish(child).await;
    assert_eq!(done.code, Some(0), "{done:?}");
    assert_eq!(std::fs::read_to_string(&target).expect("written"), "hello");
    answered_by_user(&world, &target, "allow").await;
    eprintln!("GNOME: answered with {presses} press(es) of o");
    app.assert_running();
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gnomes_notification_has_the_buttons_and_the_sound_and_its_allow_answers() {
    let _one = ONE_DESKTOP.lock().await;
    let desktop = Desktop::start(Options::gnome()).await;
    let world = AppWorld::new();
    let (mut app, _editor) = app_beside_editor(&desktop, &world, &desktop.app_env()).await;

    let target = world.outside.join("gnome-allow.txt");
    let mut child = world.ask_write(&target);
    let notification = request_notification(&desktop).await;
    assert_eq!(
        notification["actions"],
        serde_json::json!(["Allow once", "Deny", "Allow for 15 min", "Deny for session"]),
        "{notification}"
    );
    assert_eq!(
        notification["soundName"], "dialog-warning",
        "{notification}"
    );
    // Critical: GNOME keeps its banner until it is acted on.
    assert_eq!(notification["urgency"], 3, "{notification}");
    assert!(
        notification["body"]
            .as_str()
            .is_some_and(|b| b.contains("gnome-allow.txt")),
        "{notification}"
    );
    // GNOME shows it as the app's, by the same desktop entry as the windows.
    assert_eq!(
        notification["app"], "landstrip-tray.desktop",
        "{notification}"
    );

    // A real click on the banner's "Allow once" button.
    until_some("the banner's Allow once is clicked", || async {
        desktop
            .click_banner(NOTIFICATION_TITLE, "Allow once")
            .await
            .then_some(())
    })
    .await;
    let done = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("the click answered the request within 20 s")
        .expect("wait for landstrip");
    assert!(done.success(), "{done}; the app's log:\n{}", app.log());
    assert_eq!(std::fs::read_to_string(&target).expect("written"), "hello");
    answered_by_user(&world, &target, "allow").await;
    app.assert_running();
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dismissed_notification_leaves_the_request_to_the_prompt_and_ctl() {
    let _one = ONE_DESKTOP.lock().await;
    // Dark: GNOME's colour scheme, and the app's GTK theme (no settings portal runs here
    // for the app to follow the scheme through).
    let desktop = Desktop::start(Options {
        dark: true,
        ..Options::gnome()
    })
    .await;
    let world = AppWorld::new();
    let mut env = desktop.app_env();
    env.push(("GTK_THEME", "Adwaita:dark".to_owned()));
    let (mut app, _editor) = app_beside_editor(&desktop, &world, &env).await;

    let target = world.outside.join("gnome-dismissed.txt");
    let child = world.ask_write(&target);
    request_notification(&desktop).await;
    let dialog = desktop.focused_window(DIALOG_TITLE).await;
    desktop.banner_of(NOTIFICATION_TITLE).await;
    desktop
        .keep_screenshot("desktop-gnome-prompt-dark.png", &dialog)
        .await;
    assert!(
        desktop.dismiss(NOTIFICATION_TITLE).await,
        "nothing to dismiss"
    );
    app.wait_for_log("its notification closed: the prompt still waits")
        .await;
    // Still held, still on screen, still answerable.
    let pending = world.ctl_ok(&["pending", "--json"]).await;
    let items: Value = serde_json::from_str(&pending).expect("ctl pending --json");
    let item = items
        .as_array()
        .and_then(|all| all.iter().find(|i| i["path"] == path_str(&target)))
        .unwrap_or_else(|| panic!("the dismissed request is not pending: {items}"));
    assert!(
        window(&desktop.windows().await, DIALOG_TITLE).is_some(),
        "the prompt went with the notification"
    );
    let id = item["id"].as_u64().expect("an id").to_string();
    world.ctl_ok(&["answer", &id, "once"]).await;
    let done = finish(child).await;
    assert_eq!(done.code, Some(0), "{done:?}");
    assert_eq!(std::fs::read_to_string(&target).expect("written"), "hello");
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_on_the_notification_brings_a_prompt_left_behind_back_with_the_focus() {
    let _one = ONE_DESKTOP.lock().await;
    let desktop = Desktop::start(Options::gnome()).await;
    let world = AppWorld::new();
    let (mut app, _editor) = app_beside_editor(&desktop, &world, &desktop.app_env()).await;

    let target = world.outside.join("gnome-review.txt");
    let mut child = world.ask_write(&target);
    desktop.focused_window(DIALOG_TITLE).await;
    request_notification(&desktop).await;
    // The person clicks back into the editor: the prompt loses the focus (it stays above,
    // but keys go to the editor).
    desktop.activate_window(EDITOR_TITLE).await;
    desktop.focused_window(EDITOR_TITLE).await;
    // A real click on the banner itself (its default action, "Review…").
    until_some("the banner is clicked", || async {
        desktop
            .click_banner(NOTIFICATION_TITLE, "")
            .await
            .then_some(())
    })
    .await;
    desktop.focused_window(DIALOG_TITLE).await;
    desktop.press_until_done("o", &mut child).await;
    assert_eq!(finish(child).await.code, Some(0));
    assert_eq!(std::fs::read_to_string(&target).expect("written"), "hello");
    answered_by_user(&world, &target, "allow").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_appindicator_extension_the_icon_shows_and_no_window_opens_at_start() {
    let _one = ONE_DESKTOP.lock().await;
    let desktop = Desktop::start(Options {
        appindicator: true,
        ..Options::gnome()
    })
    .await;
    let world = AppWorld::new();
    let mut app = world.start_on(&[&world.project], &desktop.app_env());
    app.serving(&world, &world.project).await;
    // The extension's StatusNotifierWatcher lists the app's item.
    let items = until_some("the app's item is registered", || async {
        let conn = zbus::connection::Builder::address(desktop.bus.as_str())
            .build()
            .await
            .ok()?;
        let proxy = zbus::Proxy::new(
            &conn,
            "org.kde.StatusNotifierWatcher",
            "/StatusNotifierWatcher",
            "org.kde.StatusNotifierWatcher",
        )
        .await
        .ok()?;
        let items: Vec<String> = proxy
            .get_property("RegisteredStatusNotifierItems")
            .await
            .ok()?;
        (!items.is_empty()).then_some(items)
    })
    .await;
    assert_eq!(items.len(), 1, "{items:?}");
    // The start decided there is a tray host (the no-host branch logs "no tray host" and
    // opens the settings window).
    app.wait_for_log("tray host present").await;
    assert!(!app.log().contains("no tray host"), "{}", app.log());
    let windows = desktop.windows().await;
    assert!(
        window(&windows, SETTINGS_TITLE).is_none(),
        "the settings window opened although there is a tray icon: {windows:?}"
    );
    app.quit().await;
}
