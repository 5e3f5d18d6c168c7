//! Paths that hold secrets or the sandbox's own policy. The dialog defaults to Deny for
//! them and asks twice before any grant that outlives the one request.
//!
//! The check is lexical (like the policy matcher): the filesystem is never consulted, so a
//! path is judged by what it names, whether or not it exists yet.

use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use crate::lexical::{is_normal, is_within, normalize_lexically as normalize};

/// What makes a path sensitive, in words for the dialog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sensitive {
    /// What the location holds, e.g. "SSH keys and configuration".
    pub what: &'static str,
    /// The sensitive location itself (the path, or the directory holding it).
    pub location: PathBuf,
}

/// Locations under `$HOME` that hold credentials, keys or the sandbox policy, with what
/// they hold. Directories cover everything under them.
const HOME_LOCATIONS: &[(&str, &str)] = &[
    (".ssh", "SSH keys and configuration"),
    (".gnupg", "GnuPG keys"),
    (".aws", "AWS credentials"),
    (".azure", "Azure credentials"),
    (".config/gcloud", "Google Cloud credentials"),
    (".kube", "Kubernetes credentials"),
    (".docker/config.json", "Docker registry credentials"),
    (".netrc", "network login passwords (.netrc)"),
    (".pgpass", "PostgreSQL passwords"),
    (".git-credentials", "Git credentials"),
    (".config/gh", "GitHub CLI credentials"),
    (".cargo/credentials", "crates.io tokens"),
    (".cargo/credentials.toml", "crates.io tokens"),
    (".npmrc", "npm tokens"),
    (".pypirc", "PyPI tokens"),
    (".local/share/keyrings", "the desktop keyring"),
    (".local/share/kwalletd", "the KDE wallet"),
    (".password-store", "the pass password store"),
    (".mozilla", "a browser profile (cookies, saved passwords)"),
    (".librewolf", "a browser profile (cookies, saved passwords)"),
    (".thunderbird", "a mail profile (messages, saved passwords)"),
    (
        "snap/firefox",
        "a browser profile (cookies, saved passwords)",
    ),
    (
        ".var/app/org.mozilla.firefox",
        "a browser profile (cookies, saved passwords)",
    ),
    (
        ".config/google-chrome",
        "a browser profile (cookies, saved passwords)",
    ),
    (
        ".config/chromium",
        "a browser profile (cookies, saved passwords)",
    ),
    (
        ".config/BraveSoftware",
        "a browser profile (cookies, saved passwords)",
    ),
    (
        ".config/microsoft-edge",
        "a browser profile (cookies, saved passwords)",
    ),
    (
        ".config/vivaldi",
        "a browser profile (cookies, saved passwords)",
    ),
    (
        ".config/opera",
        "a browser profile (cookies, saved passwords)",
    ),
    (".config/opencode/sandbox.json", GLOBAL_POLICY),
];

const GLOBAL_POLICY: &str = "the global sandbox policy";

const PROJECT_POLICY: &str = "a project's sandbox policy";

/// Classifies `path` (absolute) for a user whose home is `home`; `None` when nothing marks
/// it as sensitive.
pub fn classify(path: &Path, home: &Path) -> Option<Sensitive> {
    classify_in(path, home, &crate::policy::global_path(home))
}

/// [`classify`] with the global policy file given (`$XDG_CONFIG_HOME/opencode/…` may lie
/// outside the home; the home-based one, which opencode-landstrip 0.19.1 reads, is in
/// [`HOME_LOCATIONS`]).
fn classify_in(path: &Path, home: &Path, global: &Path) -> Option<Sensitive> {
    let path = normalize(path);
    if path.starts_with(global) {
        return Some(Sensitive {
            what: GLOBAL_POLICY,
            location: global.to_path_buf(),
        });
    }
    if let Ok(rest) = path.strip_prefix(home) {
        for (location, what) in HOME_LOCATIONS {
            if rest.starts_with(location) {
                return Some(Sensitive {
                    what,
                    location: home.join(location),
                });
            }
        }
    }
    // Names that are sensitive wherever they are: look at every component, so a file
    // inside a directory named like a key (rare) and the key file itself both count.
    let mut so_far = PathBuf::new();
    for component in path.components() {
        so_far.push(component.as_os_str());
        let Component::Normal(name) = component else {
            continue;
        };
        if let Some(what) = name.to_str().and_then(sensitive_name) {
            return Some(Sensitive {
                what,
                location: so_far,
            });
        }
    }
    if is_policy_file(&path) {
        return Some(Sensitive {
            what: PROJECT_POLICY,
            location: path,
        });
    }
    None
}

/// Whether a request for `path` is sensitive (docs/ARCHITECTURE.md, "Decision rules"): its
/// own path lies in a credential location or has a sensitive name, or it is a directory that
/// holds a credential location (`~/.cargo`, never every file under `~`). `global` is the
/// global policy file. The location returned is what a confirmed Session answer is tied to.
///
/// On the query path (a grant about to allow): nothing is allocated unless the path is
/// sensitive or holds a `.`/`..` component.
pub fn of_request(path: &Path, home: &Path, global: &Path) -> Option<Sensitive> {
    if !is_normal(path) || maybe_sensitive(path, home, global) {
        return covered_by_in(path, home, global).into_iter().next();
    }
    None
}

/// Whether an allowed read of `path` read a secret (docs/ARCHITECTURE.md, "After a
/// secret"): its own path lies in a credential location or has a sensitive name. A folder
/// that merely holds one (`~`, `~/.cargo`) is not, as listing it reveals no secret; nor
/// is a policy file, which holds none. `global` is the global policy file.
///
/// On the query path (every allowed read): nothing is allocated unless the path is
/// sensitive or holds a `.`/`..` component.
pub fn of_secret_read(path: &Path, home: &Path, global: &Path) -> Option<Sensitive> {
    if is_normal(path) && !maybe_sensitive(path, home, global) {
        return None;
    }
    classify_in(path, home, global).filter(|s| s.what != GLOBAL_POLICY && s.what != PROJECT_POLICY)
}

/// The query path's test before [`covered_by_in`], on the bytes of a normal path: false
/// only when nothing there could make `path` sensitive.
fn maybe_sensitive(path: &Path, home: &Path, global: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    if is_within(path, global) || is_within(global, path) || is_within(home, path) {
        return true;
    }
    let bytes = path.as_os_str().as_bytes();
    if is_within(path, home) {
        let rest = Path::new(std::ffi::OsStr::from_bytes(
            bytes.get(home.as_os_str().len() + 1..).unwrap_or_default(),
        ));
        let near = HOME_LOCATIONS.iter().any(|(location, _)| {
            let location = Path::new(location);
            is_within(rest, location) || is_within(location, rest)
        });
        if near {
            return true;
        }
    }
    bytes.split(|b| *b == b'/').any(|name| {
        std::str::from_utf8(name)
            .ok()
            .and_then(sensitive_name)
            .is_some()
    }) || bytes.ends_with(b"/.opencode/sandbox.json")
}

/// The sensitive location a grant of `path` itself would open: its own when it lies in one,
/// else the first one beneath it. A folder that holds keys or credentials (`~/.cargo`, which
/// cargo creates in a fresh home) is no safer to grant than the keys: a session grant or a
/// policy entry of the folder covers everything under it.
pub fn guarding(path: &Path, home: &Path) -> Option<Sensitive> {
    covered_by(path, home).into_iter().next()
}

/// The sensitive home locations a grant of `root` would cover (its own and those below
/// it), e.g. everything under `~/.config` for a grant of `~/.config`.
pub fn covered_by(root: &Path, home: &Path) -> Vec<Sensitive> {
    covered_by_in(root, home, &crate::policy::global_path(home))
}

fn covered_by_in(root: &Path, home: &Path, global: &Path) -> Vec<Sensitive> {
    let root = normalize(root);
    let mut found: Vec<Sensitive> = Vec::new();
    if let Some(own) = classify_in(&root, home, global) {
        found.push(own);
    }
    if global.starts_with(&root) && !found.iter().any(|s| s.location == global) {
        found.push(Sensitive {
            what: GLOBAL_POLICY,
            location: global.to_path_buf(),
        });
    }
    for (location, what) in HOME_LOCATIONS {
        let full = home.join(location);
        if full.starts_with(&root) && !found.iter().any(|s| s.location == full) {
            found.push(Sensitive {
                what,
                location: full,
            });
        }
    }
    found
}

/// The names [`sensitive_name`] knows, as patterns for people (a preview's words).
pub const NAME_PATTERNS: &[&str] = &["id_*", "*.key", "*.pem", ".env", ".env.*"];

/// What a file or directory name alone says: keys, certificates, dotenv files.
fn sensitive_name(name: &str) -> Option<&'static str> {
    if name == ".env" || name.starts_with(".env.") {
        return Some("environment secrets (.env)");
    }
    if name.ends_with(".pem") || name.ends_with(".key") {
        return Some("a private key or certificate");
    }
    // ssh-keygen's names: id_rsa, id_ed25519, id_work… never the .pub half, and not
    // source files that merely start with "id_" (id_utils.rs has an extension).
    if let Some(rest) = name.strip_prefix("id_") {
        if !rest.is_empty() && !rest.contains('.') {
            return Some("an SSH private key");
        }
    }
    None
}

/// `<anything>/.opencode/sandbox.json`: a project's policy (the plugin reads it).
fn is_policy_file(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "sandbox.json")
        && path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == ".opencode")
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOME: &str = "/home/dev";

    fn what(path: &str) -> Option<&'static str> {
        classify(Path::new(path), Path::new(HOME)).map(|s| s.what)
    }

    #[test]
    fn credential_directories_under_home_and_everything_in_them() {
        for (path, expected) in [
            ("/home/dev/.ssh", "SSH keys and configuration"),
            ("/home/dev/.ssh/config", "SSH keys and configuration"),
            ("/home/dev/.ssh/known_hosts", "SSH keys and configuration"),
            ("/home/dev/.gnupg/pubring.kbx", "GnuPG keys"),
            ("/home/dev/.aws/credentials", "AWS credentials"),
            (
                "/home/dev/.config/gcloud/application_default_credentials.json",
                "Google Cloud credentials",
            ),
            ("/home/dev/.kube/config", "Kubernetes credentials"),
            (
                "/home/dev/.docker/config.json",
                "Docker registry credentials",
            ),
            ("/home/dev/.netrc", "network login passwords (.netrc)"),
            ("/home/dev/.pgpass", "PostgreSQL passwords"),
            (
                "/home/dev/.local/share/keyrings/login.keyring",
                "the desktop keyring",
            ),
            (
                "/home/dev/.password-store/mail.gpg",
                "the pass password store",
            ),
            (
                "/home/dev/.mozilla/firefox/abc.default/logins.json",
                "a browser profile (cookies, saved passwords)",
            ),
            (
                "/home/dev/.config/google-chrome/Default/Cookies",
                "a browser profile (cookies, saved passwords)",
            ),
            (
                "/home/dev/.config/chromium/Default/Login Data",
                "a browser profile (cookies, saved passwords)",
            ),
            (
                "/home/dev/.config/opencode/sandbox.json",
                "the global sandbox policy",
            ),
        ] {
            assert_eq!(what(path), Some(expected), "{path}");
        }
    }

    #[test]
    fn a_secret_read_is_a_credential_location_or_name_never_a_folder_above_or_a_policy() {
        let (home, global) = (
            Path::new(HOME),
            Path::new("/home/dev/.config/opencode/sandbox.json"),
        );
        let read = |p: &str| of_secret_read(Path::new(p), home, global).map(|s| s.what);
        assert_eq!(read("/home/dev/.aws/credentials"), Some("AWS credentials"));
        assert_eq!(read("/home/dev/.ssh"), Some("SSH keys and configuration"));
        assert_eq!(read("/srv/app/.env"), Some("environment secrets (.env)"));
        assert_eq!(
            read("/home/dev/./.aws/../.aws/config"),
            Some("AWS credentials")
        );
        for harmless in [
            "/home/dev",
            "/home/dev/.cargo",
            "/home/dev/.config",
            "/home/dev/src/p/main.rs",
            "/home/dev/.config/opencode/sandbox.json",
            "/home/dev/src/p/.opencode/sandbox.json",
        ] {
            assert_eq!(read(harmless), None, "{harmless}");
        }
    }

    #[test]
    fn the_location_is_the_directory_that_makes_it_sensitive() {
        let found = classify(Path::new("/home/dev/.ssh/config"), Path::new(HOME)).unwrap();
        assert_eq!(found.location, PathBuf::from("/home/dev/.ssh"));
        let key = classify(Path::new("/srv/tls/site.key"), Path::new(HOME)).unwrap();
        assert_eq!(key.location, PathBuf::from("/srv/tls/site.key"));
    }

    #[test]
    fn keys_certificates_and_dotenv_files_anywhere() {
        assert_eq!(
            what("/srv/tls/site.pem"),
            Some("a private key or certificate")
        );
        assert_eq!(
            what("/home/dev/src/p/server.key"),
            Some("a private key or certificate")
        );
        assert_eq!(what("/tmp/keys/id_rsa"), Some("an SSH private key"));
        assert_eq!(
            what("/home/dev/work/id_ed25519"),
            Some("an SSH private key")
        );
        assert_eq!(
            what("/home/dev/src/p/.env"),
            Some("environment secrets (.env)")
        );
        assert_eq!(
            what("/home/dev/src/p/.env.local"),
            Some("environment secrets (.env)")
        );
        assert_eq!(
            what("/home/dev/src/p/.opencode/sandbox.json"),
            Some("a project's sandbox policy")
        );
    }

    #[test]
    fn ordinary_paths_and_lookalikes_are_not_sensitive() {
        for path in [
            "/home/dev/notes/todo.txt",
            "/home/dev/.cargo/registry/index/x",
            "/home/dev/.config/opencode/opencode.json",
            "/home/dev/.sshrc",
            "/home/dev/.docker/buildx/instances",
            "/home/dev/src/p/src/id_utils.rs",
            "/home/dev/src/p/id_",
            "/tmp/keys/id_rsa.pub",
            "/home/dev/src/p/.envrc",
            "/home/dev/src/p/environment.ts",
            "/home/dev/src/p/keys.md",
            "/home/dev/src/p/sandbox.json",
            "/etc/hosts",
            "/home/devil/.ssh/config",
        ] {
            assert_eq!(what(path), None, "{path}");
        }
    }

    #[test]
    fn dot_dot_cannot_hide_a_sensitive_path() {
        assert_eq!(
            what("/home/dev/src/p/../../.ssh/id_rsa"),
            Some("SSH keys and configuration")
        );
        assert_eq!(what("/home/dev/.ssh/../notes/x"), None);
    }

    #[test]
    fn a_wide_scope_reports_what_it_would_cover() {
        let home = Path::new(HOME);
        let under_config = covered_by(Path::new("/home/dev/.config"), home);
        let locations: Vec<_> = under_config.iter().map(|s| s.location.clone()).collect();
        assert!(locations.contains(&PathBuf::from("/home/dev/.config/gcloud")));
        assert!(locations.contains(&PathBuf::from("/home/dev/.config/opencode/sandbox.json")));
        assert!(!locations.contains(&PathBuf::from("/home/dev/.ssh")));
        assert!(covered_by(Path::new(HOME), home).len() > 10, "all of home");
        assert_eq!(covered_by(Path::new("/home/dev/.ssh"), home).len(), 1);
        assert!(covered_by(Path::new("/home/dev/.cargo/registry"), home).is_empty());
        assert!(covered_by(Path::new("/home/dev/notes"), home).is_empty());
    }

    #[test]
    fn the_global_file_under_xdg_config_home_is_sensitive_too() {
        let (home, global) = (Path::new(HOME), Path::new("/srv/cfg/opencode/sandbox.json"));
        let found = classify_in(global, home, global).expect("sensitive");
        assert_eq!(
            (found.what, found.location.as_path()),
            (GLOBAL_POLICY, global)
        );
        // Still the home-based one (the file opencode-landstrip 0.19.1 reads).
        assert_eq!(
            classify_in(
                Path::new("/home/dev/.config/opencode/sandbox.json"),
                home,
                global
            )
            .map(|s| s.what),
            Some(GLOBAL_POLICY)
        );
        assert!(classify_in(Path::new("/srv/cfg/opencode/opencode.json"), home, global).is_none());
        let wide: Vec<_> = covered_by_in(Path::new("/srv"), home, global)
            .into_iter()
            .map(|s| s.location)
            .collect();
        assert_eq!(wide, [global.to_path_buf()]);
    }

    #[test]
    fn a_request_is_sensitive_exactly_when_a_grant_of_it_would_be_guarded() {
        let (home, global) = (Path::new(HOME), Path::new("/srv/cfg/opencode/sandbox.json"));
        for path in [
            "/home/dev/notes/todo.txt",
            "/home/dev",
            "/home",
            "/",
            "/home/dev/.ssh",
            "/home/dev/.ssh/id_ed25519.pub",
            "/home/dev/.config",
            "/home/dev/.config/foo/bar",
            "/home/dev/.cargo",
            "/home/dev/.cargo/registry/x",
            "/home/dev/.cargo/credentials.toml",
            "/home/devil/.ssh/config",
            "/x/keys/id_rsa",
            "/x/keys/notes.txt",
            "/x/keys/server.key/inner",
            "/x/p/.env.local",
            "/x/p/.envrc",
            "/x/p/.opencode/sandbox.json",
            "/srv/cfg",
            "/srv/cfg/opencode/sandbox.json",
            "/srv/other",
            "/x/p/../../home/dev/.ssh/config",
            "/home/dev/src/./p/.env",
            "/home/dev/.config/gcloud/x",
        ] {
            let path = Path::new(path);
            assert_eq!(
                of_request(path, home, global),
                covered_by_in(path, home, global).into_iter().next(),
                "{path:?}"
            );
        }
        assert!(of_request(Path::new("/home/dev/notes/a"), home, global).is_none());
        assert!(of_request(Path::new("/home/dev/.cargo"), home, global).is_some());
    }

    #[test]
    fn a_folder_holding_credentials_is_guarded_like_them() {
        let home = Path::new("/home/u");
        let found = guarding(Path::new("/home/u/.cargo"), home).expect("guarded");
        assert_eq!(found.location, Path::new("/home/u/.cargo/credentials"));
        assert!(classify(Path::new("/home/u/.cargo"), home).is_none());
        // Its own location first, and nothing for a folder with nothing sensitive in it.
        let own = guarding(Path::new("/home/u/.ssh/config"), home).expect("guarded");
        assert_eq!(own.location, Path::new("/home/u/.ssh"));
        assert!(guarding(Path::new("/home/u/.cargo/registry"), home).is_none());
        assert!(guarding(Path::new("/tmp/build"), home).is_none());
    }
}
