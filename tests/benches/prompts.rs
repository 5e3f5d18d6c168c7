//! Benchmark (not a test): how many prompts a realistic agent workload raises, answered by
//! a scripted person, and how many a second identical run raises after those answers.
//!
//! ```sh
//! cargo build -p landstrip-tray
//! xvfb-run -a dbus-run-session -- cargo bench -p landstrip-tray-tests --bench prompts
//! # one answer kind only, or another (once durations exist):
//! LANDSTRIP_TRAY_BENCH_ANSWER="session --for 15m" xvfb-run -a dbus-run-session -- \
//!   cargo bench -p landstrip-tray-tests --bench prompts
//! ```
//!
//! The workload is `tests/benches/workload/agent.sh`: what an agent runs in a fresh project
//! with no network — `git init` and commits, `npm install --offline` of a vendored tarball,
//! `npm test`, `python3 -m venv` and `pip install --no-index` of a vendored wheel, Python
//! tests writing `__pycache__`, scratch files and `~/.cache`, `make` with `cc`, `cargo build`
//! and `cargo test --offline` of a dependency-free crate, `mktemp` scratch files. Each step
//! is one landstrip run, launched as opencode-landstrip launches an agent's tool call: fd 3
//! connected to the port in the app's discovery file, the plugin's session hello, the
//! policy rebuilt from the `sandbox.json` files before each step (the core's
//! `landstrip_policy_json`, as `landstrip-tray run` builds it), and `landstrip run --trap 3`
//! inside `unshare -n` when that works (root), so nothing can reach a network even when
//! allowed; else landstrip's own denial of every connect (each one a prompt) is all.
//! `landstrip-tray run` is not used because it names its own session per run; the bench
//! needs to choose the session (below). The project is `~/src/app` in a fresh temporary
//! home, made under `/var/tmp` (`LANDSTRIP_TRAY_BENCH_ROOT` names another place; not
//! `/tmp`, where the grant of a scratch file's folder would cover the home as well), which
//! the global `sandbox.json` puts in `denyRead` (`~`): the bundled default
//! `denyRead: ["/home"]` stands for "your home is not readable", and this home is not under
//! `/home`.
//!
//! The scripted person answers every prompt through `landstrip-tray ctl` (`pending --wait
//! --json`, then `answer ID ...`), which goes through the same answer path as the dialog's
//! buttons (`Broker::answer` and the same answer rules): it is the dialog's person without
//! a display. It takes one answer for every prompt — `LANDSTRIP_TRAY_BENCH_ANSWER`, a
//! comma-separated list of `ctl answer` arguments (default `once,session,project`; `project`
//! without `--scope` means the dialog's preselected scope, the session scope, named as `ctl`
//! names that option: `exact` or `parent` where it coincides with one). A network prompt
//! cannot be persisted, so a `project` person answers it `session`. Where the answer is
//! refused because the location is sensitive, the person takes the dialog's default there,
//! Deny.
//!
//! Per answer kind, one app with a fresh home and project runs the workload three times:
//! run 1 in session A; run 2 in session A again (the same agent session doing it again);
//! run 3 in a new session B (a new agent session, or `landstrip-tray run` again, which is a
//! session of its own each time). Before runs 2 and 3 the project and home are put back
//! as they were before run 1, except the policy files: only what the person's answers left
//! behind differs. It prints per run: the prompts asked (answered by the person), the
//! distinct folders asked about (the parents of the paths; network targets), the queries
//! landstrip held in all and who settled them (from the app's activity log), the steps that
//! succeeded; and for run 1 the prompts per step, the folders, and the scopes the answers
//! chose. `LANDSTRIP_TRAY_BENCH_LOGS=DIR` keeps every step's output, every answer and the
//! activity log there. `LANDSTRIP_TRAY_BENCH_HOME=used` starts every run from a home the
//! workload has run in once outside the sandbox (`~/.npm`, `~/.cargo`, `~/.cache` in
//! place, as on a developer's machine) instead of an empty one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use landstrip_tray_core::policy::PolicyPaths;
use landstrip_tray_tests::real_app::{path_str, AppWorld, RunningApp};
use landstrip_tray_tests::tray_host::FakeWatcher;
use landstrip_tray_tests::{write_landstrip_policy_from, Landstrip};
use tokio::process::Command;
use tokio::sync::watch;

/// How long one step may run (prompts included) before it is killed and counted failed.
const STEP_TIMEOUT: Duration = Duration::from_secs(600);
/// The workload's runs per answer kind: session A, session A again, session B.
const RUNS: [(&str, &str); 3] = [
    ("run 1", "ses_bench_a"),
    ("run 2, same session", "ses_bench_a"),
    ("run 3, new session", "ses_bench_b"),
];
/// A person's `~/.gitconfig`: git commits need a name.
const GITCONFIG: &str =
    "[user]\n\tname = Agent\n\temail = agent@example.org\n[init]\n\tdefaultBranch = main\n";

fn workload_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/workload")
}

/// One answer kind: the arguments after `ctl answer ID`.
#[derive(Debug, Clone)]
struct Answer {
    args: Vec<String>,
    /// A project or global answer with the dialog's preselected scope (no `--scope` given).
    preselected: bool,
}

impl Answer {
    fn parse(text: &str) -> Self {
        let args: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
        assert!(
            !args.is_empty(),
            "an empty answer in LANDSTRIP_TRAY_BENCH_ANSWER"
        );
        let preselected = matches!(args[0].as_str(), "project" | "global")
            && !args.iter().any(|a| a == "--scope" || a == "--entry");
        Self { args, preselected }
    }

    fn label(&self) -> String {
        self.args.join(" ")
    }

    fn persists(&self) -> bool {
        matches!(self.args[0].as_str(), "project" | "global")
    }

    /// The arguments for one prompt. No policy field holds a network target, so a network
    /// prompt gets `session`. The dialog preselects the option equal to the session scope;
    /// `ctl` names each option by its narrowest kind (the session scope of `~/.npm` itself
    /// is the exact path), so the person names that option the same way.
    fn for_item(&self, kind: &str, path: Option<&str>, scope: Option<&str>) -> Vec<String> {
        if kind == "network" && self.persists() {
            return vec!["session".to_owned()];
        }
        let mut args = self.args.clone();
        if self.preselected {
            let option = match (path.map(Path::new), scope.map(Path::new)) {
                (Some(path), Some(scope)) if path == scope => "exact",
                (Some(path), Some(scope)) if path.parent() == Some(scope) => "parent",
                _ => "suggested",
            };
            args.extend(["--scope".to_owned(), option.to_owned()]);
        }
        args
    }
}

/// One prompt the person saw and answered.
#[derive(Debug, Clone)]
struct Asked {
    step: String,
    kind: String,
    operation: String,
    /// The path or network target.
    subject: String,
    /// What "allow for session" would cover (filesystem).
    scope: Option<String>,
    /// What the person answered.
    answer: String,
}

impl Asked {
    /// The folder asked about: the path's parent, or the network target.
    fn folder(&self) -> String {
        if self.kind == "network" {
            return format!("{} {}", self.operation, self.subject);
        }
        Path::new(&self.subject)
            .parent()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.subject.clone())
    }
}

/// What one run of the workload did.
#[derive(Debug, Default)]
struct RunFigures {
    asked: Vec<Asked>,
    /// Prompts that were gone when the person answered (settled by an earlier answer).
    gone: usize,
    steps_ok: Vec<String>,
    steps_failed: Vec<String>,
    started_ms: u64,
    ended_ms: u64,
    wall: Duration,
}

/// Who settled the queries of one run, from the activity log.
#[derive(Debug, Default)]
struct Settled {
    by: BTreeMap<String, usize>,
}

impl Settled {
    fn total(&self) -> usize {
        self.by.values().sum()
    }
    fn get(&self, by: &str) -> usize {
        self.by.get(by).copied().unwrap_or(0)
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The directory holding the toolchain's real `cargo` and `rustc` (not rustup's proxies,
/// which would read `~/.rustup` of the temporary home): that of the cargo running this
/// bench (`$CARGO`), else what `rustup which cargo` names.
fn toolchain_bin() -> Option<PathBuf> {
    let has_rustc = |dir: &Path| dir.join("rustc").is_file();
    if let Some(cargo) = std::env::var_os("CARGO").map(PathBuf::from) {
        let dir = std::fs::canonicalize(&cargo).ok()?.parent()?.to_path_buf();
        if has_rustc(&dir) {
            return Some(dir);
        }
    }
    let out = std::process::Command::new("rustup")
        .args(["which", "cargo"])
        .output()
        .ok()?;
    let cargo = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let dir = cargo.parent()?.to_path_buf();
    (out.status.success() && has_rustc(&dir)).then_some(dir)
}

/// Whether `unshare -n` works here (root, or a user namespace allowed).
fn unshare_works() -> bool {
    std::process::Command::new("unshare")
        .args(["-n", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn run_checked(cmd: &mut std::process::Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {:?}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The fixture project with its vendored packages made (`workload/prepare.sh`), in `dir`.
fn make_template(dir: &Path) {
    run_checked(
        std::process::Command::new("cp")
            .arg("-a")
            .arg(workload_dir().join("project"))
            .arg(dir),
        "copy the fixture project",
    );
    run_checked(
        std::process::Command::new("bash")
            .arg(workload_dir().join("prepare.sh"))
            .arg(dir.join("vendor")),
        "workload/prepare.sh",
    );
}

/// Puts the project and the home back as they were before run 1 (empty, or `used_home`'s
/// copy), keeping only the policy files (`<project>/.opencode`; the global one is the app's
/// `$XDG_CONFIG_HOME/opencode`, outside the home): what the answers left behind.
fn reset(world: &AppWorld, template: &Path, used_home: Option<&Path>) {
    let remove_but = |dir: &Path, keep: &[&str]| {
        for entry in std::fs::read_dir(dir).expect("read_dir") {
            let entry = entry.expect("entry");
            if keep.iter().any(|k| entry.file_name() == *k) {
                continue;
            }
            let path = entry.path();
            let removed = if entry.file_type().expect("file type").is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            removed.unwrap_or_else(|e| panic!("remove {}: {e}", path.display()));
        }
    };
    remove_but(&world.project, &[".opencode"]);
    remove_but(&world.home, &["src"]);
    let mut source = template.as_os_str().to_owned();
    source.push("/.");
    run_checked(
        std::process::Command::new("cp")
            .arg("-a")
            .arg(source)
            .arg(&world.project),
        "copy the template into the project",
    );
    if let Some(used) = used_home {
        let mut source = used.as_os_str().to_owned();
        source.push("/.");
        run_checked(
            std::process::Command::new("cp")
                .arg("-a")
                .arg(source)
                .arg(&world.home),
            "copy the used home",
        );
    }
    std::fs::write(world.home.join(".gitconfig"), GITCONFIG).expect("write ~/.gitconfig");
}

/// A home the workload has been run in once, outside any sandbox (its caches in place: a
/// home that has built and installed before), in `dir`.
fn make_used_home(dir: &Path, template: &Path, path: &str, steps: &[String]) {
    let project = dir.with_extension("project");
    std::fs::create_dir_all(dir).expect("mkdir the used home");
    std::fs::write(dir.join(".gitconfig"), GITCONFIG).expect("write ~/.gitconfig");
    run_checked(
        std::process::Command::new("cp")
            .arg("-a")
            .arg(template)
            .arg(&project),
        "copy the template",
    );
    for step in steps {
        let out = std::process::Command::new("bash")
            .arg(workload_dir().join("agent.sh"))
            .arg(step)
            .current_dir(&project)
            .env_clear()
            .env("HOME", dir)
            .env("PATH", path)
            .env("LANG", "C.UTF-8")
            .env("TERM", "dumb")
            .stdin(Stdio::null())
            .output()
            .expect("agent.sh outside the sandbox");
        // The venv step fails inside the sandbox only; outside, every step must work.
        assert!(
            out.status.success(),
            "agent.sh {step} outside the sandbox: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    std::fs::remove_dir_all(&project).expect("remove the scratch project");
    std::fs::remove_file(dir.join(".gitconfig")).expect("remove ~/.gitconfig");
}

/// What the bench needs to launch a step.
struct Launch {
    port: u16,
    path: String,
    unshare: bool,
    landstrip: PathBuf,
    /// Each run starts from a used home (`LANDSTRIP_TRAY_BENCH_HOME=used`), not an empty one.
    used_home: bool,
}

/// One step under the real landstrip, launched as opencode-landstrip launches a tool call
/// (see the module's doc); its stdout and stderr, and whether it said `ok`.
async fn run_step(world: &AppWorld, launch: &Launch, session: &str, step: &str) -> (bool, String) {
    // The global file where the app reads it (`$XDG_CONFIG_HOME/opencode`), as the plugin
    // would find it with the same environment.
    let policy = write_landstrip_policy_from(
        PolicyPaths::with_global(world.global_policy(), &world.project),
        &world.home,
        &world.project,
        &world.base,
    );
    let hello =
        serde_json::json!({"kind": "opencode-landstrip-session", "sessionID": session}).to_string();
    let wrapper = format!(
        "exec 3<>/dev/tcp/127.0.0.1/{} && printf '%s\\n' '{hello}' >&3 && exec \"$@\"",
        launch.port
    );
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(wrapper).arg("bash");
    if launch.unshare {
        cmd.args(["unshare", "-n"]);
    }
    cmd.arg(&launch.landstrip)
        .args(["run", "--trap", "3", "-p"])
        .arg(&policy)
        .arg("--")
        .arg("bash")
        .arg(workload_dir().join("agent.sh"))
        .arg(step)
        .current_dir(&world.project)
        .env_clear()
        .env("HOME", &world.home)
        .env("PATH", &launch.path)
        .env("LANG", "C.UTF-8")
        .env("TERM", "dumb")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = cmd.spawn().expect("spawn landstrip");
    let output = match tokio::time::timeout(STEP_TIMEOUT, child.wait_with_output()).await {
        Ok(output) => output.expect("wait for the step"),
        Err(_) => {
            return (
                false,
                format!("step {step}: killed after {STEP_TIMEOUT:?}\n"),
            )
        }
    };
    let _ = std::fs::remove_file(&policy);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let ok = stdout.lines().any(|l| l == format!("step {step}: ok"));
    let text = format!("{stdout}{}", String::from_utf8_lossy(&output.stderr));
    (ok, text)
}

/// `ctl ARGS…` of `world`'s app, without a bound: a `pending --wait` lasts as long as a step
/// asks nothing.
async fn ctl(world: &AppWorld, args: &[String]) -> (Option<i32>, String, String) {
    let out = world
        .command()
        .arg("ctl")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .await
        .expect("run landstrip-tray ctl");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The scripted person: answers every prompt with `answer` until `stop` says the step is
/// over. Only the wait for a prompt is cut short, never an answer in flight, so every
/// answer that landed is recorded.
async fn person(
    world: Arc<AppWorld>,
    answer: Answer,
    step: String,
    mut stop: watch::Receiver<bool>,
    record: Arc<Mutex<RunFigures>>,
) {
    let wait = vec![
        "pending".to_owned(),
        "--wait".to_owned(),
        "--json".to_owned(),
    ];
    // Answers refused although the prompt was still there: seen again, the bench stops.
    let mut refused: BTreeMap<String, String> = BTreeMap::new();
    loop {
        let pending = tokio::select! {
            out = ctl(&world, &wait) => out,
            _ = stop.changed() => return,
        };
        let (code, stdout, stderr) = pending;
        assert_eq!(code, Some(0), "ctl pending: {stdout}{stderr}");
        let items: serde_json::Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("ctl pending --json: {e}: {stdout:?}"));
        for item in items.as_array().expect("a list of prompts") {
            let id = item["id"].as_u64().expect("a prompt id").to_string();
            if let Some(error) = refused.get(&id) {
                panic!("the person's answer to prompt {id} was refused: {error}\n{item}");
            }
            let kind = item["kind"].as_str().unwrap_or_default().to_owned();
            let path = item["path"].as_str();
            let scope = item["session_scope"].as_str();
            let mut args = vec!["answer".to_owned(), id.clone()];
            args.extend(answer.for_item(&kind, path, scope));
            let (mut code, mut out, mut err) = ctl(&world, &args).await;
            let mut given = args[2..].join(" ");
            if code == Some(1) && err.contains("--confirm-sensitive") {
                // The dialog's default on a sensitive location.
                let deny = vec!["answer".to_owned(), id.clone(), "deny".to_owned()];
                (code, out, err) = ctl(&world, &deny).await;
                given = "deny (sensitive)".to_owned();
            }
            let mut record = record.lock().unwrap_or_else(PoisonError::into_inner);
            match code {
                Some(0) => record.asked.push(Asked {
                    step: step.clone(),
                    kind,
                    operation: item["operation"].as_str().unwrap_or_default().to_owned(),
                    subject: path
                        .or(item["target"].as_str())
                        .unwrap_or_default()
                        .to_owned(),
                    scope: scope.map(str::to_owned),
                    answer: given,
                }),
                // Settled meanwhile (a grant the last answer made, the run ended), or
                // refused: the next look at what is pending tells which.
                Some(1) => {
                    record.gone += 1;
                    refused.insert(id, format!("ctl {args:?}: {out}{err}"));
                }
                _ => panic!("ctl {args:?} makes no sense here: {out}{err}"),
            }
        }
    }
}

/// Runs every step of the workload once in `session`, the person answering.
async fn run_workload(
    world: &Arc<AppWorld>,
    launch: &Launch,
    answer: &Answer,
    session: &str,
    steps: &[String],
    logs: Option<&Path>,
    label: &str,
) -> RunFigures {
    let record = Arc::new(Mutex::new(RunFigures {
        started_ms: now_ms(),
        ..RunFigures::default()
    }));
    let started = Instant::now();
    let mut log = String::new();
    for step in steps {
        let (stop_tx, stop_rx) = watch::channel(false);
        let answering = tokio::spawn(person(
            world.clone(),
            answer.clone(),
            step.clone(),
            stop_rx,
            record.clone(),
        ));
        let (ok, output) = run_step(world, launch, session, step).await;
        stop_tx.send(true).expect("the person is listening");
        answering.await.expect("the person");
        log.push_str(&format!("== {label}: {step}\n{output}"));
        let mut record = record.lock().unwrap_or_else(PoisonError::into_inner);
        if ok {
            record.steps_ok.push(step.clone());
        } else {
            record.steps_failed.push(step.clone());
        }
    }
    let mut figures = std::mem::take(&mut *record.lock().unwrap_or_else(PoisonError::into_inner));
    figures.wall = started.elapsed();
    figures.ended_ms = now_ms();
    if let Some(dir) = logs {
        let name = label.replace([' ', ','], "_");
        std::fs::write(dir.join(format!("{name}.log")), log).expect("write the step log");
        let answers: String = figures
            .asked
            .iter()
            .map(|a| {
                format!(
                    "{}\t{}\t{}\t{}\t{}\t{}\n",
                    a.step,
                    a.kind,
                    a.operation,
                    a.subject,
                    a.scope.as_deref().unwrap_or("-"),
                    a.answer
                )
            })
            .collect();
        std::fs::write(dir.join(format!("{name}.answers.tsv")), answers)
            .expect("write the answers");
    }
    figures
}

/// Who settled the queries held between `from` and `to` (ms), from the activity log.
fn settled(world: &AppWorld, from: u64, to: u64) -> Settled {
    let log = std::fs::read_to_string(world.activity_file()).unwrap_or_default();
    let mut settled = Settled::default();
    for line in log.lines() {
        let Ok(entry) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let ts = entry["ts"].as_u64().unwrap_or(0);
        let by = entry["by"].as_str().unwrap_or_default();
        if ts < from || ts > to || by == "report" {
            continue;
        }
        *settled.by.entry(by.to_owned()).or_default() += 1;
    }
    settled
}

/// `/tmp/x/home/...` as `~/...`.
fn tilde(path: &str, home: &Path) -> String {
    match Path::new(path).strip_prefix(home) {
        Ok(rest) if rest.as_os_str().is_empty() => "~".to_owned(),
        Ok(rest) => format!("~/{}", rest.display()),
        Err(_) => path.to_owned(),
    }
}

/// Counts of `items`, most first, as `a ×3, b ×1`.
fn counted(items: impl Iterator<Item = String>) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for item in items {
        *counts.entry(item).or_default() += 1;
    }
    let mut counts: Vec<_> = counts.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    counts
        .iter()
        .map(|(k, n)| format!("{k} x{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn distinct<T: Ord>(items: impl Iterator<Item = T>) -> usize {
    items.collect::<std::collections::BTreeSet<_>>().len()
}

/// One answer kind: a fresh world and app, the three runs, the figures.
async fn measure(answer: &Answer, launch_base: &Launch, address: &str, logs: Option<&Path>) {
    let world = Arc::new(AppWorld::with_project("home/src/app"));
    // "Your home is not readable": the bundled default says so with /home (module doc).
    let global = world.global_policy();
    std::fs::create_dir_all(global.parent().expect("a directory")).expect("mkdir");
    std::fs::write(
        world.global_policy(),
        r#"{"filesystem": {"denyRead": ["~"]}}"#,
    )
    .expect("write the global sandbox.json");
    let template = world.base.join("template");
    make_template(&template);
    let steps: Vec<String> = {
        let out = std::process::Command::new("bash")
            .arg(workload_dir().join("agent.sh"))
            .arg("steps")
            .output()
            .expect("agent.sh steps");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    };

    let used_home = launch_base.used_home.then(|| {
        let dir = world.base.join("used-home");
        make_used_home(&dir, &template, &launch_base.path, &steps);
        dir
    });

    let mut watcher = FakeWatcher::start(address).await;
    let mut app: RunningApp = world.start(&[&world.project]);
    let port = app.serving(&world, &world.project).await;
    app.wait_for_control().await;
    watcher.item_from(&app).await;
    let launch = Launch {
        port,
        path: launch_base.path.clone(),
        unshare: launch_base.unshare,
        landstrip: launch_base.landstrip.clone(),
        used_home: launch_base.used_home,
    };

    let mut runs = Vec::new();
    for (label, session) in RUNS {
        reset(&world, &template, used_home.as_deref());
        let log_label = format!("{} {label}", answer.label());
        let figures =
            run_workload(&world, &launch, answer, session, &steps, logs, &log_label).await;
        runs.push((label, session, figures));
    }
    // A clean quit writes every activity record still queued.
    app.quit().await;
    watcher.stop().await;
    if let Some(dir) = logs {
        let name = format!("{}.activity.jsonl", answer.label().replace(' ', "_"));
        std::fs::copy(world.activity_file(), dir.join(name)).expect("copy the activity log");
    }

    println!();
    println!(
        "answer: ctl answer ID {}   ({} steps per run)",
        answer.label(),
        steps.len()
    );
    println!(
        "{:<40} {:>14} {:>22} {:>22}",
        "", RUNS[0].0, RUNS[1].0, RUNS[2].0
    );
    let row = |name: &str, values: Vec<String>| {
        println!(
            "{name:<40} {:>14} {:>22} {:>22}",
            values[0], values[1], values[2]
        );
    };
    let all: Vec<(&RunFigures, Settled)> = runs
        .iter()
        .map(|(_, _, f)| (f, settled(&world, f.started_ms, f.ended_ms)))
        .collect();
    let column = |f: &dyn Fn(&RunFigures, &Settled) -> String| -> Vec<String> {
        all.iter().map(|(r, s)| f(r, s)).collect()
    };
    row("session", RUNS.iter().map(|r| r.1.to_owned()).collect());
    row("prompts asked", column(&|r, _| r.asked.len().to_string()));
    row(
        "  of which network",
        column(&|r, _| {
            r.asked
                .iter()
                .filter(|a| a.kind == "network")
                .count()
                .to_string()
        }),
    );
    row(
        "  of which sensitive (denied)",
        column(&|r, _| {
            r.asked
                .iter()
                .filter(|a| a.answer.contains("sensitive"))
                .count()
                .to_string()
        }),
    );
    row(
        "distinct folders asked about",
        column(&|r, _| distinct(r.asked.iter().map(Asked::folder)).to_string()),
    );
    row(
        "distinct suggested scopes",
        column(&|r, _| distinct(r.asked.iter().filter_map(|a| a.scope.clone())).to_string()),
    );
    row(
        "prompts settled before answered",
        column(&|r, _| r.gone.to_string()),
    );
    row(
        "queries held in all (activity log)",
        column(&|_, s| s.total().to_string()),
    );
    for (by, name) in [
        ("user", "  answered by the person"),
        ("session_grant", "  allowed by a session grant"),
        ("policy", "  allowed by the policy on disk"),
        ("hard_denial", "  hard denials (denyWrite)"),
        ("run_ended", "  withdrawn (run ended)"),
    ] {
        row(name, column(&|_, s| s.get(by).to_string()));
    }
    row(
        "steps ok",
        column(&|r, _| format!("{}/{}", r.steps_ok.len(), steps.len())),
    );
    row(
        "wall time (s)",
        column(&|r, _| format!("{:.1}", r.wall.as_secs_f64())),
    );
    for (label, _, figures) in &runs {
        if !figures.steps_failed.is_empty() {
            println!(
                "  {label}: failed steps: {}",
                figures.steps_failed.join(" ")
            );
        }
    }
    let first = &runs[0].2;
    let home = &world.home;
    println!(
        "  run 1 prompts per step: {}",
        steps
            .iter()
            .map(|s| format!(
                "{s} {}",
                first.asked.iter().filter(|a| &a.step == s).count()
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  run 1 folders asked about: {}",
        counted(first.asked.iter().map(|a| tilde(&a.folder(), home)))
    );
    println!(
        "  run 1 suggested scopes: {}",
        counted(first.asked.iter().map(|a| format!(
                    "{} {}",
                    a.operation,
                    a.scope.as_deref().map(|s| tilde(s, home)).unwrap_or_else(|| "-".into())
                )))
    );
    println!(
        "  run 1 answers given: {}",
        counted(first.asked.iter().map(|a| a.answer.clone()))
    );
    if answer.persists() {
        let file = if answer.args[0] == "project" {
            world.project_policy()
        } else {
            world.global_policy()
        };
        println!(
            "  {} after run 1..3: {}",
            tilde(path_str(&file), home),
            std::fs::read_to_string(&file)
                .unwrap_or_default()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
}

fn main() {
    // The worlds (home, project) are made under TMPDIR: not /tmp, where a grant of /tmp (the
    // suggested scope of a scratch file) would cover the home too. Set before any thread.
    let root = std::env::var_os("LANDSTRIP_TRAY_BENCH_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/tmp"));
    std::fs::create_dir_all(&root).expect("mkdir LANDSTRIP_TRAY_BENCH_ROOT");
    std::env::set_var("TMPDIR", &root);
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(bench());
}

async fn bench() {
    let address = std::env::var("DBUS_SESSION_BUS_ADDRESS")
        .expect("a session bus: run under `xvfb-run -a dbus-run-session --`");
    let answers: Vec<Answer> = std::env::var("LANDSTRIP_TRAY_BENCH_ANSWER")
        .unwrap_or_else(|_| "once,session,project".to_owned())
        .split(',')
        .map(Answer::parse)
        .collect();
    let logs = std::env::var_os("LANDSTRIP_TRAY_BENCH_LOGS").map(PathBuf::from);
    if let Some(dir) = &logs {
        std::fs::create_dir_all(dir).expect("mkdir LANDSTRIP_TRAY_BENCH_LOGS");
    }
    let toolchain = toolchain_bin();
    let mut path = String::new();
    if let Some(bin) = &toolchain {
        path.push_str(path_str(bin));
        path.push(':');
    }
    path.push_str("/usr/local/bin:/usr/bin:/bin");
    let launch = Launch {
        port: 0,
        path,
        unshare: unshare_works(),
        landstrip: Landstrip::V0_19.binary(),
        used_home: match std::env::var("LANDSTRIP_TRAY_BENCH_HOME").as_deref() {
            Err(_) | Ok("fresh") => false,
            Ok("used") => true,
            Ok(other) => panic!("LANDSTRIP_TRAY_BENCH_HOME={other}: fresh or used"),
        },
    };
    let time = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    println!(
        "prompts figures ({time}; app {}; landstrip {})",
        landstrip_tray_tests::real_app::app_binary().display(),
        Landstrip::V0_19.version()
    );
    println!(
        "home: {}",
        if launch.used_home {
            "used (the workload run in it once outside the sandbox: its caches in place)"
        } else {
            "fresh (empty but for ~/.gitconfig)"
        }
    );
    println!(
        "network: {}; PATH for the workload: {}",
        if launch.unshare {
            "each step in a network namespace of its own (unshare -n), and landstrip's denials"
        } else {
            "landstrip's denials only (unshare -n does not work here)"
        },
        launch.path
    );
    for answer in &answers {
        measure(answer, &launch, &address, logs.as_deref()).await;
    }
}
