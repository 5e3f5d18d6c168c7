//! The app's own settings through the shared operations (`ops::show_app_settings`,
//! `ops::change_app_setting`) and the real control socket, against a real service and a
//! real settings file: values checked before anything is written, a change written under
//! the lock with the fields a newer version wrote kept, and a file that does not parse
//! left alone.

use std::sync::Arc;
use std::time::Duration;

use landstrip_tray_core::activity::ActivityLog;
use landstrip_tray_core::app_settings::SettingsFile;
use landstrip_tray_core::decision::broker::Broker;
use landstrip_tray_core::serving::discovery::DiscoveryDir;
use landstrip_tray_core::serving::service::Service;
use landstrip_tray_core::surfaces::control::{Client, ControlServer, Reply, Request, Response};
use landstrip_tray_core::surfaces::ops::{self, AppSettingChange, OpError};
use serde_json::{json, Value};

/// Bound on any single awaited reply.
const BOUND: Duration = Duration::from_secs(20);

async fn service(root: &std::path::Path, settings: Option<SettingsFile>) -> Service {
    let broker = Broker::new(Arc::new(ActivityLog::in_memory()));
    Service::start(
        broker,
        root.join("home"),
        DiscoveryDir::new(root.join("runtime")),
        settings,
    )
}

fn on_disk(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON")
}

#[tokio::test]
async fn changes_are_checked_written_with_unknown_fields_kept_and_read_back() {
    let root = tempfile::tempdir().expect("tempdir");
    let path = root.path().join("config/settings.json");
    std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
    std::fs::write(&path, r#"{"projects": ["/p"], "future": [1, 2]}"#).expect("write");
    let service = service(root.path(), Some(SettingsFile::new(path.clone()))).await;

    let shown = ops::show_app_settings(&service).expect("read");
    assert_eq!(
        (
            shown.prompt_timeout_secs,
            shown.summarize_denials,
            shown.notification_sound
        ),
        (None, true, true),
        "the defaults"
    );
    assert_eq!(shown.file, path);

    let before = std::fs::read(&path).expect("read");
    for secs in [0, 4, 3601, u64::MAX] {
        let err = ops::change_app_setting(&service, &AppSettingChange::PromptTimeout(Some(secs)))
            .expect_err("out of range");
        assert!(matches!(err, OpError::Timeout(s) if s == secs), "{err}");
        assert!(err.to_string().contains("5 to 3600 seconds"), "{err}");
        assert_eq!(
            std::fs::read(&path).expect("read"),
            before,
            "{secs}: written"
        );
    }

    let changed =
        ops::change_app_setting(&service, &AppSettingChange::PromptTimeout(Some(5))).expect("5 s");
    assert_eq!(changed.description, "prompt timeout: 5 s");
    assert_eq!(changed.settings.prompt_timeout_secs, Some(5));
    ops::change_app_setting(&service, &AppSettingChange::NotificationSound(false)).expect("sound");
    ops::change_app_setting(&service, &AppSettingChange::SummarizeDenials(false))
        .expect("summaries");
    let written = on_disk(&path);
    assert_eq!(
        written,
        json!({"projects": ["/p"], "promptTimeoutSecs": 5, "summarizeDenials": false,
            "notificationSound": false, "future": [1, 2]})
    );
    let shown = ops::show_app_settings(&service).expect("read");
    assert_eq!(
        (
            shown.prompt_timeout_secs,
            shown.summarize_denials,
            shown.notification_sound
        ),
        (Some(5), false, false)
    );
    let off =
        ops::change_app_setting(&service, &AppSettingChange::PromptTimeout(None)).expect("off");
    assert_eq!(off.description, "prompt timeout: off");
    assert!(on_disk(&path).get("promptTimeoutSecs").is_none());
}

#[tokio::test]
async fn a_settings_file_that_does_not_parse_is_never_written() {
    let root = tempfile::tempdir().expect("tempdir");
    let path = root.path().join("settings.json");
    let broken = b"{\"projects\": [,]}\n";
    std::fs::write(&path, broken).expect("write");
    let service = service(root.path(), Some(SettingsFile::new(path.clone()))).await;
    let err = ops::change_app_setting(&service, &AppSettingChange::NotificationSound(false))
        .expect_err("broken");
    assert!(err.to_string().contains("settings.json:1:"), "{err}");
    assert_eq!(std::fs::read(&path).expect("read"), broken);
    assert!(ops::show_app_settings(&service).is_err());

    let without = service_without(root.path()).await;
    assert!(matches!(
        ops::show_app_settings(&without),
        Err(OpError::NoSettings)
    ));
}

async fn service_without(root: &std::path::Path) -> Service {
    service(&root.join("other"), None).await
}

#[tokio::test]
async fn the_control_socket_shows_and_changes_them_and_refuses_a_bad_timeout() {
    let root = tempfile::tempdir().expect("tempdir");
    let base = std::fs::canonicalize(root.path()).expect("canonical");
    let path = base.join("config/settings.json");
    let service = service(&base, Some(SettingsFile::new(path.clone()))).await;
    let socket = base.join("runtime/landstrip-tray/control.sock");
    let server = ControlServer::bind(&socket).expect("bind");
    let server = tokio::spawn(server.serve(service.clone()));
    let ask = |request: Request| {
        let socket = socket.clone();
        async move {
            let mut client = tokio::time::timeout(BOUND, Client::connect(&socket))
                .await
                .expect("connect in time")
                .expect("connect");
            tokio::time::timeout(BOUND, client.request(&request))
                .await
                .expect("reply in time")
                .expect("reply")
        }
    };

    let refused = ask(Request::ChangeAppSetting {
        change: AppSettingChange::PromptTimeout(Some(2)),
    })
    .await;
    match refused {
        Response::Error { message } => assert!(message.contains("5 to 3600"), "{message}"),
        other => panic!("{other:?}"),
    }
    assert!(!path.exists(), "a refused change created the settings file");

    match ask(Request::ChangeAppSetting {
        change: AppSettingChange::PromptTimeout(Some(60)),
    })
    .await
    {
        Response::Ok(Reply::AppSettingChanged(changed)) => {
            assert_eq!(changed.file, path);
            assert_eq!(changed.settings.prompt_timeout_secs, Some(60));
        }
        other => panic!("{other:?}"),
    }
    match ask(Request::AppSettings).await {
        Response::Ok(Reply::AppSettings(shown)) => {
            assert_eq!(shown.prompt_timeout_secs, Some(60));
            assert!(shown.notification_sound);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(on_disk(&path)["promptTimeoutSecs"], json!(60));
    server.abort();
}
