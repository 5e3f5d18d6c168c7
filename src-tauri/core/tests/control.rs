//! The control socket against a real service: real Unix and TCP sockets, real discovery
//! and settings files. Queries arrive over a real TCP connection to the project's
//! listener and are answered through the control socket; other uids are refused on both
//! the control socket and the query listener (a client run as `nobody`).

mod common;

use common::{write_query, Run};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use landstrip_tray_core::app_settings::SettingsFile;
use landstrip_tray_core::decision::answer::{AnswerRequest, ChoiceKey};
use landstrip_tray_core::decision::broker::PendingPrompt;
use landstrip_tray_core::serving::discovery::{DiscoveryRecord, ReadOutcome};
use landstrip_tray_core::serving::service::ProjectStatus;
use landstrip_tray_core::surfaces::control::{
    Client, ControlError, ControlServer, Reply, Request, Response, MAX_REQUEST,
};
use landstrip_tray_core::wire::protocol::Action;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

/// Bound on any single awaited event (not a sleep).
const BOUND: Duration = Duration::from_secs(20);

/// The uid and gid of `nobody`.
const NOBODY: u32 = 65534;

type Env = common::Served;

async fn start() -> Env {
    common::Setup {
        serve_project: true,
        settings: true,
        ..Default::default()
    }
    .start()
    .await
}

impl Env {
    fn port(&self) -> u16 {
        self.port_of(&self.project)
    }

    /// A write outside the project (it asks) over a new TCP connection to the listener.
    async fn held_write(&mut self, query_id: &str, name: &str) -> (Run, PendingPrompt) {
        let mut run = Run::connect(self.port(), BOUND).await;
        run.send(&write_query(query_id, &self.outside.join(name)))
            .await;
        let prompt = self.next_prompt().await;
        (run, prompt)
    }
}

async fn within<T>(work: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, work)
        .await
        .unwrap_or_else(|_| panic!("not within {BOUND:?}"))
}

/// A raw line client, for input the typed client would never send.
struct Raw {
    reader: BufReader<tokio::net::unix::OwnedReadHalf>,
    writer: tokio::net::unix::OwnedWriteHalf,
}

impl Raw {
    async fn connect(socket: &Path) -> Self {
        let stream = within(UnixStream::connect(socket)).await.expect("connect");
        let (read, writer) = stream.into_split();
        Self {
            reader: BufReader::new(read),
            writer,
        }
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.expect("send");
    }

    /// The next reply line, or None at end of stream.
    async fn reply(&mut self) -> Option<serde_json::Value> {
        let mut line = String::new();
        let n = within(self.reader.read_line(&mut line)).await.ok()?;
        (n > 0).then(|| serde_json::from_str(&line).expect("a JSON reply"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_and_answer_once_round_trip_over_real_sockets() {
    let mut env = start().await;
    let Reply::Status(status) = env.ok(Request::Status).await else {
        panic!("not a status reply")
    };
    assert_eq!(status.pid, std::process::id());
    assert_eq!((status.projects, status.pending), (1, 0));
    assert!(!status.pause.paused);

    let Reply::Projects(projects) = env.ok(Request::Projects).await else {
        panic!("not a projects reply")
    };
    assert_eq!(projects.len(), 1);
    assert_eq!(projects[0].dir, env.project);
    assert_eq!(projects[0].port, env.port());
    assert_eq!(projects[0].status, ProjectStatus::Serving);

    let (mut run, prompt) = env.held_write("7", "a.txt").await;
    let target = env.outside.join("a.txt");
    let Reply::Pending(items) = env.ok(Request::Pending { wait: false }).await else {
        panic!("not a pending reply")
    };
    assert_eq!(items.len(), 1, "{items:?}");
    let item = &items[0];
    assert_eq!(item.id, prompt.id);
    assert_eq!(item.kind, "filesystem");
    assert_eq!(item.operation, "write");
    assert_eq!(item.path.as_deref(), target.to_str());
    assert_eq!(item.exe.as_deref(), Some("/usr/bin/dash"));
    assert_eq!(item.pid, Some(2434));
    assert_eq!(item.project, env.project);
    assert_eq!(item.reason.as_deref(), Some("allow_miss"));
    let Reply::Status(status) = env.ok(Request::Status).await else {
        panic!("not a status reply")
    };
    assert_eq!(status.pending, 1);

    let Reply::Answered(answered) = env
        .ok(Request::Answer {
            id: prompt.id,
            answer: AnswerRequest::once(),
        })
        .await
    else {
        panic!("not an answer reply")
    };
    assert_eq!(answered.id, prompt.id);
    assert_eq!(answered.action, Action::Allow);
    assert_eq!((answered.grant, &answered.persisted), (None, &None));
    assert_eq!(
        run.answer().await,
        serde_json::json!({"query_id": "7", "action": "allow"})
    );
    let Reply::Pending(items) = env.ok(Request::Pending { wait: false }).await else {
        panic!("not a pending reply")
    };
    assert!(items.is_empty(), "{items:?}");

    // Answered already: an error reply that says so.
    let message = env
        .error(Request::Answer {
            id: prompt.id,
            answer: AnswerRequest::deny(),
        })
        .await;
    assert!(message.contains("no longer pending"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_and_project_answers_reach_the_run_and_the_policy_file() {
    let mut env = start().await;
    let (mut run, prompt) = env.held_write("1", "denied.txt").await;
    let Reply::Answered(answered) = env
        .ok(Request::Answer {
            id: prompt.id,
            answer: AnswerRequest::deny(),
        })
        .await
    else {
        panic!("not an answer reply")
    };
    assert_eq!(answered.action, Action::Deny);
    assert_eq!(
        run.answer().await,
        serde_json::json!({"query_id": "1", "action": "deny"})
    );

    // "For project" with an explicit entry: written to the project's sandbox.json, the
    // held write allowed, and a second write the entry covers answered with it.
    let (mut first, prompt) = env.held_write("2", "granted/a.txt").await;
    let (mut second, _) = env.held_write("3", "granted/b.txt").await;
    let entry = env.outside.join("granted").display().to_string();
    let Reply::Answered(answered) = env
        .ok(Request::Answer {
            id: prompt.id,
            answer: AnswerRequest {
                entry: Some(entry.clone()),
                ..AnswerRequest::new(ChoiceKey::Project)
            },
        })
        .await
    else {
        panic!("not an answer reply")
    };
    let persisted = answered.persisted.clone().expect("persisted");
    assert_eq!(persisted.file, env.project.join(".opencode/sandbox.json"));
    assert_eq!(persisted.entry, entry);
    assert_eq!(answered.also_answered.len(), 1, "{answered:?}");
    let written = std::fs::read_to_string(&persisted.file).expect("policy file");
    assert!(written.contains(&entry), "{written}");
    assert_eq!(first.answer().await["action"], "allow");
    assert_eq!(second.answer().await["action"], "allow");

    let message = env
        .error(Request::Answer {
            id: 999_999,
            answer: AnswerRequest::once(),
        })
        .await;
    assert!(message.contains("999999"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_outside_the_rules_are_refused_and_the_prompt_stays_pending() {
    let mut env = start().await;
    let (mut run, prompt) = env.held_write("1", "build/out.o").await;
    let policy = env.project.join(".opencode/sandbox.json");
    let entry = |entry: &str, wider: bool| Request::Answer {
        id: prompt.id,
        answer: AnswerRequest {
            entry: Some(entry.to_owned()),
            wider,
            ..AnswerRequest::new(ChoiceKey::Project)
        },
    };
    // An entry that does not cover the request, even marked wider.
    let elsewhere = env.outside.join("elsewhere").display().to_string();
    let message = env.error(entry(&elsewhere, true)).await;
    assert!(message.contains("does not cover"), "{message}");
    // A covering entry wider than every offered scope, without saying so.
    let wide = env.outside.display().to_string();
    let message = env.error(entry(&wide, false)).await;
    assert!(message.contains("wider"), "{message}");
    // An entry with a choice that writes none (once).
    let message = env
        .error(Request::Answer {
            id: prompt.id,
            answer: AnswerRequest {
                entry: Some(wide.clone()),
                ..AnswerRequest::once()
            },
        })
        .await;
    assert!(message.contains("project, global or never"), "{message}");
    assert!(!policy.exists(), "a refused answer wrote the policy file");
    let Reply::Pending(items) = env.ok(Request::Pending { wait: false }).await else {
        panic!("not a pending reply")
    };
    assert_eq!(
        items.iter().map(|i| i.id).collect::<Vec<_>>(),
        vec![prompt.id]
    );
    // Said plainly, the wider entry is accepted: written, and the held write allowed.
    let Reply::Answered(answered) = env.ok(entry(&wide, true)).await else {
        panic!("not an answer reply")
    };
    assert_eq!(answered.persisted.expect("persisted").entry, wide);
    assert_eq!(run.answer().await["action"], "allow");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sensitive_path_needs_the_confirmation_beyond_once() {
    let mut env = start().await;
    let (mut run, prompt) = env.held_write("1", "keys/server.pem").await;
    let message = env
        .error(Request::Answer {
            id: prompt.id,
            answer: AnswerRequest::session(),
        })
        .await;
    assert!(message.contains("confirm"), "{message}");
    let Reply::Answered(answered) = env
        .ok(Request::Answer {
            id: prompt.id,
            answer: AnswerRequest {
                confirmed: true,
                ..AnswerRequest::session()
            },
        })
        .await
    else {
        panic!("not an answer reply")
    };
    assert!(answered.grant.is_some());
    assert_eq!(run.answer().await["action"], "allow");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_wait_replies_once_a_prompt_arrives() {
    let mut env = start().await;
    let mut client = env.client().await;
    let waiting = tokio::spawn(async move {
        let reply = client
            .request(&Request::Pending { wait: true })
            .await
            .expect("reply");
        (client, reply)
    });
    let (_run, prompt) = env.held_write("1", "waited.txt").await;
    let (_client, reply) = within(waiting).await.expect("join");
    match reply {
        Response::Ok(Reply::Pending(items)) => {
            assert_eq!(items.iter().map(|i| i.id).collect::<Vec<_>>(), [prompt.id])
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_and_resume() {
    let mut env = start().await;
    let Reply::Paused(pause) = env.ok(Request::Pause { secs: Some(90) }).await else {
        panic!("not a pause reply")
    };
    assert!(pause.paused);
    assert!(
        pause.remaining_secs.is_some_and(|s| (85..=90).contains(&s)),
        "{pause:?}"
    );
    // While paused, what would ask is denied at once and counted.
    let mut run = Run::connect(env.port(), BOUND).await;
    run.send(&write_query("1", &env.outside.join("p.txt")))
        .await;
    assert_eq!(run.answer().await["action"], "deny");
    let Reply::Status(status) = env.ok(Request::Status).await else {
        panic!("not a status reply")
    };
    assert!(
        status.pause.paused && status.pause.denied == 1,
        "{status:?}"
    );

    let Reply::Resumed(resumed) = env.ok(Request::Resume).await else {
        panic!("not a resume reply")
    };
    assert!(resumed.was_paused);
    assert_eq!(resumed.denied, 1);
    assert!(!env.service.broker().pause_state().paused);
    run.send(&write_query("2", &env.outside.join("p.txt")))
        .await;
    assert_eq!(env.next_prompt().await.query.id.raw(), "\"2\"");

    let Reply::Paused(pause) = env.ok(Request::Pause { secs: None }).await else {
        panic!("not a pause reply")
    };
    assert!(pause.paused && pause.remaining_secs.is_none(), "{pause:?}");
    let message = env.error(Request::Pause { secs: Some(0) }).await;
    assert!(message.contains("at least"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_and_remove_project_persist_to_the_settings() {
    let env = start().await;
    let other = env.other.clone();
    let Reply::Project(info) = env
        .ok(Request::AddProject {
            dir: other.clone(),
            persist: true,
        })
        .await
    else {
        panic!("not a project reply")
    };
    assert_eq!(info.dir, other);
    assert_eq!(info.status, ProjectStatus::Serving);
    assert!(
        matches!(env.discovery.read(&other), ReadOutcome::Record(r) if r.port == info.port),
        "no discovery file for the added project"
    );
    let saved = SettingsFile::new(env.settings.clone())
        .load()
        .expect("load");
    assert_eq!(saved.projects, vec![other.clone()]);

    let Reply::Removed(dir) = env
        .ok(Request::RemoveProject {
            dir: other.clone(),
            persist: true,
        })
        .await
    else {
        panic!("not a removed reply")
    };
    assert_eq!(dir, other);
    assert!(matches!(env.discovery.read(&other), ReadOutcome::Missing));
    let saved = SettingsFile::new(env.settings.clone())
        .load()
        .expect("load");
    assert!(saved.projects.is_empty(), "{saved:?}");

    // For this run only: served, not saved.
    env.ok(Request::AddProject {
        dir: other.clone(),
        persist: false,
    })
    .await;
    assert!(env.service.list().iter().any(|p| p.dir == other));
    let saved = SettingsFile::new(env.settings.clone())
        .load()
        .expect("load");
    assert!(saved.projects.is_empty(), "{saved:?}");

    let message = env
        .error(Request::AddProject {
            dir: "relative/dir".into(),
            persist: true,
        })
        .await;
    assert!(message.contains("must be absolute"), "{message}");
    let message = env
        .error(Request::AddProject {
            dir: env.base.join("missing"),
            persist: true,
        })
        .await;
    assert!(message.contains("missing"), "{message}");
    let message = env
        .error(Request::RemoveProject {
            dir: env.base.join("home"),
            persist: false,
        })
        .await;
    assert!(message.contains("not served"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn take_over_publishes_over_a_live_presenter() {
    let env = start().await;
    let contested = env.base.join("contested");
    std::fs::create_dir(&contested).expect("mkdir");
    let mut sleeper = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .expect("spawn sleep");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let theirs = DiscoveryRecord {
        port: listener.local_addr().expect("addr").port(),
        pid: sleeper.id(),
        ts: 1,
    };
    env.discovery.ensure_dir().expect("discovery dir");
    std::fs::write(env.discovery.file_for(&contested), theirs.to_json()).expect("plant");
    // Left to the other presenter while it runs ("here" would take it back at once).
    std::fs::create_dir_all(env.settings.parent().expect("config dir")).expect("mkdir");
    std::fs::write(
        &env.settings,
        serde_json::json!({"projectPrompts": {contested.display().to_string(): "terminal"}})
            .to_string(),
    )
    .expect("settings");

    let Reply::Project(info) = env
        .ok(Request::AddProject {
            dir: contested.clone(),
            persist: false,
        })
        .await
    else {
        panic!("not a project reply")
    };
    assert_eq!(
        info.status,
        ProjectStatus::Conflict {
            other_pid: theirs.pid,
            other_port: theirs.port
        }
    );
    let Reply::Project(info) = env
        .ok(Request::TakeOver {
            dir: contested.clone(),
        })
        .await
    else {
        panic!("not a project reply")
    };
    assert_eq!(info.status, ProjectStatus::Serving);
    assert!(
        matches!(env.discovery.read(&contested), ReadOutcome::Record(r) if r.pid == std::process::id() && r.port == info.port)
    );
    let _ = sleeper.kill();
    let _ = sleeper.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_lines_get_error_replies_and_the_server_keeps_serving() {
    let env = start().await;
    // A client that stays connected through everything below.
    let mut bystander = Raw::connect(&env.socket).await;

    let mut raw = Raw::connect(&env.socket).await;
    raw.send(b"this is not json\n").await;
    let reply = raw.reply().await.expect("a reply to bad JSON");
    assert_eq!(reply["result"], "error", "{reply}");
    assert!(
        reply["message"]
            .as_str()
            .unwrap_or("")
            .contains("bad request"),
        "{reply}"
    );
    raw.send(b"{\"request\":\"frobnicate\"}\n").await;
    let reply = raw.reply().await.expect("a reply to an unknown request");
    assert_eq!(reply["result"], "error", "{reply}");
    assert!(
        reply["message"]
            .as_str()
            .unwrap_or("")
            .contains("frobnicate"),
        "{reply}"
    );
    // Blank lines are skipped; the same connection still serves.
    raw.send(b"\n  \n{\"request\":\"status\"}\n").await;
    let reply = raw.reply().await.expect("status after errors");
    assert_eq!(reply["result"], "ok", "{reply}");
    assert_eq!(reply["kind"], "status", "{reply}");

    // Two requests in one write: two replies, in order.
    raw.send(b"{\"request\":\"projects\"}\n{\"request\":\"pending\"}\n")
        .await;
    assert_eq!(raw.reply().await.expect("first")["kind"], "projects");
    assert_eq!(raw.reply().await.expect("second")["kind"], "pending");

    // An overlong line: an error reply, then the connection is closed.
    let mut long = vec![b'x'; MAX_REQUEST + 1];
    long.push(b'\n');
    let mut flood = Raw::connect(&env.socket).await;
    flood.send(&long).await;
    let reply = flood.reply().await.expect("a reply to an overlong line");
    assert!(
        reply["message"]
            .as_str()
            .unwrap_or("")
            .contains("longer than"),
        "{reply}"
    );
    assert!(
        flood.reply().await.is_none(),
        "still open after an overlong line"
    );

    bystander.send(b"{\"request\":\"status\"}\n").await;
    let reply = bystander.reply().await.expect("the bystander is served");
    assert_eq!(reply["result"], "ok", "{reply}");
    assert!(matches!(env.ask(&Request::Status).await, Response::Ok(_)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_clients_at_once() {
    let env = start().await;
    let mut clients = Vec::new();
    for _ in 0..100 {
        clients.push(env.client().await);
    }
    let asks = clients
        .into_iter()
        .map(|mut client| tokio::spawn(async move { client.request(&Request::Status).await }));
    for ask in asks {
        let reply = within(ask).await.expect("join").expect("reply");
        assert!(matches!(reply, Response::Ok(Reply::Status(_))), "{reply:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_socket_is_private_and_stale_or_live_sockets_are_told_apart() {
    let env = start().await;
    let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&env.socket), 0o600);
    assert_eq!(mode(env.socket.parent().expect("dir")), 0o700);

    // A second server on a live socket is refused; the first keeps it.
    match ControlServer::bind(&env.socket) {
        Err(ControlError::AlreadyRunning(path)) => assert_eq!(path, env.socket),
        Err(e) => panic!("unexpected error: {e}"),
        Ok(_) => panic!("bound over a live socket"),
    }
    assert!(matches!(env.ask(&Request::Status).await, Response::Ok(_)));

    // Nothing there, or a stale socket: "not running", and a new server replaces it.
    let dir = env.base.join("runtime2/landstrip-tray");
    let socket = dir.join("control.sock");
    match Client::connect(&socket).await {
        Err(ControlError::NotRunning(path)) => assert_eq!(path, socket),
        Err(e) => panic!("unexpected error: {e}"),
        Ok(_) => panic!("connected to nothing"),
    }
    drop(ControlServer::bind(&socket).expect("bind"));
    assert!(socket.exists(), "a dropped listener leaves its file behind");
    let err = Client::connect(&socket).await.err().expect("stale");
    assert!(
        matches!(err, ControlError::NotRunning(_)),
        "stale socket: {err}"
    );
    assert!(err.to_string().contains("not running"), "{err}");
    let server = ControlServer::bind(&socket).expect("replace the stale socket");
    let file = server.socket_file();
    let serving = tokio::spawn(server.serve(env.service.clone()));
    let mut client = Client::connect(&socket).await.expect("connect");
    assert!(matches!(
        client.request(&Request::Status).await.expect("reply"),
        Response::Ok(_)
    ));
    serving.abort();
    assert!(file.remove(), "the socket file was not removed");
    assert!(!socket.exists());

    // Something else where the socket goes is left alone.
    std::fs::write(&socket, "not a socket").expect("write");
    let err = ControlServer::bind(&socket).err().expect("refused");
    assert!(matches!(err, ControlError::NotASocket(_)), "{err}");
    assert_eq!(std::fs::read(&socket).expect("kept"), b"not a socket");
    std::fs::remove_file(&socket).expect("rm");

    // A directory others may enter is refused by server and client, saying why.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let err = ControlServer::bind(&socket).err().expect("refused");
    assert!(err.to_string().contains("0755"), "{err}");
    let err = Client::connect(&socket).await.err().expect("refused");
    assert!(
        matches!(
            err,
            ControlError::Untrusted(landstrip_tray_core::safe_fs::PrivateDirError::TooOpen { .. })
        ),
        "{err}"
    );
}

/// Runs a Python script as `nobody` (uid and gid 65534, no groups) and returns its output.
async fn as_nobody(script: &str, args: &[&str]) -> String {
    let setpriv = [
        "setpriv",
        &format!("--reuid={NOBODY}"),
        &format!("--regid={NOBODY}"),
        "--clear-groups",
        "/usr/bin/python3",
        "-c",
        script,
    ];
    let mut argv: Vec<&str> = Vec::new();
    if landstrip_tray_core::uid() != 0 {
        // Changing uid needs root; a passwordless sudo does it, anything else fails below.
        argv.extend(["sudo", "-n"]);
    }
    argv.extend(setpriv);
    argv.extend(args);
    let output = within(
        tokio::process::Command::new(argv[0])
            .args(&argv[1..])
            .current_dir("/")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("run setpriv");
    assert!(
        output.status.success(),
        "cannot run a client as nobody ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Connects (Unix socket path or TCP port), sends argv[2] as a line, prints everything
/// received and how the stream ended: EOF, RESET or TIMEOUT.
const CLIENT: &str = r#"
import socket, sys
target, line = sys.argv[1], sys.argv[2]
if target.isdigit():
    s = socket.create_connection(("127.0.0.1", int(target)), timeout=10)
else:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(target)
try:
    s.sendall(line.encode() + b"\n")
except OSError:
    pass
data, end = b"", "EOF"
while True:
    try:
        chunk = s.recv(65536)
    except socket.timeout:
        end = "TIMEOUT"
        break
    except ConnectionResetError:
        end = "RESET"
        break
    if not chunk:
        break
    data += chunk
sys.stdout.write(data.decode() + end + "\n")
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_uid_is_refused_on_the_control_socket() {
    let env = start().await;
    // Let nobody reach the socket, so that the peer uid check is what refuses.
    let mut dir = env.socket.parent().expect("dir").to_path_buf();
    while dir.starts_with(&env.base) {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o711)).expect("chmod");
        dir.pop();
    }
    std::fs::set_permissions(&env.socket, std::fs::Permissions::from_mode(0o666))
        .expect("chmod socket");

    let socket = env.socket.to_str().expect("utf-8");
    let out = as_nobody(CLIENT, &[socket, r#"{"request":"pause"}"#]).await;
    assert!(
        out.ends_with("EOF\n") || out.ends_with("RESET\n"),
        "the connection was not closed: {out:?}"
    );
    let reply: serde_json::Value =
        serde_json::from_str(out.lines().next().unwrap_or("")).expect("one error line");
    assert_eq!(reply["result"], "error", "{out}");
    let message = reply["message"].as_str().unwrap_or("");
    assert!(
        message.contains("refused") && message.contains("65534"),
        "{message}"
    );
    assert!(
        !env.service.broker().pause_state().paused,
        "nobody's request was carried out"
    );
    // Our own uid is still served (through a private directory again: the client checks).
    let dir = env.socket.parent().expect("dir");
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    assert!(matches!(
        env.ask(&Request::Status).await,
        Response::Ok(Reply::Status(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_uid_is_refused_on_a_query_listener() {
    let mut env = start().await;
    let port = env.port().to_string();
    let query = write_query("1", &env.outside.join("theirs.txt"));
    let out = as_nobody(CLIENT, &[&port, &query]).await;
    assert!(
        out == "EOF\n" || out == "RESET\n",
        "nobody's connection was not closed without an answer: {out:?}"
    );
    assert!(env.service.broker().pending().is_empty());

    // Our own uid's run on the same listener is served: its query becomes the first prompt.
    let mut run = Run::connect(env.port(), BOUND).await;
    run.send(&write_query("2", &env.outside.join("ours.txt")))
        .await;
    let prompt = env.next_prompt().await;
    assert_eq!(
        prompt.query.id.raw(),
        "\"2\"",
        "nobody's query became a prompt"
    );
    env.service
        .broker()
        .answer(prompt.id, &AnswerRequest::once())
        .expect("answer");
    assert_eq!(
        run.answer().await,
        serde_json::json!({"query_id": "2", "action": "allow"})
    );
    // And a project write the policy allows is answered at once, as always.
    let mut auto = Run::connect(env.port(), BOUND).await;
    auto.send(&write_query("3", &env.project.join("ok.txt")))
        .await;
    assert_eq!(auto.answer().await["action"], "allow");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefer_sets_where_prompts_go_and_saves_it() {
    use landstrip_tray_core::serving::service::PromptsGo;
    let env = start().await;
    let Reply::Projects(list) = env.ok(Request::Projects).await else {
        panic!("not a projects reply")
    };
    assert_eq!(list[0].prompts, PromptsGo::Here, "the default");
    let Reply::Project(info) = env
        .ok(Request::Prefer {
            dir: env.project.clone(),
            prompts: PromptsGo::Terminal,
        })
        .await
    else {
        panic!("not a project reply")
    };
    assert_eq!(info.prompts, PromptsGo::Terminal);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&env.settings).expect("settings"))
            .expect("json");
    assert_eq!(
        saved["projectPrompts"][env.project.display().to_string()],
        "terminal",
        "{saved}"
    );
    let Reply::Projects(list) = env.ok(Request::Projects).await else {
        panic!("not a projects reply")
    };
    assert_eq!(list[0].prompts, PromptsGo::Terminal);
    let message = env
        .error(Request::Prefer {
            dir: env.outside.clone(),
            prompts: PromptsGo::Here,
        })
        .await;
    assert!(message.contains("not served"), "{message}");
}
