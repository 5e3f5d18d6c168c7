//! The incident notification: a canary was read and its run stopped. Critical, with Kill
//! and Resume that go through the core's operations table as `ctl incident` and the
//! settings window do; withdrawn when the incident is settled elsewhere.

use std::sync::Arc;

use landstrip_tray_core::decision::canary::{Incident, IncidentAction, IncidentState};
use landstrip_tray_core::surfaces::control::Request;
use tauri::Runtime;
use tokio::sync::watch;

use super::bus::Signal;
use super::{text, Notifier};

impl<R: Runtime> Notifier<R> {
    /// One incident's notification, from Notify to its end: a button acted on, dismissed,
    /// or withdrawn because the incident is no longer stopped (`incident` changes).
    pub(super) async fn notify_incident(self: Arc<Self>, mut incident: watch::Receiver<Incident>) {
        let shown = incident.borrow_and_update().clone();
        let Some(bus) = self.bus().await else {
            return self.failed("no session bus");
        };
        let caps = bus.capabilities().await.unwrap_or_default();
        let sound = self.setting(|s| s.notification_sound).await;
        let notification = text::incident(&shown, &self.home, caps, sound);
        let generation = bus.generation();
        let Some(id) = self.show(&bus, &notification, None).await else {
            return;
        };
        let mut signals = bus.subscribe(id, generation);
        loop {
            tokio::select! {
                biased;
                changed = incident.changed() => {
                    let settled = changed.is_err()
                        || incident.borrow_and_update().state != IncidentState::Stopped;
                    if settled && shown.state == IncidentState::Stopped {
                        if let Err(e) = bus.close_notification(id).await {
                            tracing::debug!(incident = shown.id, "withdrawing its notification: {e}");
                        }
                        return;
                    }
                }
                signal = signals.next() => match signal {
                    Some(Signal::Action(action)) => match action.as_str() {
                        text::INCIDENT_KILL => return self.act(shown.id, IncidentAction::Kill).await,
                        text::INCIDENT_RESUME => {
                            return self.act(shown.id, IncidentAction::Resume).await
                        }
                        text::DEFAULT => super::super::settings::open_view(&self.app, "activity"),
                        other => tracing::debug!(action = other, "unknown notification action"),
                    },
                    Some(Signal::Closed(_)) | Some(Signal::ServerGone) | None => return,
                },
            }
        }
    }

    /// Kill or Resume from the notification: the operations table's `IncidentAct`.
    async fn act(&self, id: u64, action: IncidentAction) {
        let request = Request::IncidentAct { id, action };
        if let Err(e) = landstrip_tray_core::surfaces::operations::run(&self.service, request).await
        {
            tracing::warn!(
                incident = id,
                "acting on the incident from its notification: {e}"
            );
        }
    }
}
