//! Locating and loading the global and project sandbox.json files, and a
//! cheap cache of the effective policy for the hot path.

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, SystemTime};

use super::freshness::ChangeNotice;
use super::matcher::PolicyMatcher;
use super::merge::{fs_entries, EffectivePolicy, PolicySources, Source};
use super::schema::{parse_overrides, FsList, PolicyError, SandboxConfig, SandboxOverrides};

/// Where the two policy files of a project live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyPaths {
    /// `$XDG_CONFIG_HOME/opencode/sandbox.json`, see [`global_path`].
    pub global: PathBuf,
    /// `<project>/.opencode/sandbox.json`
    pub project: PathBuf,
}

impl PolicyPaths {
    /// The file locations for a home directory and a project directory.
    pub fn new(home: &Path, project_dir: &Path) -> Self {
        Self::with_global(global_path(home), project_dir)
    }

    /// The file locations with the global file given (another process's, say, whose
    /// environment is not this one's).
    pub fn with_global(global: PathBuf, project_dir: &Path) -> Self {
        Self {
            global,
            project: project_path(project_dir),
        }
    }

    /// The file of a layer (`None` for the bundled defaults).
    pub fn for_source(&self, source: Source) -> Option<&Path> {
        match source {
            Source::Default => None,
            Source::Global => Some(&self.global),
            Source::Project => Some(&self.project),
        }
    }
}

/// The global file of the user whose home is `home`, by the later plugin's rule:
/// `$XDG_CONFIG_HOME/opencode/sandbox.json`, or `<home>/.config/opencode/sandbox.json` when
/// `XDG_CONFIG_HOME` is unset, empty or relative. opencode-landstrip 0.19.1 always reads
/// the home-based one; the two are the same file unless `XDG_CONFIG_HOME` says otherwise
/// (docs/ARCHITECTURE.md, "Policy files").
///
/// The variable is this process's environment's, so it describes the home that
/// environment names: for any other home (a test's temporary one) its default applies.
pub fn global_path(home: &Path) -> PathBuf {
    global_path_from(
        home,
        std::env::var_os("HOME").as_deref(),
        std::env::var_os("XDG_CONFIG_HOME").as_deref(),
    )
}

/// [`global_path`] with the environment passed in: `env_home` is `$HOME` (unset or empty:
/// the home came from the user database, so it is the environment's own).
pub fn global_path_from(
    home: &Path,
    env_home: Option<&OsStr>,
    xdg_config_home: Option<&OsStr>,
) -> PathBuf {
    let own_home = env_home
        .filter(|h| !h.is_empty())
        .is_none_or(|h| Path::new(h) == home);
    let config = match xdg_config_home.map(Path::new) {
        Some(config) if own_home && config.is_absolute() => config.to_path_buf(),
        _ => home.join(".config"),
    };
    config.join("opencode").join("sandbox.json")
}

/// `<project>/.opencode/sandbox.json`
pub fn project_path(project_dir: &Path) -> PathBuf {
    project_dir.join(".opencode").join("sandbox.json")
}

/// Read a file's text; a missing file is `Ok(None)`.
pub fn read_text(path: &Path) -> Result<Option<String>, PolicyError> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(PolicyError::Io {
            file: path.to_path_buf(),
            source,
        }),
    }
}

/// Read and validate one sandbox.json; a missing file is `Ok(None)`.
pub fn load_file(path: &Path) -> Result<Option<SandboxOverrides>, PolicyError> {
    read_text(path)?
        .map(|text| parse_overrides(&text, path))
        .transpose()
}

/// Both files of a project as loaded, and the effective policy they make.
#[derive(Debug, Clone)]
pub struct LoadedPolicy {
    pub paths: PolicyPaths,
    /// The global file's content (`None` when it does not exist).
    pub global: Option<SandboxOverrides>,
    /// The project file's content (`None` when it does not exist).
    pub project: Option<SandboxOverrides>,
    /// Defaults ← global ← project.
    pub config: SandboxConfig,
    /// Where each value of `config` came from.
    pub sources: PolicySources,
}

impl LoadedPolicy {
    /// The entries of one filesystem list with the layer each came from.
    pub fn fs_entries(&self, list: FsList) -> impl Iterator<Item = (&str, Source)> + '_ {
        fs_entries(&self.config, &self.sources, list)
    }

    /// The file a layer lives in (`None` for the bundled defaults).
    pub fn file_of(&self, source: Source) -> Option<&Path> {
        self.paths.for_source(source)
    }
}

/// Load defaults ← global ← project for a project; any broken file fails the whole load.
pub fn load_effective(home: &Path, project_dir: &Path) -> Result<LoadedPolicy, PolicyError> {
    load_paths(PolicyPaths::new(home, project_dir))
}

/// [`load_effective`] of the files at `paths`.
pub fn load_paths(paths: PolicyPaths) -> Result<LoadedPolicy, PolicyError> {
    let global = load_file(&paths.global)?;
    let project = load_file(&paths.project)?;
    let EffectivePolicy { config, sources } =
        EffectivePolicy::layered(global.as_ref(), project.as_ref());
    Ok(LoadedPolicy {
        paths,
        global,
        project,
        config,
        sources,
    })
}

/// An effective policy and its compiled matcher; derefs to the [`LoadedPolicy`]
/// (so `snapshot.config`, `snapshot.sources` work).
#[derive(Debug, Clone)]
pub struct PolicySnapshot {
    pub loaded: LoadedPolicy,
    pub matcher: PolicyMatcher,
}

impl std::ops::Deref for PolicySnapshot {
    type Target = LoadedPolicy;

    fn deref(&self) -> &LoadedPolicy {
        &self.loaded
    }
}

/// What `stat` says about a file, enough to notice any rewrite.
#[derive(Debug, Clone, PartialEq, Eq)]
enum FileStamp {
    Missing,
    Unreadable(io::ErrorKind),
    Present {
        dev: u64,
        ino: u64,
        size: u64,
        mtime: Option<SystemTime>,
        /// The inode change time: moves on every write and on every `utimes`, so a tool
        /// that restores the old mtime (`cp -p`, `touch -r`) is still noticed.
        ctime: (i64, i64),
    },
}

impl FileStamp {
    fn of(path: &Path) -> Self {
        match fs::metadata(path) {
            Ok(meta) => {
                #[cfg(unix)]
                let (dev, ino, ctime) = {
                    use std::os::unix::fs::MetadataExt;
                    (meta.dev(), meta.ino(), (meta.ctime(), meta.ctime_nsec()))
                };
                #[cfg(not(unix))]
                let (dev, ino, ctime) = (0, 0, (0, 0));
                FileStamp::Present {
                    dev,
                    ino,
                    size: meta.len(),
                    mtime: meta.modified().ok(),
                    ctime,
                }
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => FileStamp::Missing,
            Err(error) => FileStamp::Unreadable(error.kind()),
        }
    }

    /// Whether a write at or after `loaded_at` could leave this stamp unchanged: the
    /// file's times are not older than `loaded_at` by a full timestamp tick, so a
    /// same-size rewrite in the same tick would show the same mtime and ctime.
    fn racy(&self, loaded_at: SystemTime) -> bool {
        let FileStamp::Present { mtime, ctime, .. } = self else {
            return false;
        };
        let ctime = u64::try_from(ctime.0)
            .ok()
            .zip(u32::try_from(ctime.1).ok())
            .map(|(secs, nanos)| SystemTime::UNIX_EPOCH + Duration::new(secs, nanos));
        let Some(stable_before) = loaded_at.checked_sub(TIMESTAMP_TICK) else {
            return true;
        };
        // Unknown times cannot prove anything: treat them as recent.
        [*mtime, ctime]
            .into_iter()
            .any(|t| t.is_none_or(|t| t >= stable_before))
    }
}

/// The coarsest file timestamp granularity the cache allows for (filesystems with
/// whole-second times): a file changed less than this before a load may change again
/// without its stamp moving, so such a load is not trusted to stay current.
const TIMESTAMP_TICK: Duration = Duration::from_secs(1);

type Stamps = (FileStamp, FileStamp);
type Current = Arc<Result<PolicySnapshot, PolicyError>>;

/// What still binds while a policy file does not parse (docs/ARCHITECTURE.md, "Decision
/// rules"): a broken file never weakens a denial.
#[derive(Debug)]
pub struct Fallback {
    /// The merge of each file's last valid version in this app run (the file as it is
    /// when it parses; nothing for a broken file that never parsed): only its hard
    /// denials are used, its deny entries, its Always roots and the bundled ones.
    pub denials: PolicyMatcher,
    /// False when a broken file had no valid version in this app run: then no grant
    /// allows what the files govern, and every such request asks.
    pub grants_allow: bool,
}

/// Each file's last valid content in this app run: `None` until it first parses; a
/// missing file is a valid empty one (`Some(None)`).
#[derive(Debug, Default)]
struct LastValid {
    global: Option<Option<SandboxOverrides>>,
    project: Option<Option<SandboxOverrides>>,
}

/// A load, the stamps taken before it, and whether those stamps can be trusted.
#[derive(Debug)]
struct Cached {
    stamps: Stamps,
    current: Current,
    /// The files changed too recently for their stamps to prove a later match.
    racy: bool,
    /// The kernel's watch on the files, made before they were read; when there is one it
    /// decides, and the stamps are not looked at.
    notice: Option<ChangeNotice>,
    /// What binds while `current` is an error.
    fallback: Option<Arc<Fallback>>,
}

/// The effective policy of one project, re-read only when either file changed.
///
/// Whether they changed is asked of the kernel ([`ChangeNotice`]: one `epoll_wait` per
/// look, no `stat`), and where it cannot watch them (inotify out of instances or watches)
/// of the files' stamps (exists, device, inode, size, mtime and ctime in nanoseconds: two
/// `stat` calls). A load made less than a timestamp tick after a file changed is not
/// reused on stamps alone: a same-size rewrite within the same tick leaves every stamp
/// field as it was (the racy case). Thread-safe.
#[derive(Debug)]
pub struct PolicyCache {
    home: PathBuf,
    project_dir: PathBuf,
    paths: PolicyPaths,
    cached: RwLock<Option<Cached>>,
    /// Held while reloading; keeps each file's last valid content.
    reload: Mutex<LastValid>,
    /// Whether to ask the kernel (off only in tests of the stamps).
    notices: bool,
}

impl PolicyCache {
    /// A cache for a home directory and a project directory (nothing is read yet).
    pub fn new(home: &Path, project_dir: &Path) -> Self {
        Self {
            home: home.to_path_buf(),
            project_dir: project_dir.to_path_buf(),
            paths: PolicyPaths::new(home, project_dir),
            cached: RwLock::new(None),
            reload: Mutex::new(LastValid::default()),
            notices: true,
        }
    }

    /// A cache that checks the files' stamps only, as it does where inotify cannot watch.
    #[cfg(test)]
    fn stamps_only(home: &Path, project_dir: &Path) -> Self {
        Self {
            notices: false,
            ..Self::new(home, project_dir)
        }
    }

    /// The files this cache watches.
    pub fn paths(&self) -> &PolicyPaths {
        &self.paths
    }

    /// The project directory.
    pub fn project_dir(&self) -> &Path {
        &self.project_dir
    }

    fn stamps(&self) -> Stamps {
        (
            FileStamp::of(&self.paths.global),
            FileStamp::of(&self.paths.project),
        )
    }

    /// The cached load if the files are unchanged since it was made.
    fn lookup(&self) -> Option<Current> {
        let cached = self.cached.read().unwrap_or_else(PoisonError::into_inner);
        let cached = cached.as_ref()?;
        let unchanged = match &cached.notice {
            Some(notice) => !notice.changed(),
            None => !cached.racy && cached.stamps == self.stamps(),
        };
        unchanged.then(|| Arc::clone(&cached.current))
    }

    /// The policy as it is on disk now: one look at the kernel's notice (or two `stat`
    /// calls) when nothing changed, a reload (and recompile) otherwise. A broken file
    /// yields its error.
    pub fn current(&self) -> Current {
        if let Some(current) = self.lookup() {
            return current;
        }
        // One reloader at a time; others wait here and then find its result.
        let mut last_valid = self.reload.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(current) = self.lookup() {
            return current;
        }
        let loaded_at = SystemTime::now();
        // The watch and the stamps are made before reading: a change racing the read
        // only causes one more reload on the next call, never a stale hit.
        let notice = self.notices.then(|| self.notice()).flatten();
        let stamps = self.stamps();
        let global = load_file(&self.paths.global);
        let project = load_file(&self.paths.project);
        if let Ok(valid) = &global {
            last_valid.global = Some(valid.clone());
        }
        if let Ok(valid) = &project {
            last_valid.project = Some(valid.clone());
        }
        let (result, fallback) = match (global, project) {
            (Ok(global), Ok(project)) => {
                let EffectivePolicy { config, sources } =
                    EffectivePolicy::layered(global.as_ref(), project.as_ref());
                let matcher = PolicyMatcher::new(&config, &self.project_dir, &self.home);
                let loaded = LoadedPolicy {
                    paths: self.paths.clone(),
                    global,
                    project,
                    config,
                    sources,
                };
                (Ok(PolicySnapshot { loaded, matcher }), None)
            }
            // The global file's error first, as a whole load reports it.
            (Err(error), _) | (Ok(_), Err(error)) => {
                let fallback = self.fallback(&last_valid);
                tracing::debug!(%error, grants_allow = fallback.grants_allow,
                    "sandbox policy failed to load; its last valid denials still apply");
                (Err(error), Some(Arc::new(fallback)))
            }
        };
        let current = Arc::new(result);
        let racy = stamps.0.racy(loaded_at) || stamps.1.racy(loaded_at);
        *self.cached.write().unwrap_or_else(PoisonError::into_inner) = Some(Cached {
            stamps,
            current: Arc::clone(&current),
            racy,
            notice,
            fallback,
        });
        current
    }

    /// The denials of each file's last valid version (after a failed load, where every
    /// file that parsed now has just been recorded as its last valid one).
    fn fallback(&self, last_valid: &LastValid) -> Fallback {
        let global = last_valid.global.as_ref().and_then(Option::as_ref);
        let project = last_valid.project.as_ref().and_then(Option::as_ref);
        let EffectivePolicy { config, .. } = EffectivePolicy::layered(global, project);
        Fallback {
            denials: PolicyMatcher::new(&config, &self.project_dir, &self.home),
            grants_allow: last_valid.global.is_some() && last_valid.project.is_some(),
        }
    }

    /// What binds while the files do not parse: None while they do (or before the first
    /// load). Read after [`Self::current`] returned an error; should the files have been
    /// reloaded in between, a valid reload gives None, which the rules treat as the
    /// strictest case (no grant allows).
    pub fn fallback_now(&self) -> Option<Arc<Fallback>> {
        let cached = self.cached.read().unwrap_or_else(PoisonError::into_inner);
        cached.as_ref().and_then(|c| c.fallback.clone())
    }

    /// A new watch on both files; none (the stamps decide) if the kernel refuses it.
    fn notice(&self) -> Option<ChangeNotice> {
        ChangeNotice::watch(&[&self.paths.global, &self.paths.project])
            .map_err(|e| tracing::debug!("policy files checked by stat, not watched: {e}"))
            .ok()
    }

    /// Forget the cached policy so the next call reloads it.
    pub fn invalidate(&self) {
        *self.cached.write().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::merge::Source;

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }

    #[test]
    fn paths_are_where_the_plugin_looks() {
        let paths = PolicyPaths::new(Path::new("/home/u"), Path::new("/w/p"));
        assert_eq!(
            paths.global,
            Path::new("/home/u/.config/opencode/sandbox.json")
        );
        assert_eq!(paths.project, Path::new("/w/p/.opencode/sandbox.json"));
        assert_eq!(paths.for_source(Source::Default), None);
        assert_eq!(
            paths.for_source(Source::Project),
            Some(paths.project.as_path())
        );
    }

    #[test]
    fn the_global_file_follows_xdg_config_home_when_absolute() {
        let home = Path::new("/home/u");
        let at = |env_home: Option<&str>, xdg: Option<&str>| {
            global_path_from(home, env_home.map(OsStr::new), xdg.map(OsStr::new))
        };
        let default = Path::new("/home/u/.config/opencode/sandbox.json");
        // Unset, empty, relative: ~/.config.
        assert_eq!(at(Some("/home/u"), None), default);
        assert_eq!(at(Some("/home/u"), Some("")), default);
        assert_eq!(at(Some("/home/u"), Some("cfg")), default);
        assert_eq!(at(Some("/home/u"), Some("./cfg")), default);
        // Absolute: there.
        assert_eq!(
            at(Some("/home/u"), Some("/srv/cfg")),
            Path::new("/srv/cfg/opencode/sandbox.json")
        );
        assert_eq!(
            at(Some("/home/u/"), Some("/srv/cfg/")),
            Path::new("/srv/cfg/opencode/sandbox.json")
        );
        // No HOME in the environment: the home is the user database's, the environment's own.
        assert_eq!(
            at(None, Some("/srv/cfg")),
            Path::new("/srv/cfg/opencode/sandbox.json")
        );
        assert_eq!(
            at(Some(""), Some("/srv/cfg")),
            Path::new("/srv/cfg/opencode/sandbox.json")
        );
        // Another home than the environment's: the variable is not its.
        assert_eq!(at(Some("/root"), Some("/root/.xdg")), default);
    }

    #[test]
    fn load_missing_files_gives_defaults() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let project = dir.path().join("proj");
        assert!(load_file(&home.join("nope.json")).expect("ok").is_none());
        let loaded = load_effective(&home, &project).expect("loads");
        assert!(loaded.global.is_none() && loaded.project.is_none());
        assert_eq!(loaded.config, crate::policy::defaults::defaults());
    }

    #[test]
    fn load_layers_global_then_project() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let project = dir.path().join("proj");
        write(
            &global_path(&home),
            r#"{"filesystem": {"allowWrite": ["/g"]}, "enabled": false}"#,
        );
        write(
            &project_path(&project),
            r#"{"filesystem": {"allowWrite": ["/p", "/g"]}}"#,
        );
        let loaded = load_effective(&home, &project).expect("loads");
        assert_eq!(
            loaded.config.filesystem.allow_write,
            [".", "/dev/null", "/g", "/p"]
        );
        assert!(!loaded.config.enabled);
        assert_eq!(
            loaded.fs_entries(FsList::AllowWrite).last(),
            Some(("/p", Source::Project))
        );
    }

    #[test]
    fn broken_file_fails_with_its_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let project = dir.path().join("proj");
        write(&project_path(&project), "{\"enabled\": tru}");
        let error = load_effective(&home, &project).expect_err("broken");
        assert!(matches!(error, PolicyError::Syntax { line: 1, .. }));
        assert_eq!(error.file(), Some(project_path(&project).as_path()));
    }

    #[test]
    fn cache_reuses_and_reloads_on_change() {
        reuses_and_reloads_on_change(PolicyCache::new);
    }

    #[test]
    fn cache_reuses_and_reloads_on_change_by_stamps_alone() {
        reuses_and_reloads_on_change(PolicyCache::stamps_only);
    }

    #[test]
    fn a_broken_file_keeps_its_last_valid_denials_watched_or_by_stamps() {
        for make in [PolicyCache::new, PolicyCache::stamps_only] {
            let dir = tempfile::tempdir().expect("tempdir");
            let (home, project) = (dir.path().join("home"), dir.path().join("proj"));
            let cache = make(&home, &project);
            let file = project_path(&project);
            write(&file, r#"{"filesystem": {"denyWrite": ["/opt/never"]}}"#);
            assert!(cache.current().is_ok());
            assert!(cache.fallback_now().is_none(), "nothing to fall back on");
            // Broken after a valid load (a new length: the stamps see it at once).
            write(&file, r#"{"filesystem": {"denyWrite": ["/opt/nev"#);
            assert!(
                cache.current().is_err(),
                "a stale valid snapshot was reused"
            );
            let fallback = cache.fallback_now().expect("a fallback");
            assert!(fallback
                .denials
                .write_hard_denied(Path::new("/opt/never/a")));
            assert!(fallback.grants_allow);
            // Fixed: as it says now, and nothing to fall back on.
            write(&file, r#"{"filesystem": {}}"#);
            let now = cache.current();
            let now = now.as_ref().as_ref().expect("valid again");
            assert!(!now.matcher.write_hard_denied(Path::new("/opt/never/a")));
            assert!(cache.fallback_now().is_none());

            // A cache whose global file never parsed: the bundled denials, no grants.
            let fresh = make(&home, &project);
            write(&global_path(&home), "{ not json");
            assert!(fresh.current().is_err());
            let fallback = fresh.fallback_now().expect("a fallback");
            assert!(!fallback.grants_allow);
            assert!(fallback.denials.write_hard_denied(&project.join(".env")));
            fs::remove_file(global_path(&home)).expect("rm");
        }
    }

    fn reuses_and_reloads_on_change(make: fn(&Path, &Path) -> PolicyCache) {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let project = dir.path().join("proj");
        let cache = make(&home, &project);
        let first = cache.current();
        let second = cache.current();
        assert!(
            Arc::ptr_eq(&first, &second),
            "unchanged files reuse the snapshot"
        );
        let snapshot = first.as_ref().as_ref().expect("defaults load");
        assert!(!snapshot.matcher.write_allowed(Path::new("/opt/data/x")));

        let file = project_path(&project);
        write(&file, r#"{"filesystem": {"allowWrite": ["/opt/data"]}}"#);
        let third = cache.current();
        assert!(!Arc::ptr_eq(&second, &third));
        let snapshot = third.as_ref().as_ref().expect("loads");
        assert!(snapshot.matcher.write_allowed(Path::new("/opt/data/x")));
        assert!(snapshot
            .config
            .filesystem
            .allow_write
            .contains(&"/opt/data".to_string()));

        // Rewrite in place with a different length: seen without any sleep.
        write(&file, r#"{"filesystem": {"allowWrite": ["/opt/data2"]}}"#);
        let fourth = cache.current();
        let snapshot = fourth.as_ref().as_ref().expect("loads");
        assert!(!snapshot.matcher.write_allowed(Path::new("/opt/data/x")));
        assert!(snapshot.matcher.write_allowed(Path::new("/opt/data2/x")));

        // A broken file yields its error, and fixing it recovers.
        write(&file, "{\"filesystem\": {\"allowWrite\": [\"/x\",]}}");
        match cache.current().as_ref() {
            Err(PolicyError::Syntax { file: f, .. }) => assert_eq!(f, &file),
            other => panic!("expected a syntax error, got {other:?}"),
        }
        write(&file, r#"{"network": {"foo": true}}"#);
        match cache.current().as_ref() {
            Err(PolicyError::Schema { field, .. }) => assert_eq!(field, "network.foo"),
            other => panic!("expected a schema error, got {other:?}"),
        }
        fs::remove_file(&file).expect("rm");
        assert!(cache.current().is_ok());

        // The global file is watched too.
        write(&global_path(&home), r#"{"enabled": false}"#);
        let snapshot = cache.current();
        assert!(!snapshot.as_ref().as_ref().expect("loads").config.enabled);
        cache.invalidate();
        assert!(!Arc::ptr_eq(&snapshot, &cache.current()));
    }

    #[test]
    fn a_same_size_rewrite_with_the_old_mtime_is_seen() {
        same_size_rewrite_with_the_old_mtime_is_seen(PolicyCache::new);
    }

    #[test]
    fn a_same_size_rewrite_with_the_old_mtime_is_seen_by_stamps_alone() {
        same_size_rewrite_with_the_old_mtime_is_seen(PolicyCache::stamps_only);
    }

    fn same_size_rewrite_with_the_old_mtime_is_seen(make: fn(&Path, &Path) -> PolicyCache) {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let project = dir.path().join("proj");
        let file = project_path(&project);
        write(&file, r#"{"filesystem": {"allowWrite": ["/opt/aaaa"]}}"#);
        let mtime = fs::metadata(&file)
            .expect("stat")
            .modified()
            .expect("mtime");
        let cache = make(&home, &project);
        let first = cache.current();
        assert!(first
            .as_ref()
            .as_ref()
            .expect("loads")
            .matcher
            .write_allowed(Path::new("/opt/aaaa/x")));
        // In place, same length, and the mtime put back (as a same-tick write on a
        // coarse-timestamp filesystem, or `cp -p`, leaves it): only ctime tells.
        write(&file, r#"{"filesystem": {"allowWrite": ["/opt/bbbb"]}}"#);
        fs::File::options()
            .write(true)
            .open(&file)
            .expect("open")
            .set_modified(mtime)
            .expect("set mtime");
        let second = cache.current();
        let snapshot = second.as_ref().as_ref().expect("loads");
        assert!(snapshot.matcher.write_allowed(Path::new("/opt/bbbb/x")));
        assert!(!snapshot.matcher.write_allowed(Path::new("/opt/aaaa/x")));
    }

    #[test]
    fn a_load_right_after_a_change_is_reused_while_watched_and_not_on_stamps_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let project = dir.path().join("proj");
        // Written just now, as a grant persisted a moment ago is: within a timestamp tick.
        write(
            &project_path(&project),
            r#"{"filesystem": {"allowWrite": ["/opt/a"]}}"#,
        );
        let watched = PolicyCache::new(&home, &project);
        let first = watched.current();
        assert!(
            Arc::ptr_eq(&first, &watched.current()),
            "the kernel says nothing changed: no reload per query in the second after a write"
        );
        let stamped = PolicyCache::stamps_only(&home, &project);
        let first = stamped.current();
        assert!(
            !Arc::ptr_eq(&first, &stamped.current()),
            "stamps this recent cannot prove a same-size rewrite did not happen"
        );
    }

    #[test]
    fn a_load_right_after_a_change_is_not_trusted() {
        let now = SystemTime::now();
        let stamp = |age: Duration| FileStamp::Present {
            dev: 1,
            ino: 2,
            size: 3,
            mtime: Some(now - age),
            ctime: {
                let since = (now - age)
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .expect("after 1970");
                (since.as_secs() as i64, i64::from(since.subsec_nanos()))
            },
        };
        // Same second as the load: a same-size rewrite now could keep every field.
        assert!(stamp(Duration::ZERO).racy(now));
        assert!(stamp(Duration::from_millis(900)).racy(now));
        // Older than a tick: any later write moves the times.
        assert!(!stamp(Duration::from_secs(2)).racy(now));
        assert!(!FileStamp::Missing.racy(now));
        let unknown = FileStamp::Present {
            dev: 1,
            ino: 2,
            size: 3,
            mtime: None,
            ctime: (0, 0),
        };
        assert!(unknown.racy(now));
    }

    #[test]
    fn cache_is_shared_between_threads() {
        // Readers load through one shared cache while the file is replaced, version by
        // version. Every load is one whole version (never an error, never a list or a
        // matcher mixing two); no reader goes back to an older version; each version is
        // seen before the next is written; once the writes are done, every reader is
        // handed the last version, and the same snapshot: one load, shared.
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::mpsc;

        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<PolicyCache>();
        const READERS: usize = 4;
        const VERSIONS: usize = 20;
        /// Bound on any one awaited event (not a sleep).
        const BOUND: Duration = Duration::from_secs(20);

        enum Report {
            Saw(usize),
            Last(usize, Current),
            Failed(String),
        }
        /// The one version a load holds, checked against its own matcher.
        fn version(current: &Current) -> Result<usize, String> {
            let snapshot = current
                .as_ref()
                .as_ref()
                .map_err(|e| format!("a load failed: {e}"))?;
            let listed = &snapshot.config.filesystem.allow_write;
            let held: Vec<usize> = (0..=VERSIONS)
                .filter(|v| listed.contains(&format!("/opt/v{v}")))
                .collect();
            let [v] = held[..] else {
                return Err(format!("not one version in allowWrite: {listed:?}"));
            };
            for w in 0..=VERSIONS {
                let allowed = snapshot
                    .matcher
                    .write_allowed(Path::new(&format!("/opt/v{w}/x")));
                if allowed != (w == v) {
                    return Err(format!(
                        "v{v} listed, yet the matcher allows /opt/v{w}: {allowed}"
                    ));
                }
            }
            Ok(v)
        }

        /// Loads until the writes are done, reporting each newer version; the last load.
        fn read_until_done(
            cache: &PolicyCache,
            done: &AtomicBool,
            tx: &mpsc::Sender<Report>,
        ) -> Result<Current, String> {
            let mut latest = 0;
            loop {
                // Looked at before the load: a load begun after the writes ended must
                // hold the last version.
                let finished = done.load(Ordering::Acquire);
                let current = cache.current();
                let v = version(&current)?;
                if v < latest {
                    return Err(format!("went back from v{latest} to v{v}"));
                }
                if v > latest {
                    latest = v;
                    let _ = tx.send(Report::Saw(v));
                }
                if finished {
                    return match v {
                        VERSIONS => Ok(current),
                        _ => Err(format!("after the last write, still v{v}")),
                    };
                }
            }
        }

        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("h");
        let project = dir.path().join("p");
        let file = project_path(&project);
        let text = |v: usize| format!(r#"{{"filesystem": {{"allowWrite": ["/opt/v{v}"]}}}}"#);
        write(&file, &text(0));
        let cache = Arc::new(PolicyCache::new(&home, &project));
        let done = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        for reader in 0..READERS {
            let (cache, done, tx) = (Arc::clone(&cache), Arc::clone(&done), tx.clone());
            // Detached, and reporting rather than panicking: a stuck or failed reader
            // fails the test through the bounded receive below.
            std::thread::spawn(move || {
                let report = match read_until_done(&cache, &done, &tx) {
                    Ok(current) => Report::Last(reader, current),
                    Err(why) => Report::Failed(format!("reader {reader}: {why}")),
                };
                let _ = tx.send(report);
            });
        }
        drop(tx);
        let next = |waiting_for: &str| match rx.recv_timeout(BOUND) {
            Ok(Report::Failed(why)) => panic!("{why}"),
            Ok(report) => report,
            Err(e) => panic!("waiting for {waiting_for}: {e:?} after {BOUND:?}"),
        };
        for v in 1..=VERSIONS {
            // Replaced whole, as the app's own saves are: a torn file is not the cache's.
            crate::policy::write_atomic(&file, &text(v)).expect("write");
            let waiting_for = format!("a reader to see v{v}");
            while !matches!(next(&waiting_for), Report::Saw(seen) if seen >= v) {}
        }
        done.store(true, Ordering::Release);
        let mut last = Vec::new();
        while last.len() < READERS {
            if let Report::Last(reader, current) = next("every reader's last load") {
                last.push((reader, current));
            }
        }
        let (_, first) = &last[0];
        for (reader, current) in &last {
            assert!(
                Arc::ptr_eq(first, current),
                "reader {reader} was handed a load of its own, not the shared one"
            );
        }
    }
}
