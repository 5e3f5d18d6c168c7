//! What the README promises of `ctl` beyond answering once, through the real binary against
//! the real app and real landstrip 0.19.2 runs: `ctl pause DURATION` denies what would ask
//! without asking (and counts it), `ctl resume` asks again; `ctl answer` with `--scope`,
//! with an explicit entry that needs `--wider`, and on a sensitive location that needs
//! `--confirm-sensitive`. Each refusal is checked to change nothing, each success on the
//! disk and in the sandboxed program's own result. Nothing is mocked. Run under
//! `xvfb-run -a dbus-run-session --`, after `cargo build -p landstrip-tray`.

use std::path::Path;

use landstrip_tray_tests::real_app::{path_str, AppWorld, RunningApp};
use landstrip_tray_tests::{finish, Finished};
use serde_json::Value;

/// The project file's `filesystem.allowWrite` list (empty when the file is absent).
fn allow_write(world: &AppWorld) -> Vec<String> {
    let file = world.project.join(".opencode/sandbox.json");
    let Ok(text) = std::fs::read_to_string(&file) else {
        return Vec::new();
    };
    let json: Value = serde_json::from_str(&text).expect("the project file parses");
    json["filesystem"]["allowWrite"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// `ctl status --json`'s pause state.
async fn pause(world: &AppWorld) -> Value {
    let status: Value =
        serde_json::from_str(&world.ctl_ok(&["status", "--json"]).await).expect("status JSON");
    status["pause"].clone()
}

async fn started(world: &AppWorld) -> (RunningApp, u16) {
    let mut app = world.start(&[&world.project]);
    app.wait_for_control().await;
    let port = app.serving(world, &world.project).await;
    (app, port)
}

fn assert_denied(done: &Finished, target: &Path) {
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");
    assert_eq!(done.code, Some(13), "{done:?}");
    assert!(!target.exists(), "{} was written", target.display());
}

fn assert_written(done: &Finished, target: &Path) {
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");
    assert_eq!(
        std::fs::read_to_string(target).expect("the write went through"),
        "hello"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_pause_for_a_while_denies_without_asking_and_resume_asks_again() {
    let world = AppWorld::new();
    let (mut app, port) = started(&world).await;

    let paused = world.ctl_ok(&["pause", "15m"]).await;
    assert!(
        paused.starts_with("prompts paused for ") && paused.contains("(0 denied meanwhile)"),
        "{paused:?}"
    );
    let state = pause(&world).await;
    assert_eq!(state["paused"], true, "{state}");
    let left = state["remaining_secs"].as_u64().expect("a timed pause");
    assert!((800..=900).contains(&left), "15m paused, {left}s left");

    // A write that would ask is denied at once: nothing is held, the run fails, and the
    // activity says the pause decided it.
    let target = world.outside.join("while-paused.txt");
    let done = finish(world.write(port, &target)).await;
    assert_denied(&done, &target);
    assert_eq!(world.ctl_ok(&["pending"]).await, "No requests waiting.\n");
    let denied: Value = serde_json::from_str(
        &world
            .ctl_ok(&["activity", "--json", "--grep", "while-paused.txt"])
            .await,
    )
    .expect("activity JSON");
    let entry = &denied[0];
    assert_eq!(entry["outcome"], "deny", "{denied}");
    assert_eq!(entry["by"], "paused", "{denied}");
    assert_eq!(pause(&world).await["denied"], 1);

    assert_eq!(
        world.ctl_ok(&["resume"]).await,
        "prompts resumed (1 denied while paused)\n"
    );
    assert_eq!(pause(&world).await["paused"], false);
    // Asked again: the next write is held until answered.
    let target = world.outside.join("after-resume.txt");
    let (run, id) = world.held_write(port, &target).await;
    world.ctl_ok(&["answer", &id, "once"]).await;
    assert_written(&finish(run).await, &target);
    app.assert_running();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_answer_scope_wider_and_confirm_sensitive_through_the_binary() {
    let world = AppWorld::new();
    let (mut app, port) = started(&world).await;

    // --scope parent: the folder the write is in goes into the project's allowWrite.
    let dir = world.outside.join("scoped");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let target = dir.join("a.txt");
    let (run, id) = world.held_write(port, &target).await;
    let answered = world
        .ctl(&["answer", &id, "project", "--scope", "parent"])
        .await;
    assert_eq!(answered.code, Some(0), "{answered:?}");
    assert_written(&finish(run).await, &target);
    assert!(
        allow_write(&world).contains(&path_str(&dir).to_owned()),
        "{:?} lacks {}",
        allow_write(&world),
        dir.display()
    );

    // An entry wider than every offered scope is refused without --wider (the file is
    // left as it was, the request still held), and saved with it.
    let deep = world.outside.join("w/x/y");
    std::fs::create_dir_all(&deep).expect("mkdir");
    let target = deep.join("b.txt");
    // Two folders above the offered ones (the file, its folder), and nothing sensitive
    // below it (the temporary base would hold the global policy file: sensitive).
    let wide = path_str(&world.outside.join("w")).to_owned();
    let (run, id) = world.held_write(port, &target).await;
    let before = allow_write(&world);
    let refused = world
        .ctl(&["answer", &id, "project", "--entry", &wide])
        .await;
    assert_ne!(refused.code, Some(0), "{refused:?}");
    assert!(refused.stderr.contains("--wider"), "{refused:?}");
    assert_eq!(
        allow_write(&world),
        before,
        "a refused answer changed the file"
    );
    let still: Value =
        serde_json::from_str(&world.ctl_ok(&["pending", "--json"]).await).expect("JSON");
    assert_eq!(still.as_array().map(Vec::len), Some(1), "{still}");
    let answered = world
        .ctl(&["answer", &id, "project", "--entry", &wide, "--wider"])
        .await;
    assert_eq!(answered.code, Some(0), "{answered:?}");
    assert_written(&finish(run).await, &target);
    assert!(
        allow_write(&world).contains(&wide),
        "{:?}",
        allow_write(&world)
    );

    // A sensitive location (SSH keys): a session grant needs --confirm-sensitive.
    let ssh = world.home.join(".ssh");
    std::fs::create_dir_all(&ssh).expect("mkdir");
    let target = ssh.join("config");
    let (run, id) = world.held_write(port, &target).await;
    let refused = world.ctl(&["answer", &id, "session"]).await;
    assert_ne!(refused.code, Some(0), "{refused:?}");
    assert!(
        refused.stderr.contains("--confirm-sensitive"),
        "{refused:?}"
    );
    let grants = world.ctl_ok(&["grants"]).await;
    assert_eq!(
        grants, "No session grants.\n",
        "a refused answer left a grant"
    );
    let answered = world
        .ctl(&["answer", &id, "session", "--confirm-sensitive"])
        .await;
    assert_eq!(answered.code, Some(0), "{answered:?}");
    assert_written(&finish(run).await, &target);
    assert_ne!(world.ctl_ok(&["grants"]).await, "No session grants.\n");
    app.assert_running();
}
