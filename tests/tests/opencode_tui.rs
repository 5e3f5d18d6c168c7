//! The real opencode 1.18.33 TUI in tmux, with the real opencode-landstrip 0.19.1 plugin
//! installed by opencode's own installer (`opencode plugin opencode-landstrip@0.19.1`),
//! the real landstrip 0.19.2 it bundles, and the real app with a dbusmock notification
//! server. The model is the one part that cannot be real here: a scripted
//! OpenAI-compatible server on 127.0.0.1 (`landstrip_tray_tests::opencode::Model`) that
//! answers the prompt with a `bash` tool call writing outside the policy, then with a final
//! text.
//!
//! With prompts "here" (the default) the TUI's discovery file is taken back by the app,
//! the held write is asked through the app (`ctl pending`, a notification) and let
//! through by `ctl answer … once`; quitting and starting opencode again changes nothing.
//! A headless `opencode run` beside the running TUI is asked through the app as well.
//! With "terminal" the TUI keeps the project while it runs and the app serves again once
//! it exits. `ctl take-over` makes the app the presenter of a project the running TUI
//! holds: the next held write is asked through the app and answered with `ctl answer`.
//!
//! Every wait is bounded; the pane and the app's log are printed when one fails. The set-up
//! (everything from `scripts/setup.sh --test`, nothing fetched) is
//! `landstrip_tray_tests::opencode`, shared with `opencode_run.rs`.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::Duration;

use landstrip_tray_tests::notification_server::NotificationServer;
use landstrip_tray_tests::opencode::{
    named_file, opencode_bin, pending_write, prompt_id, Model, Opencode, DONE_TEXT, HELD_TEXT,
    START as TUI_READY, STEP,
};
use landstrip_tray_tests::real_app::{path_str, AppWorld, RunningApp};
use tokio::process::Command;
use tokio::time::Instant;

/// opencode's TUI in a private tmux server.
struct Tui<'w> {
    opencode: Opencode<'w>,
    tmux_socket: PathBuf,
    session: u32,
}

impl<'w> Tui<'w> {
    async fn install(world: &'w AppWorld, model_port: u16) -> Self {
        Self {
            opencode: Opencode::install(world, model_port).await,
            tmux_socket: world.base.join("tmux.sock"),
            session: 0,
        }
    }

    fn tmux(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.arg("-S").arg(&self.tmux_socket).kill_on_drop(true);
        self.opencode.env(&mut cmd);
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
        let project = path_str(&self.opencode.world.project).to_owned();
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

impl Drop for Tui<'_> {
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
    let mut opencode = Tui::install(&world, model.port).await;

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
    let held = prompt_id(&pending_write(&world, &app, &target).await);
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
        .opencode
        .run("Write FILE:second outside the project");
    let held = prompt_id(&pending_write(&world, &app, &second).await);
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

/// The project's entry in `ctl projects --json`.
async fn project_info(world: &AppWorld) -> serde_json::Value {
    let listed = world.ctl_ok(&["projects", "--json"]).await;
    let list: serde_json::Value = serde_json::from_str(&listed).expect("ctl projects --json");
    list.as_array()
        .and_then(|l| l.iter().find(|p| p["dir"] == path_str(&world.project)))
        .cloned()
        .unwrap_or_else(|| panic!("the project is not listed: {listed}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_take_over_makes_the_app_present_a_project_the_opencode_tui_holds() {
    let started = Instant::now();
    let world = AppWorld::new();
    let target = named_file(&world.outside, "FILE:taken");
    let model = Model::start(world.outside.clone()).await;
    let server = NotificationServer::start(&world.base.join("bus"), "body actions sound").await;
    let mut opencode = Tui::install(&world, model.port).await;

    let mut app = world.start_with(&[&world.project], &server.app_env());
    let app_port = app.serving(&world, &world.project).await;
    app.wait_for_control().await;
    let app_pid = app.pid;
    let dir = path_str(&world.project).to_owned();
    world.ctl_ok(&["prefer", &dir, "terminal"]).await;

    // The TUI presents the project: its plugin's discovery file, and the app says so.
    let tui = opencode.start_tui(&app).await;
    record_becomes(&world, &mut app, tui, "opencode").await;
    let deadline = Instant::now() + STEP;
    loop {
        let info = project_info(&world).await;
        if info["status"]["state"] == "conflict" && info["status"]["other_pid"] == tui {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the app does not report the TUI (pid {tui}) holding the project within {STEP:?}: {info}\n{}",
            app.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Taken over: when ctl returns, the file names the app's port, and the project is served.
    let took = world.ctl_ok(&["take-over", &dir]).await;
    let record = world.record(&world.project);
    assert_eq!(
        record.map(|r| (r.pid, r.port)),
        Some((app_pid, app_port)),
        "after `ctl take-over` ({took:?}) the discovery file must name the app (pid {app_pid}, \
         port {app_port}), not the TUI (pid {tui}); the app's log:\n{}",
        app.log()
    );
    let status: serde_json::Value =
        serde_json::from_str(&world.ctl_ok(&["status", "--json"]).await).expect("status --json");
    assert_eq!(status["conflicts"], 0, "{status}");
    let info = project_info(&world).await;
    assert_eq!(info["status"]["state"], "serving", "{info}");
    assert_eq!(info["port"], app_port, "{info}");

    // A prompt in the TUI: its bash call's write is held by the app, not by the TUI.
    opencode
        .type_prompt("Write FILE:taken outside the project")
        .await;
    let held = pending_write(&world, &app, &target).await;
    assert!(!target.exists(), "written before anyone answered");
    let pane = opencode.pane().await;
    assert!(
        !pane.contains("Allow once") && !pane.contains("Allow for session"),
        "the TUI asks about the write too:\n{pane}"
    );
    world.ctl_ok(&["answer", &prompt_id(&held), "once"]).await;
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
    let entry = world
        .activity_entry("the answered write", |e| {
            e["subject"] == path_str(&target) && e["kind"] == "filesystem"
        })
        .await;
    assert_eq!(
        entry["by"], "user",
        "answered by a person through the app: {entry}"
    );
    assert_eq!(entry["outcome"], "allow", "{entry}");
    assert!(
        entry["session"]
            .as_str()
            .is_some_and(|s| s.starts_with("ses_")),
        "the TUI's session, from the plugin's hello: {entry}"
    );
    assert_eq!(
        world.record(&world.project).map(|r| r.pid),
        Some(app_pid),
        "the app still presents the project"
    );

    // Quitting opencode: its plugin deletes the file (the app's) and the app puts it back.
    opencode.quit_tui(&app, tui).await;
    record_becomes(&world, &mut app, app_pid, "the app after opencode exited").await;
    assert!(
        model.requests.load(Ordering::SeqCst) >= 2,
        "the model was asked"
    );
    app.quit().await;
    eprintln!("the scenario took {:?}", started.elapsed());
}
