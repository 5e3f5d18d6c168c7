//! Which opencode-landstrip the user's opencode loads, and the sandbox.json fields it
//! rejects (docs/ARCHITECTURE.md, "The plugin's version"). opencode-landstrip 0.19.1
//! validates sandbox.json strictly and throws "unknown sandbox field" for the fields its
//! later releases added (`filesystem.denyReadAlways`, `filesystem.denyWriteAlways`,
//! `shell`, `windows`), so a file this app accepts can break every sandboxed command.
//!
//! The lookup is bounded: at most six opencode config files (global and project
//! `opencode.json` / `opencode.jsonc`), each read only up to [`CONFIG_CAP`], and one
//! `package.json` of opencode's package cache up to [`PACKAGE_CAP`]; nothing is listed or
//! walked. Whatever cannot be read or parsed counts as not naming the plugin.

use std::ffi::OsStr;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::cache::global_path;
use super::schema::FsList;

/// The plugin's npm name.
pub const PLUGIN_NAME: &str = "opencode-landstrip";

/// The first release known to accept the later fields (the schema `policy/schema.rs`
/// follows); every earlier one is taken to reject them, as 0.19.1 does.
pub const ACCEPTS_LATER_FIELDS: Version = Version {
    major: 0,
    minor: 19,
    patch: 9,
};

/// An opencode config file larger than this is not read (opencode's are a few KiB).
pub const CONFIG_CAP: u64 = 256 * 1024;

/// A package.json larger than this is not read.
pub const PACKAGE_CAP: u64 = 64 * 1024;

/// A release number, `MAJOR.MINOR.PATCH` (a pre-release suffix is ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Major.
    pub major: u64,
    /// Minor.
    pub minor: u64,
    /// Patch.
    pub patch: u64,
}

impl FromStr for Version {
    type Err = ();

    fn from_str(text: &str) -> Result<Self, ()> {
        let core = text.split(['-', '+']).next().unwrap_or_default();
        let mut parts = core.split('.').map(|p| p.parse::<u64>().map_err(|_| ()));
        let version = Version {
            major: parts.next().ok_or(())??,
            minor: parts.next().ok_or(())??,
            patch: parts.next().ok_or(())??,
        };
        match parts.next() {
            None => Ok(version),
            Some(_) => Err(()),
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl Serialize for Version {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse()
            .map_err(|()| serde::de::Error::custom(format!("{text:?} is not a version")))
    }
}

/// A field of sandbox.json that opencode-landstrip's later releases added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LaterField {
    /// `filesystem.denyReadAlways`.
    DenyReadAlways,
    /// `filesystem.denyWriteAlways`.
    DenyWriteAlways,
    /// `shell`.
    Shell,
    /// `windows`.
    Windows,
}

impl LaterField {
    /// Every later field, in the order shown.
    pub const ALL: [LaterField; 4] = [
        LaterField::DenyReadAlways,
        LaterField::DenyWriteAlways,
        LaterField::Shell,
        LaterField::Windows,
    ];

    /// The keys leading to it.
    pub fn key_path(self) -> &'static [&'static str] {
        match self {
            LaterField::DenyReadAlways => &["filesystem", "denyReadAlways"],
            LaterField::DenyWriteAlways => &["filesystem", "denyWriteAlways"],
            LaterField::Shell => &["shell"],
            LaterField::Windows => &["windows"],
        }
    }

    /// Its dotted name, as the plugin's error names it.
    pub fn name(self) -> String {
        self.key_path().join(".")
    }

    /// The later field a filesystem list is, if it is one.
    pub fn of_list(list: FsList) -> Option<LaterField> {
        match list {
            FsList::DenyReadAlways => Some(LaterField::DenyReadAlways),
            FsList::DenyWriteAlways => Some(LaterField::DenyWriteAlways),
            _ => None,
        }
    }
}

impl fmt::Display for LaterField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// `denyReadAlways` or `filesystem.denyReadAlways`, `shell`, `windows`.
impl FromStr for LaterField {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        LaterField::ALL
            .into_iter()
            .find(|f| name == f.name() || f.key_path().last().is_some_and(|last| name == *last))
            .ok_or_else(|| {
                format!(
                    "{name:?} is not a field the plugin's later releases added (one of: {})",
                    LaterField::ALL.map(LaterField::name).join(", ")
                )
            })
    }
}

impl Serialize for LaterField {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for LaterField {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// The opencode-landstrip the user's opencode loads, as far as its config and cache say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "state", content = "version")]
pub enum PluginVersion {
    /// A config names the plugin and its version is known (pinned, or its cached package).
    Known(Version),
    /// No config names a version (e.g. a `landstrip-tray run` user, or an unpinned entry
    /// with nothing cached).
    Unknown,
}

impl PluginVersion {
    /// True when this plugin throws "unknown sandbox field" for `field`.
    pub fn rejects(self, _field: LaterField) -> bool {
        // Every later field arrived in the same release.
        matches!(self, PluginVersion::Known(v) if v < ACCEPTS_LATER_FIELDS)
    }

    /// True when it may, for all anyone knows: the version is unknown.
    pub fn may_reject(self, _field: LaterField) -> bool {
        self == PluginVersion::Unknown
    }

    /// The version opencode loads for `project` (`None`: no project, the global config
    /// only), from the environment's config and cache directories for `home`.
    pub fn detect(home: &Path, project: Option<&Path>) -> PluginVersion {
        let config = global_path(home)
            .parent()
            .map_or_else(|| home.join(".config/opencode"), Path::to_path_buf);
        let cache = cache_home_from(
            home,
            std::env::var_os("HOME").as_deref(),
            std::env::var_os("XDG_CACHE_HOME").as_deref(),
        );
        detect_in(&config, &cache.join("opencode"), project)
    }
}

/// `$XDG_CACHE_HOME` (`~/.cache`), by the rule `policy::global_path_from` applies to
/// `$XDG_CONFIG_HOME`: the variable only describes the home the environment names.
fn cache_home_from(home: &Path, env_home: Option<&OsStr>, xdg_cache: Option<&OsStr>) -> PathBuf {
    let own_home = env_home
        .filter(|h| !h.is_empty())
        .is_none_or(|h| Path::new(h) == home);
    match xdg_cache.map(Path::new) {
        Some(cache) if own_home && cache.is_absolute() => cache.to_path_buf(),
        _ => home.join(".cache"),
    }
}

/// [`PluginVersion::detect`] with opencode's global config directory and its cache
/// directory (`…/opencode`) given. opencode reads the global config first, then the
/// project's, then the project's `.opencode/`; the last file that names the plugin wins.
pub fn detect_in(config_dir: &Path, cache_dir: &Path, project: Option<&Path>) -> PluginVersion {
    let mut files: Vec<PathBuf> = Vec::with_capacity(6);
    let mut dirs = vec![config_dir.to_path_buf()];
    if let Some(project) = project {
        dirs.push(project.to_path_buf());
        dirs.push(project.join(".opencode"));
    }
    for dir in dirs {
        files.push(dir.join("opencode.json"));
        files.push(dir.join("opencode.jsonc"));
    }
    let spec = files
        .iter()
        .filter_map(|file| plugin_spec(file))
        .next_back();
    let Some(spec) = spec else {
        return PluginVersion::Unknown;
    };
    // What opencode installed for the entry is what it loads.
    let tag = spec.as_deref().unwrap_or("latest");
    let package = cache_dir
        .join("packages")
        .join(format!("{PLUGIN_NAME}@{tag}"));
    let cached = [
        package
            .join("node_modules")
            .join(PLUGIN_NAME)
            .join("package.json"),
        package.join("package.json"),
    ]
    .iter()
    .find_map(|file| cached_version(file));
    match cached.or_else(|| spec.and_then(|s| s.parse().ok())) {
        Some(version) => PluginVersion::Known(version),
        None => PluginVersion::Unknown,
    }
}

/// The version part of the plugin's entry in `file`'s `plugin` (1.x) or `plugins` (2.x)
/// array: `Some(None)` for an entry without one, `None` when the file names no plugin
/// (or cannot be read).
fn plugin_spec(file: &Path) -> Option<Option<String>> {
    let text = read_capped(file, CONFIG_CAP)?;
    let value: Value = serde_json::from_str(&strip_jsonc(&text)).ok()?;
    let mut found = None;
    for key in ["plugin", "plugins"] {
        let Some(entries) = value.get(key).and_then(Value::as_array) else {
            continue;
        };
        for entry in entries {
            // "name@version", ["name@version", {options}], or {"name": …, "version": …}.
            let spec = match entry {
                Value::String(s) => Some(s.as_str()),
                Value::Array(items) => items.first().and_then(Value::as_str),
                Value::Object(o) => o
                    .get("name")
                    .or_else(|| o.get("package"))
                    .and_then(Value::as_str),
                _ => None,
            };
            let Some(spec) = spec else { continue };
            let spec = spec.strip_prefix("npm:").unwrap_or(spec);
            let (name, version) = match spec.rfind('@') {
                Some(at) if at > 0 => (&spec[..at], Some(spec[at + 1..].to_owned())),
                _ => (spec, None),
            };
            if name != PLUGIN_NAME {
                continue;
            }
            let version = version.or_else(|| {
                entry
                    .get("version")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
            found = Some(version);
        }
    }
    found
}

fn cached_version(file: &Path) -> Option<Version> {
    let text = read_capped(file, PACKAGE_CAP)?;
    let value: Value = serde_json::from_str(&text).ok()?;
    if value.get("name").and_then(Value::as_str) != Some(PLUGIN_NAME) {
        return None;
    }
    value.get("version")?.as_str()?.parse().ok()
}

/// The file's text, or `None` when it is missing, unreadable, not UTF-8 or over `cap`.
fn read_capped(file: &Path, cap: u64) -> Option<String> {
    let mut text = String::new();
    std::fs::File::open(file)
        .ok()?
        .take(cap + 1)
        .read_to_string(&mut text)
        .ok()?;
    (text.len() as u64 <= cap).then_some(text)
}

/// JSONC as opencode reads it made JSON: `//` and `/* */` comments and trailing commas
/// outside strings dropped. Never fails; what is left may still not parse.
pub fn strip_jsonc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => out.extend(chars.next()),
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                out.push(' ');
            }
            ('}' | ']', _) => {
                let kept = out.trim_end().len();
                if out[..kept].ends_with(',') {
                    out.truncate(kept - 1);
                }
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// The later fields a sandbox.json's text holds (a file that does not parse holds none
/// as far as this says; its own error is shown).
pub fn later_fields_in(text: &str) -> Vec<LaterField> {
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    LaterField::ALL
        .into_iter()
        .filter(|field| {
            field
                .key_path()
                .iter()
                .try_fold(&value, |v, key| v.get(key))
                .is_some()
        })
        .collect()
}

/// A later field a file holds and what the plugin does with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginConflict {
    /// The field.
    pub field: LaterField,
    /// The plugin as detected.
    pub plugin: PluginVersion,
    /// True when the detected plugin rejects it; false when the version is unknown and
    /// it only may.
    pub rejected: bool,
}

impl fmt::Display for PluginConflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let field = self.field;
        match self.plugin {
            PluginVersion::Known(v) if self.rejected => write!(
                f,
                "this file uses {field}, which your {PLUGIN_NAME} ({v}) rejects: every sandboxed \
                 command will fail until you remove it or update the plugin"
            ),
            _ => write!(
                f,
                "this file uses {field}: if your {PLUGIN_NAME} is older than \
                 {ACCEPTS_LATER_FIELDS} it rejects {field}, and every sandboxed command fails \
                 until you remove it or update the plugin"
            ),
        }
    }
}

/// What `plugin` says about a file whose text is `text`: one conflict per later field it
/// holds that the plugin rejects or, unknown, may reject.
pub fn conflicts(text: &str, plugin: PluginVersion) -> Vec<PluginConflict> {
    later_fields_in(text)
        .into_iter()
        .filter(|&field| plugin.rejects(field) || plugin.may_reject(field))
        .map(|field| PluginConflict {
            field,
            plugin,
            rejected: plugin.rejects(field),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        text.parse().expect("a version")
    }

    struct Dirs {
        _root: tempfile::TempDir,
        config: PathBuf,
        cache: PathBuf,
        project: PathBuf,
    }

    fn dirs() -> Dirs {
        let root = tempfile::tempdir().expect("tempdir");
        let config = root.path().join("config/opencode");
        let cache = root.path().join("cache/opencode");
        let project = root.path().join("p");
        for dir in [&config, &cache, &project] {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        Dirs {
            _root: root,
            config,
            cache,
            project,
        }
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    impl Dirs {
        fn detect(&self) -> PluginVersion {
            detect_in(&self.config, &self.cache, Some(&self.project))
        }

        fn cache_package(&self, tag: &str, version: &str) {
            write(
                &self.cache.join(format!(
                    "packages/{PLUGIN_NAME}@{tag}/node_modules/{PLUGIN_NAME}/package.json"
                )),
                &format!(r#"{{"name": "{PLUGIN_NAME}", "version": "{version}"}}"#),
            );
        }
    }

    #[test]
    fn versions_parse_and_order() {
        assert_eq!(v("0.19.1").to_string(), "0.19.1");
        assert_eq!(v("0.19.9-beta.1"), v("0.19.9"));
        assert!(v("0.19.1") < ACCEPTS_LATER_FIELDS && v("0.20.0") > ACCEPTS_LATER_FIELDS);
        for bad in ["latest", "0.19", "^0.19.1", "0.19.1.2", ""] {
            assert!(bad.parse::<Version>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_installers_project_entry_names_the_version() {
        let d = dirs();
        assert_eq!(d.detect(), PluginVersion::Unknown, "nothing names it");
        // What `opencode plugin opencode-landstrip@0.19.1` writes (opencode 1.18.33).
        write(
            &d.project.join(".opencode/opencode.json"),
            "{\n  \"plugin\": [\n    \"opencode-landstrip@0.19.1\"\n  ]\n}",
        );
        assert_eq!(d.detect(), PluginVersion::Known(v("0.19.1")));
        assert!(d.detect().rejects(LaterField::DenyReadAlways));
        // The global config alone does not see a project's entry.
        assert_eq!(detect_in(&d.config, &d.cache, None), PluginVersion::Unknown);
    }

    #[test]
    fn jsonc_with_comments_and_trailing_commas_is_read() {
        let d = dirs();
        write(
            &d.config.join("opencode.jsonc"),
            "{\n  // the sandbox\n  \"plugins\": [\n    /* pinned */ \"opencode-landstrip@0.19.9\", // ok\n  ],\n  \"x\": \"a // not a comment, \\\"]\",\n}\n",
        );
        assert_eq!(
            detect_in(&d.config, &d.cache, None),
            PluginVersion::Known(v("0.19.9"))
        );
        assert!(!PluginVersion::Known(v("0.19.9")).rejects(LaterField::Shell));
    }

    #[test]
    fn the_project_overrides_the_global_and_other_plugins_are_ignored() {
        let d = dirs();
        write(
            &d.config.join("opencode.json"),
            r#"{"plugin": ["opencode-landstrip@0.19.9", "other@1.0.0"]}"#,
        );
        write(
            &d.project.join("opencode.json"),
            r#"{"plugin": [["opencode-landstrip@0.19.1", {"x": 1}], "opencode-landstripper@9.9.9"]}"#,
        );
        assert_eq!(d.detect(), PluginVersion::Known(v("0.19.1")));
    }

    #[test]
    fn an_unpinned_entry_is_known_from_the_cached_package() {
        let d = dirs();
        write(
            &d.config.join("opencode.json"),
            r#"{"plugin": ["opencode-landstrip"]}"#,
        );
        assert_eq!(d.detect(), PluginVersion::Unknown, "nothing cached");
        d.cache_package("latest", "0.19.1");
        assert_eq!(d.detect(), PluginVersion::Known(v("0.19.1")));
        // A pinned entry's cached package is what runs.
        write(
            &d.project.join(".opencode/opencode.jsonc"),
            r#"{"plugin": ["opencode-landstrip@0.19.9"]}"#,
        );
        d.cache_package("0.19.9", "0.19.9");
        assert_eq!(d.detect(), PluginVersion::Known(v("0.19.9")));
    }

    #[test]
    fn unreadable_or_oversized_configs_name_nothing() {
        let d = dirs();
        write(
            &d.config.join("opencode.json"),
            "{\"plugin\": [\"opencode-landstrip@0.19.1\"",
        );
        assert_eq!(d.detect(), PluginVersion::Unknown);
        let big = format!(
            "{{\"plugin\": [\"opencode-landstrip@0.19.1\"], \"pad\": \"{}\"}}",
            "x".repeat(CONFIG_CAP as usize)
        );
        write(&d.config.join("opencode.json"), &big);
        assert_eq!(d.detect(), PluginVersion::Unknown);
    }

    #[test]
    fn conflicts_name_the_later_fields_a_file_holds() {
        let text = r#"{"filesystem": {"allowWrite": ["x"], "denyReadAlways": []}, "shell": {}}"#;
        let old = PluginVersion::Known(v("0.19.1"));
        let found = conflicts(text, old);
        assert_eq!(
            found.iter().map(|c| c.field).collect::<Vec<_>>(),
            [LaterField::DenyReadAlways, LaterField::Shell]
        );
        assert!(found.iter().all(|c| c.rejected));
        assert_eq!(
            found[0].to_string(),
            "this file uses filesystem.denyReadAlways, which your opencode-landstrip (0.19.1) \
             rejects: every sandboxed command will fail until you remove it or update the plugin"
        );
        let unknown = conflicts(text, PluginVersion::Unknown);
        assert!(unknown.iter().all(|c| !c.rejected), "{unknown:?}");
        assert!(unknown[0].to_string().contains("older than 0.19.9"));
        assert!(conflicts(text, PluginVersion::Known(v("0.19.9"))).is_empty());
        assert!(conflicts(r#"{"filesystem": {"allowWrite": ["x"]}}"#, old).is_empty());
    }
}
