//! `landstrip-tray ctl` against the real app binary (under the test's X display), with a
//! real landstrip 0.19.2 run holding a write: the held request is listed and answered from
//! the command line, with no display for `ctl` itself. Also: `ctl` with nothing running,
//! and a second start handing its project to the running instance and bringing up its
//! settings window (seen on the X server). Nothing is mocked.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use landstrip_tray_tests::notification_server::PrivateBus;
use landstrip_tray_tests::real_app::{app_binary, path_str, AppWorld, RunningApp};
use landstrip_tray_tests::tray_host::FakeWatcher;
use landstrip_tray_tests::x11;
use landstrip_tray_tests::{finish, launch_landstrip, Finished, Landstrip, EVENT_TIMEOUT};
use serde_json::Value;

/// The settings window's title (src-tauri/src/app/settings.rs).
const SETTINGS_TITLE: &str = "landstrip-tray settings";

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

    // `landstrip-tray settings` with nothing running: exit 1 and why.
    let out = world.run(&["settings"]).await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("not running"), "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_start_hands_its_project_to_the_running_instance() {
    let world = AppWorld::new();
    // A private bus with a tray host on it: without one the app opens its settings window
    // by itself at start, and the second start's window could not be told from it.
    let bus = PrivateBus::start(&world.base.join("bus")).await;
    let mut watcher = FakeWatcher::start(&bus.address).await;
    let mut app = world.start_with(
        &[&world.project],
        &[
            ("DBUS_SESSION_BUS_ADDRESS", bus.address.as_str()),
            ("NO_AT_BRIDGE", "1"),
        ],
    );
    app.wait_for_control().await;
    watcher.item_from(&app).await;
    app.wait_for_log("tray host present").await;
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
    // The next step, said: how to connect opencode (both set-ups, one leading).
    assert!(
        added.stdout.contains("connect opencode to it")
            && added
                .stdout
                .contains("opencode plugin opencode-landstrip@0.19.1")
            && added
                .stdout
                .contains("opencode plugin install opencode-landstrip"),
        "{added:?}"
    );
    assert!(world.record(&third).is_some_and(|r| r.pid == app.pid));
    let saved = std::fs::read_to_string(world.settings_file()).expect("settings saved");
    assert!(saved.contains(path_str(&third)), "{saved}");
    // Stopping serving it with a real write held there denies that write, as the app's
    // own answer, and removes the discovery file.
    let elsewhere = world.base.join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir elsewhere");
    let third_port = world.record(&third).expect("third's discovery record").port;
    let held = world
        .tapped_held_write(third_port, &elsewhere.join("held.txt"))
        .await;
    let removed = world.ctl(&["remove-project", "third"]).await;
    assert_eq!(removed.code, Some(0), "{removed:?}");
    world
        .assert_stopped_serving(held, &third, app.pid, || app.log())
        .await;
    let saved = std::fs::read_to_string(world.settings_file()).expect("settings");
    assert!(!saved.contains(path_str(&third)), "{saved}");

    // A start with no --project (a launcher, a desktop entry) asks the running instance to
    // show itself and exits: its settings window, not open before, comes up on screen.
    assert_eq!(
        x11::windows(app.pid, SETTINGS_TITLE, false).await,
        Vec::<String>::new(),
        "a settings window before the second start"
    );
    let again = world.run(&[]).await;
    assert_eq!(again.code, Some(0), "{again:?}");
    assert!(
        again
            .stderr
            .contains(&format!("already running (pid {})", app.pid)),
        "{again:?}"
    );
    assert!(
        again.stderr.contains("showed its settings window"),
        "{again:?}"
    );
    x11::wait_windows(
        app.pid,
        SETTINGS_TITLE,
        true,
        EVENT_TIMEOUT,
        "the running instance's settings window shown",
        |w| w.len() == 1,
        || app.log(),
    )
    .await;

    app.assert_running();
    assert_eq!(app.terminate().await, Some(0));
}

/// `ctl policy add` writes the project's file: a real write held meanwhile (its run built
/// before the entry existed) is answered by it, and the next real run, whose landstrip
/// policy now has the entry, writes there with no prompt at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_policy_add_lets_real_writes_through_with_no_prompt() {
    let world = AppWorld::new();
    let mut app = world.start(&[&world.project]);
    let out = world.outside.join("out");
    std::fs::create_dir(&out).expect("mkdir out");
    let held = out.join("held.txt");
    let (child, item) = held_write(&world, &mut app, &held).await;
    let id = item["id"].as_u64().expect("id");

    // DIR relative to ctl's directory (the world's base).
    let added = world
        .ctl_ok(&[
            "policy",
            "add",
            "--project",
            "project",
            "allowWrite",
            path_str(&out),
        ])
        .await;
    assert!(
        added.contains("wrote") && added.contains(path_str(&world.project_policy())),
        "{added}"
    );
    assert!(added.contains(&format!("also answered: {id}")), "{added}");
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");
    let written = std::fs::read_to_string(world.project_policy()).expect("the project file");
    let value: Value = serde_json::from_str(&written).expect("valid JSON");
    assert_eq!(
        value["filesystem"]["allowWrite"],
        serde_json::json!([path_str(&out)])
    );

    // The held write was answered by the new entry: it counts as that entry's hit.
    world
        .activity_entry("the held write answered by the policy", |e| {
            e["by"] == "policy" && e["subject"] == path_str(&held)
        })
        .await;
    let shown = world.ctl_ok(&["policy", "show", "project"]).await;
    assert!(
        shown.contains(&format!("{}  [project]", path_str(&out))) && shown.contains("[default]"),
        "{shown}"
    );
    let line = shown
        .lines()
        .find(|l| l.starts_with(&format!("    {}  [project]", path_str(&out))))
        .unwrap_or_else(|| panic!("no line for the entry: {shown}"));
    assert!(line.contains("HITS: 1 (last "), "{line}");
    let json = world.ctl_ok(&["policy", "show", "project", "--json"]).await;
    let view: Value = serde_json::from_str(&json).expect("policy show --json");
    assert_eq!(view["projectFile"]["state"]["state"], "valid", "{view}");

    let target = out.join("x.txt");
    let done = finish(world.write(app.port(), &target)).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}\n{}", app.log());
    assert_eq!(std::fs::read_to_string(&target).expect("written"), "hello");
    assert_eq!(world.ctl_ok(&["pending"]).await, "No requests waiting.\n");
    let asked = world
        .ctl_ok(&["activity", "--json", "--grep", "x.txt"])
        .await;
    assert_eq!(asked.trim(), "[]", "the second run asked: {asked}");
    assert_eq!(app.terminate().await, Some(0));
}

/// Refusals: a VALUE that is not a boolean is a usage error (exit 2, nothing sent); a
/// malformed file is reported (exit 1, the reason on stderr) and keeps its bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_policy_refusals_write_nothing() {
    let world = AppWorld::new();
    let mut app = world.start(&[&world.project]);
    app.wait_for_control().await;

    let out = world
        .ctl(&[
            "policy",
            "set",
            "--project",
            "project",
            "enabled",
            "notabool",
        ])
        .await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("true or false"), "{out:?}");
    assert!(!world.project_policy().exists());

    let out = world
        .ctl(&["policy", "add", "--project", "project", "allowAll", "x"])
        .await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("allowWrite"), "{out:?}");

    let file = world.project_policy();
    std::fs::create_dir_all(file.parent().expect("dir")).expect("mkdir");
    let malformed = b"{\"filesystem\": {\"allowWrite\": [\n";
    std::fs::write(&file, malformed).expect("write");
    let out = world
        .ctl(&["policy", "add", "--project", "project", "allowWrite", "out"])
        .await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr.contains("nothing was written") && out.stderr.contains("sandbox.json:"),
        "{out:?}"
    );
    assert_eq!(std::fs::read(&file).expect("read"), malformed);
    let shown = world.ctl_ok(&["policy", "show", "project"]).await;
    assert!(shown.contains("INVALID at line"), "{shown}");
    assert_eq!(std::fs::read(&file).expect("read"), malformed);
    assert_eq!(app.terminate().await, Some(0));
}

/// A session grant from a real held write is listed by `ctl grants`; `ctl revoke` drops it,
/// and the next identical real write asks again; denied, it shows in `ctl activity`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_grants_revoke_and_activity_round_trip() {
    let world = AppWorld::new();
    let mut app = world.start(&[&world.project]);
    let target = world.outside.join("granted.txt");
    let (child, item) = held_write(&world, &mut app, &target).await;
    let id = item["id"].as_u64().expect("id").to_string();
    world.ctl_ok(&["answer", &id, "session"]).await;
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");

    let json = world.ctl_ok(&["grants", "--json"]).await;
    let grants: Value = serde_json::from_str(&json).expect("grants --json");
    let grants = grants.as_array().expect("a list").clone();
    assert_eq!(grants.len(), 1, "{grants:?}");
    assert_eq!(grants[0]["key"]["project"], path_str(&world.project));
    let grant = grants[0]["id"].as_u64().expect("grant id").to_string();
    let table = world.ctl_ok(&["grants"]).await;
    assert!(table.starts_with("ID"), "{table}");
    assert!(
        table.lines().nth(1).is_some_and(|l| l.starts_with(&grant)),
        "{table}"
    );

    let revoked = world.ctl_ok(&["revoke", &grant]).await;
    assert!(
        revoked.contains(&format!("revoked grant {grant}")),
        "{revoked}"
    );
    assert_eq!(world.ctl_ok(&["grants"]).await, "No session grants.\n");
    let again = world.ctl(&["revoke", &grant]).await;
    assert_eq!(again.code, Some(1), "{again:?}");
    assert!(again.stderr.contains(&grant), "{again:?}");

    // The same write asks again, and is denied.
    let port = app.port();
    let child = world.write(port, &target);
    let waited = world.ctl_ok(&["pending", "--wait", "--json"]).await;
    let items: Value = serde_json::from_str(&waited).expect("pending --json");
    assert_eq!(items[0]["path"], path_str(&target), "{items}");
    let id = items[0]["id"].as_u64().expect("id").to_string();
    world.ctl_ok(&["answer", &id, "deny"]).await;
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");

    let json = world
        .ctl_ok(&["activity", "--json", "--decision", "deny"])
        .await;
    let entries: Value = serde_json::from_str(&json).expect("activity --json");
    let entries = entries.as_array().expect("a list");
    assert!(
        entries.iter().all(|e| e["outcome"] == "deny") && !entries.is_empty(),
        "{entries:?}"
    );
    assert!(
        entries
            .iter()
            .any(|e| e["subject"] == path_str(&target) && e["by"] == "user"),
        "{entries:?}"
    );
    let table = world
        .ctl_ok(&[
            "activity",
            "--project",
            "project",
            "--grep",
            "granted",
            "--limit",
            "1",
        ])
        .await;
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 2, "{table}");
    assert!(
        lines[1].contains("deny") && lines[1].contains(path_str(&target)),
        "{table}"
    );
    assert_eq!(app.terminate().await, Some(0));
}

/// `landstrip-tray ARGS…` inside the real landstrip 0.19.2, launched as the plugin launches
/// an agent's command, with the app's environment (so it finds the same control socket).
async fn inside_sandbox(world: &AppWorld, port: u16, args: &[&str]) -> Finished {
    let app_command = world.command();
    // env(1) takes its -u options before the assignments.
    let (mut unset, mut set) = (Vec::new(), Vec::new());
    for (key, value) in app_command.as_std().get_envs() {
        let key = key.to_str().expect("utf-8 variable name");
        match value {
            Some(value) => set.push(format!("{key}={}", value.to_str().expect("utf-8"))),
            None => unset.extend(["-u".to_owned(), key.to_owned()]),
        }
    }
    let mut program = vec!["/usr/bin/env".to_owned()];
    program.append(&mut unset);
    program.append(&mut set);
    program.push(path_str(&app_binary()).to_owned());
    program.extend(args.iter().map(|a| (*a).to_owned()));
    let program: Vec<&str> = program.iter().map(String::as_str).collect();
    let child = launch_landstrip(
        Landstrip::V0_19,
        world.root.path(),
        &world.project,
        &world.home,
        port,
        None,
        &program,
    );
    finish(child).await
}

/// From inside a real sandbox (whose policy lets it reach the control socket), policy
/// changes, revoking and opening the settings window are refused and write nothing; the
/// policy, the grants and the activity may still be looked at.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inside_a_sandbox_ctl_may_look_at_the_policy_but_not_change_it() {
    let world = AppWorld::new();
    let sockets = br#"{"network": {"allowAllUnixSockets": true}}"#;
    let file = world.project_policy();
    std::fs::create_dir_all(file.parent().expect("dir")).expect("mkdir .opencode");
    std::fs::write(&file, sockets).expect("write sandbox.json");
    let mut app = world.start(&[&world.project]);
    app.wait_for_control().await;
    let port = app.serving(&world, &world.project).await;
    let project = path_str(&world.project);

    for args in [
        &[
            "ctl",
            "policy",
            "add",
            "--project",
            project,
            "allowWrite",
            "/",
        ][..],
        &[
            "ctl",
            "policy",
            "set",
            "--project",
            project,
            "enabled",
            "false",
        ],
        &["ctl", "policy", "remove", "--global", "allowRead", "."],
        &["ctl", "revoke", "1"],
        &["settings"],
    ] {
        let refused = inside_sandbox(&world, port, args).await;
        assert_eq!(refused.code, Some(1), "{args:?}: {refused:?}");
        assert!(
            refused.stderr.contains("from inside a sandbox"),
            "{args:?}: {refused:?}"
        );
        assert_eq!(std::fs::read(&file).expect("read"), sockets, "{args:?}");
        assert!(!world.global_policy().exists(), "{args:?}");
    }
    for args in [
        &["ctl", "policy", "show", project][..],
        &["ctl", "grants"],
        &["ctl", "activity", "--json"],
    ] {
        let looked = inside_sandbox(&world, port, args).await;
        assert_eq!(looked.code, Some(0), "{args:?}: {looked:?}");
    }
    assert_eq!(app.terminate().await, Some(0));
}

/// `ctl policy replace` edits an entry in place (same position, the rest of the file
/// byte for byte); an entry giving very broad access is refused (exit 1, the reason on
/// stderr, nothing written) unless `--broad`; `ctl policy undo` restores the bytes the
/// last save replaced, removes a file that save created, and refuses (file unchanged)
/// once the file was edited since.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_policy_replace_broad_refusal_and_undo() {
    let world = AppWorld::new();
    let mut app = world.start(&[&world.project]);
    app.wait_for_control().await;
    let file = world.project_policy();
    std::fs::create_dir_all(file.parent().expect("dir")).expect("mkdir");
    let original = "{\n  \"filesystem\": {\"allowRead\": [\"~/a\",   \"~/b\", \"~/c\"]}\n}\n";
    std::fs::write(&file, original).expect("write");

    let out = world
        .ctl_ok(&[
            "policy",
            "replace",
            "--project",
            "project",
            "allowRead",
            "~/b",
            "~/.cache/x",
        ])
        .await;
    assert!(
        out.contains("wrote") && out.contains(path_str(&file)),
        "{out}"
    );
    let replaced = std::fs::read_to_string(&file).expect("read");
    assert_eq!(replaced, original.replace("\"~/b\"", "\"~/.cache/x\""));

    // Broad: refused without --broad, for replace and add alike; nothing written.
    for args in [
        &[
            "policy",
            "replace",
            "--project",
            "project",
            "allowRead",
            "~/a",
            "~",
        ][..],
        &["policy", "add", "--project", "project", "allowWrite", "/"][..],
    ] {
        let refused = world.ctl(args).await;
        assert_eq!(refused.code, Some(1), "{args:?}: {refused:?}");
        assert!(
            refused.stderr.contains("very broad access") && refused.stderr.contains("--broad"),
            "{refused:?}"
        );
        assert_eq!(std::fs::read_to_string(&file).expect("read"), replaced);
    }
    // The refusal wrote nothing, so undo still undoes the replace: the original bytes.
    let undone = world.ctl_ok(&["policy", "undo"]).await;
    assert!(
        undone.contains("restored") && undone.contains(path_str(&file)),
        "{undone}"
    );
    assert_eq!(std::fs::read(&file).expect("read"), original.as_bytes());
    let again = world.ctl(&["policy", "undo"]).await;
    assert_eq!(again.code, Some(1), "only the last save: {again:?}");

    // Confirmed, the broad entry is saved.
    world
        .ctl_ok(&[
            "policy",
            "add",
            "--project",
            "project",
            "allowWrite",
            "~",
            "--broad",
        ])
        .await;
    let with_home = std::fs::read_to_string(&file).expect("read");
    assert!(with_home.contains("\"allowWrite\": [\"~\"]"), "{with_home}");

    // A save that created the global file: undo removes it again.
    let global = world.global_policy();
    assert!(!global.exists());
    world
        .ctl_ok(&["policy", "add", "--global", "allowedDomains", "example.org"])
        .await;
    assert!(global.exists());
    let undone = world.ctl_ok(&["policy", "undo"]).await;
    assert!(undone.contains("removed"), "{undone}");
    assert!(!global.exists());

    // Edited by hand after the save: undo refuses and leaves the file as it is.
    world
        .ctl_ok(&[
            "policy",
            "remove",
            "--project",
            "project",
            "allowWrite",
            "~",
        ])
        .await;
    let by_hand = "{\"filesystem\": {\"allowRead\": [\"~/by-hand\"]}}\n";
    std::fs::write(&file, by_hand).expect("external edit");
    let refused = world.ctl(&["policy", "undo"]).await;
    assert_eq!(refused.code, Some(1), "{refused:?}");
    assert!(refused.stderr.contains("changed since"), "{refused:?}");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), by_hand);
    assert_eq!(app.terminate().await, Some(0));
}
