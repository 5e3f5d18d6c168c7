//! Real Wayland desktops for the suite, headless: sway 1.7 (wlroots) and GNOME Shell 43
//! (mutter 43 and GNOME's own notification server). Nothing here is a stand-in.
//!
//! Each runs as an unprivileged user ([`USER`]; sway refuses to run as root) in its own
//! directory, inside its own session bus whose policy lets any user connect, so the app
//! under test (run as root, like the rest of the suite) reaches the compositor's Wayland
//! socket by its absolute path and GNOME's notification server on that bus.
//!
//! What a person sees and does is read and done through the desktop itself: on sway,
//! `swaymsg -t get_tree` (focus, floating), `wtype` (a real key press through the virtual
//! keyboard protocol) and `grim`; on GNOME, GNOME Shell 43 has no `Eval` and no unsafe
//! mode, so a test-only extension (tests/desktop/gnome-shell/, installed into the test
//! user's data directory) reports windows, focus and notifications and presses keys and
//! clicks through Clutter's virtual input devices, and the shell's own screenshot API takes pictures.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::{until_some, EVENT_TIMEOUT};

/// The unprivileged user the compositors run as (created on first use).
pub const USER: &str = "landstrip-desktop";

/// How long a compositor may take to start: GNOME Shell takes ~2 s here when quiet.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Which desktop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// sway 1.7, wlroots' headless backend and pixman renderer.
    Sway,
    /// GNOME Shell 43, `--headless --virtual-monitor`.
    Gnome,
}

/// How a desktop is started.
#[derive(Clone, Debug)]
pub struct Options {
    /// Which desktop.
    pub kind: Kind,
    /// The output's size in pixels.
    pub size: (u32, u32),
    /// The output's scale (sway only; GNOME's virtual monitor is at scale 1).
    pub scale: u32,
    /// GNOME: also enable Debian's AppIndicator extension (a StatusNotifierItem host).
    pub appindicator: bool,
    /// GNOME: the desktop's colour scheme is dark.
    pub dark: bool,
}

impl Options {
    /// sway at 1280×800, scale 1.
    pub fn sway() -> Self {
        Self {
            kind: Kind::Sway,
            size: (1280, 800),
            scale: 1,
            appindicator: false,
            dark: false,
        }
    }

    /// GNOME Shell with a 1280×800 virtual monitor, no extension but the test probe.
    pub fn gnome() -> Self {
        Self {
            kind: Kind::Gnome,
            ..Self::sway()
        }
    }
}

/// A running headless desktop; stopped (its whole process group) when dropped.
pub struct Desktop {
    /// How it was started.
    pub options: Options,
    dir: tempfile::TempDir,
    child: Child,
    /// `DBUS_SESSION_BUS_ADDRESS` of the desktop's session bus.
    pub bus: String,
    /// The compositor's Wayland socket (absolute, so any process can use it).
    pub wayland: PathBuf,
    /// sway's IPC socket.
    sway_ipc: Option<PathBuf>,
}

/// The uid and gid of [`USER`], created if missing.
fn user() -> (u32, u32) {
    let id = |flag: &str| {
        let out = Command::new("id").args([flag, USER]).output().ok()?;
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    if id("-u").is_none() {
        // Two test processes may race here: whichever loses finds the user made.
        let _ = Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                USER,
            ])
            .status();
    }
    match (id("-u"), id("-g")) {
        (Some(uid), Some(gid)) => (uid, gid),
        _ => panic!("cannot create the unprivileged user {USER} (the desktop tests run as root)"),
    }
}

/// A system bus with a logind on it, which GNOME Shell needs (its UI does not start
/// without): Debian's dbus-daemon in system mode and python3-dbusmock's logind template.
/// Started once per machine and left running; nothing else here uses them.
fn system_bus_with_logind() {
    let socket = Path::new("/run/dbus/system_bus_socket");
    let has_logind = || {
        Command::new("dbus-send")
            .args([
                "--system",
                "--print-reply",
                "--reply-timeout=5000",
                "--dest=org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus.NameHasOwner",
                "string:org.freedesktop.login1",
            ])
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("boolean true"))
    };
    if has_logind() {
        return;
    }
    if std::os::unix::net::UnixStream::connect(socket).is_err() {
        std::fs::create_dir_all("/run/dbus").expect("mkdir /run/dbus");
        let _ = std::fs::remove_file("/run/dbus/pid");
        let status = Command::new("dbus-daemon")
            .args(["--system", "--fork"])
            .status()
            .expect("start the system bus (dbus-daemon --system)");
        assert!(status.success(), "dbus-daemon --system: {status}");
    }
    // Its own session: it outlives this test process, as a machine's logind would.
    Command::new("setsid")
        .args([
            "--fork",
            "/usr/bin/python3",
            "-m",
            "dbusmock",
            "--system",
            "--template",
            "logind",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("start python3-dbusmock's logind on the system bus");
    let deadline = std::time::Instant::now() + START_TIMEOUT;
    while !has_logind() {
        assert!(
            std::time::Instant::now() < deadline,
            "no org.freedesktop.login1 on the system bus within {START_TIMEOUT:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

const BUS_CONFIG: &str = r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <include>/usr/share/dbus-1/session.conf</include>
  <!-- The app under test runs as root, the desktop as the test user. -->
  <policy context="default"><allow user="*"/></policy>
</busconfig>
"#;

/// The test probe's folder (tests/desktop/gnome-shell/UUID).
const PROBE_UUID: &str = "landstrip-test@landstrip.dev";
/// Debian's gnome-shell-extension-appindicator.
const APPINDICATOR_UUID: &str = "ubuntu-appindicators@ubuntu.com";

impl Desktop {
    /// Starts the desktop and waits (bounded) until it is up; panics with its log if it
    /// does not come up.
    pub async fn start(options: Options) -> Desktop {
        let (uid, gid) = user();
        if options.kind == Kind::Gnome {
            system_bus_with_logind();
        }
        let dir = tempfile::Builder::new()
            .prefix("desktop-")
            .tempdir()
            .expect("tempdir");
        let base = std::fs::canonicalize(dir.path()).expect("canonical tempdir");
        let home = base.join("home");
        let runtime = base.join("runtime");
        let share = home.join(".local/share");
        std::fs::create_dir_all(&share).expect("mkdir home");
        std::fs::create_dir_all(&runtime).expect("mkdir runtime");
        set_mode(&runtime, 0o700);
        std::fs::write(base.join("bus.conf"), BUS_CONFIG).expect("write bus.conf");
        let (inner, compositor) = match options.kind {
            Kind::Sway => {
                let (w, h) = options.size;
                std::fs::write(
                    base.join("sway.conf"),
                    format!(
                        "output HEADLESS-1 resolution {w}x{h} scale {}\nxwayland disable\n",
                        options.scale
                    ),
                )
                .expect("write sway.conf");
                (
                    String::new(),
                    format!(
                        "WLR_BACKENDS=headless WLR_LIBINPUT_NO_DEVICES=1 WLR_RENDERER=pixman \
                         exec sway -c {}",
                        base.join("sway.conf").display()
                    ),
                )
            }
            Kind::Gnome => {
                let extensions = share.join("gnome-shell/extensions");
                copy_dir(
                    &Path::new(env!("CARGO_MANIFEST_DIR"))
                        .join("desktop/gnome-shell")
                        .join(PROBE_UUID),
                    &extensions.join(PROBE_UUID),
                );
                // The app's desktop entry and icon where GNOME looks (the .deb puts them
                // in /usr/share): GNOME matches the windows' app id to it.
                install_desktop_entry(&share);
                let mut enabled = vec![format!("'{PROBE_UUID}'")];
                if options.appindicator {
                    enabled.push(format!("'{APPINDICATOR_UUID}'"));
                }
                let scheme = if options.dark {
                    "prefer-dark"
                } else {
                    "default"
                };
                let (w, h) = options.size;
                (
                    format!(
                        "gsettings set org.gnome.shell enabled-extensions \"[{}]\"\n\
                         gsettings set org.gnome.shell disable-user-extensions false\n\
                         gsettings set org.gnome.desktop.interface color-scheme {scheme}\n\
                         gsettings set org.gnome.desktop.notifications show-banners true\n",
                        enabled.join(", ")
                    ),
                    format!(
                        "exec gnome-shell --headless --wayland --no-x11 --virtual-monitor {w}x{h}"
                    ),
                )
            }
        };
        let script = format!(
            "set -e\n\
             echo \"$DBUS_SESSION_BUS_ADDRESS\" > {base}/bus.new && mv {base}/bus.new {base}/bus\n\
             {inner}{compositor}\n",
            base = base.display()
        );
        std::fs::write(base.join("session.sh"), script).expect("write session.sh");
        chown_tree(&base, uid, gid);
        set_mode(&base, 0o755);
        let log = std::fs::File::create(base.join("desktop.log")).expect("create the log");
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", USER, "--", "env", "-i"])
            .arg("PATH=/usr/local/bin:/usr/bin:/bin")
            .arg(format!("HOME={}", home.display()))
            .arg(format!("XDG_RUNTIME_DIR={}", runtime.display()))
            .arg(format!(
                "XDG_DATA_DIRS={}:/usr/local/share:/usr/share",
                share.display()
            ))
            .arg("dbus-run-session")
            .arg(format!("--config-file={}", base.join("bus.conf").display()))
            .args(["--", "bash"])
            .arg(base.join("session.sh"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone the log"))
            .stderr(log);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd.spawn().expect("start the desktop (runuser)");
        let mut desktop = Desktop {
            options,
            dir,
            child,
            bus: String::new(),
            wayland: PathBuf::new(),
            sway_ipc: None,
        };
        desktop.wait_until_up(&runtime).await;
        desktop
    }

    fn base(&self) -> &Path {
        self.dir.path()
    }

    /// The desktop's log (the compositor's and its bus's output).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.base().join("desktop.log")).unwrap_or_default()
    }

    async fn wait_until_up(&mut self, runtime: &Path) {
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "the {:?} desktop exited ({status}) while starting; its log:\n{}",
                    self.options.kind,
                    self.log()
                );
            }
            if tokio::time::Instant::now() > deadline {
                panic!(
                    "the {:?} desktop did not come up within {START_TIMEOUT:?}; its log:\n{}",
                    self.options.kind,
                    self.log()
                );
            }
            if self.ready(runtime).await {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn ready(&mut self, runtime: &Path) -> bool {
        if self.bus.is_empty() {
            match std::fs::read_to_string(self.base().join("bus")) {
                Ok(bus) if !bus.trim().is_empty() => self.bus = bus.trim().to_owned(),
                _ => return false,
            }
        }
        let Some(socket) = find(runtime, |n| {
            n.starts_with("wayland-") && !n.ends_with(".lock")
        }) else {
            return false;
        };
        self.wayland = socket;
        match self.options.kind {
            Kind::Sway => {
                self.sway_ipc = find(runtime, |n| n.starts_with("sway-ipc."));
                self.sway_ipc.is_some() && self.swaymsg(&["-t", "get_outputs"]).await.is_ok()
            }
            // The shell's UI is up once its extensions are: the probe answers. GNOME starts
            // in the Overview; a person leaves it to work.
            Kind::Gnome => match self.probe_call::<String>("Windows", &()).await {
                Ok(json) if json.contains("\"startingUp\":true") => false,
                Ok(json) if json.contains("\"inOverview\":false") => true,
                Ok(_) => {
                    let _ = self.probe_call::<()>("HideOverview", &()).await;
                    false
                }
                Err(_) => false,
            },
        }
    }

    /// The environment the app needs to run on this desktop (and nothing of X11's).
    pub fn app_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("GDK_BACKEND", "wayland".to_owned()),
            ("WAYLAND_DISPLAY", self.wayland.display().to_string()),
            ("DBUS_SESSION_BUS_ADDRESS", self.bus.clone()),
        ]
    }

    /// Starts another application's window ("An editor", a GTK text view through
    /// python3-gi) and waits until it is on screen and focused, as where a person works.
    pub async fn start_editor(&self) -> Editor {
        let mut cmd = Command::new("/usr/bin/python3");
        cmd.arg("-c").arg(EDITOR);
        for (k, v) in self.app_env() {
            cmd.env(k, v);
        }
        cmd.env_remove("DISPLAY")
            .env("XDG_RUNTIME_DIR", self.base().join("runtime"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = Editor(cmd.spawn().expect("start the editor window"));
        self.focused_window(EDITOR_TITLE).await;
        child
    }

    /// The windows on screen.
    pub async fn windows(&self) -> Vec<Window> {
        match self.options.kind {
            Kind::Sway => {
                let tree = self
                    .swaymsg(&["-t", "get_tree"])
                    .await
                    .expect("swaymsg get_tree");
                let tree: Value = serde_json::from_str(&tree).expect("sway's tree is JSON");
                let mut out = Vec::new();
                sway_windows(&tree, false, &mut out);
                out
            }
            Kind::Gnome => {
                let json: String = self.probe_call("Windows", &()).await.expect("probe");
                let all: Value = serde_json::from_str(&json).expect("probe JSON");
                all["windows"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|w| Window {
                        title: w["title"].as_str().unwrap_or_default().to_owned(),
                        app_id: w["wmClass"].as_str().map(str::to_owned),
                        focused: w["focused"].as_bool().unwrap_or(false),
                        floating: w["above"].as_bool().unwrap_or(false),
                        rect: rect(&w["rect"]),
                        desktop_app: w["app"].as_str().map(str::to_owned),
                        app_name: w["appName"].as_str().map(str::to_owned),
                    })
                    .collect()
            }
        }
    }

    /// Waits (bounded) until the window titled `title` has the focus; returns it.
    pub async fn focused_window(&self, title: &str) -> Window {
        let deadline = tokio::time::Instant::now() + EVENT_TIMEOUT;
        loop {
            let windows = self.windows().await;
            if let Some(w) = windows.iter().find(|w| w.focused && w.title == title) {
                return w.clone();
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{title:?} has not had the focus within {EVENT_TIMEOUT:?}; the windows: {windows:#?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Presses `key` until the held program `child` ends (a press the dialog's input delay
    /// swallows answers nothing), bounded; returns how many presses it took.
    pub async fn press_until_done(&self, key: &str, child: &mut tokio::process::Child) -> usize {
        for presses in 1..=40 {
            self.key(key).await;
            let waited = tokio::time::timeout(Duration::from_millis(500), child.wait()).await;
            if let Ok(Ok(_)) = waited {
                return presses;
            }
        }
        panic!("40 presses of {key:?} over 20 s did not answer the prompt");
    }

    /// Waits until `window` is drawn ([`Desktop::screenshot_drawn`]), the pictures kept
    /// under docs/ as `name` when `LANDSTRIP_TRAY_SCREENSHOTS` is set (the committed ones),
    /// else thrown away; checks the picture has the output's size in pixels.
    pub async fn keep_screenshot(&self, name: &str, window: &Window) {
        let scratch = tempfile::tempdir().expect("tempdir");
        let dir = match std::env::var_os("LANDSTRIP_TRAY_SCREENSHOTS") {
            Some(_) => crate::screenshot_dir(),
            None => scratch.path().to_owned(),
        };
        let size = self.screenshot_drawn(&dir.join(name), window).await;
        assert_eq!(size, self.options.size, "{name}");
    }

    /// The focused window, if any.
    pub async fn focused(&self) -> Option<Window> {
        self.windows().await.into_iter().find(|w| w.focused)
    }

    /// A real key press and release of `key` (an X keysym name such as "o", "Escape"),
    /// delivered to the focused window.
    pub async fn key(&self, key: &str) {
        match self.options.kind {
            Kind::Sway => {
                let mut wtype = tokio::process::Command::new("wtype");
                wtype
                    .args(["-k", key])
                    .env("WAYLAND_DISPLAY", &self.wayland)
                    .env("XDG_RUNTIME_DIR", self.base().join("runtime"));
                let done = bounded(wtype, "wtype").await;
                assert!(done.status.success(), "wtype -k {key}: {done:?}");
            }
            Kind::Gnome => {
                let keyval = keysym(key);
                self.probe_call::<()>("Key", &(keyval,))
                    .await
                    .expect("probe Key");
            }
        }
    }

    /// A screenshot of the whole output, as a PNG at `out`; returns its size in pixels.
    pub async fn screenshot(&self, out: &Path) -> (u32, u32) {
        match self.options.kind {
            Kind::Sway => {
                let mut grim = tokio::process::Command::new("grim");
                grim.arg(out)
                    .env("WAYLAND_DISPLAY", &self.wayland)
                    .env("XDG_RUNTIME_DIR", self.base().join("runtime"));
                let done = bounded(grim, "grim").await;
                assert!(done.status.success(), "grim: {done:?}");
            }
            Kind::Gnome => {
                // The shell writes the file itself (as the desktop's user, into its
                // directory): `gnome-screenshot` hangs here, so the probe asks the shell's
                // own screenshot API, the one gnome-screenshot uses.
                let shot = self.base().join("shot.png");
                let _ = std::fs::remove_file(&shot);
                self.probe_call::<()>("Screenshot", &(shot.display().to_string(),))
                    .await
                    .expect("probe Screenshot");
                std::fs::copy(&shot, out).expect("copy the screenshot");
            }
        }
        crate::png_size(out)
    }

    /// Takes screenshots into `out` until `window` is drawn — more than a few colours inside
    /// the left of its frame (a mapped WebKit window is one flat colour until its first paint) — and
    /// returns the picture's size; panics if it is not drawn within [`EVENT_TIMEOUT`].
    pub async fn screenshot_drawn(&self, out: &Path, window: &Window) -> (u32, u32) {
        let deadline = tokio::time::Instant::now() + EVENT_TIMEOUT;
        loop {
            let size = self.screenshot(out).await;
            let colours = colours_inside(out, window.rect, self.options.scale);
            if colours > 8 {
                return size;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{:?} not drawn within {EVENT_TIMEOUT:?} ({colours} colours): {window:?}",
                window.title
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn swaymsg(&self, args: &[&str]) -> Result<String, String> {
        let ipc = self.sway_ipc.as_ref().ok_or("no sway IPC socket")?;
        let mut swaymsg = tokio::process::Command::new("swaymsg");
        swaymsg.arg("-s").arg(ipc).arg("-r").args(args);
        let out = bounded(swaymsg, "swaymsg").await;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// Calls the GNOME probe's method `name`.
    pub async fn probe_call<R>(
        &self,
        name: &str,
        args: &(impl serde::Serialize + zbus::zvariant::DynamicType),
    ) -> zbus::Result<R>
    where
        R: for<'d> zbus::zvariant::DynamicDeserialize<'d>,
    {
        let conn = zbus::connection::Builder::address(self.bus.as_str())
            .build()
            .await?;
        let reply = conn
            .call_method(
                Some("org.landstrip.TestShell"),
                "/org/landstrip/TestShell",
                Some("org.landstrip.TestShell"),
                name,
                args,
            )
            .await?;
        reply.body().deserialize()
    }

    /// GNOME: the notifications the shell holds (its message tray), as the probe reports
    /// them: `source`, `app`, `title`, `body`, `actions` (button labels), `urgency`,
    /// `soundName`.
    pub async fn notifications(&self) -> Vec<Value> {
        let json: String = self
            .probe_call("Notifications", &())
            .await
            .expect("probe Notifications");
        serde_json::from_str::<Value>(&json)
            .expect("probe JSON")
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// GNOME: clicks (a real pointer click) the button labelled `label` on the banner on
    /// screen showing the notification titled `title`, or the banner itself for ""; false
    /// if there is no such banner or button yet (another notification's banner on screen
    /// is closed: ask again).
    pub async fn click_banner(&self, title: &str, label: &str) -> bool {
        self.probe_call("ClickBanner", &(title, label))
            .await
            .expect("probe ClickBanner")
    }

    /// GNOME: waits until the banner on screen shows the notification titled `title`,
    /// closing the banners of others (GNOME's own "Screen Lock disabled" at start) as a
    /// person would.
    pub async fn banner_of(&self, title: &str) {
        until_some(&format!("the banner of {title:?} is on screen"), || async {
            let banner: String = self.probe_call("Banner", &()).await.ok()?;
            let banner: Value = serde_json::from_str(&banner).ok()?;
            match banner["title"].as_str() {
                Some(shown) if shown == title => Some(()),
                Some(other) => {
                    self.dismiss(other).await;
                    None
                }
                None => None,
            }
        })
        .await;
    }

    /// GNOME: brings a window forward as a person's click on it would.
    pub async fn activate_window(&self, title: &str) {
        let found: bool = self
            .probe_call("ActivateWindow", &(title,))
            .await
            .expect("probe ActivateWindow");
        assert!(found, "no window titled {title:?}");
    }

    /// GNOME: closes the first notification whose title holds `title`, as a person's
    /// dismissal does.
    pub async fn dismiss(&self, title: &str) -> bool {
        self.probe_call("Dismiss", &(title,))
            .await
            .expect("probe Dismiss")
    }
}

impl Drop for Desktop {
    fn drop(&mut self) {
        let pgid = self.child.id();
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{pgid}")])
            .status();
        let _ = self.child.wait();
        // dbus-run-session's bus and what it activated were in the group; what a service
        // started in a session of its own (none is expected) is found by its directory.
        let _ = Command::new("pkill")
            .args(["-KILL", "-u", USER, "-f"])
            .arg(self.base().display().to_string())
            .status();
    }
}

/// Another application's window ([`Desktop::start_editor`]); closed when dropped.
pub struct Editor(Child);

impl Drop for Editor {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A window as the desktop reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    /// Its title.
    pub title: String,
    /// Its Wayland app id (xdg_toplevel's `app_id`).
    pub app_id: Option<String>,
    /// Whether it has keyboard focus.
    pub focused: bool,
    /// sway: a floating window; GNOME: kept above others.
    pub floating: bool,
    /// Its frame in the desktop's logical coordinates: x, y, width, height.
    pub rect: (i64, i64, i64, i64),
    /// GNOME: the desktop entry GNOME matched it to ("window:N" when none).
    pub desktop_app: Option<String>,
    /// GNOME: the application name GNOME shows for it.
    pub app_name: Option<String>,
}

/// Runs a helper program to its end, bounded by [`EVENT_TIMEOUT`] (killed after it).
async fn bounded(mut cmd: tokio::process::Command, what: &str) -> std::process::Output {
    cmd.kill_on_drop(true).stdin(Stdio::null());
    tokio::time::timeout(EVENT_TIMEOUT, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {EVENT_TIMEOUT:?}"))
        .unwrap_or_else(|e| panic!("run {what}: {e}"))
}

/// How many distinct colours a PNG screenshot has inside the left third of `rect` (logical,
/// times `scale`), less its title bar and borders: GNOME's banners come down over the
/// middle of the screen, never over a window's left edge there.
fn colours_inside(png: &Path, rect: (i64, i64, i64, i64), scale: u32) -> usize {
    let file = std::fs::File::open(png).expect("open the screenshot");
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("buffer size")];
    let info = reader.next_frame(&mut buf).expect("decode the PNG");
    let channels = info.color_type.samples();
    let s = i64::from(scale);
    let (x, y, w, h) = (rect.0 * s, rect.1 * s, rect.2 * s, rect.3 * s);
    let width = i64::from(info.width);
    let height = i64::from(info.height);
    let mut seen = std::collections::HashSet::new();
    for row in (y + 40 * s).max(0)..(y + h - 8 * s).min(height) {
        for col in (x + 8 * s).max(0)..(x + w / 3).min(width) {
            let at = usize::try_from((row * width + col) * channels as i64).unwrap_or(0);
            seen.insert(buf[at..at + channels.min(3)].to_vec());
        }
    }
    seen.len()
}

fn rect(v: &Value) -> (i64, i64, i64, i64) {
    let n = |i: usize| v[i].as_i64().unwrap_or_default();
    (n(0), n(1), n(2), n(3))
}

fn sway_windows(node: &Value, floating: bool, out: &mut Vec<Window>) {
    if node["pid"].is_number() && node["type"] != "workspace" {
        let r = &node["rect"];
        out.push(Window {
            title: node["name"].as_str().unwrap_or_default().to_owned(),
            app_id: node["app_id"].as_str().map(str::to_owned),
            focused: node["focused"].as_bool().unwrap_or(false),
            floating,
            rect: (
                r["x"].as_i64().unwrap_or_default(),
                r["y"].as_i64().unwrap_or_default(),
                r["width"].as_i64().unwrap_or_default(),
                r["height"].as_i64().unwrap_or_default(),
            ),
            desktop_app: None,
            app_name: None,
        });
    }
    for child in node["nodes"].as_array().into_iter().flatten() {
        sway_windows(child, floating, out);
    }
    for child in node["floating_nodes"].as_array().into_iter().flatten() {
        sway_windows(child, true, out);
    }
}

/// The keysyms the tests press (X11's values, which Clutter's virtual keyboard takes).
fn keysym(name: &str) -> u32 {
    match name {
        "Escape" => 0xff1b,
        "Return" => 0xff0d,
        "Tab" => 0xff09,
        one if one.len() == 1 => u32::from(one.as_bytes()[0]),
        other => panic!("no keysym for {other:?} in the desktop harness"),
    }
}

/// The prompt dialog's title.
pub const DIALOG_TITLE: &str = "landstrip-tray — a sandboxed program is asking";
/// The settings window's title.
pub const SETTINGS_TITLE: &str = "landstrip-tray settings";

/// The window titled `title` among `windows`.
pub fn find_window<'a>(windows: &'a [Window], title: &str) -> Option<&'a Window> {
    windows.iter().find(|w| w.title == title)
}

/// The title of [`Desktop::start_editor`]'s window.
pub const EDITOR_TITLE: &str = "An editor";

const EDITOR: &str = r#"
import gi
gi.require_version('Gtk', '3.0')
from gi.repository import Gtk, GLib
GLib.set_prgname('an-editor')
w = Gtk.Window(title='An editor')
w.set_default_size(900, 600)
w.add(Gtk.TextView())
w.connect('destroy', Gtk.main_quit)
w.show_all()
Gtk.main()
"#;

fn find(dir: &Path, wanted: impl Fn(&str) -> bool) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_str().is_some_and(&wanted))
        .map(|e| e.path())
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

fn chown_tree(path: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(gid)).expect("chown");
    if path.is_dir() {
        for entry in std::fs::read_dir(path).expect("read_dir") {
            chown_tree(&entry.expect("entry").path(), uid, gid);
        }
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
    }
}

/// packaging/'s desktop entry (its template filled in as the .deb's is, but for `Exec`: the
/// binary under test, as GNOME hides an entry whose program is not found) and the app's
/// icon under `share`.
fn install_desktop_entry(share: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let template = std::fs::read_to_string(root.join("packaging/landstrip-tray.desktop"))
        .expect("read packaging/landstrip-tray.desktop");
    let entry = template
        .replace(
            "{{comment}}",
            "Approve or deny what sandboxed commands try to do",
        )
        .replace(
            "{{exec}}",
            &crate::real_app::app_binary().display().to_string(),
        )
        .replace("{{icon}}", "landstrip-tray");
    let apps = share.join("applications");
    std::fs::create_dir_all(&apps).expect("mkdir applications");
    std::fs::write(apps.join("landstrip-tray.desktop"), entry).expect("write the entry");
    let icons = share.join("icons/hicolor/scalable/apps");
    std::fs::create_dir_all(&icons).expect("mkdir icons");
    std::fs::copy(
        root.join("icons/landstrip-tray.svg"),
        icons.join("landstrip-tray.svg"),
    )
    .expect("copy the icon");
}
