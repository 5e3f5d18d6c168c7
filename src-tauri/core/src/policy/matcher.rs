//! Deciding whether a path is allowed by a policy, the way opencode-landstrip and
//! landstrip do, purely lexically (the filesystem is never consulted).

use std::borrow::Cow;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use serde_json::{json, Value};

use super::fs_list::{FsList, FsLists};
use super::schema::SandboxConfig;
use crate::lexical::normalize_lexically;

fn concat(base: &Path, rest: &str) -> PathBuf {
    let mut joined = OsString::from(base.as_os_str());
    joined.push("/");
    joined.push(rest);
    PathBuf::from(joined)
}

/// Whether a policy entry is a glob (contains any of `* ? [ ]`).
pub fn is_glob(entry: &str) -> bool {
    entry
        .bytes()
        .any(|b| matches!(b, b'*' | b'?' | b'[' | b']'))
}

/// The canonical absolute form of a policy entry: `~`, `~/x`, `$HOME`,
/// `$HOME/x` are home-based, absolute paths stay, anything else is relative to
/// the project; the result is normalised lexically (globs too).
pub fn resolve_entry(entry: &str, project_dir: &Path, home: &Path) -> PathBuf {
    let joined = if entry == "~" || entry == "$HOME" {
        home.to_path_buf()
    } else if let Some(rest) = entry
        .strip_prefix("~/")
        .or_else(|| entry.strip_prefix("$HOME/"))
    {
        concat(home, rest)
    } else if entry.starts_with('/') {
        PathBuf::from(entry)
    } else {
        concat(project_dir, entry)
    };
    normalize_lexically(&joined)
}

#[cfg(unix)]
fn path_bytes(path: &Path) -> Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt;
    Cow::Borrowed(path.as_os_str().as_bytes())
}

#[cfg(not(unix))]
fn path_bytes(path: &Path) -> Cow<'_, [u8]> {
    match path.to_string_lossy() {
        Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
        Cow::Owned(s) => Cow::Owned(s.into_bytes()),
    }
}

/// The depth of `path` (its number of normal components) if it is absolute and already
/// lexically normal: no empty, `.` or `..` component and no trailing `/`; None otherwise.
#[cfg(unix)]
fn normal_absolute_depth(path: &Path) -> Option<usize> {
    use std::os::unix::ffi::OsStrExt;
    let rest = path.as_os_str().as_bytes().strip_prefix(b"/")?;
    if rest.is_empty() {
        return Some(0);
    }
    let mut depth = 0;
    for segment in rest.split(|b| *b == b'/') {
        if segment.is_empty() || segment == b"." || segment == b".." {
            return None;
        }
        depth += 1;
    }
    Some(depth)
}

#[cfg(not(unix))]
fn normal_absolute_depth(_path: &Path) -> Option<usize> {
    None
}

fn depth(path: &Path) -> usize {
    path.components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count()
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(Vec<u8>),
    /// `*`: any run of bytes without `/`.
    Star,
    /// `**` not followed by `/`: any run of bytes.
    AnyDeep,
    /// `**/`: zero or more whole directories.
    DirsDeep,
    /// `?`: one byte other than `/`.
    One,
    /// `[...]`: one byte other than `/` from the class (`a-z` ranges).
    Class(Vec<u8>),
}

/// A compiled glob, anchored to the whole path, matched on bytes.
#[derive(Debug, Clone)]
struct Glob {
    tokens: Vec<Token>,
    prefix: Vec<u8>,
    suffix: Vec<u8>,
}

fn in_class(byte: u8, class: &[u8]) -> bool {
    let mut at = 0;
    while at < class.len() {
        if at + 2 < class.len() && class[at + 1] == b'-' {
            if (class[at]..=class[at + 2]).contains(&byte) {
                return true;
            }
            at += 3;
        } else {
            if class[at] == byte {
                return true;
            }
            at += 1;
        }
    }
    false
}

impl Glob {
    fn new(pattern: &[u8]) -> Self {
        let mut tokens = Vec::new();
        let mut literal = Vec::new();
        let mut i = 0;
        while let Some(rest) = pattern.get(i..).filter(|rest| !rest.is_empty()) {
            let (token, used) = if rest.starts_with(b"**/") {
                (Some(Token::DirsDeep), 3)
            } else if rest.starts_with(b"**") {
                (Some(Token::AnyDeep), 2)
            } else {
                match rest[0] {
                    b'*' => (Some(Token::Star), 1),
                    b'?' => (Some(Token::One), 1),
                    b'[' => match rest[1..].iter().position(|b| *b == b']') {
                        Some(len) => (Some(Token::Class(rest[1..1 + len].to_vec())), len + 2),
                        None => {
                            literal.push(b'[');
                            (None, 1)
                        }
                    },
                    byte => {
                        literal.push(byte);
                        (None, 1)
                    }
                }
            };
            i += used;
            if let Some(token) = token {
                if !literal.is_empty() {
                    tokens.push(Token::Literal(std::mem::take(&mut literal)));
                }
                tokens.push(token);
            }
        }
        if !literal.is_empty() {
            tokens.push(Token::Literal(literal));
        }
        let prefix = match tokens.first() {
            Some(Token::Literal(l)) => l.clone(),
            _ => Vec::new(),
        };
        let suffix = match tokens.last() {
            Some(Token::Literal(l)) if tokens.len() > 1 => l.clone(),
            _ => Vec::new(),
        };
        Self {
            tokens,
            prefix,
            suffix,
        }
    }

    fn is_match(&self, text: &[u8]) -> bool {
        if !text.starts_with(&self.prefix) || !text.ends_with(&self.suffix) {
            return false;
        }
        let n = text.len();
        // cur[i]: the tokens so far can match text[..i].
        let mut cur = vec![false; n + 1];
        let mut next = vec![false; n + 1];
        cur[0] = true;
        for token in &self.tokens {
            next.fill(false);
            match token {
                Token::Literal(lit) => {
                    for i in 0..=n {
                        if cur[i] && text[i..].starts_with(lit) {
                            next[i + lit.len()] = true;
                        }
                    }
                }
                Token::One => {
                    for i in 0..n {
                        next[i + 1] = cur[i] && text[i] != b'/';
                    }
                }
                Token::Class(class) => {
                    for i in 0..n {
                        next[i + 1] = cur[i] && text[i] != b'/' && in_class(text[i], class);
                    }
                }
                Token::Star => {
                    next[0] = cur[0];
                    for j in 1..=n {
                        next[j] = cur[j] || (next[j - 1] && text[j - 1] != b'/');
                    }
                }
                Token::AnyDeep => {
                    next[0] = cur[0];
                    for j in 1..=n {
                        next[j] = cur[j] || next[j - 1];
                    }
                }
                Token::DirsDeep => {
                    let mut reached = cur[0];
                    next[0] = cur[0];
                    for j in 1..=n {
                        next[j] = cur[j] || (reached && text[j - 1] == b'/');
                        reached |= cur[j];
                    }
                }
            }
            std::mem::swap(&mut cur, &mut next);
            if !cur.contains(&true) {
                return false;
            }
        }
        cur[n]
    }
}

#[derive(Debug, Clone)]
enum Rule {
    /// A literal root: covers itself and everything below it.
    Literal {
        root: Vec<u8>,
        depth: usize,
    },
    Glob(Glob),
}

impl Rule {
    fn new(entry: &str, project_dir: &Path, home: &Path) -> Self {
        let resolved = resolve_entry(entry, project_dir, home);
        let bytes = path_bytes(&resolved).into_owned();
        if is_glob(entry) {
            Rule::Glob(Glob::new(&bytes))
        } else {
            Rule::Literal {
                depth: depth(&resolved),
                root: bytes,
            }
        }
    }

    /// The specificity of this rule for `path` if it matches.
    fn match_depth(&self, path: &[u8], path_depth: usize) -> Option<usize> {
        match self {
            Rule::Literal { root, depth } => {
                let covers = path.starts_with(root)
                    && (path.len() == root.len()
                        || root.last() == Some(&b'/')
                        || path.get(root.len()) == Some(&b'/'));
                covers.then_some(*depth)
            }
            Rule::Glob(glob) => glob.is_match(path).then_some(path_depth),
        }
    }
}

#[derive(Debug, Clone, Default)]
struct RuleSet(Vec<Rule>);

impl RuleSet {
    fn new(entries: &[String], project_dir: &Path, home: &Path) -> Self {
        Self(
            entries
                .iter()
                .map(|entry| Rule::new(entry, project_dir, home))
                .collect(),
        )
    }

    fn best(&self, path: &[u8], path_depth: usize) -> Option<usize> {
        self.0
            .iter()
            .filter_map(|rule| rule.match_depth(path, path_depth))
            .max()
    }

    /// Splits the rules into the boundaries among them (see [`is_read_boundary`]) and the
    /// rest.
    fn split_boundaries(&self, home: &Path) -> (RuleSet, RuleSet) {
        let (ask, never) = self
            .0
            .iter()
            .cloned()
            .partition(|rule| is_read_boundary(rule, home));
        (RuleSet(ask), RuleSet(never))
    }

    fn any(&self, path: &[u8], path_depth: usize) -> bool {
        self.0
            .iter()
            .any(|rule| rule.match_depth(path, path_depth).is_some())
    }
}

/// Whether a denyRead rule is a boundary where reads are asked about rather than denied
/// outright: the whole filesystem, every home (`/home`, `/Users`, the bundled defaults'
/// entries) or the home folder itself (docs/ARCHITECTURE.md, "Decision rules").
fn is_read_boundary(rule: &Rule, home: &Path) -> bool {
    match rule {
        Rule::Literal { root, .. } => {
            let root = root.as_slice();
            root == b"/" || root == b"/home" || root == b"/Users" || root == &*path_bytes(home)
        }
        Rule::Glob(_) => false,
    }
}

/// A policy's filesystem lists compiled for fast matching against absolute paths.
#[derive(Debug, Clone)]
pub struct PolicyMatcher {
    project_dir: PathBuf,
    /// Every list's rules.
    lists: FsLists<RuleSet>,
    /// The denyRead rules that are boundaries (reads under them are asked about).
    deny_read_ask: RuleSet,
    /// The other denyRead rules (reads under them are denied without asking).
    deny_read_never: RuleSet,
}

impl PolicyMatcher {
    /// Compile the filesystem lists of `config` for a project and home directory.
    pub fn new(config: &SandboxConfig, project_dir: &Path, home: &Path) -> Self {
        let project_dir = normalize_lexically(project_dir);
        let home = normalize_lexically(home);
        let lists = config
            .filesystem
            .map(|_, entries| RuleSet::new(entries, &project_dir, &home));
        let (deny_read_ask, deny_read_never) = lists.deny_read.split_boundaries(&home);
        Self {
            lists,
            deny_read_ask,
            deny_read_never,
            project_dir,
        }
    }

    /// A matcher for one entry of one list, to ask what that entry alone covers.
    pub fn single(list: FsList, entry: &str, project_dir: &Path, home: &Path) -> Self {
        let mut config = SandboxConfig::default();
        config.filesystem[list].push(entry.to_owned());
        Self::new(&config, project_dir, home)
    }

    /// `path` absolute (relative paths are project-based) and lexically normal, and its
    /// depth. A path already so (as landstrip sends them) is used as it is, without the
    /// allocation and component walk of [`normalize_lexically`].
    fn prepare<'p>(&self, path: &'p Path) -> (Cow<'p, Path>, usize) {
        if let Some(depth) = normal_absolute_depth(path) {
            return (Cow::Borrowed(path), depth);
        }
        let normal = if path.is_absolute() {
            normalize_lexically(path)
        } else {
            normalize_lexically(&self.project_dir.join(path))
        };
        let depth = depth(&normal);
        (Cow::Owned(normal), depth)
    }

    /// Whether some entry of `list` covers `path` (relative paths are project-based).
    pub fn matches(&self, list: FsList, path: &Path) -> bool {
        let (path, path_depth) = self.prepare(path);
        self.lists[list].any(&path_bytes(&path), path_depth)
    }

    /// Reads: never under a denyReadAlways root; otherwise allowed unless a denyRead
    /// covers the path and no allowRead at least as specific as the most specific such
    /// denyRead does.
    pub fn read_allowed(&self, path: &Path) -> bool {
        let (path, path_depth) = self.prepare(path);
        let bytes = path_bytes(&path);
        if self.lists.deny_read_always.any(&bytes, path_depth) {
            return false;
        }
        match self.lists.deny_read.best(&bytes, path_depth) {
            None => true,
            Some(denied) => self
                .lists
                .allow_read
                .best(&bytes, path_depth)
                .is_some_and(|allowed| allowed >= denied),
        }
    }

    /// Writes: allowed when some allowWrite covers the path and no denyWrite or
    /// denyWriteAlways does.
    pub fn write_allowed(&self, path: &Path) -> bool {
        let (path, path_depth) = self.prepare(path);
        let bytes = path_bytes(&path);
        self.lists.allow_write.any(&bytes, path_depth)
            && !self.lists.deny_write.any(&bytes, path_depth)
            && !self.lists.deny_write_always.any(&bytes, path_depth)
    }

    /// Whether some denyWrite or denyWriteAlways covers the path (no approval can lift
    /// that).
    pub fn write_hard_denied(&self, path: &Path) -> bool {
        let (path, path_depth) = self.prepare(path);
        let bytes = path_bytes(&path);
        self.lists.deny_write.any(&bytes, path_depth)
            || self.lists.deny_write_always.any(&bytes, path_depth)
    }

    /// Whether a read is denied without asking: a denyReadAlways root covers it (no allow
    /// entry lifts that), or the most specific denyRead entry covering it is not a boundary
    /// (`/`, `/home`, `/Users`, the home folder) — a place a person (or a "never" answer)
    /// named — and no allowRead at least as specific covers it (then landstrip itself
    /// allows the read). On a tie the named place counts.
    pub fn read_hard_denied(&self, path: &Path) -> bool {
        let (path, path_depth) = self.prepare(path);
        let bytes = path_bytes(&path);
        if self.lists.deny_read_always.any(&bytes, path_depth) {
            return true;
        }
        let Some(never) = self.deny_read_never.best(&bytes, path_depth) else {
            return false;
        };
        let ask = self.deny_read_ask.best(&bytes, path_depth);
        let allowed = self.lists.allow_read.best(&bytes, path_depth);
        ask.is_none_or(|ask| never >= ask) && allowed.is_none_or(|allowed| allowed < never)
    }
}

fn resolve_all(entries: &[String], project_dir: &Path, home: &Path) -> Vec<String> {
    entries
        .iter()
        .map(|entry| {
            resolve_entry(entry, project_dir, home)
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

/// The policy file landstrip reads, built the way the plugin builds it: the
/// network switches and every filesystem entry made absolute. Two differences from
/// the real plugin: entries are resolved lexically (the plugin also resolves
/// symlinks), and there is no `httpProxyPort` (the plugin's per-call domain proxy).
///
/// For landstrip 0.19.2, which knows `denyReadAlways` but not `denyWriteAlways`: the
/// denyWriteAlways roots are added to `denyWrite` (which already beats every allowWrite
/// there, and whose writes reach the app as hard denials), and `denyReadAlways` is passed
/// only when it has entries, so a policy without any still suits older landstrip.
///
/// For landstrip 0.18.27, which silently ignores `denyReadAlways` (a read under a root
/// succeeds, unasked): the denyReadAlways roots are added to `denyRead` too, and the
/// allowRead entries equal to or under a root are left out, since landstrip lets such an
/// entry re-open the whole denyRead root it lies in. 0.19.2 resolves its denyReadAlways
/// roots to just that itself (`landstrip policy resolve` prints the same policy with and
/// without the hand-over), so it needs no check of the release.
///
/// `shell` is the plugin's own (landstrip refuses the key) and `windows` applies on
/// Windows only: neither is passed.
pub fn landstrip_policy_json(config: &SandboxConfig, project_dir: &Path, home: &Path) -> Value {
    let fs = &config.filesystem;
    let net = &config.network;
    let mut deny_write = resolve_all(&fs.deny_write, project_dir, home);
    for always in resolve_all(&fs.deny_write_always, project_dir, home) {
        if !deny_write.contains(&always) {
            deny_write.push(always);
        }
    }
    let mut deny_read = resolve_all(&fs.deny_read, project_dir, home);
    for always in resolve_all(&fs.deny_read_always, project_dir, home) {
        if !deny_read.contains(&always) {
            deny_read.push(always);
        }
    }
    let read_always = RuleSet::new(&fs.deny_read_always, project_dir, home);
    let allow_read: Vec<String> = resolve_all(&fs.allow_read, project_dir, home)
        .into_iter()
        .filter(|entry| !read_always.any(entry.as_bytes(), depth(Path::new(entry))))
        .collect();
    let mut policy = json!({
        "network": {
            "allowNetwork": net.allow_network,
            "allowLocalBinding": net.allow_local_binding,
            "allowAllUnixSockets": net.allow_all_unix_sockets,
            "allowUnixSockets": net.allow_unix_sockets,
        },
        "filesystem": {
            "denyRead": deny_read,
            "allowRead": allow_read,
            "allowWrite": resolve_all(&fs.allow_write, project_dir, home),
            "denyWrite": deny_write,
        },
    });
    if !fs.deny_read_always.is_empty() {
        policy["filesystem"]["denyReadAlways"] =
            json!(resolve_all(&fs.deny_read_always, project_dir, home));
    }
    policy
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::defaults::defaults;

    const PROJECT: &str = "/home/u/proj";
    const HOME: &str = "/home/u";

    fn resolve(entry: &str) -> String {
        resolve_entry(entry, Path::new(PROJECT), Path::new(HOME))
            .to_string_lossy()
            .into_owned()
    }

    fn glob(pattern: &str, path: &str) -> bool {
        Glob::new(pattern.as_bytes()).is_match(path.as_bytes())
    }

    fn config(
        deny_read: &[&str],
        allow_read: &[&str],
        allow_write: &[&str],
        deny_write: &[&str],
    ) -> SandboxConfig {
        let v = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut config = SandboxConfig::default();
        config.filesystem.deny_read = v(deny_read);
        config.filesystem.allow_read = v(allow_read);
        config.filesystem.allow_write = v(allow_write);
        config.filesystem.deny_write = v(deny_write);
        config
    }

    fn matcher(config: &SandboxConfig) -> PolicyMatcher {
        PolicyMatcher::new(config, Path::new(PROJECT), Path::new(HOME))
    }

    #[test]
    fn resolves_home_relative_absolute_and_globs() {
        assert_eq!(resolve("~"), "/home/u");
        assert_eq!(resolve("~/.gitconfig"), "/home/u/.gitconfig");
        assert_eq!(resolve("$HOME"), "/home/u");
        assert_eq!(resolve("$HOME/.cargo/"), "/home/u/.cargo");
        assert_eq!(resolve("~//x//y/"), "/home/u/x/y");
        assert_eq!(resolve("."), "/home/u/proj");
        assert_eq!(resolve(""), "/home/u/proj");
        assert_eq!(resolve("src/./lib/../main.rs"), "/home/u/proj/src/main.rs");
        assert_eq!(resolve("../other"), "/home/u/other");
        assert_eq!(resolve("~user/x"), "/home/u/proj/~user/x");
        assert_eq!(resolve("$HOMEx"), "/home/u/proj/$HOMEx");
        assert_eq!(resolve("/etc//hosts/"), "/etc/hosts");
        assert_eq!(resolve("/../.."), "/");
        assert_eq!(resolve("**/.env"), "/home/u/proj/**/.env");
        assert_eq!(resolve("~/.ssh/*.pub"), "/home/u/.ssh/*.pub");
        assert!(is_glob("a[b]") && is_glob("x?") && is_glob("**") && !is_glob("~/.x"));
    }

    #[test]
    fn glob_semantics() {
        assert!(glob("/p/**/.env", "/p/.env"));
        assert!(glob("/p/**/.env", "/p/a/b/.env"));
        assert!(!glob("/p/**/.env", "/p/.envx"));
        assert!(!glob("/p/**/.env", "/p/a.env"));
        assert!(!glob("/p/**/.env", "/q/.env"));
        assert!(glob("/p/**/.env.*", "/p/x/.env.local"));
        assert!(!glob("/p/**/.env.*", "/p/x/.env"));
        assert!(glob("/p/**/*.pem", "/p/key.pem"));
        assert!(glob("/p/**/*.pem", "/p/a/b/c.pem"));
        assert!(!glob("/p/**/*.pem", "/p/a/b/c.pem/d"));
        assert!(glob("/p/*.key", "/p/a.key"));
        assert!(!glob("/p/*.key", "/p/a/b.key"));
        assert!(glob("/p/**", "/p/a/b"));
        assert!(glob("/p/a**", "/p/ab/c"));
        assert!(glob("/p/?.txt", "/p/a.txt"));
        assert!(!glob("/p/?.txt", "/p/ab.txt"));
        assert!(!glob("/p/a?b", "/p/a/b"));
        assert!(glob("/p/[abc].rs", "/p/b.rs"));
        assert!(glob("/p/[a-c]x", "/p/cx"));
        assert!(!glob("/p/[a-c]x", "/p/dx"));
        assert!(glob("/p/[x", "/p/[x"));
        assert!(glob("/p/a]", "/p/a]"));
        assert!(glob("/**/x", "/x"));
    }

    #[test]
    fn literal_entries_cover_on_component_boundaries() {
        let m = matcher(&config(&[], &[], &["/a/b", "/"], &["/a/b"]));
        assert!(m.matches(FsList::DenyWrite, Path::new("/a/b")));
        assert!(m.matches(FsList::DenyWrite, Path::new("/a/b/c")));
        assert!(!m.matches(FsList::DenyWrite, Path::new("/a/bc")));
        assert!(!m.matches(FsList::DenyWrite, Path::new("/a")));
        assert!(m.matches(FsList::AllowWrite, Path::new("/anything/at/all")));
        // Query paths are normalised too.
        assert!(m.matches(FsList::DenyWrite, Path::new("/a/x/../b/./c/")));
        assert!(!m.matches(FsList::DenyWrite, Path::new("/a/b/../bc")));
    }

    #[test]
    fn read_specificity_rule() {
        let m = matcher(&config(&["/home"], &["/home/u/proj"], &[], &[]));
        assert!(m.read_allowed(Path::new("/home/u/proj/x")));
        assert!(m.read_allowed(Path::new("/home/u/proj")));
        assert!(!m.read_allowed(Path::new("/home/u/other")));
        assert!(!m.read_allowed(Path::new("/home")));
        assert!(m.read_allowed(Path::new("/etc/hosts")));

        // A deeper deny beats a shallower allow; a tie goes to allow.
        let m = matcher(&config(
            &["/home/u/proj/secret"],
            &["/home/u/proj"],
            &[],
            &[],
        ));
        assert!(!m.read_allowed(Path::new("/home/u/proj/secret/k")));
        assert!(m.read_allowed(Path::new("/home/u/proj/open")));
        let m = matcher(&config(&["/data"], &["/data"], &[], &[]));
        assert!(m.read_allowed(Path::new("/data/x")));

        // A glob ranks at the depth of the path itself.
        let m = matcher(&config(&["/home"], &["/home/**/*.md"], &[], &[]));
        assert!(m.read_allowed(Path::new("/home/u/a.md")));
        assert!(!m.read_allowed(Path::new("/home/u/a.rs")));
        let m = matcher(&config(&["**/.env"], &["."], &[], &[]));
        assert!(!m.read_allowed(Path::new("/home/u/proj/a/.env")));
        assert!(m.read_allowed(Path::new("/home/u/proj/a/b")));
    }

    #[test]
    fn defaults_behave_like_the_plugin() {
        let m = matcher(&defaults());
        assert!(m.read_allowed(Path::new("/home/u/proj/src/main.rs")));
        assert!(m.read_allowed(Path::new("/home/u/.gitconfig")));
        assert!(!m.read_allowed(Path::new("/home/u/.ssh/id_ed25519")));
        assert!(!m.read_allowed(Path::new("/home/other/x")));
        assert!(m.read_allowed(Path::new("/usr/lib/x")));

        assert!(m.write_allowed(Path::new("/home/u/proj/src/main.rs")));
        assert!(m.write_allowed(Path::new("/dev/null")));
        assert!(m.write_allowed(Path::new("src/relative.rs")));
        assert!(!m.write_allowed(Path::new("/home/u/proj/.env")));
        assert!(!m.write_allowed(Path::new("/home/u/proj/a/.env.local")));
        assert!(!m.write_allowed(Path::new("/home/u/proj/certs/server.pem")));
        assert!(!m.write_allowed(Path::new("/home/u/proj/.opencode/sandbox.json")));
        assert!(!m.write_allowed(Path::new("/tmp/x")));
        assert!(!m.write_allowed(Path::new("/home/u/projx/a")));

        assert!(m.write_hard_denied(Path::new("/home/u/proj/.env")));
        assert!(m.write_hard_denied(Path::new("/home/u/.config/opencode/sandbox.json")));
        assert!(!m.write_hard_denied(Path::new("/tmp/x")));
        assert!(!m.write_hard_denied(Path::new("/home/u/proj/.envrc")));
    }

    #[test]
    fn policy_json_for_landstrip() {
        let value = landstrip_policy_json(&defaults(), Path::new(PROJECT), Path::new(HOME));
        let expected = json!({
            "network": {
                "allowNetwork": false,
                "allowLocalBinding": false,
                "allowAllUnixSockets": false,
                "allowUnixSockets": [],
            },
            "filesystem": {
                "denyRead": ["/Users", "/home"],
                "allowRead": ["/home/u/proj", "/home/u/.gitconfig", "/home/u/.config/git/config", "/dev/null"],
                "allowWrite": ["/home/u/proj", "/dev/null"],
                "denyWrite": [
                    "/home/u/proj/**/.env",
                    "/home/u/proj/**/.env.*",
                    "/home/u/proj/**/*.pem",
                    "/home/u/proj/**/*.key",
                    "/home/u/proj/.opencode/sandbox.json",
                    "/home/u/.config/opencode/sandbox.json",
                ],
            },
        });
        assert_eq!(value, expected);
        // Key order as the plugin writes it.
        let text = serde_json::to_string(&value).expect("serialises");
        assert!(text.starts_with(r#"{"network":{"allowNetwork":false,"allowLocalBinding""#));
    }

    #[test]
    fn a_named_deny_read_denies_while_the_boundaries_ask() {
        let home = Path::new(HOME);
        let project = Path::new(PROJECT);
        let mut config = defaults();
        let check = |config: &SandboxConfig, path: &str| {
            PolicyMatcher::new(config, project, home).read_hard_denied(Path::new(path))
        };
        // The bundled /home asks; its allowRead exceptions are allowed anyway.
        assert!(!check(&config, "/home/u/docs/a.txt"));
        assert!(!check(&config, "/home/u/.gitconfig"));
        // A home folder or the whole filesystem written by a person still only asks.
        config
            .filesystem
            .deny_read
            .extend(["~".to_owned(), "/".to_owned()]);
        assert!(!check(&config, "/home/u/docs/a.txt"));
        assert!(!check(&config, "/etc/hosts"));
        // A named place ("never", or written by hand) is denied without asking...
        config.filesystem.deny_read.push("~/docs".to_owned());
        assert!(check(&config, "/home/u/docs/a.txt"));
        assert!(check(&config, "/home/u/docs"));
        assert!(!check(&config, "/home/u/docsx"));
        // ...unless an allowRead at least as specific covers the read (landstrip allows it).
        config
            .filesystem
            .allow_read
            .push("~/docs/public".to_owned());
        assert!(!check(&config, "/home/u/docs/public/b"));
        config.filesystem.allow_read.push("~/docs".to_owned());
        assert!(
            !check(&config, "/home/u/docs/a.txt"),
            "a tie goes to allowRead"
        );
        // A glob names files wherever they are.
        let mut globbed = defaults();
        globbed
            .filesystem
            .deny_read
            .push("~/**/*.secret".to_owned());
        assert!(check(&globbed, "/home/u/x/y.secret"));
        // A boundary more specific than the named entry decides: it asks.
        let mut nested = defaults();
        nested
            .filesystem
            .deny_read
            .extend(["/var".to_owned(), "~".to_owned()]);
        let var_home = Path::new("/var/home/u");
        let matcher = PolicyMatcher::new(&nested, project, var_home);
        assert!(!matcher.read_hard_denied(Path::new("/var/home/u/x")));
        assert!(matcher.read_hard_denied(Path::new("/var/lib/x")));
    }

    fn with_always(read: &[&str], write: &[&str]) -> SandboxConfig {
        let mut config = defaults();
        config.filesystem.deny_read_always = read.iter().map(|s| (*s).to_owned()).collect();
        config.filesystem.deny_write_always = write.iter().map(|s| (*s).to_owned()).collect();
        config
    }

    #[test]
    fn always_roots_beat_every_allow_entry_however_specific() {
        let mut config = with_always(&["~/.ssh"], &["locked"]);
        config.filesystem.allow_read.push("~/.ssh/config".into());
        config.filesystem.allow_write.push("locked/inner".into());
        let m = matcher(&config);
        assert!(!m.read_allowed(Path::new("/home/u/.ssh/config")));
        assert!(m.read_hard_denied(Path::new("/home/u/.ssh")));
        assert!(m.read_hard_denied(Path::new("/home/u/.ssh/config")));
        assert!(!m.read_hard_denied(Path::new("/home/u/.sshx")));
        assert!(!m.write_allowed(Path::new("/home/u/proj/locked/inner/a")));
        assert!(m.write_hard_denied(Path::new("/home/u/proj/locked")));
        assert!(m.write_hard_denied(Path::new("/home/u/proj/locked/inner/a")));
        assert!(m.write_allowed(Path::new("/home/u/proj/open/a")));
        // Each list guards its own operation only.
        assert!(!m.write_hard_denied(Path::new("/home/u/.ssh/config")));
        assert!(!m.read_hard_denied(Path::new("/home/u/proj/locked/a")));
    }

    #[test]
    fn landstrip_gets_the_write_always_roots_as_deny_write() {
        let value = landstrip_policy_json(
            &with_always(
                &["~/.ssh"],
                &["locked", "/home/u/.config/opencode/sandbox.json"],
            ),
            Path::new(PROJECT),
            Path::new(HOME),
        );
        let deny_write = value["filesystem"]["denyWrite"].as_array().expect("list");
        assert_eq!(
            deny_write.last(),
            Some(&json!("/home/u/proj/locked")),
            "{deny_write:?}"
        );
        // Already there from the defaults: not twice.
        let global = json!("/home/u/.config/opencode/sandbox.json");
        assert_eq!(deny_write.iter().filter(|e| **e == global).count(), 1);
        assert_eq!(
            value["filesystem"]["denyReadAlways"],
            json!(["/home/u/.ssh"])
        );
        assert!(value["filesystem"].get("denyWriteAlways").is_none());
        assert!(value.get("shell").is_none() && value.get("windows").is_none());
    }

    #[test]
    fn landstrip_gets_the_read_always_roots_as_deny_read_too_without_allow_entries_under_them() {
        let mut config = with_always(&["~/.ssh", "secret", "**/*.keys"], &[]);
        config.filesystem.allow_read.extend(
            [
                "~",
                "~/.ssh",
                "~/.ssh/config",
                "secret/inner",
                "docs",
                "a/b.keys",
            ]
            .map(str::to_owned),
        );
        let value = landstrip_policy_json(&config, Path::new(PROJECT), Path::new(HOME));
        let fs = &value["filesystem"];
        // For releases that ignore denyReadAlways (0.18.27), after the plugin's own.
        let deny_read = fs["denyRead"].as_array().expect("list");
        assert_eq!(
            deny_read[deny_read.len() - 3..],
            [
                json!("/home/u/.ssh"),
                json!("/home/u/proj/secret"),
                json!("/home/u/proj/**/*.keys")
            ],
            "{deny_read:?}"
        );
        // An entry equal to or under a root would re-open all of it there; one above it
        // does not.
        let allow_read: Vec<&str> = fs["allowRead"]
            .as_array()
            .expect("list")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for gone in [
            "/home/u/.ssh",
            "/home/u/.ssh/config",
            "/home/u/proj/secret/inner",
            "/home/u/proj/a/b.keys",
        ] {
            assert!(!allow_read.contains(&gone), "{gone}: {allow_read:?}");
        }
        for kept in ["/home/u", "/home/u/proj", "/home/u/proj/docs"] {
            assert!(allow_read.contains(&kept), "{kept}: {allow_read:?}");
        }
        // And as itself, for releases that know it.
        assert_eq!(
            fs["denyReadAlways"],
            json!([
                "/home/u/.ssh",
                "/home/u/proj/secret",
                "/home/u/proj/**/*.keys"
            ])
        );
    }

    /// Whether `path` may be read (a read list) or written (a write list), and whether that
    /// is denied without asking.
    fn effect(m: &PolicyMatcher, list: FsList, path: &Path) -> (bool, bool) {
        if list.reads() {
            (m.read_allowed(path), m.read_hard_denied(path))
        } else {
            (m.write_allowed(path), m.write_hard_denied(path))
        }
    }

    #[test]
    fn every_list_round_trips_from_its_file_through_the_merge_into_the_matcher() {
        use crate::policy::merge::{EffectivePolicy, Source};
        use crate::policy::schema::parse_overrides;

        let (project, home) = (Path::new(PROJECT), Path::new(HOME));
        let base = EffectivePolicy::layered(None, None);
        let base_matcher = PolicyMatcher::new(&base.config, project, home);
        for list in FsList::ALL {
            // An allow entry where the defaults keep the access; a deny entry where they
            // give it.
            let (entry, probe) = if list.allows() {
                ("~/notes", Path::new("/home/u/notes/a"))
            } else {
                ("notes", Path::new("/home/u/proj/notes/a"))
            };
            let text = format!(
                r#"{{"filesystem": {{"{}": ["{entry}"]}}}}"#,
                list.json_key()
            );
            let file = parse_overrides(&text, Path::new("/p/.opencode/sandbox.json"))
                .unwrap_or_else(|e| panic!("{list:?}: {e}"));
            let policy = EffectivePolicy::layered(None, Some(&file));
            assert_eq!(
                policy.fs_entry_source(list, entry),
                Some(Source::Project),
                "{list:?}: the merge keeps the entry and its source"
            );
            let m = PolicyMatcher::new(&policy.config, project, home);
            assert_eq!(
                effect(&base_matcher, list, probe),
                (list.denies(), false),
                "{list:?}: the defaults alone"
            );
            assert_eq!(
                effect(&m, list, probe),
                (list.allows(), list.denies()),
                "{list:?}: the entry has its list's effect on {}",
                probe.display()
            );
            for other in FsList::ALL {
                assert_eq!(
                    m.matches(other, probe),
                    other == list || base_matcher.matches(other, probe),
                    "{list:?}'s entry as seen through {other:?}"
                );
            }
        }
    }
}

#[cfg(test)]
mod fast_path_tests {
    //! The matcher takes a path already absolute and normal as it is; that shortcut must
    //! agree with the full normalisation on every path.
    use super::*;
    use proptest::prelude::*;

    /// Paths made of the pieces that matter: names, `.`, `..`, empty segments.
    fn paths() -> impl Strategy<Value = String> {
        let segment = prop_oneof![
            Just("a".to_owned()),
            Just("b c".to_owned()),
            Just(".".to_owned()),
            Just("..".to_owned()),
            Just(String::new()),
            Just(".hidden".to_owned()),
            Just("...".to_owned()),
        ];
        (any::<bool>(), prop::collection::vec(segment, 0..7)).prop_map(|(absolute, parts)| {
            let joined = parts.join("/");
            if absolute {
                format!("/{joined}")
            } else {
                joined
            }
        })
    }

    proptest! {
        #[test]
        fn a_path_taken_as_it_is_is_what_normalising_would_give(path in paths()) {
            let path = Path::new(&path);
            if let Some(fast) = normal_absolute_depth(path) {
                let normal = normalize_lexically(path);
                prop_assert_eq!(normal.as_os_str(), path.as_os_str());
                prop_assert_eq!(fast, depth(path));
            }
        }

        #[test]
        fn the_matcher_decides_the_same_either_way(path in paths()) {
            let project = Path::new("/home/dev/proj");
            let matcher = PolicyMatcher::single(FsList::DenyWrite, "/home/dev/proj/a", project, Path::new("/home/dev"));
            // As given (relative ones are project-based), and written out absolute under
            // the project, where the rule is: both must decide as their normal form does.
            let absolute = format!("/home/dev/proj/{path}");
            for asked in [path.as_str(), absolute.as_str()] {
                let asked = Path::new(asked);
                let normal = if asked.is_absolute() {
                    normalize_lexically(asked)
                } else {
                    normalize_lexically(&project.join(asked))
                };
                prop_assert_eq!(
                    matcher.write_hard_denied(asked),
                    matcher.write_hard_denied(&normal),
                    "{} against {}", asked.display(), normal.display()
                );
            }
        }
    }

    #[test]
    fn common_paths_take_the_shortcut() {
        assert_eq!(normal_absolute_depth(Path::new("/")), Some(0));
        assert_eq!(normal_absolute_depth(Path::new("/tmp/x/f1")), Some(3));
        for slow in ["/tmp//x", "/tmp/./x", "/tmp/../x", "/tmp/x/", "tmp/x", ""] {
            assert_eq!(normal_absolute_depth(Path::new(slow)), None, "{slow}");
        }
    }
}
