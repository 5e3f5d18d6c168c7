//! Pausing prompts: while paused, what would have asked the user is denied at once
//! instead (and counted), until resumed or until the pause's end.

use super::*;

/// While prompts are paused, what would have asked the user is denied at once instead.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pause {
    pub(super) until: Option<Instant>,
    pub(super) denied: u64,
}

/// Whether prompts are paused, until when, and how many queries were denied meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PauseState {
    /// Paused now.
    pub paused: bool,
    /// Seconds left, when paused for a while (None: until resumed).
    pub remaining_secs: Option<u64>,
    /// Queries denied because of the pause (since it began).
    pub denied: u64,
}

impl Broker {
    /// Pauses prompts for `duration` (None: until resumed). Queries that would ask are
    /// denied at once and counted; automatic answers (grants, policy) go on as before.
    pub fn pause(&self, duration: Option<Duration>) {
        let until = duration.map(|d| Instant::now() + d);
        *self.inner.pause.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(Pause { until, denied: 0 });
        self.announce_pause();
    }

    /// Ends a pause.
    pub fn resume(&self) {
        *self.inner.pause.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.announce_pause();
    }

    /// The pause state now.
    pub fn pause_state(&self) -> PauseState {
        let mut pause = self.inner.pause.lock().unwrap_or_else(|e| e.into_inner());
        if pause.is_some_and(|p| p.until.is_some_and(|u| u <= Instant::now())) {
            *pause = None;
        }
        match *pause {
            Some(p) => PauseState {
                paused: true,
                remaining_secs: p
                    .until
                    .map(|u| u.saturating_duration_since(Instant::now()).as_secs()),
                denied: p.denied,
            },
            None => PauseState {
                paused: false,
                remaining_secs: None,
                denied: 0,
            },
        }
    }

    /// Follows pause changes (start, end, the denied count).
    pub fn subscribe_pause(&self) -> watch::Receiver<PauseState> {
        self.inner.pause_changes.subscribe()
    }

    pub(super) fn announce_pause(&self) {
        let state = self.pause_state();
        self.inner.pause_changes.send_replace(state);
    }

    /// True (and counted) when a query that would ask must be denied for a pause.
    pub(super) fn paused_denial(&self) -> bool {
        let counted = {
            let mut pause = self.inner.pause.lock().unwrap_or_else(|e| e.into_inner());
            match pause.as_mut() {
                Some(p) if p.until.is_none_or(|u| u > Instant::now()) => {
                    p.denied += 1;
                    true
                }
                Some(_) => {
                    *pause = None;
                    false
                }
                None => return false,
            }
        };
        self.announce_pause();
        counted
    }
}
