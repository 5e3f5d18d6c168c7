//! Where a project's prompts go, switched in the settings window's Projects view of the
//! real app (tauri-driver, WebKitWebDriver, the test's X display): the choice is saved in
//! the settings file and seen by `ctl projects`; with "terminal" another live presenter
//! keeps the discovery file, and switching back to "here" takes it back at once. The other
//! presenter is a live process and a listening port that write the file the way the
//! opencode TUI does (the real TUI is in tests/tests/opencode_tui.rs).

use landstrip_tray_core::serving::discovery::DiscoveryRecord;
use landstrip_tray_tests::real_app::{path_str, AppWorld};
use landstrip_tray_tests::settings_window::open_settings;
use landstrip_tray_tests::until;
use landstrip_tray_tests::webdriver::Session;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_projects_view_switches_where_prompts_go() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let app_pid = session.app_pid.expect("app pid");
    open_settings(&world, &session, "projects").await;
    let row = format!("li.project[data-dir='{}']", path_str(&world.project));
    let shown = session
        .prop(&format!("{row} select.project-prompts"), "value")
        .await;
    assert_eq!(shown.as_deref(), Some("here"), "the default");
    let choice = session
        .wait_css(&format!("{row} select.project-prompts"))
        .await;

    session
        .bounded("choose terminal", choice.select_by_value("terminal"))
        .await;
    let settings = world.settings_file();
    until("the choice saved in the settings file", || {
        std::fs::read_to_string(&settings).is_ok_and(|s| s.contains("\"terminal\""))
    })
    .await;
    let listed = world.ctl_ok(&["projects"]).await;
    assert!(listed.contains("terminal"), "{listed}");

    // Another presenter publishes: with "terminal" its file stays.
    let mut owner = tokio::process::Command::new("sleep")
        .arg("60")
        .kill_on_drop(true)
        .spawn()
        .expect("spawn sleep");
    let owner_pid = owner.id().expect("pid");
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    let theirs = DiscoveryRecord {
        port: listener.local_addr().expect("addr").port(),
        pid: owner_pid,
        ts: 1,
    };
    world.plant(&world.project, theirs);
    session.wait_css(&format!("{row}.state-conflict")).await;
    assert_eq!(world.record(&world.project), Some(theirs));

    // Back to "here": the app takes the file back at once.
    let choice = session
        .wait_css(&format!("{row} select.project-prompts"))
        .await;
    session
        .bounded("choose here", choice.select_by_value("here"))
        .await;
    session.wait_css(&format!("{row}.state-serving")).await;
    until("the app's record back", || {
        world.record(&world.project).map(|r| r.pid) == Some(app_pid)
    })
    .await;
    let shown = session
        .prop(&format!("{row} select.project-prompts"), "value")
        .await;
    assert_eq!(shown.as_deref(), Some("here"));
    let _ = owner.kill().await;
    session.finish().await;
}
