//! The core's emulation of the plugin's landstrip policy
//! (`landstrip_tray_core::policy::landstrip_policy_json`) against the policy the real
//! opencode-landstrip 0.19.1 writes (from the npm registry, run by tests/plugin/policy.mjs),
//! for a golden set of sandbox.json configurations. Nothing here is mocked; the plugin's
//! opencode client is a stub that records toasts, since there is no opencode around it.

use std::path::{Path, PathBuf};

use landstrip_tray_core::policy;
use landstrip_tray_tests::plugin::{PluginInvocation, PluginRun};
use serde_json::Value;

/// A fresh home and project (canonical paths, so symlinks in the temp dir do not differ).
struct World {
    _root: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
    scratch: PathBuf,
}

impl World {
    fn new() -> Self {
        let root = tempfile::tempdir().expect("tempdir");
        let base = std::fs::canonicalize(root.path()).expect("canonical");
        let (home, project, scratch) = (base.join("home"), base.join("project"), base.join("s"));
        for dir in [&home, &project, &scratch] {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        Self {
            _root: root,
            home,
            project,
            scratch,
        }
    }

    fn write(&self, path: PathBuf, json: &str) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, json).expect("write sandbox.json");
    }

    fn global(&self, json: &str) {
        self.write(policy::global_path(&self.home), json);
    }

    fn project_file(&self, json: &str) {
        self.write(policy::project_path(&self.project), json);
    }

    /// The core's effective config and its emulated landstrip policy.
    fn emulated(&self) -> (policy::SandboxConfig, Value) {
        let loaded = policy::load_effective(&self.home, &self.project).expect("policy loads");
        let json = policy::landstrip_policy_json(&loaded.config, &self.project, &self.home);
        (loaded.config, json)
    }

    fn plugin(&self) -> PluginRun {
        PluginInvocation::new(&self.home, &self.project, &self.scratch)
            .run()
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Replaces this world's paths with `$HOME`/`$PROJECT` so a diff reads well.
    fn tidy(&self, text: String) -> String {
        text.replace(&*self.project.to_string_lossy(), "$PROJECT")
            .replace(&*self.home.to_string_lossy(), "$HOME")
            .replace(&*self.scratch.to_string_lossy(), "$SCRATCH")
    }
}

/// Every place where `plugin` and `emulated` differ, one line each.
fn differences(at: &str, plugin: &Value, emulated: &Value, out: &mut Vec<String>) {
    match (plugin, emulated) {
        (Value::Object(p), Value::Object(e)) => {
            for key in p.keys().chain(e.keys().filter(|k| !p.contains_key(*k))) {
                let path = format!("{at}.{key}");
                match (p.get(key), e.get(key)) {
                    (Some(pv), Some(ev)) => differences(&path, pv, ev, out),
                    (Some(pv), None) => {
                        out.push(format!("{path}: plugin {pv}, emulation has none"))
                    }
                    (None, Some(ev)) => {
                        out.push(format!("{path}: emulation {ev}, plugin has none"))
                    }
                    (None, None) => {}
                }
            }
        }
        (Value::Array(p), Value::Array(e)) if p != e => {
            let only = |a: &[Value], b: &[Value]| -> String {
                let items: Vec<String> = a
                    .iter()
                    .filter(|v| !b.contains(v))
                    .map(Value::to_string)
                    .collect();
                items.join(", ")
            };
            out.push(format!(
                "{at}:\n    plugin    {plugin}\n    emulation {emulated}\n    only in plugin: {}\n    only in emulation: {}",
                only(p, e),
                only(e, p)
            ));
        }
        _ if plugin != emulated => out.push(format!("{at}: plugin {plugin}, emulation {emulated}")),
        _ => {}
    }
}

/// Runs the emulation (before the plugin, which writes a global file when there is none)
/// and the plugin, and fails with every difference when their policies differ.
/// `httpProxyPort` is compared for presence only: the plugin starts a filtering HTTP
/// proxy per bash call unless `allowNetwork`, and names its (random) port in the policy.
fn assert_same_policy(world: &World) -> Value {
    let (plugin, emulated, diff) = compare(world);
    assert!(
        diff.is_empty(),
        "the core's emulation differs from the real plugin's policy:\n  {}\nplugin:    {}\nemulation: {}",
        world.tidy(diff.join("\n  ")),
        world.tidy(plugin.to_string()),
        world.tidy(emulated.to_string()),
    );
    plugin
}

/// The plugin's policy (without its proxy port), the emulation's, and their differences.
fn compare(world: &World) -> (Value, Value, Vec<String>) {
    let (config, emulated) = world.emulated();
    let run = world.plugin();
    assert!(
        config.enabled && run.wrapped,
        "the core says enabled={}, the plugin wrapped={} ({:?})",
        config.enabled,
        run.wrapped,
        run.messages
    );
    let mut plugin = run.policy.expect("a wrapped command has a policy");
    let network = plugin["network"]
        .as_object_mut()
        .expect("the plugin's policy has a network object");
    let proxy_port = network.remove("httpProxyPort");
    assert_eq!(
        proxy_port.is_some(),
        !config.network.allow_network,
        "the plugin names an HTTP proxy port exactly when allowNetwork is false: {proxy_port:?}"
    );
    let mut diff = Vec::new();
    differences("policy", &plugin, &emulated, &mut diff);
    (plugin, emulated, diff)
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .expect("an array")
        .iter()
        .map(|v| v.as_str().expect("a string"))
        .collect()
}

fn path_string(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[test]
fn no_sandbox_json_at_all_gives_the_bundled_defaults() {
    let world = World::new();
    let policy = assert_same_policy(&world);
    // Guard against both sides being empty: the bundled defaults made absolute.
    let project = path_string(&world.project);
    assert_eq!(
        strings(&policy["filesystem"]["allowWrite"]),
        [project.as_str(), "/dev/null"]
    );
    assert_eq!(
        strings(&policy["filesystem"]["denyRead"]),
        ["/Users", "/home"]
    );
    // The plugin leaves its bundled template as the global file when there is none.
    let global = policy::global_path(&world.home);
    assert!(global.is_file(), "no {} written", global.display());
    assert_same_policy(&world);
}

#[test]
fn project_allow_entries_relative_home_absolute_and_glob() {
    let world = World::new();
    world.project_file(
        r#"{"filesystem": {
            "allowWrite": ["build", "./out/", "src/../gen", "../sibling", "~/.cache/tool",
                           "$HOME/.cargo", "/opt/data", "**/*.log", "tmp/*/cache", "~/.ssh/*.pub"],
            "allowRead": ["docs", "~", "~/.npmrc", "/etc/hosts", "/etc//ssl/", "~/notes/[ab].md",
                          "logs/?.txt", "", "~user/x", "$HOMEx", "/../..", "a/./b/", "~//x//y/"]
        }}"#,
    );
    let policy = assert_same_policy(&world);
    let allow_write = strings(&policy["filesystem"]["allowWrite"]);
    let expect = |p: PathBuf| path_string(&p);
    for entry in [
        expect(world.project.join("build")),
        expect(world.project.join("out")),
        expect(world.project.join("gen")),
        expect(world.project.parent().expect("parent").join("sibling")),
        expect(world.home.join(".cache/tool")),
        "/opt/data".into(),
        expect(world.project.join("**/*.log")),
    ] {
        assert!(
            allow_write.contains(&entry.as_str()),
            "{entry} not in {allow_write:?}"
        );
    }
}

#[test]
fn global_then_project_merge_in_order() {
    let world = World::new();
    world.global(
        r#"{"network": {"allowLocalBinding": true, "allowUnixSockets": ["/run/g.sock"]},
            "filesystem": {"allowWrite": ["/g1", "shared", "/dev/null"], "denyWrite": ["*.bak"]}}"#,
    );
    world.project_file(
        r#"{"network": {"allowLocalBinding": false, "allowUnixSockets": ["/run/p.sock", "/run/g.sock"]},
            "filesystem": {"allowWrite": ["shared", "/p1"], "denyWrite": ["*.bak", "*.orig"]}}"#,
    );
    let policy = assert_same_policy(&world);
    let project = path_string(&world.project);
    let shared = path_string(&world.project.join("shared"));
    assert_eq!(
        strings(&policy["filesystem"]["allowWrite"]),
        [project.as_str(), "/dev/null", "/g1", shared.as_str(), "/p1"]
    );
    assert_eq!(policy["network"]["allowLocalBinding"], false);
    assert_eq!(
        strings(&policy["network"]["allowUnixSockets"]),
        ["/run/g.sock", "/run/p.sock"]
    );
}

#[test]
fn enabled_false_leaves_the_command_unwrapped_and_the_core_agrees() {
    for (global, project, enabled) in [
        (None, Some(r#"{"enabled": false}"#), false),
        (Some(r#"{"enabled": false}"#), None, false),
        (
            Some(r#"{"enabled": false}"#),
            Some(r#"{"enabled": true}"#),
            true,
        ),
    ] {
        let world = World::new();
        if let Some(json) = global {
            world.global(json);
        }
        if let Some(json) = project {
            world.project_file(json);
        }
        let (config, _) = world.emulated();
        assert_eq!(config.enabled, enabled, "core, {global:?} {project:?}");
        if enabled {
            assert_same_policy(&world);
        } else {
            let run = world.plugin();
            assert!(!run.wrapped, "{global:?} {project:?}: {run:?}");
            assert_eq!(run.command, "true");
            assert!(
                run.messages
                    .iter()
                    .any(|m| m.contains("disabled by configuration")),
                "{:?}",
                run.messages
            );
        }
    }
}

#[test]
fn network_fields() {
    for json in [
        r#"{"network": {"allowNetwork": true}}"#,
        r#"{"network": {"allowLocalBinding": true}}"#,
        r#"{"network": {"allowAllUnixSockets": true, "allowUnixSockets": ["/run/a.sock"]}}"#,
        r#"{"network": {"allowNetwork": true, "allowLocalBinding": true, "allowAllUnixSockets": true,
                        "allowedDomains": ["example.com"], "deniedDomains": ["evil.example"]}}"#,
    ] {
        let world = World::new();
        world.project_file(json);
        let policy = assert_same_policy(&world);
        let given: Value = serde_json::from_str(json).expect("json");
        for (key, value) in given["network"].as_object().expect("network") {
            match key.as_str() {
                // Domains go to the plugin's HTTP filter proxy, not to landstrip.
                "allowedDomains" | "deniedDomains" => {
                    assert!(policy["network"].get(key).is_none(), "{key} in {policy}")
                }
                _ => assert_eq!(&policy["network"][key], value, "{key} in {policy}"),
            }
        }
    }
}

#[test]
fn deny_read_and_deny_write_additions() {
    let world = World::new();
    world.project_file(
        r#"{"filesystem": {"denyRead": ["~/.ssh", "secrets", "/etc/shadow", "**/id_*"],
                           "denyWrite": ["*.lock", "~/.bashrc", "/etc", ".git/hooks"]}}"#,
    );
    let policy = assert_same_policy(&world);
    let deny_read = strings(&policy["filesystem"]["denyRead"]);
    let ssh = path_string(&world.home.join(".ssh"));
    assert_eq!(deny_read[..3], ["/Users", "/home", ssh.as_str()]);
    let deny_write = strings(&policy["filesystem"]["denyWrite"]);
    let lock = path_string(&world.project.join("*.lock"));
    assert!(deny_write.contains(&lock.as_str()), "{deny_write:?}");
}

/// A known difference, pinned so that a change on either side shows: the plugin resolves
/// symlinks in entries (realpath of the longest existing prefix), the core's emulation is
/// lexical (the core's matcher never consults the filesystem). Landlock
/// follows the link either way, so a literal entry covers the same files.
#[test]
fn symlinked_entries_are_resolved_by_the_plugin_only() {
    let world = World::new();
    let real = world.scratch.join("real");
    std::fs::create_dir_all(&real).expect("mkdir");
    std::os::unix::fs::symlink(&real, world.project.join("link")).expect("symlink");
    world.project_file(r#"{"filesystem": {"allowWrite": ["link", "link/sub", "link/*.txt"]}}"#);
    let (plugin, emulated, diff) = compare(&world);
    let project = path_string(&world.project);
    let under =
        |base: &Path| ["", "/sub", "/*.txt"].map(|tail| format!("{}{tail}", base.display()));
    let mut want = vec![project.clone(), "/dev/null".into()];
    want.extend(under(&real));
    assert_eq!(strings(&plugin["filesystem"]["allowWrite"]), want);
    let mut want = vec![project, "/dev/null".into()];
    want.extend(under(&world.project.join("link")));
    assert_eq!(strings(&emulated["filesystem"]["allowWrite"]), want);
    assert_eq!(diff.len(), 1, "only allowWrite differs: {diff:?}");
}
