//! Start at login from the command line against the real app (under the test's X
//! display): `ctl config set autostart true` makes the running app write
//! `$XDG_CONFIG_HOME/autostart/landstrip-tray.desktop` starting its own binary, which
//! Debian's `desktop-file-validate` accepts and `ctl config` reads back; `false` removes
//! it. Nothing is mocked.

use landstrip_tray_core::preferences::autostart::exec_program;
use landstrip_tray_tests::desktop_file_validate;
use landstrip_tray_tests::real_app::{app_binary, AppWorld};

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
