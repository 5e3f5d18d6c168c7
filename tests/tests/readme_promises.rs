//! Promises of the README that no other suite ran through the binary: each one here runs
//! the real app binary (the debug build the suite checks against its sources), with the
//! real landstrip 0.19.2 where a run is involved, and reads the outcome from the process's
//! output, the files on disk, the activity log and the wire. Nothing is mocked.

use std::ffi::OsStr;
use std::path::Path;

use landstrip_tray_tests::finish;
use landstrip_tray_tests::real_app::{assert_written, path_str, AppWorld, RunningApp};
use serde_json::{json, Value};

/// The shells `landstrip-tray completions SHELL` prints a script for (README, "Control it
/// from a shell").
const SHELLS: [&str; 3] = ["bash", "zsh", "fish"];

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
    let mut queue: Vec<Vec<String>> = vec![Vec::new()];
    while let Some(path) = queue.pop() {
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
            queue.push(next);
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
    for (path, help) in &walked {
        if let Some(last) = path.last() {
            let parent = &path[..path.len() - 1];
            let (_, parent_help) = walked
                .iter()
                .find(|(p, _)| p == parent)
                .expect("a walked command's parent was walked");
            assert_ne!(help, parent_help, "{path:?} printed its parent's help");
            assert!(!last.is_empty());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_for_bash_zsh_and_fish_name_every_command() {
    let world = AppWorld::new();
    let walked = every_command(&world).await;
    for shell in SHELLS {
        let out = world.run(&["completions", shell]).await;
        assert_eq!(out.code, Some(0), "completions {shell}: {out:?}");
        assert_eq!(out.stderr, "", "completions {shell} wrote to stderr");
        assert!(
            out.stdout.contains("landstrip-tray"),
            "completions {shell}: no script on stdout: {out:?}"
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
    // Each shell's own script: bash's `complete -F`, zsh's `#compdef`, fish's `complete -c`.
    for (shell, mark) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef landstrip-tray"),
        ("fish", "complete -c landstrip-tray"),
    ] {
        let out = world.run(&["completions", shell]).await;
        assert!(
            out.stdout.contains(mark),
            "completions {shell}: not a {shell} script (no {mark:?})"
        );
    }
}

/// Starts the app with `--headless` (no display, no session bus) serving the world's
/// project; returns it once its control socket and the project's port are up.
async fn headless(world: &AppWorld) -> (RunningApp, u16) {
    let mut app = world.start_without_display(&[
        OsStr::new("--headless"),
        OsStr::new("--project"),
        world.project.as_os_str(),
    ]);
    app.wait_for_control().await;
    let port = app.serving(world, &world.project).await;
    (app, port)
}

/// A sandbox.json file as JSON (fails the test if it is missing or does not parse).
fn json_file(file: &Path) -> Value {
    let text =
        std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
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
    assert!(out.stdout.contains(&format!("also answered: {id}")), "{out:?}");
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
        .ctl_ok(&["policy", "learn", dir, "--session", SESSION, "--global", "--save"])
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
