//! What the notifications say: pure functions from prompts and reports to notify-rust
//! notifications, so the wording is tested without a bus.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use landstrip_tray_core::decision::broker::PendingPrompt;
use landstrip_tray_core::decision::canary::{Incident, IncidentState};
use landstrip_tray_core::origin::program::program_label;
use landstrip_tray_core::origin::text::shorten_middle;
use landstrip_tray_core::serving::service::PresenterEvent;
use landstrip_tray_core::wire::protocol::{QueryKind, TerminalTrap};
use landstrip_tray_core::words::home_relative;
use notify_rust::{Hint, Notification, Timeout, Urgency};

use super::bus::Caps;

/// The application name every notification carries.
pub const APP_NAME: &str = "landstrip-tray";

/// The desktop entry every notification names (the `desktop-entry` hint: the .deb's
/// landstrip-tray.desktop), so a desktop shows them as the app's, with its name and icon;
/// GNOME Shell otherwise guesses from the sender's pid, and finds nothing.
pub const DESKTOP_ENTRY: &str = "landstrip-tray";

/// Action key: allow this request once.
pub const ALLOW: &str = "allow";

/// Action key: deny this request.
pub const DENY: &str = "deny";

/// Action key: allow this request and its session scope for 15 minutes.
pub const ALLOW_15M: &str = "allow-15m";

/// Action key: deny this request and, for the session, its session scope.
pub const DENY_SESSION: &str = "deny-session";

/// How long the notification's time-limited session grant lives.
pub const NOTIFICATION_GRANT_FOR: &str = "15m";

/// Action key the server sends when the notification itself is clicked.
pub const DEFAULT: &str = "default";

/// The freedesktop sound a new prompt asks for.
pub const PROMPT_SOUND: &str = "dialog-warning";

/// The summary of the notification said once when there is no tray host.
pub const NO_TRAY_SUMMARY: &str = "landstrip-tray is running without a tray icon";

/// A run's terminal traps so far, as the summary shows them.
#[derive(Debug, Clone)]
pub struct Denials {
    /// The project the run belongs to.
    pub project: PathBuf,
    /// The latest trap.
    pub latest: Arc<TerminalTrap>,
    /// How many so far.
    pub count: u64,
}

/// "Sandbox write blocked", "Sandbox network connect blocked", …
pub fn prompt_title(kind: &QueryKind) -> String {
    match kind {
        QueryKind::Filesystem(fs) => format!("Sandbox {} blocked", fs.operation.as_str()),
        QueryKind::Network(net) => format!("Sandbox network {} blocked", net.operation.as_str()),
    }
}

/// The body of a prompt's notification (plain text).
pub fn prompt_body(prompt: &PendingPrompt, home: &Path) -> String {
    let query = &prompt.query;
    let what = match &query.kind {
        QueryKind::Filesystem(fs) => format!("Path: {}", home_relative(Path::new(&fs.path), home)),
        QueryKind::Network(net) => format!("Address: {}", net.target),
    };
    let mut body = what;
    // After a secret, the earlier read comes first: it is why this request matters.
    if let Some(read) = &prompt.after_secret {
        body = format!(
            "After a secret: this run read {} ({}) before this.\n{body}",
            home_relative(Path::new(&read.path), home),
            read.what
        );
    }
    let origin = prompt.origin.as_deref();
    // The command first, as in the dialog; its chain when the command was started by
    // another (landstrip's). Secrets were masked when the origin was read.
    if let Some(asking) = origin.and_then(|o| o.asking()) {
        body.push_str(&format!(
            "\nCommand: {}",
            shorten_middle(&asking.command.full, BODY_COMMAND)
        ));
    }
    if let Some(chain) = chain_line(origin) {
        body.push_str(&chain);
    }
    body.push_str(&format!(
        "\nProgram: {}\nProject: {}",
        program_label(query.process.as_ref()),
        home_relative(&prompt.project, home)
    ));
    if let Some(session) = &prompt.session {
        match origin.and_then(|o| o.opencode.as_ref()) {
            Some(call) => {
                let title = call.title.as_deref().unwrap_or("untitled");
                body.push_str(&format!("\nSession: {title} ({session})"));
                if let Some(description) = &call.description {
                    body.push_str(&format!(
                        "\nAgent: {}",
                        shorten_middle(description, BODY_COMMAND)
                    ));
                }
                // opencode 2 keeps no description: the agent's command, where it is not
                // the command above.
                if let Some(command) = &call.command {
                    body.push_str(&format!(
                        "\nAgent's command: {}",
                        shorten_middle(command, BODY_COMMAND)
                    ));
                }
            }
            None => body.push_str(&format!("\nSession: {session}")),
        }
    }
    body
}

/// "\nChain: a → b → c" when the command was started by another (landstrip's), each
/// process and the whole shortened; secrets were masked when the origin was read.
fn chain_line(origin: Option<&landstrip_tray_core::origin::Origin>) -> Option<String> {
    let origin = origin.filter(|o| o.chain.len() > 1)?;
    let chain: Vec<String> = origin
        .chain
        .iter()
        .map(|link| shorten_middle(&link.argv.full, BODY_LINK))
        .collect();
    Some(format!(
        "\nChain: {}",
        shorten_middle(&chain.join(" → "), BODY_CHAIN)
    ))
}

/// How long a notification's command line and agent's note may be.
const BODY_COMMAND: usize = 80;
/// How long one process of the chain may be, and the whole chain.
const BODY_LINK: usize = 40;
const BODY_CHAIN: usize = 120;

/// The notification for a new prompt: critical, with a sound unless `sound` is off (the
/// `notificationSound` setting), and with buttons when the server has actions.
pub fn prompt(prompt: &PendingPrompt, home: &Path, caps: Caps, sound: bool) -> Notification {
    // Another machine's paths are shown (`~`) and judged by its user's home.
    let home = prompt.home(home);
    let mut title = prompt_title(&prompt.query.kind);
    if prompt.after_secret.is_some() {
        title.push_str(" after a secret read");
    }
    // Another machine's request names it first.
    if let Some(host) = prompt.host_name() {
        title = format!("On {host}: {title}");
    }
    let mut n = Notification::new();
    n.appname(APP_NAME)
        .hint(Hint::DesktopEntry(DESKTOP_ENTRY.to_owned()))
        .summary(&title)
        .body(&body_text(&prompt_body(prompt, home), caps))
        .icon("dialog-warning");
    if sound {
        n.hint(Hint::SoundName(PROMPT_SOUND.to_owned()));
    } else {
        n.hint(Hint::SuppressSound(true));
    }
    n.urgency(Urgency::Critical)
        // It waits for an answer: the dialog or the control command may give it, and then
        // we withdraw it.
        .timeout(Timeout::Never);
    if caps.actions {
        let allow = offers_allow(prompt, home);
        if allow {
            n.action(ALLOW, "Allow once");
        }
        n.action(DENY, "Deny").action(DEFAULT, "Review…");
        // After the three a server with little room shows first.
        if allow {
            n.action(ALLOW_15M, "Allow for 15 min");
        }
        n.action(DENY_SESSION, "Deny for session");
    }
    n
}

/// Whether the notification may carry a one-click Allow: not for a sensitive location,
/// nor for a network request of a run after a secret; both are reviewed in the dialog
/// (where Deny is the default).
pub fn offers_allow(prompt: &PendingPrompt, home: &Path) -> bool {
    match &prompt.query.kind {
        QueryKind::Filesystem(fs) => {
            // Another machine's paths by its user's home.
            let home = prompt.home(home);
            landstrip_tray_core::policy::sensitive::guarding(Path::new(&fs.path), home).is_none()
        }
        QueryKind::Network(_) => prompt.after_secret.is_none(),
    }
}

/// The incident notification's Resume button (SIGCONT to the run's stopped processes).
pub const INCIDENT_RESUME: &str = "incident-resume";

/// The incident notification's Kill button (SIGKILL; the run's held requests denied).
pub const INCIDENT_KILL: &str = "incident-kill";

/// The incident notification's title while its run is stopped.
pub const INCIDENT_STOPPED: &str = "A sandboxed program read a canary: its run is stopped";

/// The body of an incident's notification (plain text): the canary, the program, the
/// command chain and the opencode session where known, and what became of the run.
pub fn incident_body(incident: &Incident, home: &Path) -> String {
    let mut body = format!("Canary: {}", home_relative(Path::new(&incident.path), home));
    let origin = incident.origin.as_deref();
    let program = match (&incident.exe, origin.and_then(|o| o.asking())) {
        (_, Some(asking)) => shorten_middle(&asking.command.full, BODY_COMMAND),
        (Some(exe), None) => exe.clone(),
        (None, None) => "unknown".to_owned(),
    };
    body.push_str(&format!("\nProgram: {program}"));
    if let Some(chain) = chain_line(origin) {
        body.push_str(&chain);
    }
    if let Some(session) = &incident.session {
        match origin
            .and_then(|o| o.opencode.as_ref())
            .and_then(|c| c.title.as_deref())
        {
            Some(title) => body.push_str(&format!("\nSession: {title} ({session})")),
            None => body.push_str(&format!("\nSession: {session}")),
        }
    }
    body.push_str(&format!(
        "\nProject: {}",
        home_relative(&incident.project, home)
    ));
    let state = match incident.state {
        IncidentState::Stopped => format!(
            "{} process{} stopped; they stay stopped until you resume or kill them.",
            incident.pids.len(),
            if incident.pids.len() == 1 { "" } else { "es" }
        ),
        IncidentState::NotStopped => {
            "The read was denied; no confined process could be stopped.".to_owned()
        }
        other => format!("Its processes: {}.", other.as_str()),
    };
    body.push_str(&format!("\n{state}"));
    body
}

/// The notification for a canary read: critical, with a sound unless `sound` is off, and
/// Resume and Kill where the run is stopped and the server has actions (never an allow:
/// the read was denied and stays denied).
pub fn incident(incident: &Incident, home: &Path, caps: Caps, sound: bool) -> Notification {
    let title = if incident.state == IncidentState::Stopped {
        INCIDENT_STOPPED
    } else {
        "A sandboxed program read a canary"
    };
    let mut n = Notification::new();
    n.appname(APP_NAME)
        .hint(Hint::DesktopEntry(DESKTOP_ENTRY.to_owned()))
        .summary(title)
        .body(&body_text(&incident_body(incident, home), caps))
        .icon("dialog-error");
    if sound {
        n.hint(Hint::SoundName(PROMPT_SOUND.to_owned()));
    } else {
        n.hint(Hint::SuppressSound(true));
    }
    n.urgency(Urgency::Critical).timeout(Timeout::Never);
    if caps.actions {
        if incident.state == IncidentState::Stopped {
            n.action(INCIDENT_KILL, "Kill")
                .action(INCIDENT_RESUME, "Resume");
        }
        n.action(DEFAULT, "Details…");
    }
    n
}

/// One line about a terminal trap: "write ~/x", "could not start /usr/bin/nope", …
pub fn trap_line(trap: &TerminalTrap, home: &Path) -> String {
    let (kind, operation, subject) = trap.summary();
    match kind.as_str() {
        "filesystem" => format!("{operation} {}", home_relative(Path::new(&subject), home)),
        "network" => format!("{operation} {subject}"),
        "launch" => format!("could not start {subject}"),
        "usage" => format!("usage error: {subject}"),
        _ if subject.is_empty() => operation,
        _ => format!("{operation}: {subject}"),
    }
}

/// The quiet summary of a run's terminal denials (no sound, no buttons, low urgency).
pub fn denials(denials: &Denials, home: &Path, caps: Caps) -> Notification {
    let title = match denials.count {
        1 => "Sandbox denied a request".to_owned(),
        n => format!("Sandbox denied {n} requests"),
    };
    let latest = if denials.count == 1 {
        "Denied"
    } else {
        "Latest"
    };
    let body = format!(
        "{latest}: {}\nProject: {}",
        trap_line(&denials.latest, home),
        home_relative(&denials.project, home)
    );
    quiet(&title, &body, caps)
}

/// The quiet word that another presenter (opencode's terminal UI) wanted a project's
/// prompts: taken back ("prompts stay here"), or, when it insisted, left to it.
pub fn presenter(event: &PresenterEvent, home: &Path, caps: Caps) -> Notification {
    let (title, body) = match event {
        PresenterEvent::TookBack { project, other } => (
            format!("Prompts stay here: {}", home_relative(project, home)),
            format!(
                "{} — prompts stay here; change in Settings",
                other.describe()
            ),
        ),
        PresenterEvent::Contested {
            project,
            other,
            rounds,
        } => (
            format!(
                "Prompts went to the terminal: {}",
                home_relative(project, home)
            ),
            format!(
                "{} took the project back {rounds} times; it keeps it until it exits. \
                 Take over or change in Settings",
                other.describe()
            ),
        ),
    };
    quiet(&title, &body, caps)
}

/// A quiet notice: no sound, no buttons, low urgency.
fn quiet(title: &str, body: &str, caps: Caps) -> Notification {
    let mut n = Notification::new();
    n.appname(APP_NAME)
        .hint(Hint::DesktopEntry(DESKTOP_ENTRY.to_owned()))
        .summary(title)
        .body(&body_text(body, caps))
        .icon("dialog-information")
        .hint(Hint::SuppressSound(true))
        .urgency(Urgency::Low);
    n
}

/// Said once at start when nothing hosts tray icons.
pub fn no_tray(caps: Caps) -> Notification {
    let mut n = Notification::new();
    n.appname(APP_NAME)
        .hint(Hint::DesktopEntry(DESKTOP_ENTRY.to_owned()))
        .summary(NO_TRAY_SUMMARY)
        .body(&body_text(
            "Requests arrive as notifications and the dialog.",
            caps,
        ))
        .icon("dialog-information")
        .hint(Hint::SuppressSound(true))
        .urgency(Urgency::Low);
    n
}

/// The body as the server reads it: servers with markup would take `<`, `&` in a path
/// for tags and entities.
fn body_text(plain: &str, caps: Caps) -> String {
    if !caps.body_markup {
        return plain.to_owned();
    }
    let mut out = String::with_capacity(plain.len());
    for c in plain.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use landstrip_tray_core::decision::broker::RemoteHost;
    use landstrip_tray_core::wire::protocol::{decode_line, Line};

    const HOME: &str = "/home/dev";

    fn pending(line: &str, session: Option<&str>) -> PendingPrompt {
        let Line::Query(query) = decode_line(line.as_bytes()) else {
            panic!("not a query: {line}")
        };
        PendingPrompt {
            id: 7,
            connection: 1,
            project: "/home/dev/proj".into(),
            session: session.map(str::to_owned),
            query: Arc::new(query),
            received_ms: 0,
            session_scope: None,
            origin: None,
            after_secret: None,
            host: None,
        }
    }

    fn terminal(line: &str) -> Arc<TerminalTrap> {
        let Line::Terminal(trap) = decode_line(line.as_bytes()) else {
            panic!("not terminal: {line}")
        };
        Arc::new(trap)
    }

    const WRITE: &str = r#"{"kind":"filesystem","state":"query","query_id":"1","operation":"write","path":"/home/dev/notes/a&b<c>.txt","process":{"pid":2434,"exe":"/usr/bin/python3.11","cwd":"/home/dev/proj"}}"#;
    const CONNECT: &str = r#"{"kind":"network","state":"query","query_id":"8","operation":"connect","target":"127.0.0.1:9"}"#;

    fn hint<'a>(n: &'a Notification, want: &str) -> Option<&'a Hint> {
        n.hints.iter().find(|h| {
            matches!(
                (h, want),
                (Hint::SoundName(_), "sound-name")
                    | (Hint::Urgency(_), "urgency")
                    | (Hint::SuppressSound(_), "suppress-sound")
            )
        })
    }

    #[test]
    fn a_remote_machine_s_request_names_it_in_the_title() {
        let line = r#"{"kind":"filesystem","state":"query","query_id":"1","operation":"write","path":"/home/dev/proj/x","reason":"allow_miss"}"#;
        let remote = PendingPrompt {
            host: Some(RemoteHost {
                name: "devbox".into(),
                home: HOME.into(),
            }),
            ..pending(line, None)
        };
        let n = prompt(&remote, Path::new("/home/dev"), Caps::default(), false);
        assert!(
            n.summary.starts_with("On devbox: Sandbox write blocked"),
            "{}",
            n.summary
        );
    }

    #[test]
    fn a_remote_path_is_judged_by_the_remote_home() {
        // bob's ssh config on the remote: nothing sensitive under this user's home (/home/dev).
        let caps = Caps {
            actions: true,
            body_markup: false,
        };
        let trap = WRITE.replace("/home/dev/notes/a&b<c>.txt", "/home/bob/.ssh/config");
        let local = pending(&trap, None);
        assert!(offers_allow(&local, Path::new(HOME)), "the control case");
        let remote = PendingPrompt {
            host: Some(RemoteHost {
                name: "devbox".into(),
                home: "/home/bob".into(),
            }),
            ..local
        };
        assert!(!offers_allow(&remote, Path::new(HOME)));
        let n = prompt(&remote, Path::new(HOME), caps, true);
        assert!(!n.actions.iter().any(|a| a == "allow"), "{:?}", n.actions);
        assert!(n.body.contains("Path: ~/.ssh/config"), "{}", n.body);
    }

    #[test]
    fn a_sensitive_path_gets_no_one_click_allow() {
        let caps = Caps {
            actions: true,
            body_markup: false,
        };
        let trap = WRITE.replace("/home/dev/notes/a&b<c>.txt", "/home/dev/.ssh/id_ed25519");
        assert_ne!(trap, WRITE, "the test's trap names a sensitive path");
        let n = prompt(&pending(&trap, None), Path::new(HOME), caps, true);
        assert_eq!(
            n.actions,
            [
                "deny",
                "Deny",
                "default",
                "Review…",
                "deny-session",
                "Deny for session"
            ]
        );
    }

    #[test]
    fn a_write_prompt_says_what_who_and_where() {
        let caps = Caps {
            actions: true,
            body_markup: false,
        };
        let n = prompt(&pending(WRITE, Some("ses_1")), Path::new(HOME), caps, true);
        assert_eq!(n.summary, "Sandbox write blocked");
        assert_eq!(
            n.body,
            "Path: ~/notes/a&b<c>.txt\nProgram: python3.11 (pid 2434)\nProject: ~/proj\nSession: ses_1"
        );
        assert_eq!(n.appname, APP_NAME);
        assert_eq!(
            n.actions,
            [
                "allow",
                "Allow once",
                "deny",
                "Deny",
                "default",
                "Review…",
                "allow-15m",
                "Allow for 15 min",
                "deny-session",
                "Deny for session"
            ]
        );
        assert_eq!(
            hint(&n, "sound-name"),
            Some(&Hint::SoundName("dialog-warning".into()))
        );
        assert_eq!(hint(&n, "urgency"), Some(&Hint::Urgency(Urgency::Critical)));
    }

    #[test]
    fn a_prompt_with_its_origin_says_the_command_first_and_its_chain() {
        use landstrip_tray_core::origin::{ChainLink, OpencodeCall, Origin};
        use landstrip_tray_core::words::Shown;
        let link = |pid, argv: &str, command: &str| ChainLink {
            pid,
            exe: None,
            program: "x".into(),
            argv: Shown::plain(argv),
            command: Shown::plain(command),
        };
        let mut p = pending(WRITE, Some("ses_1"));
        p.origin = Some(Arc::new(Origin {
            chain: vec![
                link(1, "bash -lc 'npm ci && npm test'", "npm ci && npm test"),
                link(2, "node …/npm-cli.js ci", "npm ci"),
            ],
            chain_cut: false,
            opencode: Some(OpencodeCall {
                session: "ses_1".into(),
                title: Some("Fix the build".into()),
                description: Some("Installs dependencies".into()),
                command: None,
            }),
        }));
        let caps = Caps {
            actions: true,
            body_markup: false,
        };
        let n = prompt(&p, Path::new(HOME), caps, true);
        assert_eq!(
            n.body,
            "Path: ~/notes/a&b<c>.txt\nCommand: npm ci\n\
             Chain: bash -lc 'npm ci && npm test' → node …/npm-cli.js ci\n\
             Program: python3.11 (pid 2434)\nProject: ~/proj\n\
             Session: Fix the build (ses_1)\nAgent: Installs dependencies"
        );
        // opencode 2: no description; the agent's command where it differs.
        let mut origin = (**p.origin.as_ref().expect("an origin")).clone();
        origin.opencode = Some(OpencodeCall {
            session: "ses_1".into(),
            title: Some("Fix the build".into()),
            description: None,
            command: Some("npm ci --force".into()),
        });
        p.origin = Some(Arc::new(origin));
        let n = prompt(&p, Path::new(HOME), caps, true);
        assert!(
            n.body
                .ends_with("Session: Fix the build (ses_1)\nAgent's command: npm ci --force"),
            "{}",
            n.body
        );
    }

    #[test]
    fn with_the_sound_off_a_prompt_asks_for_silence() {
        let caps = Caps {
            actions: true,
            body_markup: false,
        };
        let n = prompt(&pending(WRITE, None), Path::new(HOME), caps, false);
        assert_eq!(hint(&n, "sound-name"), None);
        assert_eq!(hint(&n, "suppress-sound"), Some(&Hint::SuppressSound(true)));
        assert_eq!(hint(&n, "urgency"), Some(&Hint::Urgency(Urgency::Critical)));
    }

    #[test]
    fn markup_servers_get_escaped_text_and_no_actions_means_no_buttons() {
        let caps = Caps {
            actions: false,
            body_markup: true,
        };
        let n = prompt(&pending(WRITE, None), Path::new(HOME), caps, true);
        assert!(
            n.body.starts_with("Path: ~/notes/a&amp;b&lt;c&gt;.txt\n"),
            "{}",
            n.body
        );
        assert!(n.actions.is_empty());
    }

    #[test]
    fn a_network_prompt_names_the_operation_and_address() {
        let caps = Caps::default();
        let n = prompt(&pending(CONNECT, None), Path::new(HOME), caps, true);
        assert_eq!(n.summary, "Sandbox network connect blocked");
        assert_eq!(
            n.body,
            "Address: 127.0.0.1:9\nProgram: an unknown program\nProject: ~/proj"
        );
    }

    fn incident_of(state: IncidentState, pids: Vec<u32>) -> Incident {
        Incident {
            id: 3,
            session: Some("ses_1".into()),
            run: "1.2".into(),
            project: "/home/dev/proj".into(),
            path: "/home/dev/.aws/credentials".into(),
            exe: Some("/usr/bin/python3.11".into()),
            pids,
            at_ms: 1,
            state,
            origin: None,
            earlier: Vec::new(),
        }
    }

    #[test]
    fn a_stopped_incident_is_critical_names_the_canary_and_offers_kill_and_resume_only() {
        let caps = Caps {
            actions: true,
            body_markup: false,
        };
        let stopped = incident_of(IncidentState::Stopped, vec![10, 11]);
        let n = incident(&stopped, Path::new(HOME), caps, true);
        assert_eq!(n.summary, INCIDENT_STOPPED);
        assert_eq!(
            n.body,
            "Canary: ~/.aws/credentials\nProgram: /usr/bin/python3.11\nSession: ses_1\n\
             Project: ~/proj\n2 processes stopped; they stay stopped until you resume or kill them."
        );
        assert_eq!(hint(&n, "urgency"), Some(&Hint::Urgency(Urgency::Critical)));
        assert_eq!(
            n.actions,
            [
                "incident-kill",
                "Kill",
                "incident-resume",
                "Resume",
                "default",
                "Details…"
            ]
        );
        // Nothing stopped: no buttons that would act on nothing.
        let not = incident(
            &incident_of(IncidentState::NotStopped, Vec::new()),
            Path::new(HOME),
            caps,
            false,
        );
        assert_eq!(not.actions, ["default", "Details…"]);
        assert!(
            not.body.ends_with("no confined process could be stopped."),
            "{}",
            not.body
        );
        assert_eq!(
            hint(&not, "suppress-sound"),
            Some(&Hint::SuppressSound(true))
        );
    }

    #[test]
    fn a_connect_after_a_secret_is_critical_names_both_and_offers_no_allow() {
        let caps = Caps {
            actions: true,
            body_markup: false,
        };
        let mut marked = pending(CONNECT, None);
        marked.after_secret = Some(landstrip_tray_core::decision::after_secret::SecretRead {
            path: "/home/dev/.aws/credentials".into(),
            what: "AWS credentials".into(),
            at_ms: 1,
        });
        let n = prompt(&marked, Path::new(HOME), caps, true);
        assert_eq!(
            n.summary,
            "Sandbox network connect blocked after a secret read"
        );
        assert!(
            n.body.starts_with(
                "After a secret: this run read ~/.aws/credentials (AWS credentials) before this.\nAddress: 127.0.0.1:9"
            ),
            "{}",
            n.body
        );
        assert_eq!(hint(&n, "urgency"), Some(&Hint::Urgency(Urgency::Critical)));
        assert_eq!(
            n.actions,
            [
                "deny",
                "Deny",
                "default",
                "Review…",
                "deny-session",
                "Deny for session"
            ]
        );
        assert!(!offers_allow(&marked, Path::new(HOME)));
        assert!(offers_allow(&pending(CONNECT, None), Path::new(HOME)));
    }

    #[test]
    fn a_taken_back_project_is_said_quietly_naming_the_terminal() {
        use landstrip_tray_core::serving::service::OtherPresenter;
        let other = OtherPresenter {
            pid: 4242,
            port: 40000,
            name: Some("opencode".into()),
        };
        let event = PresenterEvent::TookBack {
            project: "/home/dev/proj".into(),
            other: other.clone(),
        };
        let n = presenter(&event, Path::new(HOME), Caps::default());
        assert_eq!(n.summary, "Prompts stay here: ~/proj");
        assert_eq!(
            n.body,
            "opencode's terminal prompts, pid 4242 — prompts stay here; change in Settings"
        );
        assert!(n.actions.is_empty());
        assert_eq!(hint(&n, "urgency"), Some(&Hint::Urgency(Urgency::Low)));
        assert_eq!(hint(&n, "suppress-sound"), Some(&Hint::SuppressSound(true)));
        let event = PresenterEvent::Contested {
            project: "/home/dev/proj".into(),
            other,
            rounds: 3,
        };
        let n = presenter(&event, Path::new(HOME), Caps::default());
        assert!(n.body.contains("3 times"), "{}", n.body);
    }

    #[test]
    fn denial_summaries_are_quiet_and_count() {
        let info = terminal(
            r#"{"kind":"filesystem","state":"info","query_id":"0","operation":"read","path":"/home/dev/.ssh/id"}"#,
        );
        let one = Denials {
            project: "/home/dev/proj".into(),
            latest: info.clone(),
            count: 1,
        };
        let n = denials(&one, Path::new(HOME), Caps::default());
        assert_eq!(n.summary, "Sandbox denied a request");
        assert_eq!(n.body, "Denied: read ~/.ssh/id\nProject: ~/proj");
        assert!(n.actions.is_empty());
        assert_eq!(hint(&n, "sound-name"), None);
        assert_eq!(hint(&n, "urgency"), Some(&Hint::Urgency(Urgency::Low)));
        assert_eq!(hint(&n, "suppress-sound"), Some(&Hint::SuppressSound(true)));

        let launch = terminal(
            r#"{"kind":"launch","code":"LAUNCH_FAILED","program":"/nonexistent/prog","errno":"ENOENT"}"#,
        );
        let three = Denials {
            latest: launch,
            count: 3,
            ..one
        };
        let n = denials(&three, Path::new(HOME), Caps::default());
        assert_eq!(n.summary, "Sandbox denied 3 requests");
        assert_eq!(
            n.body,
            "Latest: could not start /nonexistent/prog\nProject: ~/proj"
        );
    }
}
