//! The tray icon and its menu. It is never the only channel: without a tray host the app
//! keeps serving (and later issues add notifications and the dialog).

use landstrip_tray_core::service::{ProjectInfo, ProjectStatus, Service};
use tauri::image::Image;
use tauri::menu::{Menu, MenuItem, PredefinedMenuItem, Submenu};
use tauri::tray::TrayIconBuilder;
use tauri::AppHandle;

const ICON_IDLE: &[u8] = include_bytes!("../../../icons/tray-idle.png");
const ICON_PENDING: &[u8] = include_bytes!("../../../icons/tray-pending.png");

/// Adds the tray icon and keeps its menu and icon in step with the core.
pub fn install(app: &AppHandle, service: &Service) -> tauri::Result<()> {
    let pending = MenuItem::with_id(app, "pending", "No requests waiting", false, None::<&str>)?;
    let projects = Submenu::with_id(app, "projects", "Projects", true)?;
    let quit = MenuItem::with_id(
        app,
        "quit",
        "Quit (deny everything held)",
        true,
        None::<&str>,
    )?;
    let menu = Menu::with_items(
        app,
        &[
            &pending,
            &projects,
            &PredefinedMenuItem::separator(app)?,
            &quit,
        ],
    )?;
    let service_for_menu = service.clone();
    let tray = TrayIconBuilder::with_id("main")
        .icon(Image::from_bytes(ICON_IDLE)?)
        .tooltip("landstrip-tray: idle")
        .menu(&menu)
        .on_menu_event(move |app, event| {
            if event.id.as_ref() == "quit" {
                super::quit(app, &service_for_menu);
            }
        })
        .build(app)?;

    let mut projects_rx = service.subscribe();
    let app_for_projects = app.clone();
    let submenu = projects.clone();
    tauri::async_runtime::spawn(async move {
        loop {
            let list = projects_rx.borrow_and_update().clone();
            if let Err(e) = fill_projects(&app_for_projects, &submenu, &list) {
                tracing::warn!("tray menu: {e}");
            }
            if projects_rx.changed().await.is_err() {
                break;
            }
        }
    });

    let broker = service.broker().clone();
    let mut events = broker.subscribe();
    tauri::async_runtime::spawn(async move {
        loop {
            let count = broker.pending().len();
            let (text, tooltip, icon) = match count {
                0 => (
                    "No requests waiting".to_owned(),
                    "landstrip-tray: idle".to_owned(),
                    ICON_IDLE,
                ),
                n => (
                    format!("{n} waiting for you"),
                    format!("landstrip-tray: {n} waiting"),
                    ICON_PENDING,
                ),
            };
            let _ = pending.set_text(text);
            let _ = tray.set_tooltip(Some(tooltip));
            if let Ok(image) = Image::from_bytes(icon) {
                let _ = tray.set_icon(Some(image));
            }
            match events.recv().await {
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            }
        }
    });
    Ok(())
}

fn fill_projects(
    app: &AppHandle,
    submenu: &Submenu<tauri::Wry>,
    list: &[ProjectInfo],
) -> tauri::Result<()> {
    for item in submenu.items()? {
        submenu.remove(&item)?;
    }
    if list.is_empty() {
        submenu.append(&MenuItem::new(
            app,
            "No projects served",
            false,
            None::<&str>,
        )?)?;
    }
    for project in list {
        let state = match &project.status {
            ProjectStatus::Serving => format!("serving on port {}", project.port),
            ProjectStatus::Conflict { other_pid, .. } => {
                format!("another presenter (pid {other_pid}) has it")
            }
            ProjectStatus::Unpublished { error } => format!("not published: {error}"),
        };
        let label = format!("{} — {state}", project.dir.display());
        submenu.append(&MenuItem::new(app, label, false, None::<&str>)?)?;
    }
    Ok(())
}
