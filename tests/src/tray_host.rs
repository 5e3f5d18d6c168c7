//! A stand-in for a desktop's tray host: `tests/fake_watcher.py`, a StatusNotifierWatcher
//! (`org.kde.StatusNotifierWatcher`) on a session bus. There is no panel under Xvfb; with
//! this on the bus the app finds a tray host at start (so, for one, it does not open the
//! settings window at start as it does without one).

use std::path::Path;
use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};
use tokio::time::Instant;

use crate::real_app::RunningApp;
use crate::{EVENT_TIMEOUT, PYTHON};

/// `tests/fake_watcher.py` on the bus at `address`: a panel's StatusNotifierWatcher.
pub struct FakeWatcher {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl FakeWatcher {
    /// Starts it; returns once it owns `org.kde.StatusNotifierWatcher`.
    pub async fn start(address: &str) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("fake_watcher.py");
        let mut child = Command::new(PYTHON)
            .arg(&script)
            .env("DBUS_SESSION_BUS_ADDRESS", address)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn tests/fake_watcher.py (python3-dbus, python3-gi)");
        let stdout = child.stdout.take().expect("stdout");
        let mut watcher = Self {
            child,
            lines: BufReader::new(stdout).lines(),
        };
        let ready = watcher.next_line("ready", |l| l == "ready").await;
        assert!(
            ready.is_some(),
            "the fake watcher did not own its name within {EVENT_TIMEOUT:?}"
        );
        watcher
    }

    /// Kills it (as a panel that crashes) and waits until the process is gone: the bus
    /// has dropped its name by then.
    pub async fn stop(mut self) {
        tokio::time::timeout(EVENT_TIMEOUT, self.child.kill())
            .await
            .expect("the fake watcher did not die within the bound")
            .expect("kill the fake watcher");
    }

    /// The next line it prints for which `wanted` holds, or None after [`EVENT_TIMEOUT`];
    /// fails if it exits first (naming `what`).
    pub async fn next_line(&mut self, what: &str, wanted: impl Fn(&str) -> bool) -> Option<String> {
        let deadline = Instant::now() + EVENT_TIMEOUT;
        loop {
            match tokio::time::timeout_at(deadline, self.lines.next_line()).await {
                Ok(Ok(Some(line))) if wanted(&line) => return Some(line),
                Ok(Ok(Some(_))) => {}
                Ok(Ok(None)) | Ok(Err(_)) => panic!("the fake watcher exited before: {what}"),
                Err(_) => return None,
            }
        }
    }

    /// Waits (bounded) for `RegisterStatusNotifierItem` from the app's process.
    pub async fn item_from(&mut self, app: &RunningApp) {
        self.item_from_pid(app.pid, || app.log()).await;
    }

    /// Waits (bounded) for `RegisterStatusNotifierItem` from process `pid` (`log`: for the
    /// failure message).
    pub async fn item_from_pid(&mut self, pid: u32, log: impl Fn() -> String) {
        let pid = pid.to_string();
        let what = format!("RegisterStatusNotifierItem from the app (pid {pid})");
        let found = self
            .next_line(&what, |l| {
                l.starts_with("item ") && l.rsplit(' ').next() == Some(pid.as_str())
            })
            .await;
        assert!(
            found.is_some(),
            "the fake watcher: no {what} within {EVENT_TIMEOUT:?}; the app's log:\n{}",
            log()
        );
    }
}
