//! What is in force for a project and why: the global file, the project file and the
//! effective policy (bundled defaults ← global ← project), every effective value marked
//! with the layer it comes from. The settings view's editor and `ctl policy show` read
//! this one model (docs/ARCHITECTURE.md, "Policy files").

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};

use super::cache::{read_text, PolicyPaths};
use super::change::{BoolField, ListField};
use super::explain::{explain, Explained, ListCoverage};
use super::merge::{EffectivePolicy, Source};
use super::plugin::{conflicts, PluginConflict, PluginVersion};
use super::schema::{parse_overrides, FsList, PolicyError, SandboxOverrides};
use crate::words::home_relative;

/// One sandbox.json as it is on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum FileState {
    /// No file: the layer adds nothing; it is created when something is saved into it.
    Missing,
    /// A valid file and what it sets.
    Valid {
        /// The file's text, exactly.
        text: String,
        /// What it sets.
        #[serde(deserialize_with = "validated_overrides")]
        overrides: SandboxOverrides,
    },
    /// A file that cannot be used: shown read-only with its error, never written.
    Invalid {
        /// The file's text when it could be read (for showing it).
        text: Option<String>,
        /// The error, with line and column for a syntax error.
        error: String,
        /// 1-based line of a syntax error.
        line: Option<usize>,
        /// 1-based column of a syntax error.
        column: Option<usize>,
        /// The dotted field of a schema error.
        field: Option<String>,
    },
}

/// A layer's file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileView {
    /// Its path.
    pub path: PathBuf,
    /// The path as shown (home-relative).
    pub shown: String,
    /// What it holds.
    pub state: FileState,
    /// The fields it holds that the user's opencode-landstrip rejects (or, its version
    /// unknown, may reject): every sandboxed command fails while they are there.
    #[serde(default)]
    pub plugin_conflicts: Vec<PluginConflict>,
}

impl FileView {
    fn load(path: PathBuf, home: &Path) -> Self {
        let shown = home_relative(&path, home);
        let state = match read_text(&path) {
            Ok(None) => FileState::Missing,
            Ok(Some(text)) => match parse_overrides(&text, &path) {
                Ok(overrides) => FileState::Valid { text, overrides },
                Err(e) => invalid(Some(text), &e),
            },
            Err(e) => invalid(None, &e),
        };
        Self {
            path,
            shown,
            state,
            plugin_conflicts: Vec::new(),
        }
    }

    /// Fills in [`Self::plugin_conflicts`] for the plugin detected.
    fn with_plugin(mut self, plugin: PluginVersion) -> Self {
        let text = match &self.state {
            FileState::Valid { text, .. } => Some(text),
            FileState::Invalid { text, .. } => text.as_ref(),
            FileState::Missing => None,
        };
        self.plugin_conflicts = text.map_or_else(Vec::new, |text| conflicts(text, plugin));
        self
    }

    fn overrides(&self) -> Result<Option<&SandboxOverrides>, &FileState> {
        match &self.state {
            FileState::Missing => Ok(None),
            FileState::Valid { overrides, .. } => Ok(Some(overrides)),
            invalid @ FileState::Invalid { .. } => Err(invalid),
        }
    }
}

fn invalid(text: Option<String>, e: &PolicyError) -> FileState {
    let (line, column, field) = match e {
        PolicyError::Syntax { line, column, .. } => (Some(*line), Some(*column), None),
        PolicyError::Schema { field, .. } => (None, None, Some(field.clone())),
        _ => (None, None, None),
    };
    FileState::Invalid {
        text,
        error: e.to_string(),
        line,
        column,
        field,
    }
}

/// One entry of an effective list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryView {
    /// The entry and what it means (filesystem lists; network lists are shown as they are).
    #[serde(flatten)]
    pub explained: Explained,
    /// The layer it comes from.
    pub source: Source,
    /// Another entry of the same list that already covers it.
    pub redundant_with: Option<String>,
    /// Requests it answered according to the activity log (filesystem lists, filled in by
    /// `ops::show_policy`; absent where nobody counted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hits: Option<u64>,
    /// When it last answered one (ms since the epoch); absent when it never did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_hit_ms: Option<u64>,
}

/// One effective list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListView {
    /// Which list.
    pub list: ListField,
    /// Its entries in merge order.
    pub entries: Vec<EntryView>,
}

/// One effective boolean and the layer that set it (the last one that did wins).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BoolView {
    /// Which field.
    pub field: BoolField,
    /// Its value.
    pub value: bool,
    /// Who set it.
    pub source: Source,
}

/// One field of `shell` or `windows` (the later plugin's): shown, never edited here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlatformView {
    /// Its dotted name, one of [`PLATFORM_FIELDS`] (owned only when read back from a
    /// `ctl` reply).
    pub field: Cow<'static, str>,
    /// Its value as the file spells it (`"policy"`, `true`); `None` when no layer sets it.
    pub value: Option<String>,
    /// The layer that set it last.
    pub source: Option<Source>,
}

/// The dotted names of the `shell` and `windows` fields, in the order shown.
pub const PLATFORM_FIELDS: [&str; 3] = [
    "shell.readAccess",
    "windows.appContainerMode",
    "windows.allowLoopback",
];

/// Reads a file's overrides back (a `ctl` reply) through [`parse_overrides`], the
/// validation every file passes ([`SandboxOverrides`] has no `Deserialize` of its own).
fn validated_overrides<'de, D: Deserializer<'de>>(d: D) -> Result<SandboxOverrides, D::Error> {
    let value = serde_json::Value::deserialize(d)?;
    parse_overrides(&value.to_string(), Path::new("the reply")).map_err(serde::de::Error::custom)
}

/// The effective policy, when both files are usable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EffectiveView {
    /// The booleans.
    pub fields: Vec<BoolView>,
    /// The lists.
    pub lists: Vec<ListView>,
    /// The `shell` and `windows` fields.
    pub platform: Vec<PlatformView>,
}

/// Everything in force for one project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyView {
    /// The project directory.
    pub project: PathBuf,
    /// `$XDG_CONFIG_HOME/opencode/sandbox.json` (`~/.config/…`).
    pub global: FileView,
    /// `<project>/.opencode/sandbox.json`.
    pub project_file: FileView,
    /// The merged result; `None` when a file is invalid (the plugin refuses to run then).
    pub effective: Option<EffectiveView>,
    /// The opencode-landstrip the project's opencode loads, as detected.
    #[serde(default = "unknown_plugin")]
    pub plugin: PluginVersion,
}

fn unknown_plugin() -> PluginVersion {
    PluginVersion::Unknown
}

/// Reads both files of `project` as they are now and builds the view. `path_dirs`: the
/// directories on `$PATH`, for flagging writable command directories.
pub fn policy_view(project: &Path, home: &Path, path_dirs: &[PathBuf]) -> PolicyView {
    let paths = PolicyPaths::new(home, project);
    let plugin = PluginVersion::detect(home, Some(project));
    let global = FileView::load(paths.global, home).with_plugin(plugin);
    let project_file = FileView::load(paths.project, home).with_plugin(plugin);
    let effective = match (global.overrides(), project_file.overrides()) {
        (Ok(g), Ok(p)) => Some(effective_view(
            &EffectivePolicy::layered(g, p),
            project,
            home,
            path_dirs,
        )),
        _ => None,
    };
    PolicyView {
        project: project.to_path_buf(),
        global,
        project_file,
        effective,
        plugin,
    }
}

fn effective_view(
    policy: &EffectivePolicy,
    project: &Path,
    home: &Path,
    path_dirs: &[PathBuf],
) -> EffectiveView {
    let (config, sources) = (&policy.config, &policy.sources);
    let net = &config.network;
    let fields = vec![
        BoolView {
            field: BoolField::Enabled,
            value: config.enabled,
            source: sources.enabled,
        },
        BoolView {
            field: BoolField::AllowNetwork,
            value: net.allow_network,
            source: sources.network.allow_network,
        },
        BoolView {
            field: BoolField::AllowLocalBinding,
            value: net.allow_local_binding,
            source: sources.network.allow_local_binding,
        },
        BoolView {
            field: BoolField::AllowAllUnixSockets,
            value: net.allow_all_unix_sockets,
            source: sources.network.allow_all_unix_sockets,
        },
    ];
    let lists = ListField::ALL
        .into_iter()
        .map(|list| {
            let (values, from): (&[String], &[Source]) = match list {
                ListField::Filesystem(fs) => {
                    (config.filesystem.list(fs), sources.filesystem.list(fs))
                }
                ListField::AllowUnixSockets => {
                    (&net.allow_unix_sockets, &sources.network.allow_unix_sockets)
                }
                ListField::AllowedDomains => {
                    (&net.allowed_domains, &sources.network.allowed_domains)
                }
                ListField::DeniedDomains => (&net.denied_domains, &sources.network.denied_domains),
            };
            // Each entry resolved once for the whole list, not once per pair.
            let coverage = match list {
                ListField::Filesystem(fs) => Some(ListCoverage::new(
                    fs,
                    values.iter().map(String::as_str),
                    project,
                    home,
                )),
                _ => None,
            };
            let entries = values
                .iter()
                .zip(from)
                .map(|(entry, source)| {
                    entry_view(
                        list,
                        entry,
                        *source,
                        coverage.as_ref(),
                        project,
                        home,
                        path_dirs,
                    )
                })
                .collect();
            ListView { list, entries }
        })
        .collect();
    let from = &sources.platform;
    let platform = vec![
        PlatformView {
            field: PLATFORM_FIELDS[0].into(),
            value: config.shell.read_access.map(|v| v.as_str().to_owned()),
            source: from.shell_read_access,
        },
        PlatformView {
            field: PLATFORM_FIELDS[1].into(),
            value: config
                .windows
                .app_container_mode
                .map(|v| v.as_str().to_owned()),
            source: from.windows_app_container_mode,
        },
        PlatformView {
            field: PLATFORM_FIELDS[2].into(),
            value: config.windows.allow_loopback.map(|v| v.to_string()),
            source: from.windows_allow_loopback,
        },
    ];
    EffectiveView {
        fields,
        lists,
        platform,
    }
}

fn entry_view(
    list: ListField,
    entry: &str,
    source: Source,
    coverage: Option<&ListCoverage<'_>>,
    project: &Path,
    home: &Path,
    path_dirs: &[PathBuf],
) -> EntryView {
    let redundant_with = coverage.and_then(|c| c.covering(entry)).map(str::to_owned);
    EntryView {
        explained: explain_entry(list, entry, project, home, path_dirs),
        source,
        redundant_with,
        hits: None,
        last_hit_ms: None,
    }
}

/// Any list's entry in words: filesystem entries as landstrip reads them
/// ([`explain`]), network entries as they are.
pub fn explain_entry(
    list: ListField,
    entry: &str,
    project: &Path,
    home: &Path,
    path_dirs: &[PathBuf],
) -> Explained {
    match list {
        ListField::Filesystem(fs) => explain(entry, fs, project, home, path_dirs),
        _ => Explained {
            entry: entry.to_owned(),
            resolved: entry.to_owned(),
            meaning: network_meaning(list, entry),
            broad: None,
        },
    }
}

fn network_meaning(list: ListField, entry: &str) -> String {
    match list {
        ListField::AllowUnixSockets => format!("the Unix socket {entry} may be connected to"),
        ListField::AllowedDomains => format!("{entry} may be reached through the plugin's proxy"),
        ListField::DeniedDomains => {
            format!("{entry} may not be reached through the plugin's proxy")
        }
        ListField::Filesystem(_) => entry.to_owned(),
    }
}

/// The directories on `$PATH` now.
pub fn path_dirs_from_env() -> Vec<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .filter(|d| d.is_absolute())
                .collect()
        })
        .unwrap_or_default()
}

/// The entries of one filesystem list in the view, for tests and summaries.
impl EffectiveView {
    /// The entries of `list` with their sources.
    pub fn entries(&self, list: ListField) -> Vec<(&str, Source)> {
        self.lists
            .iter()
            .filter(|l| l.list == list)
            .flat_map(|l| l.entries.iter())
            .map(|e| (e.explained.entry.as_str(), e.source))
            .collect()
    }

    /// The value and source of a boolean.
    pub fn field(&self, field: BoolField) -> Option<(bool, Source)> {
        self.fields
            .iter()
            .find(|f| f.field == field)
            .map(|f| (f.value, f.source))
    }
}

/// Shorthand for the filesystem list fields.
pub fn fs(list: FsList) -> ListField {
    ListField::Filesystem(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().canonicalize().unwrap();
        let home = base.join("home");
        let project = base.join("proj");
        std::fs::create_dir_all(home.join(".config/opencode")).unwrap();
        std::fs::create_dir_all(project.join(".opencode")).unwrap();
        (root, home, project)
    }

    #[test]
    fn every_effective_entry_names_its_layer_and_the_last_scalar_wins() {
        let (_root, home, project) = setup();
        std::fs::write(
            home.join(".config/opencode/sandbox.json"),
            r#"{"network":{"allowNetwork":true},"filesystem":{"allowWrite":["~/.cache/g"]}}"#,
        )
        .unwrap();
        std::fs::write(
            project.join(".opencode/sandbox.json"),
            r#"{"network":{"allowNetwork":false},"filesystem":{"allowWrite":["out","~/.cache/g"]}}"#,
        )
        .unwrap();
        let view = policy_view(&project, &home, &[]);
        assert!(matches!(view.global.state, FileState::Valid { .. }));
        let effective = view.effective.expect("effective");
        assert_eq!(
            effective.entries(fs(FsList::AllowWrite)),
            vec![
                (".", Source::Default),
                ("/dev/null", Source::Default),
                ("~/.cache/g", Source::Global),
                ("out", Source::Project),
            ]
        );
        assert_eq!(
            effective.field(BoolField::AllowNetwork),
            Some((false, Source::Project))
        );
        assert_eq!(
            effective.field(BoolField::Enabled),
            Some((true, Source::Default))
        );
        let out = effective
            .lists
            .iter()
            .find(|l| l.list == fs(FsList::AllowWrite))
            .and_then(|l| l.entries.iter().find(|e| e.explained.entry == "out"))
            .expect("out");
        assert_eq!(out.redundant_with.as_deref(), Some("."));
    }

    #[test]
    fn an_invalid_file_is_shown_with_its_position_and_no_effective_policy() {
        let (_root, home, project) = setup();
        let text = "{\n  \"filesystem\": {\"allowWrite\": [1]}\n}";
        std::fs::write(project.join(".opencode/sandbox.json"), text).unwrap();
        std::fs::write(home.join(".config/opencode/sandbox.json"), "{\n  oops\n}").unwrap();
        let view = policy_view(&project, &home, &[]);
        assert!(view.effective.is_none());
        match &view.global.state {
            FileState::Invalid {
                line, column, text, ..
            } => {
                assert_eq!(*line, Some(2));
                assert!(column.is_some());
                assert_eq!(text.as_deref(), Some("{\n  oops\n}"));
            }
            other => panic!("{other:?}"),
        }
        match &view.project_file.state {
            FileState::Invalid { field, .. } => {
                assert!(
                    field.as_deref().is_some_and(|f| f.contains("allowWrite")),
                    "{field:?}"
                )
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn missing_files_add_nothing() {
        let (_root, home, project) = setup();
        let view = policy_view(&project, &home, &[]);
        assert!(matches!(view.global.state, FileState::Missing));
        assert!(matches!(view.project_file.state, FileState::Missing));
        let effective = view.effective.expect("effective");
        assert!(effective
            .entries(fs(FsList::DenyWrite))
            .iter()
            .all(|(_, s)| *s == Source::Default));
        assert_eq!(view.global.shown, "~/.config/opencode/sandbox.json");
    }

    #[test]
    fn the_later_plugins_fields_are_in_the_view() {
        let (_root, home, project) = setup();
        std::fs::write(
            home.join(".config/opencode/sandbox.json"),
            r#"{"windows":{"allowLoopback":true},"filesystem":{"denyReadAlways":["~/.ssh"]}}"#,
        )
        .unwrap();
        std::fs::write(
            project.join(".opencode/sandbox.json"),
            r#"{"shell":{"readAccess":"policy"},"filesystem":{"denyWriteAlways":["locked"]}}"#,
        )
        .unwrap();
        let view = policy_view(&project, &home, &[]);
        let effective = view.effective.expect("effective");
        assert_eq!(
            effective.entries(fs(FsList::DenyWriteAlways)),
            vec![("locked", Source::Project)]
        );
        assert_eq!(
            effective.entries(fs(FsList::DenyReadAlways)),
            vec![("~/.ssh", Source::Global)]
        );
        let field = |name: &str| {
            effective
                .platform
                .iter()
                .find(|p| p.field == name)
                .cloned()
                .expect(name)
        };
        assert_eq!(field("shell.readAccess").value.as_deref(), Some("policy"));
        assert_eq!(field("shell.readAccess").source, Some(Source::Project));
        assert_eq!(
            field("windows.allowLoopback").value.as_deref(),
            Some("true")
        );
        assert_eq!(field("windows.appContainerMode").value, None);
        assert_eq!(field("windows.appContainerMode").source, None);
        // The file's own view carries them for the editor's read-only lines.
        let json = serde_json::to_value(&view.project_file).unwrap();
        assert_eq!(json["state"]["overrides"]["shell"]["readAccess"], "policy");
    }
}
