//! The app's own settings, end to end: the settings window's General view and `ctl config`
//! against the real app binary under Xvfb (WebDriver through tauri-driver), real landstrip
//! 0.19.2 runs, the real settings file on disk, and notifications recorded by the
//! freedesktop mock on a private bus (tests/src/notification_server.rs). Also "open in
//! editor" for a policy file that does not parse, and the folder pickers: the real GTK file
//! chooser (tauri-plugin-dialog) on the test's X display, driven with keys sent through
//! XTest (xdotool: focus, Ctrl+L, the path, Enter).
//!
//! Mocked, because it cannot be real here: the notification server (no desktop under Xvfb)
//! and `xdg-open` (no desktop editor can run here; a script first on the app's PATH records
//! what it was asked to open).

use std::path::Path;
use std::time::Duration;

use fantoccini::key::Key;
use landstrip_tray_tests::notification_server::{NotificationServer, Notify};
use landstrip_tray_tests::real_app::{path_str, AppWorld};
use landstrip_tray_tests::settings_window::open_settings;
use landstrip_tray_tests::webdriver::Session;
use landstrip_tray_tests::x11;
use landstrip_tray_tests::{finish, EVENT_TIMEOUT};
use serde_json::{json, Value};
use tokio::time::Instant;

/// The test display is shared by this file's tests, and keys sent through XTest go to
/// whichever window has the X focus: a window another test's app maps and focuses (its
/// settings window, its prompt dialog) would take the file chooser's keys (an Enter there
/// denies a prompt). So the test that types into the chooser runs alone (`write`); the
/// others only keep out of its way (`read`).
static DISPLAY: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// A prompt notification's title for a write.
const WRITE_TITLE: &str = "Sandbox write blocked";

/// The settings file as JSON (null while there is none).
fn settings(world: &AppWorld) -> Value {
    std::fs::read_to_string(world.settings_file())
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null)
}

/// Waits (bounded) until `check` holds for the settings file.
async fn until_settings(world: &AppWorld, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + EVENT_TIMEOUT;
    loop {
        let now = settings(world);
        if check(&now) {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not in the settings file within {EVENT_TIMEOUT:?}: {now}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits (bounded) until the element at `css` has text for which `check` holds.
async fn until_text(session: &Session, css: &str, check: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + EVENT_TIMEOUT;
    loop {
        let text = session.text(css).await;
        if check(&text) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{css}: text not as awaited within {EVENT_TIMEOUT:?}: {text:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Types `text` and Enter into the prompt-timeout box, replacing what it held.
async fn type_timeout(session: &Session, text: &str) {
    let input = session.wait_css("#general-timeout").await;
    session
        .bounded("clear the timeout box", input.clear())
        .await;
    let input = session.wait_css("#general-timeout").await;
    session
        .bounded(
            "type the timeout",
            input.send_keys(&format!("{text}{}", char::from(Key::Enter))),
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_set_in_the_general_view_denies_an_unanswered_real_write_once_and_persists_nothing(
) {
    let _display = DISPLAY.read().await;
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    open_settings(&world, &session, "general").await;
    assert_eq!(
        session.prop("#general-timeout", "value").await.as_deref(),
        Some(""),
        "off by default"
    );

    // Out of range: said next to the box, nothing written.
    let before = std::fs::read(world.settings_file()).ok();
    type_timeout(&session, "2").await;
    let error = until_text(&session, "#general-timeout-error", |t| !t.is_empty()).await;
    assert!(error.contains("5 to 3600 seconds"), "{error}");
    assert_eq!(
        std::fs::read(world.settings_file()).ok(),
        before,
        "a refused timeout writes nothing"
    );

    type_timeout(&session, "5").await;
    until_settings(&world, "promptTimeoutSecs 5", |s| {
        s["promptTimeoutSecs"] == json!(5)
    })
    .await;
    let status = until_text(&session, "#status", |t| t.contains("prompt timeout: 5 s")).await;
    assert!(
        status.contains(path_str(&world.settings_file())),
        "the page says which file it wrote: {status}"
    );
    assert_eq!(session.text("#general-timeout-error").await, "");

    // A real held write that nobody answers: denied once the timeout fires, not before, with
    // no restart in between.
    let target = world.outside.join("timed-out.txt");
    let started = Instant::now();
    let done = finish(world.write(session.port(&world), &target)).await;
    assert_eq!(done.code, Some(13), "denied: {done:?}");
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");
    assert!(
        started.elapsed() >= Duration::from_secs(5),
        "denied after {:?}, before the 5 s timeout",
        started.elapsed()
    );
    assert!(!target.exists(), "the denied write happened");
    let entry = world
        .activity_entry("the timeout's denial", |e| {
            e["subject"] == json!(path_str(&target))
        })
        .await;
    assert_eq!(
        (&entry["outcome"], &entry["by"]),
        (&json!("deny"), &json!("timeout")),
        "{entry}"
    );
    // Denied once: nothing persisted anywhere, no grant.
    assert!(
        !world.project_policy().exists(),
        "project sandbox.json written"
    );
    assert!(
        !world.global_policy().exists(),
        "global sandbox.json written"
    );
    let grants: Value =
        serde_json::from_str(&world.ctl_ok(&["grants", "--json"]).await).expect("grants JSON");
    assert_eq!(grants, json!([]));

    // Off again: the box emptied saves off.
    type_timeout(&session, "").await;
    until_settings(&world, "the timeout off", |s| {
        s.get("promptTimeoutSecs").is_none_or(Value::is_null)
    })
    .await;
    until_text(&session, "#status", |t| t.contains("prompt timeout: off")).await;
    session.finish().await;
}

/// Answers every pending prompt with deny over ctl (so a run held by a prompt ends).
async fn deny_pending(world: &AppWorld) {
    let pending: Value =
        serde_json::from_str(&world.ctl_ok(&["pending", "--json"]).await).expect("pending JSON");
    for item in pending.as_array().expect("a list") {
        let id = item["id"].to_string();
        world.ctl_ok(&["answer", &id, "deny"]).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switching_the_sound_off_in_the_general_view_silences_the_next_prompt_notification() {
    let _display = DISPLAY.read().await;
    let world = AppWorld::new();
    let mut server = NotificationServer::start(&world.base.join("bus"), "body actions sound").await;
    let session = Session::start(&world, &server.app_env()).await;
    open_settings(&world, &session, "general").await;
    let log = || session.log();

    // On (the default): the prompt's notification asks for its sound.
    let first = world.write(session.port(&world), &world.outside.join("loud.txt"));
    let args = server
        .next_call_logged(log, "Notify", |a| a.get(3) == Some(&json!(WRITE_TITLE)))
        .await;
    let hints = Notify::parse(&args).hints;
    assert_eq!(
        hints.get("sound-name"),
        Some(&json!("dialog-warning")),
        "{hints:?}"
    );
    deny_pending(&world).await;
    finish(first).await;

    // Off in the UI: written, then the next prompt's notification has no sound.
    let sound = session.wait_css("#general-sound").await;
    assert_eq!(
        session
            .bounded("the sound box", sound.prop("checked"))
            .await
            .as_deref(),
        Some("true")
    );
    session.bounded("uncheck the sound", sound.click()).await;
    until_settings(&world, "notificationSound false", |s| {
        s["notificationSound"] == json!(false)
    })
    .await;
    until_text(&session, "#status", |t| {
        t.contains("notification sound: off")
    })
    .await;

    let second = world.write(session.port(&world), &world.outside.join("quiet.txt"));
    let args = server
        .next_call_logged(log, "Notify", |a| {
            a.get(3) == Some(&json!(WRITE_TITLE))
                && a[4].as_str().is_some_and(|b| b.contains("quiet.txt"))
        })
        .await;
    let hints = Notify::parse(&args).hints;
    assert_eq!(hints.get("sound-name"), None, "{hints:?}");
    assert_eq!(hints.get("suppress-sound"), Some(&json!(true)), "{hints:?}");
    deny_pending(&world).await;
    finish(second).await;

    // And on again: the sound is back for the next one.
    let sound = session.wait_css("#general-sound").await;
    session.bounded("check the sound", sound.click()).await;
    until_settings(&world, "notificationSound true", |s| {
        s["notificationSound"] == json!(true)
    })
    .await;
    let third = world.write(session.port(&world), &world.outside.join("loud-again.txt"));
    let args = server
        .next_call_logged(log, "Notify", |a| {
            a.get(3) == Some(&json!(WRITE_TITLE))
                && a[4].as_str().is_some_and(|b| b.contains("loud-again.txt"))
        })
        .await;
    let hints = Notify::parse(&args).hints;
    assert_eq!(
        hints.get("sound-name"),
        Some(&json!("dialog-warning")),
        "{hints:?}"
    );
    deny_pending(&world).await;
    finish(third).await;

    // The summaries box writes its own field, and leaves the sound as it is.
    let summaries = session.wait_css("#general-summaries").await;
    session
        .bounded("uncheck the summaries", summaries.click())
        .await;
    let saved = until_settings(&world, "summarizeDenials false", |s| {
        s["summarizeDenials"] == json!(false)
    })
    .await;
    assert_eq!(saved["notificationSound"], json!(true), "{saved}");
    until_text(&session, "#status", |t| {
        t.contains("quiet denial summaries: off")
    })
    .await;
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_config_shows_and_sets_the_settings_and_refuses_bad_values_writing_nothing() {
    let _display = DISPLAY.read().await;
    let world = AppWorld::new();
    // A field a newer version wrote survives every change.
    world.write_settings(&json!({"projects": [], "future": {"x": 1}}));
    let mut app = world.start(&[&world.project]);
    app.wait_for_control().await;

    let shown = world.ctl_ok(&["config"]).await;
    assert!(
        shown.contains("promptTimeout") && shown.contains("off"),
        "{shown}"
    );
    assert!(shown.contains("notificationSound  true"), "{shown}");
    assert!(shown.contains("summarizeDenials   true"), "{shown}");

    let said = world
        .ctl_ok(&["config", "set", "promptTimeout", "30"])
        .await;
    assert!(said.contains("prompt timeout: 30 s"), "{said}");
    assert!(said.contains(path_str(&world.settings_file())), "{said}");
    world
        .ctl_ok(&["config", "set", "notificationSound", "false"])
        .await;
    world
        .ctl_ok(&["config", "set", "summarizeDenials", "false"])
        .await;
    let on_disk = settings(&world);
    assert_eq!(on_disk["promptTimeoutSecs"], json!(30), "{on_disk}");
    assert_eq!(on_disk["notificationSound"], json!(false), "{on_disk}");
    assert_eq!(on_disk["summarizeDenials"], json!(false), "{on_disk}");
    assert_eq!(on_disk["future"], json!({"x": 1}), "{on_disk}");

    let json: Value =
        serde_json::from_str(&world.ctl_ok(&["config", "--json"]).await).expect("config JSON");
    assert_eq!(json["promptTimeoutSecs"], json!(30), "{json}");
    assert_eq!(json["notificationSound"], json!(false), "{json}");
    assert_eq!(json["summarizeDenials"], json!(false), "{json}");
    assert_eq!(
        json["file"],
        json!(path_str(&world.settings_file())),
        "{json}"
    );

    // Refusals: a non-zero exit, the reason on stderr, the file's bytes unchanged.
    let bytes = std::fs::read(world.settings_file()).expect("settings file");
    for (args, code, says) in [
        (
            &["config", "set", "promptTimeout", "2"][..],
            1,
            "5 to 3600 seconds",
        ),
        (
            &["config", "set", "promptTimeout", "86400"],
            1,
            "5 to 3600 seconds",
        ),
        (
            &["config", "set", "promptTimeout", "soon"],
            2,
            "not a prompt timeout",
        ),
        (
            &["config", "set", "notificationSound", "maybe"],
            2,
            "true or false",
        ),
        (&["config", "set", "frob", "1"], 2, "not a setting"),
    ] {
        let out = world.ctl(args).await;
        assert_eq!(out.code, Some(code), "{args:?}: {out:?}");
        assert!(out.stderr.contains(says), "{args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{args:?}: {out:?}");
        assert_eq!(
            std::fs::read(world.settings_file()).expect("settings file"),
            bytes,
            "{args:?} wrote the settings file"
        );
    }

    world
        .ctl_ok(&["config", "set", "promptTimeout", "off"])
        .await;
    assert!(
        settings(&world).get("promptTimeoutSecs").is_none(),
        "{}",
        settings(&world)
    );
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_in_editor_hands_the_broken_file_to_xdg_open_and_leaves_its_bytes() {
    let _display = DISPLAY.read().await;
    let world = AppWorld::new();
    // No desktop editor can run here: this xdg-open, first on the app's PATH, only records
    // the arguments it was given (written to a temporary name, then renamed: the test never
    // reads half a record).
    let bin = world.base.join("bin");
    std::fs::create_dir(&bin).expect("mkdir bin");
    let record = world.base.join("xdg-open.args");
    let script = format!(
        "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > '{0}.tmp' && mv '{0}.tmp' '{0}'\n",
        path_str(&record)
    );
    let fake = bin.join("xdg-open");
    std::fs::write(&fake, script).expect("write the fake xdg-open");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let path = format!(
        "{}:{}",
        path_str(&bin),
        std::env::var("PATH").unwrap_or_default()
    );

    let broken = b"{\n  \"filesystem\": {\"allowWrite\": [\"a\",,]}\n}\n".to_vec();
    std::fs::create_dir_all(world.project.join(".opencode")).expect("mkdir");
    std::fs::write(world.project_policy(), &broken).expect("write");
    let session = Session::start(&world, &[("PATH", &path)]).await;
    open_settings(&world, &session, "policy").await;

    session
        .click("section[data-file='project'][data-state='invalid'] button[data-action='open-in-editor']")
        .await;
    let recorded = until_file_appears(&record).await;
    assert_eq!(
        recorded,
        format!("{}\n", path_str(&world.project_policy())),
        "xdg-open got exactly the broken file"
    );
    let status = until_text(&session, "#status", |t| t.contains("editor")).await;
    assert!(
        status.contains(path_str(&world.project_policy())),
        "{status}"
    );
    assert_eq!(
        std::fs::read(world.project_policy()).expect("read"),
        broken,
        "the broken file's bytes are unchanged"
    );
    session.finish().await;
}

/// The file's text once it exists (bounded).
async fn until_file_appears(file: &Path) -> String {
    let deadline = Instant::now() + EVENT_TIMEOUT;
    loop {
        if let Ok(text) = std::fs::read_to_string(file) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{} did not appear within {EVENT_TIMEOUT:?}",
            file.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The file chooser's title (ui/settings/text.js, `picker.title`).
const CHOOSER_TITLE: &str = "Choose a folder";

/// Drives the real GTK file chooser the page opened: waits for its window, focuses it,
/// opens its location entry (Ctrl+L), types `folder` and presses Enter, through XTest
/// (xdotool).
async fn choose_folder(session: &Session, folder: &Path) {
    let pid = session.app_pid.expect("app pid");
    let chooser = x11::wait_windows(
        pid,
        CHOOSER_TITLE,
        true,
        EVENT_TIMEOUT,
        "the file chooser is shown",
        |w| !w.is_empty(),
        || session.log(),
    )
    .await;
    let window = chooser[0].as_str();
    x11::xdotool(&["windowfocus", "--sync", window]).await;
    x11::xdotool(&["key", "--clearmodifiers", "ctrl+l"]).await;
    x11::xdotool(&["type", "--delay", "30", path_str(folder)]).await;
    x11::xdotool(&["key", "Return"]).await;
    x11::wait_windows(
        pid,
        CHOOSER_TITLE,
        true,
        EVENT_TIMEOUT,
        "the file chooser is closed",
        |w| w.is_empty(),
        || session.log(),
    )
    .await;
}

/// Waits (bounded) until the input at `css` holds `want`.
async fn until_value(session: &Session, css: &str, want: &str) {
    let deadline = Instant::now() + EVENT_TIMEOUT;
    loop {
        let input = session.wait_css(css).await;
        let value = session.bounded("read the input", input.prop("value")).await;
        if value.as_deref() == Some(want) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{css}: {value:?}, not {want:?}, within {EVENT_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_picked_in_the_file_chooser_goes_into_the_input_and_is_saved_only_by_add() {
    let _alone = DISPLAY.write().await;
    let world = AppWorld::new();
    let folder = world.project.join("build/out");
    std::fs::create_dir_all(&folder).expect("mkdir build/out");
    let session = Session::start(&world, &[]).await;
    open_settings(&world, &session, "policy").await;

    let list = "section[data-file='project'] [data-list='filesystem.allowWrite']";
    session
        .click(&format!("{list} button[data-action='browse']"))
        .await;
    choose_folder(&session, &folder).await;
    // Inside the project: written relative to it, and only put into the box.
    let input = format!("{list} input[data-key]");
    until_value(&session, &input, "build/out").await;
    assert!(
        !world.project_policy().exists(),
        "picking saved something before Add"
    );
    let typed = session.wait_css(&input).await;
    session
        .bounded(
            "press Enter in the box",
            typed.send_keys(&char::from(Key::Enter).to_string()),
        )
        .await;
    let text = landstrip_tray_tests::settings_window::until_file(&world, "the picked entry", |t| {
        landstrip_tray_tests::settings_window::list(t, "filesystem.allowWrite")
            .contains(&"build/out".to_owned())
    })
    .await;
    landstrip_tray_tests::settings_window::project_file_valid(&world);
    assert!(text.contains("build/out"), "{text}");

    // The Projects view's picker gives the full path (a project is served by it).
    let other = world.home.join("code/other");
    std::fs::create_dir_all(&other).expect("mkdir code/other");
    open_settings(&world, &session, "projects").await;
    session.click(".add-row button[data-action='browse']").await;
    choose_folder(&session, &other).await;
    until_value(&session, "#project-add", path_str(&other)).await;
    let saved = settings(&world);
    assert!(
        !saved.to_string().contains(path_str(&other)),
        "picking a project served it before Serve: {saved}"
    );
    session.finish().await;
}

/// The General view's "Start at login" switch, clicked as a person would: on writes the
/// autostart entry (the same one `ctl config set autostart` writes, through the same
/// operation), off removes it, and the switch shows what is on disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_start_at_login_switch_writes_and_removes_the_autostart_entry() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    open_settings(&world, &session, "general").await;
    let entry = world.base.join("config/autostart/landstrip-tray.desktop");
    assert!(!entry.exists(), "an entry before the switch was used");
    assert_eq!(
        session
            .prop("#general-autostart", "checked")
            .await
            .as_deref(),
        Some("false")
    );

    session.click("#general-autostart").await;
    let text = until_file_appears(&entry).await;
    assert!(text.contains("\nExec="), "{text}");
    landstrip_tray_tests::desktop_file_validate(&entry);
    let on = world.ctl_ok(&["config"]).await;
    assert!(
        on.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()[..] == ["autostart", "true"]),
        "{on}"
    );

    session.click("#general-autostart").await;
    let deadline = Instant::now() + EVENT_TIMEOUT;
    while entry.exists() {
        assert!(
            Instant::now() < deadline,
            "the entry is still there {EVENT_TIMEOUT:?} after the switch went off"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        session
            .prop("#general-autostart", "checked")
            .await
            .as_deref(),
        Some("false")
    );
    session.finish().await;
}

/// The General view's after-a-secret box (README "After a secret"), clicked as a person
/// would: checked writes `afterSecret: "deny"` to the settings file through the operation
/// `ctl config set afterSecret` takes, `ctl config` says so, and unchecked puts back the
/// default (`ask`, which the file leaves out).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_after_secret_box_denies_network_after_a_secret_and_back() {
    let _display = DISPLAY.read().await;
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    open_settings(&world, &session, "general").await;
    assert_eq!(
        session
            .prop("#general-after-secret", "checked")
            .await
            .as_deref(),
        Some("false"),
        "the default is ask"
    );
    session.click("#general-after-secret").await;
    until_settings(&world, "afterSecret deny", |s| {
        s["afterSecret"] == json!("deny")
    })
    .await;
    let shown = world.ctl_ok(&["config"]).await;
    assert!(
        shown
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()[..] == ["afterSecret", "deny"]),
        "{shown}"
    );
    session.click("#general-after-secret").await;
    until_settings(&world, "afterSecret back to ask", |s| {
        s.get("afterSecret").is_none()
    })
    .await;
    let json: Value =
        serde_json::from_str(&world.ctl_ok(&["--json", "config"]).await).expect("config JSON");
    assert_eq!(json["afterSecret"], "ask", "{json}");
    session.finish().await;
}
