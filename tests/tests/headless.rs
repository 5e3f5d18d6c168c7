//! The app without a display, as over SSH or in a container: started without `--headless`
//! it says so in one sentence and starts nothing; with `--headless` — as the systemd user
//! unit in packaging/ starts it — it serves a real landstrip 0.19.2 run whose held write is
//! answered through `ctl`, with no GTK main loop and no window, and quits cleanly. Nothing
//! is mocked; the app gets neither `DISPLAY`, `WAYLAND_DISPLAY` nor a session bus.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use landstrip_tray_tests::finish;
use landstrip_tray_tests::real_app::{path_str, AppWorld};
use serde_json::Value;

/// The unit file the README tells people to install.
fn unit_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/landstrip-tray-headless.service")
}

/// The arguments of the unit's `ExecStart` after the binary, which must be the one the
/// .deb installs.
fn unit_args() -> Vec<String> {
    let text = std::fs::read_to_string(unit_file()).expect("read the unit file");
    let exec = text
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("the unit has an ExecStart line");
    let mut words = exec.split_whitespace().map(str::to_owned);
    assert_eq!(
        words.next().as_deref(),
        Some("/usr/bin/landstrip-tray"),
        "{exec}"
    );
    words.collect()
}

/// The names of the app's threads (`/proc/PID/task/*/comm`).
fn thread_names(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("read the app's tasks")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|n| n.trim().to_owned())
        .collect()
}

/// The command names of `pid`'s child processes.
fn children(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("read the app's tasks")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|child| std::fs::read_to_string(format!("/proc/{child}/comm")).ok())
                .map(|n| n.trim().to_owned())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_display_the_app_says_so_and_starts_nothing() {
    let world = AppWorld::new();
    let done = world.run(&["--project", path_str(&world.project)]).await;
    assert_eq!(done.code, Some(1), "{done:?}");
    assert_eq!(
        done.stderr.trim(),
        "landstrip-tray: no display: set DISPLAY or WAYLAND_DISPLAY, or run `landstrip-tray --headless`",
        "{done:?}"
    );
    assert!(
        world.record(&world.project).is_none(),
        "a discovery file was left behind"
    );
    assert!(
        !world.control_socket().exists(),
        "a control socket was left behind"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_headless_unit_serves_a_real_run_answered_through_ctl() {
    let world = AppWorld::new();
    // The unit starts no project of its own: it serves the settings file's.
    world.write_settings(&serde_json::json!({ "projects": [path_str(&world.project)] }));
    let args = unit_args();
    assert!(args.iter().any(|a| a == "--headless"), "{args:?}");
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    let mut app = world.start_without_display(&args);
    app.wait_for_control().await;
    // The log says where prompts go.
    app.wait_for_log("landstrip-tray ctl pending --wait").await;
    let port = app.serving(&world, &world.project).await;

    let target = world.outside.join("headless.txt");
    let child = world.write(port, &target);
    let waited = world.ctl(&["pending", "--wait", "--json"]).await;
    assert_eq!(waited.code, Some(0), "{waited:?}");
    let items: Value = serde_json::from_str(&waited.stdout).expect("ctl pending --json");
    let item = &items[0];
    assert_eq!(item["path"], path_str(&target), "{items}");
    let id = item["id"].as_u64().expect("an id").to_string();

    // `--headless` handed the process to the binary that links neither GTK nor WebKit: no
    // such library is mapped (a windowed start maps both before main), no child process
    // runs (WebKit's web and network processes would be), and no GLib main-loop or bus
    // thread runs (what a windowed start has by now, before showing anything).
    let exe = std::fs::read_link(format!("/proc/{}/exe", app.pid)).expect("the app's exe");
    assert_eq!(
        exe.file_name().and_then(|n| n.to_str()),
        Some("landstrip-tray-headless"),
        "{exe:?}"
    );
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", app.pid)).expect("maps");
    for lib in [
        "libgtk-3",
        "libwebkit2gtk",
        "libjavascriptcoregtk",
        "libgdk-3",
    ] {
        assert!(!maps.contains(lib), "{lib} is mapped in the headless app");
    }
    assert_eq!(
        children(app.pid),
        Vec::<String>::new(),
        "the headless app has children"
    );
    let names = thread_names(app.pid);
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("gmain") || n.starts_with("gdbus") || n.contains("WebKit")),
        "{names:?}"
    );
    let settings = world.run(&["settings"]).await;
    assert_eq!(settings.code, Some(1), "{settings:?}");
    assert!(
        settings.stderr.contains("no settings window"),
        "{settings:?}"
    );

    let answered = world.ctl(&["answer", &id, "once"]).await;
    assert_eq!(answered.code, Some(0), "{answered:?}");
    let done = finish(child).await;
    assert_eq!(done.code, Some(0), "{done:?}");
    assert_eq!(
        std::fs::read_to_string(&target).expect("the write went through"),
        "hello"
    );

    app.quit().await;
    assert!(
        world.record(&world.project).is_none(),
        "discovery file left"
    );
    assert!(!world.control_socket().exists(), "control socket left");
}
