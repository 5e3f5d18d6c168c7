//! The phone page (README, "From your phone") through the real headless app, real
//! landstrip 0.19.2 runs and a real HTTPS client that trusts only the certificate whose
//! fingerprint `ctl web on --json` printed (tests/src/phone.rs): the certificate served is
//! that one, and a client pinned to another refuses it; an unpaired client gets 401 and no
//! request data from the page or the long poll, and its answer (even with a page's token)
//! answers nothing; pairing sets an HttpOnly, Secure, SameSite=Strict cookie; a used or
//! expired token gets 410 (expired: the app's wall clock moved 11 minutes on by
//! libfaketime, the only thing not real here); a POST without the page's anti-forgery
//! token, or with a made-up one, gets 403 and answers nothing; Allow once and Deny on the
//! page reach the sandboxed program; the activity says `by: web` with the device's name; a
//! sensitive request cannot be allowed (once or for the session) from the page unless
//! `webSensitive` says so, and then only with a second tap, and no more once it is set
//! back; a revoked device is refused at once, its answers too; repeated failures get 429.
//! Run after `cargo build -p landstrip-tray`.

use std::path::Path;

use landstrip_tray_tests::phone::{hidden_value, PinnedClient};
use landstrip_tray_tests::phone_page::{assert_still_pending, pair, pair_at, pairing_path, web_on};
use landstrip_tray_tests::real_app::{path_str, AppWorld, RunningApp};
use landstrip_tray_tests::{finish, Finished};
use serde_json::Value;

/// libfaketime as Debian's `faketime` package installs it (scripts/setup.sh --test).
const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

async fn started(world: &AppWorld, env: &[(&str, String)]) -> (RunningApp, u16) {
    let mut app = world.start_headless_with(env);
    app.wait_for_control().await;
    let port = app.serving(world, &world.project).await;
    (app, port)
}

fn assert_written(done: &Finished, target: &Path) {
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");
    assert_eq!(std::fs::read_to_string(target).expect("written"), "hello");
}

fn assert_denied(done: &Finished, target: &Path) {
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");
    assert_eq!(done.code, Some(13), "{done:?}");
    assert!(!target.exists(), "{} was written", target.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paired_phone_answers_held_requests_and_nothing_else_gets_in() {
    let world = AppWorld::new();
    let (mut app, port) = started(&world, &[]).await;
    let page = web_on(&world).await;

    let target = world.outside.join("from-the-phone.txt");
    let (run, id) = world.held_write(port, &target).await;

    // Unpaired: 401, and not a word of the request.
    let refused = page.client.get("/", None).await.expect("GET /");
    assert_eq!(refused.status, 401, "{refused:?}");
    assert!(!refused.body.contains("from-the-phone"), "{}", refused.body);
    let refused = page
        .client
        .get("/", Some("landstrip_device=00ff"))
        .await
        .expect("GET / with a made-up cookie");
    assert_eq!(refused.status, 401, "{refused:?}");
    assert!(!refused.body.contains("from-the-phone"), "{}", refused.body);
    // Nor does the long poll name the waiting set (its version, `v` and the ids).
    let refused = page
        .client
        .get("/changes?since=x", None)
        .await
        .expect("GET /changes");
    assert_eq!(refused.status, 401, "{refused:?}");
    assert!(
        !refused.body.contains(&format!("v{id}")),
        "{}",
        refused.body
    );
    // The certificate served is the one printed.
    assert_eq!(
        page.client.seen().as_deref(),
        Some(page.fingerprint.as_str())
    );
    // A client pinned to another fingerprint does not get through.
    let wrong_pin = page
        .fingerprint
        .replace(|c: char| c.is_ascii_hexdigit(), "0");
    let wrong = PinnedClient::new(&page.url, &wrong_pin);
    let error = wrong
        .get("/", None)
        .await
        .expect_err("a wrong pin was accepted");
    assert!(
        error.contains(&format!("is not the pinned {}", wrong_pin)),
        "{error}"
    );
    // The static assets need no pairing, and carry no data.
    let css = page.client.get("/page.css", None).await.expect("css");
    assert_eq!(css.status, 200, "{css:?}");

    // Pairing: the token is consumed, a second use is 410.
    let path = pairing_path(&world, &page).await;
    let (cookie, paired) = pair_at(&page, &path).await;
    let again = page.client.get(&path, None).await.expect("pair again");
    assert_eq!(again.status, 410, "{again:?}");
    let csp = paired.header("content-security-policy").unwrap_or_default();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("script-src 'self'"),
        "{csp}"
    );

    // The page holds the waiting request, with the dialog's words, in its HTML.
    let shown = page
        .client
        .get("/", Some(&cookie))
        .await
        .expect("GET / paired");
    assert_eq!(shown.status, 200, "{shown:?}");
    assert!(
        shown
            .body
            .contains(path_str(&target).rsplit('/').next().unwrap_or_default()),
        "{}",
        shown.body
    );
    assert!(shown.body.contains("Allow write access?"), "{}", shown.body);
    assert!(shown.body.contains(">Allow once"), "{}", shown.body);
    let token = hidden_value(&shown.body, "token").expect("the page's form token");

    // Without the cookie, even the page's own token answers nothing.
    page.assert_refused(
        &world,
        None,
        &format!("id={id}&choice=deny&token={token}"),
        401,
        &id,
    )
    .await;

    // A cross-site POST (no page token) is refused and answers nothing.
    let forged = page
        .client
        .post_form(
            "/answer",
            Some(&cookie),
            &[("origin", "https://evil.example")],
            &format!("id={id}&choice=once"),
        )
        .await
        .expect("forged POST");
    assert_eq!(forged.status, 403, "{forged:?}");
    assert_still_pending(&world, &id).await;
    // Nor does a made-up token, from the paired browser without an Origin header.
    page.assert_refused(
        &world,
        Some(&cookie),
        &format!("id={id}&choice=once&token=AAAA.BBBB"),
        403,
        &id,
    )
    .await;

    // Allow once from the page: the sandboxed write goes through.
    let allowed = page
        .answer(&cookie, &format!("id={id}&choice=once&token={token}"))
        .await;
    assert_eq!(allowed.status, 303, "{allowed:?}");
    assert_written(&finish(run).await, &target);
    let entry = world
        .activity_entry("for the phone's allow", |e| {
            e["subject"] == path_str(&target)
        })
        .await;
    assert_eq!(entry["by"], "web", "{entry}");
    assert_eq!(entry["outcome"], "allow", "{entry}");
    assert!(
        entry["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("Chrome on Android"),
        "the device's name is not recorded: {entry}"
    );

    // Deny from the page: the sandboxed write fails with EACCES.
    let denied_target = world.outside.join("denied-from-the-phone.txt");
    let (run, id) = world.held_write(port, &denied_target).await;
    let shown = page.client.get("/", Some(&cookie)).await.expect("GET /");
    let token = hidden_value(&shown.body, "token").expect("token");
    let denied = page
        .answer(&cookie, &format!("id={id}&choice=deny&token={token}"))
        .await;
    assert_eq!(denied.status, 303, "{denied:?}");
    assert_denied(&finish(run).await, &denied_target);

    // The device is listed, and revoking it refuses its very next request.
    let devices = world.ctl_json(&["web", "devices"]).await;
    let device = devices[0]["id"]
        .as_u64()
        .unwrap_or_else(|| panic!("{devices}"));
    assert_eq!(devices[0]["name"], "Chrome on Android", "{devices}");
    assert!(devices[0]["last_used_ms"].as_u64().is_some(), "{devices}");
    world.ctl_ok(&["web", "revoke", &device.to_string()]).await;
    let after = page
        .client
        .get("/", Some(&cookie))
        .await
        .expect("GET / revoked");
    assert_eq!(after.status, 401, "{after:?}");
    // Nor can it answer with the last page's token: a request held now stays held.
    let late_target = world.outside.join("after-the-revoke.txt");
    let (run, late) = world.held_write(port, &late_target).await;
    page.assert_refused(
        &world,
        Some(&cookie),
        &format!("id={late}&choice=once&token={token}"),
        401,
        &late,
    )
    .await;
    world.ctl_ok(&["answer", &late, "deny"]).await;
    assert_denied(&finish(run).await, &late_target);

    // Repeated failures from one address: 429 once ten have failed (401 until then).
    let mut statuses = Vec::new();
    for _ in 0..12 {
        statuses.push(
            page.client
                .get("/", Some(&cookie))
                .await
                .expect("GET")
                .status,
        );
    }
    assert!(statuses.contains(&429), "{statuses:?}");
    assert!(
        statuses.iter().all(|s| *s == 401 || *s == 429),
        "{statuses:?}"
    );

    app.assert_running();
    assert_eq!(app.terminate().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sensitive_request_is_answered_at_the_desktop_unless_allowed_with_a_second_tap() {
    let world = AppWorld::new();
    let (mut app, port) = started(&world, &[]).await;
    let page = web_on(&world).await;
    let cookie = pair(&world, &page).await;

    let ssh = world.home.join(".ssh");
    std::fs::create_dir_all(&ssh).expect("mkdir");
    let target = ssh.join("config");
    let (run, id) = world.held_write(port, &target).await;
    let shown = page.client.get("/", Some(&cookie)).await.expect("GET /");
    assert!(shown.body.contains("Sensitive:"), "{}", shown.body);
    assert!(
        shown.body.contains("Answer this at the desktop"),
        "{}",
        shown.body
    );
    assert!(!shown.body.contains(">Allow once"), "{}", shown.body);
    // Sent anyway (with a good token), the allow is refused and the request waits.
    let token = hidden_value(&shown.body, "token").expect("token");
    // Once is refused as the desktop's to allow (403); a session grant of a sensitive
    // location wants the rules' confirmation first, which the phone cannot give while the
    // setting says deny, `confirmed=yes` or not (422).
    for (answer, status) in [
        ("choice=once", 403),
        ("choice=once&confirmed=yes", 403),
        ("choice=session", 422),
        ("choice=session&confirmed=yes", 422),
    ] {
        page.assert_refused(
            &world,
            Some(&cookie),
            &format!("id={id}&{answer}&token={token}"),
            status,
            &id,
        )
        .await;
    }
    // In the phone's words, not `ctl`'s.
    let refused = page
        .answer(&cookie, &format!("id={id}&choice=session&token={token}"))
        .await;
    assert!(
        refused.body.contains("confirmed at the desktop")
            && !refused.body.contains("--confirm-sensitive"),
        "{}",
        refused.body
    );

    // Allowed by the setting: Allow takes a second tap.
    world
        .ctl_ok(&["config", "set", "webSensitive", "allow"])
        .await;
    let shown = page.client.get("/", Some(&cookie)).await.expect("GET /");
    assert!(
        shown.body.contains(">Allow once (confirm next)"),
        "{}",
        shown.body
    );
    let token = hidden_value(&shown.body, "token").expect("token");
    let first = page
        .answer(&cookie, &format!("id={id}&choice=once&token={token}"))
        .await;
    assert_eq!(first.status, 200, "{first:?}");
    assert!(first.body.contains("Yes, allow"), "{}", first.body);
    assert_still_pending(&world, &id).await;
    let token = hidden_value(&first.body, "token").expect("the confirmation's token");
    let second = page
        .answer(
            &cookie,
            &format!("id={id}&choice=once&token={token}&confirmed=yes"),
        )
        .await;
    assert_eq!(second.status, 303, "{second:?}");
    assert_written(&finish(run).await, &target);

    // Set back to deny: a confirmed allow is refused again; Deny still goes through.
    world
        .ctl_ok(&["config", "set", "webSensitive", "deny"])
        .await;
    let keys = ssh.join("authorized_keys");
    let (run, id) = world.held_write(port, &keys).await;
    let shown = page.client.get("/", Some(&cookie)).await.expect("GET /");
    assert!(
        shown.body.contains("Answer this at the desktop"),
        "{}",
        shown.body
    );
    let token = hidden_value(&shown.body, "token").expect("token");
    page.assert_refused(
        &world,
        Some(&cookie),
        &format!("id={id}&choice=once&token={token}&confirmed=yes"),
        403,
        &id,
    )
    .await;
    let denied = page
        .answer(&cookie, &format!("id={id}&choice=deny&token={token}"))
        .await;
    assert_eq!(denied.status, 303, "{denied:?}");
    assert_denied(&finish(run).await, &keys);
    app.assert_running();
    assert_eq!(app.terminate().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_pairing_token_is_gone_and_the_page_comes_back_with_the_app() {
    assert!(
        Path::new(LIBFAKETIME).exists(),
        "{LIBFAKETIME} is missing: run scripts/setup.sh --test"
    );
    let world = AppWorld::new();
    // The app's wall clock (not its monotonic one, which its timers run on) follows the
    // offset in this file, read again at every call.
    let clock = world.base.join("faketime");
    std::fs::write(&clock, "+0\n").expect("clock file");
    let env = [
        ("LD_PRELOAD", LIBFAKETIME.to_owned()),
        ("FAKETIME_TIMESTAMP_FILE", path_str(&clock).to_owned()),
        ("FAKETIME_NO_CACHE", "1".to_owned()),
        ("FAKETIME_DONT_FAKE_MONOTONIC", "1".to_owned()),
    ];
    let (mut app, _) = started(&world, &env).await;
    let page = web_on(&world).await;
    let path = pairing_path(&world, &page).await;
    // Eleven minutes later, for the app.
    std::fs::write(&clock, "+660\n").expect("clock file");
    let late = page.client.get(&path, None).await.expect("pair late");
    assert_eq!(late.status, 410, "{late:?}");
    std::fs::write(&clock, "+0\n").expect("clock file");
    let cookie = pair(&world, &page).await;

    // Restarted, the page is on again at the same address, with the same certificate,
    // and the device is still paired.
    assert_eq!(app.terminate().await, Some(0));
    let (mut app, _) = started(&world, &[]).await;
    let status = world.ctl_json(&["web"]).await;
    assert_eq!(status["on"], true, "{status}");
    assert_eq!(status["url"], Value::from(page.url.clone()), "{status}");
    assert_eq!(
        status["fingerprint"],
        Value::from(page.fingerprint.clone()),
        "{status}"
    );
    let shown = page.client.get("/", Some(&cookie)).await.expect("GET /");
    assert_eq!(shown.status, 200, "{shown:?}");
    let mode = std::fs::metadata(world.base.join("data/landstrip-tray/web/key.der"))
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777)
        .expect("the key file");
    assert_eq!(mode, 0o600);

    // Off is kept off.
    world.ctl_ok(&["web", "off"]).await;
    assert!(
        page.client.get("/", Some(&cookie)).await.is_err(),
        "still served when off"
    );
    assert_eq!(app.terminate().await, Some(0));
    let (mut app, _) = started(&world, &[]).await;
    let status = world.ctl_json(&["web"]).await;
    assert_eq!(status["on"], false, "{status}");
    assert_eq!(app.terminate().await, Some(0));
}

/// The windowed app (under the test's X display) serves the page too, and starts it again
/// with itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_windowed_app_serves_the_page_and_keeps_it_on() {
    let world = AppWorld::new();
    let mut app = world.start(&[&world.project]);
    app.wait_for_control().await;
    let page = web_on(&world).await;
    let cookie = pair(&world, &page).await;
    let shown = page.client.get("/", Some(&cookie)).await.expect("GET /");
    assert_eq!(shown.status, 200, "{shown:?}");
    assert!(shown.body.contains("Nothing is waiting"), "{}", shown.body);
    assert_eq!(app.terminate().await, Some(0));

    let mut app = world.start(&[&world.project]);
    app.wait_for_control().await;
    app.wait_for_log("phone page on at").await;
    let shown = page
        .client
        .get("/", Some(&cookie))
        .await
        .expect("GET / after a restart");
    assert_eq!(shown.status, 200, "{shown:?}");
    assert_eq!(
        page.client.seen().as_deref(),
        Some(page.fingerprint.as_str())
    );
    assert_eq!(app.terminate().await, Some(0));
}
