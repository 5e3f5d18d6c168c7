//! The policy texts this app itself last wrote, so that the file watch can tell its own
//! write echoing back from somebody else's change.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// How many of the app's policy writes are remembered (the newest per file).
const REMEMBERED: usize = 8;

/// The last few policy texts the app left on disk, newest last (`None`: it removed the
/// file). Every writer in the app (the shared operations, the broker's "for project" and
/// "for everywhere" answers) records here *before* the bytes land, so the watch can
/// never see them first.
#[derive(Debug, Default)]
pub struct OwnWrites {
    writes: Mutex<VecDeque<(PathBuf, Option<String>)>>,
}

impl OwnWrites {
    /// Records that `file` is about to hold `content` (`None`: about to be removed).
    pub fn record(&self, file: &Path, content: Option<String>) {
        let mut writes = self.writes.lock().unwrap_or_else(|e| e.into_inner());
        writes.retain(|(f, _)| f != file);
        writes.push_back((file.to_path_buf(), content));
        while writes.len() > REMEMBERED {
            writes.pop_front();
        }
    }

    /// Whether `file` holds now exactly what the app last recorded for it: a change
    /// event for it is the app's own write, not news. Reads the file (blocking).
    pub fn holds(&self, file: &Path) -> bool {
        let expected = {
            let writes = self.writes.lock().unwrap_or_else(|e| e.into_inner());
            match writes.iter().rev().find(|(f, _)| f == file) {
                Some((_, content)) => content.clone(),
                None => return false,
            }
        };
        match std::fs::read_to_string(file) {
            Ok(now) => expected.as_deref() == Some(now.as_str()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => expected.is_none(),
            Err(_) => false,
        }
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
        assert!(!own.holds(&file), "nothing recorded yet");
        own.record(&file, Some("{}".to_owned()));
        assert!(own.holds(&file));
        std::fs::write(&file, "{ }").expect("write");
        assert!(!own.holds(&file), "somebody else's text");
        own.record(&file, None);
        assert!(!own.holds(&file), "recorded as removed, but it is there");
        std::fs::remove_file(&file).expect("remove");
        assert!(own.holds(&file));
    }

    #[test]
    fn old_records_are_forgotten() {
        let dir = tempfile::tempdir().expect("tempdir");
        let own = OwnWrites::default();
        let first = dir.path().join("0.json");
        std::fs::write(&first, "{}").expect("write");
        own.record(&first, Some("{}".to_owned()));
        for i in 1..=REMEMBERED {
            own.record(&dir.path().join(format!("{i}.json")), None);
        }
        assert!(!own.holds(&first));
    }
}
