//! The settings window's Learn view and `ctl policy learn` against the real app binary:
//! real landstrip 0.19.2 runs (with the plugin's session hello) are held, their prompts
//! answered "allow once" through the real control socket as a person at a shell would, and
//! the proposal built from the persisted activity is reviewed and saved through the UI
//! (WebDriver) or ctl. The outcome is read from disk with the core's parser and proved by
//! a new real landstrip run that needs no prompt. Nothing is mocked.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use fantoccini::key::Key;
use landstrip_tray_core::activity::{now_ms, ActivityEntry, ActivityLog, Decider, Outcome};
use landstrip_tray_core::policy::{parse_overrides, FsList};
use landstrip_tray_tests::real_app::{path_str, AppWorld};
use landstrip_tray_tests::settings_window::{
    list, open_learn, project_file_valid, until_file, until_status, wait_gone,
};
use landstrip_tray_tests::webdriver::Session;
use landstrip_tray_tests::{finish, Finished, EVENT_TIMEOUT};

const SESSION: &str = "ses_learn";

/// One real run of session [`SESSION`] writing `targets` in order, each prompt answered
/// once through ctl; returns the run's output (every write went through).
async fn answered_run(world: &AppWorld, port: u16, targets: &[&Path]) -> Finished {
    let child = world.write_each(port, SESSION, targets);
    let answered = world.answer_once(targets.len()).await;
    let wanted: Vec<&str> = targets.iter().map(|t| path_str(t)).collect();
    assert_eq!(answered, wanted, "the prompts came in the order written");
    let done = finish(child).await;
    assert_eq!(done.code, Some(0), "{done:?}");
    done
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_learn_view_proposes_the_widened_entry_and_saves_the_checked_ones() {
    let world = AppWorld::new();
    let other = world.base.join("other");
    let ssh = world.home.join(".ssh");
    for dir in [&other, &ssh] {
        std::fs::create_dir_all(dir).expect("mkdir");
    }
    let session = Session::start(&world, &[]).await;
    let port = session.port(&world);
    let (a, b, c, key) = (
        world.outside.join("a.txt"),
        world.outside.join("b.txt"),
        other.join("c.txt"),
        ssh.join("config"),
    );
    answered_run(&world, port, &[&a, &b, &c, &key]).await;

    open_learn(&world, &session).await;
    let outside = path_str(&world.outside).to_owned();
    let other_entry = path_str(&other).to_owned();
    let line = |entry: &str| format!("li.diff-line.add[data-entry='{entry}']");
    // The two writes under outside/ became one entry for the folder.
    let covers = session.text(&format!("{} .covers", line(&outside))).await;
    assert!(covers.starts_with("covers 2 requests, e.g. "), "{covers}");
    assert!(covers.contains(path_str(&a)), "{covers}");
    session.wait_css(&line(&other_entry)).await;
    // The SSH config is left out, with the reason.
    let left = session
        .text(&format!(".left-out li[data-path='{}']", path_str(&key)))
        .await;
    assert!(left.contains("sensitive"), "{left}");
    let save = session.text("#learn-save").await;
    assert!(save.starts_with("Save 2 entries into "), "{save}");

    // Leave the second one out, by keyboard: Space on its checkbox.
    let checkbox = session
        .wait_css(&format!("{} input[type='checkbox']", line(&other_entry)))
        .await;
    session
        .bounded(
            "uncheck by keyboard",
            checkbox.send_keys(&char::from(Key::Space).to_string()),
        )
        .await;
    session
        .wait_css(&format!("{}[data-checked='false']", line(&other_entry)))
        .await;
    let save = session.text("#learn-save").await;
    assert!(
        save.starts_with("Save 1 entry into ") && save.ends_with(".opencode/sandbox.json"),
        "{save}"
    );
    session.click("#learn-save").await;

    let text = until_file(&world, "the learned entry on disk", |t| {
        !list(t, "filesystem.allowWrite").is_empty()
    })
    .await;
    project_file_valid(&world);
    let parsed = parse_overrides(&text, &world.project_policy()).expect("valid");
    assert_eq!(
        parsed
            .filesystem
            .expect("filesystem")
            .list(FsList::AllowWrite),
        Some(&[outside.clone()][..]),
        "exactly the checked entry: {text}"
    );
    // The page hears the reply after the file is on disk: its status line is waited for.
    let written = path_str(&world.project_policy()).to_owned();
    until_status(&session, "the page says which file it wrote", |status| {
        status.contains(&written)
    })
    .await;
    // Reviewed again: the saved entry is context now, the other still proposed.
    session
        .wait_css(&format!("li.diff-line.context[data-entry='{outside}']"))
        .await;
    wait_gone(&session, &line(&outside)).await;
    session.wait_css(&line(&other_entry)).await;

    // A new real run writing there needs no prompt: nobody answers, and it goes through.
    let fresh = world.outside.join("fresh.txt");
    let done = finish(world.write(port, &fresh)).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");
    assert_eq!(std::fs::read_to_string(&fresh).expect("written"), "hello");
    let pending = world.ctl_ok(&["pending", "--json"]).await;
    assert_eq!(pending.trim(), "[]");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_policy_learn_prints_the_diff_saves_it_and_refuses_a_broken_file() {
    let world = AppWorld::new();
    world.write_project_policy(&serde_json::json!({"filesystem": {"allowWrite": ["keep"]}}));
    let mut app = world.start(&[&world.project]);
    app.wait_for_control().await;
    let port = app.serving(&world, &world.project).await;
    let (a, b) = (world.outside.join("a.txt"), world.outside.join("b.txt"));
    answered_run(&world, port, &[&a, &b]).await;
    let outside = path_str(&world.outside).to_owned();
    let dir = path_str(&world.project).to_owned();

    // Looking writes nothing.
    let before = std::fs::read(world.project_policy()).expect("read");
    let diff = world
        .ctl_ok(&["policy", "learn", &dir, "--session", SESSION])
        .await;
    assert!(
        diff.contains("    keep\n"),
        "the file's entry as context: {diff}"
    );
    assert!(
        diff.contains(&format!("  + {outside}    covers 2 requests, e.g. ")),
        "{diff}"
    );
    assert!(diff.contains("add --save"), "{diff}");
    assert_eq!(std::fs::read(world.project_policy()).expect("read"), before);
    let json = world
        .ctl_ok(&["policy", "learn", &dir, "--since", "1h", "--json"])
        .await;
    let value: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(value["review"]["proposals"][0]["entry"], outside.as_str());
    assert!(value["saved"].is_null());

    let saved = world
        .ctl_ok(&["policy", "learn", &dir, "--session", SESSION, "--save"])
        .await;
    assert!(
        saved.contains(&format!("wrote {}", path_str(&world.project_policy()))),
        "{saved}"
    );
    let text = project_file_valid(&world);
    assert_eq!(
        list(&text, "filesystem.allowWrite"),
        ["keep", outside.as_str()]
    );
    // Nothing more to learn from that session.
    let again = world
        .ctl_ok(&["policy", "learn", &dir, "--session", SESSION, "--save"])
        .await;
    assert!(again.contains("nothing to propose"), "{again}");
    assert!(again.contains("already allowed by the policy"), "{again}");
    assert_eq!(project_file_valid(&world), text);

    // A file that does not parse: refused, exit 1, the reason on stderr, bytes unchanged.
    let broken = b"{\"filesystem\": {\"allowWrite\": [\"keep\",]}}".to_vec();
    std::fs::write(world.project_policy(), &broken).expect("break");
    let refused = world
        .ctl(&["policy", "learn", &dir, "--session", SESSION, "--save"])
        .await;
    assert_eq!(refused.code, Some(1), "{refused:?}");
    assert!(refused.stderr.contains("sandbox.json"), "{refused:?}");
    assert_eq!(refused.stdout, "");
    assert_eq!(std::fs::read(world.project_policy()).expect("read"), broken);
    // A session and a duration together: a usage error.
    let usage = world
        .ctl(&[
            "policy",
            "learn",
            &dir,
            "--session",
            SESSION,
            "--since",
            "1h",
        ])
        .await;
    assert_eq!(usage.code, Some(2), "{usage:?}");
    app.assert_running();
}

const MINUTE_MS: u64 = 60 * 1000;
const HOUR_MS: u64 = 60 * MINUTE_MS;
const DAY_MS: u64 = 24 * HOUR_MS;

/// A time zone (`TZ`) in which it is about noon now, so that "today" holds a record older
/// than an hour whenever the test runs (at 00:30 local time it could not). The `Etc/GMT`
/// names count the other way: `Etc/GMT-5` is five hours ahead of UTC.
fn noon_zone(now: u64) -> String {
    let ahead = 12 - (now / HOUR_MS % 24) as i64; // -11..=12
    match ahead.cmp(&0) {
        Ordering::Equal => "Etc/GMT".to_owned(),
        Ordering::Greater => format!("Etc/GMT-{ahead}"),
        Ordering::Less => format!("Etc/GMT+{}", -ahead),
    }
}

/// What the Learn view shows: the source picked, the proposed entries (sorted) and how
/// many logged requests it looked at.
const LEARN_SHOWN: &str = "
    const source = document.getElementById('learn-source');
    const hint = document.querySelector('section.learn-diff .column-head .hint');
    return {
        source: source ? source.value : null,
        entries: [...document.querySelectorAll('li.diff-line.add')].map((li) => li.dataset.entry).sort(),
        considered: hint ? hint.textContent : null,
    };";

/// Waits (bounded) until the Learn view shows `source` with exactly `entries` proposed
/// from `considered` logged requests; fails saying what it shows instead.
async fn until_learn_shows(
    session: &Session,
    source: &str,
    entries: &[&PathBuf],
    considered: usize,
    records: &str,
) {
    let mut sorted: Vec<&str> = entries.iter().map(|e| path_str(e)).collect();
    sorted.sort_unstable();
    let noun = if considered == 1 {
        "request"
    } else {
        "requests"
    };
    let want = serde_json::json!({
        "source": source,
        "entries": sorted,
        "considered": format!("{considered} logged {noun} looked at."),
    });
    let shown = session
        .script_until(
            &format!("the Learn view from {source}"),
            LEARN_SHOWN,
            EVENT_TIMEOUT,
            |v| v == &want,
        )
        .await;
    assert_eq!(
        shown, want,
        "the Learn view from {source:?} must propose exactly the folders of the records in \
         that range (within {EVENT_TIMEOUT:?}); the records: {records}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_learn_views_time_ranges_propose_exactly_the_records_in_range() {
    let world = AppWorld::new();
    let zone = noon_zone(now_ms());
    let session = Session::start(&world, &[("TZ", zone.as_str())]).await;
    // The page's own clock: now and the local midnight "today" starts at.
    let clock = session
        .bounded(
            "the page's clock",
            session.client().execute(
                "const now = Date.now(); const midnight = new Date(now); \
                 midnight.setHours(0, 0, 0, 0); return [now, midnight.getTime()];",
                vec![],
            ),
        )
        .await;
    let ms = |v: &serde_json::Value| v.as_f64().expect("a time in ms") as u64;
    let (now, midnight) = (ms(&clock[0]), ms(&clock[1]));
    eprintln!(
        "TZ={zone}: the page's local time is {} min after midnight",
        (now - midnight) / MINUTE_MS
    );
    assert!(
        now >= midnight + 3 * HOUR_MS,
        "TZ={zone} should put the page's local time near noon; it is {} min after midnight",
        (now - midnight) / MINUTE_MS
    );

    // One record a person allowed per band, each writing into a folder of its own (the
    // folder is the entry Learn proposes), oldest first as the log is written.
    let band = |name: &str| world.outside.join(name);
    let (ten_days, three_days, earlier_today, recent) = (
        band("ten-days-ago"),
        band("three-days-ago"),
        band("earlier-today"),
        band("ten-minutes-ago"),
    );
    let records = [
        (&ten_days, now - 10 * DAY_MS),
        (&three_days, now - 3 * DAY_MS),
        // Older than an hour, after midnight.
        (&earlier_today, midnight + (now - HOUR_MS - midnight) / 2),
        (&recent, now - 10 * MINUTE_MS),
    ];
    let described: Vec<String> = records
        .iter()
        .map(|(dir, ts)| format!("{} at now-{}min", path_str(dir), (now - ts) / MINUTE_MS))
        .collect();
    let described = format!(
        "{described:?} (midnight: now-{}min)",
        (now - midnight) / MINUTE_MS
    );
    let log = ActivityLog::open(&world.activity_file(), 1 << 30).expect("open the activity log");
    log.record_all(
        records
            .iter()
            .enumerate()
            .map(|(i, (dir, ts))| {
                std::fs::create_dir_all(dir).expect("mkdir");
                ActivityEntry {
                    ts: *ts,
                    project: path_str(&world.project).to_owned(),
                    session: Some("ses_ranges".into()),
                    kind: "filesystem".into(),
                    operation: "write".into(),
                    subject: path_str(&dir.join("out.txt")).to_owned(),
                    exe: Some("/usr/bin/python3.11".into()),
                    pid: Some(4_000 + i as u32),
                    outcome: Outcome::Allow,
                    by: Decider::User,
                    detail: None,
                    command: None,
                    chain: Vec::new(),
                }
            })
            .collect(),
    );
    log.close();

    // The session (chosen first) spans all four: each record can be learned from.
    open_learn(&world, &session).await;
    let all = [&ten_days, &three_days, &earlier_today, &recent];
    until_learn_shows(&session, "session:ses_ranges", &all, 4, &described).await;

    // The last hour, picked from the list by its name as a person does: the recent record
    // only.
    let picker = session.wait_css("#learn-source").await;
    session
        .bounded(
            "pick the last hour",
            picker.select_by_label("the last hour"),
        )
        .await;
    until_learn_shows(&session, "hour", &[&recent], 1, &described).await;

    // The next ranges by keyboard: Down on the (re-rendered, refocused) picker.
    let down = char::from(Key::Down).to_string();
    for (source, shown) in [
        ("today", &[&earlier_today, &recent][..]),
        ("week", &[&three_days, &earlier_today, &recent][..]),
    ] {
        let picker = session.wait_css("#learn-source").await;
        session
            .bounded(&format!("Down to {source}"), picker.send_keys(&down))
            .await;
        until_learn_shows(&session, source, shown, shown.len(), &described).await;
    }
    session.finish().await;
}

/// Not a test of behaviour: writes docs/settings-learn-{light,dark}.png
/// (`xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- cargo test -p
/// landstrip-tray-tests --test settings_learn -- --ignored --exact screenshots_learn`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/ screenshots"]
async fn screenshots_learn() {
    let out = landstrip_tray_tests::screenshot_dir();
    for (theme, env) in landstrip_tray_tests::screenshot_themes() {
        let world = AppWorld::with_project("home/src/webapp");
        world.write_project_policy(&serde_json::json!({
            "filesystem": {"allowWrite": ["target", "~/.cache/opencode"]}
        }));
        let cargo = world.home.join(".cargo/registry");
        let cache = world.home.join(".cache/pip");
        let build = world.outside.join("build");
        let ssh = world.home.join(".ssh");
        for dir in [&cargo, &cache, &build, &ssh] {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        let session = Session::start(&world, &env).await;
        let port = session.port(&world);
        let targets = [
            build.join("main.o"),
            build.join("util.o"),
            build.join("app"),
            cache.join("wheel.json"),
            cargo.join("index.json"),
            ssh.join("known_hosts"),
        ];
        let refs: Vec<&Path> = targets.iter().map(|t| t.as_path()).collect();
        answered_run(&world, port, &refs).await;
        open_learn(&world, &session).await;
        // One entry left out by its checkbox, to show how that looks.
        session
            .click("li.diff-line.add[data-entry='~/.cache'] input[type='checkbox']")
            .await;
        session
            .wait_css("li.diff-line.add[data-entry='~/.cache'][data-checked='false']")
            .await;
        session
            .screenshot(&out.join(format!("settings-learn-{theme}.png")))
            .await;
        session.finish().await;
    }
}
