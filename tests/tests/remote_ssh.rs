//! Remote machines over SSH, with real parts only (DESIGN.md §11): Debian's sshd started by
//! the test on a free loopback port with its own host key and config; a second Unix user
//! (made with useradd) running the headless app with a project, reached with a key the
//! test made, passed with `--identity` and `--known-hosts` (the machine's own `~/.ssh` is
//! never read or written); a real landstrip 0.19.2 run of that user holding a write; the
//! desktop side a second headless app (as root) driven with `ctl`. Needs root (useradd,
//! sshd).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use landstrip_tray_tests::phone::hidden_value;
use landstrip_tray_tests::phone_page::{pair, web_on};
use landstrip_tray_tests::real_app::{app_binary, assert_refused, path_str, AppWorld, RunningApp};
use landstrip_tray_tests::sshd::{chown_all, Sshd, User};
use landstrip_tray_tests::webdriver::Session;
use landstrip_tray_tests::{finish, until_some, Finished, Landstrip, PYTHON, WRITE};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The "remote" machine: its user, its world (owned by that user), its running app, the
/// landstrip binary it runs, and sshd in front of it.
struct Remote {
    user: User,
    world: AppWorld,
    app: RunningApp,
    landstrip: PathBuf,
    sshd: Sshd,
    _keys: tempfile::TempDir,
}

impl Remote {
    async fn start() -> Self {
        assert_eq!(
            landstrip_tray_core::uid(),
            0,
            "the SSH tests need root (useradd, sshd)"
        );
        let mut world = AppWorld::new();
        let user = User::add(&world.home);
        // The app's binaries (and landstrip) where that user can run them: the build may
        // sit under a directory only root can enter.
        let bin = world.base.join("bin");
        std::fs::create_dir(&bin).expect("mkdir bin");
        let app = app_binary();
        for name in ["landstrip-tray", "landstrip-tray-headless"] {
            let from = app.with_file_name(name);
            if from.is_file() {
                std::fs::copy(&from, bin.join(name)).expect("copy the app binary");
            }
        }
        let landstrip = bin.join("landstrip");
        std::fs::copy(Landstrip::V0_19.binary(), &landstrip).expect("copy landstrip");
        world.use_binary(bin.join("landstrip-tray"));
        // sshd starts no login session: the bridge's environment comes from here.
        let ssh_dir = world.home.join(".ssh");
        std::fs::create_dir_all(&ssh_dir).expect("mkdir ~/.ssh");
        std::fs::write(
            ssh_dir.join("environment"),
            format!(
                "XDG_RUNTIME_DIR={}\nHOME={}\nPATH={}:/usr/bin:/bin\n",
                world.runtime.display(),
                world.home.display(),
                bin.display()
            ),
        )
        .expect("write ~/.ssh/environment");
        let keys = tempfile::tempdir().expect("tempdir");
        let sshd = Sshd::start(keys.path(), Some((&user, &world.home))).await;
        let policy = world.landstrip_policy();
        assert!(policy.starts_with(&world.base) || policy.exists());
        chown_all(&world.base, user.uid, user.gid);
        std::fs::set_permissions(&world.base, std::fs::Permissions::from_mode(0o755))
            .expect("chmod the world");
        let mut app = world.start_headless_as(user.uid, user.gid);
        app.wait_for_control().await;
        Self {
            user,
            world,
            app,
            landstrip,
            sshd,
            _keys: keys,
        }
    }

    /// `ctl ARGS…` as the remote user.
    async fn ctl(&self, args: &[&str]) -> Finished {
        self.world.ctl_as(self.user.uid, self.user.gid, args).await
    }

    /// `ctl ARGS… --json` as the remote user, which must succeed.
    async fn ctl_json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.ctl(&all).await;
        assert_eq!(out.code, Some(0), "remote ctl {all:?}: {out:?}");
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
    }

    /// A real landstrip run of the remote user writing `target`, its write held by the
    /// remote app; returns once the remote lists it (`ctl pending --wait`).
    async fn held_write(&self, target: &Path) -> Child {
        let policy = self.world.landstrip_policy();
        chown_all(&policy, self.user.uid, self.user.gid);
        let port = self.world.published_port();
        let wrapper = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && exec \"$@\"");
        let child = Command::new("bash")
            .args(["-c", &wrapper, "bash"])
            .arg(&self.landstrip)
            .args(["run", "--trap", "3", "-p"])
            .arg(&policy)
            .args(["--", PYTHON, "-c", WRITE, path_str(target)])
            .current_dir(&self.world.project)
            .env("HOME", &self.world.home)
            .uid(self.user.uid)
            .gid(self.user.gid)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start the remote's landstrip run");
        let waited = self.ctl(&["pending", "--wait", "--json"]).await;
        assert!(
            waited.stdout.contains(path_str(target)),
            "the remote does not hold the write: {waited:?}"
        );
        child
    }

    /// The destination ssh is given.
    fn destination(&self) -> String {
        format!("{}@127.0.0.1", self.user.name)
    }

    /// Adds this machine to `desktop` as `name`, with the key and host key it accepts, and
    /// waits until `desktop` says it is connected; its view then.
    async fn connect(&self, desktop: &AppWorld, name: &str) -> Value {
        self.add_to(desktop, name, &self.sshd.key, &self.sshd.known_hosts)
            .await;
        state_of(desktop, name, "connected").await
    }

    /// `ctl remote add NAME …` on `desktop`, with this sshd's port, `key` and
    /// `known_hosts`.
    async fn add_to(&self, desktop: &AppWorld, name: &str, key: &Path, known_hosts: &Path) {
        let port = self.sshd.port.to_string();
        desktop
            .ctl_ok(&[
                "remote",
                "add",
                name,
                &self.destination(),
                "--port",
                &port,
                "--identity",
                path_str(key),
                "--known-hosts",
                path_str(known_hosts),
            ])
            .await;
    }
}

/// The desktop side: a headless app of its own world (as root), its control socket up.
async fn headless_desktop() -> (AppWorld, RunningApp) {
    let desktop = AppWorld::new();
    let mut app = desktop.start_headless();
    app.wait_for_control().await;
    (desktop, app)
}

/// The desktop's view of remote `name` once its state is `state` (bounded); ssh and the
/// remote are other processes, whose progress has no event to await here.
async fn state_of(desktop: &AppWorld, name: &str, state: &str) -> Value {
    until_some(&format!("remote {name} {state}"), || async {
        let list = desktop.ctl_json(&["remote", "list"]).await;
        list.as_array()
            .and_then(|l| l.iter().find(|r| r["name"] == name))
            .filter(|r| r["state"] == state)
            .cloned()
    })
    .await
}

/// The desktop's pending list.
async fn desktop_pending(desktop: &AppWorld) -> Vec<Value> {
    desktop
        .ctl_json(&["pending"])
        .await
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The desktop's item for `target` once it is listed (`ctl pending --wait`, then looked
/// for, bounded).
async fn listed_on_desktop(desktop: &AppWorld, target: &Path) -> Value {
    until_some(&format!("{} on the desktop", target.display()), || async {
        desktop_pending(desktop)
            .await
            .into_iter()
            .find(|i| i["path"] == path_str(target))
    })
    .await
}

/// The pids of `uid`'s processes running `landstrip-tray ctl bridge`.
fn bridges_of(uid: u32) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("read /proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let owner = std::fs::read_to_string(entry.path().join("status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("Uid:"))
                    .and_then(|l| l.split_whitespace().nth(1).map(str::to_owned))
            });
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if owner.as_deref() == Some(&uid.to_string())
            && cmdline.ends_with(b"landstrip-tray\0ctl\0bridge\0")
        {
            found.push(pid);
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_request_is_listed_and_answered_on_the_desktop_and_its_rules_and_files_apply() {
    let remote = Remote::start().await;
    let (desktop, mut desktop_app) = headless_desktop().await;
    let connected = remote.connect(&desktop, "devbox").await;
    eprintln!("devbox: {connected}");

    // A real write held on the remote shows on the desktop, with its host.
    let target = remote.world.outside.join("remote.txt");
    let run = remote.held_write(&target).await;
    let item = listed_on_desktop(&desktop, &target).await;
    assert_eq!(item["host"], "devbox", "{item}");
    let remote_items = remote.ctl_json(&["pending"]).await;
    assert!(
        remote_items[0].get("host").is_none(),
        "a local request has no host: {remote_items}"
    );
    let id = item["id"].as_u64().expect("an integer id").to_string();
    let text = desktop.ctl_ok(&["pending"]).await;
    assert!(text.contains("devbox:"), "{text}");

    // A project answer on the desktop: through the remote's answer path, into the remote
    // user's sandbox.json; the desktop's own files untouched.
    let answered = desktop.ctl(&["answer", &id, "project"]).await;
    assert_eq!(answered.code, Some(0), "{answered:?}");
    let done = finish(run).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");
    assert_eq!(std::fs::read_to_string(&target).expect("written"), "hello");
    let remote_policy = std::fs::read_to_string(remote.world.project_policy())
        .expect("the remote's project sandbox.json was written");
    // The scope offered by default: the folder of the write.
    let remote_policy: Value = serde_json::from_str(&remote_policy).expect("json");
    assert_eq!(
        remote_policy["filesystem"]["allowWrite"],
        serde_json::json!([path_str(&remote.world.outside)]),
        "{remote_policy}"
    );
    assert!(
        !desktop.project_policy().exists() && !desktop.global_policy().exists(),
        "the desktop's policy files were touched"
    );
    assert!(desktop_pending(&desktop).await.is_empty());
    // The remote records its answer; the desktop records nothing of it.
    let logged = remote
        .ctl_json(&["activity"])
        .await
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        logged
            .iter()
            .any(|e| e["subject"] == path_str(&target) && e["by"] == "user"),
        "{logged:?}"
    );
    let desktop_log = desktop.ctl_json(&["activity"]).await;
    let desktop_log = desktop_log.as_array().expect("the activity, an array");
    assert!(
        !desktop_log
            .iter()
            .any(|e| e["subject"] == path_str(&target)),
        "{desktop_log:?}"
    );

    // The bridge killed: the request leaves the desktop at once and still waits on the
    // remote; the desktop reconnects by itself and it is back.
    // Elsewhere: the project answer above allows the whole of `outside` now.
    let elsewhere = remote.world.base.join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    chown_all(&elsewhere, remote.user.uid, remote.user.gid);
    let second = elsewhere.join("second.txt");
    let mut run = remote.held_write(&second).await;
    listed_on_desktop(&desktop, &second).await;
    let bridges = bridges_of(remote.user.uid);
    assert_eq!(bridges.len(), 1, "one bridge runs: {bridges:?}");
    let status = std::process::Command::new("kill")
        .args(["-KILL", &bridges[0].to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    until_some("the request gone from the desktop", || async {
        desktop_pending(&desktop).await.is_empty().then_some(())
    })
    .await;
    let still = remote.ctl_json(&["pending"]).await;
    assert_eq!(still[0]["path"], path_str(&second), "{still}");
    assert!(run.try_wait().expect("try_wait").is_none(), "the run ended");
    let back = listed_on_desktop(&desktop, &second).await;
    state_of(&desktop, "devbox", "connected").await;
    let id = back["id"].as_u64().expect("an id").to_string();
    let deny = desktop.ctl(&["answer", &id, "deny"]).await;
    assert_eq!(deny.code, Some(0), "{deny:?}");
    assert_refused(&finish(run).await, &second);
    remote
        .world
        .activity_entry("the remote's deny", |e| {
            e["subject"] == path_str(&second) && e["outcome"] == "deny" && e["by"] == "user"
        })
        .await;

    // Removing the remote ends its connection.
    desktop.ctl_ok(&["remote", "remove", "devbox"]).await;
    assert_eq!(
        desktop.ctl_json(&["remote", "list"]).await,
        Value::Array(vec![])
    );
    until_some("the bridge gone", || async {
        bridges_of(remote.user.uid).is_empty().then_some(())
    })
    .await;
    let mut remote_app = remote.app;
    remote_app.assert_running();
    desktop_app.assert_running();
}

/// Adds remote `name` with the right key but `known_hosts`, which does not name its host
/// key, and waits for `state`: its words tell the person to run ssh, and the known-hosts
/// file is left as it was (no key is ever accepted here).
async fn host_key_refused(
    remote: &Remote,
    desktop: &AppWorld,
    name: &str,
    known_hosts: &Path,
    state: &str,
) -> Value {
    let before = std::fs::read_to_string(known_hosts).expect("read known hosts");
    remote
        .add_to(desktop, name, &remote.sshd.key, known_hosts)
        .await;
    let view = state_of(desktop, name, state).await;
    let detail = view["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("ssh "), "{view}");
    assert_eq!(
        std::fs::read_to_string(known_hosts).expect("read known hosts"),
        before,
        "a host key was accepted"
    );
    view
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_or_changed_host_keys_refused_keys_and_other_protocols_are_states_never_prompts() {
    let mut remote = Remote::start().await;
    let (desktop, mut desktop_app) = headless_desktop().await;
    let unknown = host_key_refused(
        &remote,
        &desktop,
        "stranger",
        &remote.sshd.unknown_hosts,
        "host_key_unknown",
    )
    .await;
    remote
        .add_to(
            &desktop,
            "keyless",
            &remote.sshd.stranger,
            &remote.sshd.known_hosts,
        )
        .await;
    let keyless = state_of(&desktop, "keyless", "needs_key").await;
    eprintln!("{unknown}\n{keyless}");
    // A known-hosts file naming another key for the address: "changed", never accepted.
    host_key_refused(
        &remote,
        &desktop,
        "changed",
        &remote.sshd.changed_hosts,
        "host_key_changed",
    )
    .await;
    // The remote answers as a bridge of a later protocol (a forced command of its
    // authorized_keys stands in for a newer app there): said so, nothing of it read.
    remote
        .add_to(
            &desktop,
            "future",
            &remote.sshd.future,
            &remote.sshd.known_hosts,
        )
        .await;
    let future = state_of(&desktop, "future", "protocol_mismatch").await;
    let detail = future["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("version 2"), "{future}");
    // It sent a request after its hello: none of it is read.
    assert_eq!(future["pending"], 0, "{future}");
    assert!(desktop_pending(&desktop).await.is_empty());
    // The remote app not running: said so.
    assert_eq!(remote.app.terminate().await, Some(0));
    remote
        .add_to(
            &desktop,
            "stopped",
            &remote.sshd.key,
            &remote.sshd.known_hosts,
        )
        .await;
    state_of(&desktop, "stopped", "not_running").await;

    // A destination that ssh would read as an option is refused, and nothing is saved.
    let before = std::fs::read_to_string(desktop.settings_file()).expect("settings");
    let dash = desktop
        .ctl(&["remote", "add", "evil", "-oProxyCommand=touch /tmp/pwned"])
        .await;
    assert_eq!(dash.code, Some(1), "{dash:?}");
    assert!(dash.stderr.contains("must not start with '-'"), "{dash:?}");
    assert_eq!(
        std::fs::read_to_string(desktop.settings_file()).expect("settings"),
        before
    );
    desktop_app.assert_running();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_desktop_s_timeout_and_quitting_leave_a_remote_request_waiting_there() {
    let remote = Remote::start().await;
    let (desktop, mut desktop_app) = headless_desktop().await;
    desktop
        .ctl_ok(&["config", "set", "promptTimeout", "5"])
        .await;
    remote.connect(&desktop, "devbox").await;
    let target = remote.world.outside.join("waits.txt");
    let mut run = remote.held_write(&target).await;
    listed_on_desktop(&desktop, &target).await;
    // The control: this desktop's own request, held after the remote's, is denied by the
    // desktop's timeout; the remote's, older, still waits.
    let local = desktop.outside.join("local.txt");
    assert_refused(
        &finish(desktop.write(desktop.published_port(), &local)).await,
        &local,
    );
    desktop
        .activity_entry("the desktop's timeout", |e| {
            e["subject"] == path_str(&local) && e["by"] == "timeout"
        })
        .await;
    listed_on_desktop(&desktop, &target).await;
    assert!(run.try_wait().expect("try_wait").is_none(), "the run ended");
    // The desktop quits: the request still waits on the remote, which answers it itself.
    assert_eq!(desktop_app.terminate().await, Some(0));
    let still = remote.ctl_json(&["pending"]).await;
    assert_eq!(still[0]["path"], path_str(&target), "{still}");
    assert!(run.try_wait().expect("try_wait").is_none(), "the run ended");
    let id = still[0]["id"].as_u64().expect("an id").to_string();
    let deny = remote.ctl(&["answer", &id, "deny"]).await;
    assert_eq!(deny.code, Some(0), "{deny:?}");
    assert_refused(&finish(run).await, &target);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_phone_may_deny_a_remote_request_and_never_allow_one() {
    let remote = Remote::start().await;
    let (desktop, mut desktop_app) = headless_desktop().await;
    remote.connect(&desktop, "devbox").await;
    let page = web_on(&desktop).await;
    let cookie = pair(&desktop, &page).await;
    let target = remote.world.outside.join("phone.txt");
    let run = remote.held_write(&target).await;
    let id = listed_on_desktop(&desktop, &target).await["id"]
        .as_u64()
        .expect("an id")
        .to_string();
    // The page shows it, with the machine's name, Deny and no Allow.
    let shown = page.client.get("/", Some(&cookie)).await.expect("GET /");
    assert_eq!(shown.status, 200, "{shown:?}");
    for wanted in [path_str(&target), "devbox", "may only deny another machine"] {
        assert!(shown.body.contains(wanted), "{wanted}: {}", shown.body);
    }
    assert!(!shown.body.contains(">Allow once"), "{}", shown.body);
    // Allowing it anyway, with the page's own token: refused, and it waits on the remote.
    let token = hidden_value(&shown.body, "token").expect("the page's form token");
    page.assert_refused(
        &desktop,
        Some(&cookie),
        &format!("id={id}&choice=once&token={token}"),
        403,
        &id,
    )
    .await;
    let still = remote.ctl_json(&["pending"]).await;
    assert_eq!(still[0]["path"], path_str(&target), "{still}");
    // Deny: through the remote's own answer path, which records it.
    let denied = page
        .answer(&cookie, &format!("id={id}&choice=deny&token={token}"))
        .await;
    assert_eq!(denied.status, 303, "{denied:?}");
    assert_refused(&finish(run).await, &target);
    remote
        .world
        .activity_entry("the phone's deny, recorded there", |e| {
            e["subject"] == path_str(&target) && e["outcome"] == "deny"
        })
        .await;
    desktop_app.assert_running();
}

/// The remote's held write to `name` shown in the desktop's dialog (the windowed app under
/// the test's X display, driven through tauri-driver); returns the run and the session.
async fn in_the_dialog(
    remote: &Remote,
    desktop: &AppWorld,
    env: &[(&str, &str)],
    name: &str,
) -> (Child, Session) {
    let session = Session::start(desktop, env).await;
    remote.connect(desktop, "devbox").await;
    let run = remote.held_write(&remote.world.outside.join(name)).await;
    session.wait_prompt(None).await;
    (run, session)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_request_opens_the_dialog_with_its_machine_named_and_is_answered_there() {
    let remote = Remote::start().await;
    let desktop = AppWorld::new();
    let (run, session) = in_the_dialog(&remote, &desktop, &[], "dialog.txt").await;
    assert_eq!(session.text("#title").await, "devbox: Allow write access?");
    let summary = session.text("#summary").await;
    assert!(summary.starts_with("On devbox: "), "{summary}");
    // "For all projects" previews the remote user's own global file, as that machine's
    // app reads it (this desktop's would be another file).
    session.choose("global").await;
    session
        .wait_css("body[data-step='scope'][data-armed='true']")
        .await;
    assert_eq!(
        session.attr("#preview-file", "title").await.as_deref(),
        Some(path_str(&remote.world.global_policy()))
    );
    let added = session.text("#preview-diff .add").await;
    assert!(
        added.contains(path_str(&remote.world.outside)),
        "the previewed entry: {added:?}"
    );
    session.click("#confirm").await;
    let done = finish(run).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");
    assert!(remote.world.outside.join("dialog.txt").exists());
    let written = std::fs::read_to_string(remote.world.global_policy()).expect("written");
    assert!(
        written.contains(path_str(&remote.world.outside)),
        "{written}"
    );
    assert!(
        !desktop.project_policy().exists() && !desktop.global_policy().exists(),
        "the desktop's own files were touched"
    );
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_user_s_key_is_sensitive_in_the_desktop_s_dialog() {
    let remote = Remote::start().await;
    let desktop = AppWorld::new();
    // The remote user's ~/.ssh: under the desktop's own home it would be nothing special.
    let ssh = remote.world.home.join(".ssh");
    std::fs::create_dir_all(&ssh).expect("mkdir .ssh");
    chown_all(&ssh, remote.user.uid, remote.user.gid);
    assert!(!ssh.starts_with(&desktop.home), "the two homes are apart");
    let session = Session::start(&desktop, &[]).await;
    remote.connect(&desktop, "devbox").await;
    let run = remote.held_write(&ssh.join("config")).await;
    session.wait_prompt(None).await;
    session.assert_sensitive_deny_first("SSH keys").await;
    session.press(fantoccini::key::Key::Enter.into()).await;
    let done = finish(run).await;
    assert_ne!(done.stdout.trim(), "ok", "{done:?}");
    assert!(!ssh.join("config").exists());
    session.finish().await;
}

/// docs/dialog-remote-{light,dark}.png: a remote machine's request in the dialog
/// (scripts/dialog-screenshots.sh).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/ screenshots; run by scripts/dialog-screenshots.sh"]
async fn screenshots() {
    let out = landstrip_tray_tests::screenshot_dir();
    for (theme, env) in landstrip_tray_tests::screenshot_themes() {
        let remote = Remote::start().await;
        let desktop = AppWorld::new();
        let (run, session) = in_the_dialog(&remote, &desktop, &env, "report.csv").await;
        session
            .screenshot(&out.join(format!("dialog-remote-{theme}.png")))
            .await;
        session.choose("deny").await;
        finish(run).await;
        session.finish().await;
    }
}

/// The next line a bridge wrote, as JSON (bounded).
async fn next_json(lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>) -> Value {
    let line = tokio::time::timeout(landstrip_tray_tests::EVENT_TIMEOUT, lines.next_line())
        .await
        .expect("a line from the bridge in time")
        .expect("read")
        .expect("a line, not the end");
    serde_json::from_str::<Value>(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_bridge_passes_answers_to_listed_requests_only() {
    use tokio::io::AsyncWriteExt;
    let world = AppWorld::new();
    let mut app = world.start_headless();
    app.wait_for_control().await;
    let mut bridge = world
        .command()
        .args(["ctl", "bridge"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ctl bridge");
    let mut input = bridge.stdin.take().expect("stdin");
    let mut lines = BufReader::new(bridge.stdout.take().expect("stdout")).lines();
    let hello = next_json(&mut lines).await;
    assert_eq!(hello["landstrip_tray_bridge"], 1, "{hello}");
    assert!(hello["version"].is_string(), "{hello}");
    // Its user's home, by which the desktop judges this machine's paths.
    assert_eq!(
        hello["home"],
        world.home.to_str().expect("utf-8"),
        "{hello}"
    );
    assert_eq!(
        next_json(&mut lines).await,
        serde_json::json!({"pending": []})
    );
    // A control request of another kind is not passed on; an answer to a request it did
    // not list is refused.
    let pause = serde_json::json!({"request": "pause"}).to_string();
    let answer = serde_json::json!({"answer": {"seq": 7, "id": 999, "answer": {"choice": "once"}}});
    input
        .write_all(format!("{pause}\n{answer}\n").as_bytes())
        .await
        .expect("write");
    let failed = next_json(&mut lines).await;
    assert_eq!(failed["failed"]["seq"], 7, "{failed}");
    // The bridge's own refusal, not the app's ("no longer pending"): it was never sent on.
    let error = failed["failed"]["error"].as_str().unwrap_or_default();
    assert!(error.contains("not listed"), "{failed}");
    let status = world.ctl_json(&["status"]).await;
    assert_eq!(
        status["pause"]["paused"], false,
        "the bridge passed a pause on"
    );
    // Its standard input closed: it ends, successfully.
    drop(input);
    let status = tokio::time::timeout(landstrip_tray_tests::EVENT_TIMEOUT, bridge.wait())
        .await
        .expect("the bridge ended")
        .expect("wait");
    assert!(status.success(), "{status}");
    // Without a running app it says so, and fails.
    assert_eq!(app.terminate().await, Some(0));
    let alone = world.ctl(&["bridge"]).await;
    assert_eq!(alone.code, Some(1), "{alone:?}");
    assert_eq!(
        serde_json::from_str::<Value>(alone.stdout.trim()).expect("json"),
        serde_json::json!({"landstrip_tray_bridge": 1, "error": "not_running"})
    );
}
