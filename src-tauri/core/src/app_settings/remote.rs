//! A remote machine's entry in the settings file: a name of the person's choosing and how
//! `ssh` reaches it. Checked before it is saved, so nothing odd reaches `ssh`'s command
//! line (a destination starting with `-` would be read as an option).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How long a remote's name may be.
pub const MAX_NAME: usize = 32;

/// How long a destination may be (a user, `@` and a host name fit well within it).
pub const MAX_DESTINATION: usize = 255;

/// One remote machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteConfig {
    /// Its name here (`devbox`): shown in the dialog, `ctl pending`, the tray.
    pub name: String,
    /// As `ssh` takes it: `user@host` or a `Host` alias.
    pub destination: String,
    /// `ssh -p`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// `ssh -i` (with `IdentitiesOnly`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<PathBuf>,
    /// `ssh -o UserKnownHostsFile=`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_hosts: Option<PathBuf>,
}

/// Why a remote's entry is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoteConfigError {
    /// A name that is empty, too long or has other characters than letters, digits, `.`,
    /// `_` and `-`.
    #[error("{0:?}: a remote's name is 1 to {MAX_NAME} letters, digits, '.', '_' or '-'")]
    Name(String),
    /// A destination starting with `-`: `ssh` would read it as an option.
    #[error("{0:?}: a destination must not start with '-' (ssh would read it as an option)")]
    Dash(String),
    /// An empty or too long destination, or one with spaces or control characters.
    #[error("{0:?}: a destination is user@host or a Host alias, without spaces")]
    Destination(String),
    /// Port 0.
    #[error("port 0 is not a port")]
    Port,
    /// A key or known-hosts file given by a relative path.
    #[error("{}: must be an absolute path", .0.display())]
    NotAbsolute(PathBuf),
    /// The name is taken.
    #[error("{0}: a remote of that name exists; remove it first")]
    Exists(String),
}

impl RemoteConfig {
    /// Checks every field; nothing odd reaches `ssh`.
    pub fn check(&self) -> Result<(), RemoteConfigError> {
        check_name(&self.name)?;
        let d = &self.destination;
        if d.starts_with('-') {
            return Err(RemoteConfigError::Dash(d.clone()));
        }
        if d.is_empty()
            || d.len() > MAX_DESTINATION
            || d.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(RemoteConfigError::Destination(d.clone()));
        }
        if self.port == Some(0) {
            return Err(RemoteConfigError::Port);
        }
        for file in [&self.identity, &self.known_hosts].into_iter().flatten() {
            if !file.is_absolute() {
                return Err(RemoteConfigError::NotAbsolute(file.clone()));
            }
        }
        Ok(())
    }
}

/// Checks a remote's name.
pub fn check_name(name: &str) -> Result<(), RemoteConfigError> {
    let fine = !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if fine {
        Ok(())
    } else {
        Err(RemoteConfigError::Name(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(name: &str, destination: &str) -> RemoteConfig {
        RemoteConfig {
            name: name.into(),
            destination: destination.into(),
            port: None,
            identity: None,
            known_hosts: None,
        }
    }

    #[test]
    fn names_and_destinations_are_checked() {
        assert_eq!(remote("devbox", "u@host").check(), Ok(()));
        assert_eq!(remote("dev.box_2-x", "alias").check(), Ok(()));
        for bad in ["", "a b", "-x", "é", &"x".repeat(MAX_NAME + 1)] {
            assert!(matches!(
                remote(bad, "h").check(),
                Err(RemoteConfigError::Name(_))
            ));
        }
        assert!(matches!(
            remote("d", "-oProxyCommand=x").check(),
            Err(RemoteConfigError::Dash(_))
        ));
        for bad in ["", "a b", "a\nb"] {
            assert!(matches!(
                remote("d", bad).check(),
                Err(RemoteConfigError::Destination(_))
            ));
        }
        let relative = RemoteConfig {
            identity: Some("key".into()),
            ..remote("d", "h")
        };
        assert!(matches!(
            relative.check(),
            Err(RemoteConfigError::NotAbsolute(_))
        ));
    }
}
