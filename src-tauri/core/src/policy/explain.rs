//! Policy entries in words, as landstrip will read them: what an entry covers, whether it
//! grants very broad access, and whether another entry of the same list already covers it.
//! Used by the settings view and `ctl policy show` (docs/ARCHITECTURE.md, "Policy files").

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::matcher::{is_glob, resolve_entry, PolicyMatcher};
use super::schema::FsList;
use crate::policy::sensitive;
use crate::words::home_relative;

/// One entry of a filesystem list, explained.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Explained {
    /// The entry as the file spells it.
    pub entry: String,
    /// The absolute path or pattern it resolves to (home-relative).
    pub resolved: String,
    /// What it means, e.g. "~/.cargo — everything under it may be written".
    pub meaning: String,
    /// Why it deserves a second look before saving, if it grants very broad access.
    pub broad: Option<String>,
}

/// What an allow list gives, or a deny list takes away, in words.
fn verb(list: FsList) -> &'static str {
    match list {
        FsList::AllowRead => "may be read",
        FsList::AllowWrite => "may be written",
        FsList::DenyRead => "may not be read (unless a more specific allowRead says so)",
        FsList::DenyWrite => "may never be written; no approval overrides it",
        FsList::DenyReadAlways => {
            "may never be read: no approval, session grant or allow entry overrides it"
        }
        FsList::DenyWriteAlways => {
            "may never be written: no approval, session grant or allow entry overrides it"
        }
    }
}

/// Describes a directory for people: "the project", "your home folder", "~/.cargo".
fn place(path: &Path, project: &Path, home: &Path) -> String {
    if path == project {
        "the project".to_owned()
    } else if let Ok(rest) = path.strip_prefix(project) {
        format!("the project's {}", rest.display())
    } else if path == home {
        "your home folder".to_owned()
    } else {
        home_relative(path, home)
    }
}

/// Explains `entry` of `list` for a project. `path_dirs` are the directories on `$PATH`
/// (writing there lets a program plant commands others will run).
pub fn explain(
    entry: &str,
    list: FsList,
    project: &Path,
    home: &Path,
    path_dirs: &[PathBuf],
) -> Explained {
    let resolved = resolve_entry(entry, project, home);
    let shown = home_relative(&resolved, home);
    let meaning = if is_glob(entry) {
        glob_meaning(&resolved, project, home, list)
    } else {
        let what = match std::fs::metadata(&resolved) {
            Ok(meta) if meta.is_dir() => {
                format!("{} and everything in it", place(&resolved, project, home))
            }
            Ok(_) => format!("the file {shown}"),
            Err(_) => {
                format!("{shown} (not there now; a folder would count with everything in it)")
            }
        };
        format!("{what} {}", verb(list))
    };
    // Only what an entry opens up can be too broad.
    let broad = if list.allows() {
        broad_reason(&resolved, entry, list, home, path_dirs)
    } else {
        None
    };
    Explained {
        entry: entry.to_owned(),
        resolved: shown,
        meaning,
        broad,
    }
}

fn glob_meaning(pattern: &Path, project: &Path, home: &Path, list: FsList) -> String {
    let text = pattern.to_string_lossy();
    // `<root>/**/<name>`: a name at any depth; `<root>/**`: everything under a root.
    if let Some((root, name)) = text.split_once("/**/") {
        if !is_glob(root) && !is_glob(name) {
            return format!(
                "any {name} at any depth in {} {}",
                place(Path::new(root), project, home),
                verb(list)
            );
        }
        if !is_glob(root) {
            return format!(
                "paths matching {name} at any depth in {} {}",
                place(Path::new(root), project, home),
                verb(list)
            );
        }
    }
    if let Some(root) = text.strip_suffix("/**") {
        if !is_glob(root) {
            return format!(
                "everything under {} {}",
                place(Path::new(root), project, home),
                verb(list)
            );
        }
    }
    format!(
        "paths matching {} {}",
        home_relative(pattern, home),
        verb(list)
    )
}

fn broad_reason(
    resolved: &Path,
    entry: &str,
    list: FsList,
    home: &Path,
    path_dirs: &[PathBuf],
) -> Option<String> {
    let text = resolved.to_string_lossy();
    let root = if is_glob(entry) {
        // The literal directory a pattern starts from.
        let cut = text.find(['*', '?', '[']).unwrap_or(text.len());
        let literal = &text[..cut];
        PathBuf::from(
            literal
                .rsplit_once('/')
                .map_or("/", |(dir, _)| if dir.is_empty() { "/" } else { dir }),
        )
    } else {
        resolved.to_path_buf()
    };
    if root == Path::new("/") {
        return Some("the whole filesystem".to_owned());
    }
    if root == home {
        return Some("your whole home folder".to_owned());
    }
    if home.parent().is_some_and(|p| root == p)
        || root == Path::new("/home")
        || root == Path::new("/Users")
    {
        return Some("every user's home folder".to_owned());
    }
    if list == FsList::AllowWrite {
        if let Some(dir) = path_dirs.iter().find(|d| d.starts_with(&root)) {
            return Some(format!(
                "{} is on $PATH: a program could plant commands there",
                dir.display()
            ));
        }
    }
    sensitive::covered_by(&root, home).first().map(|s| {
        format!(
            "it covers {} ({})",
            home_relative(&s.location, home),
            s.what
        )
    })
}

/// The root of `always` (the entries of the hard-denial list that guards `list`:
/// denyReadAlways for allowRead, denyWriteAlways for allowWrite) that `entry` of `list`
/// would be equal to or under: such an entry could never take effect, as the later
/// plugin's "block approvals and equal/nested grants" says. None for the other lists.
pub fn blocked_by_always<'a>(
    entry: &str,
    list: FsList,
    always: impl IntoIterator<Item = &'a str>,
    project: &Path,
    home: &Path,
) -> Option<&'a str> {
    let guard = list.blocked_by()?;
    let target = resolve_entry(entry, project, home);
    always
        .into_iter()
        .find(|root| PolicyMatcher::single(guard, root, project, home).matches(guard, &target))
}

/// The hard-denial root in force for `project` (both policy files as they are on disk)
/// that `entry` of `list` would be equal to or under, with the list holding it. None when
/// there is none, or a file does not parse (then nothing can be saved anyway).
pub fn always_root_in_force(
    entry: &str,
    list: FsList,
    project: &Path,
    home: &Path,
) -> Option<(FsList, String)> {
    let guard = list.blocked_by()?;
    let loaded = super::cache::load_effective(home, project).ok()?;
    let roots = loaded.config.filesystem.list(guard);
    blocked_by_always(entry, list, roots.iter().map(String::as_str), project, home)
        .map(|root| (guard, root.to_owned()))
}

/// The entry of `others` (same list) that already covers `entry`, if any: `entry` adds
/// nothing while that one is there. Patterns are never called redundant (what they match
/// cannot be told apart lexically in general). For many entries of one list, build a
/// [`ListCoverage`] once instead.
pub fn covered_by_other<'a>(
    entry: &str,
    others: impl IntoIterator<Item = &'a str>,
    list: FsList,
    project: &Path,
    home: &Path,
) -> Option<&'a str> {
    ListCoverage::new(list, others, project, home).covering(entry)
}

/// The entries of one filesystem list, each resolved and matched once, to tell which entry
/// covers another (the settings view asks it of every entry of the list: resolving every
/// pair again was quadratic in resolutions and matcher builds).
pub struct ListCoverage<'a> {
    list: FsList,
    project: PathBuf,
    home: PathBuf,
    entries: Vec<(&'a str, PathBuf, PolicyMatcher)>,
}

impl<'a> ListCoverage<'a> {
    /// Resolves `entries` of `list` for `project` once.
    pub fn new(
        list: FsList,
        entries: impl IntoIterator<Item = &'a str>,
        project: &Path,
        home: &Path,
    ) -> Self {
        let entries = entries
            .into_iter()
            .map(|e| {
                let resolved = resolve_entry(e, project, home);
                (e, resolved, PolicyMatcher::single(list, e, project, home))
            })
            .collect();
        Self {
            list,
            project: project.to_path_buf(),
            home: home.to_path_buf(),
            entries,
        }
    }

    /// The first other entry that covers `entry` ([`covered_by_other`]'s rule).
    pub fn covering(&self, entry: &str) -> Option<&'a str> {
        if is_glob(entry) {
            return None;
        }
        let target = self
            .entries
            .iter()
            .find(|(e, _, _)| *e == entry)
            .map_or_else(
                || resolve_entry(entry, &self.project, &self.home),
                |(_, resolved, _)| resolved.clone(),
            );
        self.entries
            .iter()
            .find(|(other, resolved, matcher)| {
                *other != entry && *resolved != target && matcher.matches(self.list, &target)
            })
            .map(|(other, _, _)| *other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Dirs {
        _root: tempfile::TempDir,
        project: PathBuf,
        home: PathBuf,
    }

    fn dirs() -> Dirs {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().canonicalize().unwrap();
        let home = base.join("home/dev");
        let project = home.join("src/proj");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(home.join(".cargo")).unwrap();
        std::fs::write(home.join(".gitconfig"), "").unwrap();
        Dirs {
            _root: root,
            project,
            home,
        }
    }

    /// What the view asked of every pair before [`ListCoverage`]: each other entry resolved
    /// and matched again for each entry.
    fn pairwise<'a>(entry: &str, all: &'a [&'a str], d: &Dirs) -> Option<&'a str> {
        if is_glob(entry) {
            return None;
        }
        let target = resolve_entry(entry, &d.project, &d.home);
        all.iter().copied().find(|other| {
            *other != entry
                && resolve_entry(other, &d.project, &d.home) != target
                && PolicyMatcher::single(FsList::AllowWrite, other, &d.project, &d.home)
                    .matches(FsList::AllowWrite, &target)
        })
    }

    #[test]
    fn the_coverage_built_once_answers_as_every_pair_did() {
        let d = dirs();
        let all = [
            "~/src",
            "~/src/proj",
            "./build",
            "build/out",
            "/tmp/**",
            "/tmp/x",
            "~/.cargo",
            "$HOME/src",
            ".",
            "..",
            "~/src/proj/a/../b",
            "/",
            "*.log",
        ];
        let coverage = ListCoverage::new(FsList::AllowWrite, all, &d.project, &d.home);
        let mut covered = 0;
        for entry in all
            .iter()
            .copied()
            .chain(["~/src/proj/new", "/tmp/y", "/elsewhere"])
        {
            let want = pairwise(entry, &all, &d);
            assert_eq!(coverage.covering(entry), want, "{entry}");
            covered += usize::from(want.is_some());
        }
        // The table has both kinds, or it would prove little.
        assert!(covered > 3, "{covered}");
    }

    fn say(d: &Dirs, entry: &str, list: FsList) -> Explained {
        explain(
            entry,
            list,
            &d.project,
            &d.home,
            &[PathBuf::from("/usr/bin")],
        )
    }

    #[test]
    fn entries_are_explained_as_landstrip_reads_them() {
        let d = dirs();
        let cargo = say(&d, "~/.cargo", FsList::AllowWrite);
        assert_eq!(cargo.resolved, "~/.cargo");
        assert_eq!(
            cargo.meaning,
            "~/.cargo and everything in it may be written"
        );
        // Not broad as such, but it holds crates.io tokens: worth a second look.
        assert!(cargo
            .broad
            .is_some_and(|b| b.contains("~/.cargo/credentials")));
        assert_eq!(
            say(&d, ".", FsList::AllowRead).meaning,
            "the project and everything in it may be read"
        );
        assert_eq!(
            say(&d, "~/.gitconfig", FsList::AllowRead).meaning,
            "the file ~/.gitconfig may be read"
        );
        assert_eq!(
            say(&d, "**/.env", FsList::DenyWrite).meaning,
            "any .env at any depth in the project may never be written; no approval overrides it"
        );
        assert_eq!(
            say(&d, "build/**", FsList::AllowWrite).meaning,
            "everything under the project's build may be written"
        );
        assert!(say(&d, "/nowhere/x", FsList::AllowRead)
            .meaning
            .contains("not there now"));
    }

    #[test]
    fn very_broad_entries_are_flagged() {
        let d = dirs();
        for (entry, why) in [
            ("/", "the whole filesystem"),
            ("~", "your whole home folder"),
            ("$HOME", "your whole home folder"),
            ("/**", "the whole filesystem"),
            ("~/**/*.txt", "your whole home folder"),
            ("/usr", "on $PATH"),
            ("~/.ssh", "SSH"),
        ] {
            let flagged = say(&d, entry, FsList::AllowWrite).broad;
            assert!(
                flagged.as_deref().is_some_and(|f| f.contains(why)),
                "{entry}: {flagged:?}"
            );
        }
        let home_parent = d.home.parent().unwrap().display().to_string();
        assert!(say(&d, &home_parent, FsList::AllowRead).broad.is_some());
        // Reading /usr/bin is ordinary; a project folder is not broad; deny lists never are.
        assert_eq!(say(&d, "/usr", FsList::AllowRead).broad, None);
        assert_eq!(say(&d, "build", FsList::AllowWrite).broad, None);
        assert_eq!(say(&d, "/", FsList::DenyRead).broad, None);
    }

    #[test]
    fn an_entry_another_covers_is_redundant() {
        let d = dirs();
        let list = ["~/.cargo", "~/.cargo/registry", ".", "build", "**/*.log"];
        let redundant =
            |entry: &str| covered_by_other(entry, list, FsList::AllowWrite, &d.project, &d.home);
        assert_eq!(redundant("~/.cargo/registry"), Some("~/.cargo"));
        assert_eq!(redundant("build"), Some("."));
        assert_eq!(redundant("~/.cargo"), None);
        assert_eq!(redundant("."), None);
        assert_eq!(redundant("**/*.log"), None);
        // The same place spelled twice is a duplicate, not one covering the other.
        let abs = d.project.display().to_string();
        assert_eq!(
            covered_by_other(
                &abs,
                [".", abs.as_str()],
                FsList::AllowRead,
                &d.project,
                &d.home
            ),
            None
        );
    }

    #[test]
    fn an_allow_entry_equal_to_or_under_an_always_root_is_blocked() {
        let d = dirs();
        let always = ["~/.ssh", "secrets"];
        let blocked =
            |entry: &str, list| blocked_by_always(entry, list, always, &d.project, &d.home);
        assert_eq!(blocked("~/.ssh", FsList::AllowRead), Some("~/.ssh"));
        assert_eq!(blocked("~/.ssh/config", FsList::AllowWrite), Some("~/.ssh"));
        let abs = d.project.join("secrets/key").display().to_string();
        assert_eq!(blocked(&abs, FsList::AllowWrite), Some("secrets"));
        assert_eq!(blocked("secrets/**", FsList::AllowWrite), Some("secrets"));
        // Wider than a root, beside one, or a list no root guards: not blocked.
        assert_eq!(blocked("~", FsList::AllowWrite), None);
        assert_eq!(blocked("~/.sshx", FsList::AllowRead), None);
        assert_eq!(blocked("secrets", FsList::DenyWrite), None);
        assert_eq!(blocked("secrets", FsList::DenyWriteAlways), None);
        let say = say(&d, "secrets", FsList::DenyWriteAlways);
        assert!(
            say.meaning
                .contains("no approval, session grant or allow entry"),
            "{}",
            say.meaning
        );
    }
}
