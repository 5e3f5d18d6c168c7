//! A stand-in for a desktop's tray host: `tests/fake_watcher.py`, a StatusNotifierWatcher
//! (`org.kde.StatusNotifierWatcher`) on a session bus. There is no panel under Xvfb; with
//! this on the bus the app finds a tray host at start (so, for one, it does not open the
//! settings window at start as it does without one). And the panel's other half,
//! [`TrayItem`]: the app's StatusNotifierItem read and its menu clicked over D-Bus, as a
//! panel does.

use std::num::NonZeroUsize;
use std::path::Path;
use std::process::Stdio;

use futures_lite::StreamExt;
use serde_json::Value as Json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};
use tokio::time::Instant;
use zbus::{Connection, MatchRule, MessageStream, OwnedVariant, Variant};

use crate::notification_server::{bounded, to_json};
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
        let mut watcher = Self::spawn(address, false);
        watcher.ready().await;
        watcher
    }

    /// Starts it without its name, which it takes when [`FakeWatcher::come`] says so: a
    /// panel that comes at a chosen moment, at the cost of a name request only (not of
    /// starting Python).
    pub async fn ahead(address: &str) -> Self {
        let mut watcher = Self::spawn(address, true);
        let waiting = watcher.next_line("waiting", |l| l == "waiting").await;
        assert!(
            waiting.is_some(),
            "the fake watcher did not start within {EVENT_TIMEOUT:?}"
        );
        watcher
    }

    /// A watcher started [`FakeWatcher::ahead`] takes its name; returns once it owns it.
    pub async fn come(&mut self) {
        let stdin = self.child.stdin.as_mut().expect("started ahead");
        stdin
            .write_all(b"come\n")
            .await
            .expect("tell the fake watcher");
        stdin.flush().await.expect("tell the fake watcher");
        self.ready().await;
    }

    fn spawn(address: &str, when_told: bool) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("fake_watcher.py");
        let mut cmd = Command::new(PYTHON);
        cmd.arg(&script);
        if when_told {
            cmd.arg("--when-told").stdin(Stdio::piped());
        } else {
            cmd.stdin(Stdio::null());
        }
        let mut child = cmd
            .env("DBUS_SESSION_BUS_ADDRESS", address)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn tests/fake_watcher.py (python3-dbus, python3-gi)");
        let stdout = child.stdout.take().expect("stdout");
        Self {
            child,
            lines: BufReader::new(stdout).lines(),
        }
    }

    async fn ready(&mut self) {
        let ready = self.next_line("ready", |l| l == "ready").await;
        assert!(
            ready.is_some(),
            "the fake watcher did not own its name within {EVENT_TIMEOUT:?}"
        );
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

/// The SNI interface and the menu's.
const ITEM_IFACE: &str = "org.kde.StatusNotifierItem";
const MENU_IFACE: &str = "com.canonical.dbusmenu";
const PROPS_IFACE: &str = "org.freedesktop.DBus.Properties";
const WATCHER: &str = "org.kde.StatusNotifierWatcher";
const WATCHER_PATH: &str = "/StatusNotifierWatcher";

/// The four tray icons of `icons/`, as the app draws them (src-tauri/src/app/tray.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrayState {
    /// Nothing waits (`icons/tray-idle.png`).
    Idle,
    /// A request waits for an answer (`icons/tray-pending.png`).
    Waiting,
    /// Prompts are paused (`icons/tray-paused.png`).
    Paused,
    /// A canary's run is stopped (`icons/tray-alert.png`).
    Alert,
}

impl TrayState {
    const ALL: [TrayState; 4] = [
        TrayState::Idle,
        TrayState::Waiting,
        TrayState::Paused,
        TrayState::Alert,
    ];

    /// Its picture in the repository's `icons/`.
    pub fn file(self) -> std::path::PathBuf {
        let name = match self {
            TrayState::Idle => "tray-idle.png",
            TrayState::Waiting => "tray-pending.png",
            TrayState::Paused => "tray-paused.png",
            TrayState::Alert => "tray-alert.png",
        };
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../icons")
            .join(name)
    }
}

/// A PNG's size, colour type and pixels (palettes and low depths expanded to 8 bits), or
/// why it cannot be read.
fn png_pixels(file: &Path) -> Result<(u32, u32, png::ColorType, Vec<u8>), String> {
    let bytes = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder
        .read_info()
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| format!("{}: too large", file.display()))?;
    let mut buf = vec![0; size];
    let info = reader
        .next_frame(&mut buf)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    buf.truncate(info.buffer_size());
    Ok((info.width, info.height, info.color_type, buf))
}

/// One entry of the item's menu as `com.canonical.dbusmenu.GetLayout` gives it.
#[derive(Debug, Clone)]
pub struct MenuEntry {
    /// Its dbusmenu id (what `Event` takes).
    pub id: i32,
    /// Its properties (`label`, `enabled`, `type`…), values unwrapped.
    pub props: serde_json::Map<String, Json>,
    /// Its children, in order (a submenu's items).
    pub children: Vec<MenuEntry>,
}

impl MenuEntry {
    /// Its `label` ("" for none).
    pub fn label(&self) -> &str {
        self.props
            .get("label")
            .and_then(Json::as_str)
            .unwrap_or_default()
    }

    /// Whether it can be clicked: dbusmenu leaves `enabled` out when it is true.
    pub fn enabled(&self) -> bool {
        self.props
            .get("enabled")
            .and_then(Json::as_bool)
            .unwrap_or(true)
    }

    /// The first entry at any depth (this one included) whose label starts with `label`.
    pub fn find(&self, label: &str) -> Option<&MenuEntry> {
        if self.label().starts_with(label) {
            return Some(self);
        }
        self.children.iter().find_map(|c| c.find(label))
    }

    /// Like [`MenuEntry::find`]; fails the test, showing the whole menu, if there is none.
    pub fn item(&self, label: &str) -> &MenuEntry {
        self.find(label)
            .unwrap_or_else(|| panic!("no menu item labelled {label:?}* in:\n{self}"))
    }

    fn parse(value: &Variant<'_>) -> Result<Self, String> {
        match value {
            Variant::Variant(inner) => Self::parse(inner),
            Variant::Structure(s) => match s.fields() {
                [Variant::I32(id), props, Variant::Array(children)] => Ok(Self {
                    id: *id,
                    props: match to_json(props) {
                        Json::Object(map) => map,
                        other => return Err(format!("item {id}'s properties: {other}")),
                    },
                    children: children
                        .inner()
                        .iter()
                        .map(Self::parse)
                        .collect::<Result<_, _>>()?,
                }),
                other => Err(format!("not a (ia{{sv}}av) menu entry: {other:?}")),
            },
            other => Err(format!("not a menu entry: {other:?}")),
        }
    }

    fn render(&self, depth: usize, out: &mut String) {
        use std::fmt::Write;
        let mut extra: Vec<String> = self
            .props
            .iter()
            .filter(|(k, _)| k.as_str() != "label")
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        extra.sort();
        let _ = writeln!(
            out,
            "{:indent$}[{}] {:?} {}",
            "",
            self.id,
            self.label(),
            extra.join(" "),
            indent = depth * 2
        );
        for child in &self.children {
            child.render(depth + 1, out);
        }
    }
}

impl std::fmt::Display for MenuEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = String::new();
        self.render(0, &mut out);
        f.write_str(&out)
    }
}

/// The app's StatusNotifierItem, read and clicked over D-Bus as a panel does: its
/// properties (`org.kde.StatusNotifierItem`), and its menu through the object its `Menu`
/// property names (`com.canonical.dbusmenu`: `GetLayout`, `Event`). Changes are awaited
/// through the signals the item's connection sends (`NewIcon`, `LayoutUpdated`,
/// `ItemsPropertiesUpdated`…: a panel redraws on them and on nothing else), bounded.
pub struct TrayItem {
    conn: Connection,
    /// The item's bus name (the app's unique connection name).
    pub service: String,
    /// The item's object path.
    pub path: String,
    /// The menu's object path (the item's `Menu` property).
    pub menu: String,
    /// Every signal from the item's connection, subscribed before anything was read.
    signals: tokio::sync::Mutex<MessageStream>,
}

impl TrayItem {
    /// The item process `pid` registered with the [`FakeWatcher`] on the bus at `address`
    /// (the watcher has reported the registration: [`FakeWatcher::item_from`]).
    pub async fn of(address: &str, pid: u32) -> Self {
        let conn = bounded(
            "connect to the session bus",
            zbus::connection::Builder::address(address).build(),
        )
        .await;
        let items = get_property(
            &conn,
            WATCHER,
            WATCHER_PATH,
            WATCHER,
            "RegisteredStatusNotifierItems",
        )
        .await;
        let Json::Array(items) = to_json(&items) else {
            panic!("RegisteredStatusNotifierItems is not a list: {items:?}");
        };
        let dbus = bounded("DBus proxy", zbus::fdo::DBusProxy::new(&conn)).await;
        let mut found = None;
        for item in items.iter().filter_map(Json::as_str) {
            // `<unique name><object path>`, as appindicator registers it.
            let Some(slash) = item.find('/') else {
                continue;
            };
            let (service, path) = item.split_at(slash);
            let name = zbus::names::BusName::try_from(service.to_owned()).expect("a bus name");
            let owner = bounded(
                "GetConnectionUnixProcessID",
                dbus.get_connection_unix_process_id(name),
            )
            .await;
            if owner == pid {
                found = Some((service.to_owned(), path.to_owned()));
            }
        }
        let (service, path) =
            found.unwrap_or_else(|| panic!("no item of pid {pid} among {items:?}"));
        let signals = bounded(
            "subscribe to the item's signals",
            MessageStream::for_match_rule(
                MatchRule::builder()
                    .msg_type(zbus::message::Type::Signal)
                    .sender(service.as_str())
                    .build()
                    .expect("match rule"),
                &conn,
                NonZeroUsize::new(4096),
            ),
        )
        .await;
        let menu = match &*get_property(&conn, &service, &path, ITEM_IFACE, "Menu").await {
            Variant::ObjectPath(menu) => menu.to_string(),
            other => panic!("the item's Menu property is not an object path: {other:?}"),
        };
        Self {
            conn,
            service,
            path,
            menu,
            signals: tokio::sync::Mutex::new(signals),
        }
    }

    /// The item's properties (`org.kde.StatusNotifierItem`), values unwrapped.
    pub async fn properties(&self) -> serde_json::Map<String, Json> {
        let reply = bounded(
            "the item's GetAll",
            self.conn.call_method(
                Some(self.service.as_str()),
                self.path.as_str(),
                Some(PROPS_IFACE),
                "GetAll",
                &(ITEM_IFACE,),
            ),
        )
        .await;
        let all: std::collections::HashMap<String, OwnedVariant> =
            reply.body().deserialize().expect("GetAll: a{sv}");
        all.iter().map(|(k, v)| (k.clone(), to_json(v))).collect()
    }

    /// Which of the four icons the item shows now (its `IconName`: the PNG tray-icon
    /// wrote, found directly or in `IconThemePath`), compared pixel for pixel; Err says
    /// what it shows instead.
    pub async fn state(&self) -> Result<TrayState, String> {
        let props = self.properties().await;
        let name = props
            .get("IconName")
            .and_then(Json::as_str)
            .unwrap_or_default();
        let theme = props
            .get("IconThemePath")
            .and_then(Json::as_str)
            .unwrap_or_default();
        let file = if name.starts_with('/') {
            std::path::PathBuf::from(name)
        } else {
            Path::new(theme).join(format!("{name}.png"))
        };
        let shown = png_pixels(&file).map_err(|e| format!("the icon {e}; the item: {props:?}"))?;
        for state in TrayState::ALL {
            let known = png_pixels(&state.file()).unwrap_or_else(|e| panic!("{e}"));
            if known == shown {
                return Ok(state);
            }
        }
        Err(format!(
            "an icon that is none of the four ({}: {}x{}); the item: {props:?}",
            file.display(),
            shown.0,
            shown.1
        ))
    }

    /// The whole menu (`GetLayout(0, -1, [])`).
    pub async fn layout(&self) -> MenuEntry {
        let reply = bounded(
            "the menu's GetLayout",
            self.conn.call_method(
                Some(self.service.as_str()),
                self.menu.as_str(),
                Some(MENU_IFACE),
                "GetLayout",
                &(0i32, -1i32, Vec::<String>::new()),
            ),
        )
        .await;
        type Entry = (
            i32,
            std::collections::HashMap<String, OwnedVariant>,
            Vec<OwnedVariant>,
        );
        let (_revision, (id, props, children)): (u32, Entry) =
            reply.body().deserialize().expect("GetLayout: u(ia{sv}av)");
        MenuEntry {
            id,
            props: props.iter().map(|(k, v)| (k.clone(), to_json(v))).collect(),
            children: children
                .iter()
                .map(|child| MenuEntry::parse(child))
                .collect::<Result<_, _>>()
                .unwrap_or_else(|e| panic!("GetLayout: {e}")),
        }
    }

    /// Clicks menu entry `id`, as a panel does: `Event(id, "clicked", 0, 0)`.
    pub async fn click(&self, id: i32) {
        bounded(
            "the menu's Event clicked",
            self.conn.call_method(
                Some(self.service.as_str()),
                self.menu.as_str(),
                Some(MENU_IFACE),
                "Event",
                &(id, "clicked", Variant::from(0i32), 0u32),
            ),
        )
        .await;
    }

    /// Clicks the menu entry whose label starts with `label` (it must be enabled).
    pub async fn click_item(&self, label: &str) {
        let layout = self.layout().await;
        let entry = layout.item(label);
        assert!(entry.enabled(), "{label:?} is disabled:\n{layout}");
        self.click(entry.id).await;
    }

    /// Evaluates `check` now and after every signal of the item until it gives Ok; fails
    /// after [`EVENT_TIMEOUT`] naming `what` and showing its last Err.
    pub async fn until<T, Fut>(&self, what: &str, mut check: impl FnMut() -> Fut) -> T
    where
        Fut: std::future::Future<Output = Result<T, String>>,
    {
        let mut signals = self.signals.lock().await;
        let deadline = Instant::now() + EVENT_TIMEOUT;
        loop {
            // Subscribed first, then looked: a change in between comes as a signal.
            let last = match check().await {
                Ok(found) => return found,
                Err(last) => last,
            };
            match tokio::time::timeout_at(deadline, signals.next()).await {
                Ok(Some(Ok(_))) => {}
                Ok(Some(Err(e))) => panic!("the item's signals: {e}"),
                Ok(None) => panic!("the item's signals ended before: {what}; last seen: {last}"),
                Err(_) => panic!("{what}: not within {EVENT_TIMEOUT:?}; last seen: {last}"),
            }
        }
    }

    /// Waits (bounded) until the item shows `state`'s icon; `when` says at what point of
    /// the test, for the failure.
    pub async fn wait_state(&self, state: TrayState, when: &str) {
        self.until(&format!("the {state:?} tray icon {when}"), || async {
            match self.state().await {
                Ok(shown) if shown == state => Ok(()),
                Ok(shown) => Err(format!("the {shown:?} icon")),
                Err(e) => Err(e),
            }
        })
        .await;
    }

    /// Waits (bounded) until `wanted` holds for the menu; returns that menu.
    pub async fn wait_menu(&self, what: &str, wanted: impl Fn(&MenuEntry) -> bool) -> MenuEntry {
        self.until(what, || async {
            let layout = self.layout().await;
            if wanted(&layout) {
                Ok(layout)
            } else {
                Err(format!("the menu\n{layout}"))
            }
        })
        .await
    }
}

/// `Get(iface, prop)` on `dest`'s object `path`, uncached and bounded.
async fn get_property(
    conn: &Connection,
    dest: &str,
    path: &str,
    iface: &str,
    prop: &str,
) -> OwnedVariant {
    let reply = bounded(
        &format!("Get {iface}.{prop}"),
        conn.call_method(Some(dest), path, Some(PROPS_IFACE), "Get", &(iface, prop)),
    )
    .await;
    reply
        .body()
        .deserialize()
        .unwrap_or_else(|e| panic!("Get {iface}.{prop}: {e}"))
}
