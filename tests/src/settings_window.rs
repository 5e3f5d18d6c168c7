//! Helpers for driving the real app's settings window through WebDriver: opening it over
//! the real control socket, and reading the project's sandbox.json the way the tests check it.

use std::time::Duration;

use fantoccini::wd::WindowHandle;
use landstrip_tray_core::control::{Client, Request};
use landstrip_tray_core::policy::parse_overrides;
use landstrip_tray_core::service::UiRequest;
use tokio::time::Instant;

use crate::real_app::AppWorld;
use crate::webdriver::Session;
use crate::EVENT_TIMEOUT;

/// Opens the settings window through the control socket and switches the session to it;
/// returns once its page is up.
pub async fn open_settings(world: &AppWorld, session: &Session, view: &str) {
    let before = session
        .bounded("window handles", session.client().windows())
        .await;
    let mut client = Client::connect(&world.control_socket())
        .await
        .expect("connect to the control socket");
    let response = client
        .request(&open_request(world, view))
        .await
        .expect("OpenSettings");
    eprintln!("OpenSettings: {response:?}");
    switch_to_new_window(session, &before, Duration::from_millis(100)).await;
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
/// the session to it; returns the handle.
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
            "no settings window handle within {EVENT_TIMEOUT:?}; log:\n{}",
            session.log()
        );
        tokio::time::sleep(poll).await;
    };
    session
        .bounded(
            "switch to the settings window",
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
