//! Canaries (README "Canaries", ARCHITECTURE "Canaries"), through the real binary in
//! `--headless` mode and real landstrip 0.19.2 runs: a run that reads a canary gets no
//! prompt; its confined processes are stopped (state `T` in `/proc/PID/stat`) while this
//! test's own process (whose process group the run shares), landstrip and the app are
//! not; `ctl incident resume` lets the run go on to its EACCES and `kill` kills it and
//! denies its held request; a forged query naming an unconfined pid stops nothing; a
//! canary the policy lets sandboxed programs read without asking is refused at `add`.

use std::path::PathBuf;

use landstrip_tray_tests::real_app::{path_str, AppWorld, RunningApp};
use landstrip_tray_tests::{
    finish, process_state, until_some, CANARY_RUN as RUN, CANARY_STEP as STEP, EVENT_TIMEOUT,
};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A world whose home's reads ask (as the bundled /home does for a real home); the app
/// `--headless` serving its project; its port.
async fn world_and_app() -> (AppWorld, RunningApp, u16) {
    let world = AppWorld::new();
    world.write_project_policy(&serde_json::json!({"filesystem": {"denyRead": ["~"]}}));
    let mut app = world.start_without_display(&[
        "--headless".as_ref(),
        "--project".as_ref(),
        world.project.as_os_str(),
    ]);
    app.wait_for_control().await;
    let port = app.serving(&world, &world.project).await;
    (world, app, port)
}

fn canary(world: &AppWorld) -> PathBuf {
    world.home.join(".aws/credentials")
}

/// The first incident, once there is one.
async fn first_incident(world: &AppWorld) -> Value {
    until_some("an incident recorded", || async {
        let incidents = world.ctl_json(&["incidents"]).await;
        incidents.get(0).cloned()
    })
    .await
}

fn pids(incident: &Value) -> Vec<u32> {
    incident["pids"]
        .as_array()
        .expect("pids")
        .iter()
        .map(|p| p.as_u64().expect("a pid") as u32)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_read_stops_the_run_not_the_test_and_resume_lets_it_see_eacces() {
    let (world, app, port) = world_and_app().await;
    let path = canary(&world);
    let added = world.ctl_json(&["canary", "add", path_str(&path)]).await;
    assert_eq!(added["decoy"], "aws", "{added}");
    let decoy = std::fs::read_to_string(&path).expect("the decoy is written");
    assert!(decoy.contains("aws_access_key_id = AKIA"), "{decoy}");
    let listed = world.ctl_json(&["canary", "list"]).await;
    assert_eq!(listed[0]["path"], path_str(&path), "{listed}");

    let run = world.launch(
        port,
        Some("ses_canary"),
        &["sh", "-c", RUN, "sh", STEP, path_str(&path)],
    );
    let landstrip = run.id().expect("landstrip's pid");
    let incident = first_incident(&world).await;
    assert_eq!(incident["state"], "stopped", "{incident}");
    assert_eq!(incident["path"], path_str(&path), "{incident}");
    assert_eq!(incident["session"], "ses_canary", "{incident}");
    let stopped = pids(&incident);
    // sh, its sleep and python3 at least (landstrip 0.19 may add its supervisor).
    assert!(stopped.len() >= 3, "{incident}");
    for pid in &stopped {
        assert_eq!(
            process_state(*pid),
            Some('T'),
            "pid {pid} of {incident} is not stopped"
        );
    }
    // Never its own process group: this test shares it with the run, and runs on.
    for (who, pid) in [
        ("this test", std::process::id()),
        ("the app", app.pid),
        ("landstrip", landstrip),
    ] {
        assert!(
            !stopped.contains(&pid),
            "{who} ({pid}) is listed: {incident}"
        );
        assert_ne!(process_state(pid), Some('T'), "{who} ({pid}) was stopped");
    }
    // Never a prompt.
    assert_eq!(world.ctl_json(&["pending"]).await, Value::Array(Vec::new()));

    let resumed = world.ctl_ok(&["incident", "resume", "1"]).await;
    assert!(resumed.contains("incident 1: resumed"), "{resumed}");
    let done = finish(run).await;
    assert_eq!(done.stdout.trim(), "read EACCES", "{done:?}");
    // The stop interrupted the held read and SIGCONT restarted it: the same read came
    // back as a new query, denied without a second stop or incident.
    let incidents = world.ctl_json(&["incidents"]).await;
    assert_eq!(incidents.as_array().map(Vec::len), Some(1), "{incidents}");
    // Its processes have all exited now.
    until_some("the incident gone", || async {
        let incident = world.ctl_json(&["incidents"]).await[0].clone();
        (incident["state"] == "gone").then_some(())
    })
    .await;
    let activity = world.ctl_json(&["activity"]).await;
    assert!(
        activity
            .as_array()
            .expect("entries")
            .iter()
            .any(|e| e["subject"] == path_str(&path)
                && e["by"] == "canary"
                && e["outcome"] == "deny"),
        "{activity}"
    );
    // Acting on a run that is gone is refused.
    let again = world.ctl(&["incident", "kill", "1"]).await;
    assert_eq!(again.code, Some(1), "{again:?}");
    assert!(
        again.stderr.contains("incident 1: its processes are gone"),
        "{again:?}"
    );
    drop(app);
}

/// A run that first holds a write outside the project (answered by nobody), then reads the
/// canary `~/.ssh/id_ed25519` once the test has seen the write held; returns once the run
/// is stopped, with the run, the write's path and the pids stopped. The stop interrupted
/// the held write too, and its prompt was denied then (`by: canary`): none waits.
async fn held_write_then_canary(
    world: &AppWorld,
    port: u16,
) -> (tokio::process::Child, PathBuf, Vec<u32>) {
    let path = world.home.join(".ssh/id_ed25519");
    world.ctl_ok(&["canary", "add", path_str(&path)]).await;
    let key = std::fs::read_to_string(&path).expect("the decoy key");
    assert!(
        key.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----"),
        "{key}"
    );
    let outside = world.outside.join("held.txt");
    let go = world.project.join("go");
    // The shell waits for the writer: the run (and its connection) lasts until it ends.
    let script = format!(
        "python3 -c \"$1\" write {out} & w=$!\n{RUN}\nwait $w",
        out = path_str(&outside)
    );
    let run = world.launch(
        port,
        None,
        &[
            "sh",
            "-c",
            &script,
            "sh",
            STEP,
            path_str(&path),
            path_str(&go),
        ],
    );
    let held = until_some("the write held", || async {
        let pending = world.ctl_json(&["pending"]).await;
        pending.get(0).cloned()
    })
    .await;
    assert_eq!(held["path"], path_str(&outside), "{held}");
    std::fs::write(&go, "").expect("let the run read the canary");
    let incident = first_incident(world).await;
    assert_eq!(incident["state"], "stopped", "{incident}");
    let stopped = pids(&incident);
    assert!(
        stopped.iter().all(|p| process_state(*p) == Some('T')),
        "{incident}"
    );
    // Its prompt was denied at the stop: an answer to it would reach nothing.
    assert_eq!(world.ctl_json(&["pending"]).await, Value::Array(Vec::new()));
    (run, outside, stopped)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_ends_the_stopped_run_and_denies_its_held_request() {
    let (world, app, port) = world_and_app().await;
    let (run, outside, stopped) = held_write_then_canary(&world, port).await;

    let killed = world.ctl_ok(&["incident", "kill", "1"]).await;
    assert!(killed.contains("incident 1: killed"), "{killed}");
    let done = finish(run).await;
    assert_ne!(done.code, Some(0), "{done:?}");
    assert!(
        !done.stdout.contains("read"),
        "the reader never went on: {done:?}"
    );
    for pid in stopped {
        // Killed: gone, or a zombie until its parent reaps it.
        assert!(
            matches!(process_state(pid), None | Some('Z')),
            "pid {pid} lives on"
        );
    }
    assert_eq!(world.ctl_json(&["pending"]).await, Value::Array(Vec::new()));
    assert!(!outside.exists(), "the held write went through");
    let activity = world.ctl_json(&["activity"]).await;
    assert!(
        activity
            .as_array()
            .expect("entries")
            .iter()
            .any(|e| e["subject"] == path_str(&outside)
                && e["by"] == "canary"
                && e["outcome"] == "deny"),
        "{activity}"
    );
    let incident = world.ctl_json(&["incidents"]).await[0].clone();
    assert_eq!(incident["state"], "killed", "{incident}");
    drop(app);
}

/// The stop interrupts every held syscall of the run; SIGCONT restarts them, so after a
/// resume the held write asks again, as a new prompt, and can be allowed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_resume_what_the_stop_interrupted_asks_again() {
    let (world, app, port) = world_and_app().await;
    let (run, outside, _) = held_write_then_canary(&world, port).await;
    world.ctl_ok(&["incident", "resume", "1"]).await;
    let again = until_some("the write asked again", || async {
        world.ctl_json(&["pending"]).await.get(0).cloned()
    })
    .await;
    assert_eq!(again["path"], path_str(&outside), "{again}");
    world
        .ctl_ok(&["answer", &again["id"].to_string(), "once"])
        .await;
    let done = finish(run).await;
    assert!(done.stdout.contains("write ok"), "{done:?}");
    assert!(done.stdout.contains("read EACCES"), "{done:?}");
    assert!(
        outside.exists(),
        "the write allowed after the resume did not land"
    );
    drop(app);
}

/// A confined program cannot hide its run by naming a copy of itself like landstrip: the
/// stop goes past confined processes of any name to the run's unconfined landstrip.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_under_a_confined_process_named_landstrip_is_still_stopped() {
    let (world, app, port) = world_and_app().await;
    let path = canary(&world);
    world.ctl_ok(&["canary", "add", path_str(&path)]).await;
    let disguised = world.project.join("landstrip-x");
    std::fs::copy("/bin/sh", &disguised).expect("copy sh");
    let run = world.launch(
        port,
        None,
        &[path_str(&disguised), "-c", RUN, "sh", STEP, path_str(&path)],
    );
    let incident = first_incident(&world).await;
    assert_eq!(incident["state"], "stopped", "{incident}");
    let stopped = pids(&incident);
    assert!(stopped.len() >= 3, "{incident}");
    assert!(
        stopped.iter().all(|p| process_state(*p) == Some('T')),
        "{incident}"
    );
    world.ctl_ok(&["incident", "kill", "1"]).await;
    finish(run).await;
    drop(app);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_query_naming_an_unconfined_pid_stops_nothing() {
    let (world, app, port) = world_and_app().await;
    let path = canary(&world);
    world.ctl_ok(&["canary", "add", path_str(&path)]).await;
    // An unconfined process of this test's, named in a query sent straight to the port.
    let mut bystander = tokio::process::Command::new("sleep")
        .arg("600")
        .kill_on_drop(true)
        .spawn()
        .expect("sleep");
    let pid = bystander.id().expect("its pid");
    let query = serde_json::json!({
        "kind": "filesystem", "state": "query", "query_id": "1", "operation": "read",
        "path": path_str(&path), "reason": "deny_match",
        "process": {"pid": pid, "exe": "/usr/bin/sleep", "cwd": "/"},
    });
    let stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect to the query port");
    let (read, mut write) = stream.into_split();
    write
        .write_all(format!("{query}\n").as_bytes())
        .await
        .expect("send the query");
    let mut answer = String::new();
    tokio::time::timeout(EVENT_TIMEOUT, BufReader::new(read).read_line(&mut answer))
        .await
        .expect("an answer in time")
        .expect("read the answer");
    assert_eq!(answer, "{\"query_id\":\"1\",\"action\":\"deny\"}\n");
    let incident = first_incident(&world).await;
    assert_eq!(incident["state"], "not_stopped", "{incident}");
    assert_eq!(incident["pids"], Value::Array(Vec::new()), "{incident}");
    assert_eq!(process_state(pid), Some('S'), "the bystander was touched");
    let refused = world.ctl(&["incident", "resume", "1"]).await;
    assert_eq!(refused.code, Some(1), "{refused:?}");
    let _ = bystander.kill().await;
    drop(app);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_read_without_asking_is_refused_at_add_naming_the_entry() {
    let world = AppWorld::new();
    world.write_project_policy(&serde_json::json!({"filesystem": {
        "denyRead": ["~"], "allowRead": ["~/.aws"], "denyReadAlways": ["~/.gnupg"]}}));
    let mut app = world.start_without_display(&[
        "--headless".as_ref(),
        "--project".as_ref(),
        world.project.as_os_str(),
    ]);
    app.wait_for_control().await;
    let refused = |path: PathBuf, says: &'static str| {
        let world = &world;
        async move {
            let out = world.ctl(&["canary", "add", path_str(&path)]).await;
            assert_eq!(out.code, Some(1), "{out:?}");
            assert!(out.stderr.contains(says), "{out:?}");
            assert!(!path.exists(), "a decoy was written for a refused path");
        }
    };
    refused(canary(&world), "the allowRead entry \"~/.aws\"").await;
    refused(
        world.home.join(".gnupg/secring.gpg"),
        "denyReadAlways root \"~/.gnupg\"",
    )
    .await;
    // In the project (the bundled allowRead "."): read without asking too.
    refused(world.project.join(".env"), "allowRead entry \".\"").await;
    assert_eq!(
        world.ctl_json(&["canary", "list"]).await,
        Value::Array(Vec::new())
    );
    // An asked path is taken; an existing file there is kept as it is; remove leaves it.
    let own = world.home.join(".npmrc");
    std::fs::write(&own, "mine\n").expect("write");
    let added = world.ctl_json(&["canary", "add", path_str(&own)]).await;
    assert_eq!(added["decoy"], Value::Null, "{added}");
    assert_eq!(std::fs::read_to_string(&own).expect("read"), "mine\n");
    world.ctl_ok(&["canary", "remove", path_str(&own)]).await;
    assert_eq!(
        world.ctl_json(&["canary", "list"]).await,
        Value::Array(Vec::new())
    );
    assert!(own.exists());
    drop(app);
}
