//! The sandbox.json schema, validated exactly the way opencode-landstrip does:
//! strict JSON, an object root, no unknown fields, no wrong types.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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

/// The effective filesystem lists (every field present).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FilesystemConfig {
    pub deny_read: Vec<String>,
    pub allow_read: Vec<String>,
    pub allow_write: Vec<String>,
    pub deny_write: Vec<String>,
}

impl FilesystemConfig {
    /// The entries of one list.
    pub fn list(&self, list: FsList) -> &[String] {
        match list {
            FsList::DenyRead => &self.deny_read,
            FsList::AllowRead => &self.allow_read,
            FsList::AllowWrite => &self.allow_write,
            FsList::DenyWrite => &self.deny_write,
        }
    }
}

/// An effective sandbox config: defaults merged with the global and project files.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxConfig {
    pub enabled: bool,
    pub network: NetworkConfig,
    pub filesystem: FilesystemConfig,
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

/// The `filesystem` object of one file; absent fields are `None`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FilesystemOverrides {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deny_read: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_read: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_write: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deny_write: Option<Vec<String>>,
}

impl FilesystemOverrides {
    /// The entries of one list, if the file sets it.
    pub fn list(&self, list: FsList) -> Option<&[String]> {
        match list {
            FsList::DenyRead => self.deny_read.as_deref(),
            FsList::AllowRead => self.allow_read.as_deref(),
            FsList::AllowWrite => self.allow_write.as_deref(),
            FsList::DenyWrite => self.deny_write.as_deref(),
        }
    }
}

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

/// One of the four filesystem lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FsList {
    DenyRead,
    AllowRead,
    AllowWrite,
    DenyWrite,
}

impl FsList {
    /// All four lists, in the order the plugin's file lists them.
    pub const ALL: [FsList; 4] = [
        FsList::DenyRead,
        FsList::AllowRead,
        FsList::AllowWrite,
        FsList::DenyWrite,
    ];

    /// The key of this list inside the `filesystem` object.
    pub fn json_key(self) -> &'static str {
        match self {
            FsList::DenyRead => "denyRead",
            FsList::AllowRead => "allowRead",
            FsList::AllowWrite => "allowWrite",
            FsList::DenyWrite => "denyWrite",
        }
    }

    /// The list whose `filesystem` key is `key`.
    pub fn from_json_key(key: &str) -> Option<FsList> {
        FsList::ALL.into_iter().find(|list| list.json_key() == key)
    }

    /// The key path of this list in a sandbox.json file.
    pub fn key_path(self) -> [&'static str; 2] {
        ["filesystem", self.json_key()]
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
        let entries = Some(expect_strings(value, file, &field)?);
        match list {
            FsList::DenyRead => filesystem.deny_read = entries,
            FsList::AllowRead => filesystem.allow_read = entries,
            FsList::AllowWrite => filesystem.allow_write = entries,
            FsList::DenyWrite => filesystem.deny_write = entries,
        }
    }
    Ok(filesystem)
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
