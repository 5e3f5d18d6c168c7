//! `landstrip-tray ctl` run inside the sandbox it would answer for. The real app binary
//! (under the test's X display) holds a real landstrip 0.19.2 write; then the app's own
//! `ctl answer ID once` is started the way opencode-landstrip starts an agent's command
//! (the real landstrip, fd 3 to the app's query port, the policy built from the project's
//! sandbox.json, which allows every Unix socket so the control socket can be reached). It
//! is refused, the write stays held, `ctl pending` from inside is still served, and the same
//! command outside the sandbox lets the write through. And every control request there is,
//! sent raw from inside the sandbox, is refused or only looks, and nothing changes. Nothing
//! is mocked.

use std::path::Path;

use landstrip_tray_core::surfaces::control::{Client, Reply, Request, Response};
use landstrip_tray_tests::real_app::{app_binary, AppWorld, RunningApp};
use landstrip_tray_tests::{
    finish, launch_landstrip, Finished, Landstrip, EVENT_TIMEOUT, PYTHON, WRITE,
};
use serde_json::{json, Value};

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
        refused.stderr.contains(REFUSED) && refused.stderr.contains(FROM_OUTSIDE),
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

    // Nor can it serve as a remote desktop's bridge, or add a remote machine.
    let bridge = ctl_inside(&world, &app, &["bridge"]).await;
    assert_eq!(bridge.code, Some(1), "{bridge:?}");
    let hello: Value = serde_json::from_str(bridge.stdout.trim())
        .unwrap_or_else(|e| panic!("ctl bridge's first line: {e}: {bridge:?}"));
    assert_eq!(hello["landstrip_tray_bridge"], 1, "{hello}");
    assert_eq!(hello["error"], "refused", "{hello}");
    assert!(
        hello["message"]
            .as_str()
            .is_some_and(|m| m.contains(REFUSED)),
        "{hello}"
    );
    let add = ctl_inside(&world, &app, &["remote", "add", "devbox", "u@127.0.0.1"]).await;
    assert_eq!(add.code, Some(1), "{add:?}");
    assert!(add.stderr.contains(REFUSED), "{add:?}");
    let remotes = world.ctl_json(&["remote", "list"]).await;
    assert_eq!(remotes, json!([]), "a remote was added from inside");

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

/// A control client for inside the sandbox: sends each argument after the socket as one
/// request line on one connection and prints each reply line.
const RAW_CLIENT: &str = r#"
import socket, sys
conn = socket.socket(socket.AF_UNIX)
conn.connect(sys.argv[1])
stream = conn.makefile("rwb")
for line in sys.argv[2:]:
    stream.write(line.encode() + b"\n")
    stream.flush()
    sys.stdout.write(stream.readline().decode())
"#;

/// The refusal's fixed parts.
const REFUSED: &str = "refused: this request comes from inside a sandbox (pid ";
const FROM_OUTSIDE: &str = "; answer it from outside the sandbox";

/// What a request from inside the sandbox gets.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Inside {
    /// Served: a reply of this kind.
    Answers(&'static str),
    /// It would change something: refused.
    Refused,
}

/// The test's own classing of every request, written out here rather than taken from
/// `Request::changes_state` (which it checks). No catch-all arm: a new variant does not
/// compile until it is classed here, and [`every_variant_has_a_sample`] then fails until
/// it has a sample that is sent.
fn expected(request: &Request) -> Inside {
    match request {
        Request::Status => Inside::Answers("status"),
        Request::Projects => Inside::Answers("projects"),
        Request::Pending { .. } => Inside::Answers("pending"),
        Request::Policy { .. } => Inside::Answers("policy"),
        Request::Grants => Inside::Answers("grants"),
        Request::Activity { .. } => Inside::Answers("activity"),
        Request::AppSettings => Inside::Answers("app_settings"),
        Request::Learn { save: false, .. } => Inside::Answers("learned"),
        Request::CheckEntry { .. } => Inside::Answers("entry_checked"),
        Request::Sessions { .. } => Inside::Answers("sessions"),
        Request::PluginWarnings => Inside::Answers("plugin_warnings"),
        Request::ActivityPage { .. } => Inside::Answers("activity_page"),
        Request::ExplainActivity { .. } => Inside::Answers("activity_explained"),
        Request::ActivityPreview { .. } => Inside::Answers("activity_preview"),
        Request::Journal { .. } => Inside::Answers("journal"),
        Request::JournalUndo { dry_run: true, .. } => Inside::Answers("journal_undone"),
        Request::Remotes => Inside::Answers("remotes"),
        Request::Web => Inside::Answers("web"),
        Request::WebDevices => Inside::Answers("web_devices"),
        Request::PromptPreview { .. } => Inside::Answers("prompt_preview"),
        Request::Learn { save: true, .. }
        | Request::Answer { .. }
        | Request::AddProject { .. }
        | Request::RemoveProject { .. }
        | Request::TakeOver { .. }
        | Request::Prefer { .. }
        | Request::Pause { .. }
        | Request::Resume
        | Request::OpenSettings { .. }
        | Request::ChangePolicy { .. }
        | Request::ChangePolicyAll { .. }
        | Request::UndoPolicy
        | Request::Revoke { .. }
        | Request::ChangeAppSetting { .. }
        | Request::JournalUndo { dry_run: false, .. }
        | Request::CanaryAdd { .. }
        | Request::CanaryRemove { .. }
        | Request::IncidentAct { .. }
        | Request::RemoteAdd { .. }
        | Request::RemoteRemove { .. }
        // It changes nothing, but it is the bridge's, which carries answers.
        | Request::Watch { .. }
        | Request::WebOn { .. }
        | Request::WebOff
        | Request::WebRevoke { .. }
        // A pairing token would let a sandboxed program pair itself and answer its own
        // requests.
        | Request::WebPair
        // They change nothing, but would tell a sandboxed program which files are decoys.
        | Request::Canaries
        | Request::Incidents => Inside::Refused,
    }
}

/// One sample of every request, aimed at what the running app really has: the held
/// prompt `id`, the live grant `grant`, the served project, the policy save an undo would
/// take back.
fn samples(world: &AppWorld, id: u64, grant: u64) -> Vec<Request> {
    let project = path_str(&world.project);
    let outside = path_str(&world.outside);
    // Not covering the held or granted writes, so that `learn` still has them to propose.
    let entry = world.base.join("entry");
    let entry = path_str(&entry);
    // Its own entry: the change_policy samples before it have added `entry` already.
    let entry_all = world.base.join("entry-all");
    let entry_all = path_str(&entry_all);
    // A logged write of the served project, as the settings view sends one back.
    let logged = json!({"ts": 1, "project": project, "kind": "filesystem", "operation": "write",
        "subject": entry, "outcome": "allow", "by": "user"});
    [
        json!({"request": "status"}),
        json!({"request": "projects"}),
        json!({"request": "pending", "wait": true}),
        json!({"request": "answer", "id": id, "choice": "once"}),
        json!({"request": "add_project", "dir": outside}),
        json!({"request": "remove_project", "dir": project}),
        json!({"request": "take_over", "dir": project}),
        json!({"request": "prefer", "dir": project, "prompts": "terminal"}),
        json!({"request": "pause"}),
        json!({"request": "resume"}),
        json!({"request": "open_settings", "show": "settings", "view": "projects"}),
        json!({"request": "policy", "dir": project}),
        json!({"request": "change_policy", "file": "project", "dir": project, "op": "add",
            "list": "allowWrite", "entry": entry}),
        json!({"request": "change_policy", "file": "global", "op": "add",
            "list": "allowWrite", "entry": entry}),
        json!({"request": "change_policy_all", "file": "project", "dir": project,
            "changes": [{"op": "add", "list": "allowWrite", "entry": entry_all}]}),
        json!({"request": "check_entry", "file": "project", "dir": project,
            "project": project, "list": "allowWrite", "entry": entry}),
        json!({"request": "undo_policy"}),
        json!({"request": "learn", "dir": project, "target": "project"}),
        json!({"request": "learn", "dir": project, "target": "global", "save": true}),
        json!({"request": "grants"}),
        json!({"request": "revoke", "id": grant}),
        json!({"request": "activity"}),
        json!({"request": "sessions", "dir": project}),
        json!({"request": "plugin_warnings"}),
        json!({"request": "activity_page", "limit": 5}),
        json!({"request": "explain_activity", "entry": logged}),
        json!({"request": "activity_preview", "entry": logged, "target": "project"}),
        json!({"request": "app_settings"}),
        json!({"request": "change_app_setting", "change": {"key": "promptTimeout", "value": 30}}),
        json!({"request": "journal"}),
        json!({"request": "journal_undo", "target": {"session": "ses_x"}, "dry_run": true}),
        json!({"request": "journal_undo", "target": {"ids": [1]}}),
        json!({"request": "canaries"}),
        json!({"request": "canary_add", "path": world.base.join("decoy/.env")}),
        json!({"request": "canary_remove", "path": world.base.join("decoy/.env")}),
        json!({"request": "incidents"}),
        json!({"request": "incident_act", "id": 1, "action": "kill"}),
        json!({"request": "watch"}),
        json!({"request": "remotes"}),
        json!({"request": "prompt_preview", "id": id, "target": "project"}),
        json!({"request": "remote_add", "name": "devbox", "destination": "u@127.0.0.1"}),
        json!({"request": "remote_remove", "name": "devbox"}),
        json!({"request": "web"}),
        json!({"request": "web_devices"}),
        json!({"request": "web_on", "bind": "127.0.0.1:0"}),
        json!({"request": "web_pair"}),
        json!({"request": "web_off"}),
        json!({"request": "web_revoke", "device": "1"}),
    ]
    .into_iter()
    .map(|sample| {
        serde_json::from_value(sample.clone())
            .unwrap_or_else(|e| panic!("the sample {sample} is no request: {e}"))
    })
    .collect()
}

/// Every variant's wire name, as the type itself lists them (serde names all of them when
/// it refuses an unknown one).
fn variant_names() -> Vec<String> {
    let unknown = serde_json::from_value::<Request>(json!({"request": "no-such-request"}))
        .expect_err("an unknown request parses")
        .to_string();
    let list = unknown
        .split("expected one of ")
        .nth(1)
        .unwrap_or_else(|| panic!("serde's refusal names no variants: {unknown}"));
    list.split(", ")
        .map(|name| name.trim_matches(|c: char| c == '`' || c.is_whitespace()))
        .map(|name| name.split('`').next().unwrap_or(name).to_owned())
        .collect()
}

/// The wire name of `request`.
fn wire_name(request: &Request) -> String {
    serde_json::to_value(request).expect("request json")["request"]
        .as_str()
        .expect("a tagged request")
        .to_owned()
}

#[test]
fn every_variant_has_a_sample() {
    let world = AppWorld::new();
    let sampled: std::collections::BTreeSet<String> =
        samples(&world, 1, 1).iter().map(wire_name).collect();
    let every: std::collections::BTreeSet<String> = variant_names().into_iter().collect();
    assert!(
        every.len() > 10,
        "too few variants read off serde: {every:?}"
    );
    assert_eq!(sampled, every, "a request variant without a sample");
    // Both sides of the one variant whose classing depends on a field.
    let learn: Vec<Inside> = samples(&world, 1, 1)
        .iter()
        .filter(|r| matches!(r, Request::Learn { .. }))
        .map(expected)
        .collect();
    assert_eq!(learn, [Inside::Answers("learned"), Inside::Refused]);
}

/// `requests`, one line each on one connection to the control socket, from a Python client
/// run inside the real landstrip `landstrip` (launched as the plugin launches a command:
/// fd 3 to the app's port, the project's sandbox.json allowing Unix sockets); the replies.
async fn requests_inside(
    world: &AppWorld,
    app: &RunningApp,
    landstrip: Landstrip,
    requests: &[Request],
) -> Vec<Response> {
    let socket = world.control_socket();
    let lines: Vec<String> = requests
        .iter()
        .map(|r| serde_json::to_string(r).expect("request json"))
        .collect();
    let mut program = vec![PYTHON, "-c", RAW_CLIENT, path_str(&socket)];
    program.extend(lines.iter().map(String::as_str));
    let done = finish(launch_landstrip(
        landstrip,
        world.root.path(),
        &world.project,
        &world.home,
        port(world, app),
        None,
        &program,
    ))
    .await;
    assert_eq!(
        done.code,
        Some(0),
        "the client inside {landstrip:?}: {done:?}"
    );
    let replies: Vec<Response> = done
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("reply {l:?}: {e}")))
        .collect();
    assert_eq!(replies.len(), requests.len(), "{done:?}");
    replies
}

/// What a refused request must leave as it was, read from outside.
#[derive(Debug, PartialEq)]
struct State {
    settings: Option<String>,
    project_policy: Option<String>,
    global_policy: Option<String>,
    grants: Value,
    pause: Value,
    projects: Value,
    pending: Value,
    canaries: Value,
    incidents: Value,
}

async fn state(world: &AppWorld) -> State {
    let json = |text: String| -> Value {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("ctl --json: {e}: {text:?}"))
    };
    // The bytes, compared exactly (lossless for these UTF-8 files, readable on failure).
    let bytes = |file: std::path::PathBuf| {
        std::fs::read(file)
            .ok()
            .map(|b| String::from_utf8(b).expect("a UTF-8 file"))
    };
    let mut pending = json(world.ctl_ok(&["pending", "--json"]).await);
    // The one field that moves by itself.
    for item in pending.as_array_mut().expect("a pending list") {
        item.as_object_mut()
            .expect("a pending item")
            .remove("age_ms");
    }
    State {
        settings: bytes(world.settings_file()),
        project_policy: bytes(world.project_policy()),
        global_policy: bytes(world.global_policy()),
        grants: json(world.ctl_ok(&["grants", "--json"]).await),
        pause: json(world.ctl_ok(&["status", "--json"]).await)["pause"].clone(),
        projects: json(world.ctl_ok(&["projects", "--json"]).await),
        pending,
        canaries: json(world.ctl_ok(&["canary", "list", "--json"]).await),
        incidents: json(world.ctl_ok(&["incidents", "--json"]).await),
    }
}

/// Every request there is, sent from inside a real landstrip sandbox (both releases: in
/// 0.19.2 its supervisor connects for the program, in 0.18.27 the program itself) to the
/// real app holding a real write: each that would change something is refused and changes
/// nothing (the settings and both policy files byte for byte, the grants, the pause, the
/// projects, the held prompt), each that only looks is answered. Then each refused sample,
/// sent from outside, is served and does change that state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_from_inside_is_refused_or_only_looks_and_nothing_changes() {
    let world = AppWorld::new();
    world.write_project_policy(&serde_json::from_str(UNIX_SOCKETS).expect("policy json"));
    let global = world.global_policy();
    std::fs::create_dir_all(global.parent().expect("dir")).expect("mkdir global");
    // The canary sample's folder is asked about (a canary read without asking is refused).
    let decoys = world.base.join("decoy");
    std::fs::write(
        &global,
        json!({"filesystem": {"allowRead": ["/opt"], "denyRead": [decoys]}}).to_string(),
    )
    .expect("global");
    let mut app = world.start(&[&world.project]);
    app.wait_for_control().await;

    // A live grant (a session answer from outside) for `revoke` to aim at.
    let granted = world.outside.join("granted");
    std::fs::create_dir(&granted).expect("mkdir");
    let (child, id) = world
        .held_write(port(&world, &app), &granted.join("a.txt"))
        .await;
    world.ctl_ok(&["answer", &id, "session"]).await;
    assert_eq!(finish(child).await.stdout.trim(), "ok");
    let grants = world.grants().await;
    let grant = grants
        .first()
        .and_then(|g| g["id"].as_u64())
        .unwrap_or_else(|| panic!("no grant after a session answer: {grants:?}"));
    // A policy save from outside for `undo_policy` to take back.
    world
        .ctl_ok(&[
            "policy",
            "add",
            "--project",
            path_str(&world.project),
            "allowRead",
            "/srv",
        ])
        .await;
    // The held write every `answer` aims at.
    std::fs::create_dir(world.base.join("entry")).expect("mkdir the samples' entry");
    std::fs::create_dir(world.base.join("entry-all")).expect("mkdir the samples' entry");
    let held_dir = world.outside.join("held");
    std::fs::create_dir(&held_dir).expect("mkdir");
    let target = held_dir.join("b.txt");
    let (mut writer, id) = world.held_write(port(&world, &app), &target).await;
    let id: u64 = id.parse().expect("a numeric id");

    let before = state(&world).await;
    let requests = samples(&world, id, grant);
    for landstrip in [Landstrip::V0_19, Landstrip::V0_18] {
        let replies = requests_inside(&world, &app, landstrip, &requests).await;
        // Every wrong reply is gathered, so that a served change shows in the state below
        // too (each check fails on its own).
        let mut wrong = Vec::new();
        for (request, reply) in requests.iter().zip(&replies) {
            let wire = serde_json::to_value(reply).expect("reply json");
            let right = match (expected(request), reply) {
                (Inside::Answers(kind), Response::Ok(_)) => wire["kind"] == kind,
                (Inside::Refused, Response::Error { message }) => {
                    message.starts_with(REFUSED) && message.ends_with(FROM_OUTSIDE)
                }
                _ => false,
            };
            if !right {
                wrong.push(format!(
                    "{request:?}: expected {:?}, got {wire}",
                    expected(request)
                ));
            }
        }
        assert_eq!(
            state(&world).await,
            before,
            "a request from inside {landstrip:?} changed something; wrong replies: {wrong:#?}"
        );
        assert!(
            wrong.is_empty(),
            "inside {landstrip:?}: {wrong:#?}; the app's log:\n{}",
            app.log()
        );
    }
    assert!(
        writer.try_wait().expect("try_wait").is_none(),
        "the held write was answered from inside"
    );
    assert!(!target.exists(), "the held write went through");

    // The samples have teeth: from outside, each one refused inside is served and changes
    // what is compared above, so "nothing changed" means something. Two change nothing
    // compared there: take_over (the project's discovery file is the app's already) and
    // open_settings (a window, no state). The project is removed last, so that every
    // other one still has it; the answer (first) lets the held write through.
    let mut refused: Vec<&Request> = requests
        .iter()
        .filter(|r| expected(r) == Inside::Refused)
        .collect();
    refused.sort_by_key(|r| matches!(r, Request::RemoveProject { .. }));
    let mut client = tokio::time::timeout(EVENT_TIMEOUT, Client::connect(&world.control_socket()))
        .await
        .expect("connecting in time")
        .expect("connect to the control socket");
    for request in refused {
        let before = state(&world).await;
        let reply = tokio::time::timeout(EVENT_TIMEOUT, client.request(request))
            .await
            .unwrap_or_else(|_| panic!("{request:?} from outside: no reply in {EVENT_TIMEOUT:?}"))
            .expect("a reply");
        // No run read a canary here, so there is no incident to kill: the reply says so,
        // which it can only say once the request reached the operation.
        if let Request::IncidentAct { .. } = request {
            assert_eq!(
                reply,
                Response::error("no incident 1"),
                "{request:?} from outside"
            );
            continue;
        }
        // Refused inside for whom it serves (a bridge), not for a change: from outside,
        // the list.
        if let Request::Watch { .. } = request {
            assert!(
                matches!(reply, Response::Ok(Reply::Pending(_))),
                "{request:?} from outside: {reply:?}"
            );
            continue;
        }
        // No device was paired here: the reply says so, from the operation itself.
        if let Request::WebRevoke { .. } = request {
            assert_eq!(
                reply,
                Response::error("no paired device 1 (see ctl web devices)"),
                "{request:?} from outside"
            );
            continue;
        }
        // Refused inside for the token it gives, not for a change: from outside, a token.
        if let Request::WebPair = request {
            assert!(
                matches!(reply, Response::Ok(Reply::WebPairing(_))),
                "{request:?} from outside: {reply:?}"
            );
            continue;
        }
        // Refused inside for what they show, not for a change: from outside, the lists.
        if let Request::Canaries | Request::Incidents = request {
            assert!(
                matches!(
                    reply,
                    Response::Ok(Reply::Canaries(_) | Reply::Incidents(_))
                ),
                "{request:?} from outside: {reply:?}"
            );
            continue;
        }
        assert!(
            matches!(reply, Response::Ok(_)),
            "{request:?} from outside: {reply:?}"
        );
        // The journal is not in the state read here (its undo of a run still open is
        // refused from outside too); what matters for it is the refusal from inside.
        if !matches!(
            request,
            Request::TakeOver { .. } | Request::OpenSettings { .. } | Request::JournalUndo { .. }
        ) {
            assert_ne!(
                state(&world).await,
                before,
                "{request:?} served from outside changed nothing: as a sample it proves nothing"
            );
        }
    }
    assert_eq!(finish(writer).await.stdout.trim(), "ok");
    app.assert_running();
    assert_eq!(app.terminate().await, Some(0));
}
