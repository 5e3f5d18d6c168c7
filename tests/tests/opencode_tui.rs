//! The real opencode 1.18.33 TUI in tmux, with the real opencode-landstrip 0.19.1 plugin
//! installed by opencode's own installer (`opencode plugin opencode-landstrip@0.19.1`),
//! the real landstrip 0.19.2 it bundles, and the real app with a dbusmock notification
//! server. The model is the one part that cannot be real here: a scripted
//! OpenAI-compatible server on 127.0.0.1 (below) that answers the prompt with a `bash`
//! tool call writing outside the policy, then with a final text.
//!
//! With prompts "here" (the default) the TUI's discovery file is taken back by the app,
//! the held write is asked through the app (`ctl pending`, a notification) and let
//! through by `ctl answer … once`; quitting and starting opencode again changes nothing.
//! A headless `opencode run` beside the running TUI is asked through the app as well.
//! With "terminal" the TUI keeps the project while it runs and the app serves again once
//! it exits.
//!
//! Every wait is bounded; the pane and the app's log are printed when one fails.
//! Everything comes from `scripts/setup.sh --test` (`.tools/opencode`, `.tools/plugin`);
//! opencode reaches nothing but 127.0.0.1: its plugin package comes from its cache
//! (filled from `.tools/plugin`), its config directories' dependency from
//! `.tools/opencode/config` with the lockfile opencode itself writes.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use landstrip_tray_tests::notification_server::NotificationServer;
use landstrip_tray_tests::real_app::{path_str, AppWorld, RunningApp};
use landstrip_tray_tests::tools_dir;
use serde_json::{json, Value as Json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::Command;
use tokio::time::Instant;

/// opencode's start (config, plugins, the TUI drawn) takes about 7 s here; the bound is
/// generous for a loaded CI machine.
const TUI_READY: Duration = Duration::from_secs(90);

/// Any other step (a prompt reaching the app, an answer reaching the pane, an exit).
const STEP: Duration = Duration::from_secs(30);

/// What the scripted model's tool call writes.
const HELD_TEXT: &str = "held by landstrip";

/// The final text the scripted model answers after the tool ran.
const DONE_TEXT: &str = "The file is written.";

fn opencode_dir() -> PathBuf {
    tools_dir().join("opencode")
}

fn opencode_bin() -> PathBuf {
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
/// that call's result, then [`DONE_TEXT`].
struct Model {
    port: u16,
    requests: Arc<AtomicU32>,
    task: tokio::task::JoinHandle<()>,
}

impl Model {
    async fn start(dir: PathBuf) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind model");
        let port = listener.local_addr().expect("addr").port();
        let requests = Arc::new(AtomicU32::new(0));
        let counter = requests.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (dir, counter) = (dir.clone(), counter.clone());
                tokio::spawn(async move {
                    let _ = serve_one(stream, &dir, &counter).await;
                });
            }
        });
        Self {
            port,
            requests,
            task,
        }
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The file a prompt's `FILE:<name>` names, in `dir`.
fn named_file(dir: &Path, prompt: &str) -> PathBuf {
    let name: String = prompt
        .split("FILE:")
        .nth(1)
        .unwrap_or("unnamed")
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    dir.join(format!("{name}.txt"))
}

async fn serve_one(stream: TcpStream, dir: &Path, counter: &AtomicU32) -> std::io::Result<()> {
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

/// The project set up as a new user would: the plugin installed by opencode's installer
/// and a custom provider (the scripted model) in the project's opencode.json.
struct Opencode<'w> {
    world: &'w AppWorld,
    tmux_socket: PathBuf,
    session: u32,
}

impl<'w> Opencode<'w> {
    async fn install(world: &'w AppWorld, model_port: u16) -> Self {
        let this = Self {
            world,
            tmux_socket: world.base.join("tmux.sock"),
            session: 0,
        };
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

    /// opencode with this world's environment, in the project.
    fn command(&self) -> Command {
        let mut cmd = Command::new(opencode_bin());
        self.env(&mut cmd);
        cmd.current_dir(&self.world.project).kill_on_drop(true);
        cmd
    }

    fn env(&self, cmd: &mut Command) {
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
            .env("PWD", &self.world.project)
            .env_remove("TMUX");
    }

    fn tmux(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.arg("-S").arg(&self.tmux_socket).kill_on_drop(true);
        self.env(&mut cmd);
        cmd
    }

    async fn tmux_out(&self, args: &[&str]) -> String {
        let out = tokio::time::timeout(STEP, self.tmux().args(args).output())
            .await
            .unwrap_or_else(|_| panic!("tmux {args:?} did not return"))
            .expect("run tmux");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Starts the TUI in a new tmux session; returns opencode's pid once it is ready
    /// ("Ask anything" and the plugin's badge "sandbox · …" on screen).
    async fn start_tui(&mut self, app: &RunningApp) -> u32 {
        self.session += 1;
        let name = self.name();
        let bin = opencode_bin();
        let project = path_str(&self.world.project).to_owned();
        self.tmux_out(&[
            "new-session",
            "-d",
            "-s",
            &name,
            "-x",
            "200",
            "-y",
            "50",
            "-c",
            &project,
            // exec: the pane's pid is opencode's.
            &format!("exec '{}'", bin.display()),
        ])
        .await;
        self.tmux_out(&["set-option", "-t", &name, "remain-on-exit", "on"])
            .await;
        let pid: u32 = self
            .tmux_out(&["display-message", "-p", "-t", &name, "#{pane_pid}"])
            .await
            .trim()
            .parse()
            .expect("pane pid");
        self.until(
            app,
            TUI_READY,
            "the TUI ready (Ask anything, sandbox badge)",
            |pane| pane.contains("Ask anything") && pane.contains("sandbox ·"),
        )
        .await;
        pid
    }

    fn name(&self) -> String {
        format!("oc{}", self.session)
    }

    async fn pane(&self) -> String {
        self.tmux_out(&["capture-pane", "-p", "-t", &self.name()])
            .await
    }

    /// Polls the pane (tmux has no change event) until `want` holds; fails with the pane
    /// and the app's log.
    async fn until(
        &self,
        app: &RunningApp,
        within: Duration,
        what: &str,
        want: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + within;
        loop {
            let pane = self.pane().await;
            if want(&pane) {
                return pane;
            }
            if Instant::now() > deadline {
                panic!(
                    "not seen within {within:?}: {what}\n--- the pane ---\n{pane}\n--- the app's log ---\n{}",
                    app.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn type_prompt(&self, text: &str) {
        self.tmux_out(&["send-keys", "-t", &self.name(), "-l", text])
            .await;
        self.tmux_out(&["send-keys", "-t", &self.name(), "Enter"])
            .await;
    }

    /// Quits the TUI as a user does (ctrl+c) and waits for opencode to exit. After a
    /// session with a tool call, opencode 1.18.33 sometimes lingers after its TUI closed
    /// (the pane already says "Continue  opencode -s …"); it is then given a few seconds
    /// and sent SIGTERM, as a user would close the terminal.
    async fn quit_tui(&self, app: &RunningApp, pid: u32) {
        let alive = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| {
                    let rest = &stat[stat.rfind(')')? + 1..];
                    rest.split_whitespace().next().map(|state| state != "Z")
                })
                .unwrap_or(false)
        };
        let deadline = Instant::now() + STEP;
        let mut closed_at: Option<Instant> = None;
        let mut last_key: Option<Instant> = None;
        while alive() {
            let pane = self.pane().await;
            if pane.contains("Continue  opencode -s") || pane.contains("Continue opencode -s") {
                let since = *closed_at.get_or_insert_with(Instant::now);
                if since.elapsed() > Duration::from_secs(5) {
                    eprintln!("opencode (pid {pid}) lingers after its TUI closed: SIGTERM");
                    let _ = Command::new("kill").arg(pid.to_string()).status().await;
                    closed_at = Some(Instant::now() + Duration::from_secs(3600));
                }
            } else if last_key.is_none_or(|at| at.elapsed() > Duration::from_secs(2)) {
                // ctrl+c clears the input first, then quits.
                self.tmux_out(&["send-keys", "-t", &self.name(), "C-c"])
                    .await;
                last_key = Some(Instant::now());
            }
            if Instant::now() > deadline {
                panic!(
                    "opencode (pid {pid}) did not quit within {STEP:?}\n--- the pane ---\n{pane}\n--- the app's log ---\n{}",
                    app.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Opencode<'_> {
    fn drop(&mut self) {
        // The tmux server (and any opencode still in it) goes with the test.
        let _ = std::process::Command::new("tmux")
            .arg("-S")
            .arg(&self.tmux_socket)
            .arg("kill-server")
            .stderr(Stdio::null())
            .status();
    }
}

async fn copy_tree(from: &Path, to: &Path) {
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
/// of `target` is pending in the app; its id.
async fn pending_write(world: &AppWorld, app: &RunningApp, target: &Path) -> String {
    let deadline = Instant::now() + STEP;
    loop {
        let listed = world.ctl_ok(&["pending", "--wait", "--json"]).await;
        let pending: Json = serde_json::from_str(&listed).expect("ctl pending --json");
        let found = pending
            .as_array()
            .and_then(|p| p.iter().find(|p| p["path"] == path_str(target)));
        if let Some(item) = found {
            return item["id"].to_string().trim_matches('"').to_owned();
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

/// Waits (bounded, through inotify) until the discovery file names `pid`.
async fn record_becomes(world: &AppWorld, app: &mut RunningApp, pid: u32, what: &str) {
    let mut watch = world.watch();
    watch
        .until(
            app,
            STEP,
            &format!("the discovery file naming {what} (pid {pid})"),
            || (world.record(&world.project).map(|r| r.pid) == Some(pid)).then_some(()),
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn desktop_prompts_while_the_opencode_tui_runs() {
    let started = Instant::now();
    let world = AppWorld::new();
    let target = named_file(&world.outside, "FILE:first");
    let model = Model::start(world.outside.clone()).await;
    let mut server = NotificationServer::start(&world.base.join("bus"), "body actions sound").await;
    let mut opencode = Opencode::install(&world, model.port).await;

    let mut app = world.start_with(&[&world.project], &server.app_env());
    app.serving(&world, &world.project).await;
    app.wait_for_control().await;
    let app_pid = app.pid;
    let projects = world.ctl_ok(&["projects"]).await;
    assert!(
        projects.contains("PROMPTS") && projects.contains("here"),
        "{projects}"
    );

    // "here": the TUI publishes its file at start; the app takes it back and says so.
    let tui = opencode.start_tui(&app).await;
    app.wait_for_log("published the discovery file; prompts stay here")
        .await;
    record_becomes(&world, &mut app, app_pid, "the app").await;
    let told = server
        .next_notify(
            &app,
            &format!("Prompts stay here: {}", path_str(&world.project)),
        )
        .await;
    assert_eq!(
        told.body,
        format!("opencode's terminal prompts, pid {tui} — prompts stay here; change in Settings")
    );
    let activity = world
        .activity_entry("the take-back", |e| e["kind"] == "presenter")
        .await;
    assert_eq!(activity["operation"], "take_back", "{activity}");
    assert_eq!(activity["pid"], tui, "{activity}");

    // A prompt: the model's bash call writes outside the policy; the write is held and
    // asked through the app.
    opencode
        .type_prompt("Write FILE:first outside the project")
        .await;
    let held = pending_write(&world, &app, &target).await;
    let prompt = server.next_notify(&app, "Sandbox write blocked").await;
    assert!(
        prompt
            .body
            .contains(&format!("Path: {}", path_str(&target))),
        "{}",
        prompt.body
    );
    assert!(!target.exists(), "written before anyone answered");
    world.ctl_ok(&["answer", &held, "once"]).await;
    opencode
        .until(
            &app,
            STEP,
            "the model's final text after the tool ran",
            |pane| pane.contains(DONE_TEXT),
        )
        .await;
    assert_eq!(
        std::fs::read_to_string(&target)
            .expect("the write went through")
            .trim(),
        HELD_TEXT
    );

    // Quitting opencode: the plugin deletes the file (ours) and the app puts it back.
    opencode.quit_tui(&app, tui).await;
    record_becomes(&world, &mut app, app_pid, "the app again").await;
    // Starting it again changes nothing: taken back again, told again (a new start).
    let again = opencode.start_tui(&app).await;
    assert_ne!(again, tui);
    app.wait_for_log_count("published the discovery file; prompts stay here", 2)
        .await;
    record_becomes(&world, &mut app, app_pid, "the app").await;

    // A headless `opencode run` beside the running TUI is asked through the app too.
    let second = named_file(&world.outside, "FILE:second");
    let run = opencode
        .command()
        .args(["run", "Write FILE:second outside the project"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start opencode run");
    let held = pending_write(&world, &app, &second).await;
    world.ctl_ok(&["answer", &held, "once"]).await;
    let ran = tokio::time::timeout(TUI_READY, run.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("opencode run did not finish\n{}", app.log()))
        .expect("opencode run");
    let said =
        String::from_utf8_lossy(&ran.stdout).into_owned() + &String::from_utf8_lossy(&ran.stderr);
    assert!(ran.status.success(), "opencode run: {said}");
    assert!(said.contains(DONE_TEXT), "opencode run: {said}");
    assert_eq!(
        std::fs::read_to_string(&second)
            .expect("the run's write went through")
            .trim(),
        HELD_TEXT
    );
    opencode.quit_tui(&app, again).await;
    record_becomes(&world, &mut app, app_pid, "the app again").await;

    // "terminal": the TUI keeps the project while it runs; the app serves after it exits.
    let said = world
        .ctl_ok(&["prefer", path_str(&world.project), "terminal"])
        .await;
    assert!(said.contains("terminal"), "{said}");
    let settings = std::fs::read_to_string(world.settings_file()).expect("settings");
    assert!(settings.contains("\"terminal\""), "{settings}");
    let third = opencode.start_tui(&app).await;
    record_becomes(&world, &mut app, third, "opencode").await;
    let projects = world.ctl_ok(&["projects"]).await;
    assert!(
        projects.contains(&format!("pid {third}")) && projects.contains("terminal"),
        "{projects}"
    );
    assert_eq!(
        app.log()
            .matches("published the discovery file; prompts stay here")
            .count(),
        2,
        "taken back with prompts going to the terminal:\n{}",
        app.log()
    );
    opencode.quit_tui(&app, third).await;
    record_becomes(&world, &mut app, app_pid, "the app after opencode exited").await;

    assert!(
        model.requests.load(Ordering::SeqCst) >= 2,
        "the model was asked"
    );
    app.quit().await;
    eprintln!("the scenario took {:?}", started.elapsed());
}
