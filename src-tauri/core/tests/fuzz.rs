//! Property-based fuzzing, on stable and bounded so CI stays fast: the protocol decoder
//! and framer (any bytes: no panic; valid queries round-trip, the hot path agrees with
//! the full decode), the policy parser (any text, any JSON: an error or a value, never a
//! panic), and the minimal editor (a generated valid sandbox.json in any of the plugin's
//! layouts plus a generated change: the result parses to exactly the original with that
//! change, and no byte outside the edited array or value moves).
//!
//! Cases per property: `PROPTEST_CASES` (default 1000). Each property prints how many
//! cases it ran and how long they took. A failing case is saved in
//! `fuzz.proptest-regressions` beside this file and replayed first on every later run: that
//! file is the corpus and is committed.

use std::ops::Range;
use std::path::Path;
use std::time::Instant;

use landstrip_tray_core::policy::change::{BoolField, ListField, PolicyChange};
use landstrip_tray_core::policy::schema::{
    AppContainerMode, FilesystemOverrides, NetworkOverrides, SandboxOverrides, ShellOverrides,
    ShellReadAccess, WindowsOverrides,
};
use landstrip_tray_core::policy::{parse_overrides, EditOutcome, FsList};
use landstrip_tray_core::wire::protocol::{
    decode_line, parse_line, response_line, Access, Action, FsOperation, Line, LineFramer,
    QueryKind, MAX_QUERY_ID_LEN,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestRunner};
use serde_json::{json, Value};

/// Runs `test` over `strategy` for the configured number of cases and prints the figure.
fn run<S: Strategy>(name: &str, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let config = Config {
        cases,
        source_file: Some(file!()),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let started = Instant::now();
    let result = runner.run(&strategy, test);
    eprintln!("{name}: {cases} cases in {:?}", started.elapsed());
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
}

// ---------------------------------------------------------------------------------------
// The protocol decoder and framer.

/// Bytes that look like traps often enough to reach deep into the decoder: fragments of
/// real lines glued to arbitrary bytes.
fn trap_like_bytes() -> impl Strategy<Value = Vec<u8>> {
    let fragment = prop_oneof![
        Just(b"{".to_vec()),
        Just(b"}".to_vec()),
        Just(b"\"kind\":\"filesystem\",".to_vec()),
        Just(b"\"kind\":\"network\",".to_vec()),
        Just(b"\"kind\":\"opencode-landstrip-session\",\"sessionID\":".to_vec()),
        Just(b"\"state\":\"query\",".to_vec()),
        Just(b"\"state\":\"info\",".to_vec()),
        Just(b"\"query_id\":".to_vec()),
        Just(b"\"operation\":\"write\",".to_vec()),
        Just(b"\"path\":\"/tmp/x\",".to_vec()),
        Just(b"\"process\":{\"pid\":".to_vec()),
        Just(b"\"detail\":[".to_vec()),
        Just(b"\"\\ud800\"".to_vec()),
        Just(b"1e999".to_vec()),
        Just(b"-0".to_vec()),
        Just(b"null".to_vec()),
        Just(b"[".to_vec()),
        Just(b"]".to_vec()),
        Just(b",".to_vec()),
        Just(b":".to_vec()),
        prop::collection::vec(any::<u8>(), 0..12),
        "\\PC{0,12}".prop_map(|s| format!("\"{s}\"").into_bytes()),
    ];
    prop::collection::vec(fragment, 0..24).prop_map(|parts| parts.concat())
}

#[test]
fn any_bytes_decode_without_panicking_and_the_hot_path_agrees() {
    let bytes = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..256),
        trap_like_bytes()
    ];
    run("decoder: any bytes", bytes, |bytes| {
        let parsed = parse_line(&bytes);
        let quick = parsed
            .query()
            .map(|(id, access)| (id.raw().to_owned(), format!("{access:?}")));
        let _ = parsed.process();
        let line = parsed.into_line();
        // The hot path answers from borrowed fields; whatever it reads as a query, the
        // full decode must read as the same query.
        if let Some((id, access)) = quick {
            let Line::Query(query) = &line else {
                return Err(TestCaseError::fail(format!(
                    "the hot path saw query {id} but the full decode gave {line:?}"
                )));
            };
            prop_assert_eq!(query.id.raw(), id.as_str());
            prop_assert_eq!(format!("{:?}", query.access()), access);
        }
        let _ = decode_line(&bytes);
        Ok(())
    });
}

#[test]
fn the_framer_yields_the_same_lines_however_the_bytes_are_cut() {
    let input = (
        // Cheap to generate (one strategy per case, not per byte): a third of the bytes
        // become terminators, CRs or blanks.
        prop::collection::vec(any::<u8>(), 0..512).prop_map(|bytes| {
            bytes
                .into_iter()
                .map(|b| match b % 12 {
                    0 => b'\n',
                    1 => b'\r',
                    2 => b' ',
                    _ => b,
                })
                .collect::<Vec<u8>>()
        }),
        prop::collection::vec(1usize..64, 1..32),
    );
    run("framer: any cuts", input, |(bytes, cuts)| {
        let whole = {
            let mut f = LineFramer::new();
            f.push(&bytes)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            f.lines().map(<[u8]>::to_vec).collect::<Vec<_>>()
        };
        let mut f = LineFramer::new();
        let mut pieces = Vec::new();
        let mut rest = &bytes[..];
        let mut i = 0;
        while !rest.is_empty() {
            let n = cuts[i % cuts.len()].min(rest.len());
            f.push(&rest[..n])
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            pieces.extend(f.lines().map(<[u8]>::to_vec));
            rest = &rest[n..];
            i += 1;
        }
        prop_assert_eq!(&pieces, &whole);
        // The reference: split at `\n`, drop the one `\r` of a CRLF, skip blank lines; the
        // unterminated tail is not a line yet.
        let mut reference: Vec<Vec<u8>> = bytes
            .split(|&b| b == b'\n')
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l).to_vec())
            .collect();
        reference.pop();
        reference.retain(|l| !l.iter().all(u8::is_ascii_whitespace));
        prop_assert_eq!(&whole, &reference);
        Ok(())
    });
}

/// A query id as landstrip sends it: a decimal string (≥ 0.18), a number (≤ 0.15), or any
/// short string.
fn query_id() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<u64>().prop_map(|n| json!(n.to_string())),
        any::<u64>().prop_map(|n| json!(n)),
        "\\PC{0,20}".prop_map(|s| json!(s)),
    ]
    .prop_filter("ids are at most MAX_QUERY_ID_LEN bytes of JSON", |id| {
        id.to_string().len() <= MAX_QUERY_ID_LEN
    })
}

#[test]
fn valid_queries_round_trip() {
    let input = (
        query_id(),
        any::<bool>(),
        "\\PC{1,40}",
        prop::option::of(any::<u32>()),
        prop::option::of("\\PC{0,20}"),
        any::<bool>(),
        any::<bool>(),
    );
    run(
        "decoder: valid queries",
        input,
        |(id, write, path, pid, exe, deny_match, pretty)| {
            let mut trap = json!({
                "kind": "filesystem",
                "state": "query",
                "query_id": id,
                "operation": if write { "write" } else { "read" },
                "path": path,
                "requested_path": path,
                "reason": if deny_match { "deny_match" } else { "allow_miss" },
                "flags": ["O_WRONLY"],
                "syscall": "openat",
            });
            if pid.is_some() || exe.is_some() {
                trap["process"] = json!({"pid": pid, "exe": exe});
            }
            // The pretty form has newlines inside the object: one line on the wire is
            // what landstrip sends, so only the spacing varies, not the framing.
            let text = if pretty {
                serde_json::to_string_pretty(&trap)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?
                    .replace('\n', " ")
            } else {
                trap.to_string()
            };
            let parsed = parse_line(text.as_bytes());
            let Some((quick_id, access)) = parsed.query() else {
                return Err(TestCaseError::fail(format!("not read as a query: {text}")));
            };
            let operation = if write {
                FsOperation::Write
            } else {
                FsOperation::Read
            };
            prop_assert_eq!(
                access,
                Access::Filesystem {
                    operation,
                    path: &path,
                    deny_match,
                }
            );
            prop_assert_eq!(quick_id.raw(), id.to_string());
            let Line::Query(query) = decode_line(text.as_bytes()) else {
                return Err(TestCaseError::fail(format!(
                    "not decoded as a query: {text}"
                )));
            };
            let QueryKind::Filesystem(fs) = &query.kind else {
                return Err(TestCaseError::fail("not a filesystem query"));
            };
            prop_assert_eq!(&fs.path, &path);
            prop_assert_eq!(fs.requested_path.as_deref(), Some(path.as_str()));
            let process = query.process.as_ref();
            prop_assert_eq!(process.and_then(|p| p.pid), pid);
            prop_assert_eq!(process.and_then(|p| p.exe.clone()), exe);
            // The answer echoes the id exactly, as the same JSON type.
            for action in [Action::Allow, Action::Deny] {
                let answer: Value = serde_json::from_slice(&response_line(&query.id, action))
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(&answer["query_id"], &id);
            }
            Ok(())
        },
    );
}

// ---------------------------------------------------------------------------------------
// The policy parser.

/// A JSON value whose keys are mostly the schema's, nested a few levels.
fn sandbox_like_json() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("enabled".to_string()),
        Just("network".to_string()),
        Just("filesystem".to_string()),
        Just("allowWrite".to_string()),
        Just("denyRead".to_string()),
        Just("allowedDomains".to_string()),
        Just("allowNetwork".to_string()),
        "\\PC{0,8}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|n| json!(n)),
        "\\PC{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

#[test]
fn the_policy_parser_gives_an_error_or_a_value_for_anything() {
    let text = prop_oneof![
        "\\PC{0,64}",
        any::<Vec<u8>>().prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        sandbox_like_json().prop_map(|v| v.to_string()),
        // Comments, trailing commas, BOMs: not the plugin's strict JSON.
        sandbox_like_json().prop_map(|v| format!("// note\n{v}")),
        sandbox_like_json().prop_map(|v| format!("\u{feff}{v}")),
        sandbox_like_json().prop_map(|v| format!("{v},")),
    ];
    run("policy parser: any text", text, |text| {
        let parsed = parse_overrides(&text, Path::new("/p/sandbox.json"));
        // A value parses only if serde_json reads the text as one JSON object.
        if parsed.is_ok() {
            let value: Value = serde_json::from_str(&text)
                .map_err(|e| TestCaseError::fail(format!("accepted non-JSON: {e}")))?;
            prop_assert!(value.is_object());
        }
        // Every edit of text that does not parse is refused, never a panic.
        if parsed.is_err() {
            let change = PolicyChange::Add {
                list: ListField::Filesystem(FsList::AllowWrite),
                entry: "x".into(),
            };
            prop_assert!(change.apply(Some(&text)).is_err());
        }
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------
// The minimal editor.

/// How a generated file is laid out.
#[derive(Debug, Clone)]
struct Layout {
    indent: &'static str,
    newline: &'static str,
    colon: &'static str,
    /// Arrays on several lines (else `["a", "b"]`).
    tall_arrays: bool,
    /// Strings written with `\uXXXX` for non-ASCII and `\/` for `/`.
    escaped: bool,
    /// Whitespace before the root and after it.
    lead: &'static str,
    trail: &'static str,
    /// Member order, as a permutation seed.
    order: u64,
}

fn layout() -> impl Strategy<Value = Layout> {
    (
        prop::sample::select(vec!["", " ", "  ", "    ", "\t"]),
        prop::sample::select(vec!["\n", "\r\n", ""]),
        prop::sample::select(vec![":", ": ", " : ", ":\t"]),
        any::<bool>(),
        any::<bool>(),
        prop::sample::select(vec!["", "\n", " \r\n"]),
        prop::sample::select(vec!["", "\n", "\n\n", "  "]),
        any::<u64>(),
    )
        .prop_map(
            |(indent, newline, colon, tall_arrays, escaped, lead, trail, order)| Layout {
                indent,
                newline,
                colon,
                tall_arrays,
                escaped,
                lead,
                trail,
                order,
            },
        )
}

/// Entries, from a small pool (so lists repeat entries and changes hit them) and beyond.
fn entry() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "~/a", "/tmp", "/tmp/x y", "./out", "é/ü", "quote\"d", "back\\slash", "tab\there",
            "*.log", "/", "~", "emoji 🦀", "a,b", "[x]", "{y}", "//", "\u{7f}",
        ])
        .prop_map(str::to_string),
        1 => "[^\\x00\\n\\r]{1,12}".prop_filter("usable", |s| !s.trim().is_empty()),
    ]
}

fn list() -> impl Strategy<Value = Option<Vec<String>>> {
    prop::option::of(prop::collection::vec(entry(), 0..5))
}

fn overrides() -> impl Strategy<Value = SandboxOverrides> {
    let network = prop::option::of(
        (
            prop::option::of(any::<bool>()),
            prop::option::of(any::<bool>()),
            prop::option::of(any::<bool>()),
            list(),
            list(),
            list(),
        )
            .prop_map(|(a, b, c, d, e, f)| NetworkOverrides {
                allow_network: a,
                allow_local_binding: b,
                allow_all_unix_sockets: c,
                allow_unix_sockets: d,
                allowed_domains: e,
                denied_domains: f,
            }),
    );
    let filesystem = prop::option::of((list(), list(), list(), list(), list(), list()).prop_map(
        |(a, b, c, d, e, f)| FilesystemOverrides {
            deny_read: a,
            allow_read: b,
            allow_write: c,
            deny_write: d,
            deny_read_always: e,
            deny_write_always: f,
        },
    ));
    // The later plugin's objects: kept byte for byte by every edit of another field.
    let shell = prop::option::of(
        prop::option::of(prop::sample::select(vec![
            ShellReadAccess::Host,
            ShellReadAccess::Policy,
        ]))
        .prop_map(|read_access| ShellOverrides { read_access }),
    );
    let windows = prop::option::of(
        (
            prop::option::of(prop::sample::select(vec![
                AppContainerMode::Lpac,
                AppContainerMode::Standard,
            ])),
            prop::option::of(any::<bool>()),
        )
            .prop_map(|(app_container_mode, allow_loopback)| WindowsOverrides {
                app_container_mode,
                allow_loopback,
            }),
    );
    (
        prop::option::of(any::<bool>()),
        network,
        filesystem,
        shell,
        windows,
    )
        .prop_map(
            |(enabled, network, filesystem, shell, windows)| SandboxOverrides {
                enabled,
                network,
                filesystem,
                shell,
                windows,
            },
        )
}

fn list_field() -> impl Strategy<Value = ListField> {
    prop::sample::select(ListField::ALL.to_vec())
}

fn change() -> impl Strategy<Value = PolicyChange> {
    prop_oneof![
        (list_field(), entry()).prop_map(|(list, entry)| PolicyChange::Add { list, entry }),
        (list_field(), entry()).prop_map(|(list, entry)| PolicyChange::Remove { list, entry }),
        (list_field(), entry(), entry()).prop_map(|(list, old, new)| PolicyChange::Replace {
            list,
            old,
            new
        }),
        (prop::sample::select(BoolField::ALL.to_vec()), any::<bool>())
            .prop_map(|(field, value)| PolicyChange::Set { field, value }),
    ]
}

/// The byte span of every value of a rendered file, by key path (the root's is empty).
type Spans = Vec<(Vec<String>, Range<usize>)>;

/// A JSON value of the generated file.
enum Doc {
    Object(Vec<(String, Doc)>),
    List(Vec<String>),
    Bool(bool),
    Str(String),
}

fn to_doc(o: &SandboxOverrides) -> Doc {
    let lists = |pairs: Vec<(&str, &Option<Vec<String>>)>| {
        pairs
            .into_iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| (k.to_string(), Doc::List(v.clone()))))
            .collect::<Vec<_>>()
    };
    let mut root = Vec::new();
    if let Some(enabled) = o.enabled {
        root.push(("enabled".to_string(), Doc::Bool(enabled)));
    }
    if let Some(n) = &o.network {
        let mut members: Vec<(String, Doc)> = [
            ("allowNetwork", n.allow_network),
            ("allowLocalBinding", n.allow_local_binding),
            ("allowAllUnixSockets", n.allow_all_unix_sockets),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k.to_string(), Doc::Bool(v))))
        .collect();
        members.extend(lists(vec![
            ("allowUnixSockets", &n.allow_unix_sockets),
            ("allowedDomains", &n.allowed_domains),
            ("deniedDomains", &n.denied_domains),
        ]));
        root.push(("network".to_string(), Doc::Object(members)));
    }
    if let Some(f) = &o.filesystem {
        let members = lists(vec![
            ("denyRead", &f.deny_read),
            ("allowRead", &f.allow_read),
            ("allowWrite", &f.allow_write),
            ("denyWrite", &f.deny_write),
            ("denyReadAlways", &f.deny_read_always),
            ("denyWriteAlways", &f.deny_write_always),
        ]);
        root.push(("filesystem".to_string(), Doc::Object(members)));
    }
    if let Some(shell) = &o.shell {
        let members = shell
            .read_access
            .map(|v| ("readAccess".to_string(), Doc::Str(v.as_str().to_string())))
            .into_iter()
            .collect();
        root.push(("shell".to_string(), Doc::Object(members)));
    }
    if let Some(windows) = &o.windows {
        let mut members = Vec::new();
        if let Some(mode) = windows.app_container_mode {
            members.push((
                "appContainerMode".to_string(),
                Doc::Str(mode.as_str().to_string()),
            ));
        }
        if let Some(loopback) = windows.allow_loopback {
            members.push(("allowLoopback".to_string(), Doc::Bool(loopback)));
        }
        root.push(("windows".to_string(), Doc::Object(members)));
    }
    Doc::Object(root)
}

/// Renders a [`Doc`] in a [`Layout`], recording the byte span of every value by key path.
struct Renderer<'a> {
    layout: &'a Layout,
    out: String,
    spans: Spans,
    seed: u64,
}

impl Renderer<'_> {
    fn string(&mut self, s: &str) {
        if !self.layout.escaped {
            self.out
                .push_str(&serde_json::to_string(s).expect("a string serialises"));
            return;
        }
        self.out.push('"');
        for c in s.chars() {
            match c {
                '"' => self.out.push_str("\\\""),
                '\\' => self.out.push_str("\\\\"),
                '/' => self.out.push_str("\\/"),
                c if c.is_ascii() && !c.is_ascii_control() => self.out.push(c),
                c => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        self.out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
            }
        }
        self.out.push('"');
    }

    fn line(&mut self, depth: usize) {
        self.out.push_str(self.layout.newline);
        if !self.layout.newline.is_empty() {
            for _ in 0..depth {
                self.out.push_str(self.layout.indent);
            }
        } else if !self.layout.indent.is_empty() {
            self.out.push(' ');
        }
    }

    fn value(&mut self, doc: &Doc, path: &mut Vec<String>, depth: usize) {
        let start = self.out.len();
        match doc {
            Doc::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Doc::Str(text) => self.string(text),
            Doc::List(items) => {
                self.out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                        if !self.layout.tall_arrays {
                            self.out.push(' ');
                        }
                    }
                    if self.layout.tall_arrays {
                        self.line(depth + 1);
                    }
                    self.string(item);
                }
                if self.layout.tall_arrays && !items.is_empty() {
                    self.line(depth);
                }
                self.out.push(']');
            }
            Doc::Object(members) => {
                // A member order from the seed: the plugin and people order keys freely.
                let mut order: Vec<usize> = (0..members.len()).collect();
                for i in (1..order.len()).rev() {
                    self.seed = self.seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    order.swap(i, (self.seed >> 33) as usize % (i + 1));
                }
                self.out.push('{');
                for (n, &i) in order.iter().enumerate() {
                    let (key, value) = &members[i];
                    if n > 0 {
                        self.out.push(',');
                    }
                    self.line(depth + 1);
                    self.string(key);
                    self.out.push_str(self.layout.colon);
                    path.push(key.clone());
                    self.value(value, path, depth + 1);
                    path.pop();
                }
                if !members.is_empty() {
                    self.line(depth);
                }
                self.out.push('}');
            }
        }
        self.spans.push((path.clone(), start..self.out.len()));
    }
}

fn render(o: &SandboxOverrides, layout: &Layout) -> (String, Spans) {
    let mut r = Renderer {
        layout,
        out: layout.lead.to_string(),
        spans: Vec::new(),
        seed: layout.order,
    };
    r.value(&to_doc(o), &mut Vec::new(), 0);
    r.out.push_str(layout.trail);
    (r.out, r.spans)
}

fn list_mut(o: &mut SandboxOverrides, field: ListField) -> &mut Option<Vec<String>> {
    match field {
        ListField::Filesystem(list) => {
            let f = o.filesystem.get_or_insert_with(Default::default);
            match list {
                FsList::DenyRead => &mut f.deny_read,
                FsList::AllowRead => &mut f.allow_read,
                FsList::AllowWrite => &mut f.allow_write,
                FsList::DenyWrite => &mut f.deny_write,
                FsList::DenyReadAlways => &mut f.deny_read_always,
                FsList::DenyWriteAlways => &mut f.deny_write_always,
            }
        }
        ListField::AllowUnixSockets => {
            &mut o
                .network
                .get_or_insert_with(Default::default)
                .allow_unix_sockets
        }
        ListField::AllowedDomains => {
            &mut o
                .network
                .get_or_insert_with(Default::default)
                .allowed_domains
        }
        ListField::DeniedDomains => {
            &mut o
                .network
                .get_or_insert_with(Default::default)
                .denied_domains
        }
    }
}

fn bool_mut(o: &mut SandboxOverrides, field: BoolField) -> &mut Option<bool> {
    match field {
        BoolField::Enabled => &mut o.enabled,
        BoolField::AllowNetwork => {
            &mut o.network.get_or_insert_with(Default::default).allow_network
        }
        BoolField::AllowLocalBinding => {
            &mut o
                .network
                .get_or_insert_with(Default::default)
                .allow_local_binding
        }
        BoolField::AllowAllUnixSockets => {
            &mut o
                .network
                .get_or_insert_with(Default::default)
                .allow_all_unix_sockets
        }
    }
}

/// What the change should do to the parsed file: Ok(None) nothing, Ok(Some) the new value,
/// Err(()) refused.
fn expected(
    before: &SandboxOverrides,
    change: &PolicyChange,
) -> Result<Option<SandboxOverrides>, ()> {
    let listed = |field: ListField, entry: &str| {
        before
            .string_list(&field.key_path())
            .is_some_and(|l| l.iter().any(|e| e == entry))
    };
    let mut after = before.clone();
    match change {
        PolicyChange::Add { list, entry } => {
            if listed(*list, entry) {
                return Ok(None);
            }
            list_mut(&mut after, *list)
                .get_or_insert_with(Vec::new)
                .push(entry.clone());
        }
        PolicyChange::Remove { list, entry } => {
            if !listed(*list, entry) {
                return Ok(None);
            }
            if let Some(l) = list_mut(&mut after, *list) {
                l.retain(|e| e != entry);
            }
        }
        PolicyChange::Replace { list, old, new } => {
            if !listed(*list, old) {
                return Err(());
            }
            if old == new {
                return Ok(None);
            }
            if listed(*list, new) {
                return Err(());
            }
            if let Some(l) = list_mut(&mut after, *list) {
                if let Some(slot) = l.iter_mut().find(|e| *e == old) {
                    *slot = new.clone();
                }
            }
        }
        PolicyChange::Set { field, value } => {
            if before.bool_field(field.key_path()) == Some(*value) {
                return Ok(None);
            }
            *bool_mut(&mut after, *field) = Some(*value);
        }
        // Not generated by `change()`: `edit/members.rs` tests the removal of a field.
        PolicyChange::RemoveField { .. } => panic!("change() generates no RemoveField"),
    }
    Ok(Some(after))
}

/// The span the change may touch: the value it edits, else the nearest object that holds
/// (or will hold) it.
fn allowed_span(spans: &Spans, change: &PolicyChange) -> Range<usize> {
    let path: Vec<String> = match change {
        PolicyChange::Add { list, .. }
        | PolicyChange::Remove { list, .. }
        | PolicyChange::Replace { list, .. } => {
            list.key_path().iter().map(|s| s.to_string()).collect()
        }
        PolicyChange::Set { field, .. } => field.key_path().iter().map(|s| s.to_string()).collect(),
        PolicyChange::RemoveField { field } => {
            field.key_path().iter().map(|s| s.to_string()).collect()
        }
    };
    (0..=path.len())
        .rev()
        .find_map(|n| {
            spans
                .iter()
                .find(|(p, _)| p[..] == path[..n])
                .map(|(_, span)| span.clone())
        })
        .expect("the root has a span")
}

#[test]
fn an_edit_then_a_parse_gives_exactly_the_intended_change() {
    let input = (overrides(), layout(), change());
    run(
        "editor: generated files and changes",
        input,
        |(before, layout, change)| {
            let (text, spans) = render(&before, &layout);
            let file = Path::new("/p/.opencode/sandbox.json");
            let parsed = parse_overrides(&text, file).map_err(|e| {
                TestCaseError::fail(format!("generated an invalid file: {e}\n{text}"))
            })?;
            prop_assert_eq!(&parsed, &before, "the generator's file\n{}", text);

            let outcome = change.apply(Some(&text));
            match (expected(&before, &change), outcome) {
                (Ok(None), Ok(EditOutcome::Unchanged)) | (Err(()), Err(_)) => {}
                (Ok(Some(after)), Ok(EditOutcome::Changed(new_text))) => {
                    let reparsed = parse_overrides(&new_text, file).map_err(|e| {
                        TestCaseError::fail(format!(
                            "the edit wrote an invalid file: {e}\n{new_text}"
                        ))
                    })?;
                    prop_assert_eq!(
                        &reparsed,
                        &after,
                        "{:?}\nbefore:\n{}\nafter:\n{}",
                        change,
                        text,
                        new_text
                    );
                    // Every byte outside the edited value (or the object it goes into) is kept.
                    let prefix = text
                        .bytes()
                        .zip(new_text.bytes())
                        .take_while(|(a, b)| a == b)
                        .count();
                    let room = text.len().min(new_text.len()) - prefix;
                    let suffix = text
                        .bytes()
                        .rev()
                        .zip(new_text.bytes().rev())
                        .take(room)
                        .take_while(|(a, b)| a == b)
                        .count();
                    let touched = prefix..text.len() - suffix;
                    let span = allowed_span(&spans, &change);
                    prop_assert!(
                        span.start <= touched.start && touched.end <= span.end,
                        "{:?} touched bytes {:?} outside {:?}\nbefore:\n{}\nafter:\n{}",
                        change,
                        touched,
                        span,
                        text,
                        new_text
                    );
                }
                (want, got) => {
                    return Err(TestCaseError::fail(format!(
                        "{change:?}: expected {want:?}, got {got:?}\nfile:\n{text}"
                    )))
                }
            }
            Ok(())
        },
    );
}

#[test]
fn a_change_to_a_missing_file_creates_exactly_that() {
    run("editor: new files", change(), |change| {
        let before = SandboxOverrides::default();
        match (expected(&before, &change), change.apply(None)) {
            (Ok(Some(after)), Ok(EditOutcome::Changed(text))) => {
                let parsed = parse_overrides(&text, Path::new("/p/sandbox.json"))
                    .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
                prop_assert_eq!(parsed, after);
            }
            // Removing from or replacing in a file that does not exist changes nothing.
            (Ok(None), Ok(EditOutcome::Unchanged)) | (Err(()), Err(_)) => {}
            (want, got) => {
                return Err(TestCaseError::fail(format!(
                    "{change:?}: expected {want:?}, got {got:?}"
                )))
            }
        }
        Ok(())
    });
}
