//! The settings window's activity view of the real app, and the prompt dialog's link into
//! the policy: the real app binary under tauri-driver (WebKitWebDriver) on the test's X
//! display, real landstrip 0.19.2 runs, the activity log written by the core's own writer
//! where the app keeps it, clicks and typing through WebDriver, and the outcome read from
//! disk (sandbox.json parsed by the core's parser) and from the runs' results. Nothing is
//! mocked. See tests/tests/settings.rs for how the session reaches the settings window.

use std::time::Duration;

use fantoccini::Locator;
use landstrip_tray_core::activity::{now_ms, ActivityEntry, ActivityLog, Decider, Outcome};
use landstrip_tray_core::surfaces::control::{Client, Request};
use landstrip_tray_tests::real_app::{path_str, AppWorld};
use landstrip_tray_tests::settings_window::{
    list, open_settings, project_file_valid, switch_to_new_window, until_file, wait_gone,
};
use landstrip_tray_tests::webdriver::Session;
use landstrip_tray_tests::{
    finish, launch_landstrip_with_policy, write_landstrip_policy, Landstrip, EVENT_TIMEOUT, PYTHON,
    WRITE,
};
use tokio::time::Instant;

/// Pauses prompts over the control socket: a request nothing allows is then denied at
/// once (and logged) instead of asking, and one the policy allows still goes through.
async fn pause(world: &AppWorld) {
    let mut client = Client::connect(&world.control_socket())
        .await
        .expect("connect to the control socket");
    client
        .request(&Request::Pause { secs: None })
        .await
        .expect("pause");
}

/// How many elements match `css` now.
async fn count(session: &Session, css: &str) -> usize {
    session
        .bounded(
            &format!("count {css}"),
            session.client().find_all(Locator::Css(css)),
        )
        .await
        .len()
}

/// The table row (a CSS selector) whose target cell shows `file_name`.
async fn row_of(session: &Session, outcome: &str, file_name: &str) -> String {
    let rows = format!("table.activity tr.outcome-{outcome}");
    let deadline = Instant::now() + EVENT_TIMEOUT;
    loop {
        let found = session
            .bounded(
                "activity rows",
                session.client().find_all(Locator::Css(&rows)),
            )
            .await;
        for row in found {
            let text = session.bounded("row text", row.text()).await;
            if text.contains(file_name) {
                let i = session
                    .bounded("row index", row.attr("data-row"))
                    .await
                    .expect("data-row");
                return format!("table.activity tr[data-row='{i}']");
            }
        }
        assert!(
            Instant::now() < deadline,
            "no {outcome} row for {file_name} within {EVENT_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_the_policy_allowed_shows_the_entry_that_allowed_it_focused_on_the_policy_view() {
    let world = AppWorld::new();
    let sub = world.outside.join("sub");
    std::fs::create_dir_all(&sub).expect("mkdir");
    let (wide, narrow) = (path_str(&world.outside), path_str(&sub));
    let session = Session::start(&world, &[]).await;
    // landstrip's own policy is built before the entries exist (as when they are added
    // during a run), so it asks, and the app answers by the entries on disk now.
    let landstrip_policy = write_landstrip_policy(&world.home, &world.project, world.root.path());
    // Two entries cover the write: the more specific one answered it.
    world.write_project_policy(&serde_json::json!({
        "filesystem": {"allowWrite": ["keep", wide, narrow]}
    }));
    let target = sub.join("auto.txt");
    let run = launch_landstrip_with_policy(
        Landstrip::V0_19,
        &landstrip_policy,
        &world.project,
        &world.home,
        session.port(&world),
        None,
        &[PYTHON, "-c", WRITE, path_str(&target)],
    );
    let done = finish(run).await;
    assert_eq!(done.stdout.trim(), "ok", "allowed by the policy: {done:?}");
    let logged = world
        .activity_entry("the policy's allow", |e| {
            e["subject"] == path_str(&target) && e["by"] == "policy"
        })
        .await;
    assert_eq!(logged["outcome"], "allow");

    open_settings(&world, &session, "activity").await;
    let row = row_of(&session, "allow", "auto.txt").await;
    let text = session.text(&row).await;
    assert!(text.contains("policy"), "who decided: {text}");
    // The program's cell: its name (clipped to the column; the label is the tooltip).
    let program = session
        .attr(&format!("{row} td[data-cell='program']"), "title")
        .await
        .unwrap_or_default();
    assert!(
        program.starts_with("python3"),
        "the program is named: {program}"
    );
    // A row the policy answered offers no grant; it offers the entry.
    assert_eq!(
        count(&session, &format!("{row} button[data-action='grant']")).await,
        0
    );
    session
        .click(&format!("{row} button[data-action='explain']"))
        .await;

    session.wait_css("body[data-view='policy']").await;
    let focused_entry = format!(
        "section[data-file='project'] [data-list='filesystem.allowWrite'] li[data-entry='{narrow}'][data-focused='true']"
    );
    session.wait_css(&focused_entry).await;
    assert_eq!(
        session.focused("data-entry").await.as_deref(),
        Some(narrow),
        "the entry that allowed it has the keyboard focus"
    );
    // The effective column marks it too; the wider entry is not the one.
    session
        .wait_css(&format!(
            "section[data-file='effective'] li[data-entry='{narrow}'][data-focused='true']"
        ))
        .await;
    assert_eq!(
        count(&session, &format!("li[data-entry='{wide}'][data-focused]")).await,
        0
    );
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_write_made_a_grant_writes_the_previewed_entry_and_the_next_run_needs_no_prompt() {
    let world = AppWorld::new();
    let deep = world.outside.join("deep");
    std::fs::create_dir_all(&deep).expect("mkdir");
    let session = Session::start(&world, &[]).await;
    pause(&world).await;
    let denied = deep.join("denied.txt");
    let done = finish(world.write(session.port(&world), &denied)).await;
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");

    open_settings(&world, &session, "activity").await;
    let row = row_of(&session, "deny", "denied.txt").await;
    // Nothing answered it by an entry: no "show the entry".
    assert_eq!(
        count(&session, &format!("{row} button[data-action='explain']")).await,
        0
    );
    session
        .click(&format!("{row} button[data-action='grant']"))
        .await;
    // The preview: the session scope rule's entry, into the project file by default.
    let added = session.wait_css("#grant-panel .diff-add[data-entry]").await;
    let entry = session
        .bounded("the previewed entry", added.attr("data-entry"))
        .await
        .expect("data-entry");
    assert_eq!(
        entry,
        path_str(&deep),
        "the containing directory, as the dialog offers"
    );
    let file = session.text("#grant-file").await;
    assert!(
        file.contains(".opencode/sandbox.json") && file.contains("filesystem.allowWrite"),
        "{file}"
    );
    assert!(
        !world.project_policy().exists(),
        "nothing is written before saving"
    );
    session.click("#grant-save").await;
    let text = until_file(&world, "the previewed entry on disk", |t| {
        list(t, "filesystem.allowWrite").contains(&entry)
    })
    .await;
    project_file_valid(&world);
    assert_eq!(list(&text, "filesystem.allowWrite"), vec![entry.clone()]);
    let said = session.text("#grant-panel .grant-done").await;
    assert!(
        said.contains(path_str(&world.project_policy())),
        "says which file: {said}"
    );

    // The next run's landstrip policy is built from the files (as the plugin builds it), and
    // prompts are still paused: only the saved entry can let this write through.
    let again = deep.join("again.txt");
    let done = finish(world.write(session.port(&world), &again)).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");
    assert_eq!(std::fs::read_to_string(&again).expect("written"), "hello");
    session.finish().await;
}

/// Writes `n` entries into the app's activity log with the core's own writer, before the
/// app starts; every 100th names a `needle` file, every third is a denial.
fn write_log(world: &AppWorld, n: u64) {
    let log = ActivityLog::open(&world.activity_file(), 1 << 30).expect("open the activity log");
    let start = now_ms() - n * 1_000;
    let entries = (0..n)
        .map(|i| ActivityEntry {
            ts: start + i * 1_000,
            project: path_str(&world.project).to_owned(),
            session: Some(format!("ses_{}", i % 7)),
            kind: "filesystem".into(),
            operation: if i % 2 == 0 { "write" } else { "read" }.into(),
            subject: if i % 100 == 0 {
                format!("{}/needle-{i}.txt", path_str(&world.outside))
            } else {
                format!("{}/file-{i}.txt", path_str(&world.outside))
            },
            exe: Some("/usr/bin/python3.11".into()),
            pid: Some(1_000 + (i % 50) as u32),
            outcome: if i % 3 == 0 {
                Outcome::Deny
            } else {
                Outcome::Allow
            },
            by: if i % 3 == 0 {
                Decider::User
            } else {
                Decider::SessionGrant
            },
            detail: None,
            command: None,
            chain: Vec::new(),
        })
        .collect();
    log.record_all(entries);
    log.close();
}

/// The table container's `data-render-ms`, once the render for `total` matches is stamped.
async fn render_ms(session: &Session, total: usize, rows: usize) -> u64 {
    let css = format!("#activity-rows[data-total='{total}'][data-rows='{rows}'][data-render-ms]");
    session
        .attr(&css, "data-render-ms")
        .await
        .and_then(|ms| ms.parse().ok())
        .expect("a number of milliseconds")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_entries_show_a_bounded_page_with_the_total_and_a_text_filter_narrows_it() {
    let world = AppWorld::new();
    write_log(&world, 10_000);
    let session = Session::start(&world, &[]).await;
    open_settings(&world, &session, "activity").await;

    let first = render_ms(&session, 10_000, 100).await;
    assert_eq!(count(&session, "table.activity tbody tr").await, 100);
    let said = session.text("#activity-count").await;
    assert!(said.contains("100 of 10,000"), "{said}");
    // Newest first: the last entry written heads the table.
    let top = session.text("table.activity tbody tr:first-child").await;
    assert!(top.contains("file-9999.txt"), "{top}");

    session.click("#show-more").await;
    render_ms(&session, 10_000, 200).await;
    assert_eq!(count(&session, "table.activity tbody tr").await, 200);

    let filter = session.wait_css("#f-text").await;
    session
        .bounded("filter by text", filter.send_keys("needle"))
        .await;
    let narrowed = render_ms(&session, 100, 100).await;
    assert_eq!(count(&session, "table.activity tbody tr").await, 100);
    assert!(session.text("#activity-count").await.contains("100 of 100"));
    wait_gone(&session, "#show-more").await;
    // Denied only: every third of the hundred (i = 0, 300, 600, … 9,900).
    session.click("#f-decision option[value='deny']").await;
    render_ms(&session, 34, 34).await;
    eprintln!("activity repaint over 10,000 entries: first {first} ms, text filter {narrowed} ms");
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_policy_in_the_dialog_opens_the_policy_view_on_the_prompts_list_and_the_prompt_stays_pending(
) {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let prompt_window = session
        .bounded("the prompt window's handle", session.client().window())
        .await;
    let target = world.outside.join("asked.txt");
    let child = world.write(session.port(&world), &target);
    let id = session.wait_prompt(None).await;

    let before = session
        .bounded("window handles", session.client().windows())
        .await;
    session.click("#edit-policy").await;
    switch_to_new_window(&session, &before, Duration::from_millis(100)).await;
    session.wait_css("body[data-ready='true']").await;
    session.wait_css("body[data-view='policy']").await;
    let selected = session.prop("#policy-project", "value").await;
    assert_eq!(selected.as_deref(), Some(path_str(&world.project)));
    session
        .wait_css(
            "section[data-file='project'] [data-list='filesystem.allowWrite'][data-focused='true']",
        )
        .await;
    assert_eq!(
        session.focused("data-key").await.as_deref(),
        Some("project:filesystem.allowWrite"),
        "the add box of the list a grant would change has the focus"
    );

    // Opening the settings answered nothing.
    let pending = world.ctl_ok(&["pending", "--json"]).await;
    assert!(
        pending.contains(path_str(&target)),
        "still pending: {pending}"
    );
    session
        .bounded(
            "back to the prompt window",
            session.client().switch_to_window(prompt_window),
        )
        .await;
    session
        .wait_css(&format!("body[data-state='prompt'][data-prompt-id='{id}']"))
        .await;
    session.choose("deny").await;
    assert_eq!(finish(child).await.stdout.trim(), "EACCES");
    assert!(!target.exists());
    session.finish().await;
}

/// The README's "Edit policy…": the request keeps waiting, and an entry added there
/// answers it (the policy sweep allows what the new file covers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_added_through_edit_policy_answers_the_waiting_prompt() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let target = world.outside.join("asked.txt");
    let child = world.write(session.port(&world), &target);
    session.wait_prompt(None).await;

    let before = session
        .bounded("window handles", session.client().windows())
        .await;
    session.click("#edit-policy").await;
    switch_to_new_window(&session, &before, Duration::from_millis(100)).await;
    session
        .wait_css("body[data-ready='true'][data-view='policy']")
        .await;
    session
        .wait_css(
            "section[data-file='project'] [data-list='filesystem.allowWrite'][data-focused='true']",
        )
        .await;
    assert_eq!(
        session.focused("data-key").await.as_deref(),
        Some("project:filesystem.allowWrite")
    );
    // Typed into the focused add box, as a person would, and saved with Enter.
    let mut keys: Vec<char> = path_str(&world.outside).chars().collect();
    keys.push(char::from(fantoccini::key::Key::Enter));
    session.press_all(&keys).await;

    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");
    assert_eq!(std::fs::read_to_string(&target).expect("written"), "hello");
    let entry = world
        .activity_entry("for the answered write", |e| {
            e["subject"] == path_str(&target) && e["outcome"] == "allow"
        })
        .await;
    assert_eq!(entry["by"], "policy", "{entry}");
    assert_eq!(world.ctl_ok(&["pending"]).await, "No requests waiting.\n");
    session.finish().await;
}

/// Writes the activity screenshots under docs/ (`cargo test -p landstrip-tray-tests --test
/// settings_activity -- --ignored --exact screenshots_activity`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/ screenshots"]
async fn screenshots_activity() {
    let out = landstrip_tray_tests::screenshot_dir();
    for (theme, env) in landstrip_tray_tests::screenshot_themes() {
        let world = AppWorld::with_project("home/src/webapp");
        world.write_project_policy(&serde_json::json!({
            "filesystem": {"allowWrite": ["target", "~/.cache/cargo"]}
        }));
        write_sample_log(&world);
        let session = Session::start(&world, &env).await;
        open_settings(&world, &session, "activity").await;
        session.wait_css("#activity-rows[data-render-ms]").await;
        session
            .screenshot(&out.join(format!("settings-activity-{theme}.png")))
            .await;
        session.finish().await;
    }
}

/// A plausible hour of one project's activity, for the screenshots.
fn write_sample_log(world: &AppWorld) {
    let home = path_str(&world.home);
    let project = path_str(&world.project);
    let log = ActivityLog::open(&world.activity_file(), 1 << 24).expect("open the activity log");
    let rows: [(&str, &str, String, &str, u32, Outcome, Decider); 12] = [
        (
            "filesystem",
            "write",
            format!("{project}/target/debug/app"),
            "/usr/bin/cargo",
            4120,
            Outcome::Allow,
            Decider::Policy,
        ),
        (
            "filesystem",
            "read",
            format!("{home}/.gitconfig"),
            "/usr/bin/git",
            4133,
            Outcome::Allow,
            Decider::User,
        ),
        (
            "network",
            "connect",
            "140.82.121.4:443".into(),
            "/usr/bin/git",
            4133,
            Outcome::Deny,
            Decider::User,
        ),
        (
            "filesystem",
            "write",
            format!("{home}/.cache/cargo/registry/index"),
            "/usr/bin/cargo",
            4120,
            Outcome::Allow,
            Decider::Policy,
        ),
        (
            "filesystem",
            "write",
            format!("{project}/.env"),
            "/usr/bin/python3.11",
            4188,
            Outcome::Deny,
            Decider::HardDenial,
        ),
        (
            "filesystem",
            "write",
            "/tmp/pytest-of-dev/cache.json".into(),
            "/usr/bin/python3.11",
            4188,
            Outcome::Allow,
            Decider::SessionGrant,
        ),
        (
            "filesystem",
            "write",
            format!("{home}/.config/app/config.toml"),
            "/usr/bin/node",
            4210,
            Outcome::Deny,
            Decider::User,
        ),
        (
            "filesystem",
            "read",
            format!("{home}/.npmrc"),
            "/usr/bin/node",
            4210,
            Outcome::Deny,
            Decider::Timeout,
        ),
        (
            "filesystem",
            "write",
            format!("{project}/target/release/app"),
            "/usr/bin/cargo",
            4251,
            Outcome::Allow,
            Decider::Policy,
        ),
        (
            "filesystem",
            "write",
            format!("{home}/notes/todo.txt"),
            "/usr/bin/python3.11",
            4302,
            Outcome::Withdrawn,
            Decider::RunEnded,
        ),
        (
            "network",
            "connect",
            "151.101.1.7:443".into(),
            "/usr/bin/node",
            4310,
            Outcome::Allow,
            Decider::User,
        ),
        (
            "filesystem",
            "write",
            format!("{project}/target/doc/index.html"),
            "/usr/bin/cargo",
            4333,
            Outcome::Allow,
            Decider::Policy,
        ),
    ];
    let start = now_ms() - 40 * 60 * 1_000;
    let entries = rows
        .into_iter()
        .enumerate()
        .map(
            |(i, (kind, operation, subject, exe, pid, outcome, by))| ActivityEntry {
                ts: start + i as u64 * 197_000,
                project: project.to_owned(),
                session: Some(
                    if i < 6 {
                        "ses_4f2a9c1e7b"
                    } else {
                        "ses_91d03be2aa"
                    }
                    .into(),
                ),
                kind: kind.into(),
                operation: operation.into(),
                subject,
                exe: Some(exe.into()),
                pid: Some(pid),
                outcome,
                by,
                detail: None,
                command: None,
                chain: Vec::new(),
            },
        )
        .collect();
    log.record_all(entries);
    log.close();
}
