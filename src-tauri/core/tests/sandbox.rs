//! The control socket against a client inside the real landstrip (a Python client run with
//! `landstrip run`, its policy allowing every Unix socket so the connection is made): what
//! would change anything is refused and the prompt stays pending, what only looks is
//! served, and the same answer from outside (this test process) goes through. Both
//! releases, because they differ in who connects: inside 0.18.27 the program itself (seen
//! by its seccomp/no_new_privs markers), inside 0.19.2 landstrip's supervisor on its behalf
//! (seen by its seccomp notification descriptor). The held query arrives over a real TCP
//! connection to the project's listener, as in `control.rs`; nothing is mocked.

mod common;

use common::{write_query, Run};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use landstrip_tray_core::decision::answer::AnswerRequest;
use landstrip_tray_core::decision::broker::PendingPrompt;
use landstrip_tray_core::surfaces::control::{Client, Reply, Request, Response};
use landstrip_tray_core::wire::protocol::Action;
use serde_json::Value;
use tokio::process::Command;

/// Bound on any single awaited event (not a sleep).
const BOUND: Duration = Duration::from_secs(30);

/// The refusal's fixed parts.
const REFUSED: &str = "refused: this request comes from inside a sandbox (pid ";
const FROM_OUTSIDE: &str = "; answer it from outside the sandbox";

/// A control client for inside the sandbox. `direct SOCKET LINE…` sends each request line
/// on one connection; `orphan SOCKET LINE…` does so from a grandchild whose parent has
/// exited (so it was reparented away from its ancestry), once that parent is reaped. Prints
/// one JSON object: the asking process's pid and ppid and the reply lines.
const CLIENT: &str = r#"
import json, os, socket, sys

def ask(path, lines):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    f = s.makefile("rwb")
    replies = []
    for line in lines:
        f.write(line.encode() + b"\n")
        f.flush()
        replies.append(json.loads(f.readline()))
    return {"pid": os.getpid(), "ppid": os.getppid(), "replies": replies}

mode, path, lines = sys.argv[1], sys.argv[2], sys.argv[3:]
if mode == "direct":
    print(json.dumps(ask(path, lines)))
    sys.exit(0)
go_r, go_w = os.pipe()
out_r, out_w = os.pipe()
middle = os.fork()
if middle == 0:
    if os.fork() == 0:
        os.close(go_w); os.close(out_r)
        os.read(go_r, 1)
        os.write(out_w, json.dumps(ask(path, lines)).encode())
        os._exit(0)
    os._exit(0)
os.close(go_r); os.close(out_w)
os.waitpid(middle, 0)
os.write(go_w, b"g")
data = b""
while chunk := os.read(out_r, 65536):
    data += chunk
result = json.loads(data)
result["middle"] = middle
print(json.dumps(result))
"#;

type Env = common::Served;

async fn start() -> Env {
    common::Setup {
        serve_project: true,
        ..Default::default()
    }
    .start()
    .await
}

impl Env {
    /// A write outside the project (it asks) over a new TCP connection to the listener.
    async fn held_write(&mut self, query_id: &str) -> (Run, PendingPrompt) {
        let mut run = Run::connect(self.port_of(&self.project), BOUND).await;
        run.send(&write_query(query_id, &self.outside.join("held.txt")))
            .await;
        let prompt = self.next_prompt().await;
        (run, prompt)
    }

    /// Runs [`CLIENT`] in `mode` inside the real landstrip `version` with `requests`; its
    /// output.
    async fn inside(&self, version: &str, mode: &str, requests: &[Request]) -> Value {
        let policy = self.base.join("policy.json");
        std::fs::write(
            &policy,
            r#"{"network": {"allowAllUnixSockets": true}}"#.as_bytes(),
        )
        .expect("write the policy");
        let mut cmd = Command::new(landstrip(version));
        cmd.arg("run")
            .arg("-p")
            .arg(&policy)
            .args(["--", "/usr/bin/python3", "-c", CLIENT, mode])
            .arg(&self.socket);
        for request in requests {
            cmd.arg(serde_json::to_string(request).expect("request json"));
        }
        let output = within(
            "the sandboxed client",
            cmd.current_dir(&self.base)
                .stdin(Stdio::null())
                .kill_on_drop(true)
                .output(),
        )
        .await
        .expect("run landstrip");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "the sandboxed client failed ({}): {stdout}{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("client output {stdout:?}: {e}"))
    }

    /// One request from outside (this test process), on a fresh connection.
    async fn outside(&self, request: Request) -> Response {
        let mut client = within("connecting", Client::connect(&self.socket))
            .await
            .expect("connect to the control socket");
        within("the reply", client.request(&request))
            .await
            .expect("reply")
    }
}

/// The real landstrip `version`, as `scripts/setup.sh --test` fetched it.
fn landstrip(version: &str) -> PathBuf {
    let tools = std::env::var_os("LANDSTRIP_TRAY_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools"));
    let bin = tools.join("landstrip").join(version).join("landstrip");
    assert!(
        bin.is_file(),
        "{} is missing: run scripts/setup.sh --test (it fetches landstrip {version})",
        bin.display()
    );
    bin
}

async fn within<T>(what: &str, work: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, work)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {BOUND:?}"))
}

fn response(value: &Value) -> Response {
    serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("reply {value}: {e}"))
}

/// How the server tells who is inside.
#[derive(Clone, Copy, Debug)]
enum Seen {
    /// The program connected itself: its no_new_privs and seccomp markers.
    Markers,
    /// landstrip's supervisor connected for it (pid not the program's).
    Supervisor,
}

/// Asserts `reply` is the sandbox refusal naming the sign `seen`; for [`Seen::Markers`]
/// also that it names the program's own `pid`.
fn assert_refused(reply: &Value, pid: &Value, seen: Seen) {
    let Response::Error { message } = response(reply) else {
        panic!("expected a refusal, got {reply}");
    };
    assert!(
        message.starts_with(REFUSED) && message.ends_with(FROM_OUTSIDE),
        "{message}"
    );
    match seen {
        Seen::Markers => assert!(
            message.starts_with(&format!("{REFUSED}{pid}, it runs with no_new_privs and "))
                && message.contains("seccomp filter"),
            "{message}"
        ),
        Seen::Supervisor => assert!(
            message.contains(", it is landstrip's supervisor (it holds a seccomp notification"),
            "{message}"
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_inside_landstrip_0_19_may_look_but_not_answer() {
    may_look_but_not_answer("0.19.2", Seen::Supervisor).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_inside_landstrip_0_18_may_look_but_not_answer() {
    may_look_but_not_answer("0.18.27", Seen::Markers).await;
}

async fn may_look_but_not_answer(version: &str, seen: Seen) {
    let mut env = start().await;
    let (mut run, prompt) = env.held_write("7").await;
    let id = prompt.id;

    let out = env
        .inside(
            version,
            "direct",
            &[
                Request::Pending { wait: false },
                Request::Answer {
                    id,
                    answer: AnswerRequest::once(),
                },
                Request::Answer {
                    id,
                    answer: AnswerRequest::deny(),
                },
                Request::Pause { secs: None },
                Request::AddProject {
                    dir: env.outside.clone(),
                    persist: false,
                },
                Request::Status,
                Request::Projects,
            ],
        )
        .await;
    let replies = out["replies"].as_array().expect("replies");
    assert_eq!(replies.len(), 7, "{out}");
    let Response::Ok(Reply::Pending(items)) = response(&replies[0]) else {
        panic!("pending from inside: {}", replies[0]);
    };
    assert_eq!(
        items.iter().map(|i| i.id).collect::<Vec<_>>(),
        [id],
        "{items:?}"
    );
    for refused in &replies[1..5] {
        assert_refused(refused, &out["pid"], seen);
    }
    let Response::Ok(Reply::Status(status)) = response(&replies[5]) else {
        panic!("status from inside: {}", replies[5]);
    };
    assert_eq!((status.pending, status.pause.paused), (1, false));
    let Response::Ok(Reply::Projects(projects)) = response(&replies[6]) else {
        panic!("projects from inside: {}", replies[6]);
    };
    assert_eq!(projects.len(), 1, "the refused add_project added nothing");

    // Nothing was done: still pending, not paused, and the same answer from outside works.
    let pending: Vec<_> = env
        .service
        .broker()
        .pending()
        .iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(pending, [id]);
    assert!(!env.service.broker().pause_state().paused);
    let Response::Ok(Reply::Answered(answered)) = env
        .outside(Request::Answer {
            id,
            answer: AnswerRequest::once(),
        })
        .await
    else {
        panic!("the answer from outside was not served");
    };
    assert_eq!(answered.action, Action::Allow);
    // The first (and only) answer the run gets: a refused deny would have come first.
    assert_eq!(
        run.answer().await,
        serde_json::json!({"query_id": "7", "action": "allow"})
    );
}

/// landstrip 0.18.27, where the program connects itself (0.19.2 kills what outlives the
/// program, and connects in its supervisor anyway).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grandchild_reparented_away_from_its_ancestry_is_still_refused() {
    let mut env = start().await;
    let (mut run, prompt) = env.held_write("9").await;
    let out = env
        .inside(
            "0.18.27",
            "orphan",
            &[
                Request::Answer {
                    id: prompt.id,
                    answer: AnswerRequest::once(),
                },
                Request::Pending { wait: false },
            ],
        )
        .await;
    // Its parent exited and was reaped before it connected: it has a new parent.
    assert_ne!(out["ppid"], out["middle"], "{out}");
    let replies = out["replies"].as_array().expect("replies");
    assert_eq!(replies.len(), 2, "{out}");
    assert_refused(&replies[0], &out["pid"], Seen::Markers);
    assert!(
        matches!(response(&replies[1]), Response::Ok(Reply::Pending(ref items)) if items.len() == 1),
        "{}",
        replies[1]
    );
    let Response::Ok(Reply::Answered(_)) = env
        .outside(Request::Answer {
            id: prompt.id,
            answer: AnswerRequest::deny(),
        })
        .await
    else {
        panic!("the answer from outside was not served");
    };
    assert_eq!(
        run.answer().await,
        serde_json::json!({"query_id": "9", "action": "deny"})
    );
}
