//! The settings window of the real app, driven like a person would: the real app binary
//! under tauri-driver (WebKitWebDriver) on the test's X display, the window opened through
//! the real control socket (the request `ctl settings` sends), typing and key presses
//! through WebDriver, and the outcome read from disk (the sandbox.json files, parsed by the
//! core's own parser) and from real landstrip 0.19.2 runs. Nothing is mocked.
//!
//! The WebDriver session attaches to the app's first webview, the (hidden) prompt window
//! the app creates at start under automation (see tests/tests/dialog.rs); the settings
//! window, created on request, is another window handle of the same session.

use std::time::Duration;

use fantoccini::key::Key;
use fantoccini::Locator;
use landstrip_tray_core::activity::{now_ms, ActivityEntry, ActivityLog, Decider, Outcome};
use landstrip_tray_core::surfaces::control::{Client, Request};
use landstrip_tray_tests::notification_server::PrivateBus;
use landstrip_tray_tests::real_app::{path_str, AppWorld};
use landstrip_tray_tests::settings_window::{
    list, open_settings, project_file_valid, type_into, until_file, until_status, wait_gone,
};
use landstrip_tray_tests::tray_host::FakeWatcher;
use landstrip_tray_tests::webdriver::Session;
use landstrip_tray_tests::x11;
use landstrip_tray_tests::{finish, until, EVENT_TIMEOUT};
use tokio::time::Instant;

/// How soon an external edit must show in the window: the policy watch acts within a
/// second (tests/tests/policy_watch.rs holds it to that); this adds the page's reload and
/// WebDriver's round trips on a loaded machine, so it catches an edit shown only by some
/// later event (a timer, a focus change), not a slow one. The figure itself is printed.
const SHOWN_WITHIN: Duration = Duration::from_secs(5);

const ADD_WRITE: &str =
    "section[data-file='project'] [data-list='filesystem.allowWrite'] input[data-key]";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adding_an_allow_write_entry_by_keyboard_saves_it_and_a_real_write_needs_no_prompt() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    open_settings(&world, &session, "policy").await;

    let target = world.outside.join("out.txt");
    let entry = path_str(&world.outside).to_owned();
    let input = session.wait_css(ADD_WRITE).await;
    session
        .bounded(
            "type the entry",
            input.send_keys(&format!("{entry}{}", char::from(Key::Enter))),
        )
        .await;
    let text = until_file(&world, "the entry on disk", |t| {
        list(t, "filesystem.allowWrite").contains(&entry)
    })
    .await;
    project_file_valid(&world);
    assert_eq!(list(&text, "filesystem.allowWrite"), vec![entry.clone()]);
    // The page hears the reply after the file is on disk: its status line is waited for.
    until_status(&session, "the page says which file it wrote", |status| {
        status.contains("sandbox.json")
    })
    .await;
    // The effective view marks it as the project's.
    session
        .wait_css(&format!(
            "section[data-file='effective'] [data-list='filesystem.allowWrite'] li[data-entry='{entry}'][data-source='project']"
        ))
        .await;

    // A real landstrip write there goes through without any prompt.
    let done = finish(world.write(session.port(&world), &target)).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");
    assert_eq!(std::fs::read_to_string(&target).expect("written"), "hello");

    // Keyboard-only removal: focus the entry, press Delete.
    // Clicked on a fresh reference: the save's own echo may redraw the list between
    // finding the entry and clicking it (a CI run failed on that stale reference); the
    // page keeps the focus across such a redraw.
    session
        .click(&format!(
            "section[data-file='project'] [data-list='filesystem.allowWrite'] li[data-entry='{entry}']"
        ))
        .await;
    session.press(Key::Delete.into()).await;
    until_file(&world, "the entry gone from disk", |t| {
        !list(t, "filesystem.allowWrite").contains(&entry)
    })
    .await;
    project_file_valid(&world);
    wait_gone(&session, &format!(
        "section[data-file='effective'] [data-list='filesystem.allowWrite'] li[data-entry='{entry}']"
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toggling_allow_network_writes_it_and_an_external_edit_shows_in_the_window() {
    let world = AppWorld::new();
    world.write_project_policy(&serde_json::json!({"filesystem": {"allowWrite": ["keep"]}}));
    let session = Session::start(&world, &[]).await;
    open_settings(&world, &session, "policy").await;

    let toggle = session
        .wait_css("section[data-file='project'] input[data-field='network.allowNetwork']")
        .await;
    session.bounded("toggle allowNetwork", toggle.click()).await;
    let text = until_file(&world, "allowNetwork on disk", |t| {
        serde_json::from_str::<serde_json::Value>(t)
            .is_ok_and(|j| j["network"]["allowNetwork"] == true)
    })
    .await;
    project_file_valid(&world);
    assert_eq!(
        list(&text, "filesystem.allowWrite"),
        vec!["keep"],
        "the rest is kept: {text}"
    );
    session
        .wait_css("section[data-file='effective'] li[data-field='network.allowNetwork'][data-value='true'][data-source='project']")
        .await;

    // Typed but unsaved text survives the reload an external edit causes.
    // (type_into finds the box again if the echo of the toggle's own save replaced it.)
    type_into(&session, ADD_WRITE, "half-typed").await;
    std::fs::write(
        world.project_policy(),
        r#"{"filesystem": {"allowWrite": ["keep", "external"]}}"#,
    )
    .expect("external edit");
    let edited = Instant::now();
    session
        .wait_css("section[data-file='project'] [data-list='filesystem.allowWrite'] li[data-entry='external']")
        .await;
    let shown = edited.elapsed();
    eprintln!("the external edit showed in the window after {shown:?}");
    assert!(
        shown < SHOWN_WITHIN,
        "the external edit took {shown:?} to show"
    );
    let kept = session.wait_css(ADD_WRITE).await;
    let value = session
        .bounded("read the add box", kept.prop("value"))
        .await;
    assert_eq!(value.as_deref(), Some("half-typed"));
    // ...and the user is told it was kept.
    until_status(&session, "the reload's message", |text| {
        text.contains("what you typed but did not save is kept")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_project_file_is_read_only_with_its_error_and_left_as_it_is() {
    let world = AppWorld::new();
    let broken = b"{\n  \"filesystem\": {\"allowWrite\": [\"a\",,]}\n}\n".to_vec();
    std::fs::create_dir_all(world.project.join(".opencode")).expect("mkdir");
    std::fs::write(world.project_policy(), &broken).expect("write");
    let session = Session::start(&world, &[]).await;
    open_settings(&world, &session, "policy").await;

    let error = session
        .text("section[data-file='project'][data-state='invalid'] [data-error]")
        .await;
    assert!(error.contains("line 2, column"), "{error}");
    let controls = session
        .bounded(
            "edit controls of the broken file",
            session.client().find_all(Locator::Css(
                "section[data-file='project'] input, section[data-file='project'] button:not([data-action='open-in-editor'])",
            )),
        )
        .await;
    assert!(
        controls.is_empty(),
        "no edit controls on a broken file (only open-in-editor)"
    );
    // The global file still edits; the broken one is untouched by it.
    let global = session
        .wait_css("section[data-file='global'] [data-list='filesystem.allowWrite'] input[data-key]")
        .await;
    session
        .bounded(
            "add to global",
            global.send_keys(&format!("~/g{}", char::from(Key::Enter))),
        )
        .await;
    let deadline = Instant::now() + EVENT_TIMEOUT;
    while !world.global_policy().exists() {
        assert!(Instant::now() < deadline, "the global file was not written");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(std::fs::read(world.project_policy()).expect("read"), broken);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_effective_view_marks_each_entry_with_its_layer() {
    let world = AppWorld::new();
    std::fs::create_dir_all(world.global_policy().parent().expect("dir")).expect("mkdir");
    std::fs::write(
        world.global_policy(),
        r#"{"filesystem": {"allowWrite": ["~/from-global"]}}"#,
    )
    .expect("global");
    world
        .write_project_policy(&serde_json::json!({"filesystem": {"allowWrite": ["from-project"]}}));
    let session = Session::start(&world, &[]).await;
    open_settings(&world, &session, "policy").await;
    let base = "section[data-file='effective'] [data-list='filesystem.allowWrite']";
    session
        .wait_css(&format!(
            "{base} li[data-entry='~/from-global'][data-source='global']"
        ))
        .await;
    session
        .wait_css(&format!(
            "{base} li[data-entry='from-project'][data-source='project']"
        ))
        .await;
    session
        .wait_css(&format!("{base} li[data-source='default']"))
        .await;
    // The strict CSP held: the page caused no violation (ui/shared/csp-watch.js counts them).
    let violations = session
        .bounded(
            "CSP violations",
            session.client().execute(
                "return document.documentElement.dataset.cspViolations || '0'",
                vec![],
            ),
        )
        .await;
    assert_eq!(violations, serde_json::json!("0"));
}

/// The settings window's title (src-tauri/src/app/settings.rs).
const SETTINGS_TITLE: &str = "landstrip-tray settings";

/// A linger no step of a test outlasts (its default is 5 s): what happens within the
/// linger is then tested without racing it.
const LINGER_LONG_MS: &str = "600000";

/// A linger short enough to be waited out; the test awaits the app's word that it
/// destroyed the window rather than the time.
const LINGER_SHORT_MS: &str = "200";

/// An app whose settings window lingers `linger_ms` once closed, with that window open on
/// the (empty) activity view and mapped: the world, the session, the app's pid and the X
/// window.
async fn shown_with_linger(linger_ms: &str) -> (AppWorld, Session, u32, Vec<String>) {
    let world = AppWorld::new();
    let session = Session::start(&world, &[("LANDSTRIP_TRAY_SETTINGS_LINGER_MS", linger_ms)]).await;
    let pid = session.app_pid.expect("app pid");
    open_settings(&world, &session, "activity").await;
    session.wait_css("#activity-rows[data-total='0']").await;
    let shown = x11::wait_windows(
        pid,
        SETTINGS_TITLE,
        true,
        EVENT_TIMEOUT,
        "the settings window shown",
        |w| w.len() == 1,
        || session.log(),
    )
    .await;
    (world, session, pid, shown)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_settings_window_hides_it_and_a_request_within_the_linger_shows_it_reloaded() {
    let (world, session, pid, shown) = shown_with_linger(LINGER_LONG_MS).await;
    let handle = session
        .bounded("the settings window's handle", session.client().window())
        .await;
    x11::request_close(&shown[0]).await;
    x11::wait_windows(
        pid,
        SETTINGS_TITLE,
        true,
        EVENT_TIMEOUT,
        "the settings window hidden",
        |w| w.is_empty(),
        || session.log(),
    )
    .await;
    // Hidden, not destroyed: the same window is still there, and its page says it is not
    // ready (it is, again, once shown and reloaded).
    let all = x11::windows(pid, SETTINGS_TITLE, false).await;
    assert_eq!(all, shown, "the hidden window is the one that was shown");
    let ready = session
        .bounded(
            "the hidden page's state",
            session
                .client()
                .execute("return document.body.dataset.ready", vec![]),
        )
        .await;
    assert_eq!(ready, serde_json::json!("false"));
    // What the page can only know by loading its data again: activity logged while it was
    // hidden (nothing tells a page about new activity).
    write_activity(&world, 3);

    // Opened again within the linger: the same window and page, its view's data loaded
    // anew.
    let before = session
        .bounded("window handles", session.client().windows())
        .await;
    open_settings(&world, &session, "activity").await;
    assert_eq!(
        session
            .bounded("the window's handle", session.client().window())
            .await,
        handle,
        "the hidden page, not a new one"
    );
    session.wait_css("#activity-rows[data-total='3']").await;
    let after = session
        .bounded("window handles", session.client().windows())
        .await;
    assert_eq!(before.len(), after.len(), "no new window");
    let shown_again = x11::wait_windows(
        pid,
        SETTINGS_TITLE,
        true,
        EVENT_TIMEOUT,
        "the settings window shown again",
        |w| w.len() == 1,
        || session.log(),
    )
    .await;
    assert_eq!(shown_again, shown);
    assert!(
        !session
            .log()
            .contains("settings window hidden for a while: destroying its webview"),
        "the window was destroyed within the linger"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settings_window_left_closed_is_destroyed_after_the_linger_and_a_request_opens_a_new_one()
{
    let (world, session, pid, shown) = shown_with_linger(LINGER_SHORT_MS).await;
    // Closed and left alone: destroyed after the linger, and a request opens a new one.
    x11::request_close(&shown[0]).await;
    // The app says when it destroys the hidden window (the X window alone cannot tell:
    // an unmapped window may already be gone from the X tree).
    let logged = |needle: &str| session.log().matches(needle).count();
    let deadline = std::time::Instant::now() + EVENT_TIMEOUT;
    while logged("settings window hidden for a while: destroying its webview") < 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "the hidden settings window was not destroyed within {EVENT_TIMEOUT:?}; log:\n{}",
            session.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    open_settings(&world, &session, "projects").await;
    session
        .wait_css(&format!(
            "li.project[data-dir='{}']",
            path_str(&world.project)
        ))
        .await;
    // The page can answer before X has the new window's name and pid: wait for them.
    x11::wait_windows(
        pid,
        SETTINGS_TITLE,
        false,
        EVENT_TIMEOUT,
        "exactly one settings window after the request",
        |w| w.len() == 1,
        || session.log(),
    )
    .await;
    // A new page, not the old one shown again (X may give the new window the old id):
    // the page starts once per window, and this is the second.
    let started = || session.log().matches("settings page started").count();
    let deadline = std::time::Instant::now() + EVENT_TIMEOUT;
    while started() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "no second settings page within {EVENT_TIMEOUT:?}; log:\n{}",
            session.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(started(), 2, "the window shown again was not a new page");
}

/// `landstrip-tray settings` against the running app (no display of its own: it only talks
/// to the control socket) exits 0, and the app's settings window comes up on the view
/// asked for. A tray host is on the app's bus, so the app opens no settings window by
/// itself at start: the one that appears is the command's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_settings_command_opens_the_running_apps_settings_window() {
    let world = AppWorld::new();
    let bus = PrivateBus::start(&world.base.join("bus")).await;
    let mut watcher = FakeWatcher::start(&bus.address).await;
    let session = Session::start(
        &world,
        &[
            ("DBUS_SESSION_BUS_ADDRESS", bus.address.as_str()),
            ("NO_AT_BRIDGE", "1"),
        ],
    )
    .await;
    let pid = session.app_pid.expect("app pid");
    watcher.item_from_pid(pid, || session.log()).await;
    // Past the app's look for a tray host: it will not open the window by itself now.
    until("the app finds the tray host", || {
        session.log().contains("tray host present")
    })
    .await;
    let before = session.pages().await;
    assert!(
        !before.iter().any(|p| p.ends_with("settings.html")),
        "a settings window before the command: {before:?}"
    );
    assert_eq!(x11::windows(pid, SETTINGS_TITLE, false).await.len(), 0);

    let out = world.run(&["settings", "--view", "activity"]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    session.switch_to_page("settings.html").await;
    session
        .wait_css("body[data-ready='true'][data-view='activity']")
        .await;
    x11::wait_windows(
        pid,
        SETTINGS_TITLE,
        true,
        EVENT_TIMEOUT,
        "the settings window shown",
        |w| w.len() == 1,
        || session.log(),
    )
    .await;
    session.finish().await;
}

/// Appends `n` entries to the app's activity log with the core's own writer.
fn write_activity(world: &AppWorld, n: u64) {
    let log = ActivityLog::open(&world.activity_file(), 1 << 30).expect("open the activity log");
    let entries = (0..n)
        .map(|i| ActivityEntry {
            ts: now_ms() - (n - i) * 1_000,
            project: path_str(&world.project).to_owned(),
            session: Some("ses_hidden".into()),
            kind: "filesystem".into(),
            operation: "write".into(),
            subject: format!("{}/while-hidden-{i}.txt", path_str(&world.outside)),
            exe: Some("/usr/bin/python3.11".into()),
            pid: Some(4_000 + i as u32),
            outcome: Outcome::Deny,
            by: Decider::User,
            detail: None,
            command: None,
            chain: Vec::new(),
        })
        .collect();
    log.record_all(entries);
    log.close();
}

/// Not a test of behaviour: writes docs/settings-{projects,policy,hits,invalid,general}-{light,dark}.png
/// (`xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- cargo test -p
/// landstrip-tray-tests --test settings -- --ignored --exact screenshots`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/ screenshots"]
async fn screenshots() {
    let out = landstrip_tray_tests::screenshot_dir();
    for (theme, env) in landstrip_tray_tests::screenshot_themes() {
        let world = AppWorld::with_project("home/src/webapp");
        std::fs::create_dir_all(world.global_policy().parent().expect("dir")).expect("mkdir");
        std::fs::write(
            world.global_policy(),
            "{\n  \"filesystem\": {\n    \"allowWrite\": [\"~/.cache/opencode\", \"~\"]\n  }\n}\n",
        )
        .expect("global policy");
        world.write_project_policy(&serde_json::json!({
            "network": {"allowNetwork": true, "allowedDomains": ["crates.io"]},
            "filesystem": {"allowWrite": ["target", "~/.cache/opencode/x"]}
        }));
        write_hits(&world);
        let session = Session::start(&world, &env).await;
        open_settings(&world, &session, "projects").await;
        session.wait_css("li.project").await;
        session
            .screenshot(&out.join(format!("settings-projects-{theme}.png")))
            .await;
        session.click("#tab-policy").await;
        session
            .wait_css("section[data-file='effective'] .flag-broad")
            .await;
        session
            .wait_css("section[data-file='effective'] [data-entry='target'] .usage[data-hits='3']")
            .await;
        session
            .screenshot(&out.join(format!("settings-policy-{theme}.png")))
            .await;
        // The entry with its hit count in view.
        session
            .bounded(
                "scroll to the target entry",
                session.client().execute(
                    "document.querySelector(\"section[data-file='effective'] [data-entry='target']\")\
                     .scrollIntoView({block: 'center'});",
                    vec![],
                ),
            )
            .await;
        session
            .screenshot(&out.join(format!("settings-hits-{theme}.png")))
            .await;
        // The project file broken by hand: shown read-only with its error.
        std::fs::write(
            world.project_policy(),
            "{\n  \"filesystem\": {\"allowWrite\": [\"target\",,]}\n}\n",
        )
        .expect("break the project file");
        session
            .wait_css("section[data-file='project'][data-state='invalid'] [data-error]")
            .await;
        session
            .screenshot(&out.join(format!("settings-invalid-{theme}.png")))
            .await;
        session.click("#tab-general").await;
        session.wait_css("#general-timeout").await;
        session
            .screenshot(&out.join(format!("settings-general-{theme}.png")))
            .await;
        session.finish().await;
    }
}

/// Three writes under the project's `target` that the policy allowed, logged with the
/// core's own writer before the app starts: the screenshot shows their hit count.
fn write_hits(world: &AppWorld) {
    use landstrip_tray_core::activity::{now_ms, ActivityEntry, ActivityLog, Decider, Outcome};
    let log = ActivityLog::open(&world.activity_file(), 1 << 20).expect("open the activity log");
    let project = path_str(&world.project).to_owned();
    let entries = (0..3u64)
        .map(|i| ActivityEntry {
            ts: now_ms() - (3 - i) * 60_000,
            project: project.clone(),
            session: Some("ses_screens".into()),
            kind: "filesystem".into(),
            operation: "write".into(),
            subject: format!("{project}/target/debug/build-{i}"),
            exe: Some("/usr/bin/cargo".into()),
            pid: Some(4242),
            outcome: Outcome::Allow,
            by: Decider::Policy,
            detail: None,
            command: None,
            chain: Vec::new(),
        })
        .collect();
    log.record_all(entries);
    log.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typed_project_is_served_taken_over_from_another_presenter_and_removed() {
    let world = AppWorld::new();
    // Another live presenter owns the second project's discovery file.
    let mut owner = tokio::process::Command::new("sleep")
        .arg("60")
        .kill_on_drop(true)
        .spawn()
        .expect("spawn sleep");
    let owner_pid = owner.id().expect("pid");
    let owner_listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    let owner_port = owner_listener.local_addr().expect("addr").port();
    let other = world.outside.clone();
    world.plant(
        &other,
        landstrip_tray_core::serving::discovery::DiscoveryRecord {
            port: owner_port,
            pid: owner_pid,
            ts: 1,
        },
    );
    // Prompts go to the other presenter while it runs (else the app takes the file back).
    world.write_settings(&serde_json::json!({ "promptsGo": "terminal" }));
    let session = Session::start(&world, &[]).await;
    let app_pid = session.app_pid.expect("app pid");
    open_settings(&world, &session, "projects").await;

    let input = session.wait_css("#project-add").await;
    session
        .bounded(
            "type the project",
            input.send_keys(&format!("{}{}", path_str(&other), char::from(Key::Enter))),
        )
        .await;
    let row = format!("li.project[data-dir='{}']", path_str(&other));
    let state = session
        .text(&format!("{row}.state-conflict .project-state"))
        .await;
    assert!(state.contains(&format!("pid {owner_pid}")), "{state}");
    let settings = std::fs::read_to_string(world.settings_file()).expect("settings file");
    assert!(settings.contains(path_str(&other)), "persisted: {settings}");

    session
        .click(&format!("{row} button[data-action='take-over']"))
        .await;
    session.wait_css(&format!("{row}.state-serving")).await;
    assert_eq!(world.record(&other).map(|r| r.pid), Some(app_pid));

    // Removed with a real write held there: the app denies it itself and stops serving.
    let elsewhere = world.base.join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir elsewhere");
    let other_port = world.record(&other).expect("the taken-over record").port;
    let held = world
        .tapped_held_write(other_port, &elsewhere.join("held.txt"))
        .await;
    session
        .click(&format!("{row} button[data-action='remove']"))
        .await;
    wait_gone(&session, &row).await;
    world
        .assert_stopped_serving(held, &other, app_pid, || session.log())
        .await;
    let settings = std::fs::read_to_string(world.settings_file()).expect("settings file");
    assert!(
        !settings.contains(path_str(&other)),
        "forgotten: {settings}"
    );
    owner.kill().await.expect("kill the other presenter");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_activity_view_lists_a_real_run_and_filters_by_text_and_decision() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    // Paused, a real run's denied write is answered at once (and logged) without a prompt.
    let mut client = Client::connect(&world.control_socket())
        .await
        .expect("connect to the control socket");
    client
        .request(&Request::Pause { secs: None })
        .await
        .expect("pause");
    let target = world.outside.join("logged.txt");
    let done = finish(world.write(session.port(&world), &target)).await;
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");
    open_settings(&world, &session, "activity").await;

    let row = "table.activity tr.outcome-deny";
    let text = session.text(row).await;
    assert!(text.contains("logged.txt"), "{text}");
    let filter = session.wait_css("#f-text").await;
    session
        .bounded("filter by text", filter.send_keys("no-such-thing"))
        .await;
    wait_gone(&session, row).await;
    session.wait_css("main p.empty").await;
    session.bounded("clear the filter", filter.clear()).await;
    // Clearing fires no input event: a matching text brings the row back.
    let filter = session.wait_css("#f-text").await;
    session
        .bounded("filter by matching text", filter.send_keys("logged"))
        .await;
    session.text(row).await;
    // Allowed only: it was denied.
    session.click("#f-decision option[value='allow']").await;
    wait_gone(&session, row).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_grant_is_listed_and_revoking_it_makes_the_next_write_ask_again() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let prompt_window = session
        .bounded("the prompt window's handle", session.client().window())
        .await;
    let first = world.outside.join("first.txt");
    let child = world.write(session.port(&world), &first);
    session.wait_prompt(None).await;
    session.choose("session").await;
    assert_eq!(finish(child).await.stdout.trim(), "ok");

    open_settings(&world, &session, "grants").await;
    let grant = session.text("ul.grants li[data-grant]").await;
    assert!(grant.contains(path_str(&world.outside)), "{grant}");
    session.click("ul.grants li[data-grant] button").await;
    wait_gone(&session, "ul.grants li[data-grant]").await;

    // Revoked: the next write under the same scope is held for a person again.
    session
        .bounded(
            "back to the prompt window",
            session.client().switch_to_window(prompt_window),
        )
        .await;
    let second = world.outside.join("second.txt");
    let child = world.write(session.port(&world), &second);
    session.wait_prompt(None).await;
    session.choose("deny").await;
    assert_eq!(finish(child).await.stdout.trim(), "EACCES");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_write_the_policy_then_answers_shows_as_a_hit_on_its_entry() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let held = world.outside.join("held.txt");
    let entry = path_str(&world.outside).to_owned();
    // A real landstrip write is held for a person; adding an entry that covers it lets
    // the policy answer it (the only way a policy answer reaches the log: landstrip
    // itself allows what its starting policy already covers).
    let child = world.write(session.port(&world), &held);
    session.wait_prompt(None).await;
    world
        .ctl_ok(&[
            "policy",
            "add",
            "--project",
            "project",
            "allowWrite",
            &entry,
        ])
        .await;
    assert_eq!(finish(child).await.stdout.trim(), "ok");
    world
        .activity_entry("the held write answered by the policy", |e| {
            e["by"] == "policy" && e["subject"] == path_str(&held)
        })
        .await;

    open_settings(&world, &session, "policy").await;
    let base = "section[data-file='effective'] [data-list='filesystem.allowWrite']";
    let usage = session
        .text(&format!(
            "{base} li[data-entry='{entry}'] .usage[data-hits='1']"
        ))
        .await;
    assert!(usage.starts_with("1 hit · last "), "{usage}");
    // (The badge is upper-cased by the stylesheet.)
    assert!(!usage.to_lowercase().contains("unused"), "{usage}");
    // The project's own entry answered nothing while another entry was hit: marked.
    let default = session
        .text(&format!("{base} li[data-entry='.'] .usage[data-hits='0']"))
        .await;
    assert!(default.starts_with("never used"), "{default}");
    session
        .wait_css(&format!(
            "{base} li[data-entry='.'] .usage [data-flag='unused']"
        ))
        .await;
}
