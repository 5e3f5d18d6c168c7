//! Finding the installed landstrip binary (the launcher and the first-run check share
//! it) and `landstrip doctor`, its own check that the OS sandbox works, as a typed result.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How to install landstrip: the npm package that ships the Linux binary.
pub const INSTALL_HINT: &str = "npm install -g @landstrip/landstrip-linux-x64, then set \
LANDSTRIP to $(npm root -g)/@landstrip/landstrip-linux-x64/bin/landstrip or link that file \
into a directory on your PATH";

/// How long `landstrip doctor` may take before it counts as failed.
pub const DOCTOR_TIMEOUT: Duration = Duration::from_secs(15);

/// The most of doctor's output kept for the message.
const OUTPUT_MAX: usize = 2000;

/// No usable landstrip binary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot find landstrip ({reason}); install it with {INSTALL_HINT}")]
pub struct LandstripMissing {
    /// Why: `LANDSTRIP=… is not an executable file`, or `not on PATH`.
    pub reason: String,
}

/// `$LANDSTRIP` if set (it must be an executable file), else the first `landstrip` on
/// `path`.
pub fn find_landstrip(
    env: Option<OsString>,
    path: Option<&OsStr>,
) -> Result<PathBuf, LandstripMissing> {
    if let Some(given) = env.filter(|v| !v.is_empty()) {
        let given = PathBuf::from(given);
        return if is_executable(&given) {
            Ok(given)
        } else {
            Err(LandstripMissing {
                reason: format!("LANDSTRIP={} is not an executable file", given.display()),
            })
        };
    }
    path.into_iter()
        .flat_map(std::env::split_paths)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join("landstrip"))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| LandstripMissing {
            reason: "not on PATH".into(),
        })
}

/// [`find_landstrip`] with this process's `LANDSTRIP` and `PATH`.
pub fn find_landstrip_from_env() -> Result<PathBuf, LandstripMissing> {
    find_landstrip(
        std::env::var_os("LANDSTRIP"),
        std::env::var_os("PATH").as_deref(),
    )
}

pub(crate) fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// What `landstrip doctor` said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum Doctor {
    /// The sandbox works.
    #[serde(rename_all = "camelCase")]
    Ok {
        /// The binary checked.
        binary: PathBuf,
        /// `landstrip --version`'s version, when it said one.
        version: Option<String>,
        /// What enforces the sandbox (`landlock+seccomp`).
        implementation: Option<String>,
    },
    /// landstrip is there, but the check failed (or could not run).
    #[serde(rename_all = "camelCase")]
    Failed {
        /// The binary checked.
        binary: PathBuf,
        /// What went wrong, in landstrip's words where it gave some.
        message: String,
    },
    /// No landstrip binary.
    #[serde(rename_all = "camelCase")]
    Missing {
        /// Why none was found.
        reason: String,
        /// How to install it.
        install: String,
    },
}

/// doctor's JSON line: `{"ok":true,"platform":"linux","implementation":"landlock+seccomp"}`.
#[derive(Debug, Deserialize)]
struct DoctorLine {
    ok: bool,
    implementation: Option<String>,
    error: Option<String>,
}

/// Finds landstrip from the environment and runs its doctor.
pub async fn doctor_from_env() -> Doctor {
    match find_landstrip_from_env() {
        Ok(binary) => doctor(&binary).await,
        Err(missing) => Doctor::Missing {
            reason: missing.reason,
            install: INSTALL_HINT.to_owned(),
        },
    }
}

/// Runs `binary doctor` (bounded by [`DOCTOR_TIMEOUT`]) and `binary --version`.
pub async fn doctor(binary: &Path) -> Doctor {
    let failed = |message: String| Doctor::Failed {
        binary: binary.to_path_buf(),
        message,
    };
    let output = match run(binary, &["doctor"]).await {
        Ok(output) => output,
        Err(message) => return failed(message),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<DoctorLine>(l.trim()).ok());
    match line {
        Some(line) if line.ok && output.status.success() => {
            let version = run(binary, &["--version"])
                .await
                .ok()
                .and_then(|out| version_of(&String::from_utf8_lossy(&out.stdout)));
            Doctor::Ok {
                binary: binary.to_path_buf(),
                version,
                implementation: line.implementation,
            }
        }
        line => {
            let said = line
                .and_then(|l| l.error)
                .unwrap_or_else(|| format!("{}\n{}", stdout.trim(), stderr.trim()));
            let mut message = format!("landstrip doctor: {}: {}", output.status, said.trim());
            if message.len() > OUTPUT_MAX {
                let mut end = OUTPUT_MAX;
                while !message.is_char_boundary(end) {
                    end -= 1;
                }
                message.truncate(end);
                message.push('…');
            }
            failed(message)
        }
    }
}

async fn run(binary: &Path, args: &[&str]) -> Result<std::process::Output, String> {
    let child = tokio::process::Command::new(binary)
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(DOCTOR_TIMEOUT, child).await {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(e)) => Err(format!("cannot run {}: {e}", binary.display())),
        Err(_) => Err(format!(
            "{} {} did not finish within {} s",
            binary.display(),
            args.join(" "),
            DOCTOR_TIMEOUT.as_secs()
        )),
    }
}

/// `landstrip 0.19.2` → `0.19.2`.
fn version_of(text: &str) -> Option<String> {
    text.split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        let bin = dir.join(name);
        std::fs::write(&bin, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        bin
    }

    #[test]
    fn landstrip_is_found_from_the_variable_then_path() {
        let dir = tempfile::tempdir().unwrap();
        let bin = script(dir.path(), "landstrip", "");
        let path = std::env::join_paths(["/nonexistent".as_ref(), dir.path()]).unwrap();
        assert_eq!(find_landstrip(None, Some(&path)).unwrap(), bin);
        assert_eq!(find_landstrip(Some(bin.clone().into()), None).unwrap(), bin);
        let missing = find_landstrip(None, Some(OsStr::new("/nonexistent"))).unwrap_err();
        assert_eq!(missing.reason, "not on PATH");
        assert!(missing
            .to_string()
            .contains("npm install -g @landstrip/landstrip-linux-x64"));
        let bad = find_landstrip(Some("/nonexistent/landstrip".into()), Some(&path))
            .expect_err("LANDSTRIP wins over PATH");
        assert!(bad.to_string().contains("LANDSTRIP="), "{bad}");
        let not_exec = dir.path().join("plain");
        std::fs::write(&not_exec, "").unwrap();
        assert!(find_landstrip(Some(not_exec.into()), None).is_err());
    }

    #[tokio::test]
    async fn doctor_reads_landstrips_answer() {
        let dir = tempfile::tempdir().unwrap();
        let good = script(
            dir.path(),
            "good",
            r#"if [ "$1" = --version ]; then echo "landstrip 9.1.0"; else echo '{"ok":true,"platform":"linux","implementation":"landlock+seccomp"}'; fi"#,
        );
        assert_eq!(
            doctor(&good).await,
            Doctor::Ok {
                binary: good.clone(),
                version: Some("9.1.0".into()),
                implementation: Some("landlock+seccomp".into()),
            }
        );
        let refused = script(
            dir.path(),
            "refused",
            r#"echo '{"ok":false,"error":"landlock is not supported by this kernel"}'; exit 1"#,
        );
        match doctor(&refused).await {
            Doctor::Failed { message, .. } => {
                assert!(message.contains("landlock is not supported"), "{message}")
            }
            other => panic!("{other:?}"),
        }
        let noise = script(dir.path(), "noise", "echo boom >&2; exit 3");
        match doctor(&noise).await {
            Doctor::Failed { message, .. } => assert!(message.contains("boom"), "{message}"),
            other => panic!("{other:?}"),
        }
        let gone = dir.path().join("gone");
        assert!(matches!(doctor(&gone).await, Doctor::Failed { .. }));
    }

    #[test]
    fn the_result_is_tagged_for_the_page() {
        let missing = Doctor::Missing {
            reason: "not on PATH".into(),
            install: INSTALL_HINT.into(),
        };
        let json = serde_json::to_value(&missing).unwrap();
        assert_eq!(json["state"], "missing");
        assert!(json["install"]
            .as_str()
            .unwrap()
            .contains("@landstrip/landstrip-linux-x64"));
    }
}
