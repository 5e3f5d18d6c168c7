//! The first run of the real app (tauri-driver, WebKitWebDriver, the test's X display):
//! with no settings file the welcome window opens, offers the directory the app was
//! started from and a project a live presenter serves now, shows what the real
//! landstrip's `doctor` says (or how to install it), and "Done" serves the checked
//! projects through the same operation as `ctl add-project`, writing the settings file so
//! the next start shows no welcome. And the app's log files land in the platform log
//! directory. The "other presenter" is a live process working in the project and a
//! listening port, written the way opencode's TUI does (the real TUI is in
//! tests/tests/opencode_tui.rs). Started as `scripts/run.sh --project DIR` starts it (in
//! the app's own checkout), DIR is offered checked and the checkout is not; the plugin's
//! set-up leads with the one for the opencode on `PATH`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use landstrip_tray_core::serving::discovery::DiscoveryRecord;
use landstrip_tray_tests::opencode::opencode_bin;
use landstrip_tray_tests::real_app::{path_str, AppWorld};
use landstrip_tray_tests::webdriver::Session;
use landstrip_tray_tests::x11;
use landstrip_tray_tests::{until, Landstrip, EVENT_TIMEOUT};
use tokio::time::Instant;

/// A directory that looks like a project (it has `.git`).
fn project(world: &AppWorld, name: &str) -> PathBuf {
    let dir = world.base.join(name);
    std::fs::create_dir_all(dir.join(".git")).expect("mkdir project");
    dir
}

/// A live presenter for `dir`, as opencode's TUI is one: a process working in `dir` and a
/// listening port, named in `dir`'s discovery file.
struct Presenter {
    process: tokio::process::Child,
    _listener: std::net::TcpListener,
}

fn presenter(world: &AppWorld, dir: &Path) -> Presenter {
    let process = tokio::process::Command::new("sleep")
        .arg("120")
        .current_dir(dir)
        .kill_on_drop(true)
        .spawn()
        .expect("spawn sleep");
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    world.plant(
        dir,
        DiscoveryRecord {
            port: listener.local_addr().expect("addr").port(),
            pid: process.id().expect("pid"),
            ts: 1,
        },
    );
    Presenter {
        process,
        _listener: listener,
    }
}

/// `PATH` with the real landstrip 0.19.2's directory first.
fn path_with_landstrip() -> String {
    let bin = Landstrip::V0_19.binary();
    let dir = bin.parent().expect("dir").display().to_string();
    format!("{dir}:{}", std::env::var("PATH").unwrap_or_default())
}

/// The directories the welcome window lists, in order.
async fn offered_dirs(session: &Session) -> Vec<String> {
    let listed = session
        .client()
        .execute(
            "return [...document.querySelectorAll('#offered input')].map((e) => e.dataset.dir);",
            vec![],
        )
        .await
        .expect("read the offered directories");
    serde_json::from_value(listed).expect("a list of directories")
}

fn checkbox(dir: &Path) -> String {
    format!(
        "#offered input[type='checkbox'][data-dir='{}']",
        path_str(dir)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_run_welcomes_serves_the_checked_projects_and_is_not_shown_again() {
    let world = AppWorld::first_run();
    let here = project(&world, "here");
    let recent = project(&world, "recent");
    let plain = world.base.join("plain");
    std::fs::create_dir(&plain).expect("mkdir plain");
    let mut other = presenter(&world, &recent);
    let path = path_with_landstrip();
    let session = Session::start_in(&world, &here, &[("PATH", &path), ("LANDSTRIP", "")]).await;
    let app_pid = session.app_pid.expect("app pid");

    session.switch_to_page("welcome.html").await;
    session.wait_css("body[data-ready='true']").await;
    // The directory it was started from, checked; the presenter's project, not checked.
    assert_eq!(
        session.attr(&checkbox(&here), "data-dir").await.as_deref(),
        Some(path_str(&here))
    );
    let here_box = session.wait_css(&checkbox(&here)).await;
    assert!(
        session
            .bounded("here checked", here_box.is_selected())
            .await
    );
    let recent_box = session.wait_css(&checkbox(&recent)).await;
    assert!(
        !session
            .bounded("recent unchecked", recent_box.is_selected())
            .await
    );
    let listed = session.text("#offered").await;
    assert!(listed.contains("started here"), "{listed}");
    assert!(listed.contains("open in opencode now"), "{listed}");
    // The real landstrip's own check.
    session.wait_css("#doctor[data-state='ok']").await;
    let said = session.text("#doctor").await;
    assert!(said.contains("0.19.2 works here"), "{said}");
    assert!(
        said.contains(path_str(&Landstrip::V0_19.binary())),
        "{said}"
    );
    assert!(!session.displayed("#doctor-install").await);
    let plugin = session.text("#plugin-title").await;
    assert_eq!(plugin, "Connect opencode");
    let page = session.text("main").await;
    assert!(
        page.contains("opencode plugin opencode-landstrip@0.19.1"),
        "{page}"
    );
    assert!(
        page.contains("landstrip-tray ctl prefer DIR here"),
        "{page}"
    );
    // Nothing written yet: the settings file appears when the window closes.
    assert!(!world.settings_file().exists());

    session.click(&checkbox(&recent)).await;
    session.click("#done").await;
    let settings = world.settings_file();
    until("both projects in the settings file", || {
        std::fs::read_to_string(&settings)
            .is_ok_and(|s| s.contains(path_str(&here)) && s.contains(path_str(&recent)))
    })
    .await;
    let saved = std::fs::read_to_string(&settings).expect("settings");
    assert!(!saved.contains(path_str(&plain)), "{saved}");
    // Served now: ctl lists them, and the presenter's project is taken back ("here").
    let projects = world.ctl_ok(&["projects"]).await;
    assert!(
        projects.contains(path_str(&here)) && projects.contains(path_str(&recent)),
        "{projects}"
    );
    until("the app's discovery file for the recent project", || {
        world.record(&recent).map(|r| r.pid) == Some(app_pid)
    })
    .await;
    assert_eq!(world.record(&here).map(|r| r.pid), Some(app_pid));
    let deadline = Instant::now() + EVENT_TIMEOUT;
    while session
        .pages()
        .await
        .iter()
        .any(|p| p.ends_with("welcome.html"))
    {
        assert!(Instant::now() < deadline, "the welcome window stayed open");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    session.finish().await;
    let _ = other.process.kill().await;
    // The first instance must be gone, or the second start hands off to it.
    until("the first instance exited", || {
        std::fs::read_to_string(format!("/proc/{app_pid}/stat")).map_or(true, |stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
    })
    .await;

    // The second start: settings exist, no welcome. The dialog page being up means the
    // start-up (where the welcome would be opened) is over.
    let session = Session::start_in(&world, &here, &[("PATH", &path)]).await;
    let open = session.pages().await;
    assert!(
        !open.iter().any(|p| p.ends_with("welcome.html")),
        "a welcome window on the second start: {open:?}"
    );
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_landstrip_shows_how_to_install_it_and_closing_the_window_remembers() {
    let world = AppWorld::first_run();
    let missing = world.base.join("no/landstrip");
    let session = Session::start(&world, &[("LANDSTRIP", path_str(&missing))]).await;
    session.switch_to_page("welcome.html").await;
    session.wait_css("#doctor[data-state='missing']").await;
    let said = session.text("#doctor").await;
    assert!(said.contains("not found"), "{said}");
    assert!(
        said.contains(&format!(
            "LANDSTRIP={} is not an executable file",
            path_str(&missing)
        )),
        "{said}"
    );
    assert!(session.displayed("#doctor-install").await);
    let install = session.text("#doctor-install").await;
    assert!(
        install.contains("npm install -g @landstrip/landstrip-linux-x64"),
        "{install}"
    );
    // No project was started from or used before: only the one given with --project
    // (every session gives the world's project) is offered.
    session.wait_css("body[data-ready='true']").await;
    assert_eq!(offered_dirs(&session).await, [path_str(&world.project)]);

    // The window manager's close (WM_DELETE_WINDOW), not "Done": remembered all the same.
    assert!(!world.settings_file().exists());
    let app_pid = session.app_pid.expect("app pid");
    let shown = x11::wait_windows(
        app_pid,
        "Welcome to landstrip-tray",
        true,
        EVENT_TIMEOUT,
        "the welcome window on screen",
        |w| w.len() == 1,
        || session.log(),
    )
    .await;
    x11::request_close(&shown[0]).await;
    let settings = world.settings_file();
    until("the settings file written on close", || settings.is_file()).await;
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).expect("settings"))
            .expect("valid settings");
    assert_eq!(saved["projects"], serde_json::json!([]), "{saved}");
    session.finish().await;
}

/// As a new user starts it: `scripts/run.sh --project DIR` changes into the app's own
/// checkout, so that is the working directory. DIR (which has no project marker) is
/// offered checked and "Done" keeps serving it; the checkout is not offered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn started_in_its_checkout_with_a_project_it_offers_the_project_and_not_the_checkout() {
    let world = AppWorld::first_run();
    let checkout = std::fs::canonicalize(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .expect("the checkout");
    assert!(
        checkout.join(".git").exists() && checkout.join("src-tauri/Cargo.toml").is_file(),
        "{} is not the app's checkout",
        checkout.display()
    );
    let path = path_with_landstrip();
    let session = Session::start_in(&world, &checkout, &[("PATH", &path)]).await;
    session.switch_to_page("welcome.html").await;
    session.wait_css("body[data-ready='true']").await;
    assert_eq!(
        offered_dirs(&session).await,
        [path_str(&world.project)],
        "the --project directory only, not the checkout {}",
        checkout.display()
    );
    let given = session.wait_css(&checkbox(&world.project)).await;
    assert!(session.bounded("given checked", given.is_selected()).await);
    assert!(
        session.enabled(&checkbox(&world.project)).await,
        "the --project directory is served for this run only: offered to keep, not as already served"
    );
    let listed = session.text("#offered").await;
    assert!(listed.contains("given with --project"), "{listed}");
    assert!(!listed.contains("started here"), "{listed}");

    session.click("#done").await;
    let settings = world.settings_file();
    until("the --project directory kept in the settings file", || {
        std::fs::read_to_string(&settings).is_ok_and(|s| s.contains(path_str(&world.project)))
    })
    .await;
    let saved = std::fs::read_to_string(&settings).expect("settings");
    assert!(!saved.contains(path_str(&checkout)), "{saved}");
    session.finish().await;
}

/// The first set-up shown in the welcome window's "Connect opencode" and the line above it.
async fn connect_shown(session: &Session) -> (String, Vec<String>) {
    session.wait_css("#connect[data-state='found']").await;
    let found = session.text("#connect-found").await;
    let commands = session
        .client()
        .execute(
            "return [...document.querySelectorAll('#connect .connect')].map((e) => e.innerText);",
            vec![],
        )
        .await
        .expect("read the set-ups");
    (
        found,
        serde_json::from_value(commands).expect("a list of texts"),
    )
}

/// The real opencode 1.18.33 on `PATH`: its set-up leads. Then a stand-in opencode 2 first
/// on `PATH` (it cannot be installed here: the npm registry reachable serves 1.18.33 only,
/// so a script prints what `opencode --version` prints): opencode 2's leads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_connect_instructions_lead_with_the_installed_opencodes() {
    let real = opencode_bin();
    let real_dir = real.parent().expect("dir").display().to_string();
    let world = AppWorld::first_run();
    let path = format!("{real_dir}:{}", path_with_landstrip());
    let session = Session::start(&world, &[("PATH", &path)]).await;
    session.switch_to_page("welcome.html").await;
    let (found, shown) = connect_shown(&session).await;
    assert_eq!(found, "opencode 1.18.33 is installed here.");
    assert!(
        shown[0].starts_with("For your opencode 1.18.33:")
            && shown[0].contains("opencode plugin opencode-landstrip@0.19.1")
            && shown[0].contains(r#""plugin": ["opencode-landstrip@0.19.1"]"#),
        "{shown:?}"
    );
    assert!(
        shown[1].starts_with("For opencode 2:")
            && shown[1].contains("opencode plugin install opencode-landstrip")
            && shown[1].contains(r#""plugins": ["opencode-landstrip"]"#),
        "{shown:?}"
    );
    session.finish().await;

    let world = AppWorld::first_run();
    let stand_in = world.base.join("opencode2");
    std::fs::create_dir(&stand_in).expect("mkdir");
    let script = stand_in.join("opencode");
    std::fs::write(&script, "#!/bin/sh\necho 2.0.20\n").expect("write the stand-in");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!("{}:{path}", path_str(&stand_in));
    let session = Session::start(&world, &[("PATH", &path)]).await;
    session.switch_to_page("welcome.html").await;
    let (found, shown) = connect_shown(&session).await;
    assert_eq!(found, "opencode 2.0.20 is installed here.");
    assert!(
        shown[0].starts_with("For your opencode 2.0.20:")
            && shown[0].contains("opencode plugin install opencode-landstrip"),
        "{shown:?}"
    );
    assert!(
        shown[1].starts_with("For opencode 1.x:")
            && shown[1].contains("opencode plugin opencode-landstrip@0.19.1"),
        "{shown:?}"
    );
    session.finish().await;
}

/// `ctl add-project` says how to connect opencode next, leading with the set-up for the
/// opencode on ctl's `PATH` (the real opencode 1.18.33), as the welcome window does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_add_project_leads_with_the_installed_opencodes_set_up() {
    let world = AppWorld::new();
    let mut app = world.start_headless();
    app.wait_for_control().await;
    let real = opencode_bin();
    let path = format!(
        "{}:{}",
        real.parent().expect("dir").display(),
        path_with_landstrip()
    );
    let other = world.base.join("other");
    std::fs::create_dir(&other).expect("mkdir");
    let output = tokio::time::timeout(
        EVENT_TIMEOUT,
        world
            .command()
            .env("PATH", &path)
            .args(["ctl", "add-project"])
            .arg(&other)
            .output(),
    )
    .await
    .expect("ctl add-project within the bound")
    .expect("run ctl");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert!(
        stdout.contains(
            "connect opencode to it (opencode 1.18.33 found): opencode plugin \
             opencode-landstrip@0.19.1\n  for opencode 2 instead: opencode plugin install \
             opencode-landstrip\n"
        ),
        "{stdout}"
    );
    app.signal("TERM").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_app_logs_to_the_platform_log_directory() {
    let world = AppWorld::new();
    let mut app = world.start(&[&world.project]);
    app.serving(&world, &world.project).await;
    let dir = world.log_dir();
    let logged = |needle: &str| {
        std::fs::read_dir(&dir).ok().is_some_and(|entries| {
            entries.flatten().any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.starts_with("landstrip-tray.")
                    && name.ends_with(".log")
                    && std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains(needle))
            })
        })
    };
    until("the start-up line in a log file", || {
        logged("landstrip-tray 0.1.0 starting; logs in")
    })
    .await;
    // What the app says about serving reaches the file too, not only stderr.
    let project = path_str(&world.project).to_owned();
    until("a line naming the project", || logged(&project)).await;
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&dir)
        .expect("log dir")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o700, "the log directory is private");
    app.signal("TERM").await;
}

/// Not a test of behaviour: writes docs/welcome-{light,dark}.png (`xvfb-run -a -s "-screen 0
/// 1280x800x24" dbus-run-session -- cargo test -p landstrip-tray-tests --test first_run --
/// --ignored --exact screenshots_welcome`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/ screenshots"]
async fn screenshots_welcome() {
    let out = landstrip_tray_tests::screenshot_dir();
    for (theme, mut env) in landstrip_tray_tests::screenshot_themes() {
        let world = AppWorld::with_project("home/src/webapp");
        std::fs::remove_file(world.settings_file()).expect("first run");
        std::fs::create_dir_all(world.project.join(".git")).expect("mkdir .git");
        let api = world.home.join("src/api");
        std::fs::create_dir_all(api.join(".git")).expect("mkdir api");
        let mut other = presenter(&world, &api);
        // The real opencode 1.18.33 on PATH: its set-up leads, as a user's would.
        let opencode = opencode_bin();
        let path = format!(
            "{}:{}",
            opencode.parent().expect("dir").display(),
            path_with_landstrip()
        );
        env.push(("PATH", &path));
        let project = world.project.clone();
        let session = Session::start_in(&world, &project, &env).await;
        session.switch_to_page("welcome.html").await;
        session.wait_css("body[data-ready='true']").await;
        session.wait_css("#doctor[data-state='ok']").await;
        session.wait_css("#connect[data-state='found']").await;
        session
            .screenshot(&out.join(format!("welcome-{theme}.png")))
            .await;
        session.finish().await;
        let _ = other.process.kill().await;
    }
}
