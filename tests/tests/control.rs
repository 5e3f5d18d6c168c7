//! `landstrip-tray ctl` against the real app binary (under the test's X display), with a
//! real landstrip 0.19.2 run holding a write: the held request is listed and answered from
//! the command line, with no display for `ctl` itself. Also: `ctl` with nothing running,
//! and a second start handing its project to the running instance. Nothing is mocked.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use landstrip_tray_tests::finish;
use landstrip_tray_tests::real_app::{path_str, AppWorld, RunningApp};
use serde_json::Value;

/// Starts the app, starts a real landstrip run writing outside the project, and waits
/// (through `ctl pending --wait`) for the held write; returns its `ctl pending --json` item.
async fn held_write(
    world: &AppWorld,
    app: &mut RunningApp,
    target: &Path,
) -> (tokio::process::Child, Value) {
    app.wait_for_control().await;
    let port = app.serving(world, &world.project).await;
    let child = world.write(port, target);
    let waited = world.ctl(&["pending", "--wait", "--json"]).await;
    assert_eq!(waited.code, Some(0), "{waited:?}");
    let items: Value = serde_json::from_str(&waited.stdout)
        .unwrap_or_else(|e| panic!("ctl pending --json: {e}: {:?}", waited.stdout));
    let items = items.as_array().expect("a JSON array").clone();
    assert_eq!(items.len(), 1, "{items:?}");
    (child, items[0].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_lists_a_held_real_write_and_answer_once_lets_it_through() {
    let world = AppWorld::new();
    let mut app = world.start(&[&world.project]);
    let target = world.outside.join("held.txt");
    let (child, item) = held_write(&world, &mut app, &target).await;
    assert_eq!(item["kind"], "filesystem", "{item}");
    assert_eq!(item["operation"], "write", "{item}");
    assert_eq!(item["path"], path_str(&target), "{item}");
    assert_eq!(item["project"], path_str(&world.project), "{item}");
    assert!(
        item["exe"].as_str().is_some_and(|e| e.contains("python")),
        "{item}"
    );
    let id = item["id"].as_u64().expect("a numeric id").to_string();

    // The table a person reads over SSH: a header and the held write's row.
    let table = world.ctl(&["pending"]).await;
    assert_eq!(table.code, Some(0), "{table:?}");
    let lines: Vec<&str> = table.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", table.stdout);
    assert!(lines[0].starts_with("ID"), "{}", table.stdout);
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(row[0], id, "{}", table.stdout);
    assert_eq!(row[1], "write", "{}", table.stdout);
    assert_eq!(row[2], path_str(&target), "{}", table.stdout);
    assert!(
        lines[1].contains(path_str(&world.project)),
        "{}",
        table.stdout
    );

    let status = world.ctl(&["status"]).await;
    assert_eq!(status.code, Some(0), "{status:?}");
    assert!(
        status.stdout.contains(&format!("pid {}", app.pid)) && status.stdout.contains("1 request"),
        "{}",
        status.stdout
    );

    let answered = world.ctl(&["answer", &id, "once"]).await;
    assert_eq!(answered.code, Some(0), "{answered:?}");
    assert_eq!(answered.stdout, format!("allowed request {id} once\n"));
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");
    assert_eq!(done.code, Some(0), "{done:?}");
    assert_eq!(
        std::fs::read_to_string(&target).expect("the write went through"),
        "hello"
    );

    // Answered already: exit 1 and the reason on stderr.
    let again = world.ctl(&["answer", &id, "deny"]).await;
    assert_eq!(again.code, Some(1), "{again:?}");
    assert!(again.stderr.contains("no longer pending"), "{again:?}");
    assert_eq!(again.stdout, "");

    app.assert_running();
    assert_eq!(app.terminate().await, Some(0));
    assert!(
        !world.control_socket().exists(),
        "the control socket was left behind; the app's log:\n{}",
        app.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_answer_deny_fails_the_held_real_write_with_eacces() {
    let world = AppWorld::new();
    let mut app = world.start(&[&world.project]);
    let target = world.outside.join("denied.txt");
    let (child, item) = held_write(&world, &mut app, &target).await;
    assert_eq!(item["path"], path_str(&target), "{item}");
    let id = item["id"].as_u64().expect("a numeric id").to_string();

    let answered = world.ctl(&["answer", &id, "deny"]).await;
    assert_eq!(answered.code, Some(0), "{answered:?}");
    assert_eq!(answered.stdout, format!("denied request {id}\n"));
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");
    assert_eq!(done.code, Some(13), "{done:?}");
    assert!(!target.exists(), "the denied write went through");
    let empty = world.ctl(&["pending"]).await;
    assert_eq!(empty.stdout, "No requests waiting.\n", "{empty:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_with_nothing_running_exits_1_and_says_so() {
    let world = AppWorld::new();
    let socket = world.control_socket();

    let out = world.ctl(&["status"]).await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr.contains("landstrip-tray is not running")
            && out.stderr.contains(path_str(&socket)),
        "{out:?}"
    );

    // A socket directory other users may enter is not trusted, and ctl says why.
    let dir = socket.parent().expect("dir");
    std::fs::create_dir(dir).expect("mkdir");
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let out = world.ctl(&["status"]).await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains("refusing to use") && out.stderr.contains("0755"),
        "{out:?}"
    );

    // A crashed instance's socket file: nothing answers, so "not running".
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    drop(std::os::unix::net::UnixListener::bind(&socket).expect("bind"));
    assert!(socket.exists());
    let out = world.ctl(&["pending", "--json"]).await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("not running"), "{out:?}");

    // A command line that makes no sense: exit 2, before looking for an instance.
    let out = world.ctl(&["answer", "1", "maybe"]).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("not a choice"), "{out:?}");
    let out = world.ctl(&[]).await;
    assert_eq!(out.code, Some(2), "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_start_hands_its_project_to_the_running_instance() {
    let world = AppWorld::new();
    let mut app = world.start(&[&world.project]);
    app.wait_for_control().await;
    let other = world.base.join("other");
    std::fs::create_dir(&other).expect("mkdir");

    // Relative to the second start's directory (the world's base), and with no display: a
    // second instance would fail to start at all.
    let second = world.run(&["--project", "other"]).await;
    assert_eq!(second.code, Some(0), "{second:?}");
    assert!(
        second
            .stderr
            .contains(&format!("already running (pid {})", app.pid))
            && second.stderr.contains("handed it --project other"),
        "{second:?}"
    );
    let record = world
        .record(&other)
        .expect("a discovery file for the handed-over project");
    assert_eq!(record.pid, app.pid, "{record:?}");

    let projects = world.ctl(&["projects", "--json"]).await;
    assert_eq!(projects.code, Some(0), "{projects:?}");
    let list: Value = serde_json::from_str(&projects.stdout).expect("JSON");
    let dirs: Vec<&str> = list
        .as_array()
        .expect("an array")
        .iter()
        .filter_map(|p| p["dir"].as_str())
        .collect();
    assert_eq!(dirs, [path_str(&other), path_str(&world.project)], "{list}");
    // Like --project at start: for this run only.
    let saved = std::fs::read_to_string(world.settings_file()).unwrap_or_default();
    assert!(!saved.contains(path_str(&other)), "{saved}");

    // ctl add-project / remove-project are what a UI action is: saved in the settings.
    std::fs::create_dir(world.base.join("third")).expect("mkdir");
    let third = world.base.join("third");
    let added = world.ctl(&["add-project", "third"]).await;
    assert_eq!(added.code, Some(0), "{added:?}");
    assert!(world.record(&third).is_some_and(|r| r.pid == app.pid));
    let saved = std::fs::read_to_string(world.settings_file()).expect("settings saved");
    assert!(saved.contains(path_str(&third)), "{saved}");
    let removed = world.ctl(&["remove-project", "third"]).await;
    assert_eq!(removed.code, Some(0), "{removed:?}");
    assert!(world.record(&third).is_none(), "its discovery file stayed");
    let saved = std::fs::read_to_string(world.settings_file()).expect("settings");
    assert!(!saved.contains(path_str(&third)), "{saved}");

    app.assert_running();
    assert_eq!(app.terminate().await, Some(0));
}
