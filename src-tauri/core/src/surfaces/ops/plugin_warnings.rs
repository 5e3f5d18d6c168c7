//! The policy files of the served projects that hold fields the user's opencode-landstrip
//! rejects (docs/ARCHITECTURE.md, "The plugin's version"): what the welcome window warns
//! about, each with the file to pass to `ctl policy remove-field`.

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
    let mut global_plugin: Option<PluginVersion> = None;
    // Known and rejecting, then unknown, then known and accepting.
    let rank = |p: PluginVersion| match p {
        PluginVersion::Known(_) if p.rejects(LaterField::Shell) => 2,
        PluginVersion::Unknown => 1,
        PluginVersion::Known(_) => 0,
    };
    for dir in service.list().into_iter().map(|p| p.dir) {
        let plugin = PluginVersion::detect(home, Some(&dir));
        if global_plugin.is_none_or(|g| rank(plugin) > rank(g)) {
            global_plugin = Some(plugin);
        }
        push(&mut warnings, PolicyFile::Project(dir), plugin, service);
    }
    let global_plugin = global_plugin.unwrap_or_else(|| PluginVersion::detect(home, None));
    push(&mut warnings, PolicyFile::Global, global_plugin, service);
    warnings
}

fn push(
    warnings: &mut Vec<PluginWarning>,
    file: PolicyFile,
    plugin: PluginVersion,
    service: &Service,
) {
    let path = file.path(service.home());
    let Ok(Some(text)) = read_text(&path) else {
        return;
    };
    let found = conflicts(&text, plugin);
    if !found.is_empty() {
        warnings.push(PluginWarning {
            shown: home_relative(&path, service.home()),
            file,
            conflicts: found,
        });
    }
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
        // Unknown: the field may still be added, and other fields edited.
        change_policy(
            &service,
            &file,
            &add(FsList::DenyWriteAlways, ".git"),
            false,
        )
        .expect("saved");
        change_policy(&service, &file, &add(FsList::AllowWrite, "out"), false).expect("saved");
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
        // A 0.19.9 user is told nothing.
        let newer = "{\"plugin\": [\"opencode-landstrip@0.19.9\"]}";
        std::fs::write(project.join(".opencode/opencode.json"), newer).expect("config");
        assert!(plugin_warnings(&service).is_empty());
    }
}
