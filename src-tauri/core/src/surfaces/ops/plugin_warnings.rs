//! The policy files of the served projects that hold fields the user's opencode-landstrip
//! rejects (docs/ARCHITECTURE.md, "The plugin's version"): what the welcome window warns
//! about, each with the file to pass to `ctl policy remove-field`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::PolicyFile;
use crate::policy::cache::read_text;
use crate::policy::plugin::{conflicts, LaterField, PluginConflict, PluginVersion};
use crate::serving::service::Service;
use crate::words::home_relative;

/// One file and the fields of it the plugin rejects (or may).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginWarning {
    /// Which file, as `ctl policy remove-field` names it.
    pub file: PolicyFile,
    /// Its path as shown (home-relative).
    pub shown: String,
    /// The fields.
    pub conflicts: Vec<PluginConflict>,
}

/// Every served project's file, and the global file once, that holds a later field the
/// plugin its opencode loads rejects or, unknown, may reject. The global file is judged
/// by the most certain verdict among the projects (a rejecting plugin anywhere breaks it
/// there), or by the global config alone when nothing is served.
pub fn plugin_warnings(service: &Service) -> Vec<PluginWarning> {
    let home = service.home();
    let mut warnings = Vec::new();
    let projects: Vec<PathBuf> = service.list().into_iter().map(|p| p.dir).collect();
    let mut plugins = Vec::new();
    for dir in projects {
        let plugin = PluginVersion::detect(home, Some(&dir));
        plugins.push(plugin);
        warnings.extend(warning(service, PolicyFile::Project(dir), plugin));
    }
    let global = global_plugin(service, plugins);
    warnings.extend(warning(service, PolicyFile::Global, global));
    warnings
}

/// The conflicts of one file as it is on disk now, judged by the plugin that loads it
/// (the same judgement [`plugin_warnings`] makes): what an edit's reply warns about.
pub fn file_conflicts(service: &Service, file: &PolicyFile) -> Vec<PluginConflict> {
    let home = service.home();
    let plugin = match file {
        PolicyFile::Project(dir) => PluginVersion::detect(home, Some(dir)),
        PolicyFile::Global => {
            let plugins = service
                .list()
                .into_iter()
                .map(|p| PluginVersion::detect(home, Some(&p.dir)))
                .collect();
            global_plugin(service, plugins)
        }
    };
    warning(service, file.clone(), plugin)
        .map(|w| w.conflicts)
        .unwrap_or_default()
}

/// The plugin the global file is judged by: the most certain verdict among the served
/// projects' (known and rejecting, then unknown, then known and accepting), or the global
/// config's alone when nothing is served.
fn global_plugin(service: &Service, projects: Vec<PluginVersion>) -> PluginVersion {
    let rank = |p: PluginVersion| match p {
        PluginVersion::Known(_) if p.rejects(LaterField::Shell) => 2,
        PluginVersion::Unknown => 1,
        PluginVersion::Known(_) => 0,
    };
    projects
        .into_iter()
        .reduce(|best, p| if rank(p) > rank(best) { p } else { best })
        .unwrap_or_else(|| PluginVersion::detect(service.home(), None))
}

/// `file`'s warning, if it holds a field `plugin` rejects or may.
fn warning(service: &Service, file: PolicyFile, plugin: PluginVersion) -> Option<PluginWarning> {
    let path = file.path(service.home());
    let Ok(Some(text)) = read_text(&path) else {
        return None;
    };
    let found = conflicts(&text, plugin);
    (!found.is_empty()).then(|| PluginWarning {
        shown: home_relative(&path, service.home()),
        file,
        conflicts: found,
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Arc;

    use super::*;
    use crate::activity::ActivityLog;
    use crate::decision::broker::Broker;
    use crate::policy::change::{ListField, PolicyChange};
    use crate::policy::plugin::Version;
    use crate::policy::FsList;
    use crate::serving::discovery::DiscoveryDir;
    use crate::surfaces::ops::{change_policy, check_entry, show_policy, OpError};

    /// A real service over a temporary home whose project's opencode loads `plugin`
    /// (what `opencode plugin opencode-landstrip@0.19.1` writes), with `sandbox` as its
    /// project file.
    fn service(plugin: Option<&str>, sandbox: &str) -> (tempfile::TempDir, Service, PathBuf) {
        let root = tempfile::tempdir().expect("tempdir");
        let base = root.path().canonicalize().expect("real path");
        let (home, project) = (base.join("home"), base.join("home/src/p"));
        std::fs::create_dir_all(project.join(".opencode")).expect("mkdir");
        if let Some(plugin) = plugin {
            let config =
                format!("{{\n  \"plugin\": [\n    \"opencode-landstrip@{plugin}\"\n  ]\n}}");
            std::fs::write(project.join(".opencode/opencode.json"), config).expect("config");
        }
        std::fs::write(project.join(".opencode/sandbox.json"), sandbox).expect("sandbox");
        let broker = Broker::new(Arc::new(ActivityLog::in_memory()));
        let service = Service::start(broker, home, DiscoveryDir::new(base.join("run")), None);
        (root, service, project)
    }

    fn add(list: FsList, entry: &str) -> PolicyChange {
        PolicyChange::Add {
            list: ListField::Filesystem(list),
            entry: entry.into(),
        }
    }

    const LATER: &str = "{\n  \"filesystem\": {\"denyReadAlways\": [\"~/.ssh\"]}\n}\n";

    #[tokio::test]
    async fn a_field_the_detected_plugin_rejects_is_never_added() {
        let (_root, service, project) = service(Some("0.19.1"), "{}\n");
        let file = PolicyFile::Project(project.clone());
        let path = project.join(".opencode/sandbox.json");
        for list in [FsList::DenyReadAlways, FsList::DenyWriteAlways] {
            let err = change_policy(&service, &file, &add(list, "~/.ssh"), true).unwrap_err();
            match &err {
                OpError::PluginRejects { field, version } => {
                    assert_eq!(
                        (field.key_path()[1], version.to_string()),
                        (list.json_key(), "0.19.1".into())
                    );
                }
                other => panic!("not refused for the plugin: {other}"),
            }
            assert!(err.to_string().contains("rejects"), "{err}");
            assert_eq!(
                std::fs::read_to_string(&path).expect("file"),
                "{}\n",
                "unchanged"
            );
            // The editor's check says so before any save.
            let check = check_entry(
                &service,
                &file,
                None,
                ListField::Filesystem(list),
                "~/.ssh",
                None,
            )
            .expect("checked");
            assert!(
                check
                    .invalid
                    .as_deref()
                    .is_some_and(|i| i.contains("0.19.1")),
                "{check:?}"
            );
        }
        // Every other field is still edited.
        assert!(
            change_policy(&service, &file, &add(FsList::AllowWrite, "out"), false)
                .expect("saved")
                .written
        );
    }

    #[tokio::test]
    async fn an_unknown_plugin_only_warns_and_remove_field_ends_the_warning() {
        let (_root, service, project) = service(None, LATER);
        let file = PolicyFile::Project(project.clone());
        let view = show_policy(&service, &project).expect("view");
        assert_eq!(view.plugin, PluginVersion::Unknown);
        let said = &view.project_file.plugin_conflicts;
        assert!(said.len() == 1 && !said[0].rejected, "{said:?}");
        // Unknown: the field may still be added, and other fields edited, each reply
        // warning (may, not does: rejected false) about every later field the file holds.
        let added = change_policy(
            &service,
            &file,
            &add(FsList::DenyWriteAlways, ".git"),
            false,
        )
        .expect("saved");
        let warned = |changed: &crate::surfaces::ops::Changed| {
            changed
                .plugin_conflicts
                .iter()
                .map(|c| (c.field, c.rejected))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            warned(&added),
            [
                (LaterField::DenyReadAlways, false),
                (LaterField::DenyWriteAlways, false)
            ]
        );
        let other =
            change_policy(&service, &file, &add(FsList::AllowWrite, "out"), false).expect("saved");
        assert_eq!(warned(&other).len(), 2, "{other:?}");
        for field in [LaterField::DenyReadAlways, LaterField::DenyWriteAlways] {
            let removed =
                change_policy(&service, &file, &PolicyChange::RemoveField { field }, false)
                    .expect("removed");
            assert!(removed.written, "{removed:?}");
        }
        let view = show_policy(&service, &project).expect("view");
        assert!(view.project_file.plugin_conflicts.is_empty(), "{view:?}");
        let text = std::fs::read_to_string(project.join(".opencode/sandbox.json")).expect("file");
        assert!(
            !text.contains("Always") && text.contains("\"out\""),
            "{text}"
        );
    }

    #[tokio::test]
    async fn the_warnings_name_each_file_for_the_plugin_its_project_loads() {
        let (_root, service, project) = service(Some("0.19.1"), LATER);
        // Nothing served: nothing looked at but the global file, which has nothing.
        assert!(plugin_warnings(&service).is_empty());
        service.add_project(&project, false).await.expect("served");
        let warnings = plugin_warnings(&service);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(warnings[0].file, PolicyFile::Project(project.clone()));
        let conflict = &warnings[0].conflicts[0];
        assert_eq!(
            (conflict.field, conflict.plugin, conflict.rejected),
            (
                LaterField::DenyReadAlways,
                PluginVersion::Known("0.19.1".parse::<Version>().expect("version")),
                true
            )
        );
        // Another edit of that file goes through and says it is rejected.
        let file = PolicyFile::Project(project.clone());
        let other =
            change_policy(&service, &file, &add(FsList::AllowWrite, "out"), false).expect("saved");
        assert!(
            other.written && other.plugin_conflicts.iter().all(|c| c.rejected),
            "{other:?}"
        );
        assert_eq!(other.plugin_conflicts.len(), 1, "{other:?}");
        // The global file is judged by the plugin of any served project: with 0.19.1
        // served, a later field is refused there and one already in it is a rejection.
        let err = change_policy(
            &service,
            &PolicyFile::Global,
            &add(FsList::DenyReadAlways, "~/.aws"),
            true,
        )
        .unwrap_err();
        assert!(matches!(err, OpError::PluginRejects { .. }), "{err}");
        let global = PolicyFile::Global.path(service.home());
        std::fs::create_dir_all(global.parent().expect("parent")).expect("mkdir");
        std::fs::write(&global, "{\"shell\": {}}\n").expect("global file");
        let warnings = plugin_warnings(&service);
        let on_global = warnings
            .iter()
            .find(|w| w.file == PolicyFile::Global)
            .expect("the global file warned about");
        assert_eq!(
            on_global
                .conflicts
                .iter()
                .map(|c| (c.field, c.rejected))
                .collect::<Vec<_>>(),
            [(LaterField::Shell, true)]
        );
        std::fs::remove_file(&global).expect("global file gone");
        // A 0.19.9 user is told nothing.
        let newer = "{\"plugin\": [\"opencode-landstrip@0.19.9\"]}";
        std::fs::write(project.join(".opencode/opencode.json"), newer).expect("config");
        assert!(plugin_warnings(&service).is_empty());
    }
}
