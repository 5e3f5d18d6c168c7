//! Canaries and their incidents through the settings window: the real app binary under
//! tauri-driver (WebKitWebDriver) on the test's X display. A canary added in the Canaries
//! view writes its decoy; a real landstrip 0.19.2 run that reads it is stopped (state `T`
//! in `/proc/PID/stat`); the incident shows above the Activity view's table, and its
//! "Kill the stopped processes" kills them. A canary the policy lets sandboxed programs
//! read without asking is refused in the view with the core's sentence, and nothing is
//! written; an asked path is taken (a file there kept) and Remove drops it. Nothing is
//! mocked.

use std::path::PathBuf;

use landstrip_tray_tests::real_app::{path_str, AppWorld};
use landstrip_tray_tests::settings_window::{open_settings, type_into, until_status};
use landstrip_tray_tests::webdriver::Session;
use landstrip_tray_tests::{
    finish, process_state, until_some, CANARY_RUN as RUN, CANARY_STEP as READ,
};
use serde_json::Value;

const SESSION: &str = "ses_canary_ui";

/// A world whose home's reads ask (as the bundled /home does for a real home), with
/// `extra` merged into the project policy's filesystem section.
fn world_with(extra: Value) -> AppWorld {
    let world = AppWorld::new();
    let mut filesystem = serde_json::json!({"denyRead": ["~"]});
    if let (Some(base), Value::Object(more)) = (filesystem.as_object_mut(), extra) {
        base.extend(more);
    }
    world.write_project_policy(&serde_json::json!({ "filesystem": filesystem }));
    world
}

fn aws(world: &AppWorld) -> PathBuf {
    world.home.join(".aws/credentials")
}

/// Types `typed` into the Canaries view's path box and presses Add; returns the status
/// line once it says something new.
async fn add_in_view(session: &Session, typed: &str) -> String {
    let before = session.text("#status").await;
    type_into(session, "#canary-path", typed).await;
    session.click("#canary-add").await;
    until_status(session, "adding a canary", |s| !s.is_empty() && s != before).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_added_in_settings_stops_the_run_that_reads_it_and_kill_ends_it() {
    let world = world_with(serde_json::json!({}));
    let path = aws(&world);
    let session = Session::start(&world, &[]).await;

    open_settings(&world, &session, "canaries").await;
    session.wait_css("#canary-list .empty").await;
    // Typed as a person does, under home.
    let said = add_in_view(&session, "~/.aws/credentials").await;
    assert_eq!(
        said, "Canary set at ~/.aws/credentials: wrote fake AWS credentials.",
        "the status line"
    );
    let decoy = std::fs::read_to_string(&path).expect("the decoy is written");
    assert!(decoy.contains("aws_access_key_id = AKIA"), "{decoy}");
    let row = format!("#canary-list li[data-canary='{}']", path_str(&path));
    assert_eq!(
        session.attr(&row, "data-present").await.as_deref(),
        Some("true")
    );
    assert!(session.text(&row).await.contains("~/.aws/credentials"));
    let listed = world.ctl_json(&["canary", "list"]).await;
    assert_eq!(listed[0]["path"], path_str(&path), "{listed}");

    let run = world.launch(
        session.port(&world),
        Some(SESSION),
        &["sh", "-c", RUN, "sh", READ, path_str(&path)],
    );
    let incident = until_some("an incident recorded", || async {
        world.ctl_json(&["incidents"]).await.get(0).cloned()
    })
    .await;
    assert_eq!(incident["state"], "stopped", "{incident}");
    let stopped: Vec<u32> = incident["pids"]
        .as_array()
        .expect("pids")
        .iter()
        .map(|p| p.as_u64().expect("a pid") as u32)
        .collect();
    // sh, its sleep and python3 at least.
    assert!(stopped.len() >= 3, "{incident}");
    for pid in &stopped {
        assert_eq!(
            process_state(*pid),
            Some('T'),
            "pid {pid} of {incident} is not stopped"
        );
    }

    // The Activity view, through its tab: the incident above the table, stopped.
    session.click("#tab-activity").await;
    let card = "#incidents li[data-incident-id='1']";
    session
        .wait_css(&format!("{card}[data-state='stopped'].alert"))
        .await;
    // As rendered: the state's badge is in capitals.
    let shown = session.text(card).await.to_lowercase();
    for says in [
        "Stopped",
        "read the canary ~/.aws/credentials",
        SESSION,
        &stopped
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        "Kill the stopped processes",
        "Resume (the read stays denied)",
    ] {
        let says = says.to_lowercase();
        assert!(shown.contains(&says), "{says:?} not in {shown:?}");
    }
    // Kill first.
    assert_eq!(
        session
            .attr(
                &format!("{card} button[data-incident-action]"),
                "data-incident-action"
            )
            .await
            .as_deref(),
        Some("kill")
    );
    // The read's row in the table below offers no grant: one would untrip the wire.
    session
        .wait_css("#activity-rows tr.outcome-deny td[data-cell='program']")
        .await;
    let grants = session
        .bounded(
            "count the table's grant buttons",
            session.client().execute(
                "return document.querySelectorAll('#activity-rows button[data-action=\"grant\"]').length",
                vec![],
            ),
        )
        .await;
    assert_eq!(grants.as_u64(), Some(0), "a canary read offers a grant");
    // The run's earlier requests fold away.
    assert!(session.displayed(&format!("{card} details summary")).await);

    session
        .click(&format!("{card} button[data-incident-action='kill']"))
        .await;
    session
        .wait_css(&format!("{card}[data-state='killed']"))
        .await;
    let status = until_status(&session, "the kill said", |s| !s.is_empty()).await;
    assert_eq!(status, "Incident 1: its processes were killed.");
    let after = session.text(card).await;
    assert!(after.contains("KILLED"), "{after}");
    assert!(
        !after.contains("Kill the stopped processes") && !after.contains("Resume"),
        "a killed incident offers buttons: {after}"
    );
    let done = finish(run).await;
    assert_ne!(done.code, Some(0), "{done:?}");
    assert!(
        !done.stdout.contains("read"),
        "the reader went on: {done:?}"
    );
    for pid in stopped {
        // Killed: gone, or a zombie until its parent reaps it.
        assert!(
            matches!(process_state(pid), None | Some('Z')),
            "pid {pid} lives on"
        );
    }
    let incident = world.ctl_json(&["incidents"]).await[0].clone();
    assert_eq!(incident["state"], "killed", "{incident}");
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_read_without_asking_is_refused_in_settings_and_nothing_is_written() {
    let world = world_with(serde_json::json!({"allowRead": ["~/.aws"]}));
    let path = aws(&world);
    let session = Session::start(&world, &[]).await;

    open_settings(&world, &session, "canaries").await;
    session.wait_css("#canary-list .empty").await;
    let said = add_in_view(&session, path_str(&path)).await;
    assert!(
        said.contains("refused, the wire would never trip")
            && said.contains("the allowRead entry \"~/.aws\""),
        "{said}"
    );
    assert_eq!(
        session.attr("#status", "data-kind").await.as_deref(),
        Some("error")
    );
    assert_eq!(
        session
            .attr("#canary-path", "aria-invalid")
            .await
            .as_deref(),
        Some("true")
    );
    assert!(!path.exists(), "a decoy was written for a refused path");
    assert!(
        !path.parent().expect("~/.aws").exists(),
        "a directory was made for a refused path"
    );
    session.wait_css("#canary-list .empty").await;
    assert_eq!(
        world.ctl_json(&["canary", "list"]).await,
        Value::Array(Vec::new())
    );

    // An asked path is taken; a file already there is kept; Remove leaves it too.
    let own = world.home.join(".npmrc");
    std::fs::write(&own, "mine\n").expect("write");
    session.clear("#canary-path").await;
    let said = add_in_view(&session, "~/.npmrc").await;
    assert_eq!(
        said,
        "Canary set at ~/.npmrc: the file there is kept as it is."
    );
    let row = format!("#canary-list li[data-canary='{}']", path_str(&own));
    session.click(&format!("{row} button")).await;
    until_status(&session, "the removal said", |s| {
        s.contains("no longer a canary")
    })
    .await;
    session.wait_css("#canary-list .empty").await;
    assert_eq!(
        world.ctl_json(&["canary", "list"]).await,
        Value::Array(Vec::new())
    );
    assert_eq!(std::fs::read_to_string(&own).expect("read"), "mine\n");
    session.finish().await;
}

/// Writes the incident screenshots under docs/ (`cargo test -p landstrip-tray-tests --test
/// settings_canary -- --ignored --exact screenshots_incident`): a real run stopped by a
/// canary read, its incident at the top of Settings → Activity.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/ screenshots"]
async fn screenshots_incident() {
    let out = landstrip_tray_tests::screenshot_dir();
    for (theme, env) in landstrip_tray_tests::screenshot_themes() {
        let world = world_with(serde_json::json!({}));
        let path = aws(&world);
        let session = Session::start(&world, &env).await;
        world.ctl_ok(&["canary", "add", path_str(&path)]).await;
        let run = world.launch(
            session.port(&world),
            Some(SESSION),
            &["sh", "-c", RUN, "sh", READ, path_str(&path)],
        );
        until_some("an incident recorded", || async {
            world.ctl_json(&["incidents"]).await.get(0).cloned()
        })
        .await;
        open_settings(&world, &session, "activity").await;
        session
            .wait_css("#incidents li[data-incident-id='1'][data-state='stopped']")
            .await;
        session
            .screenshot(&out.join(format!("settings-incident-{theme}.png")))
            .await;
        world.ctl_ok(&["incident", "kill", "1"]).await;
        finish(run).await;
        session.finish().await;
    }
}
