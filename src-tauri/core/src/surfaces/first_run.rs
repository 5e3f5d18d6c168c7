//! The first run: which project directories the welcome window offers. Each source is
//! real and cheap to read, and every directory offered exists:
//!
//! - the directories given with `--project` (served for this run already; checked, so
//!   "Done" keeps serving them at every start);
//! - the directory the app was started from, if it looks like a project (a version
//!   control or opencode directory, or a build file), is neither `/` nor the home, and is
//!   not the app's own checkout or install directory ([`OwnDirs`]: `scripts/run.sh`
//!   changes into the checkout, so there it is always the app's own source);
//! - the projects of this app's own activity log (an earlier run, newest first);
//! - projects a live presenter serves now (opencode's terminal UI): a discovery file
//!   whose owner's working directory hashes to that file's name;
//! - opencode's own project list where it keeps it as JSON files
//!   (`<data dir>/opencode/storage/project/*.json`, `worktree`); opencode 1.x keeps it in
//!   SQLite (`opencode.db`), which is not read here.

use std::collections::HashSet;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::serving::discovery::{self, DiscoveryDir, ReadOutcome};

/// At most this many directories are offered.
pub const MAX_OFFERED: usize = 12;

/// How much of the activity log's end is read for its projects.
const ACTIVITY_TAIL: u64 = 1 << 20;

/// Names whose presence makes a directory look like a project.
const PROJECT_MARKERS: &[&str] = &[
    ".git",
    ".hg",
    ".jj",
    ".svn",
    ".opencode",
    "opencode.json",
    "AGENTS.md",
    "package.json",
    "Cargo.toml",
    "pyproject.toml",
    "go.mod",
    "Makefile",
    "CMakeLists.txt",
    "pom.xml",
    "build.gradle",
    "Gemfile",
    "composer.json",
];

/// Where a directory offered was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Source {
    /// Given with `--project`.
    Given,
    /// The app was started from it.
    CurrentDir,
    /// A presenter (opencode's terminal UI) serves it now.
    Presenter,
    /// This app's activity log has requests from it.
    Activity,
    /// opencode's project list names it.
    Opencode,
}

/// A directory the welcome window offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Offered {
    /// The canonical directory.
    pub dir: PathBuf,
    /// Where it was found (the first source that named it).
    pub source: Source,
    /// Already served at every start (in the settings); a `--project` one served for
    /// this run only is not.
    pub served: bool,
}

/// What the offer is made from (tests pass their own).
#[derive(Debug, Clone)]
pub struct Sources {
    /// The directories given with `--project`, as given.
    pub given: Vec<PathBuf>,
    /// The directory the app was started from.
    pub current_dir: Option<PathBuf>,
    /// The app's own directories, never offered as the one it was started from.
    pub own: OwnDirs,
    /// The user's home (never offered).
    pub home: PathBuf,
    /// This app's activity log.
    pub activity_file: PathBuf,
    /// The discovery directory.
    pub discovery: DiscoveryDir,
    /// opencode's data directory (`$XDG_DATA_HOME/opencode`).
    pub opencode_data: PathBuf,
}

/// The app's own directories: the source checkout it was built from and where it is
/// installed. The working directory is not offered when it is one of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnDirs {
    /// Checkouts of this app's source (canonical): neither they nor any directory inside
    /// them is offered as the working directory.
    pub checkouts: Vec<PathBuf>,
    /// Install directories (canonical): the executable's directory and, when that is a
    /// `bin`, its parent (`/usr/bin` → `/usr`, `/opt/landstrip-tray/bin` →
    /// `/opt/landstrip-tray`). Only these directories themselves are left out.
    pub install: Vec<PathBuf>,
}

impl OwnDirs {
    /// Finds them from `built_in` (the app crate's `CARGO_MANIFEST_DIR`, baked in at build
    /// time: right for `cargo run` and the tests wherever the target directory is) and
    /// `exe` (the running executable: its install directory, and a checkout holding it
    /// when built in the default `target/`). A directory counts as a checkout only when
    /// it still holds this app's manifest ([`is_app_checkout`]).
    pub fn find(built_in: &Path, exe: Option<&Path>) -> Self {
        let mut own = Self::default();
        let mut checkout = |dir: &Path| {
            if is_app_checkout(dir) {
                if let Ok(dir) = fs::canonicalize(dir) {
                    if !own.checkouts.contains(&dir) {
                        own.checkouts.push(dir);
                    }
                }
            }
        };
        // The app crate is the checkout's `src-tauri/`.
        built_in.parent().into_iter().for_each(&mut checkout);
        let exe = exe.and_then(|e| fs::canonicalize(e).ok());
        if let Some(exe) = &exe {
            exe.ancestors().skip(1).for_each(&mut checkout);
        }
        if let Some(dir) = exe.as_deref().and_then(Path::parent) {
            own.install.push(dir.to_path_buf());
            if dir.file_name().is_some_and(|n| n == "bin") {
                own.install.extend(dir.parent().map(Path::to_path_buf));
            }
        }
        own
    }

    /// Whether `dir` (canonical) is one of them.
    pub fn holds(&self, dir: &Path) -> bool {
        self.checkouts.iter().any(|c| dir.starts_with(c)) || self.install.iter().any(|i| i == dir)
    }
}

/// Whether `dir` is a checkout of this app's source: its `src-tauri/Cargo.toml` names the
/// package `landstrip-tray`.
pub fn is_app_checkout(dir: &Path) -> bool {
    fs::read_to_string(dir.join("src-tauri/Cargo.toml")).is_ok_and(|manifest| {
        manifest
            .lines()
            .any(|l| l.replace(' ', "") == "name=\"landstrip-tray\"")
    })
}

/// Whether `dir` looks like a project: it has one of [`PROJECT_MARKERS`] and is neither
/// `/` nor `home`.
pub fn looks_like_project(dir: &Path, home: &Path) -> bool {
    dir.parent().is_some()
        && dir != home
        && PROJECT_MARKERS
            .iter()
            .any(|name| fs::symlink_metadata(dir.join(name)).is_ok())
}

/// The directories to offer, the `--project` ones first, then the current one, each
/// once, at most [`MAX_OFFERED`]; `served` are the projects already served at every
/// start. Reads files: not for an async worker.
pub fn offered(sources: &Sources, served: &[PathBuf]) -> Vec<Offered> {
    let mut found: Vec<(PathBuf, Source)> = sources
        .given
        .iter()
        .map(|d| (d.clone(), Source::Given))
        .collect();
    if let Some(dir) = &sources.current_dir {
        let own = fs::canonicalize(dir).is_ok_and(|d| sources.own.holds(&d));
        if !own && looks_like_project(dir, &sources.home) {
            found.push((dir.clone(), Source::CurrentDir));
        }
    }
    found.extend(
        presenter_projects(&sources.discovery)
            .into_iter()
            .map(|d| (d, Source::Presenter)),
    );
    found.extend(
        activity_projects(&sources.activity_file)
            .into_iter()
            .map(|d| (d, Source::Activity)),
    );
    found.extend(
        opencode_projects(&sources.opencode_data)
            .into_iter()
            .map(|d| (d, Source::Opencode)),
    );
    let root_or_home = |d: &Path| d.parent().is_none() || d == sources.home;
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (dir, source) in found {
        let Ok(dir) = fs::canonicalize(&dir) else {
            continue;
        };
        if !dir.is_dir() || root_or_home(&dir) || !seen.insert(dir.clone()) {
            continue;
        }
        let served = served.contains(&dir);
        out.push(Offered {
            dir,
            source,
            served,
        });
        if out.len() == MAX_OFFERED {
            break;
        }
    }
    out
}

/// Projects whose discovery file belongs to a live process working in that project (the
/// file's name is the hash of its project, so the owner's directory is checked, not
/// guessed).
fn presenter_projects(discovery: &DiscoveryDir) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(discovery.path()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let file = entry.path();
        let named = file
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("port-") && n.ends_with(".json"));
        if !named {
            continue;
        }
        let ReadOutcome::Record(record) = discovery::read_file(&file) else {
            continue;
        };
        let Ok(cwd) = fs::read_link(format!("/proc/{}/cwd", record.pid)) else {
            continue;
        };
        if discovery.file_for(&cwd) == file {
            out.push(cwd);
        }
    }
    out.sort();
    out
}

/// The projects in the end of the activity log, most recent first.
fn activity_projects(file: &Path) -> Vec<PathBuf> {
    #[derive(Deserialize)]
    struct Line {
        project: String,
    }
    let Ok(mut log) = fs::File::open(file) else {
        return Vec::new();
    };
    let len = log.metadata().map(|m| m.len()).unwrap_or(0);
    let skip_partial = len > ACTIVITY_TAIL;
    if skip_partial {
        use std::io::{Seek, SeekFrom};
        if log.seek(SeekFrom::Start(len - ACTIVITY_TAIL)).is_err() {
            return Vec::new();
        }
    }
    let mut newest_last: Vec<PathBuf> = Vec::new();
    for (i, line) in BufReader::new(log).split(b'\n').enumerate() {
        let Ok(line) = line else { break };
        if i == 0 && skip_partial {
            continue; // begins mid-line
        }
        if let Ok(Line { project }) = serde_json::from_slice::<Line>(&line) {
            let project = PathBuf::from(project);
            newest_last.retain(|p| *p != project);
            newest_last.push(project);
        }
    }
    newest_last.reverse();
    newest_last
}

/// opencode's JSON project files, most recently updated first. opencode's own "global"
/// project (worktree `/`) is left out by [`offered`].
fn opencode_projects(data: &Path) -> Vec<PathBuf> {
    #[derive(Deserialize)]
    struct Time {
        #[serde(default)]
        updated: u64,
    }
    #[derive(Deserialize)]
    struct Project {
        worktree: PathBuf,
        time: Option<Time>,
    }
    let Ok(entries) = fs::read_dir(data.join("storage/project")) else {
        return Vec::new();
    };
    let mut projects: Vec<(u64, PathBuf)> = entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| fs::read(e.path()).ok())
        .filter_map(|bytes| serde_json::from_slice::<Project>(&bytes).ok())
        .map(|p| (p.time.map_or(0, |t| t.updated), p.worktree))
        .collect();
    projects.sort_by_key(|p| std::cmp::Reverse(p.0));
    projects.into_iter().map(|(_, dir)| dir).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct World {
        _root: tempfile::TempDir,
        base: PathBuf,
        sources: Sources,
    }

    fn world() -> World {
        let root = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(root.path()).unwrap();
        for dir in ["home", "runtime", "data/opencode"] {
            fs::create_dir_all(base.join(dir)).unwrap();
        }
        let sources = Sources {
            given: Vec::new(),
            current_dir: None,
            own: OwnDirs::default(),
            home: base.join("home"),
            activity_file: base.join("activity.jsonl"),
            discovery: DiscoveryDir::new(base.join("runtime")),
            opencode_data: base.join("data/opencode"),
        };
        World {
            _root: root,
            base,
            sources,
        }
    }

    fn project(base: &Path, name: &str) -> PathBuf {
        let dir = base.join(name);
        fs::create_dir_all(dir.join(".git")).unwrap();
        dir
    }

    fn dirs(offered: &[Offered]) -> Vec<(PathBuf, Source)> {
        offered.iter().map(|o| (o.dir.clone(), o.source)).collect()
    }

    #[test]
    fn the_current_dir_is_offered_only_when_it_looks_like_a_project() {
        let mut w = world();
        let plain = w.base.join("plain");
        fs::create_dir(&plain).unwrap();
        w.sources.current_dir = Some(plain.clone());
        assert!(offered(&w.sources, &[]).is_empty());
        fs::write(plain.join("Cargo.toml"), "").unwrap();
        assert_eq!(
            dirs(&offered(&w.sources, &[])),
            [(plain.clone(), Source::CurrentDir)]
        );
        // Home and / never, whatever they hold.
        fs::create_dir(w.sources.home.join(".git")).unwrap();
        w.sources.current_dir = Some(w.sources.home.clone());
        assert!(offered(&w.sources, &[]).is_empty());
        assert!(!looks_like_project(Path::new("/"), &w.sources.home));
    }

    #[test]
    fn the_given_directories_come_first_even_when_they_do_not_look_like_projects() {
        let mut w = world();
        let plain = w.base.join("plain");
        fs::create_dir(&plain).unwrap();
        let here = project(&w.base, "here");
        w.sources.given = vec![plain.join("."), here.clone()];
        w.sources.current_dir = Some(here.clone());
        let got = offered(&w.sources, &[]);
        assert_eq!(
            dirs(&got),
            [(plain, Source::Given), (here.clone(), Source::Given)],
            "given as typed, offered canonical and once"
        );
        assert!(got.iter().all(|o| !o.served));
        assert!(offered(&w.sources, &[here])[1].served);
    }

    /// A checkout of this app: `src-tauri/Cargo.toml` naming the package, and `.git`.
    fn checkout(base: &Path, name: &str) -> PathBuf {
        let dir = project(base, name);
        fs::create_dir_all(dir.join("src-tauri")).unwrap();
        fs::write(
            dir.join("src-tauri/Cargo.toml"),
            "[package]\nname = \"landstrip-tray\"\n",
        )
        .unwrap();
        dir
    }

    #[test]
    fn the_apps_own_checkout_is_not_offered_as_the_directory_it_was_started_from() {
        let mut w = world();
        let own = checkout(&w.base, "landstrip-tray");
        let inside = own.join("src-tauri");
        w.sources.own = OwnDirs::find(&inside, None);
        assert_eq!(w.sources.own.checkouts, std::slice::from_ref(&own));
        for dir in [&own, &inside] {
            w.sources.current_dir = Some(dir.clone());
            assert!(offered(&w.sources, &[]).is_empty(), "{}", dir.display());
        }
        // Another project, and another package's src-tauri, are offered.
        let other = project(&w.base, "other");
        fs::create_dir_all(other.join("src-tauri")).unwrap();
        fs::write(other.join("src-tauri/Cargo.toml"), "name = \"other-app\"").unwrap();
        assert!(!is_app_checkout(&other));
        w.sources.current_dir = Some(other.clone());
        assert_eq!(
            dirs(&offered(&w.sources, &[])),
            [(other, Source::CurrentDir)]
        );
        // The checkout is still offered from the other sources (it may be a project the
        // user works on), only not as "started here".
        let line = format!("{{\"project\":{:?}}}\n", own);
        fs::write(&w.sources.activity_file, line).unwrap();
        w.sources.current_dir = Some(own.clone());
        assert_eq!(dirs(&offered(&w.sources, &[])), [(own, Source::Activity)]);
    }

    #[test]
    fn the_install_directory_and_a_checkout_holding_the_executable_are_the_apps_own() {
        let w = world();
        // Installed: /opt/landstrip-tray/bin/landstrip-tray.
        let prefix = w.base.join("opt/landstrip-tray");
        fs::create_dir_all(prefix.join("bin")).unwrap();
        fs::write(prefix.join("Makefile"), "").unwrap();
        let exe = prefix.join("bin/landstrip-tray");
        fs::write(&exe, "").unwrap();
        let gone = w.base.join("built/elsewhere/src-tauri");
        let own = OwnDirs::find(&gone, Some(&exe));
        assert!(own.checkouts.is_empty(), "{own:?}");
        assert_eq!(own.install, [prefix.join("bin"), prefix.clone()]);
        assert!(own.holds(&prefix) && own.holds(&prefix.join("bin")));
        assert!(
            !own.holds(&w.base.join("opt")),
            "only the directories themselves"
        );
        // Built in the checkout's own target/: found from the executable.
        let src = checkout(&w.base, "src/landstrip-tray");
        let built = src.join("target/debug/landstrip-tray");
        fs::create_dir_all(built.parent().unwrap()).unwrap();
        fs::write(&built, "").unwrap();
        assert_eq!(OwnDirs::find(&gone, Some(&built)).checkouts, [src]);
    }

    #[test]
    fn the_activity_log_gives_its_projects_newest_first_and_each_once() {
        let w = world();
        let (a, b) = (project(&w.base, "a"), project(&w.base, "b"));
        let gone = w.base.join("gone");
        let line = |p: &Path| format!("{{\"ts\":1,\"project\":{:?},\"kind\":\"x\"}}\n", p);
        let text = [
            line(&a),
            line(&gone),
            line(&b),
            "not json\n".into(),
            line(&a),
        ]
        .concat();
        fs::write(&w.sources.activity_file, text).unwrap();
        let served = vec![b.clone()];
        let got = offered(&w.sources, &served);
        assert_eq!(
            dirs(&got),
            [(a.clone(), Source::Activity), (b.clone(), Source::Activity)],
            "a directory that no longer exists is not offered"
        );
        assert!(!got[0].served && got[1].served);
    }

    #[test]
    fn a_live_presenters_project_is_offered_when_its_directory_matches_the_file() {
        let w = world();
        let served_by_tui = project(&w.base, "tui");
        let elsewhere = project(&w.base, "elsewhere");
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .current_dir(&served_by_tui)
            .spawn()
            .unwrap();
        fs::create_dir_all(w.sources.discovery.path()).unwrap();
        let record = |pid: u32| format!("{{\"port\":1,\"pid\":{pid},\"ts\":1}}");
        fs::write(
            w.sources.discovery.file_for(&served_by_tui),
            record(sleeper.id()),
        )
        .unwrap();
        // A file whose owner works elsewhere names nothing it could be checked against.
        fs::write(
            w.sources.discovery.file_for(&elsewhere),
            record(std::process::id()),
        )
        .unwrap();
        let got = offered(&w.sources, &[]);
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
        assert_eq!(dirs(&got), [(served_by_tui, Source::Presenter)]);
    }

    #[test]
    fn opencodes_json_projects_are_offered_most_recent_first_without_the_global_one() {
        let w = world();
        let (old, new) = (project(&w.base, "old"), project(&w.base, "new"));
        let store = w.sources.opencode_data.join("storage/project");
        fs::create_dir_all(&store).unwrap();
        let write = |name: &str, dir: &Path, updated: u64| {
            let json = serde_json::json!({"id": name, "worktree": dir, "time": {"created": 1, "updated": updated}});
            fs::write(store.join(format!("{name}.json")), json.to_string()).unwrap();
        };
        write("o", &old, 10);
        write("n", &new, 20);
        write("global", Path::new("/"), 30);
        fs::write(store.join("broken.json"), "{").unwrap();
        assert_eq!(
            dirs(&offered(&w.sources, &[])),
            [(new, Source::Opencode), (old, Source::Opencode)]
        );
    }

    #[test]
    fn the_offer_is_bounded_and_each_directory_named_once() {
        let mut w = world();
        let here = project(&w.base, "p0");
        w.sources.current_dir = Some(here.clone());
        let text: String = (0..20)
            .map(|i| {
                let dir = project(&w.base, &format!("p{i}"));
                format!("{{\"project\":{:?}}}\n", dir)
            })
            .collect();
        fs::write(&w.sources.activity_file, text).unwrap();
        let got = offered(&w.sources, &[]);
        assert_eq!(got.len(), MAX_OFFERED);
        assert_eq!(got[0].dir, here);
        assert_eq!(got[0].source, Source::CurrentDir);
        assert!(got[1..].iter().all(|o| o.dir != here));
    }
}
