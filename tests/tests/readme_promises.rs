//! Promises of the README that no other suite ran through the binary: each one here runs
//! the real app binary (the debug build the suite checks against its sources), with the
//! real landstrip 0.19.2 where a run is involved, and reads the outcome from the process's
//! output, the files on disk, the activity log and the wire. Nothing is mocked.

use std::path::Path;
use std::time::Duration;

use fantoccini::key::Key;
use landstrip_tray_tests::notification_server::PrivateBus;
use landstrip_tray_tests::real_app::{
    assert_refused, assert_written, path_str, AppWorld, RunningApp,
};
use landstrip_tray_tests::tap::Tap;
use landstrip_tray_tests::tray_host::FakeWatcher;
use landstrip_tray_tests::webdriver::{Session, DOM_TIMEOUT};
use landstrip_tray_tests::x11::{self, DIALOG_TITLE};
use landstrip_tray_tests::{
    finish, launch_landstrip_with_policy, until, Landstrip, EVENT_TIMEOUT, PYTHON, READ,
};
use serde_json::{json, Value};
use tokio::process::Child;

/// The shells `landstrip-tray completions SHELL` prints a script for (README, "Control it
/// from a shell"), each with a line only that shell's script has.
const SHELLS: [(&str, &str); 3] = [
    ("bash", "complete -F"),
    ("zsh", "#compdef landstrip-tray"),
    ("fish", "complete -c landstrip-tray"),
];

/// Commands the walk below must find at the least: a help text whose "Commands:" section
/// could not be read would otherwise make the walk pass with nothing walked.
const KNOWN: [&[&str]; 6] = [
    &["ctl"],
    &["completions"],
    &["run"],
    &["ctl", "answer"],
    &["ctl", "policy", "learn"],
    &["ctl", "config", "set"],
];

/// The subcommands a `--help` text lists under "Commands:" (clap's layout: two spaces, the
/// name, its summary), `help` itself left out.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim_end() != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// Every command of the command line, found by walking `--help` from the top (so a command
/// added later is walked too), each with its help text: exit 0, the text on stdout, nothing
/// on stderr.
async fn every_command(world: &AppWorld) -> Vec<(Vec<String>, String)> {
    let mut walked = Vec::new();
    let mut to_walk: Vec<Vec<String>> = vec![Vec::new()];
    while let Some(path) = to_walk.pop() {
        let mut args = path.clone();
        args.push("--help".to_owned());
        let out = world
            .run(&args.iter().map(String::as_str).collect::<Vec<_>>())
            .await;
        let shown = format!("landstrip-tray {}", args.join(" "));
        assert_eq!(out.code, Some(0), "{shown}: {out:?}");
        assert_eq!(out.stderr, "", "{shown} wrote to stderr: {out:?}");
        let usage = format!("Usage: landstrip-tray {}", path.join(" "));
        assert!(
            out.stdout.contains(usage.trim_end()),
            "{shown}: no {usage:?} on stdout: {out:?}"
        );
        for sub in subcommands(&out.stdout) {
            let mut next = path.clone();
            next.push(sub);
            to_walk.push(next);
        }
        walked.push((path, out.stdout));
    }
    for known in KNOWN {
        assert!(
            walked.iter().any(|(path, _)| path == known),
            "the walk of --help missed {known:?}: walked {:?}",
            walked.iter().map(|(p, _)| p).collect::<Vec<_>>()
        );
    }
    walked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_prints_its_help_on_stdout_and_exits_0() {
    let world = AppWorld::new();
    let walked = every_command(&world).await;
    eprintln!(
        "--help of {} commands: {:?}",
        walked.len(),
        walked.iter().map(|(p, _)| p.join(" ")).collect::<Vec<_>>()
    );
    // Each command's own text, not its parent's printed again.
    for (path, help) in walked.iter().filter(|(p, _)| !p.is_empty()) {
        let parent = &path[..path.len() - 1];
        let (_, parent_help) = walked
            .iter()
            .find(|(p, _)| p == parent)
            .expect("a walked command's parent was walked");
        assert_ne!(help, parent_help, "{path:?} printed its parent's help");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_for_bash_zsh_and_fish_name_every_command() {
    let world = AppWorld::new();
    let walked = every_command(&world).await;
    for (shell, mark) in SHELLS {
        let out = world.run(&["completions", shell]).await;
        assert_eq!(out.code, Some(0), "completions {shell}: {out:?}");
        assert_eq!(out.stderr, "", "completions {shell} wrote to stderr");
        assert!(
            out.stdout.contains(mark),
            "completions {shell}: not a {shell} script on stdout (no {mark:?}): {out:?}"
        );
        for (path, _) in &walked {
            if let Some(name) = path.last() {
                assert!(
                    out.stdout.contains(name.as_str()),
                    "completions {shell} do not name {path:?}"
                );
            }
        }
    }
}

/// Starts the app with `--headless` (no display, no session bus) serving the world's
/// project; returns it once its control socket and the project's port are up.
async fn headless(world: &AppWorld) -> (RunningApp, u16) {
    let mut app = world.start_headless();
    app.wait_for_control().await;
    let port = app.serving(world, &world.project).await;
    (app, port)
}

/// A sandbox.json file as JSON (fails the test if it is missing or does not parse).
fn json_file(file: &Path) -> Value {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}: {text}", file.display()))
}

/// `ctl policy set --project . enabled false`, typed in the project's directory, as the
/// README shows it: exit 0, the file says `"enabled": false`, and a write held meanwhile is
/// answered by it (the sandbox is off for the project).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_policy_set_enabled_false_in_the_project_directory_switches_the_sandbox_off() {
    let world = AppWorld::new();
    let (mut app, port) = headless(&world).await;
    let target = world.outside.join("held.txt");
    let (child, id) = world.held_write(port, &target).await;

    let out = world
        .run_in(
            &world.project,
            &["ctl", "policy", "set", "--project", ".", "enabled", "false"],
        )
        .await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout
            .contains(&format!("wrote {}", path_str(&world.project_policy()))),
        "{out:?}"
    );
    assert_eq!(
        json_file(&world.project_policy())["enabled"],
        json!(false),
        "the file does not say enabled: false"
    );
    assert!(
        out.stdout.contains(&format!("also answered: {id}")),
        "{out:?}"
    );
    assert_written(&finish(child).await, &target);
    let entry = world
        .activity_entry("the held write", |e| e["subject"] == path_str(&target))
        .await;
    assert_eq!(entry["by"], "sandbox_disabled", "{entry}");
    let shown = world
        .run_in(&world.project, &["ctl", "policy", "show", "."])
        .await;
    assert_eq!(shown.code, Some(0), "{shown:?}");
    assert!(shown.stdout.contains("enabled = false"), "{shown:?}");
    app.quit().await;
}

/// `ctl policy learn DIR --session ID --global --save`: the entry learnt from a real run's
/// logged answers goes into the global file (the project file is not written), and the
/// next real run, whose policy is built from the files, writes there without asking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_policy_learn_global_save_writes_the_global_file_from_logged_answers() {
    const SESSION: &str = "ses_learn_global";
    let world = AppWorld::new();
    let (mut app, port) = headless(&world).await;
    let (a, b) = (world.outside.join("a.txt"), world.outside.join("b.txt"));
    let child = world.write_each(port, SESSION, &[&a, &b]);
    world.answer_once(2).await;
    let done = finish(child).await;
    assert_eq!(done.code, Some(0), "{done:?}");
    world
        .activity_entry("the second answer logged", |e| {
            e["subject"] == path_str(&b) && e["by"] == "user"
        })
        .await;

    let dir = path_str(&world.project);
    let saved = world
        .ctl_ok(&[
            "policy",
            "learn",
            dir,
            "--session",
            SESSION,
            "--global",
            "--save",
        ])
        .await;
    let global = world.global_policy();
    assert!(
        saved.contains(&format!("wrote {}", path_str(&global))),
        "the learnt entries were not saved into the global file: {saved}"
    );
    assert_eq!(
        json_file(&global)["filesystem"]["allowWrite"],
        json!([path_str(&world.outside)]),
        "the learnt entry is not in the global file"
    );
    assert!(
        !world.project_policy().exists(),
        "the project file was written"
    );

    let fresh = world.outside.join("fresh.txt");
    assert_written(&finish(world.write(port, &fresh)).await, &fresh);
    let asked = world
        .ctl_ok(&["activity", "--json", "--grep", "fresh.txt"])
        .await;
    assert_eq!(asked.trim(), "[]", "the next run asked: {asked}");
    app.quit().await;
}

/// Runs [`READ`] of `file` under the real landstrip 0.19.2 with the landstrip policy
/// `policy` (built when the test chose), fd 3 to `port`.
fn read_with(world: &AppWorld, policy: &Path, port: u16, file: &Path) -> Child {
    launch_landstrip_with_policy(
        Landstrip::V0_19,
        policy,
        &world.project,
        &world.home,
        port,
        None,
        &[PYTHON, "-c", READ, path_str(file)],
    )
}

/// The one pending request, through `ctl pending --wait --json`: its id, once it is the
/// read of `file`.
async fn held_read(world: &AppWorld, file: &Path) -> String {
    let waited = world.ctl_ok(&["pending", "--wait", "--json"]).await;
    let items: Value = serde_json::from_str(&waited).expect("ctl pending --json");
    assert_eq!(items[0]["path"], path_str(file), "{items}");
    assert_eq!(items[0]["operation"], "read", "{items}");
    items[0]["id"].as_u64().expect("an id").to_string()
}

/// A real read under a `denyReadAlways` root is denied at once, never asked, even with a
/// session grant covering it: when the run's landstrip policy predates the root (landstrip
/// asks, the app must deny: the tap sees the deny) and when landstrip 0.19.2 was given
/// the root itself. Beside the root, a read of the home folder still asks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_under_a_deny_read_always_root_is_denied_without_asking() {
    let world = AppWorld::new();
    // Reads of the home folder ask (the bundled /home does not cover this home).
    world.write_project_policy(&json!({"filesystem": {"denyRead": ["~"]}}));
    let vault = world.home.join("vault");
    std::fs::create_dir(&vault).expect("mkdir");
    let (first, secret) = (vault.join("first.txt"), vault.join("secret.txt"));
    std::fs::write(&first, "first").expect("write");
    std::fs::write(&secret, "top secret").expect("write");
    let (mut app, port) = headless(&world).await;

    // A session grant for the folder, from a read answered before the root existed.
    let before = world.landstrip_policy();
    let child = read_with(&world, &before, port, &first);
    let id = held_read(&world, &first).await;
    world.ctl_ok(&["answer", &id, "session"]).await;
    assert_eq!(finish(child).await.stdout.trim(), "first");
    let grants = world.grants().await;
    assert_eq!(grants.len(), 1, "{grants:?}");

    world.write_project_policy(
        &json!({"filesystem": {"denyRead": ["~"], "denyReadAlways": ["~/vault"]}}),
    );
    let shown = world
        .ctl_ok(&["policy", "show", path_str(&world.project)])
        .await;
    assert!(shown.contains("filesystem.denyReadAlways"), "{shown}");

    // The run's policy predates the root: landstrip asks, and the app denies at once (no
    // one answers here: a prompt would hold the run past `finish`'s bound).
    let mut tap = Tap::start(port).await;
    let done = finish(read_with(&world, &before, tap.port, &secret)).await;
    let query = tap.first_query().await.trap;
    assert_eq!(query["path"], path_str(&secret), "{query}");
    assert_eq!(
        done.stdout.trim(),
        "EACCES",
        "the read went through: {done:?}"
    );
    let reply: Value = serde_json::from_str(tap.replies().trim())
        .unwrap_or_else(|e| panic!("the app's answer {:?}: {e}", tap.replies()));
    assert_eq!(reply["action"], "deny", "{reply}");
    let entry = world
        .activity_entry("the read under the root", |e| {
            e["subject"] == path_str(&secret)
        })
        .await;
    assert_eq!(
        (&entry["outcome"], &entry["by"]),
        (&json!("deny"), &json!("hard_denial")),
        "not denied by the root: {entry}"
    );

    // landstrip 0.19.2 given the root itself: denied, nothing asked.
    let after = world.landstrip_policy();
    let given: Value =
        serde_json::from_slice(&std::fs::read(&after).expect("policy")).expect("JSON");
    assert_eq!(
        given["filesystem"]["denyReadAlways"],
        json!([path_str(&vault)]),
        "{given}"
    );
    let done = finish(read_with(&world, &after, port, &secret)).await;
    assert_eq!(
        done.stdout.trim(),
        "EACCES",
        "the read went through: {done:?}"
    );
    assert_eq!(world.ctl_ok(&["pending"]).await, "No requests waiting.\n");

    // Beside the root, the home folder still asks.
    let other = world.home.join("other.txt");
    std::fs::write(&other, "other").expect("write");
    let child = read_with(&world, &after, port, &other);
    let id = held_read(&world, &other).await;
    world.ctl_ok(&["answer", &id, "once"]).await;
    assert_eq!(finish(child).await.stdout.trim(), "other");
    app.quit().await;
}

/// `ctl policy replace` of an allow entry by one equal to or under an Always root, for
/// both lists and their roots: refused (exit 1), the reason on stderr, the file's bytes
/// unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_policy_replace_into_an_always_root_is_refused_and_writes_nothing() {
    let world = AppWorld::new();
    let (locked, free) = (world.outside.join("locked"), world.outside.join("free"));
    world.write_project_policy(&json!({"filesystem": {
        "allowRead": [path_str(&free)],
        "allowWrite": [path_str(&free)],
        "denyReadAlways": [path_str(&locked)],
        "denyWriteAlways": [path_str(&locked)],
    }}));
    let original = std::fs::read(world.project_policy()).expect("read");
    let (mut app, _) = headless(&world).await;
    for (list, always) in [
        ("allowRead", "denyReadAlways"),
        ("allowWrite", "denyWriteAlways"),
    ] {
        for new in [locked.clone(), locked.join("sub")] {
            let args = [
                "policy",
                "replace",
                "--project",
                "project",
                list,
                path_str(&free),
                path_str(&new),
            ];
            let out = world.ctl(&args).await;
            assert_eq!(out.code, Some(1), "{args:?}: {out:?}");
            assert!(
                out.stderr
                    .contains("no approval, session grant or allow entry may override")
                    && out.stderr.contains(always),
                "{args:?}: not refused for the root: {out:?}"
            );
            assert_eq!(out.stdout, "", "{args:?}");
            assert_eq!(
                std::fs::read(world.project_policy()).expect("read"),
                original,
                "{args:?} wrote the file"
            );
        }
    }
    app.quit().await;
}

/// A request held while an Always root that names its folder comes into force (a pattern
/// root names exactly the paths it matches, as `**/.env` names files: the folder
/// `conf.d`, not what is in it, so the write inside still asks): the dialog's project
/// answer and its global answer, whose suggested entry is that folder, are refused with
/// the reason, write nothing and leave the request waiting; Once still answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dialogs_project_and_global_answers_under_an_always_root_are_refused() {
    let world = AppWorld::new();
    let folder = world.outside.join("conf.d");
    std::fs::create_dir(&folder).expect("mkdir");
    let target = folder.join("a.conf");
    let session = Session::start(&world, &[]).await;
    let mut child = world.ask_write(&target);
    session.wait_prompt(None).await;
    // The root comes into force while the request waits (an outside edit).
    let root = format!("{}/*.d", path_str(&world.outside));
    world.write_project_policy(&json!({"filesystem": {"denyWriteAlways": [root]}}));
    let original = std::fs::read(world.project_policy()).expect("read");

    for (key, file) in [('p', world.project_policy()), ('g', world.global_policy())] {
        session.press(key).await;
        session
            .wait_css("body[data-step='scope'][data-armed='true']")
            .await;
        assert_eq!(
            session.attr("#preview-file", "title").await.as_deref(),
            Some(path_str(&file))
        );
        let added = session.text("#preview-diff .add").await;
        assert!(added.contains(path_str(&folder)), "{key}: {added:?}");
        session.press(Key::Enter.into()).await;
        // The page shows the refusal, or moves on if the answer was taken.
        let outcome = session
            .script_until(
                "the answer's outcome",
                "const e = document.getElementById('error'); \
                 return {error: e.hidden ? null : e.textContent, state: document.body.dataset.state};",
                DOM_TIMEOUT,
                |v| !v["error"].is_null() || v["state"] != "prompt",
            )
            .await;
        let error = outcome["error"].as_str().unwrap_or_else(|| {
            panic!(
                "{key}: the answer under the root was taken ({outcome}); the files: {:?} {:?}",
                std::fs::read_to_string(world.project_policy()),
                std::fs::read_to_string(world.global_policy()),
            )
        });
        assert!(
            error.contains("may override") && error.contains("denyWriteAlways"),
            "{key}: not refused for the root: {error:?}"
        );
        assert!(
            child.try_wait().expect("try_wait").is_none(),
            "{key}: the refused answer answered the request"
        );
        assert_eq!(
            std::fs::read(world.project_policy()).expect("read"),
            original,
            "{key}: the project file was written"
        );
        assert!(
            !world.global_policy().exists(),
            "{key}: the global file was written"
        );
        // Back to the choices (the error goes with the step).
        session.press(Key::Escape.into()).await;
        session
            .wait_css("body[data-step='main'][data-armed='true'] #error[hidden]")
            .await;
    }
    session.press('o').await;
    assert_written(&finish(child).await, &target);
    session.finish().await;
}

/// The `denyWrite` entries of a sandbox.json file.
fn deny_write(file: &Path) -> Value {
    json_file(file)["filesystem"]["denyWrite"].clone()
}

/// After a "never" for the global file: the entry is there (and nowhere else), and the
/// same write in a later run is denied without asking.
async fn the_global_never_holds(world: &AppWorld, target: &Path) {
    assert_eq!(
        deny_write(&world.global_policy()),
        json!([path_str(target)]),
        "the global file does not hold the never entry"
    );
    assert!(
        !world.project_policy().exists(),
        "the project file was written"
    );
    assert_refused(
        &finish(world.write(world.published_port(), target)).await,
        target,
    );
    world
        .activity_entry("the later write, denied by the global entry", |e| {
            e["subject"] == path_str(target) && e["by"] == "hard_denial"
        })
        .await;
    assert_eq!(world.ctl_ok(&["pending"]).await, "No requests waiting.\n");
}

/// `ctl answer ID never --global`: the held write fails, its exact path goes into the
/// global file's denyWrite, and the next run's write there is denied without asking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_answer_never_global_writes_the_global_file() {
    let world = AppWorld::new();
    let (mut app, port) = headless(&world).await;
    let target = world.outside.join("never.txt");
    let (child, id) = world.held_write(port, &target).await;
    let answered = world.ctl_ok(&["answer", &id, "never", "--global"]).await;
    assert!(
        answered.contains(path_str(&world.global_policy())),
        "the reply does not name the global file: {answered}"
    );
    assert_refused(&finish(child).await, &target);
    the_global_never_holds(&world, &target).await;
    app.quit().await;
}

/// The dialog's E key (deny for all projects, never): the preview names the global file
/// and its denyWrite, nothing is written before Enter; then the held write fails, the
/// entry is in the global file, and the next run's write is denied without asking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dialogs_e_key_writes_the_never_entry_into_the_global_file() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let target = world.outside.join("never.txt");
    let mut child = world.ask_write(&target);
    session.wait_prompt(None).await;
    session.press('e').await;
    session
        .wait_css("body[data-step='scope'][data-armed='true']")
        .await;
    assert_eq!(
        session.attr("#preview-file", "title").await.as_deref(),
        Some(path_str(&world.global_policy())),
        "E does not preview the global file"
    );
    assert_eq!(
        session.text("#preview-diff .key").await,
        "filesystem.denyWrite"
    );
    let added = session.text("#preview-diff .add").await;
    assert!(added.contains(path_str(&target)), "{added:?}");
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "the preview answered"
    );
    assert!(!world.global_policy().exists(), "the preview wrote");
    session.press(Key::Enter.into()).await;
    assert_refused(&finish(child).await, &target);
    the_global_never_holds(&world, &target).await;
    session.finish().await;
}

/// The prompt timeout the headless test sets (the least the settings allow).
const PROMPT_TIMEOUT: Duration = Duration::from_secs(5);

/// How late after [`PROMPT_TIMEOUT`] the timeout's denial may reach landstrip on a loaded
/// machine (generous: the promise is "denied once the timeout passes", not a latency).
const TIMEOUT_MARGIN: Duration = Duration::from_secs(10);

/// `--headless` with a prompt timeout set (`promptTimeout`): a real write nobody answers is
/// denied on the wire once the timeout passes, not before, recorded `by: timeout`, and
/// nothing is persisted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headless_a_held_write_nobody_answers_is_denied_by_the_prompt_timeout() {
    let world = AppWorld::new();
    world.write_settings(&json!({"promptTimeoutSecs": PROMPT_TIMEOUT.as_secs()}));
    let (mut app, port) = headless(&world).await;
    app.wait_for_log(&format!(
        "are denied once after {} s (the prompt timeout)",
        PROMPT_TIMEOUT.as_secs()
    ))
    .await;
    let mut tap = Tap::start(port).await;
    let target = world.outside.join("timed-out.txt");
    let mut child = world.write(tap.port, &target);
    let query = tap.first_query().await;
    let done = tokio::time::timeout(PROMPT_TIMEOUT + TIMEOUT_MARGIN, child.wait())
        .await
        .unwrap_or_else(|_| {
            panic!(
                "the held write was not denied within the prompt timeout ({PROMPT_TIMEOUT:?}) \
                 and {TIMEOUT_MARGIN:?}: no timeout applied; the app's log:\n{}",
                app.log()
            )
        })
        .expect("wait");
    let waited = query.at.elapsed();
    eprintln!("query -> the run's end: {waited:?} (prompt timeout {PROMPT_TIMEOUT:?})");
    assert_eq!(done.code(), Some(13), "not denied: {done:?}");
    assert!(
        waited >= PROMPT_TIMEOUT,
        "denied after {waited:?}, before the {PROMPT_TIMEOUT:?} timeout"
    );
    assert!(!target.exists(), "the denied write happened");
    let reply: Value = serde_json::from_str(tap.replies().trim())
        .unwrap_or_else(|e| panic!("the app's answer {:?}: {e}", tap.replies()));
    assert_eq!(reply["query_id"], query.trap["query_id"], "{reply}");
    assert_eq!(reply["action"], "deny", "{reply}");
    let entry = world
        .activity_entry("the timeout's denial", |e| {
            e["subject"] == path_str(&target)
        })
        .await;
    assert_eq!(
        (&entry["outcome"], &entry["by"]),
        (&json!("deny"), &json!("timeout")),
        "{entry}"
    );
    assert!(!world.project_policy().exists(), "project file written");
    assert!(!world.global_policy().exists(), "global file written");
    assert_eq!(world.grants().await, Vec::<Value>::new());
    app.assert_running();
    app.quit().await;
}

/// The README's promise for an edit of a policy file: every waiting request it now covers
/// is answered "within a second".
const WATCH_PROMISE: Duration = Duration::from_secs(1);

/// What a loaded machine may add to [`WATCH_PROMISE`] (printed beside the figure).
const WATCH_MARGIN: Duration = Duration::from_secs(2);

/// An edit of a policy file by another program (an editor's save by rename of the project
/// file; a rewrite in place of the global file) answers the running headless app's held
/// real write it now covers: the write goes through within a second (plus a named margin),
/// recorded `by: policy`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outside_edit_of_a_policy_file_answers_a_held_request() {
    let world = AppWorld::new();
    let (mut app, port) = headless(&world).await;
    for (name, file, by_rename) in [
        ("project", world.project_policy(), true),
        ("global", world.global_policy(), false),
    ] {
        let dir = world.outside.join(name);
        std::fs::create_dir(&dir).expect("mkdir");
        let target = dir.join("held.txt");
        let (mut child, _) = world.held_write(port, &target).await;
        let text = json!({"filesystem": {"allowWrite": [path_str(&dir)]}}).to_string();
        let parent = file.parent().expect("dir");
        std::fs::create_dir_all(parent).expect("mkdir");
        if by_rename {
            let temp = parent.join(".sandbox.json.swp");
            std::fs::write(&temp, &text).expect("write");
            std::fs::rename(&temp, &file).expect("rename");
        } else {
            std::fs::write(&file, &text).expect("write");
        }
        let edited = tokio::time::Instant::now();
        let status = tokio::time::timeout(WATCH_PROMISE + WATCH_MARGIN, child.wait())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "{name}: the held write was not answered within {WATCH_PROMISE:?} + \
                     {WATCH_MARGIN:?} of the edit; the app's log:\n{}",
                    app.log()
                )
            })
            .expect("wait");
        let took = edited.elapsed();
        eprintln!("{name} file edited -> held write answered: {took:?} (promise {WATCH_PROMISE:?}, margin {WATCH_MARGIN:?})");
        assert_eq!(status.code(), Some(0), "{name}: the write failed");
        assert_eq!(std::fs::read_to_string(&target).expect("written"), "hello");
        let entry = world
            .activity_entry("the held write", |e| e["subject"] == path_str(&target))
            .await;
        assert_eq!(
            (&entry["outcome"], &entry["by"]),
            (&json!("allow"), &json!("policy")),
            "{name}: {entry}"
        );
    }
    app.quit().await;
}

/// How soon a key's answer must reach the run (a bound below `finish`'s own, so that a
/// request left held fails here, naming the choice).
const ANSWERED_WITHIN: Duration = Duration::from_secs(15);

/// A run answered `choice` in the dialog with the policy file broken: it ends (bounded),
/// `expected` ("ok" or "EACCES") printed, and the file written or not accordingly.
async fn answered_as(child: Child, target: &Path, choice: &str, expected: &str) {
    let done = tokio::time::timeout(ANSWERED_WITHIN, finish(child))
        .await
        .unwrap_or_else(|_| {
            panic!(
                "{choice} with the policy file broken left the request held for {ANSWERED_WITHIN:?}"
            )
        });
    assert_eq!(
        done.stdout.trim(),
        expected,
        "{choice} with the policy file broken did not answer as it should: {done:?}"
    );
    if expected == "ok" {
        assert_written(&done, target);
    } else {
        assert_refused(&done, target);
    }
}

/// The dialog meeting a project file that does not parse: Project… says the file cannot
/// be edited and offers no confirmation; Once, Session and Deny each answer their own
/// request as usual; the file keeps its bytes and no file is written beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dialog_with_a_policy_file_that_does_not_parse_still_answers_and_writes_nothing() {
    let world = AppWorld::new();
    // The runs' policy is built before the file breaks: the plugin refuses to build one
    // from a file that does not parse.
    let policy = world.landstrip_policy();
    let broken = b"{\"filesystem\": {\"allowWrite\": [\n".to_vec();
    let file = world.project_policy();
    std::fs::create_dir_all(file.parent().expect("dir")).expect("mkdir");
    std::fs::write(&file, &broken).expect("write");
    let session = Session::start(&world, &[]).await;
    let port = session.port(&world);
    let unchanged = |when: &str| {
        assert_eq!(
            std::fs::read(&file).expect("read"),
            broken,
            "{when}: the broken file was written"
        );
        let names: Vec<String> = std::fs::read_dir(file.parent().expect("dir"))
            .expect("read .opencode")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["sandbox.json"], "{when}: a file was left beside it");
        assert!(
            !world.global_policy().exists(),
            "{when}: global file written"
        );
    };

    // Once, after Project… said it cannot edit the file.
    let dirs: Vec<_> = ["once", "session", "deny"]
        .iter()
        .map(|name| {
            let dir = world.outside.join(name);
            std::fs::create_dir(&dir).expect("mkdir");
            dir.join("f.txt")
        })
        .collect();
    let mut child = world.write_with_policy(&policy, port, &dirs[0]);
    let first = session.wait_prompt(None).await;
    session.press('p').await;
    session
        .wait_css("body[data-step='scope'][data-armed='true']")
        .await;
    let diff = session.text("#preview-diff").await;
    assert!(diff.contains("Cannot edit this file"), "{diff:?}");
    assert!(
        !session.enabled("#confirm").await,
        "a broken file's change can be confirmed"
    );
    session.press(Key::Enter.into()).await;
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "Enter on a broken file's preview answered"
    );
    unchanged("after Project…");
    session.press(Key::Escape.into()).await;
    session
        .wait_css("body[data-step='main'][data-armed='true']")
        .await;
    session.press('o').await;
    answered_as(child, &dirs[0], "Once", "ok").await;
    unchanged("after Once");

    // Session.
    let child = world.write_with_policy(&policy, port, &dirs[1]);
    let second = session.wait_prompt(Some(&first)).await;
    session.press('s').await;
    answered_as(child, &dirs[1], "Session", "ok").await;
    assert_eq!(world.grants().await.len(), 1, "Session made no grant");
    unchanged("after Session");

    // Deny.
    let child = world.write_with_policy(&policy, port, &dirs[2]);
    session.wait_prompt(Some(&second)).await;
    session.press('d').await;
    answered_as(child, &dirs[2], "Deny", "EACCES").await;
    unchanged("after Deny");
    session.finish().await;
}

/// With no notification service on the session bus (a bus of the test's own, with a tray
/// host on it and nothing else), a held real write still brings the dialog up on the X
/// display, armed with the request; the failed notification is logged once; the dialog
/// answers, and the next request comes up too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_notification_service_the_dialog_still_appears_and_answers() {
    let world = AppWorld::new();
    let bus = PrivateBus::start(&world.base.join("bus")).await;
    // A tray host, so no "no tray icon" notification is tried before the request's.
    let mut watcher = FakeWatcher::start(&bus.address).await;
    let session = Session::start(
        &world,
        &[
            ("DBUS_SESSION_BUS_ADDRESS", bus.address.as_str()),
            ("NO_AT_BRIDGE", "1"),
        ],
    )
    .await;
    let pid = session.app_pid.expect("the app's pid");
    watcher.item_from_pid(pid, || session.log()).await;
    let port = session.port(&world);

    let mut previous = None;
    for name in ["first.txt", "second.txt"] {
        let target = world.outside.join(name);
        let child = world.write(port, &target);
        let id = session.wait_prompt(previous.as_deref()).await;
        x11::wait_windows(
            pid,
            DIALOG_TITLE,
            true,
            EVENT_TIMEOUT,
            "the dialog on screen with no notification service",
            |w| w.len() == 1,
            || session.log(),
        )
        .await;
        let shown = session.text("#subject").await;
        assert!(shown.contains(name), "{name}: the dialog shows {shown:?}");
        until("the failed notification logged", || {
            session.log().contains("cannot show desktop notifications")
        })
        .await;
        session.press('o').await;
        assert_written(&finish(child).await, &target);
        previous = Some(id);
    }
    assert_eq!(
        session
            .log()
            .matches("cannot show desktop notifications")
            .count(),
        1,
        "logged once:\n{}",
        session.log()
    );
    session.finish().await;
}
