//! The tray icon and its menu. It is never the only channel: without a tray host, or when
//! the icon cannot be created, the app keeps serving through notifications and the
//! dialog. What it shows is computed in `crate::tray_view`; this only applies it.
//!
//! A tray host that starts after the app needs nothing from us while the icon exists:
//! libayatana-appindicator (under tray-icon) follows the StatusNotifierWatcher's name and
//! registers the item when it appears. If the icon could not be created at all,
//! [`host_appeared`] tries again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use landstrip_tray_core::decision::broker::BrokerEvent;
use landstrip_tray_core::serving::service::{ProjectInfo, Service};
use tauri::image::Image;
use tauri::menu::{Menu, MenuItem, PredefinedMenuItem, Submenu};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Manager, Runtime};
use tokio::sync::broadcast::{self, error::RecvError};

use crate::tray_view::{self, Icon, TrayView};

const ICON_IDLE: &[u8] = include_bytes!("../../../icons/tray-idle.png");
const ICON_PENDING: &[u8] = include_bytes!("../../../icons/tray-pending.png");
const ICON_PAUSED: &[u8] = include_bytes!("../../../icons/tray-paused.png");
const ICON_ALERT: &[u8] = include_bytes!("../../../icons/tray-alert.png");

/// The menu items whose text follows the core's state.
struct Items<R: Runtime> {
    review: MenuItem<R>,
    pause_15m: MenuItem<R>,
    pause_1h: MenuItem<R>,
    pause_forever: MenuItem<R>,
    resume: MenuItem<R>,
    /// First in the menu while a canary's run is stopped (see `shown`).
    incident: MenuItem<R>,
    menu: Menu<R>,
    /// Whether `incident` is in the menu now.
    incident_shown: AtomicBool,
}

/// Whether the icon exists, kept in the app's state.
#[derive(Default)]
struct Installed(AtomicBool);

/// Adds the tray icon; a failure is logged, not fatal (notifications and the dialog still
/// carry every request), and retried when a tray host appears.
pub fn start<R: Runtime>(app: &AppHandle<R>, service: &Service) {
    app.manage(Installed::default());
    try_install(app, service);
}

/// A tray host appeared on the session bus: creates the icon if it could not be before.
pub fn host_appeared<R: Runtime>(app: &AppHandle<R>) {
    let (Some(installed), Some(service)) =
        (app.try_state::<Installed>(), app.try_state::<Service>())
    else {
        return;
    };
    if !installed.0.load(Ordering::SeqCst) {
        let service = service.inner().clone();
        let app = app.clone();
        // Menus and icons are made on the main thread.
        let queued = app
            .clone()
            .run_on_main_thread(move || try_install(&app, &service));
        if let Err(e) = queued {
            tracing::warn!("cannot create the tray icon: {e}");
        }
    }
}

fn try_install<R: Runtime>(app: &AppHandle<R>, service: &Service) {
    let Some(installed) = app.try_state::<Installed>() else {
        return;
    };
    if installed.0.load(Ordering::SeqCst) {
        return;
    }
    match install(app, service) {
        Ok(()) => installed.0.store(true, Ordering::SeqCst),
        Err(e) => tracing::error!(
            "cannot create the tray icon: {e}; requests arrive as notifications and the dialog"
        ),
    }
}

/// Adds the tray icon and keeps its menu and icon in step with the core.
fn install<R: Runtime>(app: &AppHandle<R>, service: &Service) -> tauri::Result<()> {
    let review = MenuItem::with_id(app, "review", "No requests waiting", false, None::<&str>)?;
    let pause_15m = MenuItem::with_id(app, "pause-15m", "For 15 minutes", true, None::<&str>)?;
    let pause_1h = MenuItem::with_id(app, "pause-1h", "For 1 hour", true, None::<&str>)?;
    let pause_forever = MenuItem::with_id(app, "pause", "Until resumed", true, None::<&str>)?;
    let resume = MenuItem::with_id(app, "resume", "Resume prompts", false, None::<&str>)?;
    let projects = Submenu::with_id(app, "projects", "Projects", true)?;
    let remotes = Submenu::with_id(app, "remotes", tray_view::REMOTES, true)?;
    let pause = Submenu::with_items(
        app,
        "Pause prompts",
        true,
        &[&pause_15m, &pause_1h, &pause_forever],
    )?;
    let settings = MenuItem::with_id(app, "settings", tray_view::SETTINGS, true, None::<&str>)?;
    let activity = MenuItem::with_id(app, "activity", tray_view::ACTIVITY, true, None::<&str>)?;
    let welcome = MenuItem::with_id(app, "welcome", tray_view::WELCOME, true, None::<&str>)?;
    let logs = MenuItem::with_id(app, "logs", tray_view::OPEN_LOGS, true, None::<&str>)?;
    let quit = MenuItem::with_id(app, "quit", tray_view::QUIT, true, None::<&str>)?;
    let separator = PredefinedMenuItem::separator(app)?;
    let menu = Menu::with_items(
        app,
        &[
            &review, &projects, &separator, &pause, &resume, &separator, &settings, &activity,
            &welcome, &logs, &separator, &quit,
        ],
    )?;
    let items = Items {
        review,
        pause_15m,
        pause_1h,
        pause_forever,
        resume,
        incident: MenuItem::with_id(app, "incident", "Canary read", true, None::<&str>)?,
        menu: menu.clone(),
        incident_shown: AtomicBool::new(false),
    };
    let service_for_menu = service.clone();
    let tray = TrayIconBuilder::with_id("main")
        .icon(Image::from_bytes(ICON_IDLE)?)
        .tooltip("landstrip-tray: idle")
        .menu(&menu)
        .on_menu_event(move |app, event| on_menu(app, &service_for_menu, event.id.as_ref()))
        .build(app)?;

    let mut projects_rx = service.subscribe();
    let app_for_projects = app.clone();
    let home = service.home().to_path_buf();
    tauri::async_runtime::spawn(async move {
        loop {
            let list = projects_rx.borrow_and_update().clone();
            if let Err(e) = fill_projects(&app_for_projects, &projects, &list, &home) {
                tracing::warn!("tray menu: {e}");
            }
            if projects_rx.changed().await.is_err() {
                break;
            }
        }
    });

    // The remote machines' submenu, in the menu (after Projects) only while there is one.
    let mut remotes_rx = service.remotes().subscribe();
    let remote_list = service.remotes().clone();
    let (app_for_remotes, menu_for_remotes) = (app.clone(), menu.clone());
    tauri::async_runtime::spawn(async move {
        let mut shown = false;
        loop {
            remotes_rx.borrow_and_update();
            let lines = tray_view::remote_lines(&remote_list.list());
            if let Err(e) = fill_remotes(&app_for_remotes, &remotes, &lines) {
                tracing::warn!("tray menu: {e}");
            }
            let want = !lines.is_empty();
            if want != shown {
                let _ = if shown {
                    menu_for_remotes.remove(&remotes).map(drop)
                } else {
                    menu_for_remotes.insert(&remotes, 2)
                };
                shown = want;
            }
            if remotes_rx.changed().await.is_err() {
                break;
            }
        }
    });

    let broker = service.broker().clone();
    let mut events = broker.subscribe();
    let mut pause_rx = broker.subscribe_pause();
    tauri::async_runtime::spawn(async move {
        loop {
            let pause = broker.pause_state();
            let stopped = broker.canaries().incidents().still_stopped().len();
            show(
                &tray,
                &items,
                &tray_view::with_incidents(
                    tray_view::view(broker.pending().len(), &pause),
                    stopped,
                ),
            );
            // A timed pause ends by itself: wake for that moment only, never periodically.
            let pause_ends = async {
                match pause.remaining_secs {
                    Some(secs) if pause.paused => {
                        tokio::time::sleep(Duration::from_secs(secs + 1)).await
                    }
                    _ => std::future::pending().await,
                }
            };
            tokio::select! {
                changed = next_change(&mut events) => if changed.is_none() { break },
                changed = pause_rx.changed() => if changed.is_err() { break },
                () = pause_ends => {}
            }
        }
    });
    Ok(())
}

/// Waits for a broker event that changes what the tray shows; None once the broker is
/// gone. Reported denials change nothing here, and a run can report many.
async fn next_change(events: &mut broadcast::Receiver<BrokerEvent>) -> Option<()> {
    loop {
        match events.recv().await {
            Ok(BrokerEvent::Reported { .. }) => continue,
            Ok(_) | Err(RecvError::Lagged(_)) => return Some(()),
            Err(RecvError::Closed) => return None,
        }
    }
}

fn on_menu<R: Runtime>(app: &AppHandle<R>, service: &Service, id: &str) {
    let broker = service.broker();
    match id {
        "review" => super::dialog::open(app, None),
        "incident" => super::settings::open_view(app, "activity"),
        "pause-15m" => broker.pause(Some(Duration::from_secs(15 * 60))),
        "pause-1h" => broker.pause(Some(Duration::from_secs(60 * 60))),
        "pause" => broker.pause(None),
        "resume" => broker.resume(),
        "settings" => super::settings::open_view(app, "projects"),
        "remotes-settings" => super::settings::open_view(app, "remotes"),
        "activity" => super::settings::open_view(app, "activity"),
        "welcome" => super::welcome::open(app),
        "logs" => open_logs(app),
        "quit" => super::quit(app, service),
        _ => {}
    }
}

/// Opens the log directory in the file manager (`xdg-open`, detached).
fn open_logs<R: Runtime>(app: &AppHandle<R>) {
    if let Some(dir) = app.try_state::<super::LogDir>() {
        if let Err(e) = super::commands::settings::open_detached(&dir.0) {
            tracing::warn!("{e}");
        }
    }
}

/// Puts a state's icon, tooltip and menu texts on the tray.
fn show<R: Runtime>(tray: &TrayIcon<R>, items: &Items<R>, view: &TrayView) {
    // A failed update leaves the previous text; nothing to tell anyone.
    let _ = items.review.set_text(&view.review);
    let _ = items.review.set_enabled(view.review_enabled);
    let _ = items.resume.set_text(&view.resume);
    let _ = items.resume.set_enabled(view.resume_enabled);
    for item in [&items.pause_15m, &items.pause_1h, &items.pause_forever] {
        let _ = item.set_enabled(view.pause_enabled);
    }
    let _ = tray.set_tooltip(Some(&view.tooltip));
    match &view.incident {
        Some(text) => {
            let _ = items.incident.set_text(text);
            if !items.incident_shown.swap(true, Ordering::SeqCst) {
                let _ = items.menu.insert(&items.incident, 0);
            }
        }
        None => {
            if items.incident_shown.swap(false, Ordering::SeqCst) {
                let _ = items.menu.remove(&items.incident);
            }
        }
    }
    let icon = match view.icon {
        Icon::Idle => ICON_IDLE,
        Icon::Pending => ICON_PENDING,
        Icon::Paused => ICON_PAUSED,
        Icon::Alert => ICON_ALERT,
    };
    if let Ok(image) = Image::from_bytes(icon) {
        let _ = tray.set_icon(Some(image));
    }
}

fn fill_projects<R: Runtime>(
    app: &AppHandle<R>,
    submenu: &Submenu<R>,
    list: &[ProjectInfo],
    home: &std::path::Path,
) -> tauri::Result<()> {
    fill_lines(app, submenu, &tray_view::project_lines(list, home))
}

/// Puts `lines` in `submenu` in place of what it had, as items that cannot be clicked.
/// The remote machines' lines, then the way to their settings.
fn fill_remotes<R: Runtime>(
    app: &AppHandle<R>,
    submenu: &Submenu<R>,
    lines: &[String],
) -> tauri::Result<()> {
    fill_lines(app, submenu, lines)?;
    submenu.append(&PredefinedMenuItem::separator(app)?)?;
    let manage = tray_view::MANAGE_REMOTES;
    submenu.append(&MenuItem::with_id(
        app,
        "remotes-settings",
        manage,
        true,
        None::<&str>,
    )?)
}

fn fill_lines<R: Runtime>(
    app: &AppHandle<R>,
    submenu: &Submenu<R>,
    lines: &[String],
) -> tauri::Result<()> {
    for item in submenu.items()? {
        submenu.remove(&item)?;
    }
    for line in lines {
        submenu.append(&MenuItem::new(app, line, false, None::<&str>)?)?;
    }
    Ok(())
}
