//! How paths and programs are written for people, the same on every surface (the dialog,
//! notifications, the tray menu, `ctl`).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::wire::protocol::ProcessInfo;

/// A path or address as shown (`text`, home-relative) and in full (`full`, for a tooltip).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shown {
    /// What the dialog prints.
    pub text: String,
    /// The full form, shown on hover and in details.
    pub full: String,
}

impl Shown {
    /// A path, written relative to `home` (`~/…`) when it is under it.
    pub fn path(path: &Path, home: &Path) -> Self {
        Self {
            text: home_relative(path, home),
            full: path.display().to_string(),
        }
    }

    /// Text shown as it is (an address, say).
    pub fn plain(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            full: text.to_owned(),
        }
    }
}

/// `path` with the home directory written as `~`.
pub fn home_relative(path: &Path, home: &Path) -> String {
    if home.as_os_str().is_empty() || home == Path::new("/") {
        return path.display().to_string();
    }
    match path.strip_prefix(home) {
        Ok(rest) if rest.as_os_str().is_empty() => "~".to_owned(),
        Ok(rest) => format!("~/{}", rest.display()),
        Err(_) => path.display().to_string(),
    }
}

/// The executable's file name ("python3.11"), when the query names one.
pub fn program_name(process: Option<&ProcessInfo>) -> Option<String> {
    let exe = process?.exe.as_deref()?;
    Some(
        Path::new(exe)
            .file_name()
            .map_or_else(|| exe.to_owned(), |n| n.to_string_lossy().into_owned()),
    )
}

/// The program behind a query in one phrase: "python3.11 (pid 2434)".
pub fn program_label(process: Option<&ProcessInfo>) -> String {
    let pid = process.and_then(|p| p.pid);
    match (program_name(process), pid) {
        (Some(exe), Some(pid)) => format!("{exe} (pid {pid})"),
        (Some(exe), None) => exe,
        (None, Some(pid)) => format!("pid {pid}"),
        (None, None) => "an unknown program".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_relative_is_component_wise() {
        let home = Path::new("/home/dev");
        assert_eq!(home_relative(Path::new("/home/dev/a/b"), home), "~/a/b");
        assert_eq!(home_relative(Path::new("/home/dev"), home), "~");
        assert_eq!(
            home_relative(Path::new("/home/devx/a"), home),
            "/home/devx/a"
        );
        assert_eq!(home_relative(Path::new("/tmp/a"), home), "/tmp/a");
        assert_eq!(home_relative(Path::new("/tmp/a"), Path::new("/")), "/tmp/a");
    }

    #[test]
    fn program_labels() {
        let full = ProcessInfo {
            pid: Some(2434),
            exe: Some("/usr/bin/python3.11".into()),
            cwd: None,
        };
        assert_eq!(program_label(Some(&full)), "python3.11 (pid 2434)");
        let no_pid = ProcessInfo {
            pid: None,
            ..full.clone()
        };
        assert_eq!(program_label(Some(&no_pid)), "python3.11");
        let no_exe = ProcessInfo { exe: None, ..full };
        assert_eq!(program_label(Some(&no_exe)), "pid 2434");
        assert_eq!(program_label(None), "an unknown program");
    }
}
