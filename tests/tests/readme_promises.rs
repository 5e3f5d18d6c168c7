//! Promises of the README that no other suite ran through the binary: each one here runs
//! the real app binary (the debug build the suite checks against its sources), with the
//! real landstrip 0.19.2 where a run is involved, and reads the outcome from the process's
//! output, the files on disk, the activity log and the wire. Nothing is mocked.

use landstrip_tray_tests::real_app::AppWorld;

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
