//! Merging layers (defaults ← global ← project) and recording where every
//! value of the result came from.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::defaults::defaults;
use super::fs_list::{FsList, FsLists};
use super::schema::{SandboxConfig, SandboxOverrides};

/// The layer a value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Source {
    Default,
    Global,
    Project,
}

/// Which layer set each network scalar, and where each array entry came from
/// (parallel to the arrays of the effective config).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkSources {
    pub allow_network: Source,
    pub allow_local_binding: Source,
    pub allow_all_unix_sockets: Source,
    pub allow_unix_sockets: Vec<Source>,
    pub allowed_domains: Vec<Source>,
    pub denied_domains: Vec<Source>,
}

/// Where each filesystem entry came from (parallel to the effective lists).
pub type FilesystemSources = FsLists<Vec<Source>>;

/// Which layer last set each field of `shell` and `windows` (`None`: no layer did, the
/// plugin's default applies).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlatformSources {
    pub shell_read_access: Option<Source>,
    pub windows_app_container_mode: Option<Source>,
    pub windows_allow_loopback: Option<Source>,
}

/// Provenance of every value of an effective config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicySources {
    pub enabled: Source,
    pub network: NetworkSources,
    pub filesystem: FilesystemSources,
    /// The `shell` and `windows` fields.
    #[serde(default)]
    pub platform: PlatformSources,
}

/// An effective config together with where each of its values came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EffectivePolicy {
    pub config: SandboxConfig,
    pub sources: PolicySources,
}

/// Drop later duplicates from `values` (keeping `sources` parallel).
fn dedup_in_place(values: &mut Vec<String>, sources: &mut Vec<Source>) {
    let mut seen = HashSet::new();
    let mut keep = Vec::with_capacity(values.len());
    for value in values.iter() {
        keep.push(seen.insert(value.clone()));
    }
    let mut flags = keep.iter();
    values.retain(|_| flags.next().copied().unwrap_or(false));
    let mut flags = keep.iter();
    sources.retain(|_| flags.next().copied().unwrap_or(false));
}

/// Union `extra` into `values` in order, skipping entries already present.
fn union_into(
    values: &mut Vec<String>,
    sources: &mut Vec<Source>,
    extra: Option<&[String]>,
    source: Source,
) {
    let Some(extra) = extra else { return };
    let mut seen: HashSet<String> = values.iter().cloned().collect();
    for entry in extra {
        if seen.insert(entry.clone()) {
            values.push(entry.clone());
            sources.push(source);
        }
    }
}

fn set_scalar(value: &mut bool, from: &mut Source, new: Option<bool>, source: Source) {
    if let Some(new) = new {
        *value = new;
        *from = source;
    }
}

/// A scalar the defaults leave unset: later wins, the layer recorded.
fn set_option<T: Copy>(
    value: &mut Option<T>,
    from: &mut Option<Source>,
    new: Option<T>,
    source: Source,
) {
    if new.is_some() {
        *value = new;
        *from = Some(source);
    }
}

impl EffectivePolicy {
    /// A policy whose every value comes from `source`, duplicates in arrays dropped.
    pub fn from_config(mut config: SandboxConfig, source: Source) -> Self {
        let all = |values: &Vec<String>| vec![source; values.len()];
        let mut sources = PolicySources {
            enabled: source,
            network: NetworkSources {
                allow_network: source,
                allow_local_binding: source,
                allow_all_unix_sockets: source,
                allow_unix_sockets: all(&config.network.allow_unix_sockets),
                allowed_domains: all(&config.network.allowed_domains),
                denied_domains: all(&config.network.denied_domains),
            },
            filesystem: config.filesystem.map(|_, values| all(values)),
            platform: PlatformSources {
                shell_read_access: config.shell.read_access.map(|_| source),
                windows_app_container_mode: config.windows.app_container_mode.map(|_| source),
                windows_allow_loopback: config.windows.allow_loopback.map(|_| source),
            },
        };
        let (net, net_src) = (&mut config.network, &mut sources.network);
        dedup_in_place(&mut net.allow_unix_sockets, &mut net_src.allow_unix_sockets);
        dedup_in_place(&mut net.allowed_domains, &mut net_src.allowed_domains);
        dedup_in_place(&mut net.denied_domains, &mut net_src.denied_domains);
        let (fs, fs_src) = (&mut config.filesystem, &mut sources.filesystem);
        for list in FsList::ALL {
            dedup_in_place(fs.get_mut(list), fs_src.get_mut(list));
        }
        Self { config, sources }
    }

    /// The bundled defaults, all attributed to [`Source::Default`].
    pub fn defaults() -> Self {
        Self::from_config(defaults(), Source::Default)
    }

    /// Defaults ← global ← project (missing files are `None`).
    pub fn layered(global: Option<&SandboxOverrides>, project: Option<&SandboxOverrides>) -> Self {
        let mut policy = Self::defaults();
        if let Some(global) = global {
            policy.apply(global, Source::Global);
        }
        if let Some(project) = project {
            policy.apply(project, Source::Project);
        }
        policy
    }

    /// Merge one file's overrides on top (arrays unioned, scalars replaced when set).
    pub fn apply(&mut self, overrides: &SandboxOverrides, source: Source) {
        set_scalar(
            &mut self.config.enabled,
            &mut self.sources.enabled,
            overrides.enabled,
            source,
        );
        if let Some(network) = &overrides.network {
            let (net, src) = (&mut self.config.network, &mut self.sources.network);
            set_scalar(
                &mut net.allow_network,
                &mut src.allow_network,
                network.allow_network,
                source,
            );
            set_scalar(
                &mut net.allow_local_binding,
                &mut src.allow_local_binding,
                network.allow_local_binding,
                source,
            );
            set_scalar(
                &mut net.allow_all_unix_sockets,
                &mut src.allow_all_unix_sockets,
                network.allow_all_unix_sockets,
                source,
            );
            union_into(
                &mut net.allow_unix_sockets,
                &mut src.allow_unix_sockets,
                network.allow_unix_sockets.as_deref(),
                source,
            );
            union_into(
                &mut net.allowed_domains,
                &mut src.allowed_domains,
                network.allowed_domains.as_deref(),
                source,
            );
            union_into(
                &mut net.denied_domains,
                &mut src.denied_domains,
                network.denied_domains.as_deref(),
                source,
            );
        }
        if let Some(filesystem) = &overrides.filesystem {
            let (fs, src) = (&mut self.config.filesystem, &mut self.sources.filesystem);
            for list in FsList::ALL {
                union_into(
                    fs.get_mut(list),
                    src.get_mut(list),
                    filesystem.list(list),
                    source,
                );
            }
        }
        let platform = &mut self.sources.platform;
        if let Some(shell) = &overrides.shell {
            set_option(
                &mut self.config.shell.read_access,
                &mut platform.shell_read_access,
                shell.read_access,
                source,
            );
        }
        if let Some(windows) = &overrides.windows {
            let config = &mut self.config.windows;
            set_option(
                &mut config.app_container_mode,
                &mut platform.windows_app_container_mode,
                windows.app_container_mode,
                source,
            );
            set_option(
                &mut config.allow_loopback,
                &mut platform.windows_allow_loopback,
                windows.allow_loopback,
                source,
            );
        }
    }

    /// The entries of one filesystem list with the layer each came from.
    pub fn fs_entries(&self, list: FsList) -> impl Iterator<Item = (&str, Source)> + '_ {
        fs_entries(&self.config, &self.sources, list)
    }

    /// The layer an entry of a filesystem list came from, if it is in the list.
    pub fn fs_entry_source(&self, list: FsList, entry: &str) -> Option<Source> {
        self.fs_entries(list)
            .find(|(value, _)| *value == entry)
            .map(|(_, source)| source)
    }
}

/// The entries of one filesystem list of `config` paired with their sources.
pub fn fs_entries<'a>(
    config: &'a SandboxConfig,
    sources: &'a PolicySources,
    list: FsList,
) -> impl Iterator<Item = (&'a str, Source)> + 'a {
    config
        .filesystem
        .list(list)
        .iter()
        .map(String::as_str)
        .zip(sources.filesystem.list(list).iter().copied())
}

/// Merge one file's overrides onto `base` (arrays unioned in order, scalars: later wins).
pub fn merge(base: &SandboxConfig, overrides: &SandboxOverrides) -> SandboxConfig {
    let mut policy = EffectivePolicy::from_config(base.clone(), Source::Default);
    policy.apply(overrides, Source::Project);
    policy.config
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::schema::parse_overrides;
    use std::path::Path;

    fn overrides(text: &str) -> SandboxOverrides {
        parse_overrides(text, Path::new("test.json")).expect("valid")
    }

    #[test]
    fn arrays_union_in_order_without_duplicates() {
        let global = overrides(r#"{"filesystem": {"allowWrite": ["/tmp", ".", "/var/x"]}}"#);
        let project = overrides(r#"{"filesystem": {"allowWrite": ["/var/x", "b", "b", "/tmp"]}}"#);
        let policy = EffectivePolicy::layered(Some(&global), Some(&project));
        assert_eq!(
            policy.config.filesystem.allow_write,
            [".", "/dev/null", "/tmp", "/var/x", "b"]
        );
        assert_eq!(
            policy.sources.filesystem.allow_write,
            [
                Source::Default,
                Source::Default,
                Source::Global,
                Source::Global,
                Source::Project
            ]
        );
        // Untouched lists keep the defaults.
        assert_eq!(policy.config.filesystem.deny_read, ["/Users", "/home"]);
    }

    #[test]
    fn scalars_later_wins_and_missing_keeps_earlier() {
        let global = overrides(r#"{"enabled": false, "network": {"allowNetwork": true}}"#);
        let project =
            overrides(r#"{"network": {"allowNetwork": false, "allowLocalBinding": true}}"#);
        let policy = EffectivePolicy::layered(Some(&global), Some(&project));
        assert!(!policy.config.enabled);
        assert_eq!(policy.sources.enabled, Source::Global);
        assert!(!policy.config.network.allow_network);
        assert_eq!(policy.sources.network.allow_network, Source::Project);
        assert!(policy.config.network.allow_local_binding);
        assert_eq!(policy.sources.network.allow_local_binding, Source::Project);
        assert!(!policy.config.network.allow_all_unix_sockets);
        assert_eq!(
            policy.sources.network.allow_all_unix_sockets,
            Source::Default
        );
    }

    #[test]
    fn provenance_of_entries() {
        let global = overrides(
            r#"{"network": {"allowedDomains": ["a.com"]}, "filesystem": {"allowRead": ["~/.cargo"]}}"#,
        );
        let project = overrides(
            r#"{"network": {"allowedDomains": ["b.com", "a.com"]}, "filesystem": {"allowRead": ["/opt/x", "."]}}"#,
        );
        let policy = EffectivePolicy::layered(Some(&global), Some(&project));
        let read: Vec<_> = policy.fs_entries(FsList::AllowRead).collect();
        assert_eq!(
            read,
            [
                (".", Source::Default),
                ("~/.gitconfig", Source::Default),
                ("~/.config/git/config", Source::Default),
                ("/dev/null", Source::Default),
                ("~/.cargo", Source::Global),
                ("/opt/x", Source::Project),
            ]
        );
        assert_eq!(
            policy.fs_entry_source(FsList::AllowRead, "~/.cargo"),
            Some(Source::Global)
        );
        assert_eq!(policy.fs_entry_source(FsList::AllowRead, "/nope"), None);
        assert_eq!(policy.config.network.allowed_domains, ["a.com", "b.com"]);
        assert_eq!(
            policy.sources.network.allowed_domains,
            [Source::Global, Source::Project]
        );
    }

    #[test]
    fn the_always_lists_union_and_shell_and_windows_are_last_wins() {
        let global = overrides(
            r#"{"filesystem": {"denyWriteAlways": [".git", "/etc"], "denyReadAlways": ["~/.ssh"]},
                "shell": {"readAccess": "policy"}, "windows": {"allowLoopback": true}}"#,
        );
        let project = overrides(
            r#"{"filesystem": {"denyWriteAlways": ["/etc", "secrets"]},
                "shell": {"readAccess": "host"}, "windows": {"appContainerMode": "lpac"}}"#,
        );
        let policy = EffectivePolicy::layered(Some(&global), Some(&project));
        let fs = &policy.config.filesystem;
        assert_eq!(fs.deny_write_always, [".git", "/etc", "secrets"]);
        assert_eq!(
            policy.sources.filesystem.deny_write_always,
            [Source::Global, Source::Global, Source::Project]
        );
        assert_eq!(fs.deny_read_always, ["~/.ssh"]);
        assert_eq!(policy.sources.filesystem.deny_read_always, [Source::Global]);
        assert_eq!(
            policy.config.shell.read_access,
            Some(crate::policy::schema::ShellReadAccess::Host)
        );
        let platform = &policy.sources.platform;
        assert_eq!(platform.shell_read_access, Some(Source::Project));
        assert_eq!(policy.config.windows.allow_loopback, Some(true));
        assert_eq!(platform.windows_allow_loopback, Some(Source::Global));
        assert_eq!(platform.windows_app_container_mode, Some(Source::Project));
        // Nobody sets them: unset, the plugin's defaults apply.
        let none = EffectivePolicy::layered(None, None);
        assert_eq!(none.config.shell.read_access, None);
        assert_eq!(none.sources.platform, PlatformSources::default());
        assert!(none.config.filesystem.deny_write_always.is_empty());
    }

    #[test]
    fn no_files_is_the_defaults() {
        let policy = EffectivePolicy::layered(None, None);
        assert_eq!(policy.config, defaults());
        assert!(policy
            .sources
            .filesystem
            .deny_write
            .iter()
            .all(|s| *s == Source::Default));
    }

    #[test]
    fn merge_function_matches_layering() {
        let project =
            overrides(r#"{"enabled": false, "filesystem": {"denyRead": ["/home", "/srv"]}}"#);
        let merged = merge(&defaults(), &project);
        assert!(!merged.enabled);
        assert_eq!(merged.filesystem.deny_read, ["/Users", "/home", "/srv"]);
        assert_eq!(
            merged,
            EffectivePolicy::layered(None, Some(&project)).config
        );
    }
}
