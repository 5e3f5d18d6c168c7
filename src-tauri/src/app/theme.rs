//! Light or dark as the desktop prefers: the XDG desktop portal's
//! `org.freedesktop.appearance color-scheme`, read once and then followed through its
//! `SettingChanged` signal, applied to GTK (and so to every webview's
//! `prefers-color-scheme`).
//!
//! tao does this itself when built with its `dbus` feature, but it waits for the signal on
//! a thread of its own that wakes every 5 s for the app's life (a blocking libdbus loop
//! with a 5 s timeout) and opens a new bus connection for every window it creates. Here it
//! is one task on the app's async runtime, woken only by the bus.

use futures_lite::StreamExt;
use tauri::{AppHandle, Runtime, Theme};
use zbus::{Connection, OwnedVariant, Variant};

const PORTAL: &str = "org.freedesktop.portal.Desktop";
const PORTAL_PATH: &str = "/org/freedesktop/portal/desktop";
const SETTINGS: &str = "org.freedesktop.portal.Settings";
const NAMESPACE: &str = "org.freedesktop.appearance";
const KEY: &str = "color-scheme";

/// What a `color-scheme` value asks for: 1 dark, 2 light, anything else (0, no
/// preference) nothing of ours (GTK's own setting stands).
pub fn theme_of(value: &Variant<'_>) -> Option<Theme> {
    match value {
        // `Read` (version 1 of the interface) wraps the value in one more variant.
        Variant::Variant(inner) => theme_of(inner),
        Variant::U32(1) => Some(Theme::Dark),
        Variant::U32(2) => Some(Theme::Light),
        _ => None,
    }
}

/// Starts following the desktop's preference; without a session bus or a portal that
/// has the setting, GTK's own theme stands and nothing more is done.
pub fn follow<R: Runtime>(app: &AppHandle<R>) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        if let Err(e) = run(&app).await {
            tracing::debug!("the desktop's colour scheme is not followed: {e}");
        }
    });
}

async fn run<R: Runtime>(app: &AppHandle<R>) -> zbus::Result<()> {
    let conn = Connection::session().await?;
    let proxy = zbus::Proxy::new(&conn, PORTAL, PORTAL_PATH, SETTINGS).await?;
    // Subscribed before the first read, so a change in between is not missed.
    let mut changes = proxy.receive_signal("SettingChanged").await?;
    let first: OwnedVariant = match proxy.call("ReadOne", &(NAMESPACE, KEY)).await {
        Ok(value) => value,
        // Portals before version 2 of the interface have only `Read`.
        Err(_) => proxy.call("Read", &(NAMESPACE, KEY)).await?,
    };
    let mut applied = apply(app, None, theme_of(&first));
    while let Some(message) = changes.next().await {
        let Ok((namespace, key, value)) = message
            .body()
            .deserialize::<(String, String, OwnedVariant)>()
        else {
            continue;
        };
        if namespace == NAMESPACE && key == KEY {
            applied = apply(app, applied, theme_of(&value));
        }
    }
    Ok(())
}

/// Sets `wanted` unless it is what was `applied` last (no preference after a preference
/// clears GTK's dark flag, as tao did). Returns what is applied now.
fn apply<R: Runtime>(
    app: &AppHandle<R>,
    applied: Option<Theme>,
    wanted: Option<Theme>,
) -> Option<Theme> {
    if wanted != applied {
        tracing::debug!(?wanted, "the desktop's colour scheme changed");
        app.set_theme(wanted);
    }
    wanted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_portal_values_map_to_themes_in_either_interface_version() {
        assert_eq!(theme_of(&Variant::U32(1)), Some(Theme::Dark));
        assert_eq!(theme_of(&Variant::U32(2)), Some(Theme::Light));
        assert_eq!(theme_of(&Variant::U32(0)), None);
        assert_eq!(theme_of(&Variant::U32(7)), None);
        let wrapped = Variant::Variant(Box::new(Variant::U32(1)));
        assert_eq!(theme_of(&wrapped), Some(Theme::Dark));
        assert_eq!(theme_of(&Variant::from("dark")), None);
    }
}
