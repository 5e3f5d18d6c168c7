//! Freedesktop notifications (through notify-rust, on its pure-Rust zbus backend): one for
//! every new prompt, with allow/deny buttons where the server offers actions, withdrawn when
//! the prompt is settled elsewhere; a quiet, per-run summary of terminal denials; and a
//! word when nothing hosts tray icons (after a short grace, so a panel starting just after
//! the app does not cause it). Queries answered automatically never become prompts,
//! so they make no noise. Nothing here blocks the runtime, and no D-Bus error is fatal:
//! a session bus that goes away is connected to again when the next notification is due
//! (never on a timer, so an idle app without a bus does not wake).

mod bus;
mod incident;
mod text;

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use landstrip_tray_core::app_settings::{AppSettings, SettingsFile};
use landstrip_tray_core::decision::answer::AnswerRequest;
use landstrip_tray_core::decision::broker::{Broker, BrokerEvent, ConnId, PendingPrompt, PromptId};
use landstrip_tray_core::decision::canary::{Incident, MAX_INCIDENTS};
use landstrip_tray_core::decision::grants::Lifetime;
use landstrip_tray_core::serving::service::Service;
use notify_rust::Notification;
use tauri::{AppHandle, Runtime};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, oneshot, watch};

use bus::{Bus, Caps, Signal};
use text::Denials;

/// How long sending one notification may take: a server that hangs is given up on.
const SHOW_TIMEOUT: Duration = Duration::from_secs(10);

/// At most this many prompt notifications are up at once; a flood past that waits in the
/// dialog's queue instead of burying the desktop.
const MAX_PROMPT_NOTIFICATIONS: usize = 16;

/// Runs whose denial summary is remembered (so it is updated, not repeated). Older runs are
/// forgotten; a late denial of one would start a new summary.
const MAX_SUMMARISED_RUNS: usize = 64;

/// How long a tray host may take to appear after the app before "no tray host" is said: a
/// panel starting with the session can come up a moment after us.
const TRAY_HOST_GRACE: Duration = Duration::from_secs(4);

/// A summary is updated at most this often, however fast denials come.
const SUMMARY_UPDATE_GAP: Duration = Duration::from_millis(500);

/// Starts raising notifications for new prompts and terminal denials, and says once if
/// there is no tray host. `home` makes paths `~/…`; `settings` holds `summarizeDenials`
/// and `notificationSound`.
pub fn start<R: Runtime>(
    app: &AppHandle<R>,
    service: &Service,
    home: PathBuf,
    settings: Option<SettingsFile>,
) {
    let broker = service.broker().clone();
    // Subscribed before the bus is up, so no prompt raised meanwhile is missed.
    let events = broker.subscribe();
    let presenters = service.subscribe_presenters();
    let service_for_actions = service.clone();
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let notifier = Arc::new(Notifier {
            app,
            broker,
            service: service_for_actions,
            link: tokio::sync::Mutex::new(Link::default()),
            home,
            settings,
            unavailable: AtomicBool::new(false),
            live_prompts: AtomicUsize::new(0),
        });
        // Without a bus now (said by `bus`), the tray host is not followed until one can
        // be reached; requests still reach the dialog.
        if let Some(bus) = notifier.bus().await {
            // Asked now rather than with the first prompt, which would wait for it.
            if let Err(e) = bus.capabilities().await {
                tracing::debug!("the notification server's capabilities: {e}");
            }
            tokio::spawn(notifier.clone().follow_tray_host(bus));
        }
        tokio::spawn(notifier.clone().follow_presenters(presenters));
        notifier.run(events).await;
    });
}

/// The first wait before connecting to the session bus again after a failed attempt;
/// each further failure doubles it, up to [`RECONNECT_MAX`].
const RECONNECT_FIRST: Duration = Duration::from_secs(1);

/// The longest wait between two attempts to reach the session bus.
const RECONNECT_MAX: Duration = Duration::from_secs(30);

/// How long one attempt to connect to the session bus may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The session bus connection and, while it is lost, when to try again. Attempts are
/// made only when a notification is to be sent (never on a timer), so an app without a
/// bus wakes for nothing while idle; a failed attempt puts the next one off by
/// [`RECONNECT_FIRST`], doubling up to [`RECONNECT_MAX`].
#[derive(Default)]
struct Link {
    bus: Option<Arc<Bus>>,
    /// Failed attempts in a row.
    failures: u32,
    /// No attempt before this.
    not_before: Option<tokio::time::Instant>,
    /// A connection was made before (a new one is a reconnection).
    connected_once: bool,
}

/// The wait after `failures` failed attempts in a row (at least one).
fn reconnect_delay(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    RECONNECT_FIRST
        .saturating_mul(1 << doublings)
        .min(RECONNECT_MAX)
}

struct Notifier<R: Runtime> {
    app: AppHandle<R>,
    broker: Broker,
    /// For the operations an incident notification's buttons run.
    service: Service,
    /// The session bus, connected again on demand when it went away.
    link: tokio::sync::Mutex<Link>,
    home: PathBuf,
    settings: Option<SettingsFile>,
    /// Set once sending failed and it was logged; cleared by the next success.
    unavailable: AtomicBool,
    /// Prompt notifications up now.
    live_prompts: AtomicUsize,
}

impl<R: Runtime> Notifier<R> {
    /// The session bus: the connection there is, or a new one when it closed (the bus
    /// went away and maybe came back), at most one attempt at a time and none before the
    /// back-off after a failure has passed (waited for here: the caller has a
    /// notification to send). None when it cannot be reached now.
    async fn bus(self: &Arc<Self>) -> Option<Arc<Bus>> {
        let mut link = self.link.lock().await;
        if let Some(bus) = link.bus.as_ref().filter(|bus| !bus.is_closed()) {
            return Some(bus.clone());
        }
        link.bus = None;
        if let Some(at) = link.not_before {
            tokio::time::sleep_until(at).await;
        }
        let connected = match tokio::time::timeout(CONNECT_TIMEOUT, Bus::connect()).await {
            Ok(Ok(bus)) => Ok(bus),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer within {CONNECT_TIMEOUT:?}")),
        };
        match connected {
            Ok(bus) => {
                if link.connected_once {
                    tracing::info!("connected to the session bus again");
                    // The start-up warning is not repeated; a tray host there may still
                    // need the icon made.
                    tokio::spawn(self.clone().follow_host_changes(bus.clone(), false));
                }
                *link = Link {
                    bus: Some(bus.clone()),
                    connected_once: true,
                    ..Link::default()
                };
                Some(bus)
            }
            Err(e) => {
                link.failures += 1;
                let delay = reconnect_delay(link.failures);
                link.not_before = Some(tokio::time::Instant::now() + delay);
                if link.failures == 1 {
                    tracing::warn!(
                        "cannot reach the D-Bus session bus ({e}): no desktop notifications until it can be (tried again when there is one to show, after a back-off of {}s doubling up to {}s); requests still reach the dialog",
                        RECONNECT_FIRST.as_secs(),
                        RECONNECT_MAX.as_secs()
                    );
                } else {
                    tracing::debug!(failures = link.failures, ?delay, "session bus: {e}");
                }
                None
            }
        }
    }

    /// Follows the broker: a task per prompt notification, one per summarised run.
    async fn run(self: Arc<Self>, mut events: broadcast::Receiver<BrokerEvent>) {
        let mut prompts: HashMap<PromptId, oneshot::Sender<()>> = HashMap::new();
        let mut runs = Runs::default();
        let mut incidents: HashMap<u64, watch::Sender<Incident>> = HashMap::new();
        for prompt in self.broker.pending() {
            self.open(&mut prompts, prompt);
        }
        loop {
            match events.recv().await {
                Ok(BrokerEvent::Added(prompt)) => self.open(&mut prompts, prompt),
                Ok(BrokerEvent::Incident(incident)) => match incidents.get(&incident.id) {
                    // Its task withdraws it once it is no longer stopped.
                    Some(shown) => {
                        shown.send_replace(incident);
                    }
                    None => {
                        let (shown, rx) = watch::channel(incident.clone());
                        incidents.insert(incident.id, shown);
                        // At most MAX_INCIDENTS live at once in the core; keep as many.
                        if incidents.len() > MAX_INCIDENTS {
                            incidents.retain(|id, _| *id + MAX_INCIDENTS as u64 > incident.id);
                        }
                        tokio::spawn(self.clone().notify_incident(rx));
                    }
                },
                Ok(BrokerEvent::Resolved { id, .. }) => {
                    if let Some(settled) = prompts.remove(&id) {
                        // Its task withdraws the notification, unless the notification was
                        // what answered (then the task is gone and this goes nowhere).
                        let _ = settled.send(());
                    }
                }
                Ok(BrokerEvent::Reported {
                    connection,
                    project,
                    trap,
                    count,
                    ..
                }) => {
                    let denials = Denials {
                        project,
                        latest: trap,
                        count,
                    };
                    runs.report(&self, connection, denials);
                }
                Err(RecvError::Lagged(missed)) => {
                    tracing::debug!(missed, "notifications fell behind the broker; re-reading");
                    self.resync(&mut prompts);
                }
                Err(RecvError::Closed) => return,
            }
        }
    }

    /// Puts up a notification for `prompt` (once) in a task of its own.
    fn open(
        self: &Arc<Self>,
        prompts: &mut HashMap<PromptId, oneshot::Sender<()>>,
        prompt: PendingPrompt,
    ) {
        if prompts.contains_key(&prompt.id) {
            return;
        }
        if self.live_prompts.load(Ordering::Relaxed) >= MAX_PROMPT_NOTIFICATIONS {
            tracing::debug!(
                prompt = prompt.id,
                "too many prompt notifications up; this one waits in the dialog"
            );
            return;
        }
        let (settled, settled_rx) = oneshot::channel();
        prompts.insert(prompt.id, settled);
        self.live_prompts.fetch_add(1, Ordering::Relaxed);
        let notifier = self.clone();
        tokio::spawn(async move {
            notifier.notify_prompt(prompt, settled_rx).await;
            notifier.live_prompts.fetch_sub(1, Ordering::Relaxed);
        });
    }

    /// After missed events: withdraw what is no longer pending, announce what is new.
    fn resync(self: &Arc<Self>, prompts: &mut HashMap<PromptId, oneshot::Sender<()>>) {
        let pending = self.broker.pending();
        prompts.retain(|id, _| pending.iter().any(|p| p.id == *id));
        // Dropping a sender settles its task too (see notify_prompt).
        for prompt in pending {
            self.open(prompts, prompt);
        }
    }

    /// One prompt's notification, from Notify to its end: answered by its buttons, dismissed,
    /// or withdrawn because the prompt was settled elsewhere (`settled` fires or drops).
    async fn notify_prompt(
        self: &Arc<Self>,
        prompt: PendingPrompt,
        mut settled: oneshot::Receiver<()>,
    ) {
        // Reaching the bus may wait out a back-off: a prompt settled meanwhile needs none.
        let bus = tokio::select! {
            biased;
            _ = &mut settled => return,
            bus = self.bus() => bus,
        };
        let Some(bus) = bus else {
            return self.failed("no session bus");
        };
        let caps = match bus.capabilities().await {
            Ok(caps) => caps,
            Err(e) => return self.failed(&e.to_string()),
        };
        let sound = self.setting(|s| s.notification_sound).await;
        let notification = text::prompt(&prompt, &self.home, caps, sound);
        let generation = bus.generation();
        let Some(id) = self.show(&bus, &notification, None).await else {
            return;
        };
        let mut signals = bus.subscribe(id, generation);
        loop {
            tokio::select! {
                // Settled while Notify was on its way counts too: checked first.
                biased;
                _ = &mut settled => {
                    if let Err(e) = bus.close_notification(id).await {
                        tracing::debug!(prompt = prompt.id, "withdrawing its notification: {e}");
                    }
                    return;
                }
                signal = signals.next() => match signal {
                    Some(Signal::Action(action)) => match action.as_str() {
                        // Never offered for a sensitive location; refused if sent anyway.
                        text::ALLOW if text::offers_allow(&prompt, &self.home) => {
                            return self.answer(prompt.id, AnswerRequest::once()).await
                        }
                        text::ALLOW_15M if text::offers_allow(&prompt, &self.home) => {
                            let request = AnswerRequest {
                                lifetime: Lifetime::parse(text::NOTIFICATION_GRANT_FOR),
                                ..AnswerRequest::session()
                            };
                            return self.answer(prompt.id, request).await;
                        }
                        text::DENY => return self.answer(prompt.id, AnswerRequest::deny()).await,
                        text::DENY_SESSION => {
                            let request = AnswerRequest {
                                session: true,
                                ..AnswerRequest::deny()
                            };
                            return self.answer(prompt.id, request).await;
                        }
                        text::DEFAULT => super::dialog::open(&self.app, Some(prompt.id)),
                        other => tracing::debug!(action = other, "unknown notification action"),
                    },
                    // Dismissed (or gone with its server): nothing left to withdraw; the
                    // prompt still waits in the dialog.
                    Some(Signal::Closed(reason)) => {
                        tracing::debug!(
                            prompt = prompt.id,
                            reason,
                            "its notification closed: the prompt still waits"
                        );
                        return;
                    }
                    Some(Signal::ServerGone) => return,
                    // The bus is gone: withdrawing would fail too.
                    None => return,
                },
            }
        }
    }

    /// Answers through the broker on the blocking pool: a project answer writes a file,
    /// and a remote machine's request waits (bounded) for that machine's reply.
    async fn answer(&self, id: PromptId, request: AnswerRequest) {
        let broker = self.broker.clone();
        match tokio::task::spawn_blocking(move || broker.answer(id, &request)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::debug!(prompt = id, "answer from the notification: {e}"),
            Err(e) => tracing::debug!(prompt = id, "answer from the notification: {e}"),
        }
    }

    /// A run's terminal denials: one quiet notification, updated in place as more come.
    async fn summarise(self: Arc<Self>, mut denials: watch::Receiver<Denials>) {
        if !self.summaries_enabled().await {
            tracing::debug!("denial summaries are off (summarizeDenials: false)");
            return;
        }
        let mut shown: Option<u32> = None;
        loop {
            let latest = denials.borrow_and_update().clone();
            // Updated in place; a new one if the server went meanwhile.
            let notification = |caps| text::denials(&latest, &self.home, caps);
            if let Some(id) = self.announce(notification, shown).await {
                shown = Some(id);
            }
            let sent = tokio::time::Instant::now();
            if denials.changed().await.is_err() {
                return;
            }
            tokio::time::sleep_until(sent + SUMMARY_UPDATE_GAP).await;
        }
    }

    /// A quiet notification for each time another presenter wanted a project's prompts
    /// (the service sends at most one per start of that presenter, and one if it insists).
    async fn follow_presenters(
        self: Arc<Self>,
        mut events: broadcast::Receiver<landstrip_tray_core::serving::service::PresenterEvent>,
    ) {
        loop {
            match events.recv().await {
                Ok(event) => {
                    let notification = |caps| text::presenter(&event, &self.home, caps);
                    self.announce(notification, None).await;
                }
                Err(RecvError::Lagged(missed)) => {
                    tracing::debug!(missed, "presenter notifications fell behind");
                }
                Err(RecvError::Closed) => return,
            }
        }
    }

    /// `summarizeDenials`, read now (so a change applies to the next run without a restart).
    async fn summaries_enabled(&self) -> bool {
        self.setting(|s| s.summarize_denials).await
    }

    /// A boolean app setting read from the file now, so a change (from the settings
    /// window, `ctl config set` or an editor) applies to the next notification without a
    /// restart. Both are on by default, and stay on when the file cannot be read (that
    /// was reported at start).
    async fn setting(&self, pick: fn(&AppSettings) -> bool) -> bool {
        let Some(settings) = self.settings.clone() else {
            return true;
        };
        match tokio::task::spawn_blocking(move || settings.load()).await {
            Ok(Ok(settings)) => pick(&settings),
            Ok(Err(_)) | Err(_) => true,
        }
    }

    /// Says once when nothing hosts tray icons, after giving a host that starts with (or
    /// just after) the app [`TRAY_HOST_GRACE`] to appear; then follows the host, so one
    /// that registers later gets the icon.
    async fn follow_tray_host(self: Arc<Self>, bus: Arc<Bus>) {
        let mut host = bus.tray_host();
        // Said in the log, where the wait shows (and the tests read the grace from).
        tracing::debug!(
            "giving a tray host {}s to appear",
            TRAY_HOST_GRACE.as_secs()
        );
        match bus::await_tray_host(&mut host, TRAY_HOST_GRACE).await {
            bus::HostAtStart::Present => tracing::info!("tray host present: the icon is shown"),
            bus::HostAtStart::BusGone => return,
            bus::HostAtStart::Unknown => {
                tracing::debug!("the session bus did not say whether there is a tray host");
            }
            bus::HostAtStart::Absent => {
                tracing::warn!(
                    "no tray host ({} has no owner on the session bus after {}s): landstrip-tray is running without a tray icon; requests arrive as notifications and the dialog",
                    bus::TRAY_WATCHER,
                    TRAY_HOST_GRACE.as_secs()
                );
                // No tray menu to reach the settings from: show them once, at start
                // (unless the first run's welcome is up: one window at a time).
                // Not over a prompt that is waiting: then once it is answered.
                if !super::welcome::is_open(&self.app) {
                    let app = self.app.clone();
                    super::dialog::when_no_prompt(&self.app, move || {
                        super::settings::open_unless_open(&app);
                    });
                }
                let caps = bus.capabilities().await.unwrap_or_default();
                self.show(&bus, &text::no_tray(caps), None).await;
            }
        }
        let present = *host.borrow_and_update() == Some(true);
        drop(host);
        self.follow_host_changes(bus, present).await;
    }

    /// Follows the tray host on `bus` (there now: `present`) until that connection goes:
    /// one that appears gets the icon (if it could not be made before).
    async fn follow_host_changes(self: Arc<Self>, bus: Arc<Bus>, mut present: bool) {
        let mut host = bus.tray_host();
        // Only the watch is needed from here: the bus itself may go when it closes.
        drop(bus);
        if !present && *host.borrow_and_update() == Some(true) {
            super::tray::host_appeared(&self.app);
            present = true;
        }
        while host.changed().await.is_ok() {
            let now = *host.borrow_and_update() == Some(true);
            if now && !present {
                tracing::info!(
                    "a tray host appeared on the session bus: the tray icon shows there"
                );
                super::tray::host_appeared(&self.app);
            } else if present && !now {
                tracing::info!(
                    "the tray host left the session bus; requests still arrive as notifications and the dialog"
                );
            }
            present = now;
        }
    }

    /// Sends the notification `build` makes for the server's capabilities, on the bus
    /// when it can be reached (in place of `replaces` if given); its id.
    async fn announce(
        self: &Arc<Self>,
        build: impl FnOnce(Caps) -> Notification,
        replaces: Option<u32>,
    ) -> Option<u32> {
        let bus = self.bus().await?;
        let caps = bus.capabilities().await.unwrap_or_default();
        self.show(&bus, &build(caps), replaces).await
    }

    /// Sends a notification; on failure logs (once until it works again) and returns None.
    async fn show(
        &self,
        bus: &Bus,
        notification: &Notification,
        replaces: Option<u32>,
    ) -> Option<u32> {
        match tokio::time::timeout(SHOW_TIMEOUT, bus.notify(notification, replaces)).await {
            Ok(Ok(id)) => {
                if self.unavailable.swap(false, Ordering::Relaxed) {
                    tracing::info!("desktop notifications work again");
                }
                Some(id)
            }
            Ok(Err(e)) => {
                self.failed(&e.to_string());
                None
            }
            Err(_) => {
                self.failed(&format!("no answer within {SHOW_TIMEOUT:?}"));
                None
            }
        }
    }

    fn failed(&self, error: &str) {
        if !self.unavailable.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "cannot show desktop notifications ({error}); requests still reach the dialog"
            );
        } else {
            tracing::debug!("notification not shown: {error}");
        }
    }
}

/// The summarised runs, newest last; each has a task that owns its notification.
#[derive(Default)]
struct Runs {
    order: VecDeque<ConnId>,
    summaries: HashMap<ConnId, watch::Sender<Denials>>,
}

impl Runs {
    fn report<R: Runtime>(
        &mut self,
        notifier: &Arc<Notifier<R>>,
        connection: ConnId,
        denials: Denials,
    ) {
        if let Some(summary) = self.summaries.get(&connection) {
            // Its task may have ended (summaries off): then this goes nowhere, as it should.
            summary.send_replace(denials);
            return;
        }
        let (summary, rx) = watch::channel(denials);
        self.summaries.insert(connection, summary);
        self.order.push_back(connection);
        if self.order.len() > MAX_SUMMARISED_RUNS {
            // Dropping the sender ends that run's task.
            if let Some(oldest) = self.order.pop_front() {
                self.summaries.remove(&oldest);
            }
        }
        tokio::spawn(notifier.clone().summarise(rx));
    }
}
