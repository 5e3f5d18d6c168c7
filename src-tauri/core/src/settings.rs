//! The app's own settings file (projects served, prompt timeout), in the platform config
//! directory. A file that does not parse is reported and never overwritten.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// What the settings file holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppSettings {
    /// Project directories served at start.
    #[serde(default)]
    pub projects: Vec<PathBuf>,
    /// Deny a prompt nobody answered after this many seconds (never persists anything).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_timeout_secs: Option<u64>,
    /// Summarise terminal denials (at most one quiet notification per run).
    #[serde(default = "yes")]
    pub summarize_denials: bool,
}

impl Default for AppSettings {
    fn default() -> Self {
        Self {
            projects: Vec::new(),
            prompt_timeout_secs: None,
            summarize_denials: true,
        }
    }
}

fn yes() -> bool {
    true
}

/// Why the settings could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// Reading or writing failed.
    #[error("{file}: {source}")]
    Io {
        /// The settings file.
        file: PathBuf,
        /// What failed.
        source: io::Error,
    },
    /// The file is not valid settings; it is left alone.
    #[error("{file}:{line}:{column}: {message}")]
    Invalid {
        /// The settings file.
        file: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
}

/// The settings file at a path.
#[derive(Debug, Clone)]
pub struct SettingsFile {
    path: PathBuf,
}

impl SettingsFile {
    /// The settings file at `path` (`<config dir>/settings.json`).
    pub fn new(path: PathBuf) -> Self {
        Self { path }
    }

    /// Where it lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads it; a missing file is the default settings.
    pub fn load(&self) -> Result<AppSettings, SettingsError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(AppSettings::default()),
            Err(source) => {
                return Err(SettingsError::Io {
                    file: self.path.clone(),
                    source,
                })
            }
        };
        serde_json::from_str(&text).map_err(|e| SettingsError::Invalid {
            file: self.path.clone(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })
    }

    /// Applies `change` to the current settings and writes them atomically. A file that
    /// does not parse is not touched.
    pub fn update(
        &self,
        change: impl FnOnce(&mut AppSettings),
    ) -> Result<AppSettings, SettingsError> {
        let mut settings = self.load()?;
        change(&mut settings);
        let mut text = serde_json::to_string_pretty(&settings).map_err(|e| SettingsError::Io {
            file: self.path.clone(),
            source: io::Error::other(e),
        })?;
        text.push('\n');
        crate::policy::write_atomic(&self.path, &text).map_err(|source| SettingsError::Io {
            file: self.path.clone(),
            source,
        })?;
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_is_default_and_updates_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let file = SettingsFile::new(dir.path().join("cfg/settings.json"));
        assert_eq!(file.load().unwrap(), AppSettings::default());
        file.update(|s| s.projects.push("/p".into())).unwrap();
        assert_eq!(file.load().unwrap().projects, vec![PathBuf::from("/p")]);
    }

    #[test]
    fn a_broken_file_is_reported_and_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{\n  \"projects\": [\"/p\",]\n}\n").unwrap();
        let file = SettingsFile::new(path.clone());
        let err = file.update(|s| s.projects.clear()).unwrap_err();
        assert!(err.to_string().contains("settings.json:2:"), "{err}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\n  \"projects\": [\"/p\",]\n}\n"
        );
    }
}
