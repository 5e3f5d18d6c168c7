//! The "allow for session" scope rule and how a scope is written into a policy file.

use std::path::{Path, PathBuf};

use crate::lexical::normalize_lexically as normalize;
use crate::policy::sensitive;

/// The directory (or exact file) an "allow for session" grant covers for `path`.
///
/// Under the project: the project root. Under `$HOME`: `~/<first component>`, or, where
/// that folder holds a sensitive location ([`sensitive::covered_by`]: `~/.config` holds
/// `~/.config/gh`, `~/.cargo` holds `~/.cargo/credentials.toml`), the shallowest folder on
/// the way down to `path` that holds none (`~/.config/git`, `~/.cargo/registry`), else
/// `path` itself (so always for a sensitive `path`). Elsewhere: the containing directory. A path that would widen to a
/// boundary itself (`/`, `$HOME`) stays exact, so a file directly in `$HOME` or `/` never
/// grants the whole directory.
pub fn session_scope(path: &Path, project: &Path, home: &Path) -> PathBuf {
    let path = normalize(path);
    if path.starts_with(project) {
        return project.to_path_buf();
    }
    if let Ok(rest) = path.strip_prefix(home) {
        // A request for one file must not open every secret stored beside it: the dialog
        // asks twice before a grant on a sensitive location, so a wider suggestion must not
        // reach one silently. The request itself counts when it is one (a key by its name).
        let own = sensitive::classify(&path, home);
        let mut scope = home.to_path_buf();
        for component in rest.components() {
            scope.push(component.as_os_str());
            let holds_own = own.as_ref().is_some_and(|s| s.location.starts_with(&scope));
            if !holds_own && sensitive::covered_by(&scope, home).is_empty() {
                return scope;
            }
        }
        return path;
    }
    match path.parent() {
        Some(parent)
            if parent != Path::new("/") && parent != home && !parent.as_os_str().is_empty() =>
        {
            parent.to_path_buf()
        }
        _ => path,
    }
}

/// Where a persisted grant goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyTarget {
    /// `<project>/.opencode/sandbox.json`
    Project,
    /// `~/.config/opencode/sandbox.json`
    Global,
}

/// The text of a policy entry for `scope`, in the form a person would write in that file:
/// project-relative in the project file, `~/…` under the home directory, absolute otherwise.
pub fn policy_entry(scope: &Path, target: PolicyTarget, project: &Path, home: &Path) -> String {
    let scope = normalize(scope);
    if target == PolicyTarget::Project {
        if let Ok(rest) = scope.strip_prefix(project) {
            return if rest.as_os_str().is_empty() {
                ".".to_owned()
            } else {
                rest.to_string_lossy().into_owned()
            };
        }
    }
    if let Ok(rest) = scope.strip_prefix(home) {
        return if rest.as_os_str().is_empty() {
            "~".to_owned()
        } else {
            format!("~/{}", rest.to_string_lossy())
        };
    }
    scope.to_string_lossy().into_owned()
}

/// How wide a persisted-grant option is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScopeKind {
    /// Only the requested path.
    Exact,
    /// The directory holding it.
    Parent,
    /// The "allow for session" scope ([`session_scope`]).
    Suggested,
}

/// One scope a project or global grant could add, with the entry each file would get.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ScopeOption {
    /// Which option this is (the narrowest name when several coincide).
    pub kind: ScopeKind,
    /// The absolute path covered.
    pub root: PathBuf,
    /// True for the option equal to the session scope (the default choice).
    pub suggested: bool,
    /// The entry written into `<project>/.opencode/sandbox.json`.
    pub project_entry: String,
    /// The entry written into `~/.config/opencode/sandbox.json`.
    pub global_entry: String,
}

impl ScopeOption {
    /// The entry for a target file.
    pub fn entry(&self, target: PolicyTarget) -> &str {
        match target {
            PolicyTarget::Project => &self.project_entry,
            PolicyTarget::Global => &self.global_entry,
        }
    }
}

/// The scopes offered for persisting a grant of `path`, narrowest first: the exact path,
/// its parent directory, and the session scope. Options that name the same path appear
/// once. A parent that is `/` or `$HOME` itself is not offered: like the session rule, a
/// grant never widens to a whole boundary from a single request.
pub fn grant_options(path: &Path, project: &Path, home: &Path) -> Vec<ScopeOption> {
    let exact = normalize(path);
    let suggested = session_scope(&exact, project, home);
    let parent = exact
        .parent()
        .filter(|p| *p != Path::new("/") && *p != home && !p.as_os_str().is_empty())
        .map(Path::to_path_buf);
    let mut options: Vec<ScopeOption> = Vec::new();
    let candidates = [
        (ScopeKind::Exact, Some(exact)),
        (ScopeKind::Parent, parent),
        (ScopeKind::Suggested, Some(suggested.clone())),
    ];
    for (kind, root) in candidates {
        let Some(root) = root else { continue };
        if options.iter().any(|o| o.root == root) {
            continue;
        }
        options.push(ScopeOption {
            kind,
            suggested: root == suggested,
            project_entry: policy_entry(&root, PolicyTarget::Project, project, home),
            global_entry: policy_entry(&root, PolicyTarget::Global, project, home),
            root,
        });
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROJECT: &str = "/home/dev/src/proj";
    const HOME: &str = "/home/dev";

    fn scope(path: &str) -> String {
        session_scope(Path::new(path), Path::new(PROJECT), Path::new(HOME))
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn project_paths_widen_to_the_project_root() {
        assert_eq!(scope("/home/dev/src/proj/target/debug/x"), PROJECT);
        assert_eq!(scope("/home/dev/src/proj/a.txt"), PROJECT);
        assert_eq!(scope("/home/dev/src/proj"), PROJECT);
    }

    #[test]
    fn home_paths_widen_to_the_first_component() {
        assert_eq!(scope("/home/dev/.cache/pip/http/x"), "/home/dev/.cache");
        assert_eq!(scope("/home/dev/.npm/_cacache/tmp/x"), "/home/dev/.npm");
        assert_eq!(scope("/home/dev/src/other/file"), "/home/dev/src");
        assert_eq!(scope("/home/dev/notes/todo.txt"), "/home/dev/notes");
    }

    #[test]
    fn home_scopes_stop_short_of_sensitive_locations() {
        // ~/.config holds ~/.config/gh (tokens): one tool's folder instead.
        assert_eq!(
            scope("/home/dev/.config/git/ignore"),
            "/home/dev/.config/git"
        );
        // ~/.cargo holds credentials.toml: the registry cache, or the file itself.
        assert_eq!(
            scope("/home/dev/.cargo/registry/index/x"),
            "/home/dev/.cargo/registry"
        );
        assert_eq!(
            scope("/home/dev/.cargo/.package-cache"),
            "/home/dev/.cargo/.package-cache"
        );
        // ~/.local/share holds the keyrings: two levels down.
        assert_eq!(
            scope("/home/dev/.local/share/app/db/x"),
            "/home/dev/.local/share/app"
        );
        // A sensitive location itself, or a folder holding one, stays exact.
        assert_eq!(
            scope("/home/dev/.config/gh/hosts.yml"),
            "/home/dev/.config/gh/hosts.yml"
        );
        assert_eq!(
            scope("/home/dev/.ssh/known_hosts"),
            "/home/dev/.ssh/known_hosts"
        );
        assert_eq!(scope("/home/dev/.config"), "/home/dev/.config");
        // A key file by its name, wherever it is.
        assert_eq!(
            scope("/home/dev/notes/deploy.pem"),
            "/home/dev/notes/deploy.pem"
        );
    }

    #[test]
    fn files_on_a_boundary_stay_exact() {
        assert_eq!(scope("/home/dev/.gitconfig"), "/home/dev/.gitconfig");
        assert_eq!(scope("/home/dev"), "/home/dev");
        assert_eq!(scope("/vmlinuz"), "/vmlinuz");
        assert_eq!(scope("/"), "/");
    }

    #[test]
    fn elsewhere_widens_to_the_containing_directory() {
        assert_eq!(scope("/tmp/build/out.o"), "/tmp/build");
        assert_eq!(scope("/etc/hosts"), "/etc");
        assert_eq!(scope("/var/tmp/a/b/c"), "/var/tmp/a/b");
    }

    #[test]
    fn lexical_normalisation_cannot_escape_a_scope() {
        assert_eq!(
            scope("/home/dev/src/proj/../../.ssh/id_rsa"),
            "/home/dev/.ssh/id_rsa"
        );
        assert_eq!(scope("/home/dev//notes/./x"), "/home/dev/notes");
        assert_eq!(normalize(Path::new("/../a")), PathBuf::from("/a"));
    }

    #[test]
    fn a_home_lookalike_is_not_home() {
        assert_eq!(scope("/home/devil/x/y"), "/home/devil/x");
    }

    #[test]
    fn policy_entries_are_written_as_a_person_would() {
        let (p, h) = (Path::new(PROJECT), Path::new(HOME));
        let entry = |s: &str, t| policy_entry(Path::new(s), t, p, h);
        assert_eq!(entry(PROJECT, PolicyTarget::Project), ".");
        assert_eq!(
            entry("/home/dev/src/proj/out", PolicyTarget::Project),
            "out"
        );
        assert_eq!(
            entry("/home/dev/src/proj/out", PolicyTarget::Global),
            "~/src/proj/out"
        );
        assert_eq!(entry("/home/dev/.cargo", PolicyTarget::Project), "~/.cargo");
        assert_eq!(entry("/home/dev", PolicyTarget::Global), "~");
        assert_eq!(entry("/tmp/build", PolicyTarget::Global), "/tmp/build");
    }

    fn options(path: &str) -> Vec<(ScopeKind, String, bool, String, String)> {
        grant_options(Path::new(path), Path::new(PROJECT), Path::new(HOME))
            .into_iter()
            .map(|o| {
                (
                    o.kind,
                    o.root.to_string_lossy().into_owned(),
                    o.suggested,
                    o.project_entry,
                    o.global_entry,
                )
            })
            .collect()
    }

    fn opt(
        kind: ScopeKind,
        root: &str,
        suggested: bool,
        project: &str,
        global: &str,
    ) -> (ScopeKind, String, bool, String, String) {
        (kind, root.into(), suggested, project.into(), global.into())
    }

    #[test]
    fn grant_options_run_from_exact_to_the_session_scope() {
        assert_eq!(
            options("/home/dev/.cargo/registry/index/x"),
            vec![
                opt(
                    ScopeKind::Exact,
                    "/home/dev/.cargo/registry/index/x",
                    false,
                    "~/.cargo/registry/index/x",
                    "~/.cargo/registry/index/x"
                ),
                opt(
                    ScopeKind::Parent,
                    "/home/dev/.cargo/registry/index",
                    false,
                    "~/.cargo/registry/index",
                    "~/.cargo/registry/index"
                ),
                opt(
                    ScopeKind::Suggested,
                    "/home/dev/.cargo/registry",
                    true,
                    "~/.cargo/registry",
                    "~/.cargo/registry"
                ),
            ]
        );
        assert_eq!(
            options("/home/dev/src/proj/out/a.o"),
            vec![
                opt(
                    ScopeKind::Exact,
                    "/home/dev/src/proj/out/a.o",
                    false,
                    "out/a.o",
                    "~/src/proj/out/a.o"
                ),
                opt(
                    ScopeKind::Parent,
                    "/home/dev/src/proj/out",
                    false,
                    "out",
                    "~/src/proj/out"
                ),
                opt(ScopeKind::Suggested, PROJECT, true, ".", "~/src/proj"),
            ]
        );
    }

    #[test]
    fn coinciding_grant_options_appear_once() {
        // Elsewhere the session scope is the parent.
        assert_eq!(
            options("/tmp/build/out.o"),
            vec![
                opt(
                    ScopeKind::Exact,
                    "/tmp/build/out.o",
                    false,
                    "/tmp/build/out.o",
                    "/tmp/build/out.o"
                ),
                opt(
                    ScopeKind::Parent,
                    "/tmp/build",
                    true,
                    "/tmp/build",
                    "/tmp/build"
                ),
            ]
        );
        // A file on a boundary: the session scope is the file; its parent ($HOME) is never
        // offered.
        assert_eq!(
            options("/home/dev/.gitconfig"),
            vec![opt(
                ScopeKind::Exact,
                "/home/dev/.gitconfig",
                true,
                "~/.gitconfig",
                "~/.gitconfig"
            )]
        );
        // Directly in the project: the parent is the project root, the session scope too.
        assert_eq!(
            options("/home/dev/src/proj/a.txt"),
            vec![
                opt(
                    ScopeKind::Exact,
                    "/home/dev/src/proj/a.txt",
                    false,
                    "a.txt",
                    "~/src/proj/a.txt"
                ),
                opt(ScopeKind::Parent, PROJECT, true, ".", "~/src/proj"),
            ]
        );
        assert_eq!(
            options("/etc/hosts"),
            vec![
                opt(
                    ScopeKind::Exact,
                    "/etc/hosts",
                    false,
                    "/etc/hosts",
                    "/etc/hosts"
                ),
                opt(ScopeKind::Parent, "/etc", true, "/etc", "/etc"),
            ]
        );
        assert_eq!(
            options("/vmlinuz"),
            vec![opt(
                ScopeKind::Exact,
                "/vmlinuz",
                true,
                "/vmlinuz",
                "/vmlinuz"
            )]
        );
    }
}
