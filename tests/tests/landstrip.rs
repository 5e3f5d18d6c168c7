//! The core against the real landstrip binary (from the npm registry), launched the way
//! opencode-landstrip launches it with the policy the real opencode-landstrip 0.19.1 built
//! from the test's sandbox.json files (tests/src/plugin.rs), and a scripted presenter
//! answering through the core's public API. Nothing here is mocked.

use std::path::Path;

use landstrip_tray_core::activity::{Decider, Outcome};
use landstrip_tray_core::decision::answer::{AnswerRequest, ChoiceKey};
use landstrip_tray_core::decision::broker::BrokerEvent;
use landstrip_tray_core::policy;
use landstrip_tray_core::serving::discovery::ReadOutcome;
use landstrip_tray_core::wire::protocol::{FsOperation, QueryKind};
use landstrip_tray_tests::plugin::PluginInvocation;
use landstrip_tray_tests::tap::Tap;
use landstrip_tray_tests::{finish, until, Landstrip, TestEnv, PYTHON, READ, WRITE};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Connects to 127.0.0.1:argv[1]; prints connected, or EACCES and exits 13.
const CONNECT: &str = r#"
import socket, sys
s = socket.socket()
try:
    s.connect(("127.0.0.1", int(sys.argv[1])))
    print("connected")
except PermissionError as e:
    print("EACCES" if e.errno == 13 else repr(e))
    sys.exit(13)
"#;

/// Binds 127.0.0.1:0; prints bound, or EACCES and exits 13.
const BIND: &str = r#"
import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", 0))
    print("bound")
except PermissionError as e:
    print("EACCES" if e.errno == 13 else repr(e))
    sys.exit(13)
"#;

/// Everything the broker announced so far, none of which may be a new prompt.
fn assert_no_prompt_queued(env: &mut TestEnv) {
    while let Ok(event) = env.events.try_recv() {
        assert!(
            !matches!(event, BrokerEvent::Added(_)),
            "an unexpected prompt: {event:?}"
        );
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 test path")
}

async fn write_outside(
    landstrip: Landstrip,
    choice: AnswerRequest,
) -> (TestEnv, landstrip_tray_tests::Finished) {
    let mut env = TestEnv::start().await;
    let target = env.outside.join("note.txt");
    let child =
        env.launch_with_plugin_policy(landstrip, None, &[PYTHON, "-c", WRITE, path_str(&target)]);
    let prompt = env.next_prompt().await;
    match &prompt.query.kind {
        QueryKind::Filesystem(fs) => {
            assert_eq!(fs.operation, FsOperation::Write);
            assert_eq!(Path::new(&fs.path), target);
        }
        other => panic!("expected a filesystem query, got {other:?}"),
    }
    env.broker().answer(prompt.id, &choice).expect("answer");
    let done = finish(child).await;
    (env, done)
}

#[tokio::test]
async fn a_held_write_allowed_once_completes() {
    for landstrip in [Landstrip::V0_19, Landstrip::V0_18] {
        let (env, done) = write_outside(landstrip, AnswerRequest::once()).await;
        assert_eq!(done.stdout.trim(), "ok", "{landstrip:?}: {done:?}");
        assert_eq!(
            std::fs::read_to_string(env.outside.join("note.txt")).expect("written"),
            "hello"
        );
    }
}

#[tokio::test]
async fn a_held_write_denied_fails_with_eacces() {
    for landstrip in [Landstrip::V0_19, Landstrip::V0_18] {
        let (env, done) = write_outside(landstrip, AnswerRequest::deny()).await;
        assert_eq!(done.stdout.trim(), "EACCES", "{landstrip:?}: {done:?}");
        assert_eq!(done.code, Some(13));
        assert!(!env.outside.join("note.txt").exists());
    }
}

#[tokio::test]
async fn a_read_of_a_deny_read_path_is_asked_and_answered() {
    for (choice, expected) in [
        (AnswerRequest::once(), "top secret"),
        (AnswerRequest::deny(), "EACCES"),
    ] {
        let mut env = TestEnv::start().await;
        // Reads under the home folder (a boundary, as the bundled /home is) are asked
        // about; a denyRead naming the folder itself would deny without asking
        // (docs/ARCHITECTURE.md, "Decision rules").
        let secret_dir = env.home.join("secret");
        std::fs::create_dir_all(&secret_dir).expect("mkdir");
        std::fs::write(secret_dir.join("key"), "top secret").expect("write");
        env.write_project_policy(r#"{"filesystem":{"denyRead":["~"]}}"#);
        let target = secret_dir.join("key");
        let child = env.launch_with_plugin_policy(
            Landstrip::V0_19,
            None,
            &[PYTHON, "-c", READ, path_str(&target)],
        );
        let prompt = env.next_prompt().await;
        let QueryKind::Filesystem(fs) = &prompt.query.kind else {
            panic!("not a filesystem query")
        };
        assert_eq!(fs.operation, FsOperation::Read);
        env.broker().answer(prompt.id, &choice).expect("answer");
        let done = finish(child).await;
        assert_eq!(done.stdout.trim(), expected, "{done:?}");
    }
}

#[tokio::test]
async fn network_connect_and_bind_are_asked_and_answered() {
    let server = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = server.local_addr().expect("addr").port().to_string();
    let cases: [(&str, &[&str], AnswerRequest, &str); 4] = [
        (
            "connect",
            &[PYTHON, "-c", CONNECT, &port],
            AnswerRequest::once(),
            "connected",
        ),
        (
            "connect",
            &[PYTHON, "-c", CONNECT, &port],
            AnswerRequest::deny(),
            "EACCES",
        ),
        (
            "bind",
            &[PYTHON, "-c", BIND],
            AnswerRequest::once(),
            "bound",
        ),
        (
            "bind",
            &[PYTHON, "-c", BIND],
            AnswerRequest::deny(),
            "EACCES",
        ),
    ];
    for (operation, program, choice, expected) in cases {
        let mut env = TestEnv::start().await;
        let child = env.launch_with_plugin_policy(Landstrip::V0_19, None, program);
        let prompt = env.next_prompt().await;
        let QueryKind::Network(net) = &prompt.query.kind else {
            panic!("not a network query")
        };
        assert_eq!(net.operation.as_str(), operation);
        if operation == "connect" {
            assert_eq!(net.target, format!("127.0.0.1:{port}"));
        }
        env.broker()
            .answer(prompt.id, &choice.clone())
            .expect("answer");
        let done = finish(child).await;
        assert_eq!(
            done.stdout.trim(),
            expected,
            "{operation} {choice:?}: {done:?}"
        );
    }
}

#[tokio::test]
async fn a_write_matching_deny_write_is_denied_without_a_prompt() {
    let mut env = TestEnv::start().await;
    let child =
        env.launch_with_plugin_policy(Landstrip::V0_19, None, &[PYTHON, "-c", WRITE, ".env"]);
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");
    assert!(!env.project.join(".env").exists());
    assert!(env.broker().pending().is_empty());
    // The record is handed to the log just after the answer goes out: looked for again.
    let recorded = || {
        env.broker()
            .activity()
            .recent()
            .into_iter()
            .find(|e| e.subject.ends_with("/.env"))
    };
    until("the denial recorded", || recorded().is_some()).await;
    let entry = recorded().expect("recorded");
    assert_eq!(
        (entry.outcome, entry.by),
        (Outcome::Deny, Decider::HardDenial)
    );
    // Nothing was ever offered to the user: the event stream holds no prompt.
    assert_no_prompt_queued(&mut env);
}

#[tokio::test]
async fn a_session_grant_covers_200_later_writes_without_a_prompt() {
    let mut env = TestEnv::start().await;
    let dir = env.outside.join("build");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let script = r#"
import sys, os
for i in range(201):
    with open(os.path.join(sys.argv[1], f"f{i}"), "w") as f:
        f.write(str(i))
print("done")
"#;
    let child = env.launch_with_plugin_policy(
        Landstrip::V0_19,
        Some("ses_test1"),
        &[PYTHON, "-c", script, path_str(&dir)],
    );
    let prompt = env.next_prompt().await;
    assert_eq!(prompt.session.as_deref(), Some("ses_test1"));
    assert_eq!(prompt.session_scope.as_deref(), Some(dir.as_path()));
    env.broker()
        .answer(prompt.id, &AnswerRequest::session())
        .expect("answer");
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "done", "{done:?}");
    assert_eq!(std::fs::read_dir(&dir).expect("dir").count(), 201);
    // The first write was the only prompt: the rest went through the grant.
    assert_no_prompt_queued(&mut env);
    // Each record is handed to the log just after its answer goes out: counted again.
    let granted = || {
        env.broker()
            .activity()
            .recent()
            .iter()
            .filter(|e| e.by == Decider::SessionGrant)
            .count()
    };
    until("200 answers of the session grant recorded", || {
        granted() >= 200
    })
    .await;
}

#[tokio::test]
async fn allow_for_project_persists_and_the_next_run_needs_no_prompt() {
    let mut env = TestEnv::start().await;
    let target = env.outside.join("cache/data.bin");
    std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
    let child = env.launch_with_plugin_policy(
        Landstrip::V0_19,
        None,
        &[PYTHON, "-c", WRITE, path_str(&target)],
    );
    let prompt = env.next_prompt().await;
    let answered = env
        .broker()
        .answer(prompt.id, &AnswerRequest::new(ChoiceKey::Project))
        .expect("answer");
    let (file, entry) = answered.persisted.expect("persisted");
    assert_eq!(file, env.project.join(".opencode/sandbox.json"));
    assert_eq!(entry, path_str(&env.outside.join("cache")));
    assert_eq!(finish(child).await.stdout.trim(), "ok");

    let text = std::fs::read_to_string(&file).expect("sandbox.json");
    let parsed = policy::parse_overrides(&text, &file).expect("still validates");
    let allow_write = parsed
        .filesystem
        .and_then(|f| f.allow_write)
        .expect("allowWrite");
    assert_eq!(allow_write, vec![entry]);

    // A second run gets the entry in its landstrip policy: landstrip asks nothing.
    let again = env.outside.join("cache/other.bin");
    let child = env.launch_with_plugin_policy(
        Landstrip::V0_19,
        None,
        &[PYTHON, "-c", WRITE, path_str(&again)],
    );
    assert_eq!(finish(child).await.stdout.trim(), "ok");
    assert_no_prompt_queued(&mut env);
}

/// The whole launch as the plugin does it: its rewritten command line (its fd-3 wrapper,
/// session hello and its own landstrip 0.19.2) found the core's discovery file, so the
/// held write reaches the core, tagged with the plugin's session, and is answered there.
#[tokio::test]
async fn the_plugins_own_command_line_reaches_the_core_through_discovery() {
    let mut env = TestEnv::start().await;
    let target = env.outside.join("via-plugin.txt");
    let mut call = PluginInvocation::new(&env.home, &env.project, env.root.path());
    call.session = Some("ses_plugin1".into());
    call.runtime_dir = Some(
        env.discovery
            .path()
            .parent()
            .expect("the discovery dir sits in a runtime dir")
            .to_path_buf(),
    );
    call.keep = true;
    call.command = format!("printf hello > '{}' && echo ok", path_str(&target));
    // Off the runtime: the plugin probes the core's port while the service must accept.
    let run = tokio::task::spawn_blocking(move || call.run())
        .await
        .expect("join")
        .unwrap_or_else(|e| panic!("{e}"));
    let port = format!("/dev/tcp/127.0.0.1/{} ", env.discovered_port());
    assert!(run.command.contains(&port), "{}", run.command);

    let child = tokio::process::Command::new("bash")
        .arg("-c")
        .arg(&run.command)
        .current_dir(&env.project)
        .env("HOME", &env.home)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the plugin's command line");
    let prompt = env.next_prompt().await;
    assert_eq!(prompt.session.as_deref(), Some("ses_plugin1"));
    let QueryKind::Filesystem(fs) = &prompt.query.kind else {
        panic!("not a filesystem query: {:?}", prompt.query.kind)
    };
    assert_eq!(
        (fs.operation, Path::new(&fs.path)),
        (FsOperation::Write, target.as_path())
    );
    env.broker()
        .answer(prompt.id, &AnswerRequest::once())
        .expect("answer");
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");
    assert_eq!(std::fs::read_to_string(&target).expect("written"), "hello");
}

/// A byte pump between landstrip and the presenter that the test can cut, so the
/// connection closes while a query is held (real sockets on both sides).
async fn cuttable_proxy(upstream: u16) -> (u16, tokio::sync::oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (cut, mut cut_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let (mut down, _) = listener.accept().await.expect("accept");
        let mut up = TcpStream::connect(("127.0.0.1", upstream))
            .await
            .expect("connect");
        tokio::select! {
            _ = tokio::io::copy_bidirectional(&mut down, &mut up) => {}
            _ = &mut cut_rx => {}
        }
    });
    (port, cut)
}

#[tokio::test]
async fn a_closed_connection_withdraws_its_prompt_and_the_program_gets_eacces() {
    let mut env = TestEnv::start().await;
    let (port, cut) = cuttable_proxy(env.discovered_port()).await;
    let target = env.outside.join("held.txt");
    let child = env.launch_with_plugin_policy_via(
        Landstrip::V0_19,
        port,
        None,
        &[PYTHON, "-c", WRITE, path_str(&target)],
    );
    let prompt = env.next_prompt().await;
    cut.send(()).expect("cut");
    match env.next_event().await {
        BrokerEvent::Resolved { id, outcome, by } => {
            assert_eq!(id, prompt.id);
            assert_eq!((outcome, by), (Outcome::Withdrawn, Decider::RunEnded));
        }
        other => panic!("expected the prompt withdrawn, got {other:?}"),
    }
    assert!(env.broker().pending().is_empty());
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");
    assert!(!target.exists());
}

#[tokio::test]
async fn shutdown_denies_every_held_query_and_removes_the_discovery_file() {
    let mut env = TestEnv::start().await;
    // Each run through a tap: EACCES alone would also follow from the sockets closing
    // (landstrip denies what it holds then), so the answers are read off the wire.
    let mut runs = Vec::new();
    for i in 0..3 {
        let target = env.outside.join(format!("held-{i}.txt"));
        let mut tap = Tap::start(env.discovered_port()).await;
        let child = env.launch_with_plugin_policy_via(
            Landstrip::V0_19,
            tap.port,
            None,
            &[PYTHON, "-c", WRITE, path_str(&target)],
        );
        let query = tap.first_query().await.trap;
        let prompt = env.next_prompt().await;
        runs.push((child, target, tap, query, prompt.id));
    }
    let file = env.discovery.file_for(&env.project);
    assert!(file.exists());
    env.service.shutdown().await;
    // Shutdown settles the prompts itself (its events are sent before it returns): each
    // denied, by quitting, not withdrawn when its run's connection closed.
    let mut resolved = Vec::new();
    while let Ok(event) = env.events.try_recv() {
        if let BrokerEvent::Resolved { id, outcome, by } = event {
            resolved.push((id, outcome, by));
        }
    }
    let mut expected: Vec<_> = runs
        .iter()
        .map(|run| (run.4, Outcome::Deny, Decider::Quit))
        .collect();
    expected.sort_by_key(|r| r.0);
    resolved.sort_by_key(|r| r.0);
    assert_eq!(resolved, expected, "how shutdown settled the prompts");
    let log = std::fs::read_to_string(env.root.path().join("data/activity.jsonl"))
        .expect("the activity log");
    for (child, target, tap, query, _) in runs {
        let done = finish(child).await;
        assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");
        assert!(!target.exists());
        // The tap records what the app sends before passing it on, up to the close.
        let replies = tap.replies();
        let reply: serde_json::Value = serde_json::from_str(replies.trim())
            .unwrap_or_else(|e| panic!("the answer to {query}: {replies:?}: {e}"));
        assert_eq!(reply["query_id"], query["query_id"], "{replies}");
        assert_eq!(reply["action"], "deny", "{replies}");
        let entries: Vec<serde_json::Value> = log
            .lines()
            .map(|l| serde_json::from_str(l).expect("an activity line"))
            .filter(|e: &serde_json::Value| e["subject"] == path_str(&target))
            .collect();
        assert_eq!(entries.len(), 1, "one decision for the query: {entries:?}");
        assert_eq!(entries[0]["outcome"], "deny", "{}", entries[0]);
        assert_eq!(
            entries[0]["by"], "quit",
            "not denied by quitting: {}",
            entries[0]
        );
    }
    assert!(!file.exists(), "discovery file left behind");
    assert!(matches!(
        env.discovery.read(&env.project),
        ReadOutcome::Missing
    ));
}

#[tokio::test]
async fn the_0_15_dialect_gets_numeric_answers_and_terminal_traps_go_unanswered() {
    let mut env = TestEnv::start().await;
    let mut peer = TcpStream::connect(("127.0.0.1", env.discovered_port()))
        .await
        .expect("connect");
    // 0.15.0–0.15.3: no state field, so terminal; then a 0.15.4+ query with a numeric id.
    let lines = concat!(
        r#"{"kind":"filesystem","operation":"write","path":"/tmp/x","mechanism":"seccomp","query_id":3}"#,
        "\n",
        r#"{"kind":"filesystem","state":"query","query_id":7,"operation":"write","path":"/tmp/y/z","mechanism":"seccomp"}"#,
        "\n",
    );
    peer.write_all(lines.as_bytes()).await.expect("write");
    let prompt = env.next_prompt().await;
    assert_eq!(prompt.query.id.raw(), "7");
    env.broker()
        .answer(prompt.id, &AnswerRequest::once())
        .expect("answer");
    let mut answer = Vec::new();
    let mut byte = [0u8; 1];
    while byte[0] != b'\n' {
        peer.read_exact(&mut byte).await.expect("an answer line");
        answer.push(byte[0]);
    }
    // The first (and only) answer is for id 7, as a number: the terminal trap got none.
    assert_eq!(answer, b"{\"query_id\":7,\"action\":\"allow\"}\n");
}
