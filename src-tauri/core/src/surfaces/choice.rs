//! One button of the prompt dialog: what the dialog's view and the after-a-secret view
//! both offer.

use serde::Serialize;

use crate::decision::answer::ChoiceKey;

/// One button of the dialog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChoiceView {
    /// What it answers.
    pub key: ChoiceKey,
    /// The button's name: the choice's word, or `deny_session`, `never_global` for the
    /// variants of deny and never (the page's `data-choice`).
    pub name: &'static str,
    /// The full name, e.g. "Allow for session" (accessible name, tooltips).
    pub label: String,
    /// The button text where the row says "Or allow for …", e.g. "This session".
    pub short: String,
    /// The key that presses it (shown on the button).
    pub shortcut: char,
    /// What it does, in one sentence (tooltip and accessible description).
    pub hint: String,
    /// Enter presses it.
    pub default: bool,
    /// It opens a second step (a preview of the file change, or a confirmation) first.
    pub two_step: bool,
}
