//! The settings window's Activity view takes a journaled write back: the real app binary
//! under tauri-driver (WebKitWebDriver) on the test's X display, a real landstrip 0.19.2
//! run whose write is answered once through `ctl`, then "Undo this session's writes", its
//! preview (nothing changed yet) and Restore clicked through WebDriver, the outcome read
//! from disk. Nothing is mocked.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use landstrip_tray_tests::real_app::{path_str, AppWorld};
use landstrip_tray_tests::settings_window::open_settings;
use landstrip_tray_tests::webdriver::Session;
use landstrip_tray_tests::{finish, EVENT_TIMEOUT, PYTHON, WRITE};
use serde_json::Value;
use tokio::time::Instant;

const SESSION: &str = "ses_journal_ui";

/// Polls `ctl --json ARGS` (bounded, 50 ms apart) until `done` holds for its list.
async fn until_ctl(
    world: &AppWorld,
    args: &[&str],
    what: &str,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + EVENT_TIMEOUT;
    loop {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let json = world.ctl_ok(&all).await;
        let items: Value = serde_json::from_str(&json).expect("JSON");
        let items = items.as_array().expect("a list").clone();
        if done(&items) {
            return items;
        }
        assert!(
            Instant::now() < deadline,
            "{what} within {EVENT_TIMEOUT:?}: {items:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_this_sessions_writes_previews_then_restores_the_file() {
    let world = AppWorld::new();
    let dir = world.outside.join("ui");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let file = dir.join("f.txt");
    std::fs::write(&file, "before\n").expect("write");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let session = Session::start(&world, &[]).await;

    let run = world.launch(
        session.port(&world),
        Some(SESSION),
        &[PYTHON, "-c", WRITE, path_str(&file)],
    );
    let pending = until_ctl(&world, &["pending"], "a request waiting", |i| !i.is_empty()).await;
    let id = pending[0]["id"].as_u64().expect("id").to_string();
    world.ctl_ok(&["answer", &id, "once"]).await;
    assert_eq!(finish(run).await.stdout.trim(), "ok");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "hello");
    until_ctl(
        &world,
        &["journal", "--session", SESSION],
        "the run's end journaled",
        |i| !i.is_empty() && i.iter().all(|e| !e["ended_ms"].is_null()),
    )
    .await;

    open_settings(&world, &session, "activity").await;
    let undo_session = format!("#journal button[data-undo-session='{SESSION}']");
    session.wait_css(&undo_session).await;
    assert!(
        session.displayed("#journal button[data-undo-write]").await,
        "each write has its own Undo"
    );
    session.click(&undo_session).await;
    let previewed = session
        .text("#journal-preview li[data-outcome='would_restore']")
        .await;
    assert!(previewed.contains(path_str(&file)), "{previewed}");
    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        "hello",
        "the preview changed the file"
    );
    session.click("#journal-restore").await;
    let deadline = Instant::now() + EVENT_TIMEOUT;
    while std::fs::read_to_string(&file).expect("read") != "before\n" {
        assert!(Instant::now() < deadline, "the file was not restored");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        std::fs::metadata(&file).expect("stat").permissions().mode() & 0o7777,
        0o640
    );
    let entry = world
        .activity_entry("the undo", |e| {
            e["by"] == "undo" && e["subject"] == path_str(&file)
        })
        .await;
    assert_eq!(entry["outcome"], "restored", "{entry}");
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dialog_says_a_write_cannot_be_undone_before_it_is_answered() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    world
        .ctl_ok(&["config", "set", "journalFileLimit", "1KiB"])
        .await;
    let big = world.outside.join("big.bin");
    std::fs::write(&big, vec![b'b'; 2048]).expect("write");
    let child = world.ask_write(&big);
    let first = session.wait_prompt(None).await;
    assert!(session.displayed("#row-undo").await, "no Undo row");
    let said = session.text("#undo").await;
    assert!(said.starts_with("cannot be undone: too large"), "{said}");
    session.choose("deny").await;
    finish(child).await;

    // A write that can be undone says nothing of it.
    let small = world.outside.join("small.txt");
    let child = world.ask_write(&small);
    session.wait_prompt(Some(&first)).await;
    assert!(
        !session.displayed("#row-undo").await,
        "an Undo row for an undoable write"
    );
    session.choose("once").await;
    assert_eq!(finish(child).await.stdout.trim(), "ok");
    session.finish().await;
}
