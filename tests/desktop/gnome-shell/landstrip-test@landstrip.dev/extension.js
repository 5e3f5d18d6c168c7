// Test only (tests/src/gnome.rs installs it into a throwaway user's data directory):
// GNOME Shell 43 closed org.gnome.Shell.Eval, so the suite asks the shell through this
// probe. It reports what a person would see (windows, focus, the notifications and their
// buttons) and acts as a person would: a virtual keyboard's key press reaches the focused
// window, and a virtual pointer's click lands on a banner's button on screen.
/* exported init */
const { Clutter, Gio, GLib, Shell } = imports.gi;
const Main = imports.ui.main;

const IFACE = `<node><interface name="org.landstrip.TestShell">
  <method name="Windows"><arg type="s" direction="out"/></method>
  <method name="Notifications"><arg type="s" direction="out"/></method>
  <method name="Banner"><arg type="s" direction="out"/></method>
  <method name="HideOverview"/>
  <method name="Screenshot"><arg type="s" name="path" direction="in"/></method>
  <method name="ActivateWindow"><arg type="s" name="title" direction="in"/><arg type="b" direction="out"/></method>
  <method name="Key"><arg type="u" name="keyval" direction="in"/></method>
  <method name="ClickBanner"><arg type="s" name="title" direction="in"/><arg type="s" name="label" direction="in"/><arg type="b" direction="out"/></method>
  <method name="Dismiss"><arg type="s" name="title" direction="in"/><arg type="b" direction="out"/></method>
</interface></node>`;

function windowInfo(w) {
    const app = Shell.WindowTracker.get_default().get_window_app(w);
    const r = w.get_frame_rect();
    return {
        title: w.get_title(),
        wmClass: w.get_wm_class(),
        gtkAppId: w.get_gtk_application_id(),
        sandboxedAppId: w.get_sandboxed_app_id(),
        app: app ? app.get_id() : null,
        appName: app ? app.get_name() : null,
        focused: w.has_focus(),
        above: w.is_above(),
        demandsAttention: w.demands_attention,
        pid: w.get_pid(),
        rect: [r.x, r.y, r.width, r.height],
        monitorScale: global.display.get_monitor_scale(w.get_monitor()),
    };
}

function allNotifications() {
    const out = [];
    for (const source of Main.messageTray.getSources()) {
        for (const n of source.notifications) {
            out.push({
                source: source.title,
                app: source.app ? source.app.get_id() : null,
                title: n.title,
                body: n.bannerBodyText,
                actions: n.actions.map(a => a.label),
                urgency: n.urgency,
                resident: n.resident,
                soundName: n._soundName || null,
            });
        }
    }
    return out;
}

function findButton(actor, label) {
    if (actor.label === label && actor.reactive && actor.mapped)
        return actor;
    for (const child of actor.get_children()) {
        const found = findButton(child, label);
        if (found)
            return found;
    }
    return null;
}

class Probe {
    constructor() {
        const seat = Clutter.get_default_backend().get_default_seat();
        this._keyboard = seat.create_virtual_device(Clutter.InputDeviceType.KEYBOARD_DEVICE);
        this._pointer = seat.create_virtual_device(Clutter.InputDeviceType.POINTER_DEVICE);
    }

    Windows() {
        return JSON.stringify({
            startingUp: Main.layoutManager._startingUp,
            inOverview: Main.overview.visible,
            windows: global.display.list_all_windows().map(windowInfo),
        });
    }

    Notifications() {
        return JSON.stringify(allNotifications());
    }

    // The banner on screen now (the notification a person sees pop up), if any.
    Banner() {
        const tray = Main.messageTray;
        const n = tray._notification;
        const shown = tray._banner && tray._banner.mapped && n;
        return JSON.stringify(shown ? { title: n.title, body: n.bannerBodyText } : null);
    }

    // The whole screen as a PNG at `path`, as GNOME's own screenshot tool takes it.
    ScreenshotAsync([path], invocation) {
        const file = Gio.File.new_for_path(path);
        const stream = file.replace(null, false, Gio.FileCreateFlags.NONE, null);
        new Shell.Screenshot().screenshot(false, stream, (shooter, result) => {
            try {
                shooter.screenshot_finish(result);
                stream.close(null);
                invocation.return_value(null);
            } catch (e) {
                invocation.return_dbus_error('org.landstrip.TestShell.Error', e.message);
            }
        });
    }

    HideOverview() {
        Main.overview.hide();
    }

    // Brings a window forward as the shell does when a person clicks it.
    ActivateWindow(title) {
        const w = global.display.list_all_windows().find(x => x.get_title() === title);
        if (!w)
            return false;
        Main.activateWindow(w);
        return true;
    }

    Key(keyval) {
        const t = GLib.get_monotonic_time();
        this._keyboard.notify_keyval(t, keyval, Clutter.KeyState.PRESSED);
        this._keyboard.notify_keyval(t + 1000, keyval, Clutter.KeyState.RELEASED);
    }

    // A pointer click on the button labelled `label` ("": the body, which activates the
    // notification) of the banner on screen if it shows the notification titled `title`.
    // A banner of another notification (GNOME's own "Screen Lock disabled" at start) is
    // closed, as a person would, and false returned: ask again.
    ClickBanner(title, label) {
        const banner = Main.messageTray._banner;
        if (!banner || !banner.mapped)
            return false;
        // Only once the banner has come all the way down: while it slides in (and lays
        // out its buttons) a button's position is not where the click would land.
        if (Main.messageTray._notificationState !== imports.ui.messageTray.State.SHOWN)
            return false;
        const shown = Main.messageTray._notification;
        if (shown && shown.title !== title) {
            shown.destroy(imports.ui.messageTray.NotificationDestroyedReason.DISMISSED);
            // The tray shows the next banner on its next state update, which a person's
            // pointer or keyboard would bring; nothing moves in a headless session.
            Main.messageTray._updateState();
            return false;
        }
        const target = label === '' ? banner : findButton(banner, label);
        if (!target)
            return false;
        const [x, y] = target.get_transformed_position();
        const [w, h] = target.get_transformed_size();
        const px = x + (label === '' ? Math.min(40, w / 4) : w / 2);
        const py = y + (label === '' ? Math.min(20, h / 4) : h / 2);
        const t = GLib.get_monotonic_time();
        this._pointer.notify_absolute_motion(t, px, py);
        this._pointer.notify_button(t + 1000, Clutter.BUTTON_PRIMARY, Clutter.ButtonState.PRESSED);
        this._pointer.notify_button(t + 2000, Clutter.BUTTON_PRIMARY, Clutter.ButtonState.RELEASED);
        return true;
    }

    // Closes a notification as a person's dismissal does (the reason sent is DISMISSED).
    Dismiss(title) {
        for (const source of Main.messageTray.getSources()) {
            for (const n of source.notifications) {
                if (n.title.includes(title)) {
                    n.destroy(imports.ui.messageTray.NotificationDestroyedReason.DISMISSED);
                    // The next banner shows at the tray's next update (see ClickBanner).
                    Main.messageTray._updateState();
                    return true;
                }
            }
        }
        return false;
    }
}

class Extension {
    enable() {
        this._probe = new Probe();
        this._dbus = Gio.DBusExportedObject.wrapJSObject(IFACE, this._probe);
        this._dbus.export(Gio.DBus.session, '/org/landstrip/TestShell');
        this._name = Gio.bus_own_name_on_connection(Gio.DBus.session,
            'org.landstrip.TestShell', Gio.BusNameOwnerFlags.NONE, null, null);
    }

    disable() {
        Gio.bus_unown_name(this._name);
        this._dbus.unexport();
        this._probe = null;
    }
}

function init() {
    return new Extension();
}
