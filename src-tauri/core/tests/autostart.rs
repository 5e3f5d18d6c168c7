//! Start at login through the shared operation (`ops::change_app_setting` with
//! `AppSettingChange::Autostart`), against a real service, a real settings file and the
//! real `$XDG_CONFIG_HOME/autostart` directory: on writes a desktop entry that Debian's
//! `desktop-file-validate` accepts and whose `Exec` starts the running binary; off removes
//! it; the view reads the entry back each time.
//!
//! This file holds one test on purpose: it sets `XDG_CONFIG_HOME` for its own process
//! (where the operation looks, as the app does), which no other test may race.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use landstrip_tray_core::activity::ActivityLog;
use landstrip_tray_core::app_settings::autostart::{exec_program, AUTOSTART_FILE_NAME};
use landstrip_tray_core::app_settings::SettingsFile;
use landstrip_tray_core::decision::broker::Broker;
use landstrip_tray_core::serving::discovery::DiscoveryDir;
use landstrip_tray_core::serving::service::Service;
use landstrip_tray_core::surfaces::ops::{self, AppSettingChange};

/// Runs Debian's validator on `file`; its complaints fail the test.
fn desktop_file_validate(file: &Path) {
    let out = Command::new("desktop-file-validate")
        .arg(file)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "desktop-file-validate: {e}: install Debian's desktop-file-utils \
                 (scripts/setup.sh --test does)"
            )
        });
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "desktop-file-validate {}: {:?}\n{said}",
        file.display(),
        out.status
    );
}

/// The value of `key` in the `[Desktop Entry]` group.
fn key<'a>(entry: &'a str, key: &str) -> Option<&'a str> {
    entry
        .lines()
        .skip_while(|l| l.trim() != "[Desktop Entry]")
        .skip(1)
        .take_while(|l| !l.starts_with('['))
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
}

#[tokio::test]
async fn switching_on_writes_a_valid_entry_for_this_binary_and_off_removes_it() {
    let root = tempfile::tempdir().expect("tempdir");
    // A space in the path: the entry must quote its Exec for the session to run it.
    let config = root.path().join("my config");
    std::env::set_var("XDG_CONFIG_HOME", &config);
    let settings = config.join("landstrip-tray/settings.json");
    let service = Service::start(
        Broker::new(Arc::new(ActivityLog::in_memory())),
        root.path().join("home"),
        DiscoveryDir::new(root.path().join("runtime")),
        Some(SettingsFile::new(settings.clone())),
    );
    let entry_file = config.join("autostart").join(AUTOSTART_FILE_NAME);

    let shown = ops::show_app_settings(&service).expect("read");
    assert!(!shown.autostart, "on before anything was written");
    assert_eq!(shown.autostart_file, entry_file);

    let on = ops::change_app_setting(&service, &AppSettingChange::Autostart(true)).expect("on");
    assert_eq!(on.description, "start at login: on");
    assert_eq!(
        (on.file.as_path(), on.removed),
        (entry_file.as_path(), false)
    );
    assert!(on.settings.autostart);
    let text = std::fs::read_to_string(&entry_file).expect("the entry was written");
    desktop_file_validate(&entry_file);
    let exec = key(&text, "Exec").expect("an Exec key");
    let running = std::env::current_exe().expect("current exe");
    assert_eq!(
        exec_program(exec).as_deref(),
        running.to_str(),
        "Exec={exec} does not start the running binary"
    );
    assert_eq!(key(&text, "Type"), Some("Application"));
    assert!(
        ops::show_app_settings(&service).expect("read").autostart,
        "the view does not read the entry back"
    );
    assert!(
        !settings.exists(),
        "autostart lives in its entry, yet the settings file was written"
    );

    // The desktop's own tool switching it off in the entry is off here too.
    std::fs::write(
        &entry_file,
        text.replace(
            "X-GNOME-Autostart-enabled=true",
            "X-GNOME-Autostart-enabled=false",
        ),
    )
    .expect("edit");
    assert!(!ops::show_app_settings(&service).expect("read").autostart);

    let off = ops::change_app_setting(&service, &AppSettingChange::Autostart(false)).expect("off");
    assert_eq!(off.description, "start at login: off");
    assert!(off.removed && !off.settings.autostart);
    assert!(!entry_file.exists(), "off left the entry behind");
    ops::change_app_setting(&service, &AppSettingChange::Autostart(false))
        .expect("off again is fine");
}
