//! The XDG desktop portal's `org.freedesktop.portal.Settings`, as far as the colour scheme
//! goes: dbusmock's generic mock on a test's private bus, stands in for
//! xdg-desktop-portal, which needs a desktop session that cannot run here.

use tokio::process::Child;
use zbus::{Connection, Variant};

use crate::notification_server::{bounded, start_dbusmock, PrivateBus};

/// The portal's bus name.
pub const PORTAL: &str = "org.freedesktop.portal.Desktop";
const PORTAL_PATH: &str = "/org/freedesktop/portal/desktop";
const SETTINGS: &str = "org.freedesktop.portal.Settings";
const MOCK_IFACE: &str = "org.freedesktop.DBus.Mock";

/// The mock portal.
pub struct Portal {
    conn: Connection,
    _mock: Child,
}

impl Portal {
    /// Starts the mock on `bus` with version 1 of the Settings interface (only `Read`,
    /// which wraps its value in two variants), answering `color-scheme` with `scheme`
    /// (0 no preference, 1 dark, 2 light); returns once it owns its name.
    pub async fn start_v1(bus: &PrivateBus, scheme: u32) -> Self {
        let conn = bus.connect().await;
        let mock = start_dbusmock(bus, &conn, PORTAL, &[PORTAL, PORTAL_PATH, SETTINGS]).await;
        let code = format!(
            "ret = dbus.UInt32({scheme}, variant_level=2) \
             if args[0] == 'org.freedesktop.appearance' and args[1] == 'color-scheme' \
             else dbus.String('', variant_level=2)"
        );
        let portal = Self { conn, _mock: mock };
        let body = (SETTINGS, "Read", "ss", "v", code.as_str());
        let call = portal.conn.call_method(
            Some(PORTAL),
            PORTAL_PATH,
            Some(MOCK_IFACE),
            "AddMethod",
            &body,
        );
        bounded("the mock portal's AddMethod", call).await;
        portal
    }

    /// Emits `SettingChanged(namespace, key, <value>)`, as the portal does when the
    /// desktop's setting changes.
    pub async fn setting_changed(&self, namespace: &str, key: &str, value: u32) {
        let args: Vec<Variant<'_>> = vec![
            Variant::from(namespace),
            Variant::from(key),
            Variant::Variant(Box::new(Variant::from(value))),
        ];
        let body = (SETTINGS, "SettingChanged", "ssv", args);
        let call = self.conn.call_method(
            Some(PORTAL),
            PORTAL_PATH,
            Some(MOCK_IFACE),
            "EmitSignal",
            &body,
        );
        bounded("the mock portal's EmitSignal", call).await;
    }
}
