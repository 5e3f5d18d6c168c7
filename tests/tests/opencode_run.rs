//! The real opencode 1.18.33 CLI, headless (`opencode run PROMPT`), with the real
//! opencode-landstrip 0.19.1 plugin, the real landstrip 0.19.2 it bundles and the real app
//! serving the project. Only the language model is scripted (it cannot be real here): an
//! OpenAI-compatible server on 127.0.0.1 whose `bash` tool call writes outside the policy
//! (`landstrip_tray_tests::opencode::Model`, which keeps what opencode sent it).
//!
//! The plugin wraps the call in landstrip with the app as presenter: the write is held and
//! asked through the app. Answered `once`, the file is written and the tool result opencode
//! sends back to the model shows no failure; answered `deny`, the file is not written and
//! "Permission denied" (landstrip's EACCES, as the shell reports it) is in that tool result.
//! While it is held, the app shows what opencode's own store says about the call: the
//! session's title and the agent's description of the command.
//!
//! Traffic stays on 127.0.0.1: the model's URL, the presenter's port, and opencode with
//! autoupdate, sharing and the model-list fetch switched off and its packages pre-seeded
//! (see `landstrip_tray_tests::opencode`). Every wait is bounded.

use std::process::Output;

use landstrip_tray_tests::opencode::{
    named_file, pending_write, prompt_id, Model, Opencode, DONE_TEXT, HELD_TEXT, START,
};
use landstrip_tray_tests::real_app::{path_str, AppWorld, RunningApp};
use tokio::process::Child;
use tokio::time::Instant;

/// Waits (bounded) for `opencode run` to end; its output, both streams, as one text.
async fn finished(run: Child, app: &RunningApp) -> (Output, String) {
    let out = tokio::time::timeout(START, run.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("opencode run did not finish in {START:?}\n{}", app.log()))
        .expect("opencode run");
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out, said)
}

/// The pending write of `target` (the prompt's `FILE:<name>`), held until answered, once
/// the model was asked (opencode's start is the long part); checks it came through the
/// plugin (an opencode session's hello) and that nothing was written yet. `run` is killed
/// and its output shown when the model is not asked in time.
async fn held_write(
    world: &AppWorld,
    app: &RunningApp,
    model: &Model,
    name: &str,
    run: &mut Option<Child>,
) -> (String, serde_json::Value) {
    let target = named_file(&world.outside, &format!("FILE:{name}"));
    if !model.until_asked(name, START).await {
        let said = match run.take() {
            Some(mut child) => {
                let _ = child.start_kill();
                finished(child, app).await.1
            }
            None => String::new(),
        };
        panic!("the model was not asked for FILE:{name} within {START:?}; opencode run said: {said}\n{}", app.log());
    }
    let target = target.as_path();
    let item = pending_write(world, app, target).await;
    let session = item["session"].as_str().unwrap_or_default();
    assert!(
        session.starts_with("ses_"),
        "not asked on behalf of an opencode session: {item}"
    );
    assert!(!target.exists(), "written before anyone answered");
    (prompt_id(&item), item)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_run_is_asked_through_the_app() {
    let started = Instant::now();
    let world = AppWorld::new();
    let model = Model::start(world.outside.clone()).await;
    let opencode = Opencode::install(&world, model.port).await;
    let mut app = world.start(&[&world.project]);
    app.serving(&world, &world.project).await;
    app.wait_for_control().await;
    // The app serves the project: the discovery file opencode's plugin reads is the app's.
    assert_eq!(
        world.record(&world.project).map(|r| r.pid),
        Some(app.pid),
        "{}",
        app.log()
    );

    // Allowed once: written, and the tool ran without a failure.
    let allowed = named_file(&world.outside, "FILE:allowed");
    let mut run = Some(opencode.run("Write FILE:allowed outside the project"));
    let (id, item) = held_write(&world, &app, &model, "allowed", &mut run).await;
    // What opencode itself knows, read from its own store: the session's title and the
    // agent's description of the command (without the plugin's " (landstrip)"), beside
    // the command the plugin wrapped (bash -lc CMD, CMD being the model's command).
    let origin = &item["origin"];
    let call = &origin["opencode"];
    assert_eq!(call["session"], item["session"], "{item}");
    let title = call["title"].as_str().unwrap_or_default();
    assert!(
        !title.is_empty() && !title.starts_with("ses_"),
        "no session title from opencode's store: {item}"
    );
    assert_eq!(call["description"], "Write outside the project", "{item}");
    let chain = origin["chain"].as_array().expect("a chain");
    let wrapped = &chain[0]["argv"]["full"];
    assert!(
        wrapped
            .as_str()
            .is_some_and(|a| a.contains(" -lc ") && a.contains(path_str(&allowed))),
        "the chain starts with the plugin's shell: {item}"
    );
    assert_eq!(
        chain.last().map(|l| &l["pid"]),
        Some(&item["pid"]),
        "the asking process ends the chain: {item}"
    );
    eprintln!("opencode's session title: {title:?}");
    world.ctl_ok(&["answer", &id, "once"]).await;
    let (out, said) = finished(run.expect("running"), &app).await;
    assert!(out.status.success(), "opencode run: {said}");
    assert!(said.contains(DONE_TEXT), "opencode run: {said}");
    assert_eq!(
        std::fs::read_to_string(&allowed)
            .expect("the allowed write went through")
            .trim(),
        HELD_TEXT
    );
    let result = model
        .tool_result("allowed")
        .expect("opencode sent the model the tool result");
    assert!(!result.contains("Permission denied"), "{result}");

    // Denied: not written, and the denial reaches the model in the tool result.
    let denied = named_file(&world.outside, "FILE:denied");
    let mut run = Some(opencode.run("Write FILE:denied outside the project"));
    let (id, _) = held_write(&world, &app, &model, "denied", &mut run).await;
    world.ctl_ok(&["answer", &id, "deny"]).await;
    let (out, said) = finished(run.expect("running"), &app).await;
    assert!(out.status.success(), "opencode run: {said}");
    assert!(!denied.exists(), "written although denied");
    let result = model
        .tool_result("denied")
        .expect("opencode sent the model the tool result");
    assert!(
        result.contains("Permission denied") && result.contains(path_str(&denied)),
        "the denial did not reach the model: {result}"
    );

    app.quit().await;
    eprintln!("the scenario took {:?}", started.elapsed());
}
