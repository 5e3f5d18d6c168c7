//! The phone page's section of Settings → General: the real app binary under tauri-driver
//! (WebKitWebDriver) on the test's X display. The switch turns the real HTTPS page on and
//! off (`ctl web --json` says so, and the port answers or not); the address field warns
//! before anything listens beyond loopback; "Pair a phone" draws the pairing URL as a QR
//! code (an SVG of many rectangles) with the fingerprint `ctl web on --json` prints; a
//! device paired over HTTPS (the client pinned to that fingerprint, tests/src/phone.rs,
//! stands in for the phone's browser and keeps its cookie) is listed with Revoke, which
//! ends it: the page it was shown is refused to its cookie from then on.

use std::process::Stdio;

use landstrip_tray_tests::phone::{cookie_pair, PinnedClient};
use landstrip_tray_tests::real_app::AppWorld;
use landstrip_tray_tests::settings_window::{open_settings, type_into, until_status, wait_gone};
use landstrip_tray_tests::webdriver::Session;
use landstrip_tray_tests::EVENT_TIMEOUT;
use serde_json::Value;

/// Opens `url` like a phone's browser (`curl -k`: the page's certificate is self-signed,
/// compared by fingerprint in the test instead); the HTTP status.
async fn open_as_phone(url: &str) -> u16 {
    let out = tokio::time::timeout(
        EVENT_TIMEOUT,
        tokio::process::Command::new("curl")
            .args([
                "-sk",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "-A",
                "Mozilla/5.0 (Linux; Android 14; Pixel 8) Firefox/125.0",
                url,
            ])
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .expect("curl within the timeout")
    .expect("run curl (scripts/setup.sh installs it)");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_phone_page_is_turned_on_paired_revoked_and_turned_off_in_general() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    open_settings(&world, &session, "general").await;
    session.wait_css("#phone [data-web='off']").await;
    assert!(!session.enabled("#web-pair").await, "pairing while off");

    // The field says what an address beyond loopback exposes before anything listens.
    assert_eq!(session.text("#web-bind-warning").await, "");
    type_into(&session, "#web-bind", "0.0.0.0:8443").await;
    let warning = session.text("#web-bind-warning").await;
    assert!(
        warning.contains("Exposed to the local network"),
        "{warning}"
    );
    session.clear("#web-bind").await;
    assert_eq!(session.text("#web-bind-warning").await, "");
    let web = world.ctl_json(&["web"]).await;
    assert_eq!(web["on"], false, "typing turned it on: {web}");

    // On: at loopback, a port chosen and kept.
    session.click("#web-on").await;
    session.wait_css("#phone [data-web='on']").await;
    let said = until_status(&session, "turned on", |s| s.contains("on at")).await;
    let web = world.ctl_json(&["web"]).await;
    assert_eq!(web["on"], true, "{web}");
    let url = web["url"].as_str().expect("a url").to_owned();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    assert_eq!(said, format!("The phone page is on at {url}."));
    assert_eq!(session.text("#web-url").await, url);
    assert_eq!(session.text("#web-bind-warning").await, "");
    let printed = world.ctl_json(&["web", "on"]).await;
    let fingerprint = printed["fingerprint"]
        .as_str()
        .expect("a fingerprint")
        .to_owned();
    assert_eq!(session.text("#web-fingerprint").await, fingerprint);
    // Without a device credential the page gives nothing away.
    assert_eq!(open_as_phone(&url).await, 401);

    // Pair: the URL as a QR code, the fingerprint beside it to compare.
    session.click("#web-pair").await;
    session.wait_css("#web-qr").await;
    let rects = session
        .bounded(
            "count the QR code's rectangles",
            session.client().execute(
                "return document.querySelectorAll('#web-qr .qr-dark rect').length",
                vec![],
            ),
        )
        .await;
    assert!(
        rects.as_u64().unwrap_or(0) > 100,
        "a QR code of {rects} runs"
    );
    assert_eq!(session.text("#web-pairing-fingerprint").await, fingerprint);
    assert_eq!(
        session.focused("id").await.as_deref(),
        Some("web-pair-done")
    );
    let pairing_url = session.text("#web-pairing-url").await;
    assert!(
        pairing_url.starts_with(&format!("{url}pair?token=")),
        "{pairing_url}"
    );
    let expires = session.text("#web-pairing-expires").await;
    assert!(expires.starts_with("Valid until "), "{expires}");

    // A phone opens it: paired (its cookie shows it the page), listed once the view is
    // loaded again.
    let phone = PinnedClient::new(&url, &fingerprint);
    let pairing_path = pairing_url
        .strip_prefix(url.trim_end_matches('/'))
        .unwrap_or_else(|| panic!("{pairing_url} is not under {url}"));
    let paired = phone.get(pairing_path, None).await.expect("pair");
    assert_eq!(paired.status, 303, "{paired:?}");
    let (cookie, _) = cookie_pair(paired.header("set-cookie").expect("a cookie"));
    let shown = phone.get("/", Some(&cookie)).await.expect("GET / paired");
    assert_eq!(shown.status, 200, "{shown:?}");
    let devices = world.ctl_json(&["web", "devices"]).await;
    assert_eq!(devices.as_array().map(Vec::len), Some(1), "{devices}");
    let id = devices[0]["id"].as_u64().expect("an id");
    // The token works once.
    assert_eq!(open_as_phone(&pairing_url).await, 410);
    session.click("#tab-projects").await;
    session.click("#tab-general").await;
    let row = format!("#web-devices li[data-device='{id}']");
    session.wait_css(&row).await;
    let line = session.text(&row).await;
    assert!(line.contains("Chrome on Android"), "{line}");

    session.click(&format!("{row} button")).await;
    wait_gone(&session, &row).await;
    until_status(&session, "revoked", |s| s.contains("is revoked")).await;
    let refused = phone.get("/", Some(&cookie)).await.expect("GET / revoked");
    assert_eq!(refused.status, 401, "{refused:?}");
    assert_eq!(
        world.ctl_json(&["web", "devices"]).await,
        Value::Array(Vec::new())
    );

    // Off: nothing listens any more, and it stays off.
    session.click("#web-on").await;
    session.wait_css("#phone [data-web='off']").await;
    let web = world.ctl_json(&["web"]).await;
    assert_eq!(web["on"], false, "{web}");
    assert_eq!(open_as_phone(&url).await, 0, "the port still answers");
    assert!(!session.enabled("#web-pair").await, "pairing while off");
    session.finish().await;
}

/// Writes the phone page screenshots under docs/ (`cargo test -p landstrip-tray-tests
/// --test settings_phone -- --ignored --exact screenshots`): the page on, a pairing QR code
/// shown with its fingerprint, one paired device.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/ screenshots"]
async fn screenshots() {
    let out = landstrip_tray_tests::screenshot_dir();
    for (theme, env) in landstrip_tray_tests::screenshot_themes() {
        let world = AppWorld::new();
        let session = Session::start(&world, &env).await;
        world.ctl_ok(&["web", "on"]).await;
        let pairing = world.ctl_json(&["web", "pair"]).await;
        let url = pairing["pairing_url"].as_str().expect("a pairing url");
        let status = open_as_phone(url).await;
        assert!((200..400).contains(&status), "pairing answered {status}");
        open_settings(&world, &session, "general").await;
        session.wait_css("#web-devices li").await;
        session.click("#web-pair").await;
        session.wait_css("#web-qr").await;
        // Tall enough for the whole section; scrolled to it, not the settings above it.
        session
            .bounded(
                "make the window taller",
                session.client().set_window_size(980, 920),
            )
            .await;
        session
            .bounded(
                "scroll to the phone page",
                session.client().execute(
                    "document.getElementById('phone').scrollIntoView({block: 'start'})",
                    vec![],
                ),
            )
            .await;
        session
            .screenshot(&out.join(format!("settings-phone-{theme}.png")))
            .await;
        session.finish().await;
    }
}
