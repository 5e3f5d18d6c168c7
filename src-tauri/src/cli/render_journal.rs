//! How `ctl journal` and `ctl journal undo` print for a person.

use landstrip_tray_core::journal::{Before, JournalItem, UndoOutcome, UndoResult};

use super::table::{table, utc_time};

/// `ctl journal`: one row per journaled write, oldest first.
pub(super) fn render_journal(items: &[JournalItem]) -> String {
    if items.is_empty() {
        return "No journaled writes.\n".to_owned();
    }
    let rows = items
        .iter()
        .map(|item| {
            vec![
                item.id.to_string(),
                utc_time(item.at_ms),
                item.session.clone().unwrap_or_else(|| item.run.clone()),
                item.syscall.clone().unwrap_or_else(|| "write".to_owned()),
                before_word(item.before).to_owned(),
                match (&item.why, item.undoable) {
                    (_, true) => "yes".to_owned(),
                    (Some(why), false) => format!("no: {why}"),
                    (None, false) => "no".to_owned(),
                },
                item.path.clone(),
            ]
        })
        .collect();
    table(
        &[
            "ID", "AT (UTC)", "SESSION", "SYSCALL", "BEFORE", "UNDOABLE", "PATH",
        ],
        rows,
    )
}

fn before_word(before: Before) -> &'static str {
    match before {
        Before::Absent => "absent",
        Before::File => "file",
        Before::Dir => "dir",
        Before::Symlink => "symlink",
        Before::TooLarge => "too_large",
        Before::NotUndoable => "not_undoable",
    }
}

/// `ctl journal undo`: one line per write, in the order undone.
pub(super) fn render_undo(outcomes: &[UndoOutcome]) -> String {
    if outcomes.is_empty() {
        return "Nothing to undo.\n".to_owned();
    }
    outcomes
        .iter()
        .map(|o| {
            let word = match o.outcome {
                UndoResult::Restored => "restored",
                UndoResult::WouldRestore => "would restore",
                UndoResult::Refused => "refused",
            };
            format!("{} {word}: {} ({})\n", o.id, o.path, o.detail)
        })
        .collect()
}
