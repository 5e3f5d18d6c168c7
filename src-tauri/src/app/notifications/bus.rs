//! The session-bus side of notifications: one long-lived connection that follows the
//! notification server (who owns its name, what it can do) and routes its `ActionInvoked`
//! and `NotificationClosed` signals to whoever waits on that notification id. The
//! notifications are built with notify-rust's types and sent on this same connection:
//! notify-rust's own `show_async` opens a new bus connection (connect, authenticate,
//! `Hello`) for every notification, which is most of a notification's time.
//!
//! notify-rust's own waiting (`wait_for_action_async`) is not used: it unwraps D-Bus errors,
//! and with `panic = "abort"` a bus hiccup would take the app down; it also opens one
//! signal subscription per notification where one for all of them does.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use futures_lite::StreamExt;
use notify_rust::Notification;
use tokio::sync::{mpsc, watch};
use zbus::fdo::DBusProxy;
use zbus::message::Type;
use zbus::names::BusName;
use zbus::{Connection, MatchRule, MessageStream};

/// The notification server's well-known name (and interface).
pub const SERVER: &str = "org.freedesktop.Notifications";

const SERVER_PATH: &str = "/org/freedesktop/Notifications";

/// Owned by the StatusNotifierItem host (a panel's tray) when there is one.
pub const TRAY_WATCHER: &str = "org.kde.StatusNotifierWatcher";

const BUS: &str = "org.freedesktop.DBus";

/// How long a call on our connection may take before it counts as failed: a server that
/// hangs must not hang what waits on it.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Signals for ids nobody waits on (yet) are kept this long: the server's reply to
/// `Notify` and a very fast click are read by different tasks, so the click may be seen
/// before the id is known.
const EARLY_TTL: Duration = Duration::from_secs(10);

/// At most this many such signals are kept (other applications' notifications send them
/// too).
const EARLY_MAX: usize = 32;

/// What the server said about one of our notifications.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    /// The user invoked this action (`"default"`: clicked the notification itself).
    Action(String),
    /// The notification went away (1 expired, 2 dismissed, 3 closed by a call, 4 other).
    Closed(u32),
    /// The server went away (or was replaced), and its notifications with it.
    ServerGone,
}

/// What the notification server can do, as far as we use it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Caps {
    /// It shows action buttons and reports `ActionInvoked`.
    pub actions: bool,
    /// It interprets markup in the body (so text must be escaped).
    pub body_markup: bool,
}

impl Caps {
    /// Reads the `GetCapabilities` answer.
    pub fn from_list(list: &[String]) -> Self {
        Self {
            actions: list.iter().any(|c| c == "actions"),
            body_markup: list.iter().any(|c| c == "body-markup"),
        }
    }
}

#[derive(Default)]
struct State {
    /// The unique name owning [`SERVER`]; only its signals count.
    owner: Option<String>,
    /// The owner's capabilities, asked once per owner.
    caps: Option<Caps>,
    /// Counts changes of owner: a notification sent in another generation is not ours to
    /// close on this server.
    generation: u64,
    routes: HashMap<u32, mpsc::UnboundedSender<Signal>>,
    early: VecDeque<(Instant, u32, Signal)>,
}

/// Our connection to the session bus.
pub struct Bus {
    conn: Connection,
    dbus: DBusProxy<'static>,
    state: Mutex<State>,
    /// Whether [`TRAY_WATCHER`] has an owner; None until known.
    tray_host: watch::Sender<Option<bool>>,
    /// The connection closed (the bus went away): a new one is needed.
    closed: AtomicBool,
}

impl Bus {
    /// Connects to the session bus and starts following the notification server.
    pub async fn connect() -> zbus::Result<Arc<Self>> {
        let conn = zbus::connection::Builder::session()
            .method_timeout(CALL_TIMEOUT)
            .build()
            .await?;
        // One stream for everything, so a change of owner and the signals that follow it
        // are seen in the order the bus sent them.
        let stream = MessageStream::from(&conn);
        let dbus = DBusProxy::new(&conn).await?;
        dbus.add_match_rule(
            MatchRule::builder()
                .msg_type(Type::Signal)
                .sender(SERVER)
                .interface(SERVER)
                .path(SERVER_PATH)
                .build()?,
        )
        .await?;
        // The tray watcher's too, subscribed before asking, so a tray host that starts just
        // after us is not missed.
        for name in [SERVER, TRAY_WATCHER] {
            dbus.add_match_rule(
                MatchRule::builder()
                    .msg_type(Type::Signal)
                    .sender(BUS)
                    .interface(BUS)
                    .member("NameOwnerChanged")
                    .add_arg(name)
                    .build()?,
            )
            .await?;
        }
        let owner = match dbus.get_name_owner(BusName::try_from(SERVER)?).await {
            Ok(owner) => Some(owner.to_string()),
            // No server (yet): one may start later, and NameOwnerChanged will say so.
            Err(_) => None,
        };
        let bus = Arc::new(Self {
            conn,
            dbus,
            state: Mutex::new(State {
                owner,
                ..State::default()
            }),
            tray_host: watch::Sender::new(None),
            closed: AtomicBool::new(false),
        });
        tokio::spawn(dispatch(Arc::downgrade(&bus), stream));
        match bus
            .dbus
            .name_has_owner(BusName::try_from(TRAY_WATCHER)?)
            .await
        {
            // A NameOwnerChanged the dispatcher saw meanwhile is newer than this answer.
            Ok(has) => {
                bus.tray_host.send_if_modified(|known| {
                    let unknown = known.is_none();
                    if unknown {
                        *known = Some(has);
                    }
                    unknown
                });
            }
            Err(e) => tracing::debug!("cannot ask the session bus for a tray host: {e}"),
        }
        Ok(bus)
    }

    /// The connection has closed: nothing sent on it arrives, no signal comes.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// The connection closed: every notification of it is gone with its bus.
    fn on_closed(&self) {
        self.closed.store(true, Ordering::Release);
        let mut state = self.state();
        state.owner = None;
        state.caps = None;
        state.generation += 1;
        state.early.clear();
        for (_, waiting) in state.routes.drain() {
            let _ = waiting.send(Signal::ServerGone);
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The server's capabilities (asked once per server).
    pub async fn capabilities(&self) -> zbus::Result<Caps> {
        if let Some(caps) = self.state().caps {
            return Ok(caps);
        }
        let list: Vec<String> = self
            .conn
            .call_method(
                Some(SERVER),
                SERVER_PATH,
                Some(SERVER),
                "GetCapabilities",
                &(),
            )
            .await?
            .body()
            .deserialize()?;
        let caps = Caps::from_list(&list);
        self.state().caps = Some(caps);
        Ok(caps)
    }

    /// Sends `notification` (`Notify`), in place of notification `replaces` if given; the
    /// server's id for it.
    pub async fn notify(
        &self,
        notification: &Notification,
        replaces: Option<u32>,
    ) -> zbus::Result<u32> {
        let hints: HashMap<&str, zbus::Variant<'_>> =
            notification.hints.iter().map(Into::into).collect();
        self.conn
            .call_method(
                Some(SERVER),
                SERVER_PATH,
                Some(SERVER),
                "Notify",
                &(
                    &notification.appname,
                    replaces.unwrap_or(0),
                    &notification.icon,
                    &notification.summary,
                    &notification.body,
                    &notification.actions,
                    hints,
                    i32::from(notification.timeout),
                ),
            )
            .await?
            .body()
            .deserialize()
    }

    /// Withdraws notification `id` (`CloseNotification`).
    pub async fn close_notification(&self, id: u32) -> zbus::Result<()> {
        self.conn
            .call_method(
                Some(SERVER),
                SERVER_PATH,
                Some(SERVER),
                "CloseNotification",
                &(id,),
            )
            .await?;
        Ok(())
    }

    /// Follows whether a StatusNotifierItem host (a tray) is on the bus: None until the
    /// bus said, then each change as NameOwnerChanged reports it.
    pub fn tray_host(&self) -> watch::Receiver<Option<bool>> {
        self.tray_host.subscribe()
    }

    /// The current server generation; take it before sending a notification and pass it
    /// to [`Bus::subscribe`].
    pub fn generation(&self) -> u64 {
        self.state().generation
    }

    /// Signals for notification `id`, sent in `generation`, from now on (and any that
    /// arrived just before). If the server changed since, the first is `ServerGone`.
    pub fn subscribe(self: &Arc<Self>, id: u32, generation: u64) -> Subscription {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut state = self.state();
        if state.generation != generation {
            let _ = tx.send(Signal::ServerGone);
        }
        let now = Instant::now();
        state.early.retain(|(at, early_id, signal)| {
            if *early_id != id {
                return now.duration_since(*at) < EARLY_TTL;
            }
            if now.duration_since(*at) < EARLY_TTL {
                let _ = tx.send(signal.clone());
            }
            false
        });
        state.routes.insert(id, tx);
        Subscription {
            bus: Arc::clone(self),
            id,
            rx,
        }
    }

    fn on_message(&self, msg: &zbus::Message) {
        let header = msg.header();
        if header.message_type() != Type::Signal {
            return;
        }
        let sender = header.sender().map(|s| s.as_str());
        let member = header.member().map(|m| m.as_str());
        match (header.interface().map(|i| i.as_str()), member) {
            (Some(BUS), Some("NameOwnerChanged")) => {
                // Only the bus itself can say who owns a name.
                if sender != Some(BUS) {
                    return;
                }
                let Ok((name, _old, new)) = msg.body().deserialize::<(String, String, String)>()
                else {
                    return;
                };
                if name == TRAY_WATCHER {
                    self.tray_host.send_replace(Some(!new.is_empty()));
                } else if name == SERVER {
                    let mut state = self.state();
                    state.owner = (!new.is_empty()).then_some(new);
                    // A new server: new capabilities, and ids that mean something else (so
                    // nobody may close "their" id on it).
                    state.caps = None;
                    state.generation += 1;
                    state.early.clear();
                    for (_, waiting) in state.routes.drain() {
                        let _ = waiting.send(Signal::ServerGone);
                    }
                }
            }
            (Some(SERVER), Some(member @ ("ActionInvoked" | "NotificationClosed"))) => {
                let mut state = self.state();
                // Anyone can send a signal to us; only the server's may answer a prompt.
                if sender.is_none() || sender != state.owner.as_deref() {
                    tracing::debug!(?sender, "ignored a notification signal not from the server");
                    return;
                }
                let body = msg.body();
                let (id, signal) = if member == "ActionInvoked" {
                    let Ok((id, action)) = body.deserialize::<(u32, String)>() else {
                        return;
                    };
                    (id, Signal::Action(action))
                } else {
                    let Ok((id, reason)) = body.deserialize::<(u32, u32)>() else {
                        return;
                    };
                    (id, Signal::Closed(reason))
                };
                state.route(id, signal);
            }
            _ => {}
        }
    }
}

/// Whether a tray host was there by the end of the start-up grace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostAtStart {
    /// It was, or appeared within the grace.
    Present,
    /// The bus says nobody owns [`TRAY_WATCHER`].
    Absent,
    /// The bus never said.
    Unknown,
    /// The bus connection is gone.
    BusGone,
}

/// Waits up to `grace` for a tray host (as [`Bus::tray_host`] reports it), returning as
/// soon as one is there: a panel that starts a moment after the app is not "no tray".
pub async fn await_tray_host(
    host: &mut watch::Receiver<Option<bool>>,
    grace: Duration,
) -> HostAtStart {
    let waited = tokio::time::timeout(grace, host.wait_for(|h| *h == Some(true)))
        .await
        .map(|found| found.map(|_| ()));
    match waited {
        Ok(Ok(())) => HostAtStart::Present,
        Ok(Err(_)) => HostAtStart::BusGone,
        Err(_) => match *host.borrow() {
            Some(true) => HostAtStart::Present,
            Some(false) => HostAtStart::Absent,
            None => HostAtStart::Unknown,
        },
    }
}

/// Reads the connection's messages until it closes (or the app drops the bus).
async fn dispatch(bus: Weak<Bus>, mut stream: MessageStream) {
    while let Some(msg) = stream.next().await {
        let Ok(msg) = msg else { continue };
        let Some(bus) = bus.upgrade() else { return };
        bus.on_message(&msg);
    }
    if let Some(bus) = bus.upgrade() {
        bus.on_closed();
    }
    tracing::warn!(
        "the session bus connection closed: notifications stop until it can be reached again"
    );
}

impl State {
    fn route(&mut self, id: u32, signal: Signal) {
        if let Some(tx) = self.routes.get(&id) {
            if tx.send(signal).is_ok() {
                return;
            }
            self.routes.remove(&id);
            return;
        }
        if self.early.len() >= EARLY_MAX {
            self.early.pop_front();
        }
        self.early.push_back((Instant::now(), id, signal));
    }
}

/// The signals for one notification; dropping it stops routing them.
pub struct Subscription {
    bus: Arc<Bus>,
    id: u32,
    rx: mpsc::UnboundedReceiver<Signal>,
}

impl Subscription {
    /// The next signal; None once the bus is gone.
    pub async fn next(&mut self) -> Option<Signal> {
        self.rx.recv().await
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.bus.state().routes.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_come_from_the_list() {
        let list = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            Caps::from_list(&list("body actions sound")),
            Caps {
                actions: true,
                body_markup: false
            }
        );
        assert_eq!(
            Caps::from_list(&list("body body-markup")),
            Caps {
                actions: false,
                body_markup: true
            }
        );
    }

    #[tokio::test]
    async fn a_tray_host_that_comes_within_the_grace_counts_as_present() {
        // Real time, short spans: the host's arrival is the stimulus, the wait returns on
        // the change itself.
        let (tx, mut rx) = watch::channel(Some(false));
        let started = Instant::now();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            tx.send_replace(Some(true));
            // Kept open: a closed channel would be "bus gone".
            tokio::time::sleep(Duration::from_secs(30)).await;
        });
        let grace = Duration::from_secs(20);
        assert_eq!(await_tray_host(&mut rx, grace).await, HostAtStart::Present);
        assert!(started.elapsed() < grace, "returned when the host came");
    }

    #[tokio::test]
    async fn no_tray_host_only_after_the_grace() {
        let grace = Duration::from_millis(200);
        let (tx, mut rx) = watch::channel(Some(false));
        let started = Instant::now();
        assert_eq!(await_tray_host(&mut rx, grace).await, HostAtStart::Absent);
        assert!(started.elapsed() >= grace);
        tx.send_replace(None);
        assert_eq!(await_tray_host(&mut rx, grace).await, HostAtStart::Unknown);
        tx.send_replace(Some(true));
        assert_eq!(await_tray_host(&mut rx, grace).await, HostAtStart::Present);
        drop(tx);
        let (tx, mut rx) = watch::channel(None);
        drop(tx);
        assert_eq!(await_tray_host(&mut rx, grace).await, HostAtStart::BusGone);
    }

    #[test]
    fn early_signals_are_bounded() {
        let mut state = State::default();
        for id in 0..(EARLY_MAX as u32 + 5) {
            state.route(id, Signal::Closed(1));
        }
        assert_eq!(state.early.len(), EARLY_MAX);
        assert_eq!(state.early.front().map(|e| e.1), Some(5));
    }
}
