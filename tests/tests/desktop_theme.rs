//! Light and dark follow the desktop: the real app binary under Xvfb (WebDriver through
//! tauri-driver) on a private session bus where a mock XDG desktop portal
//! (tests/src/portal.rs, dbusmock) stands in for xdg-desktop-portal, which needs a desktop
//! session that cannot run here. The app reads the portal's `color-scheme` at start and
//! follows its `SettingChanged` signal (src-tauri/src/app/theme.rs); what is checked is
//! what a user sees: the page's `prefers-color-scheme` and the colours it paints with.

use landstrip_tray_tests::notification_server::PrivateBus;
use landstrip_tray_tests::portal::Portal;
use landstrip_tray_tests::real_app::AppWorld;
use landstrip_tray_tests::webdriver::Session;
use std::time::Duration;

/// How long the page may take to follow a change.
const FOLLOW: Duration = Duration::from_secs(10);

/// Waits (bounded by [`FOLLOW`]) until the page's `prefers-color-scheme: dark` is `dark`.
/// Asked again every 20 ms ([`Session::script_until`]), not awaited on the media query's
/// `change` event: in the hidden window WebKit updates `matches` at once but does not
/// always fire `change` (2 runs in 10 waited 30 s for it, while `matches` had flipped
/// within 63 ms in 40 of 40).
async fn wait_scheme(session: &Session, dark: bool) {
    let what = if dark {
        "the page turning dark"
    } else {
        "the page turning light"
    };
    let script = "return matchMedia('(prefers-color-scheme: dark)').matches;";
    let matches = session
        .script_until(what, script, FOLLOW, |v| v.as_bool() == Some(dark))
        .await;
    assert_eq!(
        matches.as_bool(),
        Some(dark),
        "{what}: not within {FOLLOW:?}\nlog:\n{}",
        session.log()
    );
}

/// The colour the page's body is painted with.
async fn background(session: &Session) -> String {
    let script = "return getComputedStyle(document.body).backgroundColor;";
    let value = session
        .bounded(
            "the body's colour",
            session.client().execute(script, vec![]),
        )
        .await;
    value.as_str().expect("a colour").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_windows_follow_the_desktops_colour_scheme_read_at_start_and_changed_later() {
    let world = AppWorld::new();
    let bus = PrivateBus::start(&world.base.join("bus")).await;
    // Version 1 of the portal's interface (only `Read`, two variants deep): the oldest the
    // app must understand. The desktop prefers dark before the app starts.
    let portal = Portal::start_v1(&bus, 1).await;
    let env = [
        ("DBUS_SESSION_BUS_ADDRESS", bus.address.as_str()),
        ("NO_AT_BRIDGE", "1"),
    ];
    let session = Session::start(&world, &env).await;

    wait_scheme(&session, true).await;
    let dark = background(&session).await;

    portal
        .setting_changed("org.freedesktop.appearance", "color-scheme", 2)
        .await;
    wait_scheme(&session, false).await;
    let light = background(&session).await;
    assert_ne!(dark, light, "the page paints differently in dark and light");

    // And again: the app keeps following, not only the first change.
    portal
        .setting_changed("org.freedesktop.appearance", "color-scheme", 1)
        .await;
    wait_scheme(&session, true).await;
    assert_eq!(background(&session).await, dark);
    session.finish().await;
}
