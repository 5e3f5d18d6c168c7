//! Start at login from the command line against the real app (under the test's X
//! display): `ctl config set autostart true` makes the running app write
//! `$XDG_CONFIG_HOME/autostart/landstrip-tray.desktop` starting its own binary, which
//! Debian's `desktop-file-validate` accepts and `ctl config` reads back; `false` removes
//! it. Nothing is mocked.

use std::path::{Path, PathBuf};

use landstrip_tray_core::app_settings::autostart::exec_program;
use landstrip_tray_tests::real_app::{app_binary, path_str, AppWorld};
use landstrip_tray_tests::{desktop_file_validate, EVENT_TIMEOUT, PYTHON};

/// The program GLib's own desktop-entry parser (`Gio.DesktopAppInfo`, which GNOME and
/// GTK session managers start autostart entries with) reads from `entry`'s Exec line: a
/// check independent of the app's writer and of the core's parser.
async fn gio_executable(entry: &Path) -> PathBuf {
    const READ: &str = "import sys, gi\n\
gi.require_version('Gio', '2.0')\n\
from gi.repository import Gio\n\
info = Gio.DesktopAppInfo.new_from_filename(sys.argv[1])\n\
print(info.get_commandline() if info else '')\n\
print(info.get_executable() if info else '')\n";
    let out = tokio::time::timeout(
        EVENT_TIMEOUT,
        tokio::process::Command::new(PYTHON)
            .args(["-c", READ, path_str(entry)])
            .output(),
    )
    .await
    .expect("python3 reading the entry with Gio: no answer")
    .expect("run python3");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "Gio could not read the entry: {out:?}"
    );
    let executable = text.lines().nth(1).unwrap_or_default();
    assert!(
        !executable.is_empty(),
        "Gio found no program in the entry: {text:?}"
    );
    PathBuf::from(executable)
}

/// `ctl config`'s value for `key`.
fn shown<'a>(table: &'a str, key: &str) -> Option<&'a str> {
    table.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        (words.next() == Some(key)).then(|| words.next()).flatten()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_switches_the_autostart_entry_for_the_running_binary_on_and_off() {
    let world = AppWorld::new();
    let mut app = world.start(&[&world.project]);
    app.wait_for_control().await;
    let entry = world.base.join("config/autostart/landstrip-tray.desktop");
    assert_eq!(
        shown(&world.ctl_ok(&["config"]).await, "autostart"),
        Some("false")
    );

    let on = world.ctl_ok(&["config", "set", "autostart", "true"]).await;
    assert_eq!(
        on,
        format!("start at login: on: wrote {}\n", entry.display())
    );
    desktop_file_validate(&entry);
    let text = std::fs::read_to_string(&entry).expect("the entry");
    let exec = text
        .lines()
        .find_map(|l| l.strip_prefix("Exec="))
        .expect("an Exec line");
    assert_eq!(
        exec_program(exec).map(Into::into),
        Some(app_binary()),
        "the entry does not start the running app:\n{text}"
    );
    assert_eq!(
        gio_executable(&entry).await,
        app_binary(),
        "GLib reads another program from the entry:\n{text}"
    );
    assert_eq!(
        shown(&world.ctl_ok(&["config"]).await, "autostart"),
        Some("true")
    );

    let off = world.ctl_ok(&["config", "set", "autostart", "false"]).await;
    assert_eq!(
        off,
        format!("start at login: off: removed {}\n", entry.display())
    );
    assert!(!entry.exists(), "off left the entry");
    assert_eq!(
        shown(&world.ctl_ok(&["config"]).await, "autostart"),
        Some("false")
    );
    app.quit().await;
}
