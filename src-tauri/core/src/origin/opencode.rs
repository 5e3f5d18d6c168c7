//! What opencode itself knows about a run, read from its own store: opencode 1.18 keeps
//! its sessions in SQLite (`<data dir>/opencode/opencode.db`, table `session` with `id`
//! and `title`, table `part` whose JSON `data` holds each tool call). Read-only (a
//! `mode=ro` URI), never waiting long for opencode's own writes, and quiet about a store
//! that is absent, locked or of another shape: that is no information, not an error.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension};
use serde::{Deserialize, Serialize};

use super::mask::mask_text;
use super::text::{printable, shorten_middle};

/// How long a read waits for opencode's own write to finish.
const BUSY: Duration = Duration::from_millis(100);

/// How many running bash calls of one session are looked at.
const MAX_RUNNING: usize = 32;

/// At most this many characters of a title or a description are kept.
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
    /// The agent's own description of the command it runs (its bash tool call's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// opencode's store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpencodeStore {
    db: PathBuf,
}

impl OpencodeStore {
    /// The store in the user's data directory (`$XDG_DATA_HOME`, `~/.local/share`).
    pub fn in_data_dir(user_data_dir: &Path) -> Self {
        Self::at(user_data_dir.join("opencode").join("opencode.db"))
    }

    /// The store at `db`.
    pub fn at(db: PathBuf) -> Self {
        Self { db }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.db
    }

    /// What the store says about `session`'s call running `command` (the command string
    /// landstrip's child runs, `bash -lc COMMAND`), when it says anything. A session
    /// opencode does not know gives None.
    pub fn lookup(&self, session: &str, command: Option<&str>) -> Option<OpencodeCall> {
        if !session.starts_with("ses_") || !self.db.is_file() {
            return None;
        }
        let db = match self.open() {
            Ok(db) => db,
            Err(e) => {
                tracing::debug!(db = %self.db.display(), error = %e, "opencode's store is not readable");
                return None;
            }
        };
        let title = match session_title(&db, session) {
            Ok(Some(title)) => title,
            Ok(None) => return None,
            Err(e) => {
                tracing::debug!(error = %e, "opencode's session table is not readable");
                return None;
            }
        };
        let description = running_calls(&db, session)
            .map_err(|e| tracing::debug!(error = %e, "opencode's part table is not readable"))
            .ok()
            .and_then(|calls| pick_call(&calls, command))
            .map(|d| clean(d.strip_suffix(PLUGIN_SUFFIX).unwrap_or(&d)))
            .filter(|d| !d.is_empty());
        Some(OpencodeCall {
            session: session.to_owned(),
            title: title.map(|t| clean(&t)).filter(|t| !t.is_empty()),
            description,
        })
    }

    fn open(&self) -> rusqlite::Result<Connection> {
        let uri = format!("file:{}?mode=ro", uri_path(&self.db));
        let db = Connection::open_with_flags(
            uri,
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        db.busy_timeout(BUSY)?;
        Ok(db)
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

/// The session's title: outer None when the session is not there, inner when it has none.
fn session_title(db: &Connection, session: &str) -> rusqlite::Result<Option<Option<String>>> {
    db.query_row(
        "SELECT title FROM session WHERE id = ?1",
        [session],
        |row| row.get::<_, Option<String>>(0),
    )
    .optional()
}

/// One running bash call: its command and description.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Call {
    command: String,
    description: Option<String>,
}

#[derive(Deserialize)]
struct PartData {
    #[serde(rename = "type")]
    kind: Option<String>,
    tool: Option<String>,
    state: Option<PartState>,
}

#[derive(Deserialize)]
struct PartState {
    status: Option<String>,
    input: Option<PartInput>,
}

#[derive(Deserialize)]
struct PartInput {
    command: Option<String>,
    description: Option<String>,
}

/// The session's bash calls running now, newest first.
fn running_calls(db: &Connection, session: &str) -> rusqlite::Result<Vec<Call>> {
    // The LIKE filters spare parsing every text part of a long session; the JSON is
    // checked properly below.
    let mut statement = db.prepare(
        "SELECT data FROM part WHERE session_id = ?1 \
         AND data LIKE '%\"tool\"%' AND data LIKE '%running%' \
         ORDER BY rowid DESC LIMIT ?2",
    )?;
    let rows = statement.query_map(rusqlite::params![session, MAX_RUNNING as i64], |row| {
        row.get::<_, String>(0)
    })?;
    let mut calls = Vec::new();
    for data in rows {
        let Ok(part) = serde_json::from_str::<PartData>(&data?) else {
            continue;
        };
        let (Some("tool"), Some("bash"), Some(state)) =
            (part.kind.as_deref(), part.tool.as_deref(), part.state)
        else {
            continue;
        };
        if state.status.as_deref() != Some("running") {
            continue;
        }
        if let Some(PartInput {
            command: Some(command),
            description,
        }) = state.input
        {
            calls.push(Call {
                command,
                description,
            });
        }
    }
    Ok(calls)
}

/// The description of the call running `command`: the plugin rewrites a call's command
/// into its landstrip wrapper, which holds the original shell-quoted. Without a match, the
/// only running call if there is just one.
fn pick_call(calls: &[Call], command: Option<&str>) -> Option<String> {
    if let Some(command) = command {
        let quoted = shell_quote(command);
        if let Some(call) = calls
            .iter()
            .find(|c| c.command == command || c.command.contains(&quoted))
        {
            return call.description.clone();
        }
    }
    match calls {
        [only] => only.description.clone(),
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
        let call = store.lookup("ses_1", Some(cmd)).expect("known session");
        assert_eq!(call.session, "ses_1");
        assert_eq!(call.title.as_deref(), Some("Fix the flaky build"));
        assert_eq!(call.description.as_deref(), Some("Writes the probe file"));
        // Two running calls and neither matches: the description is not guessed.
        let call = store.lookup("ses_1", Some("make")).unwrap();
        assert_eq!(call.description, None);
        assert_eq!(call.title.as_deref(), Some("Fix the flaky build"));
        // One running call: it is the one.
        let call = store.lookup("ses_2", None).unwrap();
        assert_eq!(call.description.as_deref(), Some("Not this session"));
        assert_eq!(store.lookup("ses_unknown", Some(cmd)), None);
        assert_eq!(
            store.lookup("run:make:12", Some(cmd)),
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
        let call = store.lookup("ses_1", None).unwrap();
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
        assert_eq!(absent.lookup("ses_1", None), None);
        assert!(!absent.path().exists(), "nothing was created");

        let path = dir.path().join("opencode/opencode.db");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let db = Connection::open(&path).unwrap();
        db.execute_batch(
            "CREATE TABLE session (id TEXT, name TEXT); INSERT INTO session VALUES ('ses_1', 'x');",
        )
        .unwrap();
        assert_eq!(absent.lookup("ses_1", None), None, "no title column");
        db.execute_batch("DROP TABLE session; CREATE TABLE session (id TEXT, title TEXT); INSERT INTO session VALUES ('ses_1', 'T');")
            .unwrap();
        let call = absent
            .lookup("ses_1", None)
            .expect("a title without a part table");
        assert_eq!((call.title.as_deref(), call.description), (Some("T"), None));

        std::fs::write(
            dir.path().join("opencode/garbage.db"),
            b"not a database at all",
        )
        .unwrap();
        let garbage = OpencodeStore::at(dir.path().join("opencode/garbage.db"));
        assert_eq!(garbage.lookup("ses_1", None), None);
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
        let path = store.path().to_path_buf();
        let locker = Connection::open(&path).unwrap();
        locker.execute_batch("PRAGMA journal_mode=DELETE; PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE; UPDATE session SET title='U';").unwrap();
        let before = std::fs::read(&path).unwrap();
        let started = std::time::Instant::now();
        assert_eq!(store.lookup("ses_1", None), None);
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
            store.lookup("ses_1", None).unwrap().title.as_deref(),
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
