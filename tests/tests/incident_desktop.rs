//! An incident on the desktop, from the real app binary and a real landstrip 0.19.2 run
//! that reads a canary: the critical notification names the canary and the program and
//! offers Kill and Resume (never an allow), its Kill button kills the stopped run through
//! the operations table; the tray turns to the alert icon with an incident item first in
//! its menu while the run is stopped, and back once it is not; an incident resumed
//! elsewhere (`ctl incident resume`) withdraws its notification.
//!
//! Mocked, because they cannot be real here: the panel's StatusNotifierWatcher
//! (`tests/fake_watcher.py`) and the desktop's notification server (Debian's dbusmock).
//! Run under `xvfb-run -a dbus-run-session --`, after `cargo build -p landstrip-tray`.

use landstrip_tray_tests::notification_server::{NotificationServer, Notify};
use landstrip_tray_tests::real_app::{path_str, AppWorld, RunningApp};
use landstrip_tray_tests::tray_host::{FakeWatcher, TrayItem, TrayState};
use landstrip_tray_tests::{finish, process_state, until_some, CANARY_RUN, CANARY_STEP};
use serde_json::{json, Value};

/// The incident notification's title while the run is stopped
/// (src-tauri/src/app/notifications/text.rs).
const STOPPED: &str = "A sandboxed program read a canary: its run is stopped";

/// The tray menu's incident item, first while a run is stopped (src-tauri/src/tray_view.rs).
const INCIDENT_ITEM: &str = "Canary read: 1 run stopped — resume or kill…";

/// The app on a private bus with a panel's watcher and a notification server, its home's
/// reads asking, a canary at `~/.aws/credentials`; its tray item.
struct Desk {
    world: AppWorld,
    app: RunningApp,
    server: NotificationServer,
    item: TrayItem,
    _watcher: FakeWatcher,
}

impl Desk {
    async fn start() -> Self {
        let world = AppWorld::new();
        world.write_project_policy(&json!({"filesystem": {"denyRead": ["~"]}}));
        let server = NotificationServer::start(&world.base.join("bus"), "body actions sound").await;
        let mut watcher = FakeWatcher::start(&server.bus.address).await;
        let mut app = world.start_with(&[&world.project], &server.app_env());
        app.serving(&world, &world.project).await;
        app.wait_for_control().await;
        watcher.item_from(&app).await;
        let item = TrayItem::of(&server.bus.address, app.pid).await;
        world
            .ctl_ok(&["canary", "add", path_str(&canary(&world))])
            .await;
        Self {
            world,
            app,
            server,
            item,
            _watcher: watcher,
        }
    }

    /// A run of several confined processes whose python3 reads the canary.
    fn trip(&self) -> tokio::process::Child {
        self.world.launch(
            self.app.port(),
            None,
            &[
                "sh",
                "-c",
                CANARY_RUN,
                "sh",
                CANARY_STEP,
                path_str(&canary(&self.world)),
            ],
        )
    }

    /// The incident notification, once it is up.
    async fn incident_notification(&mut self) -> Notify {
        self.server.next_notify(&self.app, STOPPED).await
    }

    /// `ctl incidents --json`'s first incident, once `done` holds for it.
    async fn incident_when(&self, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        until_some(what, || async {
            let out = self.world.ctl_ok(&["incidents", "--json"]).await;
            let list: Value = serde_json::from_str(&out).expect("incidents JSON");
            list.get(0).filter(|i| done(i)).cloned()
        })
        .await
    }
}

fn canary(world: &AppWorld) -> std::path::PathBuf {
    world.home.join(".aws/credentials")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_read_turns_the_tray_to_alert_and_the_notifications_kill_ends_the_run() {
    let mut desk = Desk::start().await;
    desk.item
        .wait_state(TrayState::Idle, "before the read")
        .await;
    let run = desk.trip();

    let notify = desk.incident_notification().await;
    assert_eq!(notify.app_name, "landstrip-tray");
    assert!(
        notify.body.starts_with("Canary: ~/.aws/credentials\n"),
        "{:?}",
        notify.body
    );
    assert!(notify.body.contains("Program: "), "{:?}", notify.body);
    assert!(
        notify.body.contains("processes stopped; they stay stopped"),
        "{:?}",
        notify.body
    );
    assert_eq!(notify.hints.get("urgency"), Some(&json!(2)));
    let offered: Vec<&str> = notify
        .actions
        .iter()
        .step_by(2)
        .map(String::as_str)
        .collect();
    assert_eq!(
        offered,
        ["incident-kill", "incident-resume", "default"],
        "{offered:?}"
    );
    let incident = desk
        .incident_when("a stopped incident", |i| i["state"] == "stopped")
        .await;
    let pids: Vec<u64> = incident["pids"]
        .as_array()
        .expect("pids")
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    assert!(
        pids.iter().all(|p| process_state(*p as u32) == Some('T')),
        "{incident}"
    );

    desk.item
        .wait_state(TrayState::Alert, "with the run stopped")
        .await;
    let menu = desk
        .item
        .wait_menu("the incident item first", |m| {
            m.children
                .first()
                .is_some_and(|first| first.label() == INCIDENT_ITEM && first.enabled())
        })
        .await;
    assert!(menu.find(INCIDENT_ITEM).is_some());

    let id = desk.server.id_of(STOPPED).await;
    desk.server.invoke(id, "incident-kill").await;
    let done = finish(run).await;
    assert!(
        !done.stdout.contains("read "),
        "the killed reader went on: {done:?}"
    );
    desk.incident_when("the incident killed", |i| i["state"] == "killed")
        .await;
    desk.item
        .wait_state(TrayState::Idle, "once the run is killed")
        .await;
    desk.item
        .wait_menu("the incident item gone", |m| {
            m.find(INCIDENT_ITEM).is_none()
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incident_resumed_from_ctl_withdraws_its_notification() {
    let mut desk = Desk::start().await;
    let run = desk.trip();
    desk.incident_notification().await;
    let id = desk.server.id_of(STOPPED).await;
    desk.incident_when("a stopped incident", |i| i["state"] == "stopped")
        .await;
    desk.world.ctl_ok(&["incident", "resume", "1"]).await;
    let done = finish(run).await;
    assert_eq!(done.stdout.trim(), "read EACCES", "{done:?}");
    until_some("the incident notification withdrawn", || async {
        desk.server
            .closed_ids()
            .await
            .contains(&u64::from(id))
            .then_some(())
    })
    .await;
    desk.item
        .wait_state(TrayState::Idle, "once the run is resumed")
        .await;
}

/// Processes killed by hand (not through the app) end the incident all the same: the app
/// waits on their pidfds, so the tray leaves its alert and the notification goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_by_hand_clears_the_alert_and_the_notification() {
    let mut desk = Desk::start().await;
    let run = desk.trip();
    desk.incident_notification().await;
    let id = desk.server.id_of(STOPPED).await;
    let incident = desk
        .incident_when("a stopped incident", |i| i["state"] == "stopped")
        .await;
    desk.item
        .wait_state(TrayState::Alert, "with the run stopped")
        .await;
    for pid in incident["pids"].as_array().expect("pids") {
        let pid = pid.as_u64().expect("a pid").to_string();
        let killed = std::process::Command::new("kill")
            .args(["-KILL", &pid])
            .status()
            .expect("kill");
        assert!(killed.success(), "kill -KILL {pid}");
    }
    finish(run).await;
    desk.item
        .wait_state(TrayState::Idle, "once the run was killed by hand")
        .await;
    until_some("the incident notification withdrawn", || async {
        desk.server
            .closed_ids()
            .await
            .contains(&u64::from(id))
            .then_some(())
    })
    .await;
    desk.incident_when("the incident gone", |i| i["state"] == "gone")
        .await;
}
