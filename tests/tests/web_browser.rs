//! The phone page in a real browser: headless Chromium (Debian's, over chromedriver) opens
//! the pairing URL `ctl web pair` printed, sees the request a real landstrip 0.19.2 run
//! holds, and answers it Allow once (the run's write goes through) and, for a second run's
//! request that the page's script brings in without a reload, Deny (the write fails with
//! EACCES). Chromium accepts the self-signed certificate by flag; the certificate itself is
//! checked against the printed fingerprint in tests/tests/web.rs. The `screenshots` test
//! (ignored; run it by name) writes docs/phone-page-light.png and docs/phone-page-dark.png.

use landstrip_tray_tests::chromium::Chromium;
use landstrip_tray_tests::phone::PinnedClient;
use landstrip_tray_tests::real_app::{path_str, AppWorld, RunningApp};
use landstrip_tray_tests::{finish, screenshot_dir};

async fn started(world: &AppWorld) -> (RunningApp, u16, String) {
    let mut app = world.start_headless();
    app.wait_for_control().await;
    let port = app.serving(world, &world.project).await;
    let on = world.ctl_json(&["web", "on"]).await;
    let url = on["url"].as_str().expect("url").to_owned();
    let fingerprint = on["fingerprint"].as_str().expect("fingerprint");
    // What the browser is told to accept is the certificate printed.
    let pinned = PinnedClient::new(&url, fingerprint);
    assert_eq!(
        pinned.get("/page.css", None).await.expect("css").status,
        200
    );
    assert_eq!(pinned.seen().as_deref(), Some(fingerprint));
    (app, port, url)
}

async fn pairing_url(world: &AppWorld) -> String {
    let pairing = world.ctl_json(&["web", "pair"]).await;
    pairing["pairing_url"]
        .as_str()
        .expect("pairing_url")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_pairs_and_answers_allow_once_and_deny() {
    let world = AppWorld::new();
    let (mut app, port, url) = started(&world).await;
    let browser = Chromium::start(false, 640).await;

    let first = world.outside.join("chromium-allowed.txt");
    let (run, id) = world.held_write(port, &first).await;
    browser.goto(&pairing_url(&world).await).await;
    // Redirected to the page, the request in it.
    browser.element(&format!("#request-{id}")).await;
    let current = browser.client().current_url().await.expect("url");
    assert_eq!(current.as_str(), url, "not on the page after pairing");
    let html = browser.source().await;
    assert!(html.contains("chromium-allowed.txt"), "{html}");
    browser
        .click(&format!("#request-{id} button[value=once]"))
        .await;
    let done = finish(run).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");
    assert_eq!(std::fs::read_to_string(&first).expect("written"), "hello");
    browser.element("p.notice").await;

    // A second request arrives while the page is open: its script brings it in, in the
    // same document (a mark set in it now is still there: no reload).
    browser
        .eval("window.__mark = 1; return window.__mark")
        .await;
    let second = world.outside.join("chromium-denied.txt");
    let (run, id) = world.held_write(port, &second).await;
    browser.element(&format!("#request-{id}")).await;
    let mark = browser.eval("return window.__mark ?? null").await;
    assert_eq!(mark, serde_json::json!(1), "the page was reloaded");
    browser
        .click(&format!("#request-{id} button[value=deny]"))
        .await;
    let done = finish(run).await;
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");
    assert_eq!(done.code, Some(13), "{done:?}");
    assert!(!second.exists());
    // No CSP violation stopped the script: it ran (it replaced the list in place).
    let entry = world
        .activity_entry("for the browser's deny", |e| {
            e["subject"] == path_str(&second)
        })
        .await;
    assert_eq!(entry["by"], "web", "{entry}");
    assert!(
        entry["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("Headless Chrome on Linux"),
        "{entry}"
    );
    browser.finish().await;
    app.assert_running();
    assert_eq!(app.terminate().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/phone-page-light.png and docs/phone-page-dark.png; run by name"]
async fn screenshots() {
    let world = AppWorld::new();
    let (mut app, port, _) = started(&world).await;
    let ssh = world.home.join(".ssh");
    std::fs::create_dir_all(&ssh).expect("mkdir");
    std::fs::create_dir_all(world.outside.join("build")).expect("mkdir");
    let (sensitive, _) = world.held_write(port, &ssh.join("config")).await;
    let (plain, id) = world
        .held_write(port, &world.outside.join("build/output.log"))
        .await;
    for (dark, name) in [
        (false, "phone-page-light.png"),
        (true, "phone-page-dark.png"),
    ] {
        let browser = Chromium::start(dark, 780).await;
        browser.goto(&pairing_url(&world).await).await;
        browser.element(&format!("#request-{id}")).await;
        let scheme = browser
            .eval("return matchMedia('(prefers-color-scheme: dark)').matches")
            .await;
        assert_eq!(scheme, serde_json::Value::Bool(dark), "{name}");
        let width = browser.eval("return window.innerWidth").await;
        assert_eq!(width, serde_json::json!(360), "{name}");
        let png = browser.screenshot().await;
        std::fs::write(screenshot_dir().join(name), png).expect("write screenshot");
        browser.finish().await;
    }
    drop((plain, sensitive));
    app.assert_running();
    assert_eq!(app.terminate().await, Some(0));
}
