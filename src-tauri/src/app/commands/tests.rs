//! The commands through Tauri's real IPC path (command routing, the capabilities' access
//! checks, argument decoding) on Tauri's mock runtime, since no display is needed for
//! any of it; the broker behind them is the real one, fed a real protocol line.

use std::sync::Arc;

use landstrip_tray_core::activity::ActivityLog;
use landstrip_tray_core::decision::broker::{Broker, Connection, Outbound};
use landstrip_tray_core::policy::project::Project;
use landstrip_tray_core::serving::discovery::DiscoveryDir;
use landstrip_tray_core::serving::service::Service;
use landstrip_tray_core::wire::protocol::Action;
use serde_json::{json, Value};
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{get_ipc_response, mock_builder, MockRuntime, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::{App, Manager, WebviewUrl, WebviewWindow, WebviewWindowBuilder};
use tokio::sync::mpsc;

use super::super::dialog::{self, Dialog};
use super::super::settings;

struct World {
    dir: tempfile::TempDir,
    app: App<MockRuntime>,
    broker: Broker,
    /// The run the prompt belongs to; dropping it would withdraw the prompt.
    _conn: Connection,
    answers: mpsc::UnboundedReceiver<Outbound>,
}

/// The app's real builder and context (so the real capabilities) on the mock runtime,
/// with the dialog state managed and one prompt pending: a write to `~/notes/todo.txt`,
/// outside the project.
fn world() -> World {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let project = home.join("proj");
    std::fs::create_dir_all(&project).expect("mkdir");
    std::fs::create_dir_all(home.join("notes")).expect("mkdir");
    let app = super::register(mock_builder())
        .build(tauri::generate_context!())
        .expect("the app builds on the mock runtime");
    let broker = Broker::new(Arc::new(ActivityLog::in_memory()));
    let service = tauri::async_runtime::block_on(async {
        Service::start(
            broker.clone(),
            home.clone(),
            DiscoveryDir::new(dir.path().join("discovery")),
            None,
        )
    });
    app.manage(Dialog::new(&service));
    app.manage(service.clone());
    let (tx, answers) = mpsc::unbounded_channel();
    let target = home.join("notes/todo.txt").display().to_string();
    let mut conn = broker.connect(Arc::new(Project::new(project, home)), tx);
    let query = format!(
        r#"{{"kind":"filesystem","state":"query","query_id":"q1","operation":"write","path":"{target}","reason":"allow_miss"}}"#
    );
    let mut out = Vec::new();
    conn.on_line(query.as_bytes(), &mut out);
    assert_eq!(broker.pending().len(), 1, "the query is held: {out:?}");
    World {
        dir,
        app,
        broker,
        _conn: conn,
        answers,
    }
}

impl World {
    fn window(&self, label: &str) -> WebviewWindow<MockRuntime> {
        WebviewWindowBuilder::new(&self.app, label, WebviewUrl::App("prompt.html".into()))
            .build()
            .expect("mock window")
    }

    fn prompt_id(&self) -> u64 {
        self.broker.pending()[0].id
    }
}

fn call(window: &WebviewWindow<MockRuntime>, cmd: &str, args: Value) -> Result<Value, Value> {
    let request = InvokeRequest {
        cmd: cmd.into(),
        callback: CallbackFn(0),
        error: CallbackFn(1),
        url: "tauri://localhost".parse().expect("url"),
        body: InvokeBody::Json(args),
        headers: Default::default(),
        invoke_key: INVOKE_KEY.to_owned(),
    };
    get_ipc_response(window, request).map(|body| body.deserialize::<Value>().expect("a JSON reply"))
}

#[test]
fn the_prompt_window_reads_previews_and_answers() {
    let mut world = world();
    let prompt = world.window(dialog::LABEL);
    let id = world.prompt_id();

    let ready = call(&prompt, "dialog_ready", json!({})).expect("dialog_ready");
    assert_eq!(ready["seq"], 0, "{ready}");
    call(&prompt, "dialog_rendered", json!({"seq": 0})).expect("dialog_rendered");

    let preview = call(
        &prompt,
        "dialog_preview",
        json!({"id": id, "target": "project"}),
    )
    .expect("dialog_preview");
    assert!(
        preview.to_string().contains("sandbox.json"),
        "the preview names the file: {preview}"
    );

    // A refused answer (an entry that does not cover the request) leaves it pending.
    let refused = call(
        &prompt,
        "dialog_answer",
        json!({"request": {"id": id, "choice": "project", "entry": "/elsewhere"}}),
    )
    .expect_err("an entry that does not cover the request");
    assert!(refused.is_string(), "a sentence for the page: {refused}");
    assert_eq!(world.broker.pending().len(), 1);
    assert!(world.answers.try_recv().is_err(), "nothing sent yet");

    let answered = call(
        &prompt,
        "dialog_answer",
        json!({"request": {"id": id, "choice": "once"}}),
    )
    .expect("dialog_answer");
    assert_eq!(
        answered,
        json!({"action": "allow", "alsoAnswered": 0, "persistedTo": null})
    );
    match world.answers.try_recv() {
        Ok(Outbound::Answer(_, Action::Allow)) => {}
        other => panic!("landstrip gets an allow: {other:?}"),
    }
    assert!(world.broker.pending().is_empty());

    let again = call(
        &prompt,
        "dialog_answer",
        json!({"request": {"id": id, "choice": "deny"}}),
    )
    .expect_err("answered already");
    assert_eq!(again, json!("This request is no longer waiting."));
}

#[test]
fn edit_policy_asks_for_the_settings_window_on_the_prompts_list_and_leaves_it_pending() {
    use landstrip_tray_core::serving::service::UiRequest;
    use tauri::Manager;

    let mut world = world();
    let prompt = world.window(dialog::LABEL);
    let id = world.prompt_id();
    let mut requests = world.app.state::<Service>().subscribe_ui();
    call(&prompt, "dialog_edit_policy", json!({"id": id})).expect("dialog_edit_policy");
    match requests.try_recv() {
        Ok(UiRequest::EditPolicy { project, list }) => {
            assert_eq!(project, world.dir.path().join("home/proj"));
            assert_eq!(list.to_string(), "filesystem.allowWrite");
        }
        other => panic!("the settings window is asked for: {other:?}"),
    }
    assert_eq!(world.broker.pending().len(), 1, "still pending");
    assert!(world.answers.try_recv().is_err(), "nothing answered");
}

#[test]
fn a_window_without_the_capability_cannot_call_the_dialog_commands() {
    let mut world = world();
    let other = world.window("other");
    let id = world.prompt_id();
    for (cmd, args) in [
        ("dialog_ready", json!({})),
        ("dialog_rendered", json!({"seq": 0})),
        ("dialog_preview", json!({"id": id, "target": "project"})),
        ("dialog_edit_policy", json!({"id": id})),
        (
            "dialog_answer",
            json!({"request": {"id": id, "choice": "once"}}),
        ),
        (
            "plugin:event|listen",
            json!({"event": "dialog:update", "target": {"kind": "Any"}, "handler": 0}),
        ),
    ] {
        let refused = call(&other, cmd, args).expect_err(cmd);
        assert!(
            refused.to_string().contains("not allowed"),
            "{cmd}: {refused}"
        );
    }
    assert_eq!(world.broker.pending().len(), 1, "still waiting");
    assert!(world.answers.try_recv().is_err(), "nothing was answered");

    // The same call from the prompt window goes through: the refusal was the window's.
    let prompt = world.window(dialog::LABEL);
    call(
        &prompt,
        "dialog_answer",
        json!({"request": {"id": id, "choice": "deny"}}),
    )
    .expect("the prompt window may answer");
    assert!(matches!(
        world.answers.try_recv(),
        Ok(Outbound::Answer(_, Action::Deny))
    ));
}

#[test]
fn the_settings_window_changes_one_policy_file_and_reads_the_policy() {
    let mut world = world();
    let settings = world.window(settings::LABEL);
    let project = world.dir.path().join("home/proj");
    let project_file = project.join(".opencode/sandbox.json");
    let dir = project.display().to_string();

    let changed = call(
        &settings,
        "settings_change",
        json!({
            "file": {"file": "project", "dir": dir},
            "change": {"op": "add", "list": "filesystem.allowWrite", "entry": "~/notes"}
        }),
    )
    .expect("settings_change");
    assert_eq!(changed["written"], true, "{changed}");
    assert!(
        changed["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("proj/.opencode/sandbox.json")),
        "it says which file it wrote: {changed}"
    );
    let text = std::fs::read_to_string(&project_file).expect("the project file");
    let parsed =
        landstrip_tray_core::policy::parse_overrides(&text, &project_file).expect("a valid file");
    assert!(format!("{parsed:?}").contains("~/notes"), "{text}");
    // The held write to ~/notes/todo.txt is now covered: answered at once.
    assert_eq!(changed["alsoAnswered"].as_array().map(Vec::len), Some(1));
    assert!(matches!(
        world.answers.try_recv(),
        Ok(Outbound::Answer(_, Action::Allow))
    ));
    assert!(
        !world
            .dir
            .path()
            .join("home/.config/opencode/sandbox.json")
            .exists(),
        "the global file is untouched"
    );

    let view = call(&settings, "settings_policy", json!({"dir": dir})).expect("policy");
    assert_eq!(view["projectFile"]["state"]["state"], "valid", "{view}");
    assert_eq!(view["global"]["state"]["state"], "missing", "{view}");
    assert!(view["effective"].to_string().contains("~/notes"), "{view}");

    let refused = call(&settings, "settings_policy", json!({"dir": "proj"}))
        .expect_err("a relative directory");
    assert!(
        refused.as_str().is_some_and(|e| e.contains("full path")),
        "{refused}"
    );

    let projects = call(&settings, "settings_projects", json!({})).expect("projects");
    assert_eq!(projects, json!([]));
    let grants = call(&settings, "settings_grants", json!({})).expect("grants");
    assert_eq!(grants, json!([]));
    let revoked = call(&settings, "settings_revoke", json!({"id": 7})).expect_err("no grant");
    assert!(revoked.is_string(), "{revoked}");
    let activity = call(&settings, "settings_activity", json!({"filter": {}})).expect("activity");
    assert!(activity.to_string().contains("todo.txt"), "{activity}");
}

#[test]
fn the_settings_window_learns_from_the_activity_and_saves_several_entries_at_once() {
    let world = world();
    let settings = world.window(settings::LABEL);
    let project = world.dir.path().join("home/proj");
    let project_file = project.join(".opencode/sandbox.json");
    let dir = project.display().to_string();
    let sessions = call(&settings, "settings_sessions", json!({"dir": dir})).expect("sessions");
    assert!(sessions.is_array(), "{sessions}");
    let review = call(
        &settings,
        "settings_learn",
        json!({"dir": dir, "request": {"target": "project", "since_ms": 0}}),
    )
    .expect("learn");
    assert!(review["proposals"].is_array(), "{review}");
    assert!(
        review["shown"]
            .as_str()
            .is_some_and(|s| s.ends_with(".opencode/sandbox.json")),
        "{review}"
    );
    let changed = call(
        &settings,
        "settings_change_all",
        json!({
            "file": {"file": "project", "dir": dir},
            "changes": [
                {"op": "add", "list": "allowWrite", "entry": "~/a"},
                {"op": "add", "list": "allowRead", "entry": "~/b"}
            ]
        }),
    )
    .expect("settings_change_all");
    assert_eq!(changed["written"], true, "{changed}");
    let text = std::fs::read_to_string(&project_file).expect("the project file");
    assert!(text.contains("~/a") && text.contains("~/b"), "{text}");
    // One bad change: nothing of the batch is written.
    let refused = call(
        &settings,
        "settings_change_all",
        json!({
            "file": {"file": "project", "dir": dir},
            "changes": [
                {"op": "add", "list": "allowWrite", "entry": "~/c"},
                {"op": "add", "list": "allowWrite", "entry": ""}
            ]
        }),
    )
    .expect_err("an empty entry");
    assert!(refused.is_string(), "{refused}");
    assert_eq!(
        std::fs::read_to_string(&project_file).expect("read"),
        text,
        "bytes unchanged"
    );
    let refused = call(
        &settings,
        "settings_learn",
        json!({"dir": "proj", "request": {"target": "global"}}),
    )
    .expect_err("a relative directory");
    assert!(
        refused.as_str().is_some_and(|e| e.contains("full path")),
        "{refused}"
    );
}

#[test]
fn a_broken_project_file_is_never_written_and_the_reason_is_a_sentence() {
    let world = world();
    let settings = world.window(settings::LABEL);
    let project = world.dir.path().join("home/proj");
    std::fs::create_dir_all(project.join(".opencode")).expect("mkdir");
    let file = project.join(".opencode/sandbox.json");
    let broken = b"{\n  \"filesystem\": {\"allowWrite\": [\"a\",]\n";
    std::fs::write(&file, broken).expect("write");
    let dir = project.display().to_string();
    let refused = call(
        &settings,
        "settings_change",
        json!({
            "file": {"file": "project", "dir": dir},
            "change": {"op": "set", "field": "network.allowNetwork", "value": true}
        }),
    )
    .expect_err("a file that does not parse");
    assert!(refused.is_string(), "{refused}");
    assert_eq!(
        std::fs::read(&file).expect("read"),
        broken,
        "bytes unchanged"
    );
    let view = call(&settings, "settings_policy", json!({"dir": dir})).expect("policy");
    assert_eq!(view["projectFile"]["state"]["state"], "invalid", "{view}");
    assert!(view["projectFile"]["state"]["line"].is_u64(), "{view}");
    assert!(view["effective"].is_null(), "{view}");
}

#[test]
fn the_prompt_and_settings_windows_cannot_call_each_others_commands() {
    let mut world = world();
    let prompt = world.window(dialog::LABEL);
    let settings = world.window(settings::LABEL);
    let other = world.window("other");
    let project = world.dir.path().join("home/proj").display().to_string();
    let change = json!({
        "file": {"file": "project", "dir": project},
        "change": {"op": "set", "field": "network.allowNetwork", "value": true}
    });
    for window in [&prompt, &other] {
        for (cmd, args) in [
            ("settings_projects", json!({})),
            ("settings_add_project", json!({"dir": project})),
            ("settings_remove_project", json!({"dir": project})),
            ("settings_take_over", json!({"dir": project})),
            (
                "settings_prefer",
                json!({"dir": project, "prompts": "terminal"}),
            ),
            ("settings_policy", json!({"dir": project})),
            ("settings_change", change.clone()),
            (
                "settings_change_all",
                json!({"file": change["file"], "changes": [change["change"]]}),
            ),
            ("settings_sessions", json!({"dir": project})),
            (
                "settings_learn",
                json!({"dir": project, "request": {"target": "project"}}),
            ),
            ("settings_grants", json!({})),
            ("settings_revoke", json!({"id": 1})),
            ("settings_activity", json!({"filter": {}})),
            ("settings_home", json!({})),
            ("settings_take_show", json!({})),
            ("settings_app_settings", json!({})),
            (
                "settings_change_app_setting",
                json!({"change": {"key": "notificationSound", "value": false}}),
            ),
            (
                "settings_open_in_editor",
                json!({"file": {"file": "project", "dir": project}}),
            ),
            ("settings_explain_activity", json!({"entry": {}})),
            (
                "settings_activity_preview",
                json!({"entry": {}, "target": "project"}),
            ),
            ("settings_journal", json!({})),
            (
                "settings_journal_undo",
                json!({"target": {"ids": [1]}, "dryRun": true}),
            ),
            ("settings_canaries", json!({})),
            ("settings_canary_add", json!({"path": "/tmp/x"})),
            ("settings_canary_remove", json!({"path": "/tmp/x"})),
            ("settings_incidents", json!({})),
            (
                "settings_incident_act",
                json!({"id": 1, "action": "resume"}),
            ),
            ("settings_remotes", json!({})),
            (
                "settings_remote_add",
                json!({"remote": {"name": "d", "destination": "h"}}),
            ),
            ("settings_remote_remove", json!({"name": "d"})),
            ("settings_web", json!({})),
            ("settings_web_on", json!({})),
            ("settings_web_off", json!({})),
            ("settings_web_pair", json!({})),
            ("settings_web_devices", json!({})),
            ("settings_web_revoke", json!({"device": "1"})),
        ] {
            let refused = call(window, cmd, args).expect_err(cmd);
            assert!(
                refused.to_string().contains("not allowed"),
                "{} {cmd}: {refused}",
                window.label()
            );
        }
    }
    assert!(
        !world.dir.path().join("home/proj/.opencode").exists(),
        "nothing was written"
    );
    let id = world.prompt_id();
    for (cmd, args) in [
        ("dialog_ready", json!({})),
        ("dialog_rendered", json!({"seq": 0})),
        ("dialog_preview", json!({"id": id, "target": "project"})),
        ("dialog_edit_policy", json!({"id": id})),
        (
            "dialog_answer",
            json!({"request": {"id": id, "choice": "once"}}),
        ),
    ] {
        let refused = call(&settings, cmd, args).expect_err(cmd);
        assert!(
            refused.to_string().contains("not allowed"),
            "{cmd}: {refused}"
        );
    }
    assert!(world.answers.try_recv().is_err(), "nothing was answered");
    // The settings window may ask to open a file, but not one that is not there.
    let missing = call(
        &settings,
        "settings_open_in_editor",
        json!({"file": {"file": "project", "dir": project}}),
    )
    .expect_err("no file yet");
    assert!(
        missing.to_string().contains("does not exist yet"),
        "{missing}"
    );
    // The refusals were the windows': the settings window may change the file.
    call(&settings, "settings_change", change).expect("the settings window may");
    assert!(world
        .dir
        .path()
        .join("home/proj/.opencode/sandbox.json")
        .exists());
}

#[test]
fn only_the_welcome_window_calls_the_welcome_commands_and_it_calls_nothing_else() {
    use super::super::welcome::{self, Welcome};
    let world = world();
    let home = world.dir.path().join("home");
    world.app.manage(Welcome::new(
        landstrip_tray_core::surfaces::first_run::Sources {
            given: Vec::new(),
            current_dir: Some(home.join("proj")),
            own: Default::default(),
            home: home.clone(),
            activity_file: world.dir.path().join("activity.jsonl"),
            discovery: DiscoveryDir::new(world.dir.path().join("discovery")),
            opencode_data: world.dir.path().join("opencode"),
        },
    ));
    let project = home.join("proj").display().to_string();
    let welcome_window = world.window(welcome::LABEL);
    for label in [dialog::LABEL, settings::LABEL, "other"] {
        let window = world.window(label);
        for (cmd, args) in [
            ("welcome_offered", json!({})),
            ("welcome_doctor", json!({})),
            ("welcome_connect", json!({})),
            ("welcome_add", json!({"dirs": [project]})),
            ("welcome_done", json!({})),
        ] {
            let refused = call(&window, cmd, args).expect_err(cmd);
            assert!(
                refused.to_string().contains("not allowed"),
                "{label} {cmd}: {refused}"
            );
        }
    }
    assert!(
        world.app.state::<Service>().list().is_empty(),
        "nothing served"
    );
    for (cmd, args) in [
        ("settings_add_project", json!({"dir": project})),
        ("settings_projects", json!({})),
        (
            "dialog_answer",
            json!({"request": {"id": world.prompt_id(), "choice": "once"}}),
        ),
    ] {
        let refused = call(&welcome_window, cmd, args).expect_err(cmd);
        assert!(
            refused.to_string().contains("not allowed"),
            "{cmd}: {refused}"
        );
    }
    // Its own commands go through: the offer, and serving a directory.
    let view = call(&welcome_window, "welcome_offered", json!({})).expect("offered");
    assert!(view["offered"].is_array(), "{view}");
    let added = call(
        &welcome_window,
        "welcome_add",
        json!({"dirs": [project, "relative/dir"]}),
    )
    .expect("add");
    assert_eq!(added[0]["error"], Value::Null, "{added}");
    assert!(added[1]["error"].is_string(), "{added}");
    let served = world.app.state::<Service>().list();
    assert_eq!(served.len(), 1, "{served:?}");
}
