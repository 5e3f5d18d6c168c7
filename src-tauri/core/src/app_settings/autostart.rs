//! Starting the app at login, the freedesktop way: a desktop entry in
//! `$XDG_CONFIG_HOME/autostart/` (default `~/.config/autostart/`) that the session starts
//! at login (docs/ARCHITECTURE.md, "Autostart"). The entry's presence is the setting:
//! nothing else records it, so a desktop's own "Startup Applications" tool and this app
//! never disagree.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use crate::safe_fs::{self, FileMode};

/// The entry's file name in the autostart directory.
pub const AUTOSTART_FILE_NAME: &str = "landstrip-tray.desktop";

/// Why the autostart entry could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum AutostartError {
    /// Neither `XDG_CONFIG_HOME` nor `HOME` says where the user's config lives.
    #[error("cannot find the autostart directory: neither XDG_CONFIG_HOME nor HOME is set")]
    NoConfigDir,
    /// The running program's path is unknown or cannot go into a desktop entry.
    #[error("cannot tell which program to start at login: {0}")]
    Exe(String),
    /// Reading, writing or removing the entry failed.
    #[error("{}: {source}", file.display())]
    Io {
        /// The entry.
        file: PathBuf,
        /// What failed.
        source: io::Error,
    },
}

/// The autostart entry for one program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Autostart {
    file: PathBuf,
    exec: PathBuf,
}

impl Autostart {
    /// The entry `file` that starts `exec` (an absolute path).
    pub fn new(file: PathBuf, exec: PathBuf) -> Self {
        Self { file, exec }
    }

    /// This user's entry for the running binary: the directory from the environment as
    /// it is now (`XDG_CONFIG_HOME` if absolute, else `~/.config`), the program from
    /// `/proc/self/exe`.
    pub fn from_env() -> Result<Self, AutostartError> {
        let dir = autostart_dir_from_vars(
            std::env::var_os("XDG_CONFIG_HOME"),
            std::env::var_os("HOME"),
        )
        .ok_or(AutostartError::NoConfigDir)?;
        Ok(Self::new(dir.join(AUTOSTART_FILE_NAME), running_exe()?))
    }

    /// Where the entry lives.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The program the entry starts.
    pub fn exec(&self) -> &Path {
        &self.exec
    }

    /// Whether the session starts the app at login: the entry exists and is not switched
    /// off in it (`Hidden=true`, or GNOME's `X-GNOME-Autostart-enabled=false`). Blocks.
    pub fn is_on(&self) -> Result<bool, AutostartError> {
        match std::fs::read_to_string(&self.file) {
            Ok(text) => Ok(!switched_off(&text)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(self.io(source)),
        }
    }

    /// On: writes the entry atomically (creating the directory), replacing whatever was
    /// there, a symbolic link included (never followed). Off: removes it; already gone is
    /// fine. Blocks.
    pub fn set(&self, on: bool) -> Result<(), AutostartError> {
        if !on {
            return match std::fs::remove_file(&self.file) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(self.io(e)),
                _ => Ok(()),
            };
        }
        let entry = self.entry()?;
        std::fs::create_dir_all(safe_fs::parent_dir(&self.file)).map_err(|e| self.io(e))?;
        safe_fs::write_atomic(&self.file, entry.as_bytes(), FileMode::KeepOr(0o644))
            .map_err(|e| self.io(e))
    }

    /// The desktop entry's text.
    pub fn entry(&self) -> Result<String, AutostartError> {
        let exec = self.exec.to_str().ok_or_else(|| {
            AutostartError::Exe(format!(
                "{} is not UTF-8, which a desktop entry cannot hold",
                self.exec.display()
            ))
        })?;
        if !self.exec.is_absolute() || exec.chars().any(char::is_control) {
            return Err(AutostartError::Exe(format!(
                "{exec:?} must be an absolute path without control characters"
            )));
        }
        Ok(format!(
            "[Desktop Entry]\n\
             Type=Application\n\
             Name=landstrip-tray\n\
             GenericName=Sandbox prompts\n\
             Comment=Approve or deny what sandboxed commands try to do\n\
             Exec={}\n\
             Icon=landstrip-tray\n\
             Terminal=false\n\
             X-GNOME-Autostart-enabled=true\n",
            exec_value(exec)
        ))
    }

    fn io(&self, source: io::Error) -> AutostartError {
        AutostartError::Io {
            file: self.file.clone(),
            source,
        }
    }
}

/// `$XDG_CONFIG_HOME/autostart` when that is absolute (the base directory spec ignores a
/// relative one), else `$HOME/.config/autostart`; empty counts as unset.
pub fn autostart_dir_from_vars(
    xdg_config_home: Option<OsString>,
    home: Option<OsString>,
) -> Option<PathBuf> {
    let absolute = |v: Option<OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    absolute(xdg_config_home)
        .or_else(|| absolute(home).map(|home| home.join(".config")))
        .map(|config| config.join("autostart"))
}

/// The running binary. After a package upgrade replaced it, the kernel names it
/// "PATH (deleted)": the new binary at PATH is the one to start next time.
fn running_exe() -> Result<PathBuf, AutostartError> {
    let exe = std::env::current_exe().map_err(|e| AutostartError::Exe(e.to_string()))?;
    if let Some(live) = exe
        .to_str()
        .and_then(|s| s.strip_suffix(" (deleted)"))
        .map(PathBuf::from)
    {
        if live.is_file() {
            return Ok(live);
        }
    }
    Ok(exe)
}

/// Characters the desktop entry spec reserves in an `Exec` argument: one of them makes
/// the argument quoted.
const RESERVED: &[char] = &[
    ' ', '\t', '\n', '"', '\'', '\\', '>', '<', '~', '|', '&', ';', '$', '*', '?', '#', '(', ')',
    '`',
];

/// `program` as the `Exec` key's value: quoted if it holds a reserved character (with `"`,
/// `` ` ``, `$` and `\` escaped inside the quotes), `%` doubled (it starts a field code),
/// then every backslash escaped again as the spec's string values require.
pub fn exec_value(program: &str) -> String {
    let quoted = program.contains(RESERVED);
    let mut arg = String::with_capacity(program.len() + 2);
    if quoted {
        arg.push('"');
    }
    for c in program.chars() {
        match c {
            '"' | '`' | '$' | '\\' if quoted => {
                arg.push('\\');
                arg.push(c);
            }
            '%' => arg.push_str("%%"),
            _ => arg.push(c),
        }
    }
    if quoted {
        arg.push('"');
    }
    arg.replace('\\', "\\\\")
}

/// The program an `Exec` value written by [`exec_value`] starts (the reverse, for tests
/// and for reading an entry back); None if it is not one quoted or bare argument.
pub fn exec_program(value: &str) -> Option<String> {
    // String-level escapes first (`\\` is one backslash), then the argument's quoting.
    let mut unescaped = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next()? {
                '\\' => unescaped.push('\\'),
                's' => unescaped.push(' '),
                other => {
                    unescaped.push('\\');
                    unescaped.push(other);
                }
            }
        } else {
            unescaped.push(c);
        }
    }
    let program = match unescaped.strip_prefix('"') {
        Some(rest) => {
            let inner = rest.strip_suffix('"')?;
            let mut out = String::with_capacity(inner.len());
            let mut chars = inner.chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => out.push(chars.next()?),
                    '"' => return None,
                    _ => out.push(c),
                }
            }
            out
        }
        None if unescaped.contains(RESERVED) => return None,
        None => unescaped,
    };
    Some(program.replace("%%", "%"))
}

/// Whether the `[Desktop Entry]` group of `text` switches the entry off.
fn switched_off(text: &str) -> bool {
    let mut in_main = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_main = line == "[Desktop Entry]";
            continue;
        }
        if !in_main {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        match (key.trim(), value.trim()) {
            ("Hidden", "true") | ("X-GNOME-Autostart-enabled", "false") => return true,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_follows_the_base_directory_spec() {
        let dir = |x: Option<&str>, h: Option<&str>| {
            autostart_dir_from_vars(x.map(Into::into), h.map(Into::into))
        };
        assert_eq!(
            dir(Some("/c"), Some("/h")),
            Some(PathBuf::from("/c/autostart"))
        );
        assert_eq!(
            dir(Some("relative"), Some("/h")),
            Some(PathBuf::from("/h/.config/autostart"))
        );
        assert_eq!(
            dir(Some(""), Some("/h")),
            Some(PathBuf::from("/h/.config/autostart"))
        );
        assert_eq!(dir(None, None), None);
    }

    #[test]
    fn exec_values_quote_what_the_spec_reserves_and_read_back() {
        assert_eq!(
            exec_value("/usr/bin/landstrip-tray"),
            "/usr/bin/landstrip-tray"
        );
        assert_eq!(exec_value("/opt/my apps/lt"), "\"/opt/my apps/lt\"");
        assert_eq!(exec_value("/a/100%/lt"), "/a/100%%/lt");
        assert_eq!(exec_value("/a/$x`y\"/lt"), r#""/a/\\$x\\`y\\"/lt""#);
        assert_eq!(exec_value(r"/a\b/lt"), r#""/a\\\\b/lt""#);
        for program in [
            "/usr/bin/landstrip-tray",
            "/opt/my apps/lt",
            "/a/100%/lt",
            "/a/$x`y\"/lt",
            r"/a\b/lt",
            "/a/it's ~here/(lt)",
        ] {
            assert_eq!(
                exec_program(&exec_value(program)).as_deref(),
                Some(program),
                "{program}"
            );
        }
        assert_eq!(exec_program("/a b"), None);
    }

    #[test]
    fn an_entry_is_on_until_removed_or_switched_off_in_it() {
        let dir = tempfile::tempdir().unwrap();
        let entry = Autostart::new(
            dir.path().join("autostart").join(AUTOSTART_FILE_NAME),
            "/usr/bin/landstrip-tray".into(),
        );
        assert!(!entry.is_on().unwrap());
        entry.set(true).unwrap();
        assert!(entry.is_on().unwrap());
        let text = std::fs::read_to_string(entry.file()).unwrap();
        assert!(text.contains("\nExec=/usr/bin/landstrip-tray\n"), "{text}");
        std::fs::write(entry.file(), text.replace("enabled=true", "enabled=false")).unwrap();
        assert!(!entry.is_on().unwrap());
        std::fs::write(entry.file(), format!("{text}Hidden=true\n")).unwrap();
        assert!(!entry.is_on().unwrap());
        std::fs::write(
            entry.file(),
            format!("{text}[Desktop Action x]\nHidden=true\n"),
        )
        .unwrap();
        assert!(entry.is_on().unwrap(), "another group's key");
        entry.set(false).unwrap();
        assert!(!entry.file().exists());
        entry.set(false).unwrap();
    }

    #[test]
    fn a_symlink_at_the_entry_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "keep").unwrap();
        let file = dir.path().join(AUTOSTART_FILE_NAME);
        std::os::unix::fs::symlink(&elsewhere, &file).unwrap();
        Autostart::new(file.clone(), "/bin/lt".into())
            .set(true)
            .unwrap();
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "keep");
        assert!(!std::fs::symlink_metadata(&file)
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn a_relative_or_multi_line_program_is_refused() {
        for exec in ["lt", "/a\nb"] {
            let err = Autostart::new("/x.desktop".into(), exec.into())
                .entry()
                .unwrap_err();
            assert!(matches!(err, AutostartError::Exe(_)), "{exec}: {err}");
        }
    }
}
