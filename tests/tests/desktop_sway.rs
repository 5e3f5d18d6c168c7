//! The app on sway 1.7 (wlroots), headless, with `GDK_BACKEND=wayland`: a real landstrip
//! 0.19.2 run's held write brings the prompt up floating over the window a person works in
//! (another application's), with keyboard focus; a real key press (`wtype`, the virtual
//! keyboard protocol) answers it and the write happens. The settings window, opened at
//! start because sway has no tray host here, tiles beside that window. At scale 2 both fit
//! the screen. Nothing is mocked (tests/src/desktop.rs).

use landstrip_tray_tests::desktop::{
    find_window as window, Desktop, Options, Window, DIALOG_TITLE, EDITOR_TITLE, SETTINGS_TITLE,
};
use landstrip_tray_tests::real_app::{path_str, AppWorld};
use landstrip_tray_tests::{finish, until_some};
use tokio::sync::Mutex;

/// One compositor at a time: two on two cores slow each other past the waits.
static ONE_DESKTOP: Mutex<()> = Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prompt_floats_over_the_focused_window_takes_focus_and_a_key_answers_it() {
    let _one = ONE_DESKTOP.lock().await;
    let desktop = Desktop::start(Options::sway()).await;
    let _editor = desktop.start_editor().await;
    let world = AppWorld::new();
    let mut app = world.start_on(&[&world.project], &desktop.app_env());
    let _port = app.serving(&world, &world.project).await;
    // No tray host on this bus: the settings window opens at start, and sway tiles it
    // beside the editor (neither floats, neither covers the other).
    let windows = until_some("the settings window is on screen", || async {
        let all = desktop.windows().await;
        window(&all, SETTINGS_TITLE).is_some().then_some(all)
    })
    .await;
    let settings = window(&windows, SETTINGS_TITLE).expect("settings");
    let editor = window(&windows, EDITOR_TITLE).expect("editor");
    assert!(!settings.floating && !editor.floating, "{windows:#?}");
    assert_eq!(
        settings.app_id.as_deref(),
        Some("landstrip-tray"),
        "{windows:#?}"
    );
    let (sx, _, sw, _) = settings.rect;
    let (ex, _, ew, _) = editor.rect;
    assert!(
        sx >= ex + ew || ex >= sx + sw,
        "overlapping tiles: {windows:#?}"
    );

    // The person is back in the editor when the request comes.
    let target = world.outside.join("sway.txt");
    let mut child = world.ask_write(&target);
    let dialog = until_some("the prompt is focused", || async {
        let all = desktop.windows().await;
        window(&all, DIALOG_TITLE).filter(|d| d.focused).cloned()
    })
    .await;
    assert!(dialog.floating, "the prompt tiles: {dialog:?}");
    assert_eq!(dialog.app_id.as_deref(), Some("landstrip-tray"));
    let (x, y, w, h) = dialog.rect;
    assert!(
        x >= 0 && y >= 0 && x + w <= 1280 && y + h <= 800,
        "{dialog:?}"
    );
    desktop
        .keep_screenshot("desktop-sway-prompt.png", &dialog)
        .await;

    let presses = desktop.press_until_done("o", &mut child).await;
    let done = finish(child).await;
    assert_eq!(done.code, Some(0), "{done:?}");
    assert_eq!(
        std::fs::read_to_string(&target).expect("the write went through"),
        "hello"
    );
    let entry = world
        .activity_entry("the dialog's answer", |e| {
            e["subject"] == path_str(&target) && e["outcome"] == "allow"
        })
        .await;
    assert_eq!(entry["by"], "user", "{entry}");
    eprintln!("sway: answered with {presses} press(es) of o");
    app.assert_running();
    app.quit().await;
}

/// Every window in `windows` lies within the logical screen `size`.
fn assert_fits(windows: &[Window], size: (i64, i64)) {
    for w in windows {
        let (x, y, width, height) = w.rect;
        assert!(
            x >= 0 && y >= 0 && x + width <= size.0 && y + height <= size.1,
            "{} does not fit in {size:?}: {w:?}",
            w.title
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_scale_2_the_prompt_and_the_settings_window_fit_the_screen() {
    let _one = ONE_DESKTOP.lock().await;
    let desktop = Desktop::start(Options {
        size: (2560, 1600),
        scale: 2,
        ..Options::sway()
    })
    .await;
    let world = AppWorld::new();
    let mut app = world.start_on(&[&world.project], &desktop.app_env());
    let _port = app.serving(&world, &world.project).await;
    // At once, before the settings window the start without a tray host opens (4 s on).
    let target = world.outside.join("hidpi.txt");
    let mut child = world.ask_write(&target);
    let windows = until_some("the prompt is focused", || async {
        let all = desktop.windows().await;
        window(&all, DIALOG_TITLE)
            .is_some_and(|d| d.focused)
            .then_some(all)
    })
    .await;
    // sway's rects are logical: 2560×1600 at scale 2 is 1280×800.
    assert_fits(&windows, (1280, 800));
    let dialog = window(&windows, DIALOG_TITLE).expect("dialog");
    // Its logical size is the one it has at scale 1 (520×620 and a border), not twice it.
    assert!(dialog.rect.2 < 600 && dialog.rect.3 < 700, "{dialog:?}");
    // The picture is taken at the output's full resolution: that is where crispness shows.
    desktop
        .keep_screenshot("desktop-sway-hidpi.png", dialog)
        .await;
    // The settings window opened at start does not come over the waiting prompt (nor take
    // its keys): it opens once the prompt is answered.
    app.wait_for_log("a prompt is on screen: the settings window opens once it hides")
        .await;
    assert!(
        window(&desktop.windows().await, SETTINGS_TITLE).is_none(),
        "the settings window opened over a waiting prompt"
    );
    desktop.press_until_done("o", &mut child).await;
    assert_eq!(finish(child).await.code, Some(0));
    let windows = until_some("the settings window opens after the answer", || async {
        let all = desktop.windows().await;
        window(&all, SETTINGS_TITLE).is_some().then_some(all)
    })
    .await;
    assert_fits(&windows, (1280, 800));
    app.quit().await;
}
