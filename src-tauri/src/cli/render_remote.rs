//! `ctl remote` replies for a person, and a remote request's project as `ctl pending`
//! shows it.

use landstrip_tray_core::serving::remote::RemoteView;
use landstrip_tray_core::surfaces::control::Reply;

use super::table::table;

/// A request's project, `NAME:DIR` for a remote machine's.
pub(super) fn on_host(host: Option<&str>, project: &str) -> String {
    match host {
        Some(host) => format!("{host}:{project}"),
        None => project.to_owned(),
    }
}

/// The remotes' replies.
pub(super) fn render_remote(reply: &Reply) -> String {
    match reply {
        Reply::Remotes(list) if list.is_empty() => {
            "No remote machines (add one with ctl remote add NAME DESTINATION).\n".to_owned()
        }
        Reply::Remotes(list) => table(
            &["NAME", "DESTINATION", "STATE", "WAITING", "DETAIL"],
            list.iter().map(row).collect(),
        ),
        Reply::RemoteAdded(view) => format!(
            "{}: added; connecting to {} (see ctl remote list)\n",
            view.name, view.destination
        ),
        Reply::RemoteRemoved(name) => {
            format!("{name}: removed; its requests wait on that machine\n")
        }
        _ => String::new(),
    }
}

fn row(view: &RemoteView) -> Vec<String> {
    let destination = match view.port {
        Some(port) => format!("{} (port {port})", view.destination),
        None => view.destination.clone(),
    };
    vec![
        view.name.clone(),
        destination,
        view.state.as_str().to_owned(),
        view.pending.to_string(),
        view.detail.clone(),
    ]
}
