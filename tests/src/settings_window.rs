//! Helpers for driving the real app's settings window through WebDriver: opening it over
//! the real control socket, and reading the project's sandbox.json the way the tests check it.

use std::time::Duration;

use fantoccini::wd::WindowHandle;
use landstrip_tray_core::policy::parse_overrides;
use landstrip_tray_core::serving::service::UiRequest;
use landstrip_tray_core::surfaces::control::{Client, Request};
use tokio::time::Instant;

use crate::real_app::AppWorld;
use crate::webdriver::Session;
use crate::EVENT_TIMEOUT;

/// Opens the settings window through the control socket and switches the session to it;
/// returns once its page is up. The window is told by its page (`settings.html`), not by
/// being new: the app may have opened it by itself a moment before (at start without a
/// tray host), and a closed one leaves a stale handle behind.
pub async fn open_settings(world: &AppWorld, session: &Session, view: &str) {
    let mut client = Client::connect(&world.control_socket())
        .await
        .expect("connect to the control socket");
    let response = client
        .request(&open_request(world, view))
        .await
        .expect("OpenSettings");
    eprintln!("OpenSettings: {response:?}");
    session.switch_to_page("settings.html").await;
    session.wait_css("body[data-ready='true']").await;
}

/// The request `landstrip-tray settings` (and the tray menu) sends: the settings window on
/// `view`, for the world's project.
pub fn open_request(world: &AppWorld, view: &str) -> Request {
    Request::OpenSettings {
        show: UiRequest::Settings {
            view: Some(view.into()),
            project: Some(world.project.clone()),
        },
    }
}

/// Waits (bounded, looking every `poll`) for a window handle not in `before`, and switches
/// the session to it; returns the handle. For a window known to be new (the benchmark's
/// opens, the dialog's "Edit policy…").
pub async fn switch_to_new_window(
    session: &Session,
    before: &[WindowHandle],
    poll: Duration,
) -> WindowHandle {
    let deadline = Instant::now() + EVENT_TIMEOUT;
    let handle = loop {
        let now = session
            .bounded("window handles", session.client().windows())
            .await;
        if let Some(new) = now.into_iter().find(|h| !before.contains(h)) {
            break new;
        }
        assert!(
            Instant::now() < deadline,
            "no new window handle within {EVENT_TIMEOUT:?}; log:\n{}",
            session.log()
        );
        tokio::time::sleep(poll).await;
    };
    session
        .bounded(
            "switch to the new window",
            session.client().switch_to_window(handle.clone()),
        )
        .await;
    handle
}

/// The project file's text, checked with the core's parser.
pub fn project_file_valid(world: &AppWorld) -> String {
    let file = world.project_policy();
    let text = std::fs::read_to_string(&file).expect("the project file exists");
    parse_overrides(&text, &file).unwrap_or_else(|e| panic!("{e}: {text}"));
    text
}

/// The entries of a dotted list in a sandbox.json text (none if it does not parse yet).
pub fn list(text: &str, key: &str) -> Vec<String> {
    let Ok(json) = serde_json::from_str::<serde_json::Value>(text) else {
        return Vec::new();
    };
    let (a, b) = key.split_once('.').expect("dotted");
    json[a][b]
        .as_array()
        .map(|l| {
            l.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Waits (bounded) until `check` holds for the project file's text.
pub async fn until_file(world: &AppWorld, what: &str, check: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + EVENT_TIMEOUT;
    loop {
        let text = std::fs::read_to_string(world.project_policy()).unwrap_or_default();
        if check(&text) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within {EVENT_TIMEOUT:?}; file: {text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Types `text` into the element matching `css`. The page re-renders a list when a policy
/// file changes (its own saves echo back through the file watch), which can replace the
/// element between finding and typing: then it is found again (typing never starts on a
/// stale element, so nothing is typed twice).
pub async fn type_into(session: &Session, css: &str, text: &str) {
    for _ in 0..5 {
        let element = session.wait_css(css).await;
        match tokio::time::timeout(crate::EVENT_TIMEOUT, element.send_keys(text)).await {
            Ok(Ok(())) => return,
            Ok(Err(fantoccini::error::CmdError::Standard(e)))
                if e.error == fantoccini::error::ErrorStatus::StaleElementReference =>
            {
                eprintln!("webdriver: {css} was re-rendered; finding it again");
            }
            Ok(Err(e)) => panic!("type {text:?} into {css}: {e:?}\nlog:\n{}", session.log()),
            Err(_) => panic!("type {text:?} into {css}: no answer within {EVENT_TIMEOUT:?}"),
        }
    }
    panic!("{css} kept being replaced while typing {text:?}");
}

/// Clicks the element matching `css`, finding it again if it was re-rendered meanwhile.
pub async fn click_fresh(session: &Session, css: &str) {
    for _ in 0..5 {
        let element = session.wait_css(css).await;
        match tokio::time::timeout(crate::EVENT_TIMEOUT, element.click()).await {
            Ok(Ok(())) => return,
            Ok(Err(fantoccini::error::CmdError::Standard(e)))
                if e.error == fantoccini::error::ErrorStatus::StaleElementReference =>
            {
                eprintln!("webdriver: {css} was re-rendered; finding it again");
            }
            Ok(Err(e)) => panic!("click {css}: {e:?}\nlog:\n{}", session.log()),
            Err(_) => panic!("click {css}: no answer within {EVENT_TIMEOUT:?}"),
        }
    }
    panic!("{css} kept being replaced while clicking it");
}

/// Presses `key` with `modifier` held (Ctrl+Z, say), on whatever has the focus.
pub async fn chord(session: &Session, modifier: char, key: char) {
    use fantoccini::actions::{InputSource, KeyAction, KeyActions};
    let actions = KeyActions::new("keyboard".into())
        .then(KeyAction::Down { value: modifier })
        .then(KeyAction::Down { value: key })
        .then(KeyAction::Up { value: key })
        .then(KeyAction::Up { value: modifier });
    session
        .bounded(
            &format!("press {modifier:?}+{key:?}"),
            session.client().perform_actions(actions),
        )
        .await;
}

/// Waits (bounded) until `file` does not exist.
pub async fn until_missing(file: &std::path::Path, what: &str) {
    let deadline = Instant::now() + EVENT_TIMEOUT;
    while file.exists() {
        assert!(
            Instant::now() < deadline,
            "{what}: {} still exists after {EVENT_TIMEOUT:?}",
            file.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits (bounded) until the status line's text satisfies `check`; returns it.
pub async fn until_status(session: &Session, what: &str, check: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + EVENT_TIMEOUT;
    loop {
        let text = session.text("#status").await;
        if check(&text) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: the status line says {text:?} after {EVENT_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits (bounded) until nothing matches `css`.
pub async fn wait_gone(session: &Session, css: &str) {
    wait_gone_within(session, css, EVENT_TIMEOUT).await;
}

/// Waits until nothing matches `css`, at most `within`.
pub async fn wait_gone_within(session: &Session, css: &str, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        // Counted in the page by one script: a list re-rendering meanwhile cannot leave
        // a stale reference behind (finding the elements could).
        let count = session
            .bounded(
                &format!("count {css}"),
                session.client().execute(
                    "return document.querySelectorAll(arguments[0]).length",
                    vec![serde_json::json!(css)],
                ),
            )
            .await;
        if count.as_u64() == Some(0) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{css} still shown after {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Switches the session to the settings window's Learn view for `world.project` (opened
/// through the control socket) and waits for its review to be shown.
pub async fn open_learn(world: &AppWorld, session: &Session) {
    open_settings(world, session, "learn").await;
    session.wait_css("section.learn-diff").await;
}
