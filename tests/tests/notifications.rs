//! Notifications from the real app binary, each test on a session bus of its own with
//! Debian's dbusmock notification daemon (`python3 -m dbusmock --template
//! notification_daemon`) and the real landstrip 0.19.2: what a prompt's notification says,
//! that its "allow" button lets the held write through, that its "deny" button denies (the
//! deny seen on the wire through a tap, recorded as the user's, the app still up: a crashed
//! app would fail the write too), that it is withdrawn when the prompt is settled elsewhere
//! (the run ended, a timeout, recorded as the timeout's), that automatic answers make none, that a
//! server without actions gets no buttons, and that terminal denials are summarised quietly,
//! once per run, unless the settings turn that off.
//!
//! Every test awaits the mock's `MethodCalled` signals (or the program's exit) rather than
//! sleeping, and reads the calls back with `org.freedesktop.DBus.Mock.GetMethodCalls`.

use std::ops::Deref;
use std::path::Path;

use landstrip_tray_tests::notification_server::{NotificationServer, Notify};
use landstrip_tray_tests::real_app::{path_str, AppWorld, RunningApp};
use landstrip_tray_tests::tap::Tap;
use landstrip_tray_tests::{finish, PYTHON, WRITE};
use serde_json::{json, Value as Json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::process::Child;
use tokio::time::Instant;

/// What Debian's notification daemons typically offer.
const WITH_ACTIONS: &str = "body actions sound";

const WRITE_TITLE: &str = "Sandbox write blocked";
const NO_TRAY_TITLE: &str = "landstrip-tray is running without a tray icon";

/// One test's world (the shared runner's) and the mock notification server on a private
/// bus of its own.
struct Desk {
    world: AppWorld,
    server: NotificationServer,
}

impl Deref for Desk {
    type Target = AppWorld;

    fn deref(&self) -> &AppWorld {
        &self.world
    }
}

impl Desk {
    /// Sets up the directories and the bus, and starts the mock with `capabilities`.
    async fn new(capabilities: &str) -> Self {
        let world = AppWorld::new();
        let server = NotificationServer::start(&world.base.join("bus"), capabilities).await;
        Self { world, server }
    }

    /// Starts the real app on this desk's bus, serving the project; returns once its
    /// discovery file names a port.
    async fn start_app(&self) -> RunningApp {
        let mut app = self
            .world
            .start_with(&[&self.project], &self.server.app_env());
        app.serving(&self.world, &self.project).await;
        app
    }

    /// Starts `program` under the real landstrip 0.19.2, its fd 3 connected to `port`.
    fn launch(&self, port: u16, program: &[&str]) -> Child {
        self.world.launch(port, None, program)
    }
}

fn assert_prompt_notification(notify: &Notify, desk: &Desk, target: &str) {
    assert_eq!(notify.app_name, "landstrip-tray");
    assert_eq!(notify.summary, WRITE_TITLE);
    assert!(
        notify.body.contains(&format!("Path: {target}")),
        "body: {:?}",
        notify.body
    );
    assert!(
        notify.body.contains("Program: python3"),
        "body: {:?}",
        notify.body
    );
    assert!(notify.body.contains(" (pid "), "body: {:?}", notify.body);
    assert!(
        notify
            .body
            .contains(&format!("Project: {}", desk.project.display())),
        "body: {:?}",
        notify.body
    );
    assert_eq!(
        notify.hints.get("sound-name"),
        Some(&json!("dialog-warning"))
    );
    assert_eq!(notify.hints.get("urgency"), Some(&json!(2)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_notifies_once_and_its_allow_button_lets_the_write_through() {
    let mut desk = Desk::new(WITH_ACTIONS).await;
    std::fs::create_dir(desk.home.join("notes")).expect("mkdir notes");
    let mut app = desk.start_app().await;

    // No panel on this bus: said once, quietly.
    let no_tray = desk.server.next_notify(&app, NO_TRAY_TITLE).await;
    assert_eq!(no_tray.hints.get("urgency"), Some(&json!(0)));
    assert_eq!(no_tray.hints.get("sound-name"), None);
    assert!(no_tray.actions.is_empty());
    app.wait_for_log("without a tray icon").await;

    let mut tap = Tap::start(app.port()).await;
    let target = desk.home.join("notes/todo.txt");
    let child = desk.launch(tap.port, &[PYTHON, "-c", WRITE, path_str(&target)]);
    let notify = desk.server.next_notify(&app, WRITE_TITLE).await;
    let notified = Instant::now();
    let queried = tap.first_query().await.at;
    eprintln!(
        "query -> Notify received by the mock's client: {:?}",
        notified.duration_since(queried)
    );
    assert_prompt_notification(&notify, &desk, "~/notes/todo.txt");
    assert_eq!(
        notify
            .actions
            .iter()
            .step_by(2)
            .map(String::as_str)
            .collect::<Vec<_>>(),
        ["allow", "deny", "default", "allow-15m", "deny-session"],
        "actions: {:?}",
        notify.actions
    );

    let prompts = desk.server.ids_titled(WRITE_TITLE).await;
    assert_eq!(
        prompts.len(),
        1,
        "one Notify for one prompt: {:?}",
        desk.server.notifications().await
    );
    let id = prompts[0];

    desk.server.invoke(id, "allow").await;
    let done = finish(child).await;
    assert_eq!(
        done.stdout.trim(),
        "ok",
        "{done:?}; the app's log:\n{}",
        app.log()
    );
    assert_eq!(
        std::fs::read_to_string(&target).expect("the file was written"),
        "hello"
    );

    // Answered by the notification itself: the server removes it, nobody else must.
    app.quit().await;
    assert!(
        !desk.server.closed_ids().await.contains(&u64::from(id)),
        "the notification that answered was closed by the app"
    );
    // Counted once the app has exited, so a second Notify for the prompt (before or
    // after the answer, new or replacing) cannot slip by: the whole life of the app sent
    // the start-up note and the prompt's notification, nothing else.
    let all = desk.server.notifications().await;
    let summaries: Vec<&str> = all.iter().map(|(_, n)| n.summary.as_str()).collect();
    assert_eq!(
        summaries,
        [NO_TRAY_TITLE, WRITE_TITLE],
        "one Notify for one prompt, over the app's whole run: {all:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn its_deny_button_fails_the_write() {
    let mut desk = Desk::new(WITH_ACTIONS).await;
    let mut app = desk.start_app().await;
    let target = desk.outside.join("refused.txt");
    let mut tap = Tap::start(app.port()).await;
    let child = desk.launch(tap.port, &[PYTHON, "-c", WRITE, path_str(&target)]);
    let query = tap.first_query().await.trap;
    desk.server.next_notify(&app, WRITE_TITLE).await;
    let id = desk.server.id_of(WRITE_TITLE).await;
    // A client that is not the server cannot answer, even when it signals the app's own
    // connections directly.
    let forged = desk.server.forge_action(&app, id, "allow").await;
    assert!(forged > 0, "the app has no connection on the bus");
    desk.server.invoke(id, "deny").await;
    let done = finish(child).await;
    assert_eq!(
        done.stdout.trim(),
        "EACCES",
        "{done:?}; the app's log:\n{}",
        app.log()
    );
    assert_eq!(done.code, Some(13));
    assert!(!target.exists());
    // The button's own deny, not a crashed app's closed socket: one deny on the wire
    // (the forged allow sent none), a person's answer in the activity, the app still up.
    desk.assert_the_app_denied(&tap, &query, path_str(&target), "user", app.pid, || {
        app.log()
    })
    .await;
    app.assert_running();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_ends_withdraws_its_notification() {
    let mut desk = Desk::new(WITH_ACTIONS).await;
    let app = desk.start_app().await;
    let mut tap = Tap::start(app.port()).await;
    let target = desk.outside.join("held.txt");
    let child = desk.launch(tap.port, &[PYTHON, "-c", WRITE, path_str(&target)]);
    let notify = desk.server.next_notify(&app, WRITE_TITLE).await;
    assert_prompt_notification(&notify, &desk, path_str(&target));
    let id = desk.server.id_of(WRITE_TITLE).await;

    tap.cut();
    let closed = desk
        .server
        .next_call(&app, "CloseNotification", |_| true)
        .await;
    assert_eq!(closed[0].as_u64(), Some(u64::from(id)), "{closed:?}");
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");
    assert!(!target.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_answered_elsewhere_closes_its_notification() {
    // "Elsewhere" here is the control command: it answers through the same broker call
    // as the dialog, and the notification must close either way.
    let mut desk = Desk::new(WITH_ACTIONS).await;
    let app = desk.start_app().await;
    let target = desk.outside.join("answered.txt");
    let child = desk.launch(app.port(), &[PYTHON, "-c", WRITE, path_str(&target)]);
    desk.server.next_notify(&app, WRITE_TITLE).await;
    let id = desk.server.id_of(WRITE_TITLE).await;
    let pending: Json =
        serde_json::from_str(&desk.ctl_ok(&["pending", "--json"]).await).expect("pending --json");
    let prompt = pending[0]["id"]
        .as_u64()
        .expect("a pending prompt id")
        .to_string();
    desk.ctl_ok(&["answer", &prompt, "once"]).await;
    let closed = desk
        .server
        .next_call(&app, "CloseNotification", |_| true)
        .await;
    assert_eq!(closed[0].as_u64(), Some(u64::from(id)), "{closed:?}");
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");
    assert_eq!(std::fs::read_to_string(&target).expect("written"), "hello");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_that_times_out_withdraws_its_notification() {
    let mut desk = Desk::new(WITH_ACTIONS).await;
    desk.write_settings(&json!({ "promptTimeoutSecs": 1 }));
    let app = desk.start_app().await;
    let target = desk.outside.join("late.txt");
    let mut tap = Tap::start(app.port()).await;
    let child = desk.launch(tap.port, &[PYTHON, "-c", WRITE, path_str(&target)]);
    let query = tap.first_query().await.trap;
    desk.server.next_notify(&app, WRITE_TITLE).await;
    let id = desk.server.id_of(WRITE_TITLE).await;
    let closed = desk
        .server
        .next_call(&app, "CloseNotification", |_| true)
        .await;
    assert_eq!(closed[0].as_u64(), Some(u64::from(id)), "{closed:?}");
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");
    // Denied by the timeout itself (not by a closed socket, nor as a person's answer).
    desk.assert_the_app_denied(&tap, &query, path_str(&target), "timeout", app.pid, || {
        app.log()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_automatic_answer_makes_no_notification() {
    let mut desk = Desk::new(WITH_ACTIONS).await;
    // The sandbox off for the project: the broker allows what landstrip asks, by itself.
    desk.write_project_policy(&json!({ "enabled": false }));
    let app = desk.start_app().await;
    let quiet = desk.outside.join("quiet.txt");
    let child = desk.launch(app.port(), &[PYTHON, "-c", WRITE, path_str(&quiet)]);
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");
    assert_eq!(std::fs::read_to_string(&quiet).expect("written"), "hello");

    // Then a run that does ask: its notification comes after anything the first run
    // could have caused.
    desk.write_project_policy(&json!({ "enabled": true }));
    let asked = desk.outside.join("asked.txt");
    let _child = desk.launch(app.port(), &[PYTHON, "-c", WRITE, path_str(&asked)]);
    let notify = desk.server.next_notify(&app, WRITE_TITLE).await;
    assert_prompt_notification(&notify, &desk, path_str(&asked));
    let prompts: Vec<Notify> = desk
        .server
        .notifications()
        .await
        .into_iter()
        .map(|(_, n)| n)
        .filter(|n| n.summary != NO_TRAY_TITLE)
        .collect();
    assert_eq!(
        prompts.len(),
        1,
        "only the run that asked notified: {prompts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_actions_gets_no_buttons_and_still_a_withdrawal() {
    let mut desk = Desk::new("body").await;
    let app = desk.start_app().await;
    let mut tap = Tap::start(app.port()).await;
    let target = desk.outside.join("plain.txt");
    let child = desk.launch(tap.port, &[PYTHON, "-c", WRITE, path_str(&target)]);
    let notify = desk.server.next_notify(&app, WRITE_TITLE).await;
    assert_prompt_notification(&notify, &desk, path_str(&target));
    assert!(notify.actions.is_empty(), "actions: {:?}", notify.actions);

    tap.cut();
    desk.server
        .next_call(&app, "CloseNotification", |_| true)
        .await;
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");
}

/// A terminal `info` trap as landstrip writes it for a completed denial.
fn info_trap(path: &Path) -> String {
    json!({
        "kind": "filesystem", "code": "FILESYSTEM_DENIED", "state": "info", "query_id": "0",
        "operation": "read", "path": path_str(path), "mechanism": "landlock",
    })
    .to_string()
        + "\n"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_denials_are_summarised_quietly_once_per_run() {
    let mut desk = Desk::new(WITH_ACTIONS).await;
    let app = desk.start_app().await;

    // The real landstrip failing to start a program: one quiet notification.
    let child = desk.launch(app.port(), &["/nonexistent/program"]);
    let summary = desk
        .server
        .next_notify(&app, "Sandbox denied a request")
        .await;
    assert_eq!(summary.replaces_id, 0);
    assert!(
        summary
            .body
            .contains("could not start /nonexistent/program"),
        "body: {:?}",
        summary.body
    );
    assert_eq!(summary.hints.get("sound-name"), None);
    assert_eq!(summary.hints.get("suppress-sound"), Some(&json!(true)));
    assert_eq!(summary.hints.get("urgency"), Some(&json!(0)));
    assert!(summary.actions.is_empty());
    finish(child).await;

    // A run reporting three denials, one at a time: one notification, updated in place.
    let mut run = TcpStream::connect(("127.0.0.1", app.port()))
        .await
        .expect("connect");
    for name in ["a", "b", "c"] {
        run.write_all(info_trap(&desk.home.join(name)).as_bytes())
            .await
            .expect("send a trap");
    }
    let last = desk
        .server
        .next_notify(&app, "Sandbox denied 3 requests")
        .await;
    assert!(
        last.body.contains("Latest: read ~/c"),
        "body: {:?}",
        last.body
    );
    let all = desk.server.notifications().await;
    let run_ids: Vec<(u32, u32)> = all
        .iter()
        .filter(|(_, n)| n.summary.starts_with("Sandbox denied") && n.body.contains("read ~/"))
        .map(|(id, n)| (*id, n.replaces_id))
        .collect();
    let first = run_ids.first().expect("the run's first summary").0;
    assert!(
        run_ids.iter().all(|&(id, _)| id == first),
        "one notification for the run: {run_ids:?}"
    );
    assert!(
        run_ids
            .iter()
            .skip(1)
            .all(|&(_, replaces)| replaces == first),
        "updates replace it: {run_ids:?}"
    );
    assert_ne!(first, 0);
    assert_eq!(
        all.iter()
            .filter(|(_, n)| n.summary == "Sandbox denied a request"
                && n.body.contains("could not start"))
            .count(),
        1,
        "{all:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summaries_off_in_the_settings_make_no_notification() {
    let mut desk = Desk::new(WITH_ACTIONS).await;
    desk.write_settings(&json!({ "summarizeDenials": false }));
    let mut app = desk.start_app().await;
    let child = desk.launch(app.port(), &["/nonexistent/program"]);
    finish(child).await;
    // Logged where the summary would have been sent.
    app.wait_for_log("denial summaries are off").await;
    // And prompts still notify.
    let target = desk.outside.join("still.txt");
    let _child = desk.launch(app.port(), &[PYTHON, "-c", WRITE, path_str(&target)]);
    desk.server.next_notify(&app, WRITE_TITLE).await;
    let all = desk.server.notifications().await;
    assert!(
        all.iter()
            .all(|(_, n)| !n.summary.starts_with("Sandbox denied")),
        "{all:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_carries_on_while_the_notification_server_goes_and_comes_back() {
    let mut desk = Desk::new(WITH_ACTIONS).await;
    let mut app = desk.start_app().await;
    let mut first = Tap::start(app.port()).await;
    let held = desk.outside.join("first.txt");
    let first_run = desk.launch(first.port, &[PYTHON, "-c", WRITE, path_str(&held)]);
    desk.server.next_notify(&app, WRITE_TITLE).await;
    // Answered by the mock only after it sent Notify's reply: the app has its id.
    desk.server.notifications().await;

    // No server: the prompt still waits (for the dialog), the failure is logged, the app
    // stays up.
    desk.server.stop().await;
    let lonely = desk.outside.join("lonely.txt");
    let mut lonely_run = desk.launch(app.port(), &[PYTHON, "-c", WRITE, path_str(&lonely)]);
    app.wait_for_log("cannot show desktop notifications").await;
    assert!(
        lonely_run.try_wait().expect("try_wait").is_none(),
        "not held"
    );
    app.assert_running();

    // A new server, without actions: asked again what it can do.
    desk.server.restart("body").await;
    let mut second = Tap::start(app.port()).await;
    let again = desk.outside.join("again.txt");
    let second_run = desk.launch(second.port, &[PYTHON, "-c", WRITE, path_str(&again)]);
    let notify = desk.server.next_notify(&app, WRITE_TITLE).await;
    assert!(
        notify.actions.is_empty(),
        "old capabilities: {:?}",
        notify.actions
    );
    assert_prompt_notification(&notify, &desk, path_str(&again));
    let new_id = desk.server.id_of(WRITE_TITLE).await;

    // The first notification went with its server: withdrawing its prompt closes nothing
    // on the new one; withdrawing the new prompt closes the new notification.
    first.cut();
    assert_eq!(finish(first_run).await.stdout.trim(), "EACCES");
    second.cut();
    let closed = desk
        .server
        .next_call(&app, "CloseNotification", |_| true)
        .await;
    assert_eq!(closed[0].as_u64(), Some(u64::from(new_id)), "{closed:?}");
    assert_eq!(finish(second_run).await.stdout.trim(), "EACCES");
    assert_eq!(desk.server.closed_ids().await, [u64::from(new_id)]);
    assert_eq!(
        app.log()
            .matches("cannot show desktop notifications")
            .count(),
        1,
        "logged once:\n{}",
        app.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sensitive_request_offers_no_allow_and_an_allow_sent_anyway_is_refused() {
    let mut desk = Desk::new(WITH_ACTIONS).await;
    std::fs::create_dir(desk.home.join(".ssh")).expect("mkdir .ssh");
    let app = desk.start_app().await;
    let target = desk.home.join(".ssh/config");
    let child = desk.launch(app.port(), &[PYTHON, "-c", WRITE, path_str(&target)]);
    let notify = desk.server.next_notify(&app, WRITE_TITLE).await;
    let offered: Vec<&str> = notify
        .actions
        .iter()
        .step_by(2)
        .map(String::as_str)
        .collect();
    assert!(
        !offered.contains(&"allow") && !offered.contains(&"allow-15m"),
        "a one-click allow offered for ~/.ssh: {offered:?}"
    );
    assert!(offered.contains(&"deny"), "{offered:?}");
    let id = desk.server.id_of(WRITE_TITLE).await;

    // The server says "allow" and "allow-15m" anyway (a server may send any action), then
    // "deny": the app takes one notification's actions in the order sent, so a write that
    // fails proves both allows were passed over, and no grant was made of them.
    desk.server.invoke(id, "allow").await;
    desk.server.invoke(id, "allow-15m").await;
    desk.server.invoke(id, "deny").await;
    let done = finish(child).await;
    assert_eq!(
        done.stdout.trim(),
        "EACCES",
        "an allow sent anyway answered: {done:?}"
    );
    assert_eq!(desk.ctl_ok(&["grants"]).await, "No session grants.\n");
    assert!(!target.exists());
}

/// After a secret (README "After a secret"): a run that was allowed to read a (fake)
/// credentials file then connects to a loopback listener of this test. The connect's
/// notification is critical, names the read and the address, and offers no allow; an
/// allow the server sends anyway is passed over (the deny after it answers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connect_after_a_secret_read_is_critical_names_both_and_offers_no_allow() {
    let mut desk = Desk::new(WITH_ACTIONS).await;
    desk.write_project_policy(&json!({"filesystem": {"denyRead": ["~"]}}));
    std::fs::create_dir(desk.home.join(".aws")).expect("mkdir .aws");
    let secret = desk.home.join(".aws/credentials");
    std::fs::write(
        &secret,
        "[default]\naws_access_key_id = AKIAFAKEFAKEFAKEFAKE\n",
    )
    .expect("write the fake credentials");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let port = listener.local_addr().expect("addr").port().to_string();
    let mut app = desk.start_app().await;
    app.wait_for_control().await;
    let program = "import socket, sys\nopen(sys.argv[1]).read()\n\
        try:\n    socket.create_connection(('127.0.0.1', int(sys.argv[2])), timeout=5).close()\n    print('ok')\n\
        except OSError as e:\n    print('denied', e.errno)\n";
    let child = desk.launch(
        app.port(),
        &[PYTHON, "-c", program, path_str(&secret), &port],
    );
    let held: Json = serde_json::from_str(&desk.ctl_ok(&["pending", "--wait", "--json"]).await)
        .expect("pending JSON");
    assert_eq!(held[0]["path"], path_str(&secret), "{held}");
    let read_id = held[0]["id"].to_string();
    desk.ctl_ok(&["answer", &read_id, "once"]).await;

    let title = "Sandbox network connect blocked after a secret read";
    let notify = desk.server.next_notify(&app, title).await;
    assert!(
        notify.body.starts_with(
            "After a secret: this run read ~/.aws/credentials (AWS credentials) before this.\n"
        ) && notify.body.contains(&format!("Address: 127.0.0.1:{port}")),
        "body: {:?}",
        notify.body
    );
    assert_eq!(notify.hints.get("urgency"), Some(&json!(2)));
    let offered: Vec<&str> = notify
        .actions
        .iter()
        .step_by(2)
        .map(String::as_str)
        .collect();
    assert_eq!(offered, ["deny", "default", "deny-session"], "{offered:?}");
    let id = desk.server.id_of(title).await;
    desk.server.invoke(id, "allow").await;
    desk.server.invoke(id, "allow-15m").await;
    desk.server.invoke(id, "deny").await;
    let done = finish(child).await;
    assert!(
        done.stdout.starts_with("denied"),
        "an allow sent anyway answered: {done:?}"
    );
    listener.set_nonblocking(true).expect("nonblocking");
    assert!(
        listener.accept().is_err(),
        "a connection reached the listener"
    );
    assert_eq!(desk.ctl_ok(&["grants"]).await, "No session grants.\n");
}
