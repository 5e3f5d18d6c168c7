//! The tray icon and its menu. It is never the only channel: without a tray host the app
//! keeps serving through notifications and the dialog.

use std::time::Duration;

use landstrip_tray_core::broker::{BrokerEvent, PauseState};
use landstrip_tray_core::service::{ProjectInfo, ProjectStatus, Service};
use tauri::image::Image;
use tauri::menu::{Menu, MenuItem, PredefinedMenuItem, Submenu};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Wry};
use tokio::sync::broadcast::{self, error::RecvError};

const ICON_IDLE: &[u8] = include_bytes!("../../../icons/tray-idle.png");
const ICON_PENDING: &[u8] = include_bytes!("../../../icons/tray-pending.png");
const ICON_PAUSED: &[u8] = include_bytes!("../../../icons/tray-paused.png");

/// The menu items whose text follows the core's state.
struct Items {
    review: MenuItem<Wry>,
    pause_15m: MenuItem<Wry>,
    pause_1h: MenuItem<Wry>,
    pause_forever: MenuItem<Wry>,
    resume: MenuItem<Wry>,
}

/// Adds the tray icon and keeps its menu and icon in step with the core.
pub fn install(app: &AppHandle, service: &Service) -> tauri::Result<()> {
    let items = Items {
        review: MenuItem::with_id(app, "review", "No requests waiting", false, None::<&str>)?,
        pause_15m: MenuItem::with_id(app, "pause-15m", "For 15 minutes", true, None::<&str>)?,
        pause_1h: MenuItem::with_id(app, "pause-1h", "For 1 hour", true, None::<&str>)?,
        pause_forever: MenuItem::with_id(app, "pause", "Until resumed", true, None::<&str>)?,
        resume: MenuItem::with_id(app, "resume", "Resume prompts", false, None::<&str>)?,
    };
    let projects = Submenu::with_id(app, "projects", "Projects", true)?;
    let pause = Submenu::with_items(
        app,
        "Pause prompts",
        true,
        &[&items.pause_15m, &items.pause_1h, &items.pause_forever],
    )?;
    let quit = MenuItem::with_id(
        app,
        "quit",
        "Quit (deny everything held)",
        true,
        None::<&str>,
    )?;
    let separator = PredefinedMenuItem::separator(app)?;
    let menu = Menu::with_items(
        app,
        &[
            &items.review,
            &projects,
            &separator,
            &pause,
            &items.resume,
            &separator,
            &quit,
        ],
    )?;
    let service_for_menu = service.clone();
    let tray = TrayIconBuilder::with_id("main")
        .icon(Image::from_bytes(ICON_IDLE)?)
        .tooltip("landstrip-tray: idle")
        .menu(&menu)
        .on_menu_event(move |app, event| on_menu(app, &service_for_menu, event.id.as_ref()))
        .build(app)?;

    let mut projects_rx = service.subscribe();
    let app_for_projects = app.clone();
    tauri::async_runtime::spawn(async move {
        loop {
            let list = projects_rx.borrow_and_update().clone();
            if let Err(e) = fill_projects(&app_for_projects, &projects, &list) {
                tracing::warn!("tray menu: {e}");
            }
            if projects_rx.changed().await.is_err() {
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
            show_state(&tray, &items, broker.pending().len(), &pause);
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

fn on_menu(app: &AppHandle, service: &Service, id: &str) {
    let broker = service.broker();
    match id {
        "review" => super::dialog::open(app, None),
        "pause-15m" => broker.pause(Some(Duration::from_secs(15 * 60))),
        "pause-1h" => broker.pause(Some(Duration::from_secs(60 * 60))),
        "pause" => broker.pause(None),
        "resume" => broker.resume(),
        "quit" => super::quit(app, service),
        _ => {}
    }
}

/// The icon, tooltip and menu texts for a state.
fn show_state(tray: &TrayIcon<Wry>, items: &Items, pending: usize, pause: &PauseState) {
    let (icon, tooltip) = if pause.paused {
        let until = match pause.remaining_secs {
            Some(secs) => format!("for {} more min", secs.div_ceil(60)),
            None => "until resumed".to_owned(),
        };
        (
            ICON_PAUSED,
            format!(
                "landstrip-tray: prompts paused {until}; {} denied meanwhile",
                pause.denied
            ),
        )
    } else if pending > 0 {
        (
            ICON_PENDING,
            format!("landstrip-tray: {pending} waiting for you"),
        )
    } else {
        (ICON_IDLE, "landstrip-tray: idle".to_owned())
    };
    let review = match pending {
        0 => "No requests waiting".to_owned(),
        1 => "Review 1 waiting request…".to_owned(),
        n => format!("Review {n} waiting requests…"),
    };
    let _ = items.review.set_text(review);
    let _ = items.review.set_enabled(pending > 0);
    let _ = items.resume.set_enabled(pause.paused);
    // Linux tray hosts never show the tooltip, so the menu itself says how long and
    // how many were denied.
    let resume = if pause.paused {
        let left = match pause.remaining_secs {
            Some(secs) => format!("{} min left", secs.div_ceil(60)),
            None => "until resumed".to_owned(),
        };
        format!("Resume prompts (paused, {left}; {} denied)", pause.denied)
    } else {
        "Resume prompts".to_owned()
    };
    let _ = items.resume.set_text(resume);
    for item in [&items.pause_15m, &items.pause_1h, &items.pause_forever] {
        let _ = item.set_enabled(!pause.paused);
    }
    let _ = tray.set_tooltip(Some(tooltip));
    if let Ok(image) = Image::from_bytes(icon) {
        let _ = tray.set_icon(Some(image));
    }
}

fn fill_projects(
    app: &AppHandle,
    submenu: &Submenu<Wry>,
    list: &[ProjectInfo],
) -> tauri::Result<()> {
    for item in submenu.items()? {
        submenu.remove(&item)?;
    }
    if list.is_empty() {
        submenu.append(&MenuItem::new(
            app,
            "No projects served (landstrip-tray --project DIR)",
            false,
            None::<&str>,
        )?)?;
    }
    for project in list {
        let state = match &project.status {
            ProjectStatus::Serving => format!("served on port {}", project.port),
            ProjectStatus::Conflict { other_pid, .. } => {
                format!("not served: another presenter (pid {other_pid}) has it")
            }
            ProjectStatus::Unpublished { error } => format!("not served: {error}"),
        };
        let label = format!("{} — {state}", home_relative(&project.dir));
        submenu.append(&MenuItem::new(app, label, false, None::<&str>)?)?;
    }
    Ok(())
}

/// `~/…` for paths under the home directory, as the dialog shows them.
fn home_relative(path: &std::path::Path) -> String {
    match std::env::var_os("HOME").map(std::path::PathBuf::from) {
        Some(home) if path.starts_with(&home) && home != std::path::Path::new("/") => {
            let rest = path.strip_prefix(&home).unwrap_or(path);
            if rest.as_os_str().is_empty() {
                "~".to_owned()
            } else {
                format!("~/{}", rest.display())
            }
        }
        _ => path.display().to_string(),
    }
}
