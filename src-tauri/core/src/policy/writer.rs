//! The one owner of the app's policy writes. A prompt's "for project" answer, the shared
//! operations (the settings window, `ctl`) and their undo all write through it: it records
//! each text as the app's own before the bytes land ([`OwnWrites`]), writes minimally and
//! atomically under the file's lock ([`super::store::edit_file`]), and keeps the record of
//! the operations' last save for undo. The caller holds the broker's sweep turn around the
//! write and sweeps after it.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::own_writes::{OwnWrites, Writer};
use super::store::check_writable;
use super::{EditOutcome, PolicyError};
use crate::safe_fs;

/// The operations' last save: enough to undo it.
#[derive(Debug, Clone)]
struct SavedEdit {
    file: PathBuf,
    /// The text before (`None`: the write created the file).
    before: Option<String>,
    /// The text written.
    after: String,
    description: String,
}

/// What an undo did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndoneEdit {
    /// The file restored.
    pub file: PathBuf,
    /// The undone save had created it, so it was removed again.
    pub removed: bool,
    /// What the undone save was.
    pub description: String,
}

/// Why nothing was undone.
#[derive(Debug, thiserror::Error)]
pub enum UndoError {
    /// No save is on record.
    #[error("there is no policy save to undo (only this app's own saves since it started)")]
    NothingToUndo,
    /// The file no longer holds what the save wrote.
    #[error("{} changed since the last save, so it was not undone (undo restores a file only while it holds exactly what was saved)", file.display())]
    ChangedSince {
        /// The file.
        file: PathBuf,
    },
    /// Reading or writing the file failed.
    #[error(transparent)]
    Policy(#[from] PolicyError),
}

/// See the module documentation.
#[derive(Debug, Default)]
pub struct PolicyWriter {
    own: OwnWrites,
    last_save: Mutex<Option<SavedEdit>>,
}

impl PolicyWriter {
    /// The texts the app last left in policy files (who wrote what).
    pub fn own_writes(&self) -> &OwnWrites {
        &self.own
    }

    /// Edits `file` as `by`. With `undo` (what the change is, in words) the save is kept
    /// as the one [`PolicyWriter::undo_last`] undoes: the shared operations' saves.
    pub fn edit(
        &self,
        file: &Path,
        by: Writer,
        undo: Option<String>,
        edit: impl FnOnce(Option<&str>) -> Result<EditOutcome, PolicyError>,
    ) -> Result<EditOutcome, PolicyError> {
        let mut before: Option<Option<String>> = None;
        let outcome = self.own.edit(file, by, |text| {
            before = Some(text.map(str::to_owned));
            edit(text)
        })?;
        if let (EditOutcome::Changed(after), Some(before), Some(description)) =
            (&outcome, before, undo)
        {
            *self.last_save() = Some(SavedEdit {
                file: file.to_path_buf(),
                before,
                after: after.clone(),
                description,
            });
        }
        Ok(outcome)
    }

    /// Undoes the last save kept for undo: the file gets its previous bytes back
    /// (atomically), or is removed again when that save created it; only while it still
    /// holds exactly what was saved, else nothing is written.
    pub fn undo_last(&self) -> Result<UndoneEdit, UndoError> {
        let mut last = self.last_save();
        let Some(record) = last.as_ref() else {
            return Err(UndoError::NothingToUndo);
        };
        let file = record.file.clone();
        {
            let lock = safe_fs::path_lock(&file);
            let _held = lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            check_writable(&file)?;
            let io = |source| PolicyError::Io {
                file: file.clone(),
                source,
            };
            let now = match std::fs::read(&file) {
                Ok(bytes) => Some(bytes),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(io(e).into()),
            };
            if now.as_deref() != Some(record.after.as_bytes()) {
                return Err(UndoError::ChangedSince { file });
            }
            self.own
                .record(&file, record.before.clone(), Writer::Operations);
            match &record.before {
                Some(text) => super::store::write_atomic(&file, text)?,
                None => std::fs::remove_file(&file).map_err(io)?,
            }
        }
        let undone = UndoneEdit {
            removed: record.before.is_none(),
            description: record.description.clone(),
            file,
        };
        *last = None;
        Ok(undone)
    }

    fn last_save(&self) -> std::sync::MutexGuard<'_, Option<SavedEdit>> {
        self.last_save
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
