//! The prompt dialog of the real app, driven like a person would: the real app binary
//! under tauri-driver (WebKitWebDriver) on the test's X display, real landstrip 0.19.2 runs
//! whose syscalls it holds, clicks and key presses through WebDriver, and the outcome read
//! from disk (the sandboxed program's file, the sandbox.json files, the activity log), from
//! the program's exit and, where a crashed app would give the same exit, from the wire (a
//! tap between landstrip and the app). Nothing is mocked.
//!
//! The app is a tray app with no window until a prompt arrives, but WebKitWebDriver needs
//! a webview to attach its session to. tauri-driver starts WebKitWebDriver with
//! `TAURI_WEBVIEW_AUTOMATION=true`, and the app it launches inherits that: the app then
//! creates its (hidden) prompt window at start and keeps it (see src-tauri/src/app/dialog/),
//! which is the webview the session drives. Each test has its own tauri-driver on its own
//! ports, and its own home, XDG directories and project; tauri-driver's environment carries
//! them to the app.
//!
//! `cargo test -p landstrip-tray-tests --test dialog -- --ignored screenshots` writes the
//! dialog screenshots under docs/ (see scripts/dialog-screenshots.sh).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fantoccini::key::Key;
use landstrip_tray_tests::real_app::{assert_refused, assert_written, path_str, AppWorld};
use landstrip_tray_tests::tap::Tap;
use landstrip_tray_tests::webdriver::{self, Session};
use landstrip_tray_tests::x11::{self, DIALOG_TITLE};
use landstrip_tray_tests::{finish, until, EVENT_TIMEOUT, PYTHON, WRITE};
use tokio::process::Child;
use tokio::time::Instant;

/// How long the window's linger is in the lifecycle test (`LANDSTRIP_TRAY_DIALOG_LINGER_MS`;
/// 30 s by default).
const LINGER: Duration = Duration::from_millis(2000);

/// The times (seconds since the epoch) of the app's log lines that contain `needle`, read
/// from each line's leading RFC 3339 timestamp (`2026-12-02T15:13:56.123456Z`, ANSI
/// colours around it allowed).
fn logged_at(log: &str, needle: &str) -> Vec<f64> {
    log.lines()
        .filter(|line| line.contains(needle))
        .filter_map(|line| {
            let start = line.find(|c: char| c.is_ascii_digit())?;
            let stamp = line[start..].split(['Z', ' ']).next()?;
            let (date, time) = stamp.split_once('T')?;
            let mut ymd = date.split('-').map(|v| v.parse::<i64>().ok());
            let (y, m, d) = (ymd.next()??, ymd.next()??, ymd.next()??);
            let mut hms = time.split(':');
            let (h, min) = (
                hms.next()?.parse::<f64>().ok()?,
                hms.next()?.parse::<f64>().ok()?,
            );
            let sec = hms.next()?.parse::<f64>().ok()?;
            // Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's).
            let y = if m <= 2 { y - 1 } else { y };
            let era = y.div_euclid(400);
            let yoe = y - era * 400;
            let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
            let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
            let days = era * 146_097 + doe - 719_468;
            Some(days as f64 * 86_400.0 + h * 3_600.0 + min * 60.0 + sec)
        })
        .collect()
}

/// Runs a Python program under landstrip 0.19.2 with an opencode session hello.
fn ask(world: &AppWorld, session: Option<&str>, program: &str, arg: &str) -> Child {
    world.launch(
        world.published_port(),
        session,
        &[PYTHON, "-c", program, arg],
    )
}

/// The entries of `filesystem.allowWrite` in a sandbox.json file (empty if it is missing).
fn allow_write(file: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    let json: serde_json::Value = serde_json::from_str(&text).expect("sandbox.json parses");
    json["filesystem"]["allowWrite"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|v| v.as_str().expect("string entry").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a launched program is still held (has not exited).
fn held(child: &mut Child) -> bool {
    child.try_wait().expect("try_wait").is_none()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_once_writes_the_file_and_the_dialog_shows_the_request() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let target = world.outside.join("once.txt");
    let mut child = world.ask_write(&target);
    session.wait_prompt(None).await;
    assert_eq!(session.text("#subject-text").await, path_str(&target));
    assert_eq!(session.text("#title").await, "Allow write access?");
    assert_eq!(session.text("#reason").await, "not in allowWrite");
    assert!(session.text("#program").await.contains("python3"));
    assert!(held(&mut child), "answered before anyone clicked");

    session.choose("once").await;
    assert_written(&finish(child).await, &target);
    // Nothing else waits: the page goes back to empty.
    session.wait_css("body[data-state='empty']").await;
    // The strict CSP of tauri.conf.json is in force and the page lives with it: nothing
    // of the page's own was refused (ui/shared/csp-watch.js counts from before the body is
    // parsed), its stylesheet applies, and inline style is refused.
    assert_eq!(session.attr("html", "data-csp-violations").await, None);
    let probe = "const s = document.createElement('style'); \
        s.textContent = 'body { --csp-probe: inline; }'; document.head.append(s); \
        const inline = getComputedStyle(document.body).getPropertyValue('--csp-probe'); \
        s.remove(); \
        return [inline, getComputedStyle(document.body).getPropertyValue('--accent').trim()];";
    let result = session
        .bounded("CSP probe", session.client().execute(probe, vec![]))
        .await;
    assert_eq!(
        result,
        serde_json::json!(["", "#3584e4"]),
        "inline style applied, or prompt.css did not"
    );
    // And the watcher counts: the probe's refused inline style is one violation. The
    // event comes asynchronously, so the count is asked again until it moves (bounded).
    let counted_script = "return document.documentElement.dataset.cspViolations || '0';";
    let counted = session
        .script_until("CSP watcher check", counted_script, EVENT_TIMEOUT, |v| {
            v != &serde_json::json!("0")
        })
        .await;
    assert_eq!(
        counted,
        serde_json::json!("1"),
        "csp-watch.js did not count the probe's violation"
    );
    // And no second one follows (an absence has no event: looked at once more later).
    tokio::time::sleep(Duration::from_millis(200)).await;
    let later = session
        .bounded(
            "CSP watcher check",
            session.client().execute(counted_script, vec![]),
        )
        .await;
    assert_eq!(
        later,
        serde_json::json!("1"),
        "more than the probe was refused"
    );
    assert!(allow_write(&world.project_policy()).is_empty());
    assert!(allow_write(&world.global_policy()).is_empty());
    session.finish().await;
}

/// Runs [`WRITE`] on `target` through a [`Tap`] between landstrip and the app; returns the
/// tap, the query it saw, and the run.
async fn ask_write_tapped(
    world: &AppWorld,
    session: &Session,
    target: &Path,
) -> (Tap, serde_json::Value, Child) {
    let mut tap = Tap::start(session.port(world)).await;
    let child = world.write(tap.port, target);
    let query = tap.first_query().await.trap;
    (tap, query, child)
}

/// The app's own deny, by a person (see [`AppWorld::assert_the_app_denied`]).
async fn assert_the_app_denied(
    world: &AppWorld,
    session: &Session,
    tap: &Tap,
    query: &serde_json::Value,
    target: &Path,
) {
    let pid = session.app_pid.expect("the app's pid");
    world
        .assert_the_app_denied(tap, query, path_str(target), "user", pid, || session.log())
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_fails_the_write_with_eacces() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let target = world.outside.join("denied.txt");
    let (tap, query, child) = ask_write_tapped(&world, &session, &target).await;
    session.wait_prompt(None).await;
    session.choose("deny").await;
    assert_refused(&finish(child).await, &target);
    assert_the_app_denied(&world, &session, &tap, &query, &target).await;
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escape_denies() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let target = world.outside.join("escaped.txt");
    let (tap, query, child) = ask_write_tapped(&world, &session, &target).await;
    session.wait_prompt(None).await;
    session.press(Key::Escape.into()).await;
    assert_refused(&finish(child).await, &target);
    assert_the_app_denied(&world, &session, &tap, &query, &target).await;
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_window_denies() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let target = world.outside.join("closed.txt");
    let mut child = world.ask_write(&target);
    session.wait_prompt(None).await;
    assert!(held(&mut child), "answered before the window was closed");
    let pid = session.app_pid.expect("the app's pid");
    let shown = x11::wait_windows(
        pid,
        DIALOG_TITLE,
        true,
        EVENT_TIMEOUT,
        "one mapped dialog window",
        |w| w.len() == 1,
        || session.log(),
    )
    .await;
    x11::request_close(&shown[0]).await;
    // If closing did not deny, the write stays held and this wait fails.
    assert_refused(&finish(child).await, &target);
    session.wait_css("body[data-state='empty']").await;
    session.finish().await;
}

/// The window's real life, without WebDriver (whose automation mode makes the app create
/// the window at start and keep it): none before any prompt; created and shown on the
/// first prompt; hidden once nothing is pending and destroyed only after the linger;
/// created again on the next prompt, where closing it denies. Observed through the X
/// server, polling (see `landstrip_tray_tests::x11`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_window_is_created_on_a_prompt_released_after_the_linger_and_created_again() {
    let world = AppWorld::new();
    let linger_ms = LINGER.as_millis().to_string();
    let mut app = world.start_with(
        &[&world.project],
        &[("LANDSTRIP_TRAY_DIALOG_LINGER_MS", &linger_ms)],
    );
    let port = app.serving(&world, &world.project).await;
    app.wait_for_control().await;
    let pid = app.pid;
    assert!(
        !app.log().contains("WebDriver automation"),
        "the app thinks it is under WebDriver:\n{}",
        app.log()
    );
    let none: Vec<String> = Vec::new();
    assert_eq!(
        x11::windows(pid, DIALOG_TITLE, false).await,
        none,
        "a dialog window before any prompt"
    );

    for round in 1..=2 {
        let target = world.outside.join(format!("round-{round}.txt"));
        let mut child = world.write(port, &target);
        let shown = x11::wait_windows(
            pid,
            DIALOG_TITLE,
            true,
            EVENT_TIMEOUT,
            &format!("round {round}: the dialog window shown for the prompt"),
            |w| w.len() == 1,
            || app.log(),
        )
        .await;
        assert!(held(&mut child), "round {round}: answered by itself");
        // The window hides only after this answer, and lingers from its hiding on.
        let answered = Instant::now();
        if round == 1 {
            let pending: serde_json::Value =
                serde_json::from_str(&world.ctl_ok(&["pending", "--json"]).await)
                    .expect("ctl pending --json");
            let id = pending[0]["id"].as_u64().expect("a pending id").to_string();
            world.ctl_ok(&["answer", &id, "deny"]).await;
        } else {
            // Without WebDriver too, closing the window is an answer: deny.
            x11::request_close(&shown[0]).await;
        }
        assert_refused(&finish(child).await, &target);

        // Hidden (unmapped, still there) once nothing is pending…
        x11::wait_windows(
            pid,
            DIALOG_TITLE,
            true,
            EVENT_TIMEOUT,
            &format!("round {round}: the dialog hidden once nothing is pending"),
            |w| w.is_empty(),
            || app.log(),
        )
        .await;
        // …and destroyed after the linger.
        x11::wait_windows(
            pid,
            DIALOG_TITLE,
            false,
            LINGER + EVENT_TIMEOUT,
            &format!("round {round}: the dialog window destroyed after the linger"),
            |w| w.is_empty(),
            || app.log(),
        )
        .await;
        // Measured from the answer, which comes before the hiding: never short, however
        // late a busy machine lets this test see the window go.
        let lingered = answered.elapsed();
        assert!(
            lingered >= LINGER,
            "round {round}: destroyed {lingered:?} after the answer, the linger is {LINGER:?}"
        );
        app.wait_for_log_count("destroying its webview", round)
            .await;
        // The app's own times of the hiding and the destroying (read from its log, so a
        // busy machine that lets this test look late cannot make the linger look short,
        // and cannot make a window destroyed at once look kept either).
        let log = app.log();
        let destroyed = logged_at(&log, "prompt dialog idle: destroying its webview");
        let Some(&destroyed) = destroyed.get(round - 1) else {
            panic!("round {round}: the destroying is not in the log:\n{log}");
        };
        // The round's first hiding after the window was last shown.
        let shown_at = logged_at(&log, "dialog shown")
            .into_iter()
            .filter(|t| *t <= destroyed)
            .fold(f64::NEG_INFINITY, f64::max);
        let Some(hidden) = logged_at(&log, "prompt dialog hidden")
            .into_iter()
            .find(|t| *t >= shown_at)
        else {
            panic!("round {round}: no hiding after the window was shown:\n{log}");
        };
        assert!(
            destroyed - hidden >= LINGER.as_secs_f64() - 0.01,
            "round {round}: destroyed {:.3} s after it was hidden; the linger is {LINGER:?}",
            destroyed - hidden
        );
        app.assert_running();
    }
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_for_session_lets_a_later_write_under_the_scope_through_without_a_prompt() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let first = world.outside.join("first.txt");
    let child = world.ask_write(&first);
    session.wait_prompt(None).await;
    session.choose("session").await;
    assert_written(&finish(child).await, &first);

    // Under the same scope (the outside directory): nobody answers, yet it goes through.
    let second = world.outside.join("second.txt");
    assert_written(&finish(world.ask_write(&second)).await, &second);
    let entry = world
        .activity_entry("for the second write", |e| {
            e["subject"] == path_str(&second)
        })
        .await;
    assert_eq!(
        entry["by"], "session_grant",
        "the second write was not settled by the session grant: {entry}"
    );
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_for_project_adds_the_previewed_entry_to_the_project_file() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let target = world.outside.join("project.txt");
    let mut child = world.ask_write(&target);
    session.wait_prompt(None).await;
    session.choose("project").await;
    session
        .wait_css("body[data-step='scope'][data-armed='true']")
        .await;
    assert_eq!(
        session.attr("#preview-file", "title").await.as_deref(),
        Some(path_str(&world.project_policy()))
    );
    let added = session.text("#preview-diff .add").await;
    let entry: String = serde_json::from_str(added.trim().trim_start_matches('+').trim())
        .unwrap_or_else(|e| panic!("the previewed entry {added:?}: {e}"));
    // The suggested scope outside home and project is the containing directory.
    assert_eq!(entry, path_str(&world.outside));
    assert_eq!(
        session.text("#preview-diff .key").await,
        "filesystem.allowWrite"
    );
    assert!(held(&mut child), "the preview must not answer");
    assert!(
        !world.project_policy().exists(),
        "the preview must not write"
    );

    session.click("#confirm").await;
    assert_written(&finish(child).await, &target);
    assert_eq!(allow_write(&world.project_policy()), vec![entry]);
    assert!(allow_write(&world.global_policy()).is_empty());
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_globally_adds_the_chosen_scope_to_the_global_file() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let target = world.outside.join("global.txt");
    let child = world.ask_write(&target);
    session.wait_prompt(None).await;
    session.press('g').await;
    session
        .wait_css("body[data-step='scope'][data-armed='true']")
        .await;
    // Pick the exact path instead of the suggested directory.
    session.click("#scope-exact").await;
    let added = session.text("#preview-diff .add").await;
    assert!(added.contains(path_str(&target)), "{added:?}");
    assert_eq!(
        session.attr("#preview-file", "title").await.as_deref(),
        Some(path_str(&world.global_policy()))
    );

    session.press(Key::Enter.into()).await;
    assert_written(&finish(child).await, &target);
    assert_eq!(
        allow_write(&world.global_policy()),
        vec![path_str(&target).to_owned()]
    );
    assert!(!world.project_policy().exists());
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_pressed_as_the_dialog_appears_is_ignored_and_a_later_one_works() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    // The input delay is the page's timer of half a second (ui/prompt/delay.js; the
    // README's promise): held, it ends when this test releases it, not after half a second
    // of wall time, which a loaded machine may spend before the keys below land.
    session.hold_timers(Duration::from_millis(500)).await;
    let target = world.outside.join("delayed.txt");
    let mut child = world.ask_write(&target);
    session
        .wait_css("body[data-state='prompt'][data-armed='false']")
        .await;
    // The window is on screen and its delay has started (a prompt rendered into the
    // hidden window starts it only as the window appears).
    assert_eq!(
        session.held_timers().await,
        1,
        "the prompt's input delay: one timer of half a second"
    );
    session.press_all(&['o', Key::Enter.into()]).await;
    let count: u32 = session
        .attr("body", "data-swallowed")
        .await
        .map_or(0, |count| count.parse().expect("a number"));
    // Each key is either swallowed or handled when the command returns: one that
    // answered leaves the count short.
    assert!(
        count >= 2,
        "a key pressed during the input delay answered: {count} of 2 swallowed"
    );
    assert!(
        held(&mut child),
        "a key pressed during the input delay answered"
    );
    assert!(!target.exists());
    assert_eq!(
        session.attr("body", "data-armed").await.as_deref(),
        Some("false"),
        "the input delay ended before its timer"
    );

    // The delay ends; the prompt is still there, still held, and a key now answers it.
    assert_eq!(session.release_timers().await, 1, "the input delay's timer");
    session.wait_prompt(None).await;
    assert!(
        held(&mut child),
        "the prompt was answered as its input delay ended"
    );
    session.press('o').await;
    assert_written(&finish(child).await, &target);
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_shows_1_of_2_and_moves_on_to_the_second() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let first = world.outside.join("a/first.txt");
    let second = world.outside.join("b/second.txt");
    for dir in [&first, &second] {
        std::fs::create_dir_all(dir.parent().expect("parent")).expect("mkdir");
    }
    let first_child = world.ask_write(&first);
    let first_id = session.wait_prompt(None).await;
    let mut second_child = world.ask_write(&second);
    // The second one waits behind the first, which stays on screen.
    assert_eq!(session.text("#queue:not([hidden])").await, "1 of 2");
    assert_eq!(session.text("#subject-text").await, path_str(&first));
    // Different directories: no offer to answer both at once.
    assert!(!session.displayed("#bulk").await);

    session.choose("once").await;
    assert_written(&finish(first_child).await, &first);
    let second_id = session.wait_prompt(Some(&first_id)).await;
    assert_ne!(first_id, second_id);
    assert_eq!(session.text("#subject-text").await, path_str(&second));
    session.wait_css("#queue[hidden]").await;
    assert!(held(&mut second_child));
    session.choose("once").await;
    assert_written(&finish(second_child).await, &second);
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_under_one_scope_are_answered_at_once() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let first = world.outside.join("one.txt");
    let second = world.outside.join("two.txt");
    let first_child = world.ask_write(&first);
    session.wait_prompt(None).await;
    let second_child = world.ask_write(&second);
    let label = session.text("#bulk:not([hidden]) .label").await;
    let outside = path_str(&world.outside);
    assert_eq!(
        label,
        format!("Allow all 2 pending under {outside} for this session")
    );
    session.click("#bulk").await;
    assert_written(&finish(first_child).await, &first);
    assert_written(&finish(second_child).await, &second);
    session.wait_css("body[data-state='empty']").await;
    session.finish().await;
}

/// "Allow all" never allows a private key waiting in the same scope: its label counts only
/// what it will allow, and the key is still asked about afterwards (and denied here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_all_counts_and_answers_only_what_it_allows_never_a_key_beside_them() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let (one, key, three) = (
        world.outside.join("one.txt"),
        world.outside.join("id_rsa"),
        world.outside.join("three.txt"),
    );
    let one_child = world.ask_write(&one);
    let first_id = session.wait_prompt(None).await;
    let key_child = world.ask_write(&key);
    let three_child = world.ask_write(&three);
    // Once the page knows all three, the label counts two: this one and three.txt.
    let shown = session
        .script_until(
            "the queue and the bulk label",
            "return [document.getElementById('queue').textContent, \
                     document.getElementById('bulk').hidden, \
                     document.getElementById('bulk-label').textContent];",
            EVENT_TIMEOUT,
            |v| v[0] == "1 of 3",
        )
        .await;
    let outside = path_str(&world.outside);
    assert_eq!(
        shown,
        serde_json::json!([
            "1 of 3",
            false,
            format!("Allow all 2 pending under {outside} for this session")
        ])
    );
    session.click("#bulk").await;
    assert_written(&finish(one_child).await, &one);
    assert_written(&finish(three_child).await, &three);
    // The key is still waiting, on screen, and says what it is.
    session.wait_prompt(Some(&first_id)).await;
    assert_eq!(session.text("#subject-text").await, path_str(&key));
    session.wait_css("body[data-sensitive='true']").await;
    session.choose("deny").await;
    let done = finish(key_child).await;
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");
    assert!(!key.exists(), "the key was written");
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_whose_run_ends_disappears_with_a_note() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    let target = world.outside.join("withdrawn.txt");
    let mut child = world.ask_write(&target);
    session.wait_prompt(None).await;
    child.kill().await.expect("kill the run");
    let notice = session.text("#notice:not([hidden])").await;
    assert!(notice.contains("withdrawn"), "{notice:?}");
    session.wait_css("body[data-state='empty']").await;
    assert!(!target.exists());
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sensitive_path_defaults_to_deny_and_needs_a_second_confirmation() {
    let world = AppWorld::new();
    std::fs::create_dir_all(world.home.join(".ssh")).expect("mkdir .ssh");
    let session = Session::start(&world, &[]).await;
    let target = world.home.join(".ssh/config");

    // Enter answers the default, which is Deny.
    let child = world.ask_write(&target);
    session.wait_prompt(None).await;
    session.assert_sensitive_deny_first("SSH keys").await;
    session.press(Key::Enter.into()).await;
    assert_refused(&finish(child).await, &target);

    // "For session" asks again; only the explicit confirmation allows.
    let mut child = world.ask_write(&target);
    let id = session.wait_prompt(None).await;
    session.choose("session").await;
    assert!(
        !session
            .enabled("body[data-step='confirm'][data-armed='true'] #confirm")
            .await,
        "confirmable before the box is ticked"
    );
    assert_eq!(
        session.focused("id").await.as_deref(),
        Some("back"),
        "the safe choice has the focus"
    );
    assert!(held(&mut child), "answered before the confirmation");
    assert_eq!(session.attr("body", "data-prompt-id").await, Some(id));
    session.click("#confirm-check").await;
    session.click("#confirm").await;
    assert_written(&finish(child).await, &target);
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_network_prompt_offers_no_file_entries_and_its_session_answer_covers_the_next_connect() {
    let world = AppWorld::new();
    // A real loopback server, counting the connections that reach it.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port().to_string();
    let target = format!("127.0.0.1:{port}");
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        while let Ok((_connection, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
        }
    });
    let session = Session::start(&world, &[]).await;
    // Two runs of one opencode session, as two bash calls of an agent are.
    let connect = || {
        world.launch(
            world.published_port(),
            Some("ses_net"),
            &[PYTHON, "-c", CONNECT, "127.0.0.1", &port],
        )
    };

    let mut first = connect();
    let first_id = session.wait_prompt(None).await;
    assert_eq!(session.text("#title").await, "Allow network connection?");
    assert_eq!(session.text("#subject-text").await, target);
    // No policy field can hold an address and port: nothing that writes a file.
    assert_eq!(
        session.offered().await,
        ["session", "deny_session", "deny", "once"],
        "the choices of a network prompt"
    );
    // Nor do their keys do anything.
    session.press_all(&['p', 'g', 'n', 'e']).await;
    assert_eq!(
        session.attr("body", "data-step").await.as_deref(),
        Some("main"),
        "a key of a choice not offered opened a step"
    );
    assert!(held(&mut first), "a key of a choice not offered answered");
    session.choose("session").await;
    let done = finish(first).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");

    // The same target again in the same session: allowed without asking.
    let second = connect();
    let done = tokio::select! {
        done = finish(second) => done,
        asked = session.wait_prompt(Some(&first_id)) => panic!(
            "the second connect to {target} was asked again ({asked}): the session answer did not cover it"
        ),
    };
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");
    let entry = world
        .activity_entry("for the second connect", |e| {
            e["subject"] == target.as_str() && e["by"] != "user"
        })
        .await;
    assert_eq!(
        (&entry["operation"], &entry["outcome"], &entry["by"]),
        (&"connect".into(), &"allow".into(), &"session_grant".into()),
        "{entry}"
    );
    until("both connects reached the server", || {
        accepted.load(Ordering::SeqCst) == 2
    })
    .await;
    assert!(!world.project_policy().exists() && !world.global_policy().exists());
    session.finish().await;
}

/// Not a test of behaviour: regenerates docs/dialog-*.png (scripts/dialog-screenshots.sh).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/ screenshots; run by scripts/dialog-screenshots.sh"]
async fn screenshots() {
    let out = landstrip_tray_tests::screenshot_dir();
    for (theme, env) in landstrip_tray_tests::screenshot_themes() {
        // The project in the home directory, as it usually is: paths read as ~/….
        let world = AppWorld::with_project("home/src/webapp");
        std::fs::create_dir_all(world.home.join(".ssh")).expect("mkdir .ssh");
        std::fs::create_dir_all(world.home.join("notes")).expect("mkdir notes");
        std::fs::create_dir_all(world.home.join(".cache/pip")).expect("mkdir");
        std::fs::write(world.home.join(".cache/pip/selfcheck.json"), "{}").expect("write");
        std::fs::create_dir_all(world.global_policy().parent().expect("dir")).expect("mkdir");
        // Reads of the home directory ask (the plugin's defaults deny /home; this home is
        // elsewhere).
        std::fs::write(
            world.global_policy(),
            "{\n  \"filesystem\": {\n    \"denyRead\": [\"~\"],\n    \"allowWrite\": [\"~/.cache/opencode\"]\n  }\n}\n",
        )
        .expect("global policy");
        let session = Session::start(&world, &env).await;
        let session_id = Some("ses_4f2a9c1e7b");
        let shots: [(&str, &str, PathBuf); 4] = [
            ("write", WRITE, world.home.join("notes/todo.txt")),
            ("read", READ, world.home.join(".cache/pip/selfcheck.json")),
            ("network", CONNECT, PathBuf::from("127.0.0.1")),
            ("sensitive", WRITE, world.home.join(".ssh/config")),
        ];
        let mut previous = None;
        for (name, program, arg) in shots {
            let child = ask(&world, session_id, program, path_str(&arg));
            let id = session.wait_prompt(previous.as_deref()).await;
            session
                .screenshot(&out.join(format!("dialog-{name}-{theme}.png")))
                .await;
            // The second steps: the preview of a project grant, the sensitive confirmation.
            let second = match name {
                "write" => Some(("project", "scope", "project")),
                "sensitive" => Some(("session", "confirm", "sensitive-confirm")),
                _ => None,
            };
            if let Some((choice, step, file)) = second {
                session.choose(choice).await;
                session
                    .wait_css(&format!("body[data-step='{step}'][data-armed='true']"))
                    .await;
                session
                    .screenshot(&out.join(format!("dialog-{file}-{theme}.png")))
                    .await;
                session.click("#back").await;
            }
            session.choose("deny").await;
            finish(child).await;
            previous = Some(id);
        }
        session.finish().await;
        command_chain_screenshots(&out, theme, &env).await;
    }
}

/// The npm toolchain of [`command_chain_screenshots`]: nvm's node in the home, node-gyp in
/// the project; each a few lines that do what the real one does on the way to the write.
const NVM_BIN: &str = ".nvm/versions/node/v20.11.1/bin";
const NPM_CLI: &str = ".nvm/versions/node/v20.11.1/lib/node_modules/npm/bin/npm-cli.js";
/// npm running an install script: `sh -c SCRIPT` with the project's .bin first in PATH.
const FAKE_NPM_CLI: &str = r#"
const { spawnSync } = require('child_process');
const path = require('path');
const bin = path.join(process.cwd(), 'node_modules', '.bin');
const run = spawnSync('sh', ['-c', 'node-gyp rebuild'], {
  stdio: 'inherit', env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
});
process.exit(run.status === null ? 1 : run.status);
"#;
/// node-gyp fetching the headers for the running node into its cache.
const FAKE_NODE_GYP: &str = r#"
const fs = require('fs');
const path = require('path');
const os = require('os');
fs.writeFileSync(path.join(os.homedir(), '.cache/node-gyp/20.11.1/installVersion'), '11\n');
"#;

/// Not a test of behaviour: the dialog for a write behind a forking command, the way an
/// opencode agent's `npm ci` reaches it (bash -lc → npm → sh -c → node-gyp), with the
/// session's title and the agent's words from a store of opencode's shape; then the same
/// prompt with the session limited (15 min, only this program), and every command line in
/// full. The real landstrip and node run it; the npm and node-gyp scripts are stand-ins.
async fn command_chain_screenshots(out: &Path, theme: &str, env: &[(&str, &str)]) {
    let world = AppWorld::with_project("home/src/app");
    let home = &world.home;
    let write = |rel: &Path, text: &str, mode: u32| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(rel.parent().expect("dir")).expect("mkdir");
        std::fs::write(rel, text).expect("write");
        std::fs::set_permissions(rel, std::fs::Permissions::from_mode(mode)).expect("chmod");
    };
    write(&home.join(NPM_CLI), FAKE_NPM_CLI, 0o644);
    write(
        &home.join(NVM_BIN).join("npm"),
        &format!("#!/bin/sh\nexec node \"$HOME/{NPM_CLI}\" \"$@\"\n"),
        0o755,
    );
    // As nvm sets it up: the login shell opencode's bash tool starts finds nvm's npm.
    write(
        &home.join(".profile"),
        &format!("export PATH=\"$HOME/{NVM_BIN}:$PATH\"\n"),
        0o644,
    );
    let gyp = world.project.join("node_modules/node-gyp/bin/node-gyp.js");
    write(&gyp, FAKE_NODE_GYP, 0o644);
    write(
        &world.project.join("node_modules/.bin/node-gyp"),
        &format!("#!/bin/sh\nexec node \"{}\" \"$@\"\n", gyp.display()),
        0o755,
    );
    std::fs::create_dir_all(home.join(".cache/node-gyp/20.11.1")).expect("mkdir the cache");
    let session_id = "ses_8c1d4e2f0a";
    opencode_store(
        &world,
        session_id,
        "Fix the failing native build",
        "npm ci && npm test",
        "Install dependencies and run the tests",
    );

    let session = Session::start(&world, env).await;
    let child = world.launch(
        world.published_port(),
        Some(session_id),
        &["/bin/bash", "-lc", "npm ci && npm test"],
    );
    session.wait_prompt(None).await;
    session
        .screenshot(&out.join(format!("dialog-chain-{theme}.png")))
        .await;
    session.press('c').await;
    session.wait_css("#command-full:not([hidden])").await;
    session
        .screenshot(&out.join(format!("dialog-chain-full-{theme}.png")))
        .await;
    session.press('c').await;
    session.wait_css("#command-full[hidden]").await;
    // 1 hour (the default) → 8 hours → until quit → this run → 5 min → 15 min; then only
    // this program.
    session.press_all(&['t', 't', 't', 't', 't', 'r']).await;
    session.wait_css("#program-only:checked").await;
    assert_eq!(
        session.prop("#lifetime", "value").await.as_deref(),
        Some("15m")
    );
    session
        .screenshot(&out.join(format!("dialog-limits-{theme}.png")))
        .await;
    session.choose("deny").await;
    finish(child).await;
    session.finish().await;
}

/// A store of opencode 1.18's shape (`$XDG_DATA_HOME/opencode/opencode.db`) with the
/// session `id` titled `title`, running one bash call of `command` described as `said`.
/// Written with python's sqlite3, as opencode's own SQLite file.
fn opencode_store(world: &AppWorld, id: &str, title: &str, command: &str, said: &str) {
    let db = world.base.join("data/opencode/opencode.db");
    std::fs::create_dir_all(db.parent().expect("dir")).expect("mkdir");
    let part = serde_json::json!({
        "type": "tool", "tool": "bash", "callID": "call_1",
        "state": {"status": "running", "input": {"command": command, "description": said}},
    });
    let script = "import sqlite3, sys\n\
        db = sqlite3.connect(sys.argv[1])\n\
        db.executescript('CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT, title TEXT NOT NULL, time_created INTEGER, time_updated INTEGER); CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT NOT NULL, time_created INTEGER, time_updated INTEGER, data TEXT NOT NULL);')\n\
        db.execute('INSERT INTO session (id, title) VALUES (?, ?)', (sys.argv[2], sys.argv[3]))\n\
        db.execute('INSERT INTO part (id, message_id, session_id, data) VALUES (?, ?, ?, ?)', ('prt_1', 'msg_1', sys.argv[2], sys.argv[4]))\n\
        db.commit()\n";
    let status = std::process::Command::new(PYTHON)
        .args(["-c", script, path_str(&db), id, title, &part.to_string()])
        .status()
        .expect("run python3");
    assert!(status.success(), "the opencode store was not written");
}

/// Reads argv[1]; prints ok, or EACCES and exits 13.
const READ: &str = r#"
import sys
try:
    open(sys.argv[1]).read()
    print("ok")
except PermissionError as e:
    print("EACCES" if e.errno == 13 else repr(e))
    sys.exit(13)
"#;

/// Connects to argv[1], port argv[2] (9, discard, if not given); prints ok, or EACCES and
/// exits 13.
const CONNECT: &str = r#"
import socket, sys
try:
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 9
    socket.create_connection((sys.argv[1], port), timeout=5).close()
    print("ok")
except PermissionError as e:
    print("EACCES" if e.errno == 13 else repr(e))
    sys.exit(13)
except OSError as e:
    print(repr(e))
"#;

/// A driver's port taken by another process between [`webdriver::free_port`] and the
/// driver's own bind (tauri-driver's, then WebKitWebDriver's) costs a start on fresh
/// ports, not the test: the session comes up and answers a real prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_driver_port_is_taken_starts_on_fresh_ports() {
    let world = AppWorld::new();
    for taken_is_native in [false, true] {
        // Listening, as another process's server would be.
        let holder = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
        let taken = holder.local_addr().expect("addr").port();
        let free = webdriver::free_port();
        let ports = if taken_is_native {
            (free, taken)
        } else {
            (taken, free)
        };
        let session = Session::start_on(&world, &world.base, &[], ports).await;
        let target = world.outside.join(format!("taken-{taken_is_native}.txt"));
        let child = world.ask_write(&target);
        session.wait_prompt(None).await;
        session.choose("once").await;
        assert_written(&finish(child).await, &target);
        session.finish().await;
        drop(holder);
    }
}
