//! The write journal as `ctl journal` and the activity view read and undo it
//! (docs/ARCHITECTURE.md, "The write journal"). Every undo that runs (not a dry run) is
//! recorded in the activity, one record per path, `by: undo`.

use super::OpError;
use crate::activity::{now_ms, ActivityEntry, Decider, Outcome};
use crate::journal::{JournalItem, UndoOutcome, UndoResult, UndoTarget};
use crate::serving::service::Service;

/// The journaled writes, oldest first; only `session`'s (a session or a run key) when
/// given. Blocks (none: the journal is in memory).
pub fn journal_list(service: &Service, session: Option<&str>) -> Result<Vec<JournalItem>, OpError> {
    let journal = service.broker().journal().ok_or(OpError::NoJournal)?;
    Ok(journal.list(session))
}

/// Undoes `target`'s writes, newest first, each path restored or refused on its own;
/// `dry_run` changes nothing and records nothing. Blocks (file work).
pub fn journal_undo(
    service: &Service,
    target: &UndoTarget,
    dry_run: bool,
    force: bool,
) -> Result<Vec<UndoOutcome>, OpError> {
    let broker = service.broker();
    let journal = broker.journal().ok_or(OpError::NoJournal)?;
    let outcomes = journal.undo(target, dry_run, force);
    if !dry_run {
        for outcome in outcomes.iter().filter(|o| !o.path.is_empty()) {
            broker.activity().record(ActivityEntry {
                ts: now_ms(),
                project: outcome.project.to_string_lossy().into_owned(),
                session: outcome.session.clone(),
                kind: "filesystem".to_owned(),
                operation: "undo".to_owned(),
                subject: outcome.path.clone(),
                exe: None,
                pid: None,
                outcome: match outcome.outcome {
                    UndoResult::Refused => Outcome::Refused,
                    _ => Outcome::Restored,
                },
                by: Decider::Undo,
                detail: Some(format!("journal entry {}: {}", outcome.id, outcome.detail)),
                command: None,
                chain: Vec::new(),
            });
        }
    }
    Ok(outcomes)
}
