//! The dialog's keys the README lists that no other test presses: S (allow for the
//! session), D (deny), A (allow the folder for the session, answering every request
//! waiting under it) and, after P, the scope digits 1–3 with Enter writing the entry
//! chosen. Real app under WebKitWebDriver, real landstrip 0.19.2 runs, real files; the
//! keys are real key events sent to the page. Run under `xvfb-run -a dbus-run-session --`,
//! after `cargo build -p landstrip-tray`.

use fantoccini::key::Key;
use landstrip_tray_tests::finish;
use landstrip_tray_tests::real_app::{assert_refused, assert_written, path_str, AppWorld};
use landstrip_tray_tests::webdriver::Session;

/// The entries of the project file's `filesystem.allowWrite` (empty when it is missing).
fn allow_write(world: &AppWorld) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(world.project_policy()) else {
        return Vec::new();
    };
    let json: serde_json::Value = serde_json::from_str(&text).expect("sandbox.json parses");
    json["filesystem"]["allowWrite"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The entry the scope step's preview would add.
async fn previewed(session: &Session) -> String {
    let added = session.text("#preview-diff .add").await;
    serde_json::from_str(added.trim().trim_start_matches('+').trim())
        .unwrap_or_else(|e| panic!("the previewed entry {added:?}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_s_key_allows_for_the_session() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let first = world.outside.join("first.txt");
    let child = world.ask_write(&first);
    session.wait_prompt(None).await;
    session.press('s').await;
    assert_written(&finish(child).await, &first);
    // A later write under the same scope goes through with nobody asked.
    let second = world.outside.join("second.txt");
    assert_written(&finish(world.ask_write(&second)).await, &second);
    let entry = world
        .activity_entry("for the second write", |e| {
            e["subject"] == path_str(&second)
        })
        .await;
    assert_eq!(entry["by"], "session_grant", "{entry}");
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_d_key_denies() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let target = world.outside.join("denied.txt");
    let child = world.ask_write(&target);
    session.wait_prompt(None).await;
    session.press('d').await;
    assert_refused(&finish(child).await, &target);
    let entry = world
        .activity_entry("for the denied write", |e| {
            e["subject"] == path_str(&target)
        })
        .await;
    assert_eq!(entry["outcome"], "deny", "{entry}");
    assert_eq!(entry["by"], "user", "{entry}");
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_a_key_answers_every_request_waiting_under_one_folder() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let first = world.outside.join("one.txt");
    let second = world.outside.join("two.txt");
    let first_child = world.ask_write(&first);
    session.wait_prompt(None).await;
    let second_child = world.ask_write(&second);
    // The bulk answer is offered once both wait.
    session.wait_css("#bulk:not([hidden])").await;
    session.press('a').await;
    assert_written(&finish(first_child).await, &first);
    assert_written(&finish(second_child).await, &second);
    session.wait_css("body[data-state='empty']").await;
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_p_the_digits_pick_the_entry_and_enter_writes_the_one_picked() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    // Under the home, three different entries: the file, its folder, `~/work` (suggested).
    let deep = world.home.join("work/deep");
    std::fs::create_dir_all(&deep).expect("mkdir");
    let target = deep.join("x.txt");
    let child = world.ask_write(&target);
    session.wait_prompt(None).await;
    session.press('p').await;
    session
        .wait_css("body[data-step='scope'][data-armed='true']")
        .await;
    let mut picked = Vec::new();
    for digit in ['1', '2', '3'] {
        session.press(digit).await;
        picked.push(previewed(&session).await);
    }
    assert!(picked[0].ends_with("work/deep/x.txt"), "1: {picked:?}");
    assert!(picked[1].ends_with("work/deep"), "2: {picked:?}");
    assert!(picked[2].ends_with("work"), "3: {picked:?}");
    // Back to the folder, and Enter writes that one only.
    session.press('2').await;
    assert_eq!(previewed(&session).await, picked[1]);
    session.press(Key::Enter.into()).await;
    assert_written(&finish(child).await, &target);
    assert_eq!(allow_write(&world), vec![picked[1].clone()]);
    session.finish().await;
}
