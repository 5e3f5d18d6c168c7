//! What opencode itself knows about a run, read from its own store, an SQLite file
//! (`<data dir>/opencode/opencode.db`, or where `OPENCODE_DB` puts it). Two layouts:
//! opencode 1.x keeps a session in table `session` (`id`, `title`) and each tool call in
//! table `part`, whose JSON `data` holds it; opencode 2 keeps new sessions in
//! `session_v2` (`id`, `title`) and each assistant message in `session_message`, whose
//! JSON `data` holds the message's tool calls in `content[]`. A database opencode 2
//! upgraded keeps the 1.x tables, frozen, so a session is looked up where it is.
//! Read-only (a `mode=ro` URI), never waiting long for opencode's own writes, and quiet
//! about a store that is absent, locked or of another shape: that is no information, not
//! an error.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension};
use serde::{Deserialize, Serialize};

use super::mask::mask_text;
use super::text::{printable, shorten_middle};

/// How long a read waits for opencode's own write to finish.
const BUSY: Duration = Duration::from_millis(100);

/// How many running shell calls of one session (and, for opencode 2, how many of its
/// assistant messages) are looked at.
const MAX_RUNNING: usize = 32;

/// At most this many characters of a title, a description or a command are kept.
const MAX_TEXT: usize = 300;

/// The suffix the opencode-landstrip plugin adds to the description of a command it wraps.
const PLUGIN_SUFFIX: &str = " (landstrip)";

/// What opencode knows about the call behind a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpencodeCall {
    /// The opencode session (`ses_…`).
    pub session: String,
    /// The session's title, as opencode shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The agent's own description of the command it runs (opencode 1.x's bash tool
    /// call's; opencode 2's shell tool has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The command as the agent wrote it (opencode 2's shell tool call's), only where it
    /// differs from the command landstrip started (which the chain shows already).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

/// Where opencode was told its store is: `OPENCODE_DB` and `OPENCODE_DISABLE_CHANNEL_DB`
/// from the environment of the landstrip process that connected (opencode's shell tool
/// starts it, so it inherits opencode's environment), never from the confined process
/// that asks, which could name a file of its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreEnv {
    /// `OPENCODE_DB`, when set and not empty.
    pub db: Option<String>,
    /// `OPENCODE_DISABLE_CHANNEL_DB` is `1` or `true`.
    pub disable_channel_db: bool,
}

impl StoreEnv {
    /// The variables read.
    pub const NAMES: [&'static str; 2] = ["OPENCODE_DB", "OPENCODE_DISABLE_CHANNEL_DB"];

    /// From an environment's `NAME=VALUE` pairs (others are ignored).
    pub fn from_vars<'a>(vars: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut env = Self::default();
        for (name, value) in vars {
            match name {
                "OPENCODE_DB" => env.db = Some(value.to_owned()).filter(|v| !v.is_empty()),
                // As opencode reads it.
                "OPENCODE_DISABLE_CHANNEL_DB" => {
                    env.disable_channel_db = value == "1" || value.eq_ignore_ascii_case("true");
                }
                _ => {}
            }
        }
        env
    }
}

/// opencode's store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpencodeStore {
    /// opencode's data directory (`<data dir>/opencode`).
    dir: PathBuf,
}

impl OpencodeStore {
    /// The store in the user's data directory (`$XDG_DATA_HOME`, `~/.local/share`).
    pub fn in_data_dir(user_data_dir: &Path) -> Self {
        Self {
            dir: user_data_dir.join("opencode"),
        }
    }

    /// The database file opencode uses in `env`, as opencode resolves it: `OPENCODE_DB`
    /// first (an absolute path as given, a relative one under opencode's data
    /// directory; `:memory:` is no file), else `opencode.db`. opencode itself uses
    /// `opencode-<channel>.db` on channels other than latest, beta and prod unless
    /// `OPENCODE_DISABLE_CHANNEL_DB` is set, but its channel is compiled in and cannot be
    /// known from outside: the releases' `opencode.db` is read.
    pub fn db_path(&self, env: &StoreEnv) -> Option<PathBuf> {
        match env.db.as_deref() {
            Some(":memory:") => None,
            Some(db) if Path::new(db).is_absolute() => Some(PathBuf::from(db)),
            Some(db) => Some(self.dir.join(db)),
            None => Some(self.dir.join("opencode.db")),
        }
    }

    /// What the store `env` names says about `session`'s call running `command` (the
    /// command string landstrip's child runs, `bash -lc COMMAND`), when it says
    /// anything. A session opencode does not know gives None.
    pub fn lookup(
        &self,
        session: &str,
        command: Option<&str>,
        env: &StoreEnv,
    ) -> Option<OpencodeCall> {
        if !session.starts_with("ses_") {
            return None;
        }
        let path = self.db_path(env).filter(|p| p.is_file())?;
        let db = match open(&path) {
            Ok(db) => db,
            Err(e) => {
                tracing::debug!(db = %path.display(), error = %e, "opencode's store is not readable");
                return None;
            }
        };
        let layouts = match Layouts::of(&db) {
            Ok(layouts) => layouts,
            Err(e) => {
                tracing::debug!(db = %path.display(), error = %e, "opencode's store is not readable");
                return None;
            }
        };
        if layouts.v2 {
            match v2_call(&db, session, command) {
                Ok(Some(call)) => return Some(call),
                Ok(None) => {}
                Err(e) => tracing::debug!(error = %e, "opencode 2's session table is not readable"),
            }
        }
        if layouts.v1 {
            return v1_call(&db, session, command);
        }
        None
    }
}

fn open(path: &Path) -> rusqlite::Result<Connection> {
    let uri = format!("file:{}?mode=ro", uri_path(path));
    let db = Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    db.busy_timeout(BUSY)?;
    Ok(db)
}

/// Which layouts the store holds: opencode 1.x's `session` (kept, frozen, when opencode 2
/// upgrades the file) and opencode 2's `session_v2` (opencode 1.18 has a
/// `session_message` table of its own, so `session_v2` is what says 2).
struct Layouts {
    v1: bool,
    v2: bool,
}

impl Layouts {
    fn of(db: &Connection) -> rusqlite::Result<Self> {
        let mut statement = db.prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' \
             AND name IN ('session', 'session_v2')",
        )?;
        let mut layouts = Self {
            v1: false,
            v2: false,
        };
        for name in statement.query_map([], |row| row.get::<_, String>(0))? {
            match name?.as_str() {
                "session" => layouts.v1 = true,
                "session_v2" => layouts.v2 = true,
                _ => {}
            }
        }
        Ok(layouts)
    }
}

/// A path as the path part of an SQLite `file:` URI: `%`, `?` and `#` escaped.
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}

/// Text from the store as every surface may show it: secrets masked, nothing that could
/// fool a reader, bounded.
fn clean(text: &str) -> String {
    shorten_middle(&printable(&mask_text(text.trim())), MAX_TEXT)
}

/// A title as shown: cleaned, none when empty.
fn clean_title(title: Option<String>) -> Option<String> {
    title.map(|t| clean(&t)).filter(|t| !t.is_empty())
}

/// The session's title in `table`: outer None when the session is not there, inner
/// when it has none.
fn session_title(
    db: &Connection,
    table: &str,
    session: &str,
) -> rusqlite::Result<Option<Option<String>>> {
    db.query_row(
        &format!("SELECT title FROM {table} WHERE id = ?1"),
        [session],
        |row| row.get::<_, Option<String>>(0),
    )
    .optional()
}

/// An opencode 1.x session's call: its title from `session`, the description of its
/// running bash call from `part`.
fn v1_call(db: &Connection, session: &str, command: Option<&str>) -> Option<OpencodeCall> {
    let title = match session_title(db, "session", session) {
        Ok(Some(title)) => title,
        Ok(None) => return None,
        Err(e) => {
            tracing::debug!(error = %e, "opencode's session table is not readable");
            return None;
        }
    };
    let description = v1_running_calls(db, session)
        .map_err(|e| tracing::debug!(error = %e, "opencode's part table is not readable"))
        .ok()
        .and_then(|calls| pick_call(&calls, command).and_then(|(call, _)| call.description.clone()))
        .map(|d| clean(d.strip_suffix(PLUGIN_SUFFIX).unwrap_or(&d)))
        .filter(|d| !d.is_empty());
    Some(OpencodeCall {
        session: session.to_owned(),
        title: clean_title(title),
        description,
        command: None,
    })
}

/// An opencode 2 session's call: its title from `session_v2`, and the command of its
/// running shell call from `session_message` where it is not the one landstrip started.
/// None when `session_v2` does not hold the session.
fn v2_call(
    db: &Connection,
    session: &str,
    command: Option<&str>,
) -> rusqlite::Result<Option<OpencodeCall>> {
    let Some(title) = session_title(db, "session_v2", session)? else {
        return Ok(None);
    };
    let agent_command = v2_running_calls(db, session)
        .map_err(|e| tracing::debug!(error = %e, "opencode 2's message table is not readable"))
        .ok()
        .and_then(|calls| {
            pick_call(&calls, command)
                .filter(|(_, by_command)| !by_command)
                .map(|(call, _)| clean(&call.command))
        })
        .filter(|c| !c.is_empty());
    Ok(Some(OpencodeCall {
        session: session.to_owned(),
        title: clean_title(title),
        description: None,
        command: agent_command,
    }))
}

/// One running shell call: its command and (opencode 1.x) description.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Call {
    command: String,
    description: Option<String>,
}

/// A tool call as opencode 1.x's `part.data` holds it (the tool in `tool`) and as
/// opencode 2's `content[]` items do (the tool in `name`).
#[derive(Deserialize)]
struct ToolData {
    #[serde(rename = "type")]
    kind: Option<String>,
    tool: Option<String>,
    name: Option<String>,
    state: Option<ToolState>,
}

#[derive(Deserialize)]
struct ToolState {
    status: Option<String>,
    input: Option<ToolInput>,
}

#[derive(Deserialize)]
struct ToolInput {
    command: Option<String>,
    description: Option<String>,
}

impl ToolData {
    /// The call, when it is a running call of a shell tool (`tools` names them; named in
    /// `name` for opencode 2, in `tool` for 1.x).
    fn running(self, tools: &[&str], v2: bool) -> Option<Call> {
        let tool = if v2 { &self.name } else { &self.tool };
        if self.kind.as_deref() != Some("tool")
            || !tool.as_deref().is_some_and(|t| tools.contains(&t))
        {
            return None;
        }
        let state = self.state?;
        if state.status.as_deref() != Some("running") {
            return None;
        }
        let input = state.input?;
        Some(Call {
            command: input.command?,
            description: input.description,
        })
    }
}

/// The session's bash calls running now (opencode 1.x), newest first.
fn v1_running_calls(db: &Connection, session: &str) -> rusqlite::Result<Vec<Call>> {
    // The LIKE filters spare parsing every text part of a long session; the JSON is
    // checked properly below.
    let rows = newest_tool_rows(
        db,
        "SELECT data FROM part WHERE session_id = ?1 \
         AND data LIKE '%\"tool\"%' AND data LIKE '%running%' \
         ORDER BY rowid DESC LIMIT ?2",
        session,
    )?;
    let mut calls = Vec::new();
    for data in rows {
        let Ok(part) = serde_json::from_str::<ToolData>(&data) else {
            continue;
        };
        calls.extend(part.running(&["bash"], false));
    }
    Ok(calls)
}

/// The `data` of the session's newest rows that `sql` (parameters: the session, the row
/// limit) finds, at most [`MAX_RUNNING`].
fn newest_tool_rows(db: &Connection, sql: &str, session: &str) -> rusqlite::Result<Vec<String>> {
    let mut statement = db.prepare(sql)?;
    let rows = statement.query_map(rusqlite::params![session, MAX_RUNNING as i64], |row| {
        row.get::<_, String>(0)
    })?;
    rows.collect()
}

/// An opencode 2 message's `data`: its content items, each parsed on its own so one of
/// another shape spoils nothing.
#[derive(Deserialize)]
struct MessageData {
    content: Option<Vec<serde_json::Value>>,
}

/// The session's shell calls running now (opencode 2: `shell`, `bash` in early betas),
/// from its newest assistant messages first.
fn v2_running_calls(db: &Connection, session: &str) -> rusqlite::Result<Vec<Call>> {
    let rows = newest_tool_rows(
        db,
        "SELECT data FROM session_message WHERE session_id = ?1 AND type = 'assistant' \
         AND data LIKE '%\"tool\"%' AND data LIKE '%running%' \
         ORDER BY rowid DESC LIMIT ?2",
        session,
    )?;
    let mut calls = Vec::new();
    for data in rows {
        let Ok(message) = serde_json::from_str::<MessageData>(&data) else {
            continue;
        };
        for item in message.content.unwrap_or_default().into_iter().rev() {
            let Ok(tool) = serde_json::from_value::<ToolData>(item) else {
                continue;
            };
            calls.extend(tool.running(&["shell", "bash"], true));
            if calls.len() == MAX_RUNNING {
                return Ok(calls);
            }
        }
    }
    Ok(calls)
}

/// The call running `command`, and whether it was found by that command: the plugin
/// rewrites a call's command into its landstrip wrapper, which holds the original
/// shell-quoted. Without a match, the only running call if there is just one.
fn pick_call<'a>(calls: &'a [Call], command: Option<&str>) -> Option<(&'a Call, bool)> {
    if let Some(command) = command {
        let quoted = shell_quote(command);
        if let Some(call) = calls
            .iter()
            .find(|c| c.command == command || c.command.contains(&quoted))
        {
            return Some((call, true));
        }
    }
    match calls {
        [only] => Some((only, false)),
        _ => None,
    }
}

/// Single-quoted as the plugin quotes each word of its wrapper.
fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An opencode started without `OPENCODE_DB`: its store is `opencode.db`.
    const NO_ENV: StoreEnv = StoreEnv {
        db: None,
        disable_channel_db: false,
    };

    fn lookup(store: &OpencodeStore, session: &str) -> Option<OpencodeCall> {
        store.lookup(session, None, &NO_ENV)
    }

    /// A store of opencode 1.18's shape (the columns this reader uses and a few others),
    /// made by the test.
    fn store(dir: &Path) -> (OpencodeStore, Connection) {
        let path = dir.join("opencode/opencode.db");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let db = Connection::open(&path).unwrap();
        db.execute_batch(
            "PRAGMA journal_mode=WAL;
             CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT, title TEXT NOT NULL,
                 time_created INTEGER, time_updated INTEGER);
             CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT NOT NULL,
                 time_created INTEGER, time_updated INTEGER, data TEXT NOT NULL);",
        )
        .unwrap();
        (OpencodeStore::in_data_dir(dir), db)
    }

    fn add_call(
        db: &Connection,
        id: &str,
        session: &str,
        status: &str,
        command: &str,
        description: &str,
    ) {
        let data = serde_json::json!({
            "type": "tool", "tool": "bash", "callID": format!("call_{id}"),
            "state": {"status": status, "input": {"command": command, "description": description}},
        });
        db.execute(
            "INSERT INTO part (id, message_id, session_id, data) VALUES (?1, 'msg', ?2, ?3)",
            rusqlite::params![id, session, data.to_string()],
        )
        .unwrap();
    }

    fn wrapped(command: &str) -> String {
        format!(
            "bash -c 'exec 3<>/dev/tcp/127.0.0.1/4000 && exec \"$@\"' bash '/x/landstrip' 'run' '--trap' '3' '-p' '/tmp/opencode-landstrip-1.json' '--' '/bin/bash' '-lc' {}",
            shell_quote(command)
        )
    }

    /// opencode 2's tables, as its migration `20260804233008_loose_psylocke` creates them
    /// (the schema facts: `session_v2` with `id`, `title` nullable, `directory`,
    /// `project_id`, times in ms; `session_message` with `id`, `session_id`, `type`,
    /// `seq`, times and `data` JSON), with a column a later migration adds (`time_idle`),
    /// since columns are selected by name. The shape of a shell call in `content[]` is the
    /// issue's too; that the plugin's hello names a `session_v2` id is inferred (from the
    /// 2.x plugin API), not seen: opencode 2 cannot run here.
    fn add_v2_tables(db: &Connection) {
        db.execute_batch(
            "PRAGMA journal_mode=WAL;
             CREATE TABLE session_v2 (id TEXT PRIMARY KEY, project_id TEXT, directory TEXT,
                 time_idle INTEGER, title TEXT, time_created INTEGER NOT NULL,
                 time_updated INTEGER NOT NULL);
             CREATE TABLE session_message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL
                 REFERENCES session_v2(id), type TEXT NOT NULL, seq INTEGER,
                 time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL,
                 data TEXT NOT NULL);",
        )
        .unwrap();
    }

    /// A fresh opencode 2 store: no `session` or `part` table.
    fn v2_store(dir: &Path) -> (OpencodeStore, Connection) {
        let path = dir.join("opencode/opencode.db");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let db = Connection::open(&path).unwrap();
        add_v2_tables(&db);
        (OpencodeStore::in_data_dir(dir), db)
    }

    fn add_v2_session(db: &Connection, id: &str, title: Option<&str>) {
        db.execute(
            "INSERT INTO session_v2 (id, title, time_created, time_updated) VALUES (?1, ?2, 1, 1)",
            rusqlite::params![id, title],
        )
        .unwrap();
    }

    /// A shell tool call as an item of a message's `content[]`.
    fn tool(name: &str, status: &str, command: &str) -> serde_json::Value {
        serde_json::json!({
            "type": "tool", "id": format!("call_{command}"), "name": name,
            "state": {"status": status, "input": {"command": command, "workdir": "/p"}, "metadata": {}},
            "time": {"start": 1},
        })
    }

    fn add_message(
        db: &Connection,
        id: &str,
        session: &str,
        kind: &str,
        content: &[serde_json::Value],
    ) {
        let data = serde_json::json!({"content": content});
        db.execute(
            "INSERT INTO session_message (id, session_id, type, seq, time_created, time_updated, data) \
             VALUES (?1, ?2, ?3, 1, 1, 1, ?4)",
            rusqlite::params![id, session, kind, data.to_string()],
        )
        .unwrap();
    }

    #[test]
    fn opencode_2_the_title_and_the_running_shell_calls_command() {
        let dir = tempfile::tempdir().unwrap();
        let (store, db) = v2_store(dir.path());
        add_v2_session(&db, "ses_2a", Some("Port the parser"));
        let text = serde_json::json!({"type": "text", "text": "Running the tests"});
        add_message(
            &db,
            "msg_1",
            "ses_2a",
            "assistant",
            &[
                text.clone(),
                tool("shell", "completed", "rm -rf build"),
                tool("shell", "running", "npm ci && npm test"),
            ],
        );
        // A user message is not the agent's.
        add_message(
            &db,
            "msg_2",
            "ses_2a",
            "user",
            &[tool("shell", "running", "forged")],
        );
        let call = store
            .lookup("ses_2a", Some("npm test"), &NO_ENV)
            .expect("a session_v2 session");
        assert_eq!(call.session, "ses_2a");
        assert_eq!(call.title.as_deref(), Some("Port the parser"));
        assert_eq!(call.description, None, "opencode 2's shell tool has none");
        assert_eq!(
            call.command.as_deref(),
            Some("npm ci && npm test"),
            "the agent's command, where it differs from the one landstrip started"
        );
        // The same command as the chain's: not said twice.
        let call = store
            .lookup("ses_2a", Some("npm ci && npm test"), &NO_ENV)
            .unwrap();
        assert_eq!(
            (call.title.as_deref(), call.command),
            (Some("Port the parser"), None)
        );
        // Early 2.0 betas named the tool bash; a completed call is not running.
        add_v2_session(&db, "ses_2b", None);
        add_message(
            &db,
            "msg_3",
            "ses_2b",
            "assistant",
            &[tool("bash", "running", "cargo build"), text],
        );
        let call = lookup(&store, "ses_2b").unwrap();
        assert_eq!(
            (call.title, call.command.as_deref()),
            (None, Some("cargo build"))
        );
        add_v2_session(&db, "ses_2c", Some("Done"));
        add_message(
            &db,
            "msg_4",
            "ses_2c",
            "assistant",
            &[tool("shell", "completed", "ls")],
        );
        assert_eq!(lookup(&store, "ses_2c").unwrap().command, None);
        // A 2.x-only store has no session table: a session it does not hold is no
        // information, not an error.
        assert_eq!(lookup(&store, "ses_1x"), None);
    }

    #[test]
    fn an_upgraded_store_finds_each_session_where_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let (store, db) = store(dir.path());
        add_v2_tables(&db);
        db.execute(
            "INSERT INTO session (id, title) VALUES ('ses_1', 'From opencode 1')",
            [],
        )
        .unwrap();
        add_call(
            &db,
            "p1",
            "ses_1",
            "running",
            "make",
            "Builds it (landstrip)",
        );
        add_v2_session(&db, "ses_2", Some("From opencode 2"));
        add_message(
            &db,
            "msg_1",
            "ses_2",
            "assistant",
            &[tool("shell", "running", "make test")],
        );
        let old = lookup(&store, "ses_1").expect("a 1.x session in session");
        assert_eq!(
            (
                old.title.as_deref(),
                old.description.as_deref(),
                old.command
            ),
            (Some("From opencode 1"), Some("Builds it"), None)
        );
        let new = lookup(&store, "ses_2").expect("a 2.x session in session_v2");
        assert_eq!(
            (
                new.title.as_deref(),
                new.description,
                new.command.as_deref()
            ),
            (Some("From opencode 2"), None, Some("make test"))
        );
    }

    #[test]
    fn secrets_in_opencode_2s_store_are_masked_too() {
        let dir = tempfile::tempdir().unwrap();
        let (store, db) = v2_store(dir.path());
        add_v2_session(&db, "ses_2", Some("Use API_TOKEN=hunter2-secret"));
        add_message(
            &db,
            "msg_1",
            "ses_2",
            "assistant",
            &[tool(
                "shell",
                "running",
                "mysql --password hunter2-secret -e 'select 1'",
            )],
        );
        let call = lookup(&store, "ses_2").unwrap();
        assert_eq!(call.title.as_deref(), Some("Use API_TOKEN=***"));
        assert_eq!(
            call.command.as_deref(),
            Some("mysql --password *** -e 'select 1'")
        );
    }

    #[test]
    fn the_store_is_where_opencodes_environment_says() {
        let store = OpencodeStore::in_data_dir(Path::new("/d"));
        let env = |vars: &[(&str, &str)]| StoreEnv::from_vars(vars.iter().copied());
        let at = |vars: &[(&str, &str)]| store.db_path(&env(vars));
        assert_eq!(at(&[]), Some("/d/opencode/opencode.db".into()));
        assert_eq!(
            at(&[("OPENCODE_DB", "")]),
            Some("/d/opencode/opencode.db".into())
        );
        assert_eq!(at(&[("OPENCODE_DB", "/x/o.db")]), Some("/x/o.db".into()));
        assert_eq!(
            at(&[("OPENCODE_DB", "dev/o.db")]),
            Some("/d/opencode/dev/o.db".into())
        );
        assert_eq!(at(&[("OPENCODE_DB", ":memory:")]), None, "no file to read");
        for on in ["1", "true", "TRUE"] {
            assert!(
                env(&[("OPENCODE_DISABLE_CHANNEL_DB", on)]).disable_channel_db,
                "{on}"
            );
            assert_eq!(
                at(&[("OPENCODE_DISABLE_CHANNEL_DB", on)]),
                Some("/d/opencode/opencode.db".into())
            );
        }
        assert!(!env(&[("OPENCODE_DISABLE_CHANNEL_DB", "0")]).disable_channel_db);
        // opencode reads OPENCODE_DB first.
        assert_eq!(
            at(&[
                ("OPENCODE_DISABLE_CHANNEL_DB", "1"),
                ("OPENCODE_DB", "/x/o.db")
            ]),
            Some("/x/o.db".into())
        );
        assert_eq!(
            env(&[("HOME", "/h"), ("PATH", "/bin")]),
            StoreEnv::default()
        );
    }

    #[test]
    fn the_title_and_the_matching_running_calls_description() {
        let dir = tempfile::tempdir().unwrap();
        let (store, db) = store(dir.path());
        db.execute(
            "INSERT INTO session (id, title) VALUES ('ses_1', 'Fix the flaky build'), ('ses_2', 'Other')",
            [],
        )
        .unwrap();
        let cmd = "python3 -c \"open('/x','w')\"; true";
        add_call(
            &db,
            "p1",
            "ses_1",
            "completed",
            &wrapped(cmd),
            "Old run (landstrip)",
        );
        add_call(
            &db,
            "p2",
            "ses_1",
            "running",
            &wrapped(cmd),
            "Writes the probe file (landstrip)",
        );
        add_call(
            &db,
            "p3",
            "ses_1",
            "running",
            &wrapped("ls"),
            "Lists files (landstrip)",
        );
        add_call(
            &db,
            "p4",
            "ses_2",
            "running",
            &wrapped(cmd),
            "Not this session (landstrip)",
        );
        let call = store
            .lookup("ses_1", Some(cmd), &NO_ENV)
            .expect("known session");
        assert_eq!(call.session, "ses_1");
        assert_eq!(call.title.as_deref(), Some("Fix the flaky build"));
        assert_eq!(call.description.as_deref(), Some("Writes the probe file"));
        // Two running calls and neither matches: the description is not guessed.
        let call = store.lookup("ses_1", Some("make"), &NO_ENV).unwrap();
        assert_eq!(call.description, None);
        assert_eq!(call.title.as_deref(), Some("Fix the flaky build"));
        // One running call: it is the one.
        let call = store.lookup("ses_2", None, &NO_ENV).unwrap();
        assert_eq!(call.description.as_deref(), Some("Not this session"));
        assert_eq!(store.lookup("ses_unknown", Some(cmd), &NO_ENV), None);
        assert_eq!(
            store.lookup("run:make:12", Some(cmd), &NO_ENV),
            None,
            "not an opencode session"
        );
    }

    #[test]
    fn secrets_in_the_store_are_masked_too() {
        let dir = tempfile::tempdir().unwrap();
        let (store, db) = store(dir.path());
        db.execute(
            "INSERT INTO session (id, title) VALUES ('ses_1', 'Use API_TOKEN=hunter2-secret')",
            [],
        )
        .unwrap();
        add_call(
            &db,
            "p1",
            "ses_1",
            "running",
            "x",
            "Log in with --password hunter2-secret (landstrip)",
        );
        let call = store.lookup("ses_1", None, &NO_ENV).unwrap();
        assert_eq!(call.title.as_deref(), Some("Use API_TOKEN=***"));
        assert_eq!(
            call.description.as_deref(),
            Some("Log in with --password ***")
        );
    }

    #[test]
    fn an_absent_store_or_another_shape_is_no_information() {
        let dir = tempfile::tempdir().unwrap();
        let absent = OpencodeStore::in_data_dir(dir.path());
        assert_eq!(absent.lookup("ses_1", None, &NO_ENV), None);
        assert!(
            !absent.db_path(&NO_ENV).unwrap().exists(),
            "nothing was created"
        );

        let path = dir.path().join("opencode/opencode.db");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let db = Connection::open(&path).unwrap();
        db.execute_batch(
            "CREATE TABLE session (id TEXT, name TEXT); INSERT INTO session VALUES ('ses_1', 'x');",
        )
        .unwrap();
        assert_eq!(
            absent.lookup("ses_1", None, &NO_ENV),
            None,
            "no title column"
        );
        db.execute_batch("DROP TABLE session; CREATE TABLE session (id TEXT, title TEXT); INSERT INTO session VALUES ('ses_1', 'T');")
            .unwrap();
        let call = absent
            .lookup("ses_1", None, &NO_ENV)
            .expect("a title without a part table");
        assert_eq!((call.title.as_deref(), call.description), (Some("T"), None));

        std::fs::write(
            dir.path().join("opencode/garbage.db"),
            b"not a database at all",
        )
        .unwrap();
        let garbage = StoreEnv {
            db: Some("garbage.db".into()),
            disable_channel_db: false,
        };
        assert_eq!(absent.lookup("ses_1", None, &garbage), None);
    }

    #[test]
    fn a_locked_store_answers_nothing_quickly_and_is_never_written() {
        let dir = tempfile::tempdir().unwrap();
        let (store, db) = store(dir.path());
        db.execute("INSERT INTO session (id, title) VALUES ('ses_1', 'T')", [])
            .unwrap();
        drop(db);
        // Another writer holding an exclusive lock (a rollback-journal database, as
        // opencode's would be in that mode): readers cannot read at all meanwhile.
        let path = store.db_path(&NO_ENV).unwrap();
        let locker = Connection::open(&path).unwrap();
        locker.execute_batch("PRAGMA journal_mode=DELETE; PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE; UPDATE session SET title='U';").unwrap();
        let before = std::fs::read(&path).unwrap();
        let started = std::time::Instant::now();
        assert_eq!(store.lookup("ses_1", None, &NO_ENV), None);
        let took = started.elapsed();
        assert!(took < Duration::from_secs(1), "waited {took:?}");
        assert!(
            took >= BUSY / 2,
            "gave up before the busy timeout: {took:?}"
        );
        locker.execute_batch("ROLLBACK").unwrap();
        drop(locker);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "the reader wrote nothing"
        );
        assert_eq!(
            store
                .lookup("ses_1", None, &NO_ENV)
                .unwrap()
                .title
                .as_deref(),
            Some("T")
        );
    }

    #[test]
    fn uri_paths_escape_what_sqlite_would_read_as_query() {
        assert_eq!(
            uri_path(Path::new("/a b/x?y#z%.db")),
            "/a b/x%3fy%23z%25.db"
        );
    }
}
