//! The journal on disk: `index.jsonl`, appended one line per event with one `write`
//! and never synced (a crash loses the last lines, so the means to undo those writes,
//! never data), read back at start; `blobs/<id>`, a file's prior bytes. Eviction.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{Before, Entry, Fingerprint, RunEnd, State};
use crate::safe_fs;

/// How many bytes of write lines may wait in memory (a few hundred writes).
const INDEX_BUFFER: usize = 64 << 10;

/// One line of the index.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub(super) enum Line {
    /// A journaled write.
    Write(Entry),
    /// A run ended; how it left each path it touched.
    End {
        run: String,
        at_ms: u64,
        prints: HashMap<String, Fingerprint>,
    },
    /// A session's kept contents were evicted (the total limit).
    Evicted {
        session: String,
        ids: Vec<u64>,
        at_ms: u64,
    },
    /// A write was undone.
    Undone { id: u64, at_ms: u64 },
}

/// The open index.
pub(super) struct Store {
    /// Buffered: a write's line need not reach the disk before its allow goes out (a
    /// crash loses the means to undo, never data); every other line is flushed at once.
    index: BufWriter<File>,
}

impl Store {
    /// Opens `dir` (made 0700 if missing, refused if open to others) and its index,
    /// reading back what it records.
    pub fn open(dir: &Path) -> io::Result<(Self, State)> {
        let private = |d: &Path| safe_fs::ensure_private_dir(d).map_err(io::Error::other);
        private(dir)?;
        private(&dir.join("blobs"))?;
        let path = dir.join("index.jsonl");
        let mut state = State::default();
        match File::open(&path) {
            Ok(file) => read_back(BufReader::new(file), &mut state, dir),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let index = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)?;
        Ok((
            Self {
                index: BufWriter::with_capacity(INDEX_BUFFER, index),
            },
            state,
        ))
    }

    /// Appends one line and writes the buffer out (no sync).
    pub fn append(&mut self, line: &Line) -> io::Result<()> {
        self.append_buffered(line)?;
        self.index.flush()
    }

    /// Appends one line to the buffer, written out when it fills or at the next
    /// [`Store::append`] or [`Store::flush`].
    pub fn append_buffered(&mut self, line: &Line) -> io::Result<()> {
        serde_json::to_writer(&mut self.index, line).map_err(io::Error::other)?;
        self.index.write_all(b"\n")
    }

    /// Writes out what the buffer holds.
    pub fn flush(&mut self) -> io::Result<()> {
        self.index.flush()
    }
}

/// Rebuilds the state from the index's lines; a line that does not parse (a crash cut
/// it) is skipped.
fn read_back(reader: impl BufRead, state: &mut State, dir: &Path) {
    for line in reader.split(b'\n') {
        let Ok(line) = line else { break };
        let Ok(line) = serde_json::from_slice::<Line>(&line) else {
            continue;
        };
        match line {
            Line::Write(entry) => state.entries.push(entry),
            Line::End { run, at_ms, prints } => {
                state.ends.insert(run, RunEnd { at_ms, prints });
            }
            Line::Evicted { ids, .. } => state.evicted.extend(ids),
            Line::Undone { id, .. } => {
                state.undone.insert(id);
            }
        }
    }
    state.stored = state
        .entries
        .iter()
        .filter(|e| e.before == Before::File && !state.evicted.contains(&e.id))
        .filter(|e| dir.join("blobs").join(e.id.to_string()).exists())
        .filter_map(|e| e.size)
        .sum();
}

/// The key a write's session is evicted by: its session, else its run.
fn session_key(entry: &Entry) -> &str {
    entry.session.as_deref().unwrap_or(&entry.run)
}

/// Evicts the kept contents of the oldest session that still has some; false when none
/// has any left.
pub(super) fn evict_oldest(dir: &Path, state: &mut State) -> bool {
    let Some(oldest) = state
        .entries
        .iter()
        .find(|e| e.before == Before::File && !state.evicted.contains(&e.id))
        .map(|e| session_key(e).to_owned())
    else {
        return false;
    };
    let ids: Vec<u64> = state
        .entries
        .iter()
        .filter(|e| session_key(e) == oldest && !state.evicted.contains(&e.id))
        .map(|e| e.id)
        .collect();
    let sizes: HashMap<u64, u64> = state
        .entries
        .iter()
        .filter(|e| e.before == Before::File)
        .filter_map(|e| Some((e.id, e.size?)))
        .collect();
    let freed: HashSet<u64> = ids.iter().copied().collect();
    for id in &ids {
        if let Some(size) = sizes.get(id) {
            let _ = std::fs::remove_file(dir.join("blobs").join(id.to_string()));
            state.stored = state.stored.saturating_sub(*size);
        }
    }
    state.evicted.extend(freed);
    let line = Line::Evicted {
        session: oldest.clone(),
        ids,
        at_ms: crate::activity::now_ms(),
    };
    if let Some(store) = state.store.as_mut() {
        if let Err(e) = store.append(&line) {
            tracing::warn!("the write journal's index could not be written: {e}");
        }
    }
    tracing::info!(session = %oldest, "the write journal evicted a session (its size limit)");
    true
}
