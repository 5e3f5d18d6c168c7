//! The dialog's answers beyond once/session/project/global, by their keys: the duration
//! chooser beside "Session" (T), the program limit (R), deny for the session (X) and
//! "never" (N), with the real app binary under tauri-driver on the test's X display and
//! real landstrip 0.19.2 runs (see tests/tests/dialog.rs for how the session attaches).
//! Outcomes are read from the programs' exits, the policy files, `ctl grants` and the
//! activity log; and the settings window's Session grants view shows the limits and drops
//! a lapsed grant by itself. Nothing is mocked.

use std::time::Duration;

use fantoccini::key::Key;
use landstrip_tray_tests::real_app::{assert_refused, assert_written, path_str, AppWorld};
use landstrip_tray_tests::settings_window::{open_settings, wait_gone_within};
use landstrip_tray_tests::webdriver::Session;
use landstrip_tray_tests::{finish, PYTHON, SH_WRITE, WRITE};
use serde_json::Value;

/// The value the duration chooser shows.
async fn lifetime(session: &Session) -> String {
    session.prop("#lifetime", "value").await.unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t_picks_a_duration_for_the_session_grant_and_the_project_remembers_it() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let first = world.outside.join("first.txt");
    let child = world.ask_write(&first);
    session.wait_prompt(None).await;
    assert_eq!(
        lifetime(&session).await,
        "1h",
        "an hour where the project chose none"
    );
    // 1 hour → 8 hours → until quit → this run → 5 minutes
    session.press_all(&['t', 't', 't', 't']).await;
    assert_eq!(lifetime(&session).await, "5m");
    // The sentence about Session says the limit chosen.
    let hint = session.text("#scope-hint").await;
    assert!(hint.contains("(for 5 minutes)"), "{hint}");
    session.press('s').await;
    assert_written(&finish(child).await, &first);

    let listed = world.grants().await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["for"], "5m", "{listed:?}");
    assert!(
        listed[0]["remaining_ms"]
            .as_u64()
            .is_some_and(|ms| ms <= 300_000),
        "{listed:?}"
    );
    // Answered at once under the same scope.
    let second = world.outside.join("second.txt");
    assert_written(&finish(world.ask_write(&second)).await, &second);

    // Kept for the project: in the settings file, and the next prompt starts there.
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(world.settings_file()).expect("settings"))
            .expect("JSON");
    assert_eq!(
        settings["sessionDurations"][path_str(&world.project)],
        "5m",
        "{settings}"
    );
    world
        .ctl_ok(&["revoke", &listed[0]["id"].to_string()])
        .await;
    let third = world.outside.join("third.txt");
    let child = world.ask_write(&third);
    session.wait_prompt(None).await;
    assert_eq!(lifetime(&session).await, "5m");
    session.press('d').await;
    assert_refused(&finish(child).await, &third);

    // "Until quit" chosen is kept as a choice of its own, not taken for "none chosen".
    let fourth = world.outside.join("fourth.txt");
    let child = world.ask_write(&fourth);
    session.wait_prompt(None).await;
    // 5 minutes → 15 minutes → 1 hour → 8 hours → until quit
    session.press_all(&['t', 't', 't', 't']).await;
    assert_eq!(lifetime(&session).await, "");
    session.press('s').await;
    assert_written(&finish(child).await, &fourth);
    let listed = world.grants().await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert!(listed[0]["for"].is_null(), "{listed:?}");
    world
        .ctl_ok(&["revoke", &listed[0]["id"].to_string()])
        .await;
    let fifth = world.outside.join("fifth.txt");
    let child = world.ask_write(&fifth);
    session.wait_prompt(None).await;
    assert_eq!(lifetime(&session).await, "", "until quit, as chosen last");
    session.press('d').await;
    assert_refused(&finish(child).await, &fifth);
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_until_the_run_ends_covers_that_run_only() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let (a, b, c) = (
        world.outside.join("a"),
        world.outside.join("b"),
        world.outside.join("c"),
    );
    let child = world.write_each(world.published_port(), "ses_keys", &[&a, &b]);
    let first = session.wait_prompt(None).await;
    // 1 hour → 8 hours → until quit → this run
    session.press_all(&['t', 't', 't']).await;
    assert_eq!(lifetime(&session).await, "run");
    session.press('s').await;
    let done = finish(child).await;
    assert_eq!(
        done.stdout, "ok\nok\n",
        "the run's second write asked: {done:?}"
    );

    let mut child = world.write_each(world.published_port(), "ses_keys", &[&c]);
    session.wait_prompt(Some(&first)).await;
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "answered by the ended run's grant"
    );
    session.press('d').await;
    assert_refused(&finish(child).await, &c);
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r_limits_the_grant_to_the_program_that_asked() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let py = world.outside.join("py");
    let child = world.ask_write(&py);
    let first = session.wait_prompt(None).await;
    assert!(
        session
            .text("#program-label")
            .await
            .starts_with("only python3"),
        "{}",
        session.text("#program-label").await
    );
    session.press('r').await;
    assert_eq!(
        session.prop("#program-only", "checked").await.as_deref(),
        Some("true")
    );
    let hint = session.text("#scope-hint").await;
    assert!(hint.contains("(for 1 hour, only python3"), "{hint}");
    session.press('s').await;
    assert_written(&finish(child).await, &py);

    let sh = world.outside.join("sh");
    let mut child = world.launch(
        world.published_port(),
        None,
        &["/bin/sh", "-c", SH_WRITE, "sh", path_str(&sh)],
    );
    session.wait_prompt(Some(&first)).await;
    assert!(child.try_wait().expect("try_wait").is_none());
    session.press('d').await;
    assert_refused(&finish(child).await, &sh);

    let py2 = world.outside.join("py2");
    let done = finish(world.launch(
        world.published_port(),
        None,
        &[PYTHON, "-c", WRITE, path_str(&py2)],
    ))
    .await;
    assert_written(&done, &py2);
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n_previews_and_writes_a_deny_entry_and_the_next_write_is_denied_without_asking() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let target = world.outside.join("never.txt");
    let mut child = world.ask_write(&target);
    session.wait_prompt(None).await;
    session.press('n').await;
    session
        .wait_css("body[data-step='scope'][data-armed='true']")
        .await;
    assert_eq!(
        session.text("#preview-diff .key").await,
        "filesystem.denyWrite"
    );
    let added = session.text("#preview-diff .add").await;
    assert!(added.contains(path_str(&target)), "{added:?}");
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "the preview answered"
    );
    assert!(!world.project_policy().exists(), "the preview wrote");
    session.press(Key::Enter.into()).await;
    assert_refused(&finish(child).await, &target);
    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(world.project_policy()).expect("the project file"),
    )
    .expect("JSON");
    assert_eq!(
        file["filesystem"]["denyWrite"],
        serde_json::json!([path_str(&target)])
    );

    assert_refused(&finish(world.ask_write(&target)).await, &target);
    let entries = world
        .ctl_ok(&["activity", "--json", "--grep", "never.txt"])
        .await;
    let entries: Value = serde_json::from_str(&entries).expect("activity --json");
    let bys: Vec<&str> = entries
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|e| e["by"].as_str())
        .collect();
    assert!(bys.contains(&"user"), "{entries}");
    world
        .activity_entry("the second write, denied without asking", |e| {
            e["by"] == "hard_denial" && e["subject"] == path_str(&target)
        })
        .await;
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x_denies_for_the_session_and_writes_no_file() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let first = world.outside.join("x1");
    let child = world.ask_write(&first);
    session.wait_prompt(None).await;
    session.press('x').await;
    assert_refused(&finish(child).await, &first);
    let listed = world.grants().await;
    assert_eq!(listed[0]["effect"], "deny", "{listed:?}");

    let second = world.outside.join("x2");
    assert_refused(&finish(world.ask_write(&second)).await, &second);
    world
        .activity_entry("the second write, denied by the session denial", |e| {
            e["by"] == "session_grant" && e["subject"] == path_str(&second)
        })
        .await;
    assert!(!world.project_policy().exists());
    assert!(!world.global_policy().exists());
    session.finish().await;
}

/// How long the program-limited grant of the grants-view test lasts: long enough for the
/// settings window to open and show it on a loaded machine (the time it takes is printed
/// and checked against it).
const GRANT_SECS: u64 = 15;

/// What a loaded machine may add to the grant's end before the view is seen to drop it.
const LAPSE_MARGIN: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grants_view_shows_each_limit_and_drops_a_lapsed_grant_by_itself() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    std::fs::create_dir(world.outside.join("d")).expect("mkdir");
    std::fs::create_dir(world.outside.join("a")).expect("mkdir");
    let denied = world.outside.join("d/x");
    let child = world.ask_write(&denied);
    let first = session.wait_prompt(None).await;
    session.press('x').await;
    assert_refused(&finish(child).await, &denied);

    let allowed = world.outside.join("a/y");
    let child = world.ask_write(&allowed);
    session.wait_prompt(Some(&first)).await;
    let waited = world.ctl_ok(&["pending", "--json"]).await;
    let items: Value = serde_json::from_str(&waited).expect("pending --json");
    let id = items[0]["id"].as_u64().expect("id").to_string();
    let grant = format!("{GRANT_SECS}s");
    world
        .ctl_ok(&["answer", &id, "session", "--for", &grant, "--program"])
        .await;
    let granted_at = tokio::time::Instant::now();
    let lasts = Duration::from_secs(GRANT_SECS);
    assert_written(&finish(child).await, &allowed);

    open_settings(&world, &session, "grants").await;
    let allow = session.text("ul.grants li[data-effect='allow']").await;
    let used = granted_at.elapsed();
    eprintln!("the grants view showed the {grant} grant {used:?} after it was given");
    assert!(
        used < lasts,
        "the grants view took {used:?} to show, past the grant's {grant}: too loaded a machine for this test's grant"
    );
    assert!(
        allow.contains(&format!("for {grant}, until")) && allow.contains("only python3"),
        "{allow}"
    );
    let deny = session.text("ul.grants li[data-effect='deny']").await;
    assert!(
        deny.contains("deny write") && deny.contains("for 1h, until"),
        "{deny}"
    );
    // Nobody reloads the view: it draws itself again when the grant lapses.
    let left =
        (granted_at + lasts + LAPSE_MARGIN).saturating_duration_since(tokio::time::Instant::now());
    wait_gone_within(&session, "ul.grants li[data-effect='allow']", left).await;
    eprintln!(
        "the lapsed {grant} grant left the view {:?} after it was given (bound: margin {LAPSE_MARGIN:?})",
        granted_at.elapsed()
    );
    session.text("ul.grants li[data-effect='deny']").await;
}
