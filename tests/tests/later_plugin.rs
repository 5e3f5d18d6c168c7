//! The later opencode-landstrip releases' policy files (0.19.9's fields), against the real
//! app binary (under the test's X display) and the real landstrip 0.19.2: a project file
//! with `denyWriteAlways`, `shell` and `windows` loads; a real write under an Always root is
//! denied at once without a prompt, whether landstrip saw the root (the launcher's policy
//! hands it over as denyWrite: landstrip asks with its own deny_match, seen on the wire) or
//! it was added after the run started (the app's own rule);
//! an allow entry under the root is refused by `ctl policy add`; and the global file under
//! `XDG_CONFIG_HOME` is the one the app and its launcher read and write. The settings
//! window (under tauri-driver) shows the Always lists with what they mean, refuses an
//! allow entry under a root, and shows `shell`/`windows` read-only. Nothing is mocked.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use landstrip_tray_tests::real_app::{path_str, AppWorld};
use landstrip_tray_tests::settings_window::{list, open_settings, type_into, until_file};
use landstrip_tray_tests::tap::Tap;
use landstrip_tray_tests::webdriver::Session;
use landstrip_tray_tests::{
    finish, launch_landstrip_with_policy, Finished, Landstrip, PYTHON, WRITE,
};
use serde_json::json;

/// Runs [`WRITE`] on `target` under the real landstrip 0.19.2 with the landstrip policy
/// `policy` (built earlier), fd 3 to `port`; waits for it to end.
async fn write_with(world: &AppWorld, policy: &Path, port: u16, target: &Path) -> Finished {
    finish(launch_landstrip_with_policy(
        Landstrip::V0_19,
        policy,
        &world.project,
        &world.home,
        port,
        None,
        &[PYTHON, "-c", WRITE, path_str(target)],
    ))
    .await
}

fn mkdir(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).expect("mkdir");
    dir.to_path_buf()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deny_write_always_root_denies_real_writes_without_asking_and_refuses_allow_entries() {
    let world = AppWorld::new();
    let locked = mkdir(&world.outside.join("locked"));
    let later = mkdir(&world.outside.join("later"));
    let mut app = world.start(&[&world.project]);
    app.wait_for_control().await;
    let port = app.serving(&world, &world.project).await;
    // A run started before `later` became a root: its landstrip policy does not know it,
    // so landstrip asks the app (allow_miss) and the app's own rule must deny.
    let before = world.landstrip_policy();
    world.write_project_policy(&json!({
        "shell": {"readAccess": "policy"},
        "windows": {"appContainerMode": "standard", "allowLoopback": true},
        "filesystem": {"denyWriteAlways": [path_str(&locked), path_str(&later)]},
    }));
    let original = std::fs::read(world.project_policy()).expect("read");

    // The file loads: listed, with the read-only fields.
    let shown = world.ctl_ok(&["policy", "show", "project"]).await;
    assert!(
        shown.contains(&format!(
            "project  {}: valid",
            path_str(&world.project_policy())
        )),
        "{shown}"
    );
    assert!(shown.contains("  filesystem.denyWriteAlways:\n"), "{shown}");
    let line = shown
        .lines()
        .find(|l| l.starts_with(&format!("    {}  [project]", path_str(&locked))))
        .unwrap_or_else(|| panic!("no line for the root: {shown}"));
    assert!(
        line.contains("no approval, session grant or allow entry"),
        "{line}"
    );
    assert!(
        shown.contains("  shell.readAccess = policy (project;"),
        "{shown}"
    );
    assert!(
        shown.contains("  windows.allowLoopback = true (project;"),
        "{shown}"
    );

    // Landstrip knows this root (denyWrite in its policy): it asks with deny_match, seen
    // on the wire (without the hand-over it would ask with allow_miss, and the app's own
    // rule would give the same EACCES), and the app hard-denies at once.
    let target = locked.join("a.txt");
    let mut tap = Tap::start(port).await;
    let child = world.write(tap.port, &target);
    let query = tap.first_query().await.trap;
    assert_eq!(
        query["reason"], "deny_match",
        "landstrip was not handed the root as denyWrite: {query}"
    );
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}\n{}", app.log());
    assert!(!target.exists());
    world
        .assert_the_app_denied(
            &tap,
            &query,
            path_str(&target),
            "hard_denial",
            app.pid,
            || app.log(),
        )
        .await;

    // Landstrip does not know this one: the app's decision denies it, no prompt.
    let target = later.join("b.txt");
    let done = write_with(&world, &before, port, &target).await;
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}\n{}", app.log());
    assert!(!target.exists());
    let entry = world
        .activity_entry("the write under the later root", |e| {
            e["subject"] == path_str(&target)
        })
        .await;
    assert_eq!(entry["by"], "hard_denial", "{entry}");
    assert_eq!(world.ctl_ok(&["pending"]).await, "No requests waiting.\n");

    // An allow entry under the root is refused with the reason, and nothing is written.
    for entry in [
        path_str(&locked).to_owned(),
        path_str(&locked.join("sub")).to_owned(),
    ] {
        let out = world
            .ctl(&[
                "policy",
                "add",
                "--project",
                "project",
                "allowWrite",
                &entry,
            ])
            .await;
        assert_eq!(out.code, Some(1), "{entry}: {out:?}");
        assert!(
            out.stderr
                .contains("no approval, session grant or allow entry may override"),
            "{out:?}"
        );
        assert!(out.stderr.contains("denyWriteAlways"), "{out:?}");
        assert_eq!(out.stdout, "");
        assert_eq!(
            std::fs::read(world.project_policy()).expect("read"),
            original
        );
    }
    // Beside it: saved, and the shell/windows bytes kept.
    world
        .ctl_ok(&[
            "policy",
            "add",
            "--project",
            "project",
            "allowWrite",
            path_str(&world.outside.join("free")),
        ])
        .await;
    let text = std::fs::read_to_string(world.project_policy()).expect("read");
    let original = String::from_utf8(original).expect("utf-8");
    for kept in [
        r#""shell":{"readAccess":"policy"}"#,
        r#""windows":{"appContainerMode":"standard","allowLoopback":true}"#,
    ] {
        assert!(original.contains(kept), "{original}");
        assert!(text.contains(kept), "{text}");
    }
    assert_eq!(app.terminate().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_global_file_under_xdg_config_home_is_read_and_written() {
    let world = AppWorld::new();
    let open = mkdir(&world.outside.join("open"));
    let mut app = world.start(&[&world.project]);
    app.wait_for_control().await;
    let port = app.serving(&world, &world.project).await;
    // The run's landstrip policy predates the global entry: landstrip asks the app.
    let before = world.landstrip_policy();
    // The world's XDG_CONFIG_HOME is `base/config`, not `home/.config`: the two files
    // differ, and the home-based one would deny what the XDG one allows.
    let global = world.global_policy();
    assert!(!global.starts_with(&world.home), "{}", global.display());
    mkdir(global.parent().expect("dir"));
    std::fs::write(
        &global,
        json!({"filesystem": {"allowWrite": [path_str(&open)]}}).to_string(),
    )
    .expect("write the global file");
    let home_based = world.home.join(".config/opencode/sandbox.json");
    mkdir(home_based.parent().expect("dir"));
    let decoy = json!({"filesystem": {"denyWriteAlways": [path_str(&world.outside)]}}).to_string();
    std::fs::write(&home_based, &decoy).expect("write the home-based file");

    let target = open.join("a.txt");
    let done = write_with(&world, &before, port, &target).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}\n{}", app.log());
    let entry = world
        .activity_entry("the write the global entry allows", |e| {
            e["subject"] == path_str(&target)
        })
        .await;
    assert_eq!(entry["by"], "policy", "{entry}");

    // Shown and written: the XDG file.
    let shown = world.ctl_ok(&["policy", "show", "project"]).await;
    assert!(
        shown.contains(&format!("global   {}: valid", path_str(&global))),
        "{shown}"
    );
    let more = world.outside.join("more");
    let added = world
        .ctl_ok(&["policy", "add", "--global", "allowWrite", path_str(&more)])
        .await;
    assert!(added.contains(path_str(&global)), "{added}");
    let text = std::fs::read_to_string(&global).expect("read");
    assert!(text.contains(path_str(&more)), "{text}");
    assert_eq!(std::fs::read_to_string(&home_based).expect("read"), decoy);

    // The launcher builds landstrip's policy from the same file: the write is allowed by
    // landstrip itself (the home-based file's root would deny it).
    let launched = world.outside.join("open/by-launcher.txt");
    let mut cmd = world.command();
    cmd.arg("run")
        .args(["--", PYTHON, "-c", WRITE, path_str(&launched)])
        .current_dir(&world.project)
        .env("LANDSTRIP", Landstrip::V0_19.binary())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let done = finish(cmd.spawn().expect("spawn landstrip-tray run")).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}\n{}", app.log());
    assert_eq!(
        std::fs::read_to_string(&launched).expect("written"),
        "hello"
    );
    assert_eq!(app.terminate().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editor_shows_the_always_lists_and_the_read_only_fields() {
    let world = AppWorld::new();
    let original = "{\n  \"shell\": {\"readAccess\": \"policy\"},\n  \"windows\": {\"allowLoopback\": true},\n  \"filesystem\": {\"denyWriteAlways\": [\"locked\"], \"denyReadAlways\": [\"~/.ssh\"]}\n}\n";
    let file = world.project_policy();
    mkdir(file.parent().expect("dir"));
    std::fs::write(&file, original).expect("write sandbox.json");
    let session = Session::start(&world, &[]).await;
    open_settings(&world, &session, "policy").await;
    let project = "section[data-file='project']";
    let effective = "section[data-file='effective']";

    // The Always lists: their entries, and the line that says what they mean.
    for (list, entry) in [
        ("filesystem.denyWriteAlways", "locked"),
        ("filesystem.denyReadAlways", "~/.ssh"),
    ] {
        for column in [project, effective] {
            session
                .wait_css(&format!(
                    "{column} [data-list='{list}'] li[data-entry='{entry}']"
                ))
                .await;
            let note = session
                .text(&format!("{column} [data-list='{list}'] [data-note]"))
                .await;
            assert!(
                note.contains("no approval, session grant or allow entry may override"),
                "{list}: {note}"
            );
        }
    }
    // shell and windows: shown with their values and a line each, with nothing to edit.
    for (field, value, note) in [
        ("shell.readAccess", "policy", "read lists"),
        ("windows.allowLoopback", "true", "no effect on Linux"),
    ] {
        let css = format!("{project} [data-platform-field='{field}']");
        assert_eq!(
            session.attr(&css, "data-value").await.as_deref(),
            Some(value)
        );
        let text = session.text(&css).await;
        assert!(
            text.contains(value) && text.contains(note),
            "{field}: {text}"
        );
        let css = format!("{effective} [data-platform-field='{field}']");
        assert_eq!(
            session.attr(&css, "data-value").await.as_deref(),
            Some(value)
        );
        assert!(session.text(&css).await.contains("project"), "its layer");
    }
    let unset = format!("{effective} [data-platform-field='windows.appContainerMode']");
    assert!(session.text(&unset).await.contains("not set"));
    let controls: serde_json::Value = session
        .bounded(
            "controls in the read-only fields",
            session.client().execute(
                "return document.querySelectorAll('[data-platform] input, [data-platform] button, [data-platform] select').length",
                vec![],
            ),
        )
        .await;
    assert_eq!(controls, json!(0));

    // An allowWrite entry under the root: the check says why, Enter writes nothing.
    let write = "filesystem.allowWrite";
    let add = format!("{project} [data-list='{write}'] .add-row input[data-key]");
    type_into(&session, &add, "locked/sub").await;
    let area = format!("{project} [data-list='{write}'] .add-row + .entry-check");
    let message = session.text(&format!("{area} [data-flag='invalid']")).await;
    assert!(
        message.contains("no approval, session grant or allow entry may override")
            && message.contains("denyWriteAlways"),
        "{message}"
    );
    type_into(&session, &add, "\u{e007}").await;
    session
        .wait_css(&format!("{add}[aria-invalid='true']"))
        .await;
    assert_eq!(std::fs::read_to_string(&file).expect("read"), original);

    // Another entry is saved, the shell and windows lines kept as they were.
    session.clear(&add).await;
    type_into(&session, &add, "free\u{e007}").await;
    let text = until_file(&world, "the entry beside the root", |t| {
        list(t, write) == ["free"]
    })
    .await;
    for line in [
        "  \"shell\": {\"readAccess\": \"policy\"},\n",
        "  \"windows\": {\"allowLoopback\": true},\n",
    ] {
        assert!(text.contains(line), "{text}");
    }
    session.finish().await;
}
