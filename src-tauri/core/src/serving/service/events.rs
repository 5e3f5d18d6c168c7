//! The service's event hubs in one place: policy-file changes, what a surface asks the
//! desktop UI to show, and what the app did about other presenters. Each is a broadcast
//! channel: every window and the notifications subscribe; a subscriber that falls behind
//! is told so (`Lagged`) rather than slowing the sender.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use super::presenters::PresenterEvent;
use crate::policy::PolicyChanged;

/// Something a surface (`ctl`, a second start) asks the desktop UI to show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "show")]
pub enum UiRequest {
    /// The settings window, on a view (`projects`, `policy`, `grants`, `activity`,
    /// `general`, `settings`) and, for the policy view, a project.
    Settings {
        /// Which view; the window's default when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        view: Option<String>,
        /// The project to select.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        project: Option<PathBuf>,
    },
    /// The settings window on the policy view of `project`, with one list focused (the
    /// prompt dialog's "Edit policy…": the list its grant would change).
    EditPolicy {
        /// The project whose policy is shown.
        project: PathBuf,
        /// The list to focus, e.g. `filesystem.allowWrite`.
        list: crate::policy::change::ListField,
    },
}

/// Policy-change events kept for a slow subscriber before it starts missing some.
const POLICY_EVENTS: usize = 64;
/// UI requests kept (a person asks for a window now and then).
const UI_EVENTS: usize = 8;
/// Presenter events kept (one per start of another presenter).
const PRESENTER_EVENTS: usize = 16;

/// The hubs.
pub(super) struct Events {
    /// Policy files changed on disk (after the prompts they settle were answered).
    pub(super) policy: broadcast::Sender<PolicyChanged>,
    /// What the desktop surfaces are asked to show.
    pub(super) ui: broadcast::Sender<UiRequest>,
    /// What the app did about other presenters.
    pub(super) presenters: broadcast::Sender<PresenterEvent>,
}

impl Events {
    pub(super) fn new() -> Self {
        Self {
            policy: broadcast::channel(POLICY_EVENTS).0,
            ui: broadcast::channel(UI_EVENTS).0,
            presenters: broadcast::channel(PRESENTER_EVENTS).0,
        }
    }
}
