//! The trust rules no click may get around (README "When a sandboxed program asks",
//! ARCHITECTURE "Decision rules"), through the real binary in `--headless` mode and real
//! landstrip 0.19.2 runs, each the way a person met the hole it closes:
//! - a Session answer on a harmless file never allows a private key waiting beside it, nor
//!   a later key in the same scope; `ctl answer … session --json` says what it left waiting;
//! - a policy file that stops parsing keeps the denials of its last valid version: a
//!   session grant does not override them;
//! - the app's own settings and data are denied to sandboxed programs, even under a
//!   session grant that covers them.
//!
//! Nothing is mocked. `ctl` has no wait for a second waiting request, so
//! [`pending_at_least`] polls `ctl pending` (bounded, 50 ms apart).

use std::path::Path;
use std::time::Duration;

use landstrip_tray_tests::real_app::{path_str, AppWorld, RunningApp};
use landstrip_tray_tests::{
    finish, launch_landstrip_with_policy, Landstrip, EVENT_TIMEOUT, PYTHON, WRITE,
};
use serde_json::Value;
use tokio::process::Child;
use tokio::time::Instant;

/// Writes "hello" to every argv[1:] at once, each from its own thread, so the run holds
/// them all together; prints "PATH ok" or "PATH EACCES" per file, in argument order.
const WRITE_AT_ONCE: &str = r#"
import sys, threading
results = {}
def write(path):
    try:
        with open(path, "w") as f:
            f.write("hello")
        results[path] = "ok"
    except PermissionError as e:
        results[path] = "EACCES" if e.errno == 13 else repr(e)
threads = [threading.Thread(target=write, args=(p,)) for p in sys.argv[1:]]
for t in threads: t.start()
for t in threads: t.join()
for p in sys.argv[1:]: print(p, results[p])
"#;

const SESSION: &str = "ses_trust_rules";

/// The app `--headless`, serving the world's project; its port.
async fn headless(world: &AppWorld) -> (RunningApp, u16) {
    let mut app = world.start_without_display(&[
        "--headless".as_ref(),
        "--project".as_ref(),
        world.project.as_os_str(),
    ]);
    app.wait_for_control().await;
    let port = app.serving(world, &world.project).await;
    (app, port)
}

/// `ctl --json pending` until at least `count` requests wait (bounded); the list.
async fn pending_at_least(world: &AppWorld, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + EVENT_TIMEOUT;
    loop {
        let json = world.ctl_ok(&["--json", "pending"]).await;
        let items: Value = serde_json::from_str(&json).expect("pending JSON");
        let items = items.as_array().expect("a list").clone();
        if items.len() >= count {
            return items;
        }
        assert!(
            Instant::now() < deadline,
            "{count} requests were not waiting within {EVENT_TIMEOUT:?}: {items:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The id of the waiting request for `path`.
fn id_of(items: &[Value], path: &Path) -> String {
    items
        .iter()
        .find(|i| i["path"] == path_str(path))
        .unwrap_or_else(|| panic!("{} is not waiting: {items:?}", path.display()))["id"]
        .as_u64()
        .expect("a numeric id")
        .to_string()
}

/// A run of [`WRITE_AT_ONCE`] on `targets` in the session [`SESSION`].
fn write_at_once(world: &AppWorld, port: u16, targets: &[&Path]) -> Child {
    let mut program = vec![PYTHON, "-c", WRITE_AT_ONCE];
    program.extend(targets.iter().map(|t| path_str(t)));
    world.launch(port, Some(SESSION), &program)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_answer_on_a_harmless_file_leaves_the_private_key_beside_it_waiting() {
    let world = AppWorld::new();
    let (mut app, port) = headless(&world).await;
    let keys = world.outside.join("keys");
    std::fs::create_dir(&keys).expect("mkdir keys");
    let (notes, id_rsa, server_key, more) = (
        keys.join("notes.txt"),
        keys.join("id_rsa"),
        keys.join("server.key"),
        keys.join("more.txt"),
    );

    let first = write_at_once(&world, port, &[&notes, &id_rsa]);
    let waiting = pending_at_least(&world, 2).await;
    let (notes_id, key_id) = (id_of(&waiting, &notes), id_of(&waiting, &id_rsa));

    let reply = world
        .ctl_ok(&["--json", "answer", &notes_id, "session"])
        .await;
    let reply: Value = serde_json::from_str(&reply).expect("answer JSON");
    assert_eq!(reply["also_answered"], serde_json::json!([]), "{reply}");
    let left = reply["left_waiting"].as_array().expect("left_waiting");
    assert_eq!(left.len(), 1, "{reply}");
    assert_eq!(left[0]["id"].to_string(), key_id, "{reply}");
    let reason = left[0]["reason"].as_str().expect("a reason");
    assert!(reason.contains("an SSH private key"), "{reason}");
    // The plain reply says it too.
    let still = pending_at_least(&world, 1).await;
    assert_eq!(id_of(&still, &id_rsa), key_id);
    assert_eq!(still.len(), 1, "{still:?}");

    // A later key in the same scope asks; a later plain file there does not.
    let later = write_at_once(&world, port, &[&more, &server_key]);
    let waiting = pending_at_least(&world, 2).await;
    let server_id = id_of(&waiting, &server_key);
    for id in [&key_id, &server_id] {
        world.ctl_ok(&["answer", id, "deny"]).await;
    }
    let done = finish(first).await;
    let lines = format!("{} ok\n{} EACCES\n", path_str(&notes), path_str(&id_rsa));
    assert_eq!(done.stdout, lines, "{done:?}");
    assert!(!id_rsa.exists(), "the private key was written");
    let done = finish(later).await;
    assert_eq!(
        done.stdout,
        format!("{} ok\n{} EACCES\n", path_str(&more), path_str(&server_key)),
        "{done:?}"
    );
    let key_entry = world
        .activity_entry("for id_rsa", |e| e["subject"] == path_str(&id_rsa))
        .await;
    assert_eq!(
        (&key_entry["outcome"], &key_entry["by"]),
        (&Value::from("deny"), &Value::from("user")),
        "{key_entry}"
    );
    let more_entry = world
        .activity_entry("for more.txt", |e| e["subject"] == path_str(&more))
        .await;
    assert_eq!(more_entry["by"], "session_grant", "{more_entry}");
    app.assert_running();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_policy_file_keeps_its_last_valid_denials_over_a_session_grant() {
    let world = AppWorld::new();
    let (mut app, port) = headless(&world).await;
    let x = world.outside.join("x");
    std::fs::create_dir_all(x.join("never")).expect("mkdir");
    // The run's own landstrip policy is built now, before the deny entry exists: landstrip
    // asks about x/never and the app alone decides.
    let policy = world.landstrip_policy();
    let run = |target: &Path| {
        launch_landstrip_with_policy(
            Landstrip::V0_19,
            &policy,
            &world.project,
            &world.home,
            port,
            Some(SESSION),
            &[PYTHON, "-c", WRITE, path_str(target)],
        )
    };

    let first = run(&x.join("a.txt"));
    let waiting = pending_at_least(&world, 1).await;
    let id = id_of(&waiting, &x.join("a.txt"));
    world.ctl_ok(&["answer", &id, "session"]).await;
    assert_eq!(finish(first).await.stdout.trim(), "ok");

    // An editor adds the deny entry, then saves the file half-written.
    let never = path_str(&x.join("never")).to_owned();
    world.write_project_policy(&serde_json::json!({"filesystem": {"denyWrite": [never]}}));
    let denied = finish(run(&x.join("never/a.txt"))).await;
    assert_eq!(denied.stdout.trim(), "EACCES", "valid file: {denied:?}");
    let broken = format!("{{\"filesystem\": {{\"denyWrite\": [\"{never}");
    std::fs::write(world.project_policy(), &broken).expect("write the broken file");

    let target = x.join("never/b.txt");
    let done = finish(run(&target)).await;
    assert_eq!(done.stdout.trim(), "EACCES", "broken file: {done:?}");
    assert!(!target.exists(), "written under a deny entry");
    let entry = world
        .activity_entry("for never/b.txt", |e| e["subject"] == path_str(&target))
        .await;
    assert_eq!(entry["by"], "hard_denial", "{entry}");
    // Beside the denial, the grant still allows (the file had a valid version).
    let beside = x.join("other.txt");
    assert_eq!(finish(run(&beside)).await.stdout.trim(), "ok");
    assert_eq!(
        std::fs::read_to_string(world.project_policy()).expect("read"),
        broken,
        "the broken file was rewritten"
    );
    app.assert_running();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_apps_own_settings_and_data_are_denied_even_under_a_session_grant() {
    let world = AppWorld::new();
    let (mut app, port) = headless(&world).await;
    let settings_before = std::fs::read(world.settings_file()).expect("settings");
    // A session grant of the app's config directory's parent, from an answer to a file
    // beside it (outside home and project: the grant is its directory).
    let config = world.base.join("config");
    let beside = config.join("other.txt");
    let first = world.launch(
        port,
        Some(SESSION),
        &[PYTHON, "-c", WRITE, path_str(&beside)],
    );
    let waiting = pending_at_least(&world, 1).await;
    world
        .ctl_ok(&["answer", &id_of(&waiting, &beside), "session"])
        .await;
    assert_eq!(finish(first).await.stdout.trim(), "ok");

    let data = world.activity_file().with_file_name("planted.txt");
    for target in [world.settings_file(), data.clone()] {
        let run = world.launch(
            port,
            Some(SESSION),
            &[PYTHON, "-c", WRITE, path_str(&target)],
        );
        let done = finish(run).await;
        assert_eq!(
            done.stdout.trim(),
            "EACCES",
            "{}: {done:?}",
            target.display()
        );
        let entry = world
            .activity_entry("for the app's own file", |e| {
                e["subject"] == path_str(&target)
            })
            .await;
        assert_eq!(entry["by"], "hard_denial", "{entry}");
    }
    assert_eq!(
        std::fs::read(world.settings_file()).expect("settings"),
        settings_before
    );
    assert!(!data.exists());
    assert_eq!(world.ctl_ok(&["pending"]).await, "No requests waiting.\n");
    app.assert_running();
}
