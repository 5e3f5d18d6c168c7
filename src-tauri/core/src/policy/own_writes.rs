//! The policy texts this app itself last wrote, so that the file watch can tell its own
//! write echoing back from somebody else's change.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::store::edit_file;
use super::{EditOutcome, PolicyError};

/// How many of the app's policy writes are remembered (the newest per file).
const REMEMBERED: usize = 8;

/// Which part of the app wrote a policy file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    /// The shared operations: a save in the settings view, `ctl policy`, an undo.
    Operations,
    /// A person's "for project" or "for everywhere" answer to a prompt.
    Answer,
}

/// The last few policy texts the app left on disk, newest last (`None`: it removed the
/// file), with who wrote them. Every writer in the app records here *before* the bytes
/// land, so a change event for the file itself always finds its record. (The event of a
/// directory created for the file can come before the file; the broker's `SweepTurn`
/// covers that.)
#[derive(Debug, Default)]
pub struct OwnWrites {
    writes: Mutex<VecDeque<(PathBuf, Option<String>, Writer)>>,
}

impl OwnWrites {
    /// Records that `by` is about to make `file` hold `content` (`None`: remove it).
    pub fn record(&self, file: &Path, content: Option<String>, by: Writer) {
        let mut writes = self.writes.lock().unwrap_or_else(|e| e.into_inner());
        writes.retain(|(f, _, _)| f != file);
        writes.push_back((file.to_path_buf(), content, by));
        while writes.len() > REMEMBERED {
            writes.pop_front();
        }
    }

    /// Edits `file` through [`edit_file`], recording the new text as `by`'s before it
    /// lands: how every writer in the app changes a policy file.
    pub fn edit(
        &self,
        file: &Path,
        by: Writer,
        edit: impl FnOnce(Option<&str>) -> Result<EditOutcome, PolicyError>,
    ) -> Result<EditOutcome, PolicyError> {
        edit_file(file, |text| {
            let outcome = edit(text)?;
            if let EditOutcome::Changed(after) = &outcome {
                self.record(file, Some(after.clone()), by);
            }
            Ok(outcome)
        })
    }

    /// Who of the app left `file` as it is now, if it holds exactly what was last recorded
    /// for it: a change event for it is then the app's own write, not news. Reads the
    /// file (blocking).
    pub fn writer_of(&self, file: &Path) -> Option<Writer> {
        let (expected, by) = {
            let writes = self.writes.lock().unwrap_or_else(|e| e.into_inner());
            let (_, content, by) = writes.iter().rev().find(|(f, _, _)| f == file)?;
            (content.clone(), *by)
        };
        let same = match std::fs::read_to_string(file) {
            Ok(now) => expected.as_deref() == Some(now.as_str()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => expected.is_none(),
            Err(_) => false,
        };
        same.then_some(by)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_recorded_text_is_own() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("sandbox.json");
        let own = OwnWrites::default();
        std::fs::write(&file, "{}").expect("write");
        assert_eq!(own.writer_of(&file), None, "nothing recorded yet");
        own.record(&file, Some("{}".to_owned()), Writer::Answer);
        assert_eq!(own.writer_of(&file), Some(Writer::Answer));
        std::fs::write(&file, "{ }").expect("write");
        assert_eq!(own.writer_of(&file), None, "somebody else's text");
        own.record(&file, None, Writer::Operations);
        assert_eq!(
            own.writer_of(&file),
            None,
            "recorded as removed, but it is there"
        );
        std::fs::remove_file(&file).expect("remove");
        assert_eq!(own.writer_of(&file), Some(Writer::Operations));
    }

    #[test]
    fn old_records_are_forgotten() {
        let dir = tempfile::tempdir().expect("tempdir");
        let own = OwnWrites::default();
        let first = dir.path().join("0.json");
        std::fs::write(&first, "{}").expect("write");
        own.record(&first, Some("{}".to_owned()), Writer::Operations);
        for i in 1..=REMEMBERED {
            own.record(&dir.path().join(format!("{i}.json")), None, Writer::Answer);
        }
        assert_eq!(own.writer_of(&first), None);
    }
}
