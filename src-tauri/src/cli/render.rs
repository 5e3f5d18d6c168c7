//! How `ctl` prints a reply: for a person (short sentences, tables) or, with `--json`, the
//! reply's data as the wire carries it. Every renderer reads the reply's typed fields.

use landstrip_tray_core::activity::{ActivityEntry, Decider, Outcome};
use landstrip_tray_core::decision::broker::{PauseState, PromptId};
use landstrip_tray_core::decision::grants::{Effect, Grant, GrantScope};
use landstrip_tray_core::journal::format_size;
use landstrip_tray_core::origin::text::shorten_middle;
use landstrip_tray_core::policy::view::{EntryView, FileState, PolicyView};
use landstrip_tray_core::policy::Source;
use landstrip_tray_core::serving::service::{ProjectInfo, ProjectStatus, PromptsGo};
use landstrip_tray_core::surfaces::control::{AnswerReply, PendingItem, Reply, StatusReply};
use landstrip_tray_core::surfaces::ops::{
    AppSettingChanged, AppSettingsView, Changed, LearnReview, Undone,
};
use landstrip_tray_core::wire::protocol::Action;

use super::render_canary::{
    render_canaries, render_canary_added, render_incident, render_incidents,
};
use super::render_journal::{render_journal, render_undo};
use super::render_remote::{on_host, render_remote};
use super::render_web::render_web_reply;
use super::table::{age, table, utc_time};

/// The reply's data as pretty JSON (pending and projects: the bare list).
pub(super) fn json_of(reply: &Reply) -> String {
    let value = serde_json::to_value(reply)
        .map(|mut v| v["data"].take())
        .unwrap_or_default();
    serde_json::to_string_pretty(&value).unwrap_or_default()
}

/// The reply for a person: short lines or a table, each line newline-terminated.
pub(super) fn render(reply: &Reply) -> String {
    match reply {
        Reply::Status(status) => render_status(status),
        Reply::Projects(list) => render_projects(list),
        Reply::Pending(items) => render_pending(items, |ms| age(ms / 1000)),
        Reply::Answered(answered) => render_answer(answered),
        Reply::Project(info) => format!(
            "{}: {}; prompts go {}\n",
            info.dir.display(),
            project_state(info),
            prompts_word(info.prompts)
        ),
        Reply::Removed(dir) => format!("{}: no longer served\n", dir.display()),
        Reply::Paused(pause) => format!("prompts {}\n", pause_state(pause)),
        Reply::Resumed(resumed) if resumed.was_paused => {
            format!("prompts resumed ({} denied while paused)\n", resumed.denied)
        }
        Reply::Resumed(_) => "prompts were not paused\n".to_owned(),
        Reply::Shown => "the settings window is shown\n".to_owned(),
        Reply::Policy(view) => render_policy(view),
        Reply::PolicyChanged(changed) => render_changed(changed),
        Reply::PolicyUndone(undone) => render_undone(undone),
        Reply::Learned { review, saved } => render_learned(review, saved.as_deref()),
        Reply::Grants(grants) => render_grants(grants),
        Reply::Revoked(id) => {
            format!("revoked grant {id}; the next matching request asks again\n")
        }
        Reply::Activity(entries) => render_activity(entries),
        Reply::AppSettings(settings) => render_app_settings(settings),
        Reply::AppSettingChanged(changed) => render_app_setting_changed(changed),
        Reply::Journal(items) => render_journal(items),
        Reply::JournalUndone(outcomes) => render_undo(outcomes),
        Reply::Canaries(items) => render_canaries(items),
        Reply::CanaryAdded(added) => render_canary_added(added),
        Reply::CanaryRemoved(path) => {
            format!("{}: no longer a canary (its file stays)\n", path.display())
        }
        Reply::Incidents(incidents) => render_incidents(incidents),
        Reply::IncidentActed(incident) => render_incident(incident),
        Reply::Remotes(_) | Reply::RemoteAdded(_) | Reply::RemoteRemoved(_) => render_remote(reply),
        Reply::Web(_) | Reply::WebPairing(_) | Reply::WebDevices(_) | Reply::WebRevoked(_) => {
            render_web_reply(reply)
        }
        // The settings window's views: no ctl command asks for them (a script may, over
        // the socket); their JSON is all there is to show.
        Reply::EntryChecked(_)
        | Reply::Sessions(_)
        | Reply::PluginWarnings(_)
        | Reply::ActivityPage(_)
        | Reply::ActivityExplained(_)
        | Reply::ActivityPreview(_)
        | Reply::PromptPreview(_) => format!("{}\n", json_of(reply)),
    }
}

/// `ctl policy show`: each file with its state, then the effective policy, every entry
/// with its source, its meaning and what deserves a second look.
fn render_policy(view: &PolicyView) -> String {
    let mut out = format!("policy for {}\n", view.project.display());
    for (layer, file) in [("global", &view.global), ("project", &view.project_file)] {
        let said = match &file.state {
            FileState::Missing => {
                "missing (nothing set; created when something is saved into it)".to_owned()
            }
            FileState::Valid { .. } => "valid".to_owned(),
            FileState::Invalid {
                error,
                line,
                column,
                ..
            } => {
                let at = match (line, column) {
                    (Some(line), Some(column)) => format!(" at line {line}:{column}"),
                    _ => String::new(),
                };
                format!("INVALID{at}: {error} (never written)")
            }
        };
        out.push_str(&format!("{layer:<8} {}: {said}\n", file.shown));
        // Said first: with such a field in the file the plugin refuses every command.
        for conflict in &file.plugin_conflicts {
            let flag = if conflict.rejected {
                "REJECTED"
            } else {
                "warning"
            };
            let which = match layer {
                "global" => "--global".to_owned(),
                _ => format!(
                    "--project {}",
                    shell_word(&view.project.display().to_string())
                ),
            };
            out.push_str(&format!(
                "  {flag}: {conflict}\n    fix: landstrip-tray ctl policy remove-field {which} {}\n",
                conflict.field
            ));
        }
    }
    let Some(effective) = &view.effective else {
        out.push_str("effective: none (a file is invalid; the plugin refuses to run)\n");
        return out;
    };
    out.push_str("effective:\n");
    for field in &effective.fields {
        out.push_str(&format!(
            "  {} = {} ({})\n",
            field.field,
            field.value,
            source_word(field.source)
        ));
    }
    // The later plugin's shell and windows fields: shown, edited only by hand.
    for field in &effective.platform {
        let line = match &field.value {
            Some(value) => format!(
                "  {} = {value} ({}; edit the file to change it)\n",
                field.field,
                field.source.map_or("", source_word)
            ),
            None => format!("  {} not set (the plugin's default)\n", field.field),
        };
        out.push_str(&line);
    }
    for list in &effective.lists {
        out.push_str(&format!(
            "  {}:{}\n",
            list.list,
            if list.entries.is_empty() {
                " (empty)"
            } else {
                ""
            }
        ));
        for entry in &list.entries {
            out.push_str(&entry_line(entry));
        }
    }
    out
}

/// One entry of an effective list: the entry, its source, its meaning and its flags.
fn entry_line(entry: &EntryView) -> String {
    let explained = &entry.explained;
    let mut line = format!("    {}  [{}]", explained.entry, source_word(entry.source));
    if !explained.meaning.is_empty() {
        line.push_str(&format!("  {}", explained.meaning));
    }
    if let Some(broad) = &explained.broad {
        line.push_str(&format!("  BROAD: {broad}"));
    }
    if let Some(covering) = &entry.redundant_with {
        line.push_str(&format!("  REDUNDANT: {covering} covers it"));
    }
    // Counted for filesystem entries only; absent elsewhere.
    if let Some(hits) = entry.hits {
        match entry.last_hit_ms {
            Some(last) if hits > 0 => {
                line.push_str(&format!("  HITS: {} (last {} UTC)", hits, utc_time(last)))
            }
            _ => line.push_str("  HITS: 0 (never used)"),
        }
    }
    line.push('\n');
    line
}

/// A layer as the wire spells it.
fn source_word(source: Source) -> &'static str {
    match source {
        Source::Default => "default",
        Source::Global => "global",
        Source::Project => "project",
    }
}

/// `ctl policy learn`: the proposal as a diff against the target file's lists (context
/// lines as they are, `+` lines proposed, each with what it covers), what was left out and
/// why, and what saving did.
fn render_learned(review: &LearnReview, saved: Option<&Changed>) -> String {
    let shown = &review.shown;
    let proposals = &review.learned.proposals;
    let mut out = format!(
        "learned from {} logged {} for {shown}\n",
        review.considered,
        if review.considered == 1 {
            "request"
        } else {
            "requests"
        },
    );
    if proposals.is_empty() {
        out.push_str("nothing to propose: no answered prompt calls for a new entry\n");
    }
    for current in &review.current {
        let mut added = proposals
            .iter()
            .filter(|p| p.list == current.list)
            .peekable();
        if added.peek().is_none() {
            continue;
        }
        out.push_str(&format!("  filesystem.{}:\n", current.list.json_key()));
        for entry in &current.entries {
            out.push_str(&format!("    {entry}\n"));
        }
        for proposal in added {
            out.push_str(&format!(
                "  + {}    covers {}, e.g. {}\n",
                proposal.entry,
                plural(proposal.covers, "request"),
                proposal.examples.join(", ")
            ));
        }
    }
    let left_out = &review.learned.left_out;
    if !left_out.is_empty() {
        out.push_str("left out:\n");
        for left in left_out {
            out.push_str(&format!("  {}: {}\n", left.path, left.reason));
        }
    }
    match saved {
        Some(changed) => out.push_str(&render_changed(changed)),
        None if !proposals.is_empty() => out.push_str(&format!(
            "nothing written; add --save to write {} into {shown}\n",
            match proposals.len() {
                1 => "this entry".to_owned(),
                n => format!("these {n} entries"),
            }
        )),
        None => {}
    }
    out
}

fn render_changed(changed: &Changed) -> String {
    let mut out = if changed.written {
        format!(
            "{}: wrote {}\n",
            changed.description,
            changed.file.display()
        )
    } else {
        format!(
            "{}: {} already says so, nothing written\n",
            changed.description,
            changed.file.display()
        )
    };
    out.push_str(&also_answered(&changed.also_answered));
    // Every edit of such a file says it again (an unknown plugin version only warns).
    for conflict in &changed.plugin_conflicts {
        let flag = if conflict.rejected {
            "REJECTED"
        } else {
            "warning"
        };
        out.push_str(&format!(
            "  {flag}: {conflict}\n    (landstrip-tray ctl policy show gives the command that removes it)\n"
        ));
    }
    out
}

/// `word` as a shell reads it back: bare when plain, else single-quoted.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '+' | ','));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

fn render_undone(undone: &Undone) -> String {
    let done = if undone.removed {
        format!(
            "removed {} again (the save had created it)",
            undone.file.display()
        )
    } else {
        format!("restored {}", undone.file.display())
    };
    let mut out = format!("undid {}: {done}\n", undone.description);
    out.push_str(&also_answered(&undone.also_answered));
    out
}

fn render_app_settings(settings: &AppSettingsView) -> String {
    let on_off = |on: bool| if on { "true" } else { "false" };
    let timeout = settings
        .prompt_timeout_secs
        .map_or_else(|| "off".to_owned(), |secs| secs.to_string());
    table(
        &["KEY", "VALUE"],
        vec![
            vec!["promptTimeout".to_owned(), timeout],
            vec![
                "summarizeDenials".to_owned(),
                on_off(settings.summarize_denials).to_owned(),
            ],
            vec![
                "notificationSound".to_owned(),
                on_off(settings.notification_sound).to_owned(),
            ],
            vec![
                "autostart".to_owned(),
                on_off(settings.autostart).to_owned(),
            ],
            vec![
                "afterSecret".to_owned(),
                settings.after_secret.as_str().to_owned(),
            ],
            vec![
                "webSensitive".to_owned(),
                settings.web_sensitive.as_str().to_owned(),
            ],
            vec![
                "journal".to_owned(),
                if settings.journal { "on" } else { "off" }.to_owned(),
            ],
            vec![
                "journalLimit".to_owned(),
                format_size(settings.journal_limit),
            ],
            vec![
                "journalFileLimit".to_owned(),
                format_size(settings.journal_file_limit),
            ],
        ],
    ) + &format!(
        "(from {}; autostart: {})\n",
        settings.file.display(),
        settings.autostart_file.display()
    )
}

fn render_app_setting_changed(changed: &AppSettingChanged) -> String {
    format!(
        "{}: {} {}\n",
        changed.description,
        if changed.removed { "removed" } else { "wrote" },
        changed.file.display()
    )
}

fn render_grants(grants: &[Grant]) -> String {
    if grants.is_empty() {
        return "No session grants.\n".to_owned();
    }
    let rows = grants
        .iter()
        .map(|g| {
            let (operation, subject) = match &g.scope {
                GrantScope::Filesystem { operation, root } => {
                    (operation.as_str(), root.display().to_string())
                }
                GrantScope::Network { operation, target } => (operation.as_str(), target.clone()),
            };
            let effect = match g.effect {
                Effect::Deny => "deny",
                Effect::Allow => "allow",
            };
            vec![
                g.id.to_string(),
                g.key.project.display().to_string(),
                match g.key.session.as_deref() {
                    None | Some("") => "(every run)".to_owned(),
                    Some(session) => session.to_owned(),
                },
                format!("{effect} {operation}"),
                subject,
                grant_limit(g),
            ]
        })
        .collect();
    table(
        &["ID", "PROJECT", "SESSION", "GRANT", "SCOPE", "LIMIT"],
        rows,
    )
}

/// A grant's limits in words: the time left, its run, its program; "until quit" if none.
fn grant_limit(grant: &Grant) -> String {
    let mut parts = Vec::new();
    if let Some(ms) = grant.remaining_ms {
        let secs = ms.div_ceil(1000);
        parts.push(format!(
            "{} left of {}",
            landstrip_tray_core::duration::format_duration(secs),
            grant
                .lifetime
                .map_or_else(String::new, |lifetime| lifetime.as_text())
        ));
    }
    if let Some(run) = grant.run {
        parts.push(format!("run {run}"));
    }
    if let Some(program) = &grant.program {
        parts.push(format!("only {program}"));
    }
    if parts.is_empty() {
        "until quit".to_owned()
    } else {
        parts.join(", ")
    }
}

fn render_activity(entries: &[ActivityEntry]) -> String {
    if entries.is_empty() {
        return "No activity.\n".to_owned();
    }
    let rows = entries
        .iter()
        .map(|e| {
            vec![
                utc_time(e.ts),
                e.project.clone(),
                outcome_word(e.outcome).to_owned(),
                decider_word(e.by).to_owned(),
                e.operation.clone(),
                e.subject.clone(),
                e.exe.clone().unwrap_or_default(),
            ]
        })
        .collect();
    table(
        &[
            "TIME (UTC)",
            "PROJECT",
            "DECISION",
            "BY",
            "OPERATION",
            "SUBJECT",
            "PROGRAM",
        ],
        rows,
    )
}

/// What happened, as the log and the wire spell it.
fn outcome_word(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Allow => "allow",
        Outcome::Deny => "deny",
        Outcome::Withdrawn => "withdrawn",
        Outcome::Reported => "reported",
        Outcome::Restored => "restored",
        Outcome::Refused => "refused",
    }
}

/// Who decided, as the log and the wire spell it.
fn decider_word(by: Decider) -> &'static str {
    match by {
        Decider::User => "user",
        Decider::Web => "web",
        Decider::SessionGrant => "session_grant",
        Decider::Policy => "policy",
        Decider::SandboxDisabled => "sandbox_disabled",
        Decider::HardDenial => "hard_denial",
        Decider::Timeout => "timeout",
        Decider::RunEnded => "run_ended",
        Decider::Quit => "quit",
        Decider::Flood => "flood",
        Decider::Paused => "paused",
        Decider::AfterSecret => "after_secret",
        Decider::Canary => "canary",
        Decider::Report => "report",
        Decider::Undo => "undo",
        Decider::Remote => "remote",
    }
}

fn render_status(status: &StatusReply) -> String {
    let conflicts = match status.conflicts {
        0 => String::new(),
        n => format!(" ({n} held by another presenter)"),
    };
    format!(
        "landstrip-tray {} (pid {})\nprojects: {} served{conflicts}\nwaiting:  {}\nprompts:  {}\n",
        status.version,
        status.pid,
        status.projects,
        plural(status.pending, "request"),
        pause_state(&status.pause),
    )
}

fn render_projects(list: &[ProjectInfo]) -> String {
    if list.is_empty() {
        return "No projects served (landstrip-tray ctl add-project DIR)\n".to_owned();
    }
    let rows = list
        .iter()
        .map(|p| {
            vec![
                p.dir.display().to_string(),
                p.port.to_string(),
                p.prompts.as_str().to_owned(),
                match p.status {
                    // The port is in its own column.
                    ProjectStatus::Serving => "serving".to_owned(),
                    _ => project_state(p),
                },
            ]
        })
        .collect();
    table(&["PROJECT", "PORT", "PROMPTS", "STATUS"], rows)
}

/// How `ctl` says where a project's prompts go.
fn prompts_word(prompts: PromptsGo) -> &'static str {
    match prompts {
        PromptsGo::Here => "here",
        PromptsGo::Terminal => "to opencode's terminal while it runs",
    }
}

/// How long the command is in `ctl pending`'s table.
const PENDING_COMMAND: usize = 48;

fn render_pending(items: &[PendingItem], age: impl Fn(u64) -> String) -> String {
    if items.is_empty() {
        return "No requests waiting.\n".to_owned();
    }
    let rows = items
        .iter()
        .map(|item| {
            let subject = item
                .path
                .clone()
                .or_else(|| item.target.clone())
                .unwrap_or_default();
            let program = match (&item.exe, item.pid) {
                (Some(exe), Some(pid)) => format!("{exe} (pid {pid})"),
                (Some(exe), None) => exe.clone(),
                (None, Some(pid)) => format!("pid {pid}"),
                (None, None) => "?".to_owned(),
            };
            // The command behind it, on one line (`--json` has it whole, with its chain).
            let command = item.origin.as_ref().and_then(|o| o.asking()).map_or_else(
                || "-".to_owned(),
                |asking| shorten_middle(&asking.command.full, PENDING_COMMAND),
            );
            vec![
                item.id.to_string(),
                item.operation.clone(),
                subject,
                program,
                command,
                on_host(item.host.as_deref(), &item.project.display().to_string()),
                age(item.age_ms),
            ]
        })
        .collect();
    // The requests of a run after a secret, named under the table with the read.
    let notes: String = items
        .iter()
        .filter_map(|i| i.after_secret_line(&age))
        .collect();
    table(
        &[
            "ID",
            "OPERATION",
            "PATH OR TARGET",
            "PROGRAM",
            "COMMAND",
            "PROJECT",
            "AGE",
        ],
        rows,
    ) + &notes
}

fn render_answer(answered: &AnswerReply) -> String {
    let id = answered.id;
    let mut out = match (answered.action, &answered.persisted, answered.grant) {
        (Action::Deny, Some(persisted), _) => format!(
            "denied request {id} and added {:?} to {}: never asked again\n",
            persisted.entry,
            persisted.file.display()
        ),
        (Action::Deny, None, Some(grant)) => format!(
            "denied request {id} and the same scope for the session (grant {grant}; ctl grants)\n"
        ),
        (Action::Deny, None, None) => format!("denied request {id}\n"),
        (Action::Allow, Some(persisted), _) => format!(
            "allowed request {id} and added {:?} to {}\n",
            persisted.entry,
            persisted.file.display()
        ),
        (Action::Allow, None, Some(grant)) => format!(
            "allowed request {id} and the same scope for the session (grant {grant}; ctl grants)\n"
        ),
        (Action::Allow, None, None) => format!("allowed request {id} once\n"),
    };
    out.push_str(&also_answered(&answered.also_answered));
    for left in &answered.left_waiting {
        out.push_str(&format!("left waiting: {}: {}\n", left.id, left.reason));
    }
    out
}

/// "also answered: 3, 4" when a grant or policy change settled other prompts too.
fn also_answered(ids: &[PromptId]) -> String {
    if ids.is_empty() {
        return String::new();
    }
    let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
    format!("also answered: {}\n", ids.join(", "))
}

pub(super) fn project_state(info: &ProjectInfo) -> String {
    match &info.status {
        ProjectStatus::Serving => format!("served on port {}", info.port),
        ProjectStatus::Conflict {
            other_pid,
            other_port,
        } => format!(
            "another presenter (pid {other_pid}, port {other_port}) owns the discovery file; \
             launchers reach it, not us (ctl take-over DIR)"
        ),
        ProjectStatus::Contested {
            other_pid,
            other_port,
            rounds,
        } => format!(
            "contested: another presenter (pid {other_pid}, port {other_port}) published the \
             discovery file again after {rounds} take-backs; it keeps it until it exits \
             (ctl take-over DIR)"
        ),
        ProjectStatus::Unpublished { error } => format!("not published: {error}"),
    }
}

fn pause_state(pause: &PauseState) -> String {
    match (pause.paused, pause.remaining_secs) {
        (false, _) => "asking".to_owned(),
        (true, None) => format!("paused until resumed ({} denied meanwhile)", pause.denied),
        (true, Some(secs)) => format!(
            "paused for {} more ({} denied meanwhile)",
            age(secs),
            pause.denied
        ),
    }
}

fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use landstrip_tray_core::decision::broker::LeftWaiting;
    use landstrip_tray_core::surfaces::control::{Persisted, ResumeReply};

    /// A reply's data read from its JSON, as `ctl` reads it off the wire.
    fn typed<T: serde::de::DeserializeOwned>(json: serde_json::Value) -> T {
        serde_json::from_value(json).expect("a reply's JSON")
    }

    fn item() -> PendingItem {
        PendingItem {
            id: 12,
            connection: 1,
            project: "/home/dev/proj".into(),
            session: None,
            kind: "filesystem".into(),
            operation: "write".into(),
            path: Some("/home/dev/notes/todo.txt".into()),
            requested_path: None,
            target: None,
            reason: Some("allow_miss".into()),
            syscall: Some("openat".into()),
            pid: Some(2434),
            exe: Some("/usr/bin/dash".into()),
            cwd: None,
            session_scope: None,
            received_ms: 0,
            age_ms: 75_000,
            origin: None,
            after_secret: None,
            undo: None,
            host: None,
        }
    }

    #[test]
    fn pending_is_a_table_with_the_facts_a_person_needs() {
        let mut net = item();
        net.id = 3;
        net.kind = "network".into();
        net.operation = "connect".into();
        net.path = None;
        net.target = Some("127.0.0.1:9".into());
        net.exe = None;
        let text = render(&Reply::Pending(vec![item(), net.clone()]));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(
            lines[0].starts_with("ID  OPERATION  PATH OR TARGET"),
            "{text}"
        );
        assert!(lines[0].ends_with("PROJECT         AGE"), "{text}");
        assert_eq!(
            lines[1],
            "12  write      /home/dev/notes/todo.txt  /usr/bin/dash (pid 2434)  -        /home/dev/proj  1m15s"
        );
        assert!(lines[2].starts_with("3   connect    127.0.0.1:9"), "{text}");
        assert!(lines[2].contains("pid 2434"), "{text}");
        assert_eq!(
            render(&Reply::Pending(Vec::new())),
            "No requests waiting.\n"
        );
        // A request of a run after a secret is named under the table with the read.
        net.received_ms = 9_000;
        net.after_secret = Some(landstrip_tray_core::decision::after_secret::SecretRead {
            path: "/home/dev/.aws/credentials".into(),
            what: "AWS credentials".into(),
            at_ms: 5_000,
        });
        let text = render(&Reply::Pending(vec![item(), net]));
        assert!(
            text.ends_with(
                "\n3: after a secret: its run read /home/dev/.aws/credentials (AWS credentials) 4s before\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn json_prints_the_bare_data() {
        let json = json_of(&Reply::Pending(vec![item()]));
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value[0]["id"], 12);
        assert_eq!(value[0]["path"], "/home/dev/notes/todo.txt");
    }

    #[test]
    fn pending_shows_the_command_and_json_has_its_chain() {
        use landstrip_tray_core::origin::{ChainLink, OpencodeCall, Origin};
        use landstrip_tray_core::words::Shown;
        let link = |pid, program: &str, argv: &str, command: &str| ChainLink {
            pid,
            exe: None,
            program: program.to_owned(),
            argv: Shown::plain(argv),
            command: Shown::plain(command),
        };
        let mut with = item();
        with.origin = Some(std::sync::Arc::new(Origin {
            chain: vec![link(
                7,
                "echo",
                "sh -c 'echo hi > ~/outside/f.txt'",
                "echo hi > ~/outside/f.txt",
            )],
            chain_cut: false,
            opencode: Some(OpencodeCall {
                session: "ses_1".into(),
                title: Some("Fix it".into()),
                description: Some("Writes f".into()),
                command: None,
            }),
        }));
        let text = render(&Reply::Pending(vec![with.clone()]));
        let header = text.lines().next().unwrap();
        let row = text.lines().nth(1).unwrap();
        let at = header.find("COMMAND").expect("a COMMAND column");
        assert_eq!(&row[at..at + 25], "echo hi > ~/outside/f.txt", "{text}");
        let long = "x".repeat(300);
        with.origin = Some(std::sync::Arc::new(Origin {
            chain: vec![link(7, "x", &long, &long)],
            chain_cut: false,
            opencode: None,
        }));
        let text = render(&Reply::Pending(vec![with.clone()]));
        assert!(text.contains('…') && !text.contains(&long), "{text}");
        let json: serde_json::Value =
            serde_json::from_str(&json_of(&Reply::Pending(vec![with]))).unwrap();
        assert_eq!(
            json[0]["origin"]["chain"][0]["command"]["full"],
            long.as_str()
        );
    }

    #[test]
    fn answers_and_pauses_read_as_sentences() {
        let answered = AnswerReply {
            id: 4,
            action: Action::Allow,
            grant: None,
            persisted: Some(Persisted {
                file: "/p/.opencode/sandbox.json".into(),
                entry: ".".into(),
            }),
            also_answered: vec![5, 6],
            left_waiting: Vec::new(),
        };
        assert_eq!(
            render(&Reply::Answered(answered)),
            "allowed request 4 and added \".\" to /p/.opencode/sandbox.json\nalso answered: 5, 6\n"
        );
        let session = AnswerReply {
            id: 7,
            action: Action::Allow,
            grant: Some(2),
            persisted: None,
            also_answered: vec![8],
            left_waiting: vec![LeftWaiting {
                id: 9,
                reason: "sensitive (an SSH private key): only an answer to this request itself allows it".into(),
            }],
        };
        assert_eq!(
            render(&Reply::Answered(session)),
            "allowed request 7 and the same scope for the session (grant 2; ctl grants)\nalso answered: 8\n\
             left waiting: 9: sensitive (an SSH private key): only an answer to this request itself allows it\n"
        );
        let paused = PauseState {
            paused: true,
            remaining_secs: Some(899),
            denied: 2,
        };
        assert_eq!(
            render(&Reply::Paused(paused)),
            "prompts paused for 14m59s more (2 denied meanwhile)\n"
        );
        assert_eq!(
            render(&Reply::Resumed(ResumeReply {
                was_paused: true,
                denied: 3
            })),
            "prompts resumed (3 denied while paused)\n"
        );
        assert_eq!(age(3 * 3600 + 300), "3h05m");
    }

    #[test]
    fn a_learned_proposal_reads_as_a_diff_with_what_was_left_out() {
        let review: LearnReview = typed(serde_json::json!({
            "file": "/p/.opencode/sandbox.json", "shown": "/p/.opencode/sandbox.json",
            "target": "project", "considered": 5,
            "current": [
                {"list": "allowRead", "entries": ["~/docs"]},
                {"list": "allowWrite", "entries": ["out"]}
            ],
            "proposals": [{"list": "allowWrite", "entry": "/var/tmp/build", "root": "/var/tmp/build",
                "covers": 2, "examples": ["/var/tmp/build/a", "/var/tmp/build/b"]}],
            "leftOut": [{"path": "/h/.ssh/config", "reason": "sensitive: SSH keys and configuration"}]
        }));
        let text = render(&Reply::Learned {
            review: review.clone(),
            saved: None,
        });
        assert_eq!(
            text,
            "learned from 5 logged requests for /p/.opencode/sandbox.json\n\
             \x20 filesystem.allowWrite:\n\
             \x20   out\n\
             \x20 + /var/tmp/build    covers 2 requests, e.g. /var/tmp/build/a, /var/tmp/build/b\n\
             left out:\n\
             \x20 /h/.ssh/config: sensitive: SSH keys and configuration\n\
             nothing written; add --save to write this entry into /p/.opencode/sandbox.json\n"
        );
        let saved = render(&Reply::Learned {
            review,
            saved: Some(Box::new(Changed {
                file: "/p/.opencode/sandbox.json".into(),
                written: true,
                description: "add \"/var/tmp/build\" to filesystem.allowWrite".into(),
                also_answered: vec![],
                plugin_conflicts: vec![],
            })),
        });
        assert!(
            saved.ends_with("to filesystem.allowWrite: wrote /p/.opencode/sandbox.json\n"),
            "{saved}"
        );
        let empty = render(&Reply::Learned {
            review: typed(
                serde_json::json!({"file": "/h/x", "shown": "~/x", "target": "global",
                "considered": 0, "current": [], "proposals": [], "leftOut": []}),
            ),
            saved: None,
        });
        assert!(empty.contains("nothing to propose"), "{empty}");
    }

    #[test]
    fn policy_grants_and_activity_read_as_tables() {
        let view = typed(serde_json::json!({
            "project": "/p",
            "global": {"path": "/h/.config/opencode/sandbox.json", "shown": "~/.config/opencode/sandbox.json",
                "state": {"state": "missing"}},
            "projectFile": {"path": "/p/.opencode/sandbox.json", "shown": "/p/.opencode/sandbox.json",
                "state": {"state": "invalid", "error": "expected value", "line": 2, "column": 5}},
            "effective": null
        }));
        let text = render(&Reply::Policy(view));
        assert!(
            text.contains("global   ~/.config/opencode/sandbox.json: missing"),
            "{text}"
        );
        assert!(
            text.contains("INVALID at line 2:5: expected value"),
            "{text}"
        );
        let view = typed(serde_json::json!({
            "project": "/p",
            "global": {"path": "/g", "shown": "g", "state": {"state": "valid", "text": "{}", "overrides": {}}},
            "projectFile": {"path": "/p", "shown": "p", "state": {"state": "valid", "text": "{}", "overrides": {}}},
            "effective": {"fields": [{"field": "enabled", "value": true, "source": "default"}],
                "platform": [{"field": "shell.readAccess", "value": "policy", "source": "project"},
                    {"field": "windows.allowLoopback", "value": null, "source": null}],
                "lists": [{"list": "filesystem.allowWrite", "entries": [
                    {"entry": "~", "resolved": "/h", "meaning": "your home folder", "broad": "all of home", "source": "global", "redundantWith": null},
                    {"entry": "out", "resolved": "/p/out", "meaning": "the project's out", "broad": null, "source": "project", "redundantWith": "~",
                        "hits": 3, "lastHitMs": 1_764_588_605_000_u64},
                    {"entry": "/old", "resolved": "/old", "meaning": "m", "source": "global", "redundantWith": null, "hits": 0}]},
                    {"list": "network.allowedDomains", "entries": [
                    {"entry": "a.example", "resolved": "a.example", "meaning": "m", "source": "global", "redundantWith": null}]}]}
        }));
        let text = render(&Reply::Policy(view));
        assert!(text.contains("  enabled = true (default)"), "{text}");
        assert!(
            text.contains("  shell.readAccess = policy (project; edit the file to change it)\n"),
            "{text}"
        );
        assert!(
            text.contains("  windows.allowLoopback not set (the plugin's default)\n"),
            "{text}"
        );
        assert!(
            text.contains("    ~  [global]  your home folder  BROAD: all of home"),
            "{text}"
        );
        assert!(
            text.contains("    out  [project]  the project's out  REDUNDANT: ~ covers it  HITS: 3 (last 2025-12-01 11:30:05 UTC)"),
            "{text}"
        );
        assert!(
            text.contains("    /old  [global]  m  HITS: 0 (never used)\n"),
            "{text}"
        );
        assert!(text.contains("    a.example  [global]  m\n"), "{text}");
        assert!(
            !text.contains("    ~  [global]  your home folder  BROAD: all of home  HITS"),
            "{text}"
        );

        let grants = typed(
            serde_json::json!([{"id": 4, "key": {"project": "/p", "session": "ses_1"},
            "scope": {"kind": "filesystem", "operation": "write", "root": "/p/out"}, "effect": "allow"},
            {"id": 5, "key": {"project": "/p", "session": null}, "effect": "deny", "for": "15m",
             "remaining_ms": 61_500, "run": null, "program": "/usr/bin/python3",
            "scope": {"kind": "filesystem", "operation": "read", "root": "/p/in"}}]),
        );
        let text = render(&Reply::Grants(grants));
        assert!(
            text.starts_with("ID  PROJECT  SESSION      GRANT        SCOPE   LIMIT\n"),
            "{text}"
        );
        assert!(
            text.contains("4   /p       ses_1        allow write  /p/out  until quit\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "5   /p       (every run)  deny read    /p/in   1m2s left of 15m, only /usr/bin/python3\n"
            ),
            "{text}"
        );
        let activity = typed(
            serde_json::json!([{"ts": 1_764_588_605_000_u64, "project": "/p", "kind": "filesystem",
            "operation": "write", "subject": "/p/x", "exe": "/bin/sh", "outcome": "deny", "by": "user"}]),
        );
        let text = render(&Reply::Activity(activity));
        assert!(
            text.contains(
                "2025-12-01 11:30:05  /p       deny      user  write      /p/x     /bin/sh"
            ),
            "{text}"
        );
        assert_eq!(render(&Reply::Activity(Vec::new())), "No activity.\n");
    }

    /// The words printed for a layer, an outcome and a decider are the ones `--json` has.
    #[test]
    fn words_are_the_wire_spellings() {
        fn wire(value: impl serde::Serialize) -> String {
            match serde_json::to_value(value) {
                Ok(serde_json::Value::String(word)) => word,
                other => panic!("not a word: {other:?}"),
            }
        }
        for source in [Source::Default, Source::Global, Source::Project] {
            assert_eq!(source_word(source), wire(source));
        }
        for outcome in [
            Outcome::Allow,
            Outcome::Deny,
            Outcome::Withdrawn,
            Outcome::Reported,
        ] {
            assert_eq!(outcome_word(outcome), wire(outcome));
        }
        for by in [
            Decider::User,
            Decider::SessionGrant,
            Decider::Policy,
            Decider::SandboxDisabled,
            Decider::HardDenial,
            Decider::Timeout,
            Decider::RunEnded,
            Decider::Quit,
            Decider::Flood,
            Decider::Paused,
            Decider::AfterSecret,
            Decider::Report,
        ] {
            assert_eq!(decider_word(by), wire(by));
        }
    }
}
