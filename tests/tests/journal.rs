//! The write journal and undo (README "Taking a write back", ARCHITECTURE "The write
//! journal") through the real binary in `--headless` mode and real landstrip 0.19.2 runs:
//! - an existing file overwritten, a file created and a file removed, answered once, then
//!   the same by a session grant: each journaled; `ctl journal undo --session` puts bytes
//!   and modes back exactly, and `--dry-run` first changes nothing;
//! - a file changed after its run is refused without `--force` (exit 1), restored with it;
//!   a rename over an existing file is listed as not undoable;
//! - a folder swapped for a symbolic link between the run and the undo does not redirect
//!   the undo.
//!
//! Nothing is mocked. A run's end is fingerprinted when the app sees its connection close,
//! so [`journal_ended`] polls `ctl journal --json` (bounded, 50 ms apart) until it has.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use landstrip_tray_tests::real_app::{path_str, AppWorld, RunningApp};
use landstrip_tray_tests::{finish, EVENT_TIMEOUT, PYTHON};
use serde_json::Value;
use tokio::time::Instant;

/// In folder argv[1]: overwrites existing.txt, creates new.txt, removes doomed.txt, one
/// after the other; prints "STEP ok" or "STEP EACCES" for each.
const THREE_WRITES: &str = r#"
import os, sys
d = sys.argv[1]
def step(name, act):
    try:
        act()
        print(name, "ok", flush=True)
    except PermissionError:
        print(name, "EACCES", flush=True)
def write(name, text):
    with open(os.path.join(d, name), "w") as f:
        f.write(text)
step("overwrite", lambda: write("existing.txt", "after, and longer"))
step("create", lambda: write("new.txt", "made by the run"))
step("remove", lambda: os.unlink(os.path.join(d, "doomed.txt")))
"#;

/// Writes "run's" to argv[1], or with argv[2] renames argv[1] over argv[2].
const WRITE_OR_RENAME: &str = r#"
import os, sys
try:
    if len(sys.argv) > 2:
        os.rename(sys.argv[1], sys.argv[2])
    else:
        with open(sys.argv[1], "w") as f:
            f.write("run's")
    print("ok")
except PermissionError:
    print("EACCES")
"#;

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

/// The first waiting request's id, waiting for one (bounded).
async fn next_pending(world: &AppWorld) -> String {
    let deadline = Instant::now() + EVENT_TIMEOUT;
    loop {
        let json = world.ctl_ok(&["--json", "pending"]).await;
        let items: Value = serde_json::from_str(&json).expect("pending JSON");
        if let Some(first) = items.as_array().and_then(|a| a.first()) {
            return first["id"].as_u64().expect("a numeric id").to_string();
        }
        assert!(
            Instant::now() < deadline,
            "no request waited within {EVENT_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `ctl journal --session S --json` once `count` entries are there and their run's end
/// is fingerprinted (bounded); the entries.
async fn journal_ended(world: &AppWorld, session: &str, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + EVENT_TIMEOUT;
    loop {
        let json = world
            .ctl_ok(&["journal", "--session", session, "--json"])
            .await;
        let items: Value = serde_json::from_str(&json).expect("journal JSON");
        let items = items.as_array().expect("a list").clone();
        if items.len() >= count && items.iter().all(|i| !i["ended_ms"].is_null()) {
            return items;
        }
        assert!(
            Instant::now() < deadline,
            "{count} ended journal entries did not appear within {EVENT_TIMEOUT:?}: {items:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .expect("stat")
        .permissions()
        .mode()
        & 0o7777
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A folder with existing.txt (0640) and doomed.txt (0604).
fn three_files(dir: &Path) {
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::write(dir.join("existing.txt"), "before\n").expect("write");
    set_mode(&dir.join("existing.txt"), 0o640);
    std::fs::write(dir.join("doomed.txt"), "doomed\n").expect("write");
    set_mode(&dir.join("doomed.txt"), 0o604);
}

/// What the run left, as [`THREE_WRITES`] leaves it.
fn assert_as_the_run_left(dir: &Path) {
    assert_eq!(
        std::fs::read_to_string(dir.join("existing.txt")).expect("read"),
        "after, and longer"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("new.txt")).expect("read"),
        "made by the run"
    );
    assert!(!dir.join("doomed.txt").exists());
}

/// Undoes `session` and checks every path is as it was before the run, exactly.
async fn undo_and_check(world: &AppWorld, session: &str, dir: &Path) {
    let dry = world
        .ctl(&["journal", "undo", "--session", session, "--dry-run"])
        .await;
    assert_eq!(dry.code, Some(0), "{dry:?}");
    assert_eq!(dry.stdout.matches("would restore").count(), 3, "{dry:?}");
    assert_as_the_run_left(dir);

    let undone = world
        .ctl(&["--json", "journal", "undo", "--session", session])
        .await;
    assert_eq!(undone.code, Some(0), "{undone:?}");
    let outcomes: Value = serde_json::from_str(&undone.stdout).expect("undo JSON");
    let outcomes = outcomes.as_array().expect("a list");
    assert_eq!(outcomes.len(), 3, "{outcomes:?}");
    assert!(
        outcomes.iter().all(|o| o["outcome"] == "restored"),
        "{outcomes:?}"
    );
    // Newest write first.
    let ids: Vec<u64> = outcomes
        .iter()
        .map(|o| o["id"].as_u64().expect("id"))
        .collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "{ids:?}");
    assert_eq!(
        std::fs::read(dir.join("existing.txt")).expect("read"),
        b"before\n"
    );
    assert_eq!(mode(&dir.join("existing.txt")), 0o640);
    assert!(
        !dir.join("new.txt").exists(),
        "the created file is still there"
    );
    assert_eq!(
        std::fs::read(dir.join("doomed.txt")).expect("read"),
        b"doomed\n"
    );
    assert_eq!(mode(&dir.join("doomed.txt")), 0o604);
    // Each undo is in the activity, by undo.
    let entry = world
        .activity_entry("the undo of doomed.txt", |e| {
            e["by"] == "undo" && e["subject"] == path_str(&dir.join("doomed.txt"))
        })
        .await;
    assert_eq!(entry["outcome"], "restored", "{entry}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_answered_once_and_by_a_session_grant_are_undone_exactly() {
    let world = AppWorld::new();
    let (mut app, port) = headless(&world).await;

    // Answered once each.
    let once = world.outside.join("once");
    three_files(&once);
    let run = world.launch(
        port,
        Some("ses_journal_once"),
        &[PYTHON, "-c", THREE_WRITES, path_str(&once)],
    );
    for _ in 0..3 {
        let id = next_pending(&world).await;
        world.ctl_ok(&["answer", &id, "once"]).await;
    }
    let done = finish(run).await;
    assert_eq!(
        done.stdout, "overwrite ok\ncreate ok\nremove ok\n",
        "{done:?}"
    );
    assert_as_the_run_left(&once);
    let items = journal_ended(&world, "ses_journal_once", 3).await;
    let befores: Vec<&str> = items
        .iter()
        .map(|i| i["before"].as_str().expect("before"))
        .collect();
    assert_eq!(befores, ["file", "absent", "file"], "{items:?}");
    assert!(items.iter().all(|i| i["undoable"] == true), "{items:?}");
    assert!(
        items
            .iter()
            .all(|i| i["id"].is_u64() && i["at_ms"].is_u64()),
        "{items:?}"
    );
    assert_eq!(items[0]["path"], path_str(&once.join("existing.txt")));
    assert_eq!(items[0]["session"], "ses_journal_once");
    undo_and_check(&world, "ses_journal_once", &once).await;

    // The first answered for the session: the grant allows the other two by itself.
    let granted = world.outside.join("granted");
    three_files(&granted);
    let run = world.launch(
        port,
        Some("ses_journal_grant"),
        &[PYTHON, "-c", THREE_WRITES, path_str(&granted)],
    );
    let id = next_pending(&world).await;
    world.ctl_ok(&["answer", &id, "session"]).await;
    let done = finish(run).await;
    assert_eq!(
        done.stdout, "overwrite ok\ncreate ok\nremove ok\n",
        "{done:?}"
    );
    let items = journal_ended(&world, "ses_journal_grant", 3).await;
    assert_eq!(items.len(), 3, "{items:?}");
    let removal = world
        .activity_entry("the granted removal", |e| {
            e["subject"] == path_str(&granted.join("doomed.txt")) && e["by"] == "session_grant"
        })
        .await;
    assert_eq!(removal["outcome"], "allow", "{removal}");
    undo_and_check(&world, "ses_journal_grant", &granted).await;
    app.assert_running();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_changed_after_its_run_is_refused_without_force_and_a_rename_is_not_undoable() {
    let world = AppWorld::new();
    let (mut app, port) = headless(&world).await;
    let dir = world.outside.join("changed");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let file = dir.join("f.txt");
    std::fs::write(&file, "one").expect("write");

    let run = world.launch(
        port,
        Some("ses_journal_changed"),
        &[PYTHON, "-c", WRITE_OR_RENAME, path_str(&file)],
    );
    let id = next_pending(&world).await;
    world.ctl_ok(&["answer", &id, "once"]).await;
    assert_eq!(finish(run).await.stdout.trim(), "ok");
    journal_ended(&world, "ses_journal_changed", 1).await;
    std::fs::write(&file, "changed by hand").expect("write");

    let refused = world
        .ctl(&["journal", "undo", "--session", "ses_journal_changed"])
        .await;
    assert_eq!(refused.code, Some(1), "{refused:?}");
    assert!(
        refused.stdout.contains("refused")
            && refused.stdout.contains("changed since the run ended"),
        "{refused:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        "changed by hand"
    );
    let forced = world
        .ctl(&[
            "journal",
            "undo",
            "--session",
            "ses_journal_changed",
            "--force",
        ])
        .await;
    assert_eq!(forced.code, Some(0), "{forced:?}");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "one");

    // A rename over an existing file: its trap names the source only.
    let (source, over) = (dir.join("source.txt"), dir.join("over.txt"));
    std::fs::write(&source, "source").expect("write");
    std::fs::write(&over, "replaced").expect("write");
    let run = world.launch(
        port,
        Some("ses_journal_rename"),
        &[
            PYTHON,
            "-c",
            WRITE_OR_RENAME,
            path_str(&source),
            path_str(&over),
        ],
    );
    let deadline = Instant::now() + EVENT_TIMEOUT;
    let mut finished = None;
    let mut run = Some(run);
    while finished.is_none() {
        // Each trap the rename raises is allowed once (one, or one per name).
        let json = world.ctl_ok(&["--json", "pending"]).await;
        let items: Value = serde_json::from_str(&json).expect("pending JSON");
        for item in items.as_array().expect("a list") {
            let id = item["id"].as_u64().expect("id").to_string();
            world.ctl_ok(&["answer", &id, "once"]).await;
        }
        if let Some(child) = run.as_mut() {
            if child.try_wait().expect("try_wait").is_some() {
                finished = Some(finish(run.take().expect("child")).await);
            }
        }
        assert!(Instant::now() < deadline, "the rename did not finish");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let finished = finished.expect("finished");
    assert_eq!(finished.stdout.trim(), "ok", "{finished:?}");
    let items = journal_ended(&world, "ses_journal_rename", 1).await;
    assert!(!items.is_empty(), "{items:?}");
    for item in &items {
        assert_eq!(item["before"], "not_undoable", "{items:?}");
        assert_eq!(item["undoable"], false, "{items:?}");
    }
    let rename = items
        .iter()
        .find(|i| i["path"] == path_str(&source))
        .unwrap_or_else(|| panic!("the rename's source is not listed: {items:?}"));
    assert!(
        rename["why"]
            .as_str()
            .is_some_and(|w| w.contains("a rename names only its source")),
        "{rename}"
    );
    let refused = world
        .ctl(&["journal", "undo", "--session", "ses_journal_rename"])
        .await;
    assert_eq!(refused.code, Some(1), "{refused:?}");
    assert_eq!(std::fs::read_to_string(&over).expect("read"), "source");
    app.assert_running();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_swapped_for_a_link_between_the_run_and_the_undo_does_not_redirect_it() {
    let world = AppWorld::new();
    let (mut app, port) = headless(&world).await;
    let dir = world.outside.join("swap");
    let sub = dir.join("sub");
    std::fs::create_dir_all(&sub).expect("mkdir");
    let victim = dir.join("victim");
    std::fs::create_dir_all(&victim).expect("mkdir");
    std::fs::write(victim.join("f.txt"), "the victim's").expect("write");
    set_mode(&victim.join("f.txt"), 0o600);

    let run = world.launch(
        port,
        Some("ses_journal_swap"),
        &[PYTHON, "-c", WRITE_OR_RENAME, path_str(&sub.join("f.txt"))],
    );
    let id = next_pending(&world).await;
    world.ctl_ok(&["answer", &id, "once"]).await;
    assert_eq!(finish(run).await.stdout.trim(), "ok");
    let items = journal_ended(&world, "ses_journal_swap", 1).await;
    assert_eq!(items[0]["before"], "absent", "{items:?}");

    // The folder the write went into becomes a link to another: an undo that followed it
    // would delete the victim's file.
    std::fs::rename(&sub, dir.join("sub.real")).expect("rename");
    std::os::unix::fs::symlink(&victim, &sub).expect("symlink");
    let undone = world
        .ctl(&[
            "journal",
            "undo",
            "--session",
            "ses_journal_swap",
            "--force",
        ])
        .await;
    assert_eq!(undone.code, Some(1), "{undone:?}");
    assert!(undone.stdout.contains("symbolic link"), "{undone:?}");
    assert_eq!(
        std::fs::read_to_string(victim.join("f.txt")).expect("the victim's file is gone"),
        "the victim's"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("sub.real/f.txt")).expect("read"),
        "run's"
    );
    app.assert_running();
}

/// Runs [`WRITE_OR_RENAME`] on `file` in `session`, answering its one request once; the
/// request as `ctl pending --json` listed it.
async fn write_answered_once(world: &AppWorld, port: u16, session: &str, file: &Path) -> Value {
    let run = world.launch(
        port,
        Some(session),
        &[PYTHON, "-c", WRITE_OR_RENAME, path_str(file)],
    );
    let id = next_pending(world).await;
    let json = world.ctl_ok(&["--json", "pending"]).await;
    let items: Value = serde_json::from_str(&json).expect("pending JSON");
    let item = items
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|i| i["id"].as_u64().map(|n| n.to_string()) == Some(id.clone()))
        })
        .cloned()
        .expect("the request listed");
    world.ctl_ok(&["answer", &id, "once"]).await;
    assert_eq!(finish(run).await.stdout.trim(), "ok");
    item
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_limits_a_file_is_too_large_before_the_answer_and_the_oldest_session_is_evicted() {
    let world = AppWorld::new();
    let (mut app, port) = headless(&world).await;
    let dir = world.outside.join("limits");
    std::fs::create_dir_all(&dir).expect("mkdir");

    // Over the per-file limit: said in the request before the answer, listed too_large.
    world
        .ctl_ok(&["config", "set", "journalFileLimit", "1KiB"])
        .await;
    let big = dir.join("big.bin");
    std::fs::write(&big, vec![b'b'; 2048]).expect("write");
    let item = write_answered_once(&world, port, "ses_journal_big", &big).await;
    assert!(
        item["undo"]
            .as_str()
            .is_some_and(|u| u.starts_with("cannot be undone: too large")),
        "{item}"
    );
    let items = journal_ended(&world, "ses_journal_big", 1).await;
    assert_eq!(items[0]["before"], "too_large", "{items:?}");
    assert_eq!(items[0]["undoable"], false, "{items:?}");

    // At the total limit the oldest session's kept contents go first.
    world
        .ctl_ok(&["config", "set", "journalFileLimit", "1MiB"])
        .await;
    world
        .ctl_ok(&["config", "set", "journalLimit", "1MiB"])
        .await;
    let shown = world.ctl_ok(&["config"]).await;
    assert!(
        shown.contains("journalLimit       1MiB") && shown.contains("journalFileLimit   1MiB"),
        "{shown}"
    );
    let saved: Value =
        serde_json::from_slice(&std::fs::read(world.settings_file()).expect("settings"))
            .expect("settings JSON");
    assert_eq!(saved["journalLimit"], 1 << 20, "{saved}");
    let refused = world
        .ctl(&["config", "set", "journalLimit", "2 parsecs"])
        .await;
    assert_eq!(refused.code, Some(2), "{refused:?}");
    let (a, b) = (dir.join("a.bin"), dir.join("b.bin"));
    std::fs::write(&a, vec![b'a'; 600 << 10]).expect("write");
    std::fs::write(&b, vec![b'b'; 600 << 10]).expect("write");
    let item = write_answered_once(&world, port, "ses_journal_a", &a).await;
    assert!(item["undo"].is_null(), "{item}");
    journal_ended(&world, "ses_journal_a", 1).await;
    write_answered_once(&world, port, "ses_journal_b", &b).await;
    let first = journal_ended(&world, "ses_journal_a", 1).await;
    assert_eq!(first[0]["undoable"], false, "{first:?}");
    assert!(
        first[0]["why"]
            .as_str()
            .is_some_and(|w| w.starts_with("evicted")),
        "{first:?}"
    );
    let second = journal_ended(&world, "ses_journal_b", 1).await;
    assert_eq!(second[0]["undoable"], true, "{second:?}");

    // The journal's modes: a kept file may hold secrets.
    let journal = world.activity_file().with_file_name("journal");
    assert_eq!(mode(&journal), 0o700);
    assert_eq!(mode(&journal.join("blobs")), 0o700);
    assert_eq!(mode(&journal.join("index.jsonl")), 0o600);
    let blobs: Vec<_> = std::fs::read_dir(journal.join("blobs"))
        .expect("blobs")
        .flatten()
        .collect();
    assert_eq!(
        blobs.len(),
        1,
        "only the newest session's contents are kept"
    );
    assert_eq!(mode(&blobs[0].path()), 0o600);

    let undone = world
        .ctl(&["journal", "undo", "--session", "ses_journal_b"])
        .await;
    assert_eq!(undone.code, Some(0), "{undone:?}");
    assert_eq!(std::fs::read(&b).expect("read"), vec![b'b'; 600 << 10]);
    app.assert_running();
}

/// Removes the link argv[1]; prints ok or EACCES.
const UNLINK: &str = r#"
import os, sys
try:
    os.unlink(sys.argv[1])
    print("ok")
except PermissionError:
    print("EACCES")
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landstrip_0_18_removing_a_links_target_for_its_unlink_gets_the_target_back() {
    let world = AppWorld::new();
    let (mut app, port) = headless(&world).await;
    let dir = world.outside.join("links");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let (target, link) = (dir.join("target.txt"), dir.join("link"));
    std::fs::write(&target, "the target").expect("write");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");

    let run = landstrip_tray_tests::launch_landstrip_with_policy(
        landstrip_tray_tests::Landstrip::V0_18,
        &world.landstrip_policy(),
        &world.project,
        &world.home,
        port,
        Some("ses_journal_link"),
        &[PYTHON, "-c", UNLINK, path_str(&link)],
    );
    let id = next_pending(&world).await;
    world.ctl_ok(&["answer", &id, "once"]).await;
    assert_eq!(finish(run).await.stdout.trim(), "ok");
    // What 0.18.27 does with the allowed unlink of a link: the target goes, the link stays.
    assert!(!target.exists(), "the target is still there");
    assert!(std::fs::symlink_metadata(&link).is_ok(), "the link is gone");
    let items = journal_ended(&world, "ses_journal_link", 1).await;
    assert_eq!(items[0]["path"], path_str(&target), "{items:?}");
    assert_eq!(items[0]["before"], "file", "{items:?}");

    let undone = world
        .ctl(&["journal", "undo", "--session", "ses_journal_link"])
        .await;
    assert_eq!(undone.code, Some(0), "{undone:?}");
    assert_eq!(
        std::fs::read_to_string(&target).expect("the target is back"),
        "the target"
    );
    assert_eq!(std::fs::read_link(&link).expect("the link"), target);
    app.assert_running();
}
