//! The app's windows as the X server sees them, through `xdotool` (Debian package
//! xdotool), and a window manager's close request. X has no event a test can cheaply
//! await for another client's windows, so [`wait_windows`] polls every 50 ms up to a
//! deadline.

use std::time::Duration;

use tokio::process::Command;
use tokio::time::Instant;

use crate::{EVENT_TIMEOUT, PYTHON};

/// The prompt dialog's title (src-tauri/src/app/dialog.rs). The app has other windows
/// named `landstrip-tray` (GTK's leader window, the tray icon's), so searches match it
/// exactly.
pub const DIALOG_TITLE: &str = "landstrip-tray — a sandboxed program is asking";

/// How often [`wait_windows`] looks.
const POLL: Duration = Duration::from_millis(50);

/// The ids of the windows of process `pid` titled exactly `title`, mapped or not
/// (`visible_only`: mapped only). Bounded: a hung xdotool fails naming itself.
pub async fn windows(pid: u32, title: &str, visible_only: bool) -> Vec<String> {
    let pattern = format!("^{}$", regex_escape(title));
    let pid = pid.to_string();
    let mut args = vec!["search", "--all", "--pid", &pid, "--name", &pattern];
    if visible_only {
        args.insert(1, "--onlyvisible");
    }
    let out = tokio::time::timeout(EVENT_TIMEOUT, Command::new("xdotool").args(&args).output())
        .await
        .unwrap_or_else(|_| panic!("xdotool {args:?}: no answer within {EVENT_TIMEOUT:?}"))
        .expect("run xdotool (scripts/setup.sh --test installs it)");
    // Exit 1 with no output: nothing matched.
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// Polls [`windows`] until `done` holds for the list, failing after `within` with `what`
/// (and the `log` given); returns the list.
pub async fn wait_windows(
    pid: u32,
    title: &str,
    visible_only: bool,
    within: Duration,
    what: &str,
    done: impl Fn(&[String]) -> bool,
    log: impl Fn() -> String,
) -> Vec<String> {
    let deadline = Instant::now() + within;
    loop {
        let found = windows(pid, title, visible_only).await;
        if done(&found) {
            return found;
        }
        if Instant::now() >= deadline {
            panic!(
                "{what}: not within {within:?} (windows titled {title:?}: {found:?}); log:\n{}",
                log()
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Asks `window` to close, as a window manager's close button does (a `WM_DELETE_WINDOW`
/// client message; the test display has no window manager). Bounded.
pub async fn request_close(window: &str) {
    let sent = tokio::time::timeout(
        EVENT_TIMEOUT,
        Command::new(PYTHON)
            .args(["-c", SEND_WM_DELETE, window])
            .status(),
    )
    .await
    .unwrap_or_else(|_| panic!("sending WM_DELETE_WINDOW: no answer within {EVENT_TIMEOUT:?}"))
    .expect("run python3");
    assert!(
        sent.success(),
        "sending WM_DELETE_WINDOW to {window} failed"
    );
}

/// Runs `xdotool ARGS…` (keys sent through XTest, to the focused window), bounded; fails
/// the test if xdotool does.
pub async fn xdotool(args: &[&str]) {
    let status = tokio::time::timeout(EVENT_TIMEOUT, Command::new("xdotool").args(args).status())
        .await
        .unwrap_or_else(|_| panic!("xdotool {args:?}: no answer within {EVENT_TIMEOUT:?}"))
        .expect("run xdotool (scripts/setup.sh --test installs it)");
    assert!(status.success(), "xdotool {args:?} failed: {status}");
}

fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\^$.|?*+()[]{}".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Sends WM_DELETE_WINDOW to window argv[1] through libX11.
const SEND_WM_DELETE: &str = r#"
import ctypes, sys
x = ctypes.cdll.LoadLibrary("libX11.so.6")
x.XOpenDisplay.restype = ctypes.c_void_p
x.XOpenDisplay.argtypes = [ctypes.c_char_p]
x.XInternAtom.restype = ctypes.c_ulong
x.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
x.XSendEvent.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_long, ctypes.c_void_p]
x.XFlush.argtypes = [ctypes.c_void_p]
x.XCloseDisplay.argtypes = [ctypes.c_void_p]
class ClientMessage(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
                ("display", ctypes.c_void_p), ("window", ctypes.c_ulong),
                ("message_type", ctypes.c_ulong), ("format", ctypes.c_int),
                ("data", ctypes.c_long * 5)]
class Event(ctypes.Union):
    _fields_ = [("xclient", ClientMessage), ("pad", ctypes.c_long * 24)]
display = x.XOpenDisplay(None)
if not display:
    sys.exit("no display")
window = int(sys.argv[1])
event = Event()
event.xclient.type = 33  # ClientMessage
event.xclient.window = window
event.xclient.message_type = x.XInternAtom(display, b"WM_PROTOCOLS", 0)
event.xclient.format = 32
event.xclient.data[0] = x.XInternAtom(display, b"WM_DELETE_WINDOW", 0)
event.xclient.data[1] = 0  # CurrentTime
if not x.XSendEvent(display, window, 0, 0, ctypes.byref(event)):
    sys.exit("XSendEvent failed")
x.XFlush(display)
x.XCloseDisplay(display)
"#;

/// What [`MapWatch`] saw happen to a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapEvent {
    /// Mapped (on screen, as far as the X server is concerned).
    Mapped,
    /// Unmapped.
    Unmapped,
    /// Destroyed.
    Destroyed,
}

/// Follows the top-level windows titled exactly `title` through the X server's own
/// events (`SubstructureNotify` on the root window; the test display has no window
/// manager, so top-level windows are the root's children): no polling, each event stamped
/// with the wall clock when it arrived, to compare with times taken in other processes.
pub struct MapWatch {
    _child: tokio::process::Child,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl MapWatch {
    /// Starts watching; returns once the watcher has subscribed (nothing after is missed).
    pub async fn start(title: &str) -> Self {
        use tokio::io::AsyncBufReadExt;
        let mut child = Command::new(PYTHON)
            .args(["-c", WATCH_MAPS, title])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("run python3");
        let stdout = child.stdout.take().expect("stdout");
        let mut watch = Self {
            _child: child,
            lines: tokio::io::BufReader::new(stdout).lines(),
        };
        let ready = watch.next_line("the X watcher subscribed").await;
        assert_eq!(ready, "ready", "the X watcher: {ready}");
        watch
    }

    async fn next_line(&mut self, what: &str) -> String {
        match tokio::time::timeout(EVENT_TIMEOUT, self.lines.next_line()).await {
            Ok(Ok(Some(line))) => line,
            Ok(_) => panic!("the X watcher exited before: {what}"),
            Err(_) => panic!("{what}: not within {EVENT_TIMEOUT:?}"),
        }
    }

    /// The next event `wanted` for a window with the title (bounded, failing with
    /// `what`): the window's id and when the event arrived.
    pub async fn next(&mut self, wanted: MapEvent, what: &str) -> (String, std::time::SystemTime) {
        loop {
            let line = self.next_line(what).await;
            let mut parts = line.split_whitespace();
            let event = match parts.next() {
                Some("map") => MapEvent::Mapped,
                Some("unmap") => MapEvent::Unmapped,
                Some("destroy") => MapEvent::Destroyed,
                _ => panic!("the X watcher said {line:?}"),
            };
            let window = parts.next().unwrap_or_default().to_owned();
            let at = parts
                .next()
                .and_then(|t| t.parse::<f64>().ok())
                .unwrap_or_else(|| panic!("the X watcher said {line:?}"));
            if event == wanted {
                return (window, std::time::UNIX_EPOCH + Duration::from_secs_f64(at));
            }
        }
    }
}

/// Prints `map|unmap|destroy <window> <epoch seconds>` for top-level windows titled
/// argv[1], through libX11 events; `ready` once subscribed.
const WATCH_MAPS: &str = r#"
import ctypes, sys, time
x = ctypes.cdll.LoadLibrary("libX11.so.6")
x.XOpenDisplay.restype = ctypes.c_void_p
x.XOpenDisplay.argtypes = [ctypes.c_char_p]
x.XDefaultRootWindow.restype = ctypes.c_ulong
x.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
x.XSelectInput.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_long]
x.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
x.XNextEvent.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
x.XFetchName.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.POINTER(ctypes.c_char_p)]
ERROR_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
ignore = ERROR_HANDLER(lambda d, e: 0)  # a window gone before its name was read
x.XSetErrorHandler(ignore)
class Any(ctypes.Structure):
    # Map, Unmap and Destroy events all start so; `window` is the one concerned.
    _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
                ("display", ctypes.c_void_p), ("event", ctypes.c_ulong), ("window", ctypes.c_ulong)]
class Event(ctypes.Union):
    _fields_ = [("any", Any), ("pad", ctypes.c_long * 24)]
DESTROY, UNMAP, MAP = 17, 18, 19
title = sys.argv[1].encode()
display = x.XOpenDisplay(None)
if not display:
    sys.exit("no display")
x.XSelectInput(display, x.XDefaultRootWindow(display), 1 << 19)  # SubstructureNotifyMask
x.XSync(display, 0)
print("ready", flush=True)
ours = set()
event = Event()
while True:
    x.XNextEvent(display, ctypes.byref(event))
    at = time.time()
    kind, window = event.any.type, event.any.window
    if kind == MAP:
        name = ctypes.c_char_p()
        if x.XFetchName(display, window, ctypes.byref(name)) and name.value == title:
            ours.add(window)
    if window in ours and kind in (MAP, UNMAP, DESTROY):
        word = {MAP: "map", UNMAP: "unmap", DESTROY: "destroy"}[kind]
        print(f"{word} {window} {at:.6f}", flush=True)
        if kind == DESTROY:
            ours.discard(window)
"#;
