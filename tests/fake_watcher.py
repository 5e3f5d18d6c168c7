#!/usr/bin/python3
"""A stand-in for a panel's StatusNotifierWatcher (org.kde.StatusNotifierWatcher) on the
session bus named by DBUS_SESSION_BUS_ADDRESS, for tests/tests/process_life.rs: there is
no real panel under Xvfb. It owns the name, answers RegisterStatusNotifierItem and
RegisterStatusNotifierHost, says a host is registered, and reports on stdout, one line
each:

    waiting                      with --when-told: up, and waiting for a line on stdin
                                 before it takes the name
    ready                        once it owns the name
    item <service> <pid>         for each RegisterStatusNotifierItem (pid of the caller)

Run with Debian's /usr/bin/python3 (python3-dbus, python3-gi: installed with
python3-dbusmock)."""

import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

NAME = "org.kde.StatusNotifierWatcher"
PATH = "/StatusNotifierWatcher"
IFACE = "org.kde.StatusNotifierWatcher"
PROPS = "org.freedesktop.DBus.Properties"


def say(line):
    print(line, flush=True)


class Watcher(dbus.service.Object):
    def __init__(self, bus):
        super().__init__(bus, PATH)
        self.bus = bus
        self.items = []

    def caller_pid(self, sender):
        proxy = self.bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")
        return int(proxy.GetConnectionUnixProcessID(sender, dbus_interface="org.freedesktop.DBus"))

    @dbus.service.method(IFACE, in_signature="s", out_signature="", sender_keyword="sender")
    def RegisterStatusNotifierItem(self, service, sender=None):
        # appindicator passes its object path; the item is then the caller's connection.
        item = sender + service if service.startswith("/") else service
        self.items.append(item)
        say(f"item {service} {self.caller_pid(sender)}")
        self.StatusNotifierItemRegistered(item)

    @dbus.service.method(IFACE, in_signature="s", out_signature="")
    def RegisterStatusNotifierHost(self, service):
        pass

    @dbus.service.signal(IFACE, signature="s")
    def StatusNotifierItemRegistered(self, item):
        pass

    @dbus.service.signal(IFACE, signature="")
    def StatusNotifierHostRegistered(self):
        pass

    def props(self):
        return {
            "RegisteredStatusNotifierItems": dbus.Array(self.items, signature="s"),
            "IsStatusNotifierHostRegistered": dbus.Boolean(True),
            "ProtocolVersion": dbus.Int32(0),
        }

    @dbus.service.method(PROPS, in_signature="ss", out_signature="v")
    def Get(self, interface, prop):
        return self.props()[prop]

    @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return self.props()


def main():
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    watcher = Watcher(bus)
    if "--when-told" in sys.argv[1:]:
        # Started ahead, so that coming later costs only taking the name.
        say("waiting")
        sys.stdin.readline()
    # Exported before the name is taken: whoever sees the name can call at once.
    _name = dbus.service.BusName(NAME, bus, do_not_queue=True)
    watcher.StatusNotifierHostRegistered()
    say("ready")
    GLib.MainLoop().run()


if __name__ == "__main__":
    sys.exit(main())
