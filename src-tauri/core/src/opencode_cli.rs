//! The opencode installed on `PATH` (`opencode --version`, bounded) and how to connect the
//! opencode-landstrip plugin to it. opencode 1.x and 2 add the plugin differently: 1.x
//! with `opencode plugin NAME@VERSION` into the config key `plugin`, 2 with
//! `opencode plugin install NAME` into `plugins`. The instructions matching the installed
//! opencode lead; when it is unknown (not installed, no version said) both are shown, 1.x
//! first: it is the one the npm registry serves to everyone who installs opencode today
//! (1.18.33), and the plugin release for it (0.19.1) the only one that runs on it.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde::Serialize;

/// How long `opencode --version` may take: it only prints its version, but it is a
/// bundled JavaScript runtime started cold (1.18.33 took 1.2 s on a busy two-core machine
/// here). Past this the version counts as unknown, and both set-ups are shown.
pub const VERSION_TIMEOUT: Duration = Duration::from_secs(5);

/// An opencode generation whose plugin set-up differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Generation {
    /// opencode 1.x.
    V1,
    /// opencode 2.
    V2,
}

/// How to connect the plugin to one generation of opencode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Connect {
    /// Which opencode.
    pub generation: Generation,
    /// Its name as said: `opencode 1.x`.
    pub label: &'static str,
    /// The command that installs the plugin.
    pub command: &'static str,
    /// The key of opencode's config (`opencode.json`) that lists plugins.
    pub config_key: &'static str,
    /// That key's entry, as written by hand instead of the command.
    pub config: &'static str,
}

/// opencode 1.x: the plugin release that runs on it (0.19.1).
pub const CONNECT_V1: Connect = Connect {
    generation: Generation::V1,
    label: "opencode 1.x",
    command: "opencode plugin opencode-landstrip@0.19.1",
    config_key: "plugin",
    config: r#""plugin": ["opencode-landstrip@0.19.1"]"#,
};

/// opencode 2: the plugin's latest release (0.19.9 needs opencode 2.0.18 or later).
pub const CONNECT_V2: Connect = Connect {
    generation: Generation::V2,
    label: "opencode 2",
    command: "opencode plugin install opencode-landstrip",
    config_key: "plugins",
    config: r#""plugins": ["opencode-landstrip"]"#,
};

/// The opencode found on `PATH`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum Installed {
    /// It said its version.
    #[serde(rename_all = "camelCase")]
    Found {
        /// The binary run.
        binary: PathBuf,
        /// What it said: `1.18.33`.
        version: String,
        /// Its major version.
        major: u64,
    },
    /// It is there, but said no version (it failed, timed out or printed none).
    #[serde(rename_all = "camelCase")]
    Unknown {
        /// The binary run.
        binary: PathBuf,
        /// Why no version.
        message: String,
    },
    /// No `opencode` on `PATH`.
    Missing,
}

impl Installed {
    /// The generation, when the version says one.
    pub fn generation(&self) -> Option<Generation> {
        match self {
            Self::Found { major: 1, .. } => Some(Generation::V1),
            Self::Found { major, .. } if *major >= 2 => Some(Generation::V2),
            _ => None,
        }
    }

    /// The set-ups as one hint (`ctl add-project` says it): the installed opencode's
    /// first.
    pub fn connect_hint(&self) -> String {
        let [lead, other] = self.connect();
        let found = match self {
            Self::Found { version, .. } => format!(" (opencode {version} found)"),
            Self::Unknown { .. } | Self::Missing => String::new(),
        };
        format!(
            "connect opencode to it{found}: {}\n  for {} instead: {}\n",
            lead.command, other.label, other.command
        )
    }

    /// Both instructions, the installed generation's first; 1.x first when unknown.
    pub fn connect(&self) -> [Connect; 2] {
        match self.generation() {
            Some(Generation::V2) => [CONNECT_V2, CONNECT_V1],
            Some(Generation::V1) | None => [CONNECT_V1, CONNECT_V2],
        }
    }
}

/// `1.18.33`, `opencode 2.0.20`, `v2.0.12` → the version and its major.
pub fn parse_version(text: &str) -> Option<(String, u64)> {
    let word = text.split_whitespace().find_map(|w| {
        let w = w.strip_prefix('v').unwrap_or(w);
        w.chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
            .then_some(w)
    })?;
    let major = word.split('.').next()?.parse().ok()?;
    Some((word.to_owned(), major))
}

/// The first executable `opencode` on `path`.
pub fn find_opencode(path: Option<&OsStr>) -> Option<PathBuf> {
    path.into_iter()
        .flat_map(std::env::split_paths)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join("opencode"))
        .find(|candidate| crate::landstrip::is_executable(candidate))
}

/// Finds opencode on `path` and runs its `--version`, bounded by `timeout` (the child is
/// killed when it runs over).
pub async fn detect(path: Option<&OsStr>, timeout: Duration) -> Installed {
    let Some(binary) = find_opencode(path) else {
        return Installed::Missing;
    };
    match version(&binary, timeout).await {
        Ok((version, major)) => Installed::Found {
            binary,
            version,
            major,
        },
        Err(message) => Installed::Unknown { binary, message },
    }
}

/// [`detect`] with this process's `PATH` and [`VERSION_TIMEOUT`].
pub async fn detect_from_env() -> Installed {
    detect(std::env::var_os("PATH").as_deref(), VERSION_TIMEOUT).await
}

async fn version(binary: &Path, timeout: Duration) -> Result<(String, u64), String> {
    let child = tokio::process::Command::new(binary)
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = match tokio::time::timeout(timeout, child).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => return Err(format!("cannot run {}: {e}", binary.display())),
        Err(_) => {
            return Err(format!(
                "{} --version did not finish within {} s",
                binary.display(),
                timeout.as_secs_f32()
            ))
        }
    };
    let said = String::from_utf8_lossy(&output.stdout);
    match parse_version(&said) {
        Some(version) if output.status.success() => Ok(version),
        _ => Err(format!(
            "{} --version: {}: {:?}",
            binary.display(),
            output.status,
            said.trim()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_as_opencode_prints_them() {
        assert_eq!(parse_version("1.18.33\n"), Some(("1.18.33".into(), 1)));
        assert_eq!(parse_version("opencode 2.0.20"), Some(("2.0.20".into(), 2)));
        assert_eq!(parse_version("v2.0.12"), Some(("2.0.12".into(), 2)));
        assert_eq!(parse_version("10.1"), Some(("10.1".into(), 10)));
        assert_eq!(parse_version("error: no"), None);
        assert_eq!(parse_version(""), None);
    }

    #[test]
    fn the_installed_generation_leads_and_unknown_shows_1x_first() {
        let found = |major| Installed::Found {
            binary: "/b/opencode".into(),
            version: format!("{major}.0.0"),
            major,
        };
        assert_eq!(found(2).connect(), [CONNECT_V2, CONNECT_V1]);
        assert_eq!(found(3).connect(), [CONNECT_V2, CONNECT_V1]);
        assert_eq!(found(1).connect(), [CONNECT_V1, CONNECT_V2]);
        assert_eq!(found(0).generation(), None);
        assert_eq!(Installed::Missing.connect(), [CONNECT_V1, CONNECT_V2]);
        assert_eq!(CONNECT_V1.config_key, "plugin");
        assert_eq!(CONNECT_V2.config_key, "plugins");
    }

    /// A stand-in `opencode` in a directory of its own. opencode 2 cannot be installed
    /// here (the npm registry reachable serves opencode 1.18.33 only), so a script prints
    /// what its `--version` prints; the process, the `PATH` walk and the timeout are real.
    fn fake_opencode(body: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("opencode");
        // Written by a child, not this process: a file this process wrote could be held
        // open by another test thread's fork and fail to run ("Text file busy").
        let written = std::process::Command::new("sh")
            .args([
                "-c",
                "printf '#!/bin/sh\\n%s\\n' \"$1\" > \"$2\" && chmod 755 \"$2\"",
            ])
            .arg("sh")
            .arg(body)
            .arg(&bin)
            .status()
            .unwrap();
        assert!(written.success(), "writing {}: {written}", bin.display());
        dir
    }

    fn path_of(dirs: &[&Path]) -> std::ffi::OsString {
        std::env::join_paths(dirs).unwrap()
    }

    #[tokio::test]
    async fn the_first_opencode_on_path_is_asked_its_version() {
        let v2 = fake_opencode("echo 2.0.20");
        let v1 = fake_opencode("echo 1.18.33");
        let empty = tempfile::tempdir().unwrap();
        let path = path_of(&[empty.path(), v2.path(), v1.path()]);
        let got = detect(Some(&path), VERSION_TIMEOUT).await;
        assert_eq!(
            got,
            Installed::Found {
                binary: v2.path().join("opencode"),
                version: "2.0.20".into(),
                major: 2
            }
        );
        assert_eq!(got.generation(), Some(Generation::V2));
        let path = path_of(&[v1.path(), v2.path()]);
        assert_eq!(
            detect(Some(&path), VERSION_TIMEOUT).await.generation(),
            Some(Generation::V1)
        );
        assert_eq!(
            detect(Some(&path_of(&[empty.path()])), VERSION_TIMEOUT).await,
            Installed::Missing
        );
    }

    #[tokio::test]
    async fn an_opencode_that_hangs_or_fails_is_unknown_within_the_bound() {
        let hangs = fake_opencode("exec sleep 30");
        let bound = Duration::from_millis(300);
        let started = std::time::Instant::now();
        let got = detect(Some(&path_of(&[hangs.path()])), bound).await;
        let took = started.elapsed();
        println!("a hanging opencode --version given up after {took:?}");
        assert!(
            matches!(&got, Installed::Unknown { message, .. } if message.contains("did not finish")),
            "{got:?}"
        );
        assert!(took < Duration::from_secs(10), "{took:?}");
        assert_eq!(got.connect(), [CONNECT_V1, CONNECT_V2]);
        let fails = fake_opencode("echo 2.0.20; exit 1");
        let got = detect(Some(&path_of(&[fails.path()])), VERSION_TIMEOUT).await;
        assert!(matches!(got, Installed::Unknown { .. }), "{got:?}");
    }

    #[test]
    fn the_connect_hint_leads_with_the_installed_opencode() {
        let v2 = Installed::Found {
            binary: "/usr/bin/opencode".into(),
            version: "2.0.20".into(),
            major: 2,
        };
        assert_eq!(
            v2.connect_hint(),
            "connect opencode to it (opencode 2.0.20 found): opencode plugin install \
             opencode-landstrip\n  for opencode 1.x instead: opencode plugin \
             opencode-landstrip@0.19.1\n"
        );
        let text = Installed::Missing.connect_hint();
        assert!(
            text.starts_with("connect opencode to it: opencode plugin opencode-landstrip@0.19.1\n"),
            "{text}"
        );
        assert!(
            text.contains("for opencode 2 instead: opencode plugin install"),
            "{text}"
        );
    }
}
