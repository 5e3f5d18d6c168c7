//! opencode-landstrip 0.19.1 rejects the fields its later releases added (issue 25 §2): the
//! real opencode 1.18.33 with the real plugin 0.19.1, installed by opencode's own installer
//! (`landstrip_tray_tests::opencode`), and the real app serving the project.
//!
//! The warning is proven necessary first: with `filesystem.denyReadAlways` in the project's
//! sandbox.json the plugin fails the agent's bash call with "unknown sandbox field" and
//! nothing is written or asked. Then `ctl policy show` (text and `--json`) says so for
//! that file only, with the command that fixes it; `ctl policy add` refuses to add such a
//! field (the file unchanged byte for byte) while other edits still go through; and
//! `ctl policy remove-field` removes it, the warning goes, and the plugin runs the next
//! command again, asking through the app. The welcome window and the settings view (the
//! real app under tauri-driver on the test's X display) say the same for that file, the
//! editor refuses to add such a field, and the view's "Remove" button removes it. Every
//! wait is bounded.

use std::process::Output;

use landstrip_tray_tests::opencode::{
    named_file, pending_write, prompt_id, Model, Opencode, HELD_TEXT, START,
};
use landstrip_tray_tests::real_app::{path_str, AppWorld, RunningApp};
use landstrip_tray_tests::settings_window::{
    click_fresh, open_settings, type_into, until_file, wait_gone,
};
use landstrip_tray_tests::webdriver::Session;
use serde_json::{json, Value as Json};
use tokio::process::Child;
use tokio::time::Instant;

/// What the plugin's validation throws for the field (shared.ts, `rejectUnknownFields`).
const REJECTED: &str = "unknown sandbox field filesystem.denyReadAlways";

/// The sentence every surface says for the field.
const WARNING: &str = "this file uses filesystem.denyReadAlways, which your opencode-landstrip \
                       (0.19.1) rejects: every sandboxed command will fail until you remove \
                       it or update the plugin";

/// Waits (bounded) for `opencode run` to end; both streams as one text.
async fn finished(run: Child, app: &RunningApp) -> (Output, String) {
    let out = tokio::time::timeout(START, run.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("opencode run did not finish in {START:?}\n{}", app.log()))
        .expect("opencode run");
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out, said)
}

/// `ctl --json policy show DIR`: the project file's `pluginConflicts`.
async fn conflicts_json(world: &AppWorld, dir: &str) -> Json {
    let shown = world.ctl_ok(&["--json", "policy", "show", dir]).await;
    let view: Json = serde_json::from_str(&shown).expect("ctl --json policy show");
    assert_eq!(
        view["plugin"],
        json!({"state": "known", "version": "0.19.1"}),
        "{view}"
    );
    view["projectFile"]["pluginConflicts"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_field_plugin_0_19_1_rejects_is_said_refused_and_removable() {
    let started = Instant::now();
    let world = AppWorld::new();
    let model = Model::start(world.outside.clone()).await;
    let opencode = Opencode::install(&world, model.port).await;
    let mut app = world.start(&[&world.project]);
    app.serving(&world, &world.project).await;
    app.wait_for_control().await;
    let dir = path_str(&world.project);

    // A file without later fields: nothing is said.
    world.write_project_policy(&json!({"filesystem": {"allowWrite": ["out"]}}));
    let shown = world.ctl_ok(&["policy", "show", dir]).await;
    assert!(!shown.contains("rejects"), "{shown}");
    assert_eq!(conflicts_json(&world, dir).await, json!([]));

    // The app never adds the field: refused with the reason, the file kept byte for byte.
    let before = std::fs::read(world.project_policy()).expect("sandbox.json");
    let refused = world
        .ctl(&[
            "policy",
            "add",
            "--project",
            dir,
            "denyReadAlways",
            "~/.ssh",
        ])
        .await;
    assert_ne!(refused.code, Some(0), "{refused:?}");
    assert!(
        refused
            .stderr
            .contains("opencode-landstrip (0.19.1) rejects it"),
        "{refused:?}"
    );
    assert_eq!(
        std::fs::read(world.project_policy()).expect("sandbox.json"),
        before
    );

    // The file as a person (or an app for the later plugin) wrote it.
    world.write_project_policy(
        &json!({"filesystem": {"allowWrite": ["out"], "denyReadAlways": ["~/.ssh"]}}),
    );

    // The real plugin fails the agent's command: nothing written, nothing asked.
    let rejected = named_file(&world.outside, "FILE:rejected");
    let run = opencode.run("Write FILE:rejected outside the project");
    let (_, said) = finished(run, &app).await;
    let result = model.tool_result("rejected").unwrap_or_default();
    assert!(
        result.contains(REJECTED) || said.contains(REJECTED),
        "the plugin did not reject the file; tool result: {result:?}; opencode run said: {said}\n{}",
        app.log()
    );
    assert!(!rejected.exists(), "written although the plugin refused");
    let pending = world.ctl_ok(&["pending"]).await;
    assert!(!pending.contains("rejected"), "{pending}");

    // `ctl policy show` says it for that file, with the command that removes it.
    let shown = world.ctl_ok(&["policy", "show", dir]).await;
    assert!(shown.contains(WARNING), "{shown}");
    assert!(
        shown.contains(&format!(
            "landstrip-tray ctl policy remove-field --project {dir} filesystem.denyReadAlways"
        )),
        "{shown}"
    );
    let conflicts = conflicts_json(&world, dir).await;
    assert_eq!(
        conflicts[0]["field"], "filesystem.denyReadAlways",
        "{conflicts}"
    );
    assert_eq!(conflicts[0]["rejected"], true, "{conflicts}");

    // Other fields are still edited in that file.
    world
        .ctl_ok(&["policy", "add", "--project", dir, "allowWrite", "more"])
        .await;

    // One command removes it; the rest of the file stays, the warning goes.
    world
        .ctl_ok(&["policy", "remove-field", "--project", dir, "denyReadAlways"])
        .await;
    let text = std::fs::read_to_string(world.project_policy()).expect("sandbox.json");
    assert!(
        !text.contains("denyReadAlways") && text.contains("\"more\""),
        "{text}"
    );
    let shown = world.ctl_ok(&["policy", "show", dir]).await;
    assert!(!shown.contains("rejects"), "{shown}");
    assert_eq!(conflicts_json(&world, dir).await, json!([]));

    // And the plugin runs the agent's command again, asking through the app.
    let fixed = named_file(&world.outside, "FILE:fixed");
    let run = opencode.run("Write FILE:fixed outside the project");
    assert!(
        model.until_asked("fixed", START).await,
        "the model was not asked for FILE:fixed within {START:?}\n{}",
        app.log()
    );
    let item = pending_write(&world, &app, &fixed).await;
    world.ctl_ok(&["answer", &prompt_id(&item), "once"]).await;
    let (out, said) = finished(run, &app).await;
    assert!(out.status.success(), "opencode run: {said}");
    assert_eq!(
        std::fs::read_to_string(&fixed)
            .expect("the write went through once the field was removed")
            .trim(),
        HELD_TEXT
    );

    app.quit().await;
    eprintln!("the scenario took {:?}", started.elapsed());
}

/// The same file, as the windows show it.
const FILE: &str = "{\n  \"filesystem\": {\n    \"denyReadAlways\": [\"~/.ssh\"],\n    \"allowWrite\": [\"out\"]\n  }\n}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_welcome_and_the_settings_view_say_it_and_remove_it() {
    let world = AppWorld::first_run();
    // The plugin as opencode's installer installs it; no model is asked here.
    Opencode::install(&world, 9).await;
    std::fs::write(world.project_policy(), FILE).expect("write sandbox.json");
    let session = Session::start(&world, &[]).await;

    // The welcome window: the file, the sentence and the command that removes the field.
    session.switch_to_page("welcome.html").await;
    session.wait_css("body[data-ready='true']").await;
    let card = session
        .text("#plugin-warnings [data-conflict='filesystem.denyReadAlways']")
        .await;
    assert!(card.contains(&capitalised(WARNING)), "{card}");
    let dir = path_str(&world.project);
    assert!(
        card.contains(&format!(
            "landstrip-tray ctl policy remove-field --project '{dir}' filesystem.denyReadAlways"
        )),
        "{card}"
    );

    // The settings view: said on the project file's column, not on the global one.
    open_settings(&world, &session, "policy").await;
    let project = "section[data-file='project']";
    let conflict = format!("{project} [data-conflict='filesystem.denyReadAlways']");
    let said = session.text(&conflict).await;
    assert!(said.contains(&capitalised(WARNING)), "{said}");
    wait_gone(
        &session,
        "section[data-file='global'] [data-plugin-conflicts]",
    )
    .await;

    // The editor refuses to add to the field: the reason shown, nothing written.
    let list = format!("{project} [data-list='filesystem.denyWriteAlways']");
    type_into(
        &session,
        &format!("{list} .add-row input[data-key]"),
        "keys\u{e007}",
    )
    .await;
    let refused = session
        .text(&format!(
            "{list} .add-row + .entry-check [data-flag='invalid']"
        ))
        .await;
    assert!(
        refused.contains("opencode-landstrip (0.19.1) rejects it"),
        "{refused}"
    );
    assert_eq!(
        std::fs::read_to_string(world.project_policy()).expect("sandbox.json"),
        FILE
    );

    // "Remove" takes the field out, keeps the rest, and the warning goes.
    click_fresh(
        &session,
        &format!("{conflict} button[data-action='remove-field']"),
    )
    .await;
    let text = until_file(&world, "the field removed", |t| {
        !t.contains("denyReadAlways")
    })
    .await;
    assert_eq!(
        text,
        "{\n  \"filesystem\": {\n    \"allowWrite\": [\"out\"]\n  }\n}\n"
    );
    wait_gone(&session, "[data-plugin-conflicts]").await;
    session.finish().await;
}

/// The sentence as a page starts it.
fn capitalised(sentence: &str) -> String {
    let mut chars = sentence.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}
