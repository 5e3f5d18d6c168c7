//! The bundled defaults of opencode-landstrip 0.19.1.

use super::schema::{FilesystemConfig, NetworkConfig, SandboxConfig};

/// The plugin's bundled sandbox.json, as text (what a fresh global file looks like).
pub const BUNDLED_SANDBOX_JSON: &str = r#"{
  "enabled": true,
  "network": {
    "allowNetwork": false,
    "allowLocalBinding": false,
    "allowAllUnixSockets": false,
    "allowUnixSockets": [],
    "allowedDomains": [],
    "deniedDomains": []
  },
  "filesystem": {
    "denyRead": ["/Users", "/home"],
    "allowRead": [".", "~/.gitconfig", "~/.config/git/config", "/dev/null"],
    "allowWrite": [".", "/dev/null"],
    "denyWrite": [
      "**/.env",
      "**/.env.*",
      "**/*.pem",
      "**/*.key",
      ".opencode/sandbox.json",
      "~/.config/opencode/sandbox.json"
    ]
  }
}
"#;

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| (*item).to_string()).collect()
}

/// The bundled defaults as an effective config.
pub fn defaults() -> SandboxConfig {
    SandboxConfig {
        enabled: true,
        network: NetworkConfig {
            allow_network: false,
            allow_local_binding: false,
            allow_all_unix_sockets: false,
            allow_unix_sockets: Vec::new(),
            allowed_domains: Vec::new(),
            denied_domains: Vec::new(),
        },
        filesystem: FilesystemConfig {
            deny_read: strings(&["/Users", "/home"]),
            allow_read: strings(&[".", "~/.gitconfig", "~/.config/git/config", "/dev/null"]),
            allow_write: strings(&[".", "/dev/null"]),
            deny_write: strings(&[
                "**/.env",
                "**/.env.*",
                "**/*.pem",
                "**/*.key",
                ".opencode/sandbox.json",
                "~/.config/opencode/sandbox.json",
            ]),
            // The later plugins bundle no hard-denial roots.
            deny_read_always: Vec::new(),
            deny_write_always: Vec::new(),
        },
        shell: Default::default(),
        windows: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_text_equals_defaults() {
        let parsed: SandboxConfig =
            serde_json::from_str(BUNDLED_SANDBOX_JSON).expect("bundled text is a full config");
        assert_eq!(parsed, defaults());
    }
}
