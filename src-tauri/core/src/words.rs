//! How paths are written for people, the same on every surface (the dialog, notifications,
//! the tray menu, `ctl`); programs are named in `origin::program`.

use std::path::Path;

use serde::{Deserialize, Serialize};

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
}
