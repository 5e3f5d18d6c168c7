//! The sandbox.json schema, validated exactly the way opencode-landstrip does:
//! strict JSON, an object root, no unknown fields, no wrong types. The fields are those of
//! the plugin's later releases (0.19.9): the 0.19.1 ones plus `filesystem.denyReadAlways`
//! and `denyWriteAlways`, `shell.readAccess` and `windows.{appContainerMode,allowLoopback}`.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use super::fs_list::{FsList, FsLists};

/// Everything that can go wrong reading, validating or editing a policy file.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file could not be read or written.
    #[error("{}: {source}", file.display())]
    Io {
        file: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The file is not valid JSON (line and column are 1-based).
    #[error("{}:{line}:{column}: {message}", file.display())]
    Syntax {
        file: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// The file is valid JSON but not a valid sandbox config; `field` is the
    /// dotted path of the offending field (empty for the root).
    #[error("{}: {message}", file.display())]
    Schema {
        file: PathBuf,
        field: String,
        message: String,
    },
    /// The file is a symbolic link: the app does not write through one (the file it would
    /// change is not the one it shows), so the user edits the target by hand.
    #[error(
        "{} is a symbolic link to {}: landstrip-tray does not write through links; edit {} by hand",
        file.display(),
        target.display(),
        target.display()
    )]
    Symlink { file: PathBuf, target: PathBuf },
    /// An edit named a field that does not exist or has another type.
    #[error("{key_path} is not a sandbox.json {expected} field")]
    InvalidKeyPath {
        key_path: String,
        expected: &'static str,
    },
    /// The editor could not make sense of text that passed validation (a bug).
    #[error("cannot edit sandbox.json: {message}")]
    Edit { message: String },
}

impl PolicyError {
    /// The file this error is about, when it is about one.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Self::Io { file, .. }
            | Self::Syntax { file, .. }
            | Self::Schema { file, .. }
            | Self::Symlink { file, .. } => Some(file),
            Self::InvalidKeyPath { .. } | Self::Edit { .. } => None,
        }
    }

    /// The same error, attributed to `path` (for text parsed before its file was known).
    pub fn with_file(self, path: &Path) -> Self {
        match self {
            Self::Io { source, .. } => Self::Io {
                file: path.to_path_buf(),
                source,
            },
            Self::Syntax {
                line,
                column,
                message,
                ..
            } => Self::Syntax {
                file: path.to_path_buf(),
                line,
                column,
                message,
            },
            Self::Schema { field, message, .. } => Self::Schema {
                file: path.to_path_buf(),
                field,
                message,
            },
            other => other,
        }
    }
}

/// The effective network settings (every field present).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkConfig {
    pub allow_network: bool,
    pub allow_local_binding: bool,
    pub allow_all_unix_sockets: bool,
    pub allow_unix_sockets: Vec<String>,
    pub allowed_domains: Vec<String>,
    pub denied_domains: Vec<String>,
}

/// The effective filesystem lists (every list present).
pub type FilesystemConfig = FsLists<Vec<String>>;

/// `shell.readAccess`: what the plugin's sandboxed shell may read — `host`, the host's
/// files (the plugin's default), or `policy`, only what the policy's read lists allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ShellReadAccess {
    Host,
    Policy,
}

impl ShellReadAccess {
    /// The value as the file spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Host => "host",
            Self::Policy => "policy",
        }
    }
}

/// `windows.appContainerMode`: which AppContainer landstrip uses on Windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AppContainerMode {
    Lpac,
    Standard,
}

impl AppContainerMode {
    /// The value as the file spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Lpac => "lpac",
            Self::Standard => "standard",
        }
    }
}

/// The `shell` object of one file (or the effective one: each field as the last layer
/// that set it left it); absent fields are `None`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShellOverrides {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_access: Option<ShellReadAccess>,
}

/// The `windows` object of one file (or the effective one, as for [`ShellOverrides`]);
/// absent fields are `None`. Nothing here applies on Linux.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WindowsOverrides {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_container_mode: Option<AppContainerMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_loopback: Option<bool>,
}

/// An effective sandbox config: defaults merged with the global and project files.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxConfig {
    pub enabled: bool,
    pub network: NetworkConfig,
    pub filesystem: FilesystemConfig,
    /// Last-wins per field; nothing set means the plugin's defaults (`host`).
    #[serde(default)]
    pub shell: ShellOverrides,
    /// Last-wins per field; only the plugin on Windows reads it.
    #[serde(default)]
    pub windows: WindowsOverrides,
}

/// The `network` object of one file; absent fields are `None`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkOverrides {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_network: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_local_binding: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_all_unix_sockets: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_unix_sockets: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_domains: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub denied_domains: Option<Vec<String>>,
}

/// The `filesystem` object of one file; absent lists are `None`.
pub type FilesystemOverrides = FsLists<Option<Vec<String>>>;

/// What one sandbox.json file holds; absent fields are `None`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxOverrides {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkOverrides>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filesystem: Option<FilesystemOverrides>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shell: Option<ShellOverrides>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windows: Option<WindowsOverrides>,
}

impl SandboxOverrides {
    /// The value of a string-array field by its key path (`["filesystem", "allowWrite"]`).
    pub fn string_list(&self, key_path: &[&str]) -> Option<&[String]> {
        match key_path {
            ["filesystem", key] => {
                let list = FsList::from_json_key(key)?;
                self.filesystem.as_ref()?.list(list)
            }
            ["network", key] => {
                let network = self.network.as_ref()?;
                match *key {
                    "allowUnixSockets" => network.allow_unix_sockets.as_deref(),
                    "allowedDomains" => network.allowed_domains.as_deref(),
                    "deniedDomains" => network.denied_domains.as_deref(),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The value of a boolean field by its key path (`["enabled"]`, `["network", "allowNetwork"]`).
    pub fn bool_field(&self, key_path: &[&str]) -> Option<bool> {
        match key_path {
            ["enabled"] => self.enabled,
            ["network", key] => {
                let network = self.network.as_ref()?;
                match *key {
                    "allowNetwork" => network.allow_network,
                    "allowLocalBinding" => network.allow_local_binding,
                    "allowAllUnixSockets" => network.allow_all_unix_sockets,
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

/// Keys of the `network` object that hold booleans.
pub const NETWORK_BOOL_KEYS: [&str; 3] =
    ["allowNetwork", "allowLocalBinding", "allowAllUnixSockets"];
/// Keys of the `network` object that hold string arrays.
pub const NETWORK_LIST_KEYS: [&str; 3] = ["allowUnixSockets", "allowedDomains", "deniedDomains"];

/// Whether `key_path` names a boolean field of the schema.
pub fn is_bool_path(key_path: &[&str]) -> bool {
    match key_path {
        ["enabled"] => true,
        ["network", key] => NETWORK_BOOL_KEYS.contains(key),
        _ => false,
    }
}

/// Whether `key_path` names a string-array field of the schema.
pub fn is_string_list_path(key_path: &[&str]) -> bool {
    match key_path {
        ["network", key] => NETWORK_LIST_KEYS.contains(key),
        ["filesystem", key] => FsList::from_json_key(key).is_some(),
        _ => false,
    }
}

/// Parse and validate the text of one sandbox.json file; `file` only labels errors.
pub fn parse_overrides(text: &str, file: &Path) -> Result<SandboxOverrides, PolicyError> {
    let value: Value = serde_json::from_str(text).map_err(|error| syntax_error(&error, file))?;
    validate(&value, file)
}

fn syntax_error(error: &serde_json::Error, file: &Path) -> PolicyError {
    let full = error.to_string();
    let suffix = format!(" at line {} column {}", error.line(), error.column());
    let message = full
        .strip_suffix(&suffix)
        .unwrap_or(&full)
        .replace('`', "'");
    PolicyError::Syntax {
        file: file.to_path_buf(),
        line: error.line(),
        column: error.column(),
        message,
    }
}

fn schema_error(file: &Path, field: &str, message: String) -> PolicyError {
    PolicyError::Schema {
        file: file.to_path_buf(),
        field: field.to_string(),
        message,
    }
}

fn unknown(file: &Path, field: &str) -> PolicyError {
    schema_error(file, field, format!("unknown field {field}"))
}

fn expect_object<'v>(
    value: &'v Value,
    file: &Path,
    field: &str,
) -> Result<&'v Map<String, Value>, PolicyError> {
    value
        .as_object()
        .ok_or_else(|| schema_error(file, field, format!("{field} must be an object")))
}

fn expect_bool(value: &Value, file: &Path, field: &str) -> Result<bool, PolicyError> {
    value
        .as_bool()
        .ok_or_else(|| schema_error(file, field, format!("{field} must be a boolean")))
}

fn expect_strings(value: &Value, file: &Path, field: &str) -> Result<Vec<String>, PolicyError> {
    let error = || schema_error(file, field, format!("{field} must be an array of strings"));
    let items = value.as_array().ok_or_else(error)?;
    items
        .iter()
        .map(|item| item.as_str().map(str::to_string).ok_or_else(error))
        .collect()
}

fn validate(value: &Value, file: &Path) -> Result<SandboxOverrides, PolicyError> {
    let root = value
        .as_object()
        .ok_or_else(|| schema_error(file, "", "sandbox config must be an object".to_string()))?;
    let mut overrides = SandboxOverrides::default();
    for (key, value) in root {
        match key.as_str() {
            "enabled" => overrides.enabled = Some(expect_bool(value, file, "enabled")?),
            "network" => overrides.network = Some(validate_network(value, file)?),
            "filesystem" => overrides.filesystem = Some(validate_filesystem(value, file)?),
            "shell" => overrides.shell = Some(validate_shell(value, file)?),
            "windows" => overrides.windows = Some(validate_windows(value, file)?),
            other => return Err(unknown(file, other)),
        }
    }
    Ok(overrides)
}

fn validate_network(value: &Value, file: &Path) -> Result<NetworkOverrides, PolicyError> {
    let object = expect_object(value, file, "network")?;
    let mut network = NetworkOverrides::default();
    for (key, value) in object {
        let field = format!("network.{key}");
        match key.as_str() {
            "allowNetwork" => network.allow_network = Some(expect_bool(value, file, &field)?),
            "allowLocalBinding" => {
                network.allow_local_binding = Some(expect_bool(value, file, &field)?);
            }
            "allowAllUnixSockets" => {
                network.allow_all_unix_sockets = Some(expect_bool(value, file, &field)?);
            }
            "allowUnixSockets" => {
                network.allow_unix_sockets = Some(expect_strings(value, file, &field)?);
            }
            "allowedDomains" => {
                network.allowed_domains = Some(expect_strings(value, file, &field)?);
            }
            "deniedDomains" => network.denied_domains = Some(expect_strings(value, file, &field)?),
            _ => return Err(unknown(file, &field)),
        }
    }
    Ok(network)
}

fn validate_filesystem(value: &Value, file: &Path) -> Result<FilesystemOverrides, PolicyError> {
    let object = expect_object(value, file, "filesystem")?;
    let mut filesystem = FilesystemOverrides::default();
    for (key, value) in object {
        let field = format!("filesystem.{key}");
        let Some(list) = FsList::from_json_key(key) else {
            return Err(unknown(file, &field));
        };
        *filesystem.get_mut(list) = Some(expect_strings(value, file, &field)?);
    }
    Ok(filesystem)
}

fn validate_shell(value: &Value, file: &Path) -> Result<ShellOverrides, PolicyError> {
    let object = expect_object(value, file, "shell")?;
    let mut shell = ShellOverrides::default();
    for (key, value) in object {
        let field = format!("shell.{key}");
        match key.as_str() {
            "readAccess" => {
                shell.read_access = Some(match value.as_str() {
                    Some("host") => ShellReadAccess::Host,
                    Some("policy") => ShellReadAccess::Policy,
                    _ => {
                        return Err(schema_error(
                            file,
                            &field,
                            format!("{field} must be \"host\" or \"policy\""),
                        ))
                    }
                });
            }
            _ => return Err(unknown(file, &field)),
        }
    }
    Ok(shell)
}

fn validate_windows(value: &Value, file: &Path) -> Result<WindowsOverrides, PolicyError> {
    let object = expect_object(value, file, "windows")?;
    let mut windows = WindowsOverrides::default();
    for (key, value) in object {
        let field = format!("windows.{key}");
        match key.as_str() {
            "appContainerMode" => {
                windows.app_container_mode = Some(match value.as_str() {
                    Some("lpac") => AppContainerMode::Lpac,
                    Some("standard") => AppContainerMode::Standard,
                    _ => {
                        return Err(schema_error(
                            file,
                            &field,
                            format!("{field} must be \"lpac\" or \"standard\""),
                        ))
                    }
                });
            }
            "allowLoopback" => windows.allow_loopback = Some(expect_bool(value, file, &field)?),
            _ => return Err(unknown(file, &field)),
        }
    }
    Ok(windows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::defaults::{defaults, BUNDLED_SANDBOX_JSON};

    const FILE: &str = "/p/.opencode/sandbox.json";

    fn parse(text: &str) -> Result<SandboxOverrides, PolicyError> {
        parse_overrides(text, Path::new(FILE))
    }

    fn schema_field(text: &str) -> (String, String) {
        match parse(text) {
            Err(PolicyError::Schema { field, message, .. }) => (field, message),
            other => panic!("expected a schema error for {text}, got {other:?}"),
        }
    }

    #[test]
    fn accepts_the_bundled_file() {
        let overrides = parse(BUNDLED_SANDBOX_JSON).expect("bundled file parses");
        let expected = defaults();
        assert_eq!(overrides.enabled, Some(true));
        let fs = overrides.filesystem.expect("filesystem");
        assert_eq!(
            fs.allow_read.as_deref(),
            Some(&expected.filesystem.allow_read[..])
        );
        assert_eq!(
            fs.deny_write.as_deref(),
            Some(&expected.filesystem.deny_write[..])
        );
        let net = overrides.network.expect("network");
        assert_eq!(net.allow_network, Some(false));
        assert_eq!(net.allowed_domains, Some(vec![]));
    }

    #[test]
    fn accepts_empty_object_and_partial_files() {
        assert_eq!(parse("{}").expect("empty"), SandboxOverrides::default());
        let o = parse(r#"{"filesystem": {"allowWrite": ["/tmp"]}}"#).expect("partial");
        assert_eq!(o.enabled, None);
        assert_eq!(o.network, None);
        let fs = o.filesystem.expect("fs");
        assert_eq!(fs.allow_write, Some(vec!["/tmp".to_string()]));
        assert_eq!(fs.allow_read, None);
    }

    #[test]
    fn rejects_unknown_fields_at_every_level() {
        assert_eq!(
            schema_field(r#"{"foo": 1}"#),
            ("foo".into(), "unknown field foo".into())
        );
        assert_eq!(
            schema_field(r#"{"network": {"foo": true}}"#),
            ("network.foo".into(), "unknown field network.foo".into())
        );
        assert_eq!(
            schema_field(r#"{"filesystem": {"allowread": []}}"#),
            (
                "filesystem.allowread".into(),
                "unknown field filesystem.allowread".into()
            )
        );
    }

    #[test]
    fn rejects_wrong_types_with_the_field_name() {
        let cases = [
            ("[]", "", "sandbox config must be an object"),
            ("null", "", "sandbox config must be an object"),
            (
                r#"{"enabled": "yes"}"#,
                "enabled",
                "enabled must be a boolean",
            ),
            (
                r#"{"enabled": null}"#,
                "enabled",
                "enabled must be a boolean",
            ),
            (r#"{"network": []}"#, "network", "network must be an object"),
            (
                r#"{"filesystem": true}"#,
                "filesystem",
                "filesystem must be an object",
            ),
            (
                r#"{"network": {"allowNetwork": 1}}"#,
                "network.allowNetwork",
                "network.allowNetwork must be a boolean",
            ),
            (
                r#"{"network": {"allowLocalBinding": "true"}}"#,
                "network.allowLocalBinding",
                "network.allowLocalBinding must be a boolean",
            ),
            (
                r#"{"network": {"allowAllUnixSockets": []}}"#,
                "network.allowAllUnixSockets",
                "network.allowAllUnixSockets must be a boolean",
            ),
            (
                r#"{"network": {"allowUnixSockets": "/x"}}"#,
                "network.allowUnixSockets",
                "network.allowUnixSockets must be an array of strings",
            ),
            (
                r#"{"network": {"allowedDomains": [1]}}"#,
                "network.allowedDomains",
                "network.allowedDomains must be an array of strings",
            ),
            (
                r#"{"network": {"deniedDomains": {}}}"#,
                "network.deniedDomains",
                "network.deniedDomains must be an array of strings",
            ),
            (
                r#"{"filesystem": {"denyRead": "/home"}}"#,
                "filesystem.denyRead",
                "filesystem.denyRead must be an array of strings",
            ),
            (
                r#"{"filesystem": {"allowRead": ["a", null]}}"#,
                "filesystem.allowRead",
                "filesystem.allowRead must be an array of strings",
            ),
            (
                r#"{"filesystem": {"allowWrite": [["a"]]}}"#,
                "filesystem.allowWrite",
                "filesystem.allowWrite must be an array of strings",
            ),
            (
                r#"{"filesystem": {"denyWrite": null}}"#,
                "filesystem.denyWrite",
                "filesystem.denyWrite must be an array of strings",
            ),
        ];
        for (text, field, message) in cases {
            assert_eq!(
                schema_field(text),
                (field.to_string(), message.to_string()),
                "{text}"
            );
        }
    }

    #[test]
    fn accepts_the_later_plugins_fields_with_their_types() {
        let o = parse(
            r#"{"shell": {"readAccess": "policy"},
                "windows": {"appContainerMode": "standard", "allowLoopback": true},
                "filesystem": {"denyReadAlways": ["~/.ssh"], "denyWriteAlways": [".git", "/etc"]}}"#,
        )
        .expect("valid for the 0.19.9 plugin");
        let fs = o.filesystem.expect("filesystem");
        assert_eq!(fs.deny_read_always, Some(vec!["~/.ssh".to_string()]));
        assert_eq!(
            fs.list(FsList::DenyWriteAlways),
            Some(&[".git".to_string(), "/etc".to_string()][..])
        );
        assert_eq!(
            o.shell.expect("shell").read_access,
            Some(ShellReadAccess::Policy)
        );
        let windows = o.windows.expect("windows");
        assert_eq!(windows.app_container_mode, Some(AppContainerMode::Standard));
        assert_eq!(windows.allow_loopback, Some(true));
        // Each field is optional, and so are the objects' contents.
        let o = parse(r#"{"shell": {}, "windows": {"appContainerMode": "lpac"}}"#).expect("valid");
        assert_eq!(o.shell, Some(ShellOverrides::default()));
        assert_eq!(
            o.windows.expect("windows").app_container_mode,
            Some(AppContainerMode::Lpac)
        );
        assert_eq!(
            parse(r#"{"shell": {"readAccess": "host"}}"#)
                .expect("valid")
                .shell,
            Some(ShellOverrides {
                read_access: Some(ShellReadAccess::Host)
            })
        );
        assert!(is_string_list_path(&["filesystem", "denyReadAlways"]));
        assert_eq!(
            FsList::from_json_key("denyWriteAlways"),
            Some(FsList::DenyWriteAlways)
        );
    }

    #[test]
    fn rejects_wrong_types_and_unknown_fields_of_the_later_plugins_objects() {
        let cases = [
            (r#"{"shell": "host"}"#, "shell", "shell must be an object"),
            (r#"{"shell": null}"#, "shell", "shell must be an object"),
            (
                r#"{"shell": {"readAccess": "all"}}"#,
                "shell.readAccess",
                r#"shell.readAccess must be "host" or "policy""#,
            ),
            (
                r#"{"shell": {"readAccess": true}}"#,
                "shell.readAccess",
                r#"shell.readAccess must be "host" or "policy""#,
            ),
            (
                r#"{"shell": {"readAccess": "Host"}}"#,
                "shell.readAccess",
                r#"shell.readAccess must be "host" or "policy""#,
            ),
            (
                r#"{"shell": {"writeAccess": "host"}}"#,
                "shell.writeAccess",
                "unknown field shell.writeAccess",
            ),
            (r#"{"windows": []}"#, "windows", "windows must be an object"),
            (
                r#"{"windows": {"appContainerMode": "full"}}"#,
                "windows.appContainerMode",
                r#"windows.appContainerMode must be "lpac" or "standard""#,
            ),
            (
                r#"{"windows": {"appContainerMode": null}}"#,
                "windows.appContainerMode",
                r#"windows.appContainerMode must be "lpac" or "standard""#,
            ),
            (
                r#"{"windows": {"allowLoopback": "yes"}}"#,
                "windows.allowLoopback",
                "windows.allowLoopback must be a boolean",
            ),
            (
                r#"{"windows": {"allowNetwork": true}}"#,
                "windows.allowNetwork",
                "unknown field windows.allowNetwork",
            ),
            (
                r#"{"filesystem": {"denyReadAlways": "~/.ssh"}}"#,
                "filesystem.denyReadAlways",
                "filesystem.denyReadAlways must be an array of strings",
            ),
            (
                r#"{"filesystem": {"denyWriteAlways": [1]}}"#,
                "filesystem.denyWriteAlways",
                "filesystem.denyWriteAlways must be an array of strings",
            ),
            (
                r#"{"filesystem": {"allowWriteAlways": []}}"#,
                "filesystem.allowWriteAlways",
                "unknown field filesystem.allowWriteAlways",
            ),
            (r#"{"proxy": {}}"#, "proxy", "unknown field proxy"),
        ];
        for (text, field, message) in cases {
            assert_eq!(
                schema_field(text),
                (field.to_string(), message.to_string()),
                "{text}"
            );
        }
    }

    #[test]
    fn schema_error_display_names_file_and_field() {
        let error = parse(r#"{"network": {"foo": 1}}"#).expect_err("invalid");
        assert_eq!(
            error.to_string(),
            "/p/.opencode/sandbox.json: unknown field network.foo"
        );
        assert_eq!(error.file(), Some(Path::new(FILE)));
    }

    #[test]
    fn syntax_errors_report_line_and_column() {
        let text = "{\n  \"enabled\": true,\n  \"network\": {} \"x\"\n}\n";
        match parse(text) {
            Err(PolicyError::Syntax {
                line,
                column,
                message,
                ..
            }) => {
                assert_eq!((line, column), (3, 17));
                assert_eq!(message, "expected ',' or '}'");
            }
            other => panic!("expected syntax error, got {other:?}"),
        }
        let error = parse(text).expect_err("invalid");
        assert_eq!(
            error.to_string(),
            "/p/.opencode/sandbox.json:3:17: expected ',' or '}'"
        );
    }

    #[test]
    fn strict_json_rejects_comments_trailing_commas_and_empty_text() {
        for text in [
            "{\"enabled\": true,}",
            "// c\n{}",
            "{\"filesystem\": {\"allowRead\": [\"a\",]}}",
            "",
            "{} {}",
        ] {
            assert!(
                matches!(parse(text), Err(PolicyError::Syntax { .. })),
                "{text:?} must be a syntax error"
            );
        }
    }

    #[test]
    fn with_file_relabels() {
        let error = parse_overrides("{", Path::new("x")).expect_err("invalid");
        let error = error.with_file(Path::new("/real/sandbox.json"));
        assert!(error.to_string().starts_with("/real/sandbox.json:1:"));
    }

    #[test]
    fn key_path_helpers() {
        assert!(is_bool_path(&["enabled"]));
        assert!(is_bool_path(&["network", "allowNetwork"]));
        assert!(!is_bool_path(&["network", "allowedDomains"]));
        assert!(is_string_list_path(&["filesystem", "allowWrite"]));
        assert!(is_string_list_path(&["network", "deniedDomains"]));
        assert!(!is_string_list_path(&["filesystem"]));
        assert_eq!(FsList::AllowWrite.json_key(), "allowWrite");
        assert_eq!(FsList::from_json_key("denyRead"), Some(FsList::DenyRead));
        let o = parse(r#"{"network": {"allowedDomains": ["a"], "allowNetwork": true}}"#)
            .expect("valid");
        assert_eq!(
            o.string_list(&["network", "allowedDomains"]),
            Some(&["a".to_string()][..])
        );
        assert_eq!(o.bool_field(&["network", "allowNetwork"]), Some(true));
        assert_eq!(o.bool_field(&["enabled"]), None);
    }
}
