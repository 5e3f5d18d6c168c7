//! `landstrip-tray run -- PROGRAM`: the launcher with the real landstrip binaries (0.19.2
//! and 0.18.27) and the real app binary (under the test's X display). Output and exit
//! status pass through; a write outside the policy is held, asked through the running app
//! and answered with `ctl answer ID once`; Ctrl-C in a terminal (a real pseudo-terminal)
//! and SIGINT, SIGTERM, SIGHUP or SIGQUIT sent to the launcher alone reach the program once
//! and end the run; `-p POLICY` files are merged after the project's policy;
//! no landstrip binary and no running app both refuse before anything runs; with
//! `--no-prompt` landstrip alone keeps the `denyReadAlways` and `denyWriteAlways` roots.
//! Nothing is mocked.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use landstrip_tray_tests::real_app::{app_binary, path_str, AppWorld};
use landstrip_tray_tests::{finish, Finished, Landstrip, EVENT_TIMEOUT, PYTHON, WRITE};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

/// Says ready, echoes one line of stdin, then waits; on SIGINT, SIGTERM, SIGHUP or SIGQUIT
/// says which and
/// exits 7 (given an argument, only after a second, saying `bye`: its files are out of
/// reach by then, landstrip having died of a Ctrl-C at once).
const ON_SIGNAL: &str = "
import signal, sys, time
def on_signal(number, _):
    print('got', signal.Signals(number).name, flush=True)
    if len(sys.argv) > 1:
        time.sleep(1)
        print('bye', flush=True)
    sys.exit(7)
for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
    signal.signal(number, on_signal)
print('ready', flush=True)
print('read', sys.stdin.readline().strip(), flush=True)
while True:
    time.sleep(0.1)
";

/// Runs argv[1:] on a new pseudo-terminal (its controlling terminal, in the foreground, as
/// in a terminal window): waits for `ready`, types `typed` and Enter, waits for the program
/// to echo it, presses Ctrl-C, waits for the process to end, notes whether `bye` was
/// written by then, reads to the end and prints {"output", "code", "done"} as JSON (`code`
/// negative when a signal killed the process).
const ON_A_TERMINAL: &str = r#"
import json, os, pty, select, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out = b""
def more():
    global out
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        return False
    out += chunk
    return bool(chunk)
while b"ready" not in out and more():
    pass
os.write(fd, b"typed\n")
while b"read typed" not in out and more():
    pass
os.write(fd, b"\x03")
_, status = os.waitpid(pid, 0)
# What was written before the launcher exited: the pty may pass it on a moment later, so
# read until 0.3 s pass with nothing (a program cut off at the exit would say bye ~1 s on).
while select.select([fd], [], [], 0.3)[0] and more():
    pass
done = b"bye" in out
while more():
    pass
print(json.dumps({"output": out.decode(errors="replace"),
                  "code": os.waitstatus_to_exitcode(status), "done": done}))
"#;

/// Appends a line to argv[1]: how often the program ran.
const COUNT_RUN: &str = "echo ran >> \"$1\"";

const BOTH: [Landstrip; 2] = [Landstrip::V0_19, Landstrip::V0_18];

/// `landstrip-tray run ARGS…` in the world's project, its landstrip given by `LANDSTRIP`.
fn launcher(world: &AppWorld, landstrip: Option<&Path>, args: &[&str]) -> Command {
    let mut cmd = world.command();
    cmd.arg("run").args(args).current_dir(&world.project);
    match landstrip {
        Some(bin) => cmd.env("LANDSTRIP", bin),
        None => cmd.env_remove("LANDSTRIP"),
    };
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

/// The program's next line of output, within [`EVENT_TIMEOUT`].
async fn next_line(lines: &mut Lines<BufReader<ChildStdout>>) -> Option<String> {
    tokio::time::timeout(EVENT_TIMEOUT, lines.next_line())
        .await
        .expect("no line from the program in time")
        .expect("read")
}

/// Waits (`ctl pending --wait --json`) for the held request; asserts it is the write of
/// `target` and returns it with its id.
async fn held_write_of(world: &AppWorld, target: &Path) -> (serde_json::Value, String) {
    let pending = world.ctl_ok(&["pending", "--wait", "--json"]).await;
    let items: serde_json::Value = serde_json::from_str(&pending).expect("pending JSON");
    let item = items[0].clone();
    assert_eq!(item["path"].as_str(), Some(path_str(target)), "{items}");
    let id = item["id"].as_u64().expect("a prompt id").to_string();
    (item, id)
}

fn spawn(mut cmd: Command) -> Child {
    cmd.spawn().expect("spawn landstrip-tray run")
}

async fn run_to_end(cmd: Command) -> Finished {
    finish(spawn(cmd)).await
}

#[tokio::test(flavor = "multi_thread")]
async fn output_and_exit_status_pass_through() {
    let world = AppWorld::new();
    let mut app = world.start(&[&world.project]);
    app.serving(&world, &world.project).await;
    for landstrip in BOTH {
        let bin = landstrip.binary();
        let runs = world.project.join(format!("runs-{}", landstrip.version()));
        let script = format!("{COUNT_RUN}; echo hi; echo oops >&2; exit 3");
        let out = run_to_end(launcher(
            &world,
            Some(&bin),
            &["--", "sh", "-c", &script, "sh", path_str(&runs)],
        ))
        .await;
        assert_eq!(out.code, Some(3), "{}: {out:?}", landstrip.version());
        // Exactly once: an exit status other than 0 is not a reason to try again.
        assert_eq!(
            std::fs::read_to_string(&runs).expect("the program ran"),
            "ran\n"
        );
        // Nothing the launcher cannot enforce in this policy, so nothing said about it.
        assert!(!out.stderr.contains("not enforced"), "{out:?}");
        assert_eq!(out.stdout, "hi\n", "{}: {out:?}", landstrip.version());
        assert!(
            out.stderr.contains("oops"),
            "{}: {out:?}",
            landstrip.version()
        );
    }
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_held_write_is_answered_through_the_app() {
    let world = AppWorld::new();
    // A domain list the launcher must say it cannot enforce.
    world.write_project_policy(&serde_json::json!({
        "network": {"allowedDomains": ["example.org"]}
    }));
    let mut app = world.start(&[&world.project]);
    app.serving(&world, &world.project).await;
    app.wait_for_control().await;
    for landstrip in BOTH {
        let target = world.outside.join(format!("held-{}", landstrip.version()));
        let bin = landstrip.binary();
        let child = spawn(launcher(
            &world,
            Some(&bin),
            &["--", PYTHON, "-c", WRITE, path_str(&target)],
        ));
        let (item, id) = held_write_of(&world, &target).await;
        // The session hello named the run.
        let session = item["session"].as_str().unwrap_or_default();
        assert!(session.starts_with("run:python3:"), "{item}");
        world.ctl_ok(&["answer", &id, "once"]).await;
        let out = finish(child).await;
        assert_eq!(out.code, Some(0), "{}: {out:?}", landstrip.version());
        assert_eq!(out.stdout.trim(), "ok", "{out:?}");
        assert_eq!(std::fs::read_to_string(&target).expect("written"), "hello");
        assert!(
            out.stderr
                .contains("network.allowedDomains (example.org) is not enforced"),
            "{out:?}"
        );
    }
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_running_app_is_asked_to_serve_a_project_it_does_not_serve_for_this_run() {
    let world = AppWorld::new();
    // Serving nothing.
    let mut app = world.start(&[]);
    app.wait_for_control().await;
    assert!(
        !world
            .ctl_ok(&["projects"])
            .await
            .contains(path_str(&world.project)),
        "served before the launcher asked"
    );
    let target = world.outside.join("asked.txt");
    let child = spawn(launcher(
        &world,
        Some(&Landstrip::V0_19.binary()),
        &["--", PYTHON, "-c", WRITE, path_str(&target)],
    ));
    // Held and asked through the app, which now serves the project.
    let (item, id) = held_write_of(&world, &target).await;
    assert_eq!(
        item["project"].as_str(),
        Some(path_str(&world.project)),
        "{item}"
    );
    world.ctl_ok(&["answer", &id, "once"]).await;
    assert_eq!(finish(child).await.stdout.trim(), "ok");
    let projects = world.ctl_ok(&["projects", "--json"]).await;
    assert!(projects.contains(path_str(&world.project)), "{projects}");
    // For this run only: the settings file does not keep it.
    let saved = std::fs::read_to_string(world.settings_file()).unwrap_or_default();
    assert!(
        !saved.contains(path_str(&world.project)),
        "the launcher's project was saved: {saved}"
    );
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_policy_file_given_with_p_is_merged_after_the_projects() {
    let world = AppWorld::new();
    let mut app = world.start(&[&world.project]);
    app.serving(&world, &world.project).await;
    app.wait_for_control().await;
    let extra_dir = world.outside.join("extra");
    std::fs::create_dir_all(&extra_dir).expect("mkdir");
    let extra = world.base.join("extra.json");
    std::fs::write(
        &extra,
        serde_json::json!({"filesystem": {"allowWrite": [path_str(&extra_dir)]}}).to_string(),
    )
    .expect("write extra.json");
    for landstrip in BOTH {
        let version = landstrip.version();
        let bin = landstrip.binary();
        // Without it, the project's policy does not allow the write: it is held (and
        // denied here, through the app).
        let target = extra_dir.join(format!("without-{version}"));
        let child = spawn(launcher(
            &world,
            Some(&bin),
            &["--", PYTHON, "-c", WRITE, path_str(&target)],
        ));
        let (_, id) = held_write_of(&world, &target).await;
        world.ctl_ok(&["answer", &id, "deny"]).await;
        assert_eq!(finish(child).await.stdout.trim(), "EACCES", "{version}");

        // With `-p extra.json`, landstrip itself allows it: nobody is asked.
        let target = extra_dir.join(format!("with-{version}"));
        let out = run_to_end(launcher(
            &world,
            Some(&bin),
            &[
                "-p",
                path_str(&extra),
                "--",
                PYTHON,
                "-c",
                WRITE,
                path_str(&target),
            ],
        ))
        .await;
        assert_eq!(out.stdout.trim(), "ok", "{version}: {out:?}");
        assert_eq!(std::fs::read_to_string(&target).expect("written"), "hello");
        let asked = world
            .ctl_ok(&["activity", "--json", "--grep", &format!("with-{version}")])
            .await;
        assert_eq!(
            asked.trim(),
            "[]",
            "{version}: the write was asked about: {asked}"
        );
    }
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signal_to_the_launcher_reaches_the_program_and_the_run_ends() {
    let world = AppWorld::new();
    let mut app = world.start(&[&world.project]);
    app.serving(&world, &world.project).await;
    for landstrip in BOTH {
        // The README: "a SIGINT, SIGTERM, SIGHUP or SIGQUIT sent to the launcher alone
        // (`kill PID`) is passed on to the program".
        for (signal, name, code) in [
            ("-INT", "SIGINT", 130),
            ("-TERM", "SIGTERM", 143),
            ("-HUP", "SIGHUP", 129),
            ("-QUIT", "SIGQUIT", 131),
        ] {
            let version = landstrip.version();
            let bin = landstrip.binary();
            let mut cmd = launcher(&world, Some(&bin), &["--", PYTHON, "-c", ON_SIGNAL]);
            cmd.stdin(Stdio::null());
            let mut child = spawn(cmd);
            let stdout = child.stdout.take().expect("stdout");
            let mut lines = BufReader::new(stdout).lines();
            assert_eq!(
                next_line(&mut lines).await.as_deref(),
                Some("ready"),
                "{version}"
            );
            assert_eq!(
                next_line(&mut lines).await.as_deref(),
                Some("read "),
                "{version}"
            );
            // Only the launcher: kill(2) on its pid, not its process group.
            let pid = child.id().expect("pid");
            let sent = Command::new("kill")
                .args([signal, &pid.to_string()])
                .status()
                .await
                .expect("kill");
            assert!(sent.success());
            let got = format!("got {name}");
            assert_eq!(
                next_line(&mut lines).await.as_deref(),
                Some(got.as_str()),
                "{version}"
            );
            // Once: the program exits on the first, so nothing follows.
            assert_eq!(next_line(&mut lines).await, None, "{version} {name}");
            let status = tokio::time::timeout(EVENT_TIMEOUT, child.wait())
                .await
                .expect("the run did not end after the signal")
                .expect("wait");
            // landstrip dies of the signal it held once the program has ended.
            assert_eq!(status.code(), Some(code), "{version} {name}");
        }
    }
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_in_a_terminal_reaches_the_program_and_the_run_ends() {
    let world = AppWorld::new();
    let mut app = world.start(&[&world.project]);
    app.serving(&world, &world.project).await;
    for landstrip in BOTH {
        let version = landstrip.version();
        let mut cmd = Command::new(PYTHON);
        world.apply_env(&mut cmd);
        cmd.env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .env("LANDSTRIP", landstrip.binary())
            .current_dir(&world.project)
            .args(["-c", ON_A_TERMINAL])
            .arg(app_binary())
            .args(["run", "--", PYTHON, "-c", ON_SIGNAL, "slowly"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let out = run_to_end(cmd).await;
        assert_eq!(out.code, Some(0), "{version}: {out:?}");
        let seen: serde_json::Value = serde_json::from_str(&out.stdout).expect("driver JSON");
        let output = seen["output"].as_str().unwrap_or_default();
        // The terminal's input reached the program (no SIGTTIN: it is in the foreground).
        assert!(output.contains("read typed"), "{version}: {output}");
        // Ctrl-C signals the whole foreground group; the program sees it exactly once.
        assert_eq!(
            output.matches("got SIGINT").count(),
            1,
            "{version}: {output}"
        );
        // The launcher outlived the program (a launcher killed by SIGINT reports -2) and
        // exits as a shell does for a program Ctrl-C ended.
        assert_eq!(seen["code"], 130, "{version}: {output}");
        // landstrip dies of a Ctrl-C at once; the launcher still waited for the program to
        // finish its handler before handing the terminal back.
        assert_eq!(seen["done"], true, "{version}: {output}");
    }
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_landstrip_is_said_plainly() {
    let world = AppWorld::new();
    let marker = world.project.join("marker");
    let empty = world.base.join("cache");
    let mut cmd = launcher(
        &world,
        None,
        &[
            "--",
            "/bin/sh",
            "-c",
            &format!("touch {}", path_str(&marker)),
        ],
    );
    cmd.env("PATH", &empty);
    let out = run_to_end(cmd).await;
    assert_eq!(out.code, Some(127), "{out:?}");
    assert!(
        out.stderr.contains("cannot find landstrip")
            && out
                .stderr
                .contains("npm install -g @landstrip/landstrip-linux-x64"),
        "{out:?}"
    );
    assert!(!marker.exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn without_the_app_it_fails_closed_unless_no_prompt() {
    let world = AppWorld::new();
    for landstrip in BOTH {
        let bin = landstrip.binary();
        let marker = world
            .project
            .join(format!("marker-{}", landstrip.version()));
        let touch = format!("echo ran >> {}", path_str(&marker));
        let out = run_to_end(launcher(&world, Some(&bin), &["--", "sh", "-c", &touch])).await;
        assert_eq!(out.code, Some(125), "{out:?}");
        assert!(
            out.stderr.contains("landstrip-tray is not running")
                && out.stderr.contains("Nothing was run"),
            "{out:?}"
        );
        assert!(!marker.exists(), "the program ran without a presenter");

        // --no-prompt: plain landstrip denials, no app needed.
        let outside = world
            .outside
            .join(format!("denied-{}", landstrip.version()));
        let script = format!(
            "{touch}; {PYTHON} -c '{}' {}",
            WRITE.replace('\'', r"'\''"),
            path_str(&outside)
        );
        let out = run_to_end(launcher(
            &world,
            Some(&bin),
            &["--no-prompt", "--", "sh", "-c", &script],
        ))
        .await;
        // Once, though the run ended with a failure.
        assert_eq!(
            std::fs::read_to_string(&marker).expect("ran with --no-prompt"),
            "ran\n",
            "{out:?}"
        );
        assert_eq!(out.code, Some(13), "{out:?}");
        assert!(out.stdout.contains("EACCES"), "{out:?}");
        assert!(!outside.exists());
    }
}

/// For each of argv[1:], `r:PATH` reads PATH and `w:PATH` writes "hello" to it; prints one
/// line each: ok, or EACCES (carries on either way; exit 0).
const READ_WRITE_EACH: &str = r#"
import sys
for arg in sys.argv[1:]:
    op, path = arg.split(":", 1)
    try:
        if op == "r":
            open(path).read()
        else:
            with open(path, "w") as f:
                f.write("hello")
        print("ok")
    except PermissionError as e:
        print("EACCES" if e.errno == 13 else repr(e))
"#;

/// Runs [`READ_WRITE_EACH`] on `ops` (`r`/`w`, path, wanted result) under `landstrip`
/// through `landstrip-tray run --no-prompt` (no app), and checks each result in order.
async fn no_prompt_each(world: &AppWorld, landstrip: Landstrip, ops: &[(&str, PathBuf, &str)]) {
    let version = landstrip.version();
    let args: Vec<String> = ops
        .iter()
        .map(|(op, path, _)| format!("{op}:{}", path_str(path)))
        .collect();
    let mut argv = vec!["--no-prompt", "--", PYTHON, "-c", READ_WRITE_EACH];
    argv.extend(args.iter().map(String::as_str));
    let out = run_to_end(launcher(world, Some(&landstrip.binary()), &argv)).await;
    assert_eq!(out.code, Some(0), "landstrip {version}: {out:?}");
    let got: Vec<(&str, &str)> = args
        .iter()
        .map(String::as_str)
        .zip(out.stdout.lines())
        .collect();
    let wanted: Vec<(&str, &str)> = args
        .iter()
        .map(String::as_str)
        .zip(ops.iter().map(|(_, _, result)| *result))
        .collect();
    assert_eq!(got, wanted, "landstrip {version}: {out:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn with_no_prompt_landstrip_alone_keeps_the_always_roots() {
    // No app: whatever is denied here, landstrip denied by itself, from the policy the
    // launcher handed it. The roots lie in the project, which the defaults let the run read
    // and write: only the hand-over (denyWriteAlways as denyWrite; denyReadAlways also as
    // denyRead, without the allowRead entry under it) can keep them. landstrip 0.18.27 does
    // not know denyReadAlways and reads under it unasked if it is passed on alone.
    let world = AppWorld::new();
    let secret = world.project.join("secret");
    std::fs::create_dir_all(secret.join("inner")).expect("mkdir secret/inner");
    std::fs::create_dir_all(world.project.join("locked")).expect("mkdir locked");
    std::fs::write(secret.join("key"), "k").expect("write the key");
    std::fs::write(secret.join("inner/note"), "n").expect("write the note");
    std::fs::write(world.project.join("free.txt"), "f").expect("write free.txt");
    world.write_project_policy(&serde_json::json!({
        "filesystem": {
            "denyReadAlways": ["secret"],
            "denyWriteAlways": ["locked"],
            // Under the root: in landstrip an allowRead entry re-opens the whole denyRead
            // root it lies in.
            "allowRead": ["secret/inner"],
        },
    }));
    for landstrip in BOTH {
        let version = landstrip.version();
        let locked = world.project.join(format!("locked/{version}.txt"));
        let beside = world.project.join(format!("beside-{version}.txt"));
        let ops = [
            ("r", secret.join("key"), "EACCES"),
            ("r", secret.join("inner/note"), "EACCES"),
            ("w", locked.clone(), "EACCES"),
            ("r", world.project.join("free.txt"), "ok"),
            ("w", beside.clone(), "ok"),
        ];
        no_prompt_each(&world, landstrip, &ops).await;
        assert!(!locked.exists(), "landstrip {version}");
        assert_eq!(std::fs::read_to_string(&beside).expect("written"), "hello");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_prompt_an_allow_entry_does_not_open_the_apps_own_state() {
    // No app: landstrip alone decides, from the policy the launcher handed it. The project
    // file allows writing and reading the whole config directory, which holds the app's
    // settings; the hand-over keeps the app's own directory out of the entry's reach.
    let world = AppWorld::new();
    let config = world.base.join("config");
    world.write_project_policy(&serde_json::json!({
        "filesystem": {
            "allowWrite": [path_str(&config)],
            "allowRead": [path_str(&config)],
        },
    }));
    let settings = world.settings_file();
    let before = std::fs::read(&settings).expect("the settings file");
    for landstrip in BOTH {
        let version = landstrip.version();
        let beside = config.join(format!("beside-{version}.txt"));
        let ops = [
            ("w", settings.clone(), "EACCES"),
            ("r", settings.clone(), "EACCES"),
            (
                "w",
                world.activity_file().with_file_name("planted"),
                "EACCES",
            ),
            ("w", beside.clone(), "ok"),
        ];
        no_prompt_each(&world, landstrip, &ops).await;
        assert_eq!(std::fs::read_to_string(&beside).expect("written"), "hello");
    }
    assert_eq!(std::fs::read(&settings).expect("the settings file"), before);
}
