//! Which prompt the dialog shows, and the notice it gives when the one on screen is
//! settled elsewhere: pure state, tested without a display.

use crate::activity::Decider;
use crate::decision::broker::{PendingPrompt, PromptId};

/// Which prompt the dialog shows, and what it says when the shown one goes away without
/// the dialog answering it.
#[derive(Debug, Default)]
pub struct DialogQueue {
    shown: Option<PromptId>,
    focus: Option<PromptId>,
    answered_here: Option<PromptId>,
}

impl DialogQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// The prompt on screen.
    pub fn shown(&self) -> Option<PromptId> {
        self.shown
    }

    /// Shows `id` next, if it is pending (a notification was clicked).
    pub fn focus(&mut self, id: PromptId) {
        self.focus = Some(id);
    }

    /// The dialog is answering `id` itself: its going away needs no notice.
    pub fn answering(&mut self, id: PromptId) {
        self.answered_here = Some(id);
    }

    /// Notes that `id` was settled by `by`; returns a notice when it was the prompt on
    /// screen and the dialog did not answer it.
    pub fn resolved(&mut self, id: PromptId, by: Decider) -> Option<String> {
        if self.focus == Some(id) {
            self.focus = None;
        }
        if self.shown != Some(id) {
            return None;
        }
        self.shown = None;
        if self.answered_here.take() == Some(id) {
            return None;
        }
        Some(
            match by {
                Decider::RunEnded => "The previous request was withdrawn: its run ended.",
                Decider::Timeout => "The previous request timed out and was denied.",
                Decider::SessionGrant | Decider::Policy | Decider::SandboxDisabled => {
                    "The previous request was allowed by a grant or the policy."
                }
                Decider::Quit => {
                    "The previous request was denied: its project is no longer served."
                }
                Decider::User => "The previous request was answered elsewhere.",
                Decider::Remote => {
                    "The previous request was settled on its machine, or the connection to it was lost."
                }
                Decider::Web => "The previous request was answered on the phone page.",
                _ => "The previous request was settled elsewhere.",
            }
            .to_owned(),
        )
    }

    /// Picks the prompt to show from `pending` (oldest first): the focused one, else the
    /// one on screen, else the oldest. Returns its index.
    pub fn pick(&mut self, pending: &[PendingPrompt]) -> Option<usize> {
        let index_of =
            |id: Option<PromptId>| id.and_then(|id| pending.iter().position(|p| p.id == id));
        let index = index_of(self.focus.take())
            .or_else(|| index_of(self.shown))
            .or(if pending.is_empty() { None } else { Some(0) });
        self.shown = index.map(|i| pending[i].id);
        index
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::wire::protocol::{decode_line, Line};

    fn write(id: PromptId, path: &str) -> PendingPrompt {
        let trap = format!(
            r#"{{"kind":"filesystem","code":"FILESYSTEM_DENIED","state":"query","query_id":"{id}","operation":"write","path":"{path}","requested_path":"{path}","syscall":"openat","errno":"EACCES","flags":["O_WRONLY","O_CREAT","O_TRUNC"],"reason":"allow_miss","process":{{"pid":2434,"exe":"/usr/bin/python3.11","cwd":"/home/dev/src/proj"}},"mechanism":"seccomp"}}"#
        );
        let Line::Query(query) = decode_line(trap.as_bytes()) else {
            panic!("not a query: {trap}");
        };
        PendingPrompt {
            id,
            connection: 1,
            project: "/home/dev/src/proj".into(),
            session: None,
            query: Arc::new(query),
            received_ms: 0,
            session_scope: None,
            origin: None,
            after_secret: None,
            host: None,
        }
    }

    #[test]
    fn the_queue_keeps_the_shown_prompt_and_moves_on_to_the_oldest() {
        let mut queue = DialogQueue::new();
        let pending = vec![write(1, "/tmp/a"), write(2, "/tmp/b"), write(3, "/tmp/c")];
        assert_eq!(queue.pick(&pending), Some(0));
        assert_eq!(queue.shown(), Some(1));
        // A notification click brings another one forward.
        queue.focus(3);
        assert_eq!(queue.pick(&pending), Some(2));
        assert_eq!(queue.pick(&pending), Some(2), "and it stays");
        // Answered from the dialog: no notice; the oldest comes next.
        queue.answering(3);
        assert_eq!(queue.resolved(3, Decider::User), None);
        assert_eq!(queue.pick(&pending[..2]), Some(0));
        // Withdrawn while on screen: a notice; something else going is silent.
        assert_eq!(queue.resolved(2, Decider::RunEnded), None);
        let notice = queue.resolved(1, Decider::RunEnded).expect("a notice");
        assert!(notice.contains("withdrawn"), "{notice}");
        assert_eq!(queue.pick(&[]), None);
        assert_eq!(queue.shown(), None);
    }

    #[test]
    fn answered_elsewhere_says_so() {
        let mut queue = DialogQueue::new();
        queue.pick(&[write(5, "/tmp/a")]);
        let notice = queue.resolved(5, Decider::User).unwrap();
        assert_eq!(notice, "The previous request was answered elsewhere.");
    }
}
