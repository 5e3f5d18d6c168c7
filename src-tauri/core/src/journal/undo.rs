//! Undo: each selected write's path put back to its prior state, newest write first,
//! each path restored or refused on its own. A path that changed since its run ended
//! (its fingerprint then) is refused unless forced; every component is walked without
//! following a link (`nofollow.rs`), so a folder swapped for a link cannot redirect a
//! restore or a delete.

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::nofollow::{self, Kind};
use super::{in_session, refusal, store, Before, Entry, Journal};

/// Which writes to undo.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UndoTarget {
    /// These entries.
    Ids(Vec<u64>),
    /// Every entry of a session (or a run key).
    Session(String),
}

/// What happened to one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UndoResult {
    /// Put back.
    Restored,
    /// `--dry-run`: it would be put back.
    WouldRestore,
    /// Left as it is (`detail` says why).
    Refused,
}

/// One write's undo, reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UndoOutcome {
    /// The journal entry.
    pub id: u64,
    /// Its path.
    pub path: String,
    /// Its session.
    pub session: Option<String>,
    /// Its project.
    pub project: std::path::PathBuf,
    /// What happened.
    pub outcome: UndoResult,
    /// What was (or would be) done, or why not.
    pub detail: String,
}

/// How long an undo waits for a run's end to be fingerprinted.
const END_WAIT: Duration = Duration::from_secs(10);

impl Journal {
    /// Undoes `target`'s writes, newest first. `dry_run` changes nothing; `force`
    /// restores a path that changed since its run ended, or whose run has no end
    /// recorded. Unknown ids are reported refused.
    pub fn undo(&self, target: &UndoTarget, dry_run: bool, force: bool) -> Vec<UndoOutcome> {
        self.wait_for_ends(END_WAIT);
        let (mut chosen, missing): (Vec<(Entry, Option<String>)>, Vec<u64>) = {
            let state = self.state();
            let chosen: Vec<_> = state
                .entries
                .iter()
                .filter(|e| match target {
                    UndoTarget::Ids(ids) => ids.contains(&e.id),
                    UndoTarget::Session(s) => in_session(e, s),
                })
                .map(|e| (e.clone(), refusal(&state, e)))
                .collect();
            let missing = match target {
                UndoTarget::Ids(ids) => ids
                    .iter()
                    .filter(|id| !chosen.iter().any(|(e, _)| e.id == **id))
                    .copied()
                    .collect(),
                UndoTarget::Session(_) => Vec::new(),
            };
            (chosen, missing)
        };
        chosen.sort_by_key(|c| std::cmp::Reverse(c.0.id));
        let mut out: Vec<UndoOutcome> = missing
            .into_iter()
            .map(|id| UndoOutcome {
                id,
                path: String::new(),
                session: None,
                project: Default::default(),
                outcome: UndoResult::Refused,
                detail: format!("no journal entry {id}"),
            })
            .collect();
        // Per path: None once a newer write to it was put back (the next one goes on from
        // there), Some(why) once one was refused (the older ones are then refused too).
        let mut paths: HashMap<String, Option<String>> = HashMap::new();
        for (entry, refused) in chosen {
            let result = match paths.get(&entry.path) {
                Some(Some(_)) => Err("a later write to this path was not undone".to_owned()),
                Some(None) => refused.map_or(Ok(()), Err),
                None => refused.map_or_else(|| self.unchanged(&entry, force), Err),
            }
            .and_then(|()| self.put_back(&entry, dry_run));
            let (outcome, detail) = match result {
                Ok(done) if dry_run => (UndoResult::WouldRestore, done),
                Ok(done) => {
                    self.mark_undone(entry.id);
                    (UndoResult::Restored, done)
                }
                Err(why) => (UndoResult::Refused, why),
            };
            paths.insert(
                entry.path.clone(),
                (outcome == UndoResult::Refused).then(|| detail.clone()),
            );
            out.push(UndoOutcome {
                id: entry.id,
                path: entry.path,
                session: entry.session,
                project: entry.project,
                outcome,
                detail,
            });
        }
        out
    }

    /// Whether `entry`'s path is still as its run left it (or `force`).
    fn unchanged(&self, entry: &Entry, force: bool) -> Result<(), String> {
        if force {
            return Ok(());
        }
        let end = self
            .state()
            .ends
            .get(&entry.run)
            .and_then(|end| end.prints.get(&entry.path).cloned());
        let Some(end) = end else {
            return Err(
                "its run has not ended (or ended while the app was not running): \
                        nothing says how it left the path; --force restores anyway"
                    .to_owned(),
            );
        };
        if nofollow::fingerprint(Path::new(&entry.path)) != end {
            return Err("changed since the run ended; --force restores anyway".to_owned());
        }
        Ok(())
    }

    fn mark_undone(&self, id: u64) {
        let mut state = self.state();
        state.undone.insert(id);
        let line = store::Line::Undone {
            id,
            at_ms: crate::activity::now_ms(),
        };
        if let Some(store) = state.store.as_mut() {
            if let Err(e) = store.append(&line) {
                tracing::warn!("the write journal's index could not be written: {e}");
            }
        }
    }

    /// Puts `entry`'s prior state back (or, `dry_run`, says what it would do).
    fn put_back(&self, entry: &Entry, dry_run: bool) -> Result<String, String> {
        let parent = match nofollow::parent(Path::new(&entry.path)) {
            Ok(parent) => parent,
            Err(nofollow::WalkError::Missing(_)) if entry.before == Before::Absent => {
                return Ok("already absent".to_owned())
            }
            Err(e) => return Err(e.to_string()),
        };
        let now = parent.lstat().map_err(|e| e.to_string())?;
        let kind = nofollow::kind_of(now.as_ref());
        let fail = |e: std::io::Error| e.to_string();
        match entry.before {
            Before::Absent => {
                let done = match kind {
                    Kind::Absent => return Ok("already absent".to_owned()),
                    Kind::Dir => "the folder it made removed",
                    _ => "removed (it did not exist before)",
                };
                if !dry_run {
                    parent
                        .remove(kind == Kind::Dir)
                        .map_err(|e| match e.raw_os_error() {
                            Some(libc::ENOTEMPTY) | Some(libc::EEXIST) => {
                                "the folder it made is not empty: left as it is".to_owned()
                            }
                            _ => e.to_string(),
                        })?;
                }
                Ok(done.to_owned())
            }
            Before::File => {
                if kind == Kind::Dir {
                    return Err("a folder is there now: left as it is".to_owned());
                }
                let mode = entry.mode.unwrap_or(0o600);
                let size = entry.size.unwrap_or(0);
                let blob = self.blob_path(entry.id);
                let mut file =
                    File::open(&blob).map_err(|e| format!("its kept contents are gone ({e})"))?;
                let kept = file.metadata().map_err(fail)?.len();
                if kept != size {
                    return Err(format!(
                        "its kept contents are incomplete ({kept} of {size} bytes)"
                    ));
                }
                if !dry_run {
                    parent
                        .replace_file(&mut file, mode, entry.id)
                        .map_err(fail)?;
                }
                Ok(format!("{size} bytes and mode {mode:04o} restored"))
            }
            Before::Dir => {
                let mode = entry.mode.unwrap_or(0o700);
                match kind {
                    Kind::Absent => {
                        if !dry_run {
                            parent.make_dir(mode).map_err(fail)?;
                        }
                        Ok(format!("folder recreated, mode {mode:04o}"))
                    }
                    Kind::Dir => {
                        if !dry_run {
                            parent.chmod_dir(mode).map_err(fail)?;
                        }
                        Ok(format!("folder's mode {mode:04o} restored"))
                    }
                    _ => Err("something else than a folder is there now: left as it is".to_owned()),
                }
            }
            Before::Symlink => {
                let target = entry.target.clone().unwrap_or_default();
                match kind {
                    Kind::Absent | Kind::Symlink => {
                        if !dry_run {
                            parent
                                .make_symlink(target.as_bytes(), kind == Kind::Symlink, entry.id)
                                .map_err(fail)?;
                        }
                        Ok(format!("link to {target} restored"))
                    }
                    _ => Err("something else than a link is there now: left as it is".to_owned()),
                }
            }
            Before::TooLarge | Before::NotUndoable => Err(entry
                .why
                .clone()
                .unwrap_or_else(|| "cannot be undone".to_owned())),
        }
    }
}
