//! The phone page's settings: whether it serves and on which address (kept, so it starts
//! again with the app until `ctl web off`), and whether it may allow a sensitive or
//! after-a-secret request.

use serde::{Deserialize, Serialize};

/// `web` in the settings file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebSetting {
    /// It serves whenever the app runs.
    #[serde(default)]
    pub enabled: bool,
    /// The address it listens on, `127.0.0.1:PORT` by default: the port is chosen once,
    /// the first time it is turned on, and kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind: Option<String>,
}

/// `webSensitive`: whether the phone page may allow a sensitive location or a request of
/// a run after a secret (with a second tap), or sends the person to the desktop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WebSensitive {
    /// Answer those at the desktop (the default); the phone may still deny them.
    #[default]
    Deny,
    /// The phone may allow them too, after a confirmation step.
    Allow,
}

impl WebSensitive {
    pub(super) fn is_default(&self) -> bool {
        *self == WebSensitive::default()
    }

    /// The word used in settings and `ctl`.
    pub fn as_str(self) -> &'static str {
        match self {
            WebSensitive::Deny => "deny",
            WebSensitive::Allow => "allow",
        }
    }
}

impl std::str::FromStr for WebSensitive {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "deny" => Ok(WebSensitive::Deny),
            "allow" => Ok(WebSensitive::Allow),
            other => Err(format!("{other:?}: expected allow or deny")),
        }
    }
}
