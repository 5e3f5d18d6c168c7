//! `landstrip-tray ctl` run inside the sandbox it would answer for. The real app binary
//! (under the test's X display) holds a real landstrip 0.19.2 write; then the app's own
//! `ctl answer ID once` is started the way opencode-landstrip starts an agent's command
//! (the real landstrip, fd 3 to the app's query port, the policy built from the project's
//! sandbox.json, which allows every Unix socket so the control socket can be reached). It
//! is refused, the write stays held, `ctl pending` from inside is still served, and the same
//! command outside the sandbox lets the write through. Nothing is mocked.

use std::path::Path;

use landstrip_tray_tests::real_app::{app_binary, AppWorld, RunningApp};
use landstrip_tray_tests::{finish, launch_landstrip, Finished, Landstrip, PYTHON, WRITE};
use serde_json::Value;

/// The policy an agent would need to reach the control socket at all.
const UNIX_SOCKETS: &str = r#"{"network": {"allowAllUnixSockets": true}}"#;

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 test path")
}

/// The app's port as its discovery record names it.
fn port(world: &AppWorld, app: &RunningApp) -> u16 {
    world
        .record(&world.project)
        .filter(|r| r.pid == app.pid)
        .unwrap_or_else(|| panic!("no discovery record of the app; its log:\n{}", app.log()))
        .port
}

/// `landstrip-tray ctl ARGS…` inside the real landstrip, launched as the plugin launches
/// an agent's command, with the environment [`AppWorld::command`] gives the app (so it finds
/// the same control socket). Waits for it (bounded).
async fn ctl_inside(world: &AppWorld, app: &RunningApp, args: &[&str]) -> Finished {
    let app_command = world.command();
    let std_command = app_command.as_std();
    // env(1) takes its -u options before the assignments.
    let (mut unset, mut set) = (Vec::new(), Vec::new());
    for (key, value) in std_command.get_envs() {
        let key = key.to_str().expect("utf-8 variable name");
        match value {
            Some(value) => {
                let value = value.to_str().expect("utf-8 variable");
                set.push(format!("{key}={value}"));
            }
            None => unset.extend(["-u".to_owned(), key.to_owned()]),
        }
    }
    let mut program = vec!["/usr/bin/env".to_owned()];
    program.append(&mut unset);
    program.append(&mut set);
    program.push(path_str(&app_binary()).to_owned());
    program.push("ctl".to_owned());
    program.extend(args.iter().map(|a| (*a).to_owned()));
    let program: Vec<&str> = program.iter().map(String::as_str).collect();
    let child = launch_landstrip(
        Landstrip::V0_19,
        world.root.path(),
        &world.project,
        &world.home,
        port(world, app),
        None,
        &program,
    );
    finish(child).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_answer_inside_the_sandbox_is_refused_and_outside_lets_the_write_through() {
    let world = AppWorld::new();
    let policy_dir = world.project.join(".opencode");
    std::fs::create_dir_all(&policy_dir).expect("mkdir .opencode");
    std::fs::write(policy_dir.join("sandbox.json"), UNIX_SOCKETS).expect("write sandbox.json");
    let mut app = world.start(&[&world.project]);
    app.wait_for_control().await;

    let target = world.outside.join("held.txt");
    let mut writer = launch_landstrip(
        Landstrip::V0_19,
        world.root.path(),
        &world.project,
        &world.home,
        port(&world, &app),
        None,
        &[PYTHON, "-c", WRITE, path_str(&target)],
    );
    let waited = world.ctl(&["pending", "--wait", "--json"]).await;
    assert_eq!(waited.code, Some(0), "{waited:?}");
    let items: Value = serde_json::from_str(&waited.stdout)
        .unwrap_or_else(|e| panic!("ctl pending --json: {e}: {:?}", waited.stdout));
    let item = &items[0];
    assert_eq!(item["path"], path_str(&target), "{items}");
    let id = item["id"].as_u64().expect("a numeric id").to_string();

    let refused = ctl_inside(&world, &app, &["answer", &id, "once"]).await;
    assert_eq!(refused.code, Some(1), "{refused:?}");
    assert_eq!(refused.stdout, "", "{refused:?}");
    assert!(
        refused
            .stderr
            .contains("refused: this request comes from inside a sandbox (pid ")
            && refused
                .stderr
                .contains("; answer it from outside the sandbox"),
        "{refused:?}"
    );
    // The app warns, naming the process it refused.
    let pid = refused
        .stderr
        .split("(pid ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_else(|| panic!("no pid in {:?}", refused.stderr));
    app.wait_for_log(&format!("from pid {pid}, inside a sandbox"))
        .await;

    // Still held: the writer has not finished, nothing is written, and the request is
    // listed, from inside as from outside (looking is allowed there).
    assert!(
        writer.try_wait().expect("try_wait").is_none(),
        "the held write finished although nobody answered it"
    );
    assert!(!target.exists(), "the write went through");
    let looked = ctl_inside(&world, &app, &["pending", "--json"]).await;
    assert_eq!(looked.code, Some(0), "{looked:?}");
    let listed: Value = serde_json::from_str(&looked.stdout)
        .unwrap_or_else(|e| panic!("ctl pending --json inside: {e}: {:?}", looked.stdout));
    assert_eq!(listed[0]["id"], item["id"], "{listed}");
    let pending = world.ctl(&["pending", "--json"]).await;
    let pending: Value = serde_json::from_str(&pending.stdout).expect("pending json");
    assert_eq!(pending.as_array().map(Vec::len), Some(1), "{pending}");

    let answered = world.ctl(&["answer", &id, "once"]).await;
    assert_eq!(answered.code, Some(0), "{answered:?}");
    assert_eq!(answered.stdout, format!("allowed request {id} once\n"));
    let done = finish(writer).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");
    assert_eq!(
        std::fs::read_to_string(&target).expect("the write went through"),
        "hello"
    );

    app.assert_running();
    assert_eq!(app.terminate().await, Some(0));
}
