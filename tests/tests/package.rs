//! The Debian package, installed for real: `scripts/package.sh` builds the release binary
//! and bundles it with the real Tauri bundler, exactly as the README tells people to make
//! the package they install (or `$LANDSTRIP_TRAY_DEB` names a package built already);
//! `apt-get install ./….deb` installs it into this machine, resolving its `Depends`, and
//! every shared library the installed binaries load is checked to come from a package its
//! `Depends` pulls in. The installed `/usr/bin/landstrip-tray` answers `--version`, serves
//! a project whose real landstrip 0.19.2 write is answered through it, and switches its
//! start-at-login entry on and off; the installed desktop entry passes Debian's
//! `desktop-file-validate` and every hicolor icon is there at its size; `dpkg -r` then
//! removes it all. Nothing is mocked.
//!
//! It installs into the machine, so it needs root (CI runs as root); as anyone else it
//! fails, saying so. A package that was installed before the test is left alone (the test
//! fails instead of replacing it).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use landstrip_tray_core::app_settings::autostart::exec_program;
use landstrip_tray_tests::desktop_file_validate;
use landstrip_tray_tests::finish;
use landstrip_tray_tests::png_size;
use landstrip_tray_tests::real_app::{path_str, AppWorld};

/// The package's name, as the bundler derives it from the product name.
const PACKAGE: &str = "landstrip-tray";
/// Where the package puts the binary.
const INSTALLED: &str = "/usr/bin/landstrip-tray";
/// The installed desktop entry.
const DESKTOP_ENTRY: &str = "/usr/share/applications/landstrip-tray.desktop";
/// The hicolor sizes a desktop looks icons up in; each must be installed.
const ICON_SIZES: &[u32] = &[16, 22, 24, 32, 48, 64, 128, 256, 512];
/// Bound on scripts/package.sh: a cold release build, then the bundling.
const PACKAGE_TIMEOUT: Duration = Duration::from_secs(1800);

/// The library the tray loads at run time (`dlopen`, so it is no `NEEDED` entry): the
/// package must depend on it by name.
const TRAY_LIBRARY_PACKAGE: &str = "libayatana-appindicator3-1";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `cmd` to its end; panics naming it if it cannot start.
fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

fn said(out: &Output) -> String {
    format!(
        "{:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn package_installed() -> bool {
    let out = run(Command::new("dpkg-query").args(["-W", "-f=${Status}", PACKAGE]));
    String::from_utf8_lossy(&out.stdout).contains("install ok installed")
}

/// The package under test: `$LANDSTRIP_TRAY_DEB`, else `scripts/package.sh`'s (its last
/// line is the path): the release build the README has people install.
async fn the_package() -> PathBuf {
    if let Some(deb) = std::env::var_os("LANDSTRIP_TRAY_DEB").filter(|d| !d.is_empty()) {
        let deb = PathBuf::from(deb);
        assert!(
            deb.is_file(),
            "LANDSTRIP_TRAY_DEB={}: no such file",
            deb.display()
        );
        return deb;
    }
    let run = tokio::process::Command::new(workspace().join("scripts/package.sh"))
        .current_dir(workspace())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(PACKAGE_TIMEOUT, run)
        .await
        .unwrap_or_else(|_| panic!("scripts/package.sh did not finish within {PACKAGE_TIMEOUT:?}"))
        .expect("run scripts/package.sh");
    assert!(out.status.success(), "scripts/package.sh: {}", said(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let deb = PathBuf::from(stdout.lines().last().unwrap_or_default());
    assert!(
        deb.is_absolute() && deb.extension().is_some_and(|e| e == "deb") && deb.is_file(),
        "the last line of scripts/package.sh is not the .deb's absolute path: {}",
        said(&out)
    );
    assert!(
        deb.components().any(|c| c.as_os_str() == "release"),
        "scripts/package.sh made {}, not the release bundle",
        deb.display()
    );
    eprintln!("package: {}", deb.display());
    deb
}

/// The names in a `Depends` field (alternatives included, versions dropped).
fn depends_names(field: &str) -> Vec<String> {
    field
        .split([',', '|'])
        .filter_map(|d| d.split_whitespace().next())
        .map(|d| d.split(':').next().unwrap_or(d).to_owned())
        .filter(|d| !d.is_empty())
        .collect()
}

/// Every package `names` pull in, themselves included (`apt-cache depends --recurse`,
/// hard dependencies only).
fn depends_closure(names: &[String]) -> std::collections::BTreeSet<String> {
    let out = run(Command::new("apt-cache")
        .args([
            "depends",
            "--recurse",
            "--no-recommends",
            "--no-suggests",
            "--no-conflicts",
            "--no-breaks",
            "--no-replaces",
            "--no-enhances",
        ])
        .args(names));
    assert!(out.status.success(), "apt-cache depends: {}", said(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let name = l
                .strip_prefix("Depends:")
                .or_else(|| l.strip_prefix("PreDepends:"))
                .or_else(|| l.strip_prefix("|Depends:"))
                .or_else(|| l.strip_prefix("|PreDepends:"))
                .unwrap_or(l)
                .trim();
            let name = name.trim_start_matches('<').trim_end_matches('>');
            let name = name.split(':').next()?.trim();
            (!name.is_empty() && !name.contains(' ')).then(|| name.to_owned())
        })
        .collect()
}

/// The package that owns each shared library `binary` names as `NEEDED`, resolved the way
/// the dynamic loader finds them (`ldconfig -p`), as `(soname, package)`.
fn needed_packages(binary: &str) -> Vec<(String, String)> {
    let readelf = run(Command::new("readelf").args(["-d", binary]));
    assert!(
        readelf.status.success(),
        "readelf -d {binary}: {}",
        said(&readelf)
    );
    let cache = run(Command::new("ldconfig").arg("-p"));
    let cache = String::from_utf8_lossy(&cache.stdout).into_owned();
    String::from_utf8_lossy(&readelf.stdout)
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| Some(l.split('[').nth(1)?.trim_end_matches(']').to_owned()))
        .map(|soname| {
            let path = cache
                .lines()
                .filter(|l| l.trim_start().starts_with(&format!("{soname} ")))
                .find(|l| l.contains("x86-64") || !l.contains("("))
                .and_then(|l| l.rsplit("=> ").next())
                .map(|p| p.trim().to_owned())
                .unwrap_or_else(|| panic!("{binary} needs {soname}, which the loader cannot find"));
            // dpkg knows the path a package shipped, which /lib (merged into /usr/lib on
            // Debian 12) may hide: ask for the real file.
            let real = std::fs::canonicalize(&path).unwrap_or_else(|_| PathBuf::from(&path));
            let owner = [
                PathBuf::from(&path),
                real.clone(),
                Path::new("/usr").join(real.strip_prefix("/").unwrap_or(&real)),
            ]
            .iter()
            .find_map(|p| {
                let out = run(Command::new("dpkg").arg("-S").arg(p));
                out.status.success().then(|| {
                    String::from_utf8_lossy(&out.stdout)
                        .lines()
                        .next()
                        .and_then(|l| l.split(':').next())
                        .unwrap_or_default()
                        .trim()
                        .to_owned()
                })
            })
            .unwrap_or_else(|| panic!("no package owns {path} ({soname}, needed by {binary})"));
            (soname, owner)
        })
        .collect()
}

/// Removes the package at the end of the test, however it ends.
struct Installed;

impl Installed {
    fn remove(&self) -> Output {
        run(Command::new("dpkg").args(["-r", PACKAGE]))
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        if package_installed() {
            let out = self.remove();
            if !out.status.success() {
                eprintln!("dpkg -r {PACKAGE} while cleaning up: {}", said(&out));
            }
        }
    }
}

/// The value of `key` in a desktop entry's main group.
fn entry_key(text: &str, key: &str) -> Option<String> {
    text.lines()
        .skip_while(|l| l.trim() != "[Desktop Entry]")
        .skip(1)
        .take_while(|l| !l.starts_with('['))
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
        .map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deb_installs_runs_a_real_query_switches_autostart_and_is_removed() {
    assert_eq!(
        landstrip_tray_core::uid(),
        0,
        "the package test installs into this machine with apt-get, which needs root: run \
         it as root (CI does); as another user it cannot test anything"
    );
    assert!(
        !package_installed(),
        "{PACKAGE} is installed on this machine already; the test installs and removes its \
         own, so it leaves yours alone: `dpkg -r {PACKAGE}` first"
    );
    let deb = the_package().await;
    let fields = run(Command::new("dpkg-deb")
        .args(["-f"])
        .arg(&deb)
        .args(["Package", "Version"]));
    assert_eq!(
        String::from_utf8_lossy(&fields.stdout),
        format!(
            "Package: {PACKAGE}\nVersion: {}\n",
            env!("CARGO_PKG_VERSION")
        ),
        "{}",
        said(&fields)
    );

    let depends = run(Command::new("dpkg-deb")
        .args(["-f"])
        .arg(&deb)
        .arg("Depends"));
    let depends = String::from_utf8_lossy(&depends.stdout).into_owned();
    let named = depends_names(depends.trim().trim_start_matches("Depends:"));
    assert!(
        named.iter().any(|d| d == TRAY_LIBRARY_PACKAGE),
        "the package does not depend on {TRAY_LIBRARY_PACKAGE}, which the tray loads: Depends: {depends}"
    );
    let closure = depends_closure(&named);
    // Remote machines (`ctl remote add`) run the system's `ssh`: recommended, as a desktop
    // without it still approves its own requests.
    let recommends = run(Command::new("dpkg-deb")
        .args(["-f"])
        .arg(&deb)
        .arg("Recommends"));
    let recommends = String::from_utf8_lossy(&recommends.stdout).into_owned();
    assert!(
        depends_names(recommends.trim().trim_start_matches("Recommends:"))
            .iter()
            .any(|d| d == "openssh-client"),
        "the package does not recommend openssh-client: {recommends}"
    );

    // As the README installs it: apt resolves and installs what Depends names.
    let installed = Installed;
    let out = run(Command::new("apt-get")
        .args(["install", "-y", "-q", "--no-install-recommends"])
        .arg(deb.canonicalize().expect("the .deb's path"))
        .env("DEBIAN_FRONTEND", "noninteractive"));
    assert!(
        out.status.success(),
        "apt-get install {}: {}",
        deb.display(),
        said(&out)
    );
    assert!(
        package_installed(),
        "dpkg -i succeeded but {PACKAGE} is not installed"
    );

    let version = run(Command::new(INSTALLED).arg("--version"));
    assert!(
        version.status.success(),
        "{INSTALLED} --version: {}",
        said(&version)
    );
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("landstrip-tray {}", env!("CARGO_PKG_VERSION"))
    );

    // Every library the installed binaries load comes from a package that Depends pulls
    // in: on a machine without this one's -dev packages, apt installs all of them.
    for binary in [INSTALLED, "/usr/bin/landstrip-tray-headless"] {
        let needed = needed_packages(binary);
        assert!(!needed.is_empty(), "{binary} names no shared library");
        let missing: Vec<_> = needed
            .iter()
            .filter(|(_, package)| !closure.contains(package))
            .collect();
        assert!(
            missing.is_empty(),
            "{binary} loads libraries from packages the .deb's Depends ({}) does not pull in: {missing:?}",
            depends.trim()
        );
        eprintln!(
            "{binary}: {} libraries, each from a package Depends pulls in",
            needed.len()
        );
    }

    // The desktop entry: valid, starting the installed program, with the package's icon.
    desktop_file_validate(Path::new(DESKTOP_ENTRY));
    let entry = std::fs::read_to_string(DESKTOP_ENTRY).expect("the desktop entry is installed");
    let exec = entry_key(&entry, "Exec").expect("Exec");
    assert!(
        exec == PACKAGE || exec == INSTALLED,
        "Exec={exec} does not start {INSTALLED}"
    );
    assert_eq!(entry_key(&entry, "Icon").as_deref(), Some(PACKAGE));
    for size in ICON_SIZES {
        let icon = PathBuf::from(format!(
            "/usr/share/icons/hicolor/{size}x{size}/apps/{PACKAGE}.png"
        ));
        assert_eq!(png_size(&icon), (*size, *size), "{}", icon.display());
    }
    let svg = std::fs::read_to_string(format!(
        "/usr/share/icons/hicolor/scalable/apps/{PACKAGE}.svg"
    ))
    .expect("the scalable icon is installed");
    assert!(svg.starts_with("<svg "), "{svg}");
    // The headless mode's systemd user unit, as packaging/ has it (tests/tests/headless.rs
    // runs its ExecStart).
    let unit = std::fs::read("/usr/lib/systemd/user/landstrip-tray-headless.service")
        .expect("the headless user unit is installed");
    let ours = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/landstrip-tray-headless.service"),
    )
    .expect("read packaging/landstrip-tray-headless.service");
    assert_eq!(unit, ours);
    // What the unit's `--headless` runs (exec): installed beside the app, and linked
    // without GTK or WebKit (tests/tests/headless.rs checks a start of it).
    let readelf = std::process::Command::new("readelf")
        .args(["-d", "/usr/bin/landstrip-tray-headless"])
        .output()
        .expect("run readelf on the installed headless binary");
    let dynamic = String::from_utf8_lossy(&readelf.stdout);
    assert!(
        readelf.status.success() && dynamic.contains("NEEDED"),
        "{readelf:?}"
    );
    assert!(
        !dynamic.contains("libgtk") && !dynamic.contains("libwebkit"),
        "{dynamic}"
    );

    // The installed binary as the app: a real landstrip run's write outside the project is
    // held, answered once through `ctl` (the installed one), and goes through.
    let mut world = AppWorld::new();
    world.use_binary(INSTALLED);
    let mut app = world.start(&[&world.project]);
    app.wait_for_control().await;
    let port = app.serving(&world, &world.project).await;
    let target = world.outside.join("through-the-package.txt");
    let child = world.write(port, &target);
    let answered = world.answer_once(1).await;
    assert_eq!(answered, [path_str(&target)]);
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}\n{}", app.log());
    assert_eq!(std::fs::read_to_string(&target).expect("written"), "hello");

    // Start at login, switched by the installed `ctl`: the entry starts /usr/bin/landstrip-tray.
    let autostart = world.base.join("config/autostart/landstrip-tray.desktop");
    let on = world.ctl_ok(&["config", "set", "autostart", "true"]).await;
    assert_eq!(
        on,
        format!("start at login: on: wrote {}\n", autostart.display())
    );
    desktop_file_validate(&autostart);
    let text = std::fs::read_to_string(&autostart).expect("the autostart entry");
    let exec = entry_key(&text, "Exec").expect("Exec");
    assert_eq!(exec_program(&exec).as_deref(), Some(INSTALLED), "{text}");
    let shown = world.ctl_ok(&["config"]).await;
    assert!(
        shown
            .lines()
            .any(|l| l.split_whitespace().eq(["autostart", "true"])),
        "{shown}"
    );
    let off = world.ctl_ok(&["config", "set", "autostart", "false"]).await;
    assert_eq!(
        off,
        format!("start at login: off: removed {}\n", autostart.display())
    );
    assert!(!autostart.exists(), "off left {}", autostart.display());
    app.quit().await;

    let out = installed.remove();
    assert!(out.status.success(), "dpkg -r {PACKAGE}: {}", said(&out));
    assert!(
        !package_installed(),
        "{PACKAGE} is still installed after dpkg -r"
    );
    for gone in [
        INSTALLED,
        DESKTOP_ENTRY,
        "/usr/share/icons/hicolor/512x512/apps/landstrip-tray.png",
    ] {
        assert!(
            !Path::new(gone).exists(),
            "{gone} is still there after dpkg -r"
        );
    }
}
