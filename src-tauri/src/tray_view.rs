//! What the tray shows for a state, without Tauri: which icon, the tooltip, and the menu's
//! texts. `app/tray.rs` only puts these on the icon and menu, so this is tested without a
//! display.

use std::path::Path;

use landstrip_tray_core::decision::broker::PauseState;
use landstrip_tray_core::serving::remote::{RemoteState, RemoteView};
use landstrip_tray_core::serving::service::{ProjectInfo, ProjectStatus};
use landstrip_tray_core::surfaces::prompt_view::home_relative;

/// Which of the three icons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Icon {
    /// Nothing waits, prompts are asked.
    Idle,
    /// At least one request waits for an answer.
    Pending,
    /// Prompts are paused (what would ask is denied); wins over pending.
    Paused,
    /// A canary was read and its run is stopped, waiting for Resume or Kill; wins over
    /// everything (`icons/tray-alert.png`).
    Alert,
}

/// The icon, tooltip and the texts and states of the menu items that follow the core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrayView {
    /// The icon.
    pub icon: Icon,
    /// The tooltip (most Linux hosts never show it, hence the menu texts below).
    pub tooltip: String,
    /// The first item: "Review N waiting requests…".
    pub review: String,
    /// Whether Review can be clicked (something waits).
    pub review_enabled: bool,
    /// The resume item, with the time left and the count denied while paused.
    pub resume: String,
    /// Whether Resume can be clicked (paused).
    pub resume_enabled: bool,
    /// Whether the pause items can be clicked (not paused).
    pub pause_enabled: bool,
    /// The first item while a canary's run is stopped (it opens the activity, where the
    /// incident's Resume and Kill are); None otherwise (the item is not in the menu).
    pub incident: Option<String>,
}

/// The menu item that opens the settings window.
pub const SETTINGS: &str = "Settings…";

/// The menu item that opens the settings window on the activity.
pub const ACTIVITY: &str = "Activity…";

/// The menu item that opens the welcome window again.
pub const WELCOME: &str = "Welcome…";

/// The menu item that opens the log folder.
pub const OPEN_LOGS: &str = "Open logs";

/// The text of the menu's Quit item.
pub const QUIT: &str = "Quit (deny everything held)";

/// The Projects submenu's only line when nothing is served.
pub const NO_PROJECTS: &str = "No projects served (landstrip-tray --project DIR)";

/// What the tray shows with `pending` requests waiting and prompts in `pause`.
pub fn view(pending: usize, pause: &PauseState) -> TrayView {
    let (icon, tooltip) = if pause.paused {
        let until = match pause.remaining_secs {
            Some(secs) => format!("for {} more min", secs.div_ceil(60)),
            None => "until resumed".to_owned(),
        };
        (
            Icon::Paused,
            format!(
                "landstrip-tray: prompts paused {until}; {} denied meanwhile",
                pause.denied
            ),
        )
    } else if pending > 0 {
        (
            Icon::Pending,
            format!("landstrip-tray: {pending} waiting for you"),
        )
    } else {
        (Icon::Idle, "landstrip-tray: idle".to_owned())
    };
    let review = match pending {
        0 => "No requests waiting".to_owned(),
        1 => "Review 1 waiting request…".to_owned(),
        n => format!("Review {n} waiting requests…"),
    };
    let resume = if pause.paused {
        let left = match pause.remaining_secs {
            Some(secs) => format!("{} min left", secs.div_ceil(60)),
            None => "until resumed".to_owned(),
        };
        format!("Resume prompts (paused, {left}; {} denied)", pause.denied)
    } else {
        "Resume prompts".to_owned()
    };
    TrayView {
        icon,
        tooltip,
        review,
        review_enabled: pending > 0,
        resume,
        resume_enabled: pause.paused,
        pause_enabled: !pause.paused,
        incident: None,
    }
}

/// `view` with `stopped` incidents whose runs are stopped: the alert icon, a tooltip that
/// says so, and the incident item first in the menu.
pub fn with_incidents(mut view: TrayView, stopped: usize) -> TrayView {
    if stopped == 0 {
        return view;
    }
    let runs = if stopped == 1 {
        "1 run stopped".to_owned()
    } else {
        format!("{stopped} runs stopped")
    };
    view.icon = Icon::Alert;
    view.tooltip = format!("landstrip-tray: a canary was read; {runs}");
    view.incident = Some(format!("Canary read: {runs} — resume or kill…"));
    view
}

/// The Projects submenu's lines (never empty: nothing served says so and how to fix it).
pub fn project_lines(list: &[ProjectInfo], home: &Path) -> Vec<String> {
    if list.is_empty() {
        return vec![NO_PROJECTS.to_owned()];
    }
    list.iter().map(|p| project_line(p, home)).collect()
}

/// The submenu listing the remote machines (in the menu only while there is one).
pub const REMOTES: &str = "Remote machines";

/// The remote machines submenu's last item: Settings' Remote machines view.
pub const MANAGE_REMOTES: &str = "Manage remote machines…";

/// The remote machines' lines: each one's name, destination and state, in words.
pub fn remote_lines(list: &[RemoteView]) -> Vec<String> {
    list.iter().map(remote_line).collect()
}

/// One remote machine's line: "devbox (u@host) — connected, 2 waiting".
pub fn remote_line(remote: &RemoteView) -> String {
    let state = match remote.state {
        RemoteState::Connecting => "connecting…".to_owned(),
        RemoteState::Connected => match remote.pending {
            0 => "connected".to_owned(),
            n => format!("connected, {n} waiting"),
        },
        RemoteState::Unreachable => "unreachable".to_owned(),
        RemoteState::NeedsKey => "needs a key (a password is never asked)".to_owned(),
        RemoteState::HostKeyUnknown => {
            format!("host key unknown: run ssh {} once", remote.destination)
        }
        RemoteState::HostKeyChanged => format!(
            "host key changed! check it, then run ssh {} once",
            remote.destination
        ),
        RemoteState::NotRunning => "landstrip-tray is not running there".to_owned(),
        RemoteState::ProtocolMismatch => "its landstrip-tray speaks another version".to_owned(),
        RemoteState::Failed => "failed (ctl remote list says why)".to_owned(),
    };
    format!("{} ({}) — {state}", remote.name, remote.destination)
}

/// One project's line: where it is and whether launchers reach us.
pub fn project_line(project: &ProjectInfo, home: &Path) -> String {
    let state = match &project.status {
        ProjectStatus::Serving => format!("served on port {}", project.port),
        ProjectStatus::Conflict { other_pid, .. } => {
            format!("not served: another presenter (pid {other_pid}) has it")
        }
        ProjectStatus::Contested { other_pid, .. } => {
            format!("not served: another presenter (pid {other_pid}) insists on it")
        }
        ProjectStatus::Unpublished { error } => format!("not served: {error}"),
    };
    format!("{} — {state}", home_relative(&project.dir, home))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_line_says_its_state_and_what_to_do() {
        let remote = |state, pending| RemoteView {
            name: "devbox".into(),
            destination: "u@dev".into(),
            port: None,
            identity: None,
            known_hosts: None,
            state,
            detail: String::new(),
            since_ms: 0,
            pending,
        };
        assert_eq!(
            remote_lines(&[remote(RemoteState::Connected, 2)]),
            ["devbox (u@dev) — connected, 2 waiting"]
        );
        assert_eq!(
            remote_line(&remote(RemoteState::HostKeyUnknown, 0)),
            "devbox (u@dev) — host key unknown: run ssh u@dev once"
        );
        assert!(remote_line(&remote(RemoteState::NeedsKey, 0)).contains("needs a key"));
    }

    #[test]
    fn a_stopped_run_turns_the_icon_to_alert_over_a_pause_and_adds_the_incident_item() {
        let paused = PauseState {
            paused: true,
            remaining_secs: None,
            denied: 0,
        };
        assert_eq!(with_incidents(view(1, &paused), 0), view(1, &paused));
        let one = with_incidents(view(1, &paused), 1);
        assert_eq!(one.icon, Icon::Alert);
        assert_eq!(
            one.tooltip,
            "landstrip-tray: a canary was read; 1 run stopped"
        );
        assert_eq!(
            one.incident.as_deref(),
            Some("Canary read: 1 run stopped — resume or kill…")
        );
        // The rest of the menu still follows the pause and the waiting request.
        assert_eq!(one.review, view(1, &paused).review);
        assert!(one.resume_enabled);
        let two = with_incidents(view(0, &ASKING), 2);
        assert_eq!(
            two.tooltip,
            "landstrip-tray: a canary was read; 2 runs stopped"
        );
    }

    const ASKING: PauseState = PauseState {
        paused: false,
        remaining_secs: None,
        denied: 0,
    };

    fn project(dir: &str, status: ProjectStatus) -> ProjectInfo {
        ProjectInfo {
            dir: dir.into(),
            port: 40123,
            discovery_file: "/run/user/1000/opencode-landstrip/port-x.json".into(),
            status,
            prompts: Default::default(),
        }
    }

    #[test]
    fn idle_with_nothing_waiting() {
        let v = view(0, &ASKING);
        assert_eq!(v.icon, Icon::Idle);
        assert_eq!(v.tooltip, "landstrip-tray: idle");
        assert_eq!(v.review, "No requests waiting");
        assert!(!v.review_enabled);
        assert_eq!(v.resume, "Resume prompts");
        assert!(!v.resume_enabled);
        assert!(v.pause_enabled);
    }

    #[test]
    fn pending_counts_what_waits() {
        let one = view(1, &ASKING);
        assert_eq!(one.icon, Icon::Pending);
        assert_eq!(one.review, "Review 1 waiting request…");
        assert!(one.review_enabled);
        assert_eq!(one.tooltip, "landstrip-tray: 1 waiting for you");
        let many = view(7, &ASKING);
        assert_eq!(many.review, "Review 7 waiting requests…");
        assert_eq!(many.icon, Icon::Pending);
    }

    #[test]
    fn paused_says_how_long_and_how_many_were_denied() {
        let timed = PauseState {
            paused: true,
            remaining_secs: Some(14 * 60 + 1),
            denied: 3,
        };
        let v = view(0, &timed);
        assert_eq!(v.icon, Icon::Paused);
        // Rounded up: a pause with 14m01s left still has part of a 15th minute.
        assert_eq!(v.resume, "Resume prompts (paused, 15 min left; 3 denied)");
        assert_eq!(
            v.tooltip,
            "landstrip-tray: prompts paused for 15 more min; 3 denied meanwhile"
        );
        assert!(v.resume_enabled);
        assert!(!v.pause_enabled);

        let open_ended = PauseState {
            paused: true,
            remaining_secs: None,
            denied: 0,
        };
        let v = view(2, &open_ended);
        // Paused wins over pending for the icon; Review still offers what waits.
        assert_eq!(v.icon, Icon::Paused);
        assert_eq!(v.review, "Review 2 waiting requests…");
        assert!(v.review_enabled);
        assert_eq!(v.resume, "Resume prompts (paused, until resumed; 0 denied)");
    }

    #[test]
    fn project_lines_say_whether_launchers_reach_us() {
        let home = Path::new("/home/dev");
        assert_eq!(project_lines(&[], home), vec![NO_PROJECTS.to_owned()]);
        let lines = project_lines(
            &[
                project("/home/dev/src/app", ProjectStatus::Serving),
                project(
                    "/srv/other",
                    ProjectStatus::Conflict {
                        other_pid: 4242,
                        other_port: 40999,
                    },
                ),
                project(
                    "/home/dev",
                    ProjectStatus::Unpublished {
                        error: "read-only file system".into(),
                    },
                ),
            ],
            home,
        );
        assert_eq!(
            lines,
            vec![
                "~/src/app — served on port 40123".to_owned(),
                "/srv/other — not served: another presenter (pid 4242) has it".to_owned(),
                "~ — not served: read-only file system".to_owned(),
            ]
        );
    }
}
