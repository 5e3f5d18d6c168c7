//! The real opencode 1.18.33 CLI set up in an [`AppWorld`] as a new user would, for the
//! opencode suites (`tests/tests/opencode_tui.rs`, `tests/tests/opencode_run.rs`): the real
//! opencode-landstrip 0.19.1 plugin installed by opencode's own installer
//! (`opencode plugin opencode-landstrip@0.19.1`), with the real landstrip 0.19.2 it bundles.
//! The model is the one part that cannot be real here: [`Model`], a scripted
//! OpenAI-compatible server on 127.0.0.1 that answers a prompt with a `bash` tool call
//! writing outside the policy, then with a final text.
//!
//! Everything comes from `scripts/setup.sh --test` (`.tools/opencode`, `.tools/plugin`);
//! opencode reaches nothing but 127.0.0.1: its plugin package comes from its cache (filled
//! from `.tools/plugin`), its config directories' dependency from `.tools/opencode/config`
//! with the lockfile opencode itself writes, and autoupdate, sharing and the model-list
//! fetch are switched off.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value as Json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::Command;
use tokio::time::Instant;

use crate::real_app::{path_str, AppWorld, RunningApp};
use crate::tools_dir;

/// opencode's start (config, plugins, a first request) takes about 7 s here; the bound is
/// generous for a loaded CI machine.
pub const START: Duration = Duration::from_secs(90);

/// Any other step (a prompt reaching the app, an answer reaching opencode, an exit).
pub const STEP: Duration = Duration::from_secs(30);

/// What the scripted model's tool call writes.
pub const HELD_TEXT: &str = "held by landstrip";

/// The final text the scripted model answers after the tool ran.
pub const DONE_TEXT: &str = "The file is written.";

/// Where `scripts/setup.sh --test` installs opencode (`$LANDSTRIP_TRAY_TOOLS/opencode`).
pub fn opencode_dir() -> PathBuf {
    tools_dir().join("opencode")
}

/// The opencode binary (npm `opencode-linux-x64`).
pub fn opencode_bin() -> PathBuf {
    let bin = opencode_dir().join("node_modules/opencode-linux-x64/bin/opencode");
    assert!(
        bin.is_file(),
        "{} is missing: run scripts/setup.sh --test (it installs opencode 1.18.33 from the npm registry)",
        bin.display()
    );
    bin
}

/// The scripted OpenAI-compatible chat-completions server (opencode always streams):
/// without tools (opencode's title request) a title; with tools, a `bash` call writing
/// `<dir>/<name>.txt` for the `FILE:<name>` the prompt names, unless the last message is
/// that call's result, then [`DONE_TEXT`]. It keeps every request it received.
pub struct Model {
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// How many requests it answered.
    pub requests: Arc<AtomicU32>,
    received: Arc<Mutex<Vec<Json>>>,
    arrived: Arc<tokio::sync::Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl Model {
    /// Listens on 127.0.0.1; the tool calls write into `dir`.
    pub async fn start(dir: PathBuf) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind model");
        let port = listener.local_addr().expect("addr").port();
        let requests = Arc::new(AtomicU32::new(0));
        let received = Arc::new(Mutex::new(Vec::new()));
        let arrived = Arc::new(tokio::sync::Notify::new());
        let (counter, kept, told) = (requests.clone(), received.clone(), arrived.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (dir, counter, kept, told) =
                    (dir.clone(), counter.clone(), kept.clone(), told.clone());
                tokio::spawn(async move {
                    let _ = serve_one(stream, &dir, &counter, &kept, &told).await;
                });
            }
        });
        Self {
            port,
            requests,
            received,
            arrived,
            task,
        }
    }

    /// Waits (bounded by `within`) until a request whose messages name `FILE:<name>` and
    /// that offers tools (the one answered with the tool call) has arrived.
    pub async fn until_asked(&self, name: &str, within: Duration) -> bool {
        let marker = format!("FILE:{name}");
        let asked = || {
            self.kept().iter().any(|request| {
                request["tools"].as_array().is_some_and(|t| !t.is_empty())
                    && request["messages"].to_string().contains(&marker)
            })
        };
        tokio::time::timeout(within, async {
            loop {
                let arrived = self.arrived.notified();
                if asked() {
                    return;
                }
                arrived.await;
            }
        })
        .await
        .is_ok()
    }

    fn kept(&self) -> Vec<Json> {
        self.received
            .lock()
            .map_or_else(|e| e.into_inner().clone(), |r| r.clone())
    }

    /// The text of the tool result opencode sent back for the prompt naming
    /// `FILE:<name>`: the last message of the request that carried it.
    pub fn tool_result(&self, name: &str) -> Option<String> {
        let marker = format!("FILE:{name}");
        let received = self
            .received
            .lock()
            .map_or_else(|e| e.into_inner().clone(), |r| r.clone());
        received.iter().find_map(|request| {
            let messages = request["messages"].as_array()?;
            let last = messages.last()?;
            let asks = messages.iter().any(|m| m.to_string().contains(&marker));
            (asks && last["role"] == "tool").then(|| text_of(&last["content"]))
        })
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A message's content as text: a string, or the text parts of a list.
fn text_of(content: &Json) -> String {
    match content {
        Json::String(text) => text.clone(),
        Json::Array(parts) => parts
            .iter()
            .map(|part| {
                part["text"]
                    .as_str()
                    .map_or_else(|| part.to_string(), str::to_owned)
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

/// The file a prompt's `FILE:<name>` names, in `dir`.
pub fn named_file(dir: &Path, prompt: &str) -> PathBuf {
    let name: String = prompt
        .split("FILE:")
        .nth(1)
        .unwrap_or("unnamed")
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    dir.join(format!("{name}.txt"))
}

async fn serve_one(
    stream: TcpStream,
    dir: &Path,
    counter: &AtomicU32,
    kept: &Mutex<Vec<Json>>,
    told: &tokio::sync::Notify,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length.min(16 << 20)];
    reader.read_exact(&mut body).await?;
    let n = counter.fetch_add(1, Ordering::SeqCst);
    let request: Json = serde_json::from_slice(&body).unwrap_or(Json::Null);
    if let Ok(mut kept) = kept.lock() {
        kept.push(request.clone());
    }
    told.notify_waiters();
    let has_tools = request["tools"].as_array().is_some_and(|t| !t.is_empty());
    let last_role = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["role"].as_str())
        .unwrap_or("")
        .to_owned();
    let chunk = |delta: Json, finish: Option<&str>| {
        let data = json!({
            "id": format!("chatcmpl-{n}"), "object": "chat.completion.chunk", "created": 1,
            "model": "scripted",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        format!("data: {data}\n\n")
    };
    let mut events = String::new();
    if has_tools && last_role != "tool" {
        let target = named_file(dir, &String::from_utf8_lossy(&body));
        let command = format!("echo '{HELD_TEXT}' > '{}'", target.display());
        let arguments = json!({"command": command, "description": "Write outside the project"});
        events += &chunk(
            json!({"role": "assistant", "tool_calls": [{
                "index": 0, "id": format!("call_{n}"), "type": "function",
                "function": {"name": "bash", "arguments": arguments.to_string()},
            }]}),
            None,
        );
        events += &chunk(json!({}), Some("tool_calls"));
    } else {
        let text = if has_tools {
            DONE_TEXT
        } else {
            "Writing a file"
        };
        events += &chunk(json!({"role": "assistant", "content": text}), None);
        events += &chunk(json!({}), Some("stop"));
    }
    events += "data: [DONE]\n\n";
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
    let mut stream = reader.into_inner();
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(events.as_bytes()).await?;
    stream.shutdown().await
}

/// The world's project set up as a new user would: the plugin installed by opencode's
/// installer and a custom provider (the scripted model) in the project's opencode.json.
pub struct Opencode<'w> {
    /// The world opencode runs in (its home, XDG directories and project).
    pub world: &'w AppWorld,
}

impl<'w> Opencode<'w> {
    /// Installs the plugin and points opencode at the model on `model_port`.
    pub async fn install(world: &'w AppWorld, model_port: u16) -> Self {
        let this = Self { world };
        // The installer takes the package from opencode's cache when it is there (it is
        // what it downloaded before), so nothing is fetched.
        let cached = world
            .base
            .join("cache/opencode/packages/opencode-landstrip@0.19.1");
        std::fs::create_dir_all(&cached).expect("mkdir plugin cache");
        copy_tree(
            &tools_dir().join("plugin/node_modules"),
            &cached.join("node_modules"),
        )
        .await;
        let installed = tokio::time::timeout(
            STEP,
            this.command()
                .args(["plugin", "opencode-landstrip@0.19.1"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .output(),
        )
        .await
        .expect("opencode plugin did not finish in time")
        .expect("run opencode plugin");
        let said = String::from_utf8_lossy(&installed.stdout).into_owned()
            + &String::from_utf8_lossy(&installed.stderr);
        assert!(installed.status.success(), "opencode plugin: {said}");
        let dot = world.project.join(".opencode");
        for half in ["opencode.json", "tui.json"] {
            let config = std::fs::read_to_string(dot.join(half)).unwrap_or_else(|e| {
                panic!("the installer wrote no .opencode/{half} ({e}): {said}")
            });
            assert!(
                config.contains("opencode-landstrip@0.19.1"),
                "{half}: {config}"
            );
        }
        // opencode installs @opencode-ai/plugin into every config directory that lists
        // plugins; with its lockfile and node_modules there it has nothing to fetch.
        for dir in [dot.clone(), world.base.join("config/opencode")] {
            std::fs::create_dir_all(&dir).expect("mkdir config dir");
            let deps = opencode_dir().join("config");
            for file in ["package.json", "package-lock.json"] {
                std::fs::copy(deps.join(file), dir.join(file)).expect("copy the config deps");
            }
            copy_tree(&deps.join("node_modules"), &dir.join("node_modules")).await;
        }
        let config = json!({
            "$schema": "https://opencode.ai/config.json",
            "model": "scripted/model",
            "permission": {"bash": "allow"},
            "provider": {"scripted": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Scripted",
                "options": {"baseURL": format!("http://127.0.0.1:{model_port}/v1"), "apiKey": "none"},
                "models": {"model": {"name": "Scripted model", "tool_call": true}},
            }},
        });
        std::fs::write(world.project.join("opencode.json"), config.to_string())
            .expect("write opencode.json");
        this
    }

    /// opencode with this world's environment, in the project (killed when dropped).
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(opencode_bin());
        self.env(&mut cmd);
        cmd.current_dir(&self.world.project).kill_on_drop(true);
        cmd
    }

    /// A headless `opencode run PROMPT`, its output piped.
    pub fn run(&self, prompt: &str) -> tokio::process::Child {
        self.command()
            .args(["run", prompt])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start opencode run")
    }

    /// The world's directories as opencode's, and nothing fetched from the network.
    pub fn env(&self, cmd: &mut Command) {
        let base = &self.world.base;
        cmd.env("HOME", &self.world.home)
            .env("XDG_CONFIG_HOME", base.join("config"))
            .env("XDG_DATA_HOME", base.join("data"))
            .env("XDG_CACHE_HOME", base.join("cache"))
            .env("XDG_STATE_HOME", base.join("state"))
            .env("XDG_RUNTIME_DIR", &self.world.runtime)
            .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
            .env("OPENCODE_DISABLE_SHARE", "1")
            .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
            .env("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1")
            // opencode takes its directory from $PWD.
            .env("PWD", &self.world.project)
            .env_remove("TMUX");
    }
}

/// `cp -a FROM TO`, bounded.
pub async fn copy_tree(from: &Path, to: &Path) {
    let status = tokio::time::timeout(
        STEP,
        Command::new("cp").arg("-a").arg(from).arg(to).status(),
    )
    .await
    .expect("cp did not finish")
    .expect("run cp");
    assert!(
        status.success(),
        "cp -a {} {}",
        from.display(),
        to.display()
    );
}

/// Waits (bounded: `ctl pending --wait` returns once something is pending) until a write
/// of `target` is pending in the app; the pending item (`id`, `path`, `session`…).
pub async fn pending_write(world: &AppWorld, app: &RunningApp, target: &Path) -> Json {
    let deadline = Instant::now() + STEP;
    loop {
        let listed = world.ctl_ok(&["pending", "--wait", "--json"]).await;
        let pending: Json = serde_json::from_str(&listed).expect("ctl pending --json");
        let found = pending
            .as_array()
            .and_then(|p| p.iter().find(|p| p["path"] == path_str(target)));
        if let Some(item) = found {
            return item.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no pending write of {} within {STEP:?}: {pending}\n{}",
            target.display(),
            app.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A pending item's id, as `ctl answer` takes it.
pub fn prompt_id(item: &Json) -> String {
    item["id"].to_string().trim_matches('"').to_owned()
}
