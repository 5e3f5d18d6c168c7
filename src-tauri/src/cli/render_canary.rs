//! How `ctl canary` and `ctl incidents` print for a person.

use landstrip_tray_core::decision::canary::Incident;
use landstrip_tray_core::surfaces::ops::{CanaryAdded, CanaryItem};

use super::table::{table, utc_time};

/// `ctl canary list`: one line per canary.
pub(super) fn render_canaries(items: &[CanaryItem]) -> String {
    if items.is_empty() {
        return "No canaries. Add one with: landstrip-tray ctl canary add PATH\n".to_owned();
    }
    items
        .iter()
        .map(|c| {
            let missing = if c.present {
                ""
            } else {
                " (no file there now)"
            };
            format!("{}{missing}\n", c.path.display())
        })
        .collect()
}

/// `ctl canary add`.
pub(super) fn render_canary_added(added: &CanaryAdded) -> String {
    match &added.decoy {
        Some(shape) => format!(
            "{}: a canary now, with a decoy written ({shape}); a sandboxed read of it is denied and its run stopped\n",
            added.path.display()
        ),
        None => format!(
            "{}: a canary now (the file there was kept as it is); a sandboxed read of it is denied and its run stopped\n",
            added.path.display()
        ),
    }
}

/// `ctl incidents`: one row per incident, oldest first, and how to act on stopped ones.
pub(super) fn render_incidents(incidents: &[Incident]) -> String {
    if incidents.is_empty() {
        return "No incidents.\n".to_owned();
    }
    let rows = incidents
        .iter()
        .map(|i| {
            vec![
                i.id.to_string(),
                utc_time(i.at_ms),
                i.state.as_str().to_owned(),
                i.session.clone().unwrap_or_else(|| i.run.clone()),
                i.pids
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
                i.path.clone(),
            ]
        })
        .collect();
    let mut out = table(
        &["ID", "AT (UTC)", "STATE", "SESSION", "PIDS", "PATH"],
        rows,
    );
    if incidents
        .iter()
        .any(|i| i.state == landstrip_tray_core::decision::canary::IncidentState::Stopped)
    {
        out.push_str("Stopped runs wait: landstrip-tray ctl incident resume ID | kill ID\n");
    }
    out
}

/// `ctl incident resume|kill`.
pub(super) fn render_incident(incident: &Incident) -> String {
    format!(
        "incident {}: {} ({})\n",
        incident.id,
        incident.state.as_str(),
        match incident.pids.len() {
            1 => "1 process".to_owned(),
            n => format!("{n} processes"),
        }
    )
}
