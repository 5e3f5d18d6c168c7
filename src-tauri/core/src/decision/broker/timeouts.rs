//! The prompt timeout: a prompt nobody answers in time is denied once, so no sandboxed
//! program waits for ever.

use super::*;

impl Broker {
    /// Sets the prompt timeout (None: prompts wait for the user forever). A timeout denies
    /// once and never persists anything.
    pub fn set_prompt_timeout(&self, timeout: Option<Duration>) {
        *self.inner.timeout.lock().unwrap_or_else(|e| e.into_inner()) = timeout;
    }

    pub(super) fn arm_timeout(&self, id: PromptId) {
        let Some(timeout) = *self.inner.timeout.lock().unwrap_or_else(|e| e.into_inner()) else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // Every caller runs in a runtime's context (the connection threads enter the
            // listener's); a prompt without its timeout would wait for a person forever.
            tracing::error!(
                prompt = id,
                "no async runtime here: the prompt timeout is not armed"
            );
            return;
        };
        // Weak: a pending timer must not keep the broker alive.
        let broker = Arc::downgrade(&self.inner);
        let task = runtime.spawn(async move {
            tokio::time::sleep(timeout).await;
            if let Some(inner) = broker.upgrade() {
                Broker { inner }.settle(id, Action::Deny, Outcome::Deny, Decider::Timeout, None);
            }
        });
        match self.table().prompts.get_mut(&id) {
            Some(pending) => {
                if let Some(old) = pending.timeout.replace(task.abort_handle()) {
                    old.abort();
                }
            }
            None => task.abort(),
        }
    }
}
