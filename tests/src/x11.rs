//! The app's windows as the X server sees them, through `xdotool` (Debian package
//! xdotool), and a window manager's close request. X has no event a test can cheaply
//! await for another client's windows, so [`wait_windows`] polls every 50 ms up to a
//! deadline.

use std::time::Duration;

use tokio::process::Command;
use tokio::time::Instant;

use crate::{EVENT_TIMEOUT, PYTHON};

/// The prompt dialog's title (src-tauri/src/app/dialog/window.rs). The app has other windows
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

/// A Python watcher (`python3 -c SCRIPT ARGS…`) that prints `ready` once subscribed, then
/// one line per event; every read bounded.
struct ScriptWatch {
    name: &'static str,
    _child: tokio::process::Child,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl ScriptWatch {
    /// Starts `python3 -c args[0] args[1..]` and waits for its `ready`.
    async fn start(args: &[&str], name: &'static str) -> Self {
        use tokio::io::AsyncBufReadExt;
        let mut child = Command::new(PYTHON)
            .arg("-c")
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("run python3");
        let stdout = child.stdout.take().expect("stdout");
        let mut watch = Self {
            name,
            _child: child,
            lines: tokio::io::BufReader::new(stdout).lines(),
        };
        let ready = watch.next_line(&format!("{name} subscribed")).await;
        assert_eq!(ready, "ready", "{name}: {ready}");
        watch
    }

    async fn next_line(&mut self, what: &str) -> String {
        match tokio::time::timeout(EVENT_TIMEOUT, self.lines.next_line()).await {
            Ok(Ok(Some(line))) => line,
            Ok(_) => panic!("{} exited before: {what}", self.name),
            Err(_) => panic!("{what}: not within {EVENT_TIMEOUT:?}"),
        }
    }
}

/// Follows the top-level windows titled exactly `title` through the X server's own
/// events (`SubstructureNotify` on the root window; the test display has no window
/// manager, so top-level windows are the root's children): no polling, each event stamped
/// with the wall clock when it arrived, to compare with times taken in other processes.
pub struct MapWatch {
    script: ScriptWatch,
}

impl MapWatch {
    /// Starts watching; returns once the watcher has subscribed (nothing after is missed).
    pub async fn start(title: &str) -> Self {
        let script = ScriptWatch::start(&[WATCH_MAPS, title], "the X watcher").await;
        Self { script }
    }

    /// Like [`MapWatch::start`], for the windows of process `pid` only (by `_NET_WM_PID`):
    /// other tests' apps on the same display are left out.
    pub async fn start_for(title: &str, pid: u32) -> Self {
        let pid = pid.to_string();
        let script = ScriptWatch::start(&[WATCH_MAPS, title, &pid], "the X watcher").await;
        Self { script }
    }

    async fn next_line(&mut self, what: &str) -> String {
        self.script.next_line(what).await
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
/// argv[1] (by `WM_NAME` or, for a title beyond Latin-1 such as the dialog's, the UTF-8
/// `_NET_WM_NAME`) and, if argv[2] is given, of that pid (`_NET_WM_PID`), through libX11
/// events; `ready` once subscribed.
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
x.XInternAtom.restype = ctypes.c_ulong
x.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
x.XGetWindowProperty.argtypes = [
    ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_long, ctypes.c_long, ctypes.c_int,
    ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_int),
    ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_ulong),
    ctypes.POINTER(ctypes.POINTER(ctypes.c_ubyte))]
x.XFree.argtypes = [ctypes.c_void_p]
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
pid = int(sys.argv[2]) if len(sys.argv) > 2 else None
display = x.XOpenDisplay(None)
if not display:
    sys.exit("no display")
NET_WM_NAME = x.XInternAtom(display, b"_NET_WM_NAME", 0)
UTF8_STRING = x.XInternAtom(display, b"UTF8_STRING", 0)
NET_WM_PID = x.XInternAtom(display, b"_NET_WM_PID", 0)
CARDINAL = 6
def prop(window, atom, kind):
    # The property's items (bytes for format 8, integers for format 32), or None.
    got, fmt, count, left = ctypes.c_ulong(), ctypes.c_int(), ctypes.c_ulong(), ctypes.c_ulong()
    data = ctypes.POINTER(ctypes.c_ubyte)()
    if x.XGetWindowProperty(display, window, atom, 0, 1024, 0, kind, ctypes.byref(got),
            ctypes.byref(fmt), ctypes.byref(count), ctypes.byref(left),
            ctypes.byref(data)) != 0 or not data:
        return None
    if fmt.value == 8:
        value = ctypes.string_at(data, count.value)
    elif fmt.value == 32:
        value = list(ctypes.cast(data, ctypes.POINTER(ctypes.c_long))[:count.value])
    else:
        value = None
    x.XFree(data)
    return value
def ours_by_name(window):
    # WM_NAME (Latin-1 or compound text), or the UTF-8 _NET_WM_NAME for titles beyond ASCII;
    # with a pid, only that process's windows.
    if pid is not None and prop(window, NET_WM_PID, CARDINAL) != [pid]:
        return False
    name = ctypes.c_char_p()
    if x.XFetchName(display, window, ctypes.byref(name)) and name.value == title:
        return True
    return prop(window, NET_WM_NAME, UTF8_STRING) == title
x.XSelectInput(display, x.XDefaultRootWindow(display), 1 << 19)  # SubstructureNotifyMask
x.XSync(display, 0)
print("ready", flush=True)
ours = set()
event = Event()
while True:
    x.XNextEvent(display, ctypes.byref(event))
    at = time.time()
    kind, window = event.any.type, event.any.window
    if kind == MAP and ours_by_name(window):
        ours.add(window)
    if window in ours and kind in (MAP, UNMAP, DESTROY):
        word = {MAP: "map", UNMAP: "unmap", DESTROY: "destroy"}[kind]
        print(f"{word} {window} {at:.6f}", flush=True)
        if kind == DESTROY:
            ours.discard(window)
"#;

/// The bits of a 32-bit pixel a person sees (a depth-24 visual's red, green and blue); the
/// top byte is padding, and WebKit's first frames of a window leave it different.
pub const RGB: u32 = 0x00ff_ffff;

/// One mapping of a watched window as [`PaintWatch`] saw it: when the X server mapped
/// it, and each distinct picture of its pixels read back after that.
#[derive(Debug, Clone)]
pub struct Painting {
    /// The window's id.
    pub window: String,
    /// When the map event arrived (wall clock).
    pub mapped: std::time::SystemTime,
    /// Each picture that differed from the one before: when it was read, and its pixels
    /// (32-bit words, row by row).
    pub frames: Vec<(std::time::SystemTime, Vec<u32>)>,
    /// How many reads were made in all (the polling resolution is the span over this).
    pub reads: usize,
    /// The pictures' width in pixels (0 before the first).
    pub width: usize,
}

impl Painting {
    /// When the window first showed (within `tolerance`, a share of its pixels, for a
    /// progress bar still animating) what it showed at the end of the watch: the first
    /// frame of the final picture, as a person sees it. None if nothing was read.
    ///
    /// Only the first `top` share of the rows is compared: below it a dialog may still
    /// change on purpose (buttons that arm after an input delay).
    pub fn settled(&self, top: f64, tolerance: f64) -> Option<std::time::SystemTime> {
        let last = &self.frames.last()?.1;
        let upto = ((last.len() as f64) * top) as usize;
        self.frames
            .iter()
            .find(|(_, pixels)| self.differ(pixels, last, upto) <= tolerance)
            .map(|(at, _)| *at)
    }

    /// The share of the first `upto` pixels whose colour differs between two pictures (1
    /// if their sizes differ).
    pub fn differ(&self, a: &[u32], b: &[u32], upto: usize) -> f64 {
        if a.len() != b.len() || upto == 0 {
            return 1.0;
        }
        let upto = upto.min(a.len());
        let n = a[..upto]
            .iter()
            .zip(&b[..upto])
            .filter(|(x, y)| (*x ^ *y) & RGB != 0)
            .count();
        n as f64 / upto as f64
    }

    /// When the window first showed more than one colour (anything drawn at all).
    pub fn first_content(&self) -> Option<std::time::SystemTime> {
        self.frames
            .iter()
            .find(|(_, pixels)| {
                let first = pixels.first().map_or(0, |p| p & RGB);
                pixels.iter().any(|p| p & RGB != first)
            })
            .map(|(at, _)| *at)
    }
}

/// Follows the top-level windows whose title contains `title` (plain ASCII) through the X
/// server's map events (as [`MapWatch`]) and, after each map, reads the window's pixels back (`XGetImage`)
/// every `period` for `span`, keeping each distinct picture: when a window that is mapped
/// is painted, seen from outside the app as the screen shows it. The pictures go through
/// files in `dir`.
pub struct PaintWatch {
    script: ScriptWatch,
}

impl PaintWatch {
    /// Starts watching; returns once subscribed.
    pub async fn start(
        title: &str,
        dir: &std::path::Path,
        period: Duration,
        span: Duration,
    ) -> Self {
        std::fs::create_dir_all(dir).expect("mkdir the frames dir");
        let args = [
            WATCH_PAINTS.to_owned(),
            title.to_owned(),
            dir.display().to_string(),
            period.as_secs_f64().to_string(),
            span.as_secs_f64().to_string(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let script = ScriptWatch::start(&args, "the X paint watcher").await;
        Self { script }
    }

    async fn next_line(&mut self, what: &str) -> String {
        self.script.next_line(what).await
    }

    /// The next mapping of a window with the title and its pictures (bounded, failing
    /// with `what`); unmaps and destroys before it are passed over.
    pub async fn next_painting(&mut self, what: &str) -> Painting {
        let epoch = |t: &str| {
            std::time::UNIX_EPOCH
                + Duration::from_secs_f64(
                    t.parse::<f64>()
                        .unwrap_or_else(|_| panic!("the X paint watcher said {t:?}")),
                )
        };
        let mut painting: Option<Painting> = None;
        loop {
            let line = self.next_line(what).await;
            let parts: Vec<&str> = line.split_whitespace().collect();
            match (parts.first().copied(), painting.as_mut()) {
                (Some("map"), None) => {
                    painting = Some(Painting {
                        window: parts[1].to_owned(),
                        mapped: epoch(parts[2]),
                        frames: Vec::new(),
                        reads: 0,
                        width: 0,
                    });
                }
                (Some("frame"), Some(p)) => {
                    let bytes = std::fs::read(parts[3]).expect("read a frame");
                    let _ = std::fs::remove_file(parts[3]);
                    let pixels = bytes
                        .chunks_exact(4)
                        .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
                        .collect();
                    p.width = parts.get(4).and_then(|w| w.parse().ok()).unwrap_or(0);
                    p.frames.push((epoch(parts[2]), pixels));
                }
                (Some("done"), Some(p)) => {
                    p.reads = parts[2].parse().unwrap_or(0);
                    return painting.expect("a painting");
                }
                (Some("unmap" | "destroy"), None) => {}
                _ => panic!("the X paint watcher said {line:?} ({what})"),
            }
        }
    }

    /// The next unmap of a window with the title (bounded): when it arrived.
    pub async fn next_unmap(&mut self, what: &str) -> std::time::SystemTime {
        loop {
            let line = self.next_line(what).await;
            let parts: Vec<&str> = line.split_whitespace().collect();
            if parts.first() == Some(&"unmap") {
                return std::time::UNIX_EPOCH
                    + Duration::from_secs_f64(parts[2].parse().unwrap_or_default());
            }
        }
    }
}

/// Prints `map <window> <epoch s>` for top-level windows whose title holds argv[1], then reads the
/// window's pixels every argv[3] seconds for argv[4] seconds, writing each distinct
/// picture to a file in argv[2] (`frame <window> <epoch s> <file> <width>`), then `done <window>
/// <reads>`; `unmap`/`destroy <window> <epoch s>` otherwise; `ready` once subscribed.
const WATCH_PAINTS: &str = r#"
import ctypes, os, sys, time
x = ctypes.cdll.LoadLibrary("libX11.so.6")
x.XOpenDisplay.restype = ctypes.c_void_p
x.XOpenDisplay.argtypes = [ctypes.c_char_p]
x.XDefaultRootWindow.restype = ctypes.c_ulong
x.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
x.XSelectInput.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_long]
x.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
x.XNextEvent.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
x.XGetGeometry.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong),
                           ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int),
                           ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint),
                           ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint)]
class XImage(ctypes.Structure):
    _fields_ = [("width", ctypes.c_int), ("height", ctypes.c_int), ("xoffset", ctypes.c_int),
                ("format", ctypes.c_int), ("data", ctypes.c_void_p), ("byte_order", ctypes.c_int),
                ("bitmap_unit", ctypes.c_int), ("bitmap_bit_order", ctypes.c_int),
                ("bitmap_pad", ctypes.c_int), ("depth", ctypes.c_int),
                ("bytes_per_line", ctypes.c_int), ("bits_per_pixel", ctypes.c_int)]
x.XGetImage.restype = ctypes.POINTER(XImage)
x.XGetImage.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_int,
                        ctypes.c_uint, ctypes.c_uint, ctypes.c_ulong, ctypes.c_int]
x.XDestroyImage.argtypes = [ctypes.POINTER(XImage)]
ERROR_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
ignore = ERROR_HANDLER(lambda d, e: 0)  # a window unmapped or gone while being read
x.XSetErrorHandler(ignore)
class Any(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
                ("display", ctypes.c_void_p), ("event", ctypes.c_ulong), ("window", ctypes.c_ulong)]
class Event(ctypes.Union):
    _fields_ = [("any", Any), ("pad", ctypes.c_long * 24)]
DESTROY, UNMAP, MAP = 17, 18, 19
ZPIXMAP, ALL_PLANES = 2, 0xFFFFFFFF
title, out, period, span = sys.argv[1].encode(), sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
display = x.XOpenDisplay(None)
if not display:
    sys.exit("no display")
root = x.XDefaultRootWindow(display)
# The pointer rests in the screen's corner: Xvfb starts it at the centre, where windows
# appear, and the tooltip of whatever lies under it (shown ~500 ms later) would count as
# the window still being painted.
x.XWarpPointer.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_int,
                           ctypes.c_int, ctypes.c_uint, ctypes.c_uint, ctypes.c_int, ctypes.c_int]
x.XWarpPointer(display, 0, root, 0, 0, 0, 0, 0, 0)
x.XSelectInput(display, root, 1 << 19)  # SubstructureNotifyMask
x.XSync(display, 0)
print("ready", flush=True)
ours = set()
count = 0
event = Event()

x.XInternAtom.restype = ctypes.c_ulong
x.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
x.XGetWindowProperty.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_long,
                                 ctypes.c_long, ctypes.c_int, ctypes.c_ulong,
                                 ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_int),
                                 ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_ulong),
                                 ctypes.POINTER(ctypes.c_void_p)]
x.XFree.argtypes = [ctypes.c_void_p]
NET_WM_NAME = x.XInternAtom(display, b"_NET_WM_NAME", 0)

def net_wm_name(window):
    kind, fmt = ctypes.c_ulong(), ctypes.c_int()
    n, after, data = ctypes.c_ulong(), ctypes.c_ulong(), ctypes.c_void_p()
    if x.XGetWindowProperty(display, window, NET_WM_NAME, 0, 1024, 0, 0, ctypes.byref(kind),
                            ctypes.byref(fmt), ctypes.byref(n), ctypes.byref(after),
                            ctypes.byref(data)) != 0 or not data.value:
        return b""
    value = ctypes.string_at(data.value, n.value) if fmt.value == 8 else b""
    x.XFree(data)
    return value

def geometry(window):
    root, gx, gy = ctypes.c_ulong(), ctypes.c_int(), ctypes.c_int()
    w, h, border, depth = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
    if not x.XGetGeometry(display, window, ctypes.byref(root), ctypes.byref(gx), ctypes.byref(gy),
                          ctypes.byref(w), ctypes.byref(h), ctypes.byref(border), ctypes.byref(depth)):
        return 0, 0
    return w.value, h.value

def watch(window, mapped):
    global count
    w, h = geometry(window)
    last, reads = None, 0
    while time.time() < mapped + span:
        at = time.time()
        image = x.XGetImage(display, window, 0, 0, w, h, ALL_PLANES, ZPIXMAP) if w and h else None
        reads += 1
        if image:
            img = image.contents
            if img.bits_per_pixel == 32:
                data = ctypes.string_at(img.data, img.bytes_per_line * img.height)
                if img.bytes_per_line != img.width * 4:
                    data = b"".join(data[r * img.bytes_per_line:r * img.bytes_per_line + img.width * 4]
                                    for r in range(img.height))
                if data != last:
                    last = data
                    count += 1
                    path = os.path.join(out, f"frame-{count}.raw")
                    with open(path, "wb") as f:
                        f.write(data)
                    print(f"frame {window} {at:.6f} {path} {img.width}", flush=True)
            x.XDestroyImage(image)
        time.sleep(max(0.0, at + period - time.time()))
    print(f"done {window} {reads}", flush=True)

while True:
    x.XNextEvent(display, ctypes.byref(event))
    at = time.time()
    kind, window = event.any.type, event.any.window
    if kind == MAP:
        # _NET_WM_NAME (UTF-8): WM_NAME is compound text for a title with an em dash, and
        # XFetchName reads only plain strings.
        if title in net_wm_name(window):
            ours.add(window)
            print(f"map {window} {at:.6f}", flush=True)
            watch(window, at)
    elif window in ours and kind in (UNMAP, DESTROY):
        print(f"{'unmap' if kind == UNMAP else 'destroy'} {window} {at:.6f}", flush=True)
        if kind == DESTROY:
            ours.discard(window)
"#;
