//! Debian's dbusmock notification daemon (`python3 -m dbusmock --template
//! notification_daemon`) on a session bus of the test's own: the mock stands in for the
//! desktop's notification server, which cannot be real here. Every wait is for the mock's
//! `MethodCalled` signals or a bus name change, bounded; calls are read back with
//! `org.freedesktop.DBus.Mock.GetMethodCalls`.

use std::num::NonZeroUsize;
use std::path::Path;
use std::process::Stdio;

use futures_lite::StreamExt;
use serde_json::{json, Value as Json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::time::Instant;
use zbus::message::Type;
use zbus::{Connection, MatchRule, MessageStream, OwnedVariant, Variant};

use crate::real_app::RunningApp;
use crate::EVENT_TIMEOUT;

/// The notification server's bus name and interface.
pub const SERVER: &str = "org.freedesktop.Notifications";
/// Its object path.
pub const SERVER_PATH: &str = "/org/freedesktop/Notifications";
const MOCK_IFACE: &str = "org.freedesktop.DBus.Mock";
const BUS: &str = "org.freedesktop.DBus";

/// A D-Bus value as JSON, variants unwrapped, to compare with `json!`.
pub fn to_json(value: &Variant<'_>) -> Json {
    match value {
        Variant::U8(n) => json!(n),
        Variant::Bool(b) => json!(b),
        Variant::I16(n) => json!(n),
        Variant::U16(n) => json!(n),
        Variant::I32(n) => json!(n),
        Variant::U32(n) => json!(n),
        Variant::I64(n) => json!(n),
        Variant::U64(n) => json!(n),
        Variant::F64(n) => json!(n),
        Variant::Str(s) => json!(s.as_str()),
        Variant::Variant(inner) => to_json(inner),
        Variant::Array(items) => Json::Array(items.inner().iter().map(to_json).collect()),
        Variant::Dict(dict) => Json::Object(
            dict.iter()
                .map(|(k, v)| match to_json(k) {
                    Json::String(k) => (k, to_json(v)),
                    other => (other.to_string(), to_json(v)),
                })
                .collect(),
        ),
        other => json!(other.to_string()),
    }
}

/// One `Notify` call as the mock logged it.
#[derive(Debug, Clone)]
pub struct Notify {
    /// `app_name`.
    pub app_name: String,
    /// `replaces_id` (0: a new notification).
    pub replaces_id: u32,
    /// `summary`.
    pub summary: String,
    /// `body`.
    pub body: String,
    /// `actions`: key, label, key, label…
    pub actions: Vec<String>,
    /// `hints`.
    pub hints: serde_json::Map<String, Json>,
}

impl Notify {
    /// From the call's eight arguments.
    pub fn parse(args: &[Json]) -> Self {
        assert_eq!(args.len(), 8, "Notify takes 8 arguments: {args:?}");
        let string = |v: &Json| v.as_str().expect("a string").to_owned();
        Self {
            app_name: string(&args[0]),
            replaces_id: args[1].as_u64().expect("replaces_id") as u32,
            summary: string(&args[3]),
            body: string(&args[4]),
            actions: args[5]
                .as_array()
                .expect("actions")
                .iter()
                .map(string)
                .collect(),
            hints: args[6].as_object().expect("hints").clone(),
        }
    }
}

/// A session bus of the test's own, with no service activation: nothing can start a
/// notification daemon behind the mock's back, and tests can own the name in parallel.
pub struct PrivateBus {
    daemon: Child,
    /// Its address, for `DBUS_SESSION_BUS_ADDRESS`.
    pub address: String,
}

impl PrivateBus {
    /// Starts `dbus-daemon` listening in `dir`; returns once it printed its address.
    pub async fn start(dir: &Path) -> Self {
        Self::listening(dir, &format!("unix:dir={}", dir.display())).await
    }

    /// Starts `dbus-daemon` listening on the socket `socket` (`unix:path=`): a bus that
    /// can be stopped and started again at the same address. Its config goes in `dir`.
    pub async fn start_at(dir: &Path, socket: &Path) -> Self {
        Self::listening(dir, &format!("unix:path={}", socket.display())).await
    }

    /// Stops the daemon (SIGKILL, as a crash would) and waits until it is gone: every
    /// connection to it is closed by then.
    pub async fn stop(&mut self) {
        bounded("kill dbus-daemon", self.daemon.kill()).await;
    }

    async fn listening(dir: &Path, listen: &str) -> Self {
        std::fs::create_dir_all(dir).expect("mkdir bus dir");
        let config = dir.join("bus.conf");
        std::fs::write(
            &config,
            format!(
                r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>{listen}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#
            ),
        )
        .expect("write the bus config");
        let mut daemon = Command::new("dbus-daemon")
            .arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--print-address"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn dbus-daemon (Debian package dbus)");
        let stdout = daemon.stdout.take().expect("stdout");
        let mut address = String::new();
        tokio::time::timeout(
            EVENT_TIMEOUT,
            BufReader::new(stdout).read_line(&mut address),
        )
        .await
        .expect("dbus-daemon printed no address in time")
        .expect("read the bus address");
        assert!(address.starts_with("unix:"), "bus address {address:?}");
        Self {
            daemon,
            address: address.trim().to_owned(),
        }
    }

    /// A connection of the test's own (bounded).
    pub async fn connect(&self) -> Connection {
        tokio::time::timeout(
            EVENT_TIMEOUT,
            zbus::connection::Builder::address(self.address.as_str()).build(),
        )
        .await
        .expect("connecting to the private bus: no answer")
        .expect("connect to the private bus")
    }
}

/// Runs one D-Bus call within [`EVENT_TIMEOUT`]; a hung call fails naming `what`.
pub async fn bounded<T, E: std::fmt::Display>(
    what: &str,
    call: impl std::future::Future<Output = Result<T, E>>,
) -> T {
    match tokio::time::timeout(EVENT_TIMEOUT, call).await {
        Ok(Ok(value)) => value,
        Ok(Err(e)) => panic!("D-Bus {what}: {e}"),
        Err(_) => panic!("D-Bus {what}: no answer within {EVENT_TIMEOUT:?}"),
    }
}

/// The mock notification server on a private bus, and the calls it receives.
pub struct NotificationServer {
    /// The private bus.
    pub bus: PrivateBus,
    /// The test's own connection to it.
    pub conn: Connection,
    mock: Child,
    /// The mock's `MethodCalled` signals, subscribed before the mock started.
    calls: MessageStream,
}

impl NotificationServer {
    /// A private bus in `dir` and the mock on it, offering `capabilities`
    /// (`"body actions sound"`…).
    pub async fn start(dir: &Path, capabilities: &str) -> Self {
        Self::start_on(PrivateBus::start(dir).await, capabilities).await
    }

    /// The mock on `bus` (a bus started some other way: [`PrivateBus::start_at`]).
    pub async fn start_on(bus: PrivateBus, capabilities: &str) -> Self {
        let conn = bus.connect().await;
        let calls = bounded(
            "subscribe to the mock's calls",
            MessageStream::for_match_rule(
                MatchRule::builder()
                    .msg_type(Type::Signal)
                    .interface(MOCK_IFACE)
                    .member("MethodCalled")
                    .path(SERVER_PATH)
                    .build()
                    .expect("match rule"),
                &conn,
                NonZeroUsize::new(4096),
            ),
        )
        .await;
        let mock = start_mock(&bus, &conn, capabilities).await;
        Self {
            bus,
            conn,
            mock,
            calls,
        }
    }

    /// The environment the app needs to use this bus.
    pub fn app_env(&self) -> [(&str, &str); 2] {
        [
            ("DBUS_SESSION_BUS_ADDRESS", self.bus.address.as_str()),
            // No accessibility bus on a private bus; GTK need not look for one.
            ("NO_AT_BRIDGE", "1"),
        ]
    }

    /// The next call of `method` the mock receives for which `matches` holds (earlier
    /// calls are passed over); its arguments.
    pub async fn next_call(
        &mut self,
        app: &RunningApp,
        method: &str,
        matches: impl Fn(&[Json]) -> bool,
    ) -> Vec<Json> {
        self.next_call_logged(|| app.log(), method, matches).await
    }

    /// [`Self::next_call`] for an app started some other way (under WebDriver): `log` gives
    /// what to print on failure.
    pub async fn next_call_logged(
        &mut self,
        log: impl Fn() -> String,
        method: &str,
        matches: impl Fn(&[Json]) -> bool,
    ) -> Vec<Json> {
        let deadline = Instant::now() + EVENT_TIMEOUT;
        loop {
            let msg = match tokio::time::timeout_at(deadline, self.calls.next()).await {
                Ok(Some(Ok(msg))) => msg,
                Ok(Some(Err(e))) => panic!("the mock's call stream: {e}"),
                Ok(None) => panic!("the mock's call stream ended"),
                Err(_) => panic!(
                    "no matching {method} call within {EVENT_TIMEOUT:?}; the app's log:\n{}",
                    log()
                ),
            };
            let (name, args): (String, Vec<OwnedVariant>) =
                msg.body().deserialize().expect("MethodCalled(sav)");
            let args: Vec<Json> = args.iter().map(|v| to_json(v)).collect();
            if name == method && matches(&args) {
                return args;
            }
        }
    }

    /// The next `Notify` whose summary is `summary`.
    pub async fn next_notify(&mut self, app: &RunningApp, summary: &str) -> Notify {
        let args = self
            .next_call(app, "Notify", |args| args.get(3) == Some(&json!(summary)))
            .await;
        Notify::parse(&args)
    }

    /// Every call of `method` so far, from the mock's own log.
    pub async fn method_calls(&self, method: &str) -> Vec<Vec<Json>> {
        let reply = bounded(
            "GetMethodCalls",
            self.conn.call_method(
                Some(SERVER),
                SERVER_PATH,
                Some(MOCK_IFACE),
                "GetMethodCalls",
                &(method,),
            ),
        )
        .await;
        let calls: Vec<(u64, Vec<OwnedVariant>)> = reply.body().deserialize().expect("a(tav)");
        calls
            .iter()
            .map(|(_, args)| args.iter().map(|v| to_json(v)).collect())
            .collect()
    }

    /// Every `Notify` so far with the id the mock gave it: it numbers new notifications 1,
    /// 2, … in the order it received them, and a replacement keeps its id.
    pub async fn notifications(&self) -> Vec<(u32, Notify)> {
        let mut next = 1;
        self.method_calls("Notify")
            .await
            .iter()
            .map(|args| {
                let notify = Notify::parse(args);
                let id = if notify.replaces_id != 0 {
                    notify.replaces_id
                } else {
                    next += 1;
                    next - 1
                };
                (id, notify)
            })
            .collect()
    }

    /// The ids of every `Notify` so far titled `summary`, in the order received.
    pub async fn ids_titled(&self, summary: &str) -> Vec<u32> {
        self.notifications()
            .await
            .into_iter()
            .filter(|(_, n)| n.summary == summary)
            .map(|(id, _)| id)
            .collect()
    }

    /// The id of the first `Notify` so far titled `summary`; fails if there is none.
    pub async fn id_of(&self, summary: &str) -> u32 {
        let ids = self.ids_titled(summary).await;
        *ids.first()
            .unwrap_or_else(|| panic!("no Notify titled {summary:?} so far"))
    }

    /// The ids `CloseNotification` was called with so far.
    pub async fn closed_ids(&self) -> Vec<u64> {
        self.method_calls("CloseNotification")
            .await
            .iter()
            .map(|args| args[0].as_u64().expect("an id"))
            .collect()
    }

    /// Sends `ActionInvoked(id, action)` from the test's own connection (not the server)
    /// straight to every connection the app has on the bus; returns how many.
    pub async fn forge_action(&self, app: &RunningApp, id: u32, action: &str) -> usize {
        let dbus = bounded("DBus proxy", zbus::fdo::DBusProxy::new(&self.conn)).await;
        let mut sent = 0;
        for name in bounded("ListNames", dbus.list_names()).await {
            if !name.starts_with(':') {
                continue;
            }
            let pid = tokio::time::timeout(
                EVENT_TIMEOUT,
                dbus.get_connection_unix_process_id(name.clone().into()),
            )
            .await
            .expect("D-Bus GetConnectionUnixProcessID: no answer");
            if pid.ok() != Some(app.pid) {
                continue;
            }
            bounded(
                "emit a forged ActionInvoked",
                self.conn.emit_signal(
                    Some(name.as_str()),
                    SERVER_PATH,
                    SERVER,
                    "ActionInvoked",
                    &(id, action),
                ),
            )
            .await;
            sent += 1;
        }
        sent
    }

    /// Kills the notification daemon and waits until the bus has noticed (its name is free).
    pub async fn stop(&mut self) {
        let mut owners = owner_changes(&self.conn).await;
        bounded("kill dbusmock", self.mock.kill()).await;
        let dbus = bounded("DBus proxy", zbus::fdo::DBusProxy::new(&self.conn)).await;
        let name = zbus::names::BusName::try_from(SERVER).expect("bus name");
        let deadline = Instant::now() + EVENT_TIMEOUT;
        while bounded("NameHasOwner", dbus.name_has_owner(name.clone())).await {
            let changed = tokio::time::timeout_at(deadline, owners.next()).await;
            assert!(
                changed.is_ok(),
                "{SERVER} still owned after its daemon died"
            );
        }
    }

    /// Stops the whole session bus (SIGKILL to the daemon, as a crash would), the mock
    /// with it; returns once both processes are gone.
    pub async fn stop_bus(mut self) {
        self.bus.stop().await;
        // dbus-python exits when its bus disconnects; killed anyway, so it cannot linger.
        bounded("kill dbusmock", self.mock.kill()).await;
    }

    /// Starts another notification daemon (after [`NotificationServer::stop`]).
    pub async fn restart(&mut self, capabilities: &str) {
        self.mock = start_mock(&self.bus, &self.conn, capabilities).await;
    }

    /// Clicks a notification's button, as the server does: `ActionInvoked(id, action)`.
    pub async fn invoke(&self, id: u32, action: &str) {
        bounded(
            "EmitSignal ActionInvoked",
            self.conn.call_method(
                Some(SERVER),
                SERVER_PATH,
                Some(MOCK_IFACE),
                "EmitSignal",
                &(
                    SERVER,
                    "ActionInvoked",
                    "us",
                    vec![Variant::from(id), Variant::from(action)],
                ),
            ),
        )
        .await;
    }
}

/// Changes of the notification server's owner from now on.
async fn owner_changes(conn: &Connection) -> MessageStream {
    owner_changes_of(conn, SERVER).await
}

/// Changes of `name`'s owner from now on.
async fn owner_changes_of(conn: &Connection, name: &str) -> MessageStream {
    bounded(
        "subscribe to NameOwnerChanged",
        MessageStream::for_match_rule(
            MatchRule::builder()
                .msg_type(Type::Signal)
                .sender(BUS)
                .interface(BUS)
                .member("NameOwnerChanged")
                .add_arg(name)
                .build()
                .expect("match rule"),
            conn,
            None,
        ),
    )
    .await
}

/// Waits (bounded, on `NameOwnerChanged`) until `name` has an owner on `conn`'s bus
/// (`owned`) or has none.
pub async fn wait_owner(conn: &Connection, name: &str, owned: bool) {
    // Watched before asking, so a change in between is not missed.
    let mut owners = owner_changes_of(conn, name).await;
    let dbus = bounded("DBus proxy", zbus::fdo::DBusProxy::new(conn)).await;
    let bus_name = zbus::names::BusName::try_from(name).expect("bus name");
    let deadline = Instant::now() + EVENT_TIMEOUT;
    while bounded("NameHasOwner", dbus.name_has_owner(bus_name.clone())).await != owned {
        let changed = tokio::time::timeout_at(deadline, owners.next()).await;
        assert!(
            changed.is_ok(),
            "{name}: still {} after {EVENT_TIMEOUT:?}",
            if owned { "unowned" } else { "owned" }
        );
    }
}

/// Starts the dbusmock notification daemon and waits until it owns its name.
async fn start_mock(bus: &PrivateBus, conn: &Connection, capabilities: &str) -> Child {
    let params = json!({ "capabilities": capabilities }).to_string();
    let args = ["--template", "notification_daemon", "-p", params.as_str()];
    start_dbusmock(bus, conn, SERVER, &args).await
}

/// Starts `python3 -m dbusmock --session ARGS…` (Debian's python3-dbusmock) on `bus` and
/// waits (bounded, on `NameOwnerChanged`) until it owns `name`; fails if it exits first.
pub async fn start_dbusmock(
    bus: &PrivateBus,
    conn: &Connection,
    name: &str,
    args: &[&str],
) -> Child {
    // Watched before the mock starts, so its arrival cannot slip by.
    let mut owners = owner_changes_of(conn, name).await;
    let mut mock = Command::new("/usr/bin/python3")
        .args(["-m", "dbusmock", "--session"])
        .args(args)
        .env("DBUS_SESSION_BUS_ADDRESS", &bus.address)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn dbusmock (Debian package python3-dbusmock)");
    let dbus = bounded("DBus proxy", zbus::fdo::DBusProxy::new(conn)).await;
    let bus_name = zbus::names::BusName::try_from(name).expect("bus name");
    let deadline = Instant::now() + EVENT_TIMEOUT;
    while !bounded("NameHasOwner", dbus.name_has_owner(bus_name.clone())).await {
        tokio::select! {
            changed = tokio::time::timeout_at(deadline, owners.next()) => {
                assert!(changed.is_ok(), "dbusmock did not own {name} within {EVENT_TIMEOUT:?}");
            }
            status = mock.wait() => panic!("dbusmock exited at start: {status:?}"),
        }
    }
    mock
}
