//! Decoding tests against real landstrip lines and the older dialects.

use super::*;

/// Traps captured from landstrip 0.19.2.
const REAL: [&str; 5] = [
    r#"{"kind":"filesystem","code":"FILESYSTEM_DENIED","state":"query","query_id":"1","operation":"write","path":"/tmp/ls/out.txt","requested_path":"/tmp/ls/out.txt","syscall":"openat","errno":"EACCES","flags":["O_WRONLY","O_CREAT","O_TRUNC"],"reason":"allow_miss","suggested_grant":{"allowWrite":"/tmp/ls/out.txt"},"process":{"pid":4271,"exe":"/usr/bin/dash","cwd":"/tmp/ls/proj"},"mechanism":"seccomp"}"#,
    r#"{"kind":"filesystem","code":"FILESYSTEM_DENIED","state":"query","query_id":"2","operation":"read","path":"/root/secret/x","requested_path":"/root/secret/x","syscall":"openat","errno":"EACCES","flags":["O_RDONLY"],"reason":"deny_match","suggested_grant":{"allowRead":"/root/secret/x"},"process":{"pid":4273,"exe":"/usr/bin/cat","cwd":"/tmp/ls/proj"},"mechanism":"seccomp"}"#,
    r#"{"kind":"filesystem","code":"FILESYSTEM_DENIED","state":"query","query_id":"3","operation":"write","path":"/tmp/ls/proj/.env","requested_path":".env","syscall":"openat","errno":"EACCES","flags":["O_WRONLY","O_CREAT","O_TRUNC"],"reason":"deny_match","suggested_grant":{"allowWrite":"/tmp/ls/proj/.env"},"process":{"pid":4271,"exe":"/usr/bin/dash","cwd":"/tmp/ls/proj"},"mechanism":"seccomp"}"#,
    r#"{"kind":"network","code":"NETWORK_DENIED","state":"query","query_id":"4","operation":"connect","target":"127.0.0.1:9","syscall":"connect","errno":"EACCES","mechanism":"seccomp","process":{"pid":4274,"exe":"/root/.pyenv/versions/3.11.7/bin/python3.11","cwd":"/tmp/ls/proj"}}"#,
    r#"{"kind":"network","code":"NETWORK_DENIED","state":"query","query_id":"5","operation":"bind","target":"127.0.0.1:0","syscall":"bind","errno":"EACCES","mechanism":"seccomp","process":{"pid":4315,"exe":"/root/.pyenv/versions/3.11.7/bin/python3.11","cwd":"/tmp/ls/proj"}}"#,
];

fn query(line: &str) -> Query {
    match decode_line(line.as_bytes()) {
        Line::Query(q) => q,
        other => panic!("expected a query, got {other:?} for {line}"),
    }
}

fn ignored(line: &[u8]) -> IgnoreReason {
    match decode_line(line) {
        Line::Ignored(r) => r,
        other => panic!("expected ignored, got {other:?}"),
    }
}

fn fs(kind: QueryKind) -> FsAccess {
    match kind {
        QueryKind::Filesystem(fs) => fs,
        other => panic!("not filesystem: {other:?}"),
    }
}

fn assert_seccomp_context(q: &Query, code: &str, syscall: &str, pid: u32, exe: &str) {
    assert_eq!(q.code.as_deref(), Some(code));
    assert_eq!(q.syscall.as_deref(), Some(syscall));
    assert_eq!(q.errno.as_deref(), Some("EACCES"));
    assert_eq!(q.mechanism.as_deref(), Some("seccomp"));
    assert_eq!(
        q.process,
        Some(ProcessInfo {
            pid: Some(pid),
            exe: Some(exe.into()),
            cwd: Some("/tmp/ls/proj".into()),
        })
    );
}

#[test]
fn real_filesystem_write_query() {
    let q = query(REAL[0]);
    assert_eq!(q.id, QueryId::from_json("\"1\"").unwrap());
    assert_eq!(
        q.kind,
        QueryKind::Filesystem(FsAccess {
            operation: FsOperation::Write,
            path: "/tmp/ls/out.txt".into(),
            requested_path: Some("/tmp/ls/out.txt".into()),
            flags: vec!["O_WRONLY".into(), "O_CREAT".into(), "O_TRUNC".into()],
            reason: Some(Reason::AllowMiss),
            suggested_grant: Some(SuggestedGrant {
                allow_read: None,
                allow_write: Some("/tmp/ls/out.txt".into()),
            }),
        })
    );
    assert_seccomp_context(&q, "FILESYSTEM_DENIED", "openat", 4271, "/usr/bin/dash");
    assert_eq!(
        response_line(&q.id, Action::Allow),
        b"{\"query_id\":\"1\",\"action\":\"allow\"}\n"
    );
}

#[test]
fn real_filesystem_read_deny_match_query() {
    let q = query(REAL[1]);
    assert_eq!(q.id.raw(), "\"2\"");
    assert_seccomp_context(&q, "FILESYSTEM_DENIED", "openat", 4273, "/usr/bin/cat");
    let a = fs(q.kind);
    assert_eq!(a.operation, FsOperation::Read);
    assert_eq!(a.reason, Some(Reason::DenyMatch));
    assert_eq!(a.flags, vec!["O_RDONLY".to_string()]);
    assert_eq!(
        a.suggested_grant,
        Some(SuggestedGrant {
            allow_read: Some("/root/secret/x".into()),
            allow_write: None,
        })
    );
}

#[test]
fn real_relative_requested_path() {
    let q = query(REAL[2]);
    let a = fs(q.kind);
    assert_eq!(a.path, "/tmp/ls/proj/.env");
    assert_eq!(a.requested_path.as_deref(), Some(".env"));
    assert_eq!(a.reason, Some(Reason::DenyMatch));
    assert_eq!(a.operation, FsOperation::Write);
}

#[test]
fn real_network_queries() {
    let q = query(REAL[3]);
    assert_eq!(q.id.raw(), "\"4\"");
    assert_eq!(
        q.kind,
        QueryKind::Network(NetAccess {
            operation: NetOperation::Connect,
            target: "127.0.0.1:9".into(),
        })
    );
    let python = "/root/.pyenv/versions/3.11.7/bin/python3.11";
    assert_seccomp_context(&q, "NETWORK_DENIED", "connect", 4274, python);
    let q = query(REAL[4]);
    assert_eq!(
        q.kind,
        QueryKind::Network(NetAccess {
            operation: NetOperation::Bind,
            target: "127.0.0.1:0".into(),
        })
    );
    assert_seccomp_context(&q, "NETWORK_DENIED", "bind", 4315, python);
}

#[test]
fn old_minimal_numeric_query() {
    let q = query(
        r#"{"kind":"filesystem","state":"query","query_id":7,"operation":"write","path":"/x","mechanism":"seccomp"}"#,
    );
    assert_eq!(q.id.raw(), "7");
    assert_eq!(q.id.kind(), QueryIdKind::Number);
    assert_eq!(
        q.kind,
        QueryKind::Filesystem(FsAccess {
            operation: FsOperation::Write,
            path: "/x".into(),
            requested_path: None,
            flags: Vec::new(),
            reason: None,
            suggested_grant: None,
        })
    );
    assert_eq!(q.mechanism.as_deref(), Some("seccomp"));
    assert_eq!(
        (&q.code, &q.syscall, &q.errno, &q.process),
        (&None, &None, &None, &None)
    );
    assert_eq!(
        response_line(&q.id, Action::Deny),
        b"{\"query_id\":7,\"action\":\"deny\"}\n"
    );
}

#[test]
fn ids_round_trip_with_type_and_text() {
    for raw in ["7", "\"7\"", "\"00a\"", "0", "\"\"", "-3", "1e3"] {
        let line = format!(
            r#"{{"kind":"network","state":"query","query_id":{raw},"operation":"connect","target":"h:1"}}"#
        );
        let q = query(&line);
        assert_eq!(q.id.raw(), raw);
        let resp = response_line(&q.id, Action::Allow);
        assert_eq!(
            resp,
            format!("{{\"query_id\":{raw},\"action\":\"allow\"}}\n").as_bytes()
        );
    }
}

#[test]
fn whitespace_around_id_is_not_part_of_it() {
    let q = query(
        "{ \"kind\" : \"network\", \"state\":\"query\", \"query_id\" :  \"9\"  , \"operation\":\"bind\",\"target\":\"x\" }",
    );
    assert_eq!(q.id.raw(), "\"9\"");
}

#[test]
fn bad_query_ids_are_not_queries() {
    let long = format!("\"{}\"", "9".repeat(200));
    for id in ["null", "true", "[1]", "{\"a\":1}", long.as_str()] {
        let line = format!(
            r#"{{"kind":"filesystem","state":"query","query_id":{id},"operation":"write","path":"/x"}}"#
        );
        assert_eq!(ignored(line.as_bytes()), IgnoreReason::BadQueryId, "{id}");
    }
    let missing = r#"{"kind":"filesystem","state":"query","operation":"write","path":"/x"}"#;
    assert_eq!(ignored(missing.as_bytes()), IgnoreReason::BadQueryId);
}

#[test]
fn info_and_stateless_traps_are_terminal() {
    let info = r#"{"kind":"filesystem","state":"info","query_id":"0","operation":"read","path":"/etc/shadow","errno":"EACCES"}"#;
    let Line::Terminal(TerminalTrap::Denial(d)) = decode_line(info.as_bytes()) else {
        panic!("info should be terminal");
    };
    assert_eq!(d.state, DenialState::Info);
    assert_eq!(d.errno.as_deref(), Some("EACCES"));
    assert_eq!(fs(d.access).path, "/etc/shadow");

    // Pre-0.15.4: no state, even with a query_id, is never answered.
    let old = r#"{"kind":"filesystem","query_id":3,"operation":"write","path":"/x","mechanism":"landlock"}"#;
    let Line::Terminal(TerminalTrap::Denial(d)) = decode_line(old.as_bytes()) else {
        panic!("stateless should be terminal");
    };
    assert_eq!(d.state, DenialState::Absent);

    let net = r#"{"kind":"network","operation":"connect","target":"example.com:443","mechanism":"seccomp"}"#;
    assert!(matches!(
        decode_line(net.as_bytes()),
        Line::Terminal(TerminalTrap::Denial(Denial {
            state: DenialState::Absent,
            access: QueryKind::Network(_),
            ..
        }))
    ));

    let odd =
        r#"{"kind":"network","state":"later","query_id":"5","operation":"connect","target":"x"}"#;
    assert!(matches!(
        decode_line(odd.as_bytes()),
        Line::Terminal(TerminalTrap::Denial(Denial {
            state: DenialState::Other(_),
            ..
        }))
    ));
}

#[test]
fn launch_usage_internal_traps() {
    let launch = r#"{"kind":"launch","code":"LAUNCH_FAILED","program":"nope","errno":"ENOENT","message":"No such file"}"#;
    assert_eq!(
        decode_line(launch.as_bytes()),
        Line::Terminal(TerminalTrap::Launch(LaunchTrap {
            code: Some("LAUNCH_FAILED".into()),
            program: Some("nope".into()),
            errno: Some("ENOENT".into()),
            message: Some("No such file".into()),
        }))
    );
    let usage = r#"{"kind":"usage","message":"missing program"}"#;
    assert_eq!(
        decode_line(usage.as_bytes()),
        Line::Terminal(TerminalTrap::Usage(UsageTrap {
            code: None,
            message: Some("missing program".into()),
        }))
    );
    let internal = r#"{"kind":"internal","code":"POLICY_PARSE_FAILED","message":"bad policy","detail":{"file":"/p.json","line":3}}"#;
    assert_eq!(
        decode_line(internal.as_bytes()),
        Line::Terminal(TerminalTrap::Internal(InternalTrap {
            code: Some("POLICY_PARSE_FAILED".into()),
            message: Some("bad policy".into()),
            detail: vec![
                ("file".into(), "/p.json".into()),
                ("line".into(), "3".into())
            ],
        }))
    );
    // Even a launch trap claiming to be a query is never answered.
    let sneaky = r#"{"kind":"launch","state":"query","query_id":"1"}"#;
    assert!(matches!(
        decode_line(sneaky.as_bytes()),
        Line::Terminal(TerminalTrap::Launch(_))
    ));
}

#[test]
fn session_hello() {
    let hello = br#"{"kind":"opencode-landstrip-session","sessionID":"  ses_abc123 "}"#;
    assert_eq!(
        decode_line(hello),
        Line::Hello(SessionId::new("ses_abc123").unwrap())
    );
    let empty = br#"{"kind":"opencode-landstrip-session","sessionID":"   "}"#;
    assert_eq!(ignored(empty), IgnoreReason::BadSessionId);
    let missing = br#"{"kind":"opencode-landstrip-session"}"#;
    assert_eq!(ignored(missing), IgnoreReason::BadSessionId);
    let long = format!(
        r#"{{"kind":"opencode-landstrip-session","sessionID":"{}"}}"#,
        "s".repeat(MAX_SESSION_ID_LEN + 1)
    );
    assert_eq!(ignored(long.as_bytes()), IgnoreReason::BadSessionId);
    let fits = format!(
        r#"{{"kind":"opencode-landstrip-session","sessionID":"{}"}}"#,
        "s".repeat(MAX_SESSION_ID_LEN)
    );
    assert!(matches!(decode_line(fits.as_bytes()), Line::Hello(_)));
}

#[test]
fn unknown_fields_are_ignored() {
    let line = r#"{"future":{"nested":[1,2,{"x":null}]},"kind":"filesystem","state":"query","query_id":"8","operation":"read","path":"/a","extra":true,"process":{"pid":1,"uid":0,"exe":"/bin/x"}}"#;
    let q = query(line);
    assert_eq!(q.id.raw(), "\"8\"");
    assert_eq!(
        q.process,
        Some(ProcessInfo {
            pid: Some(1),
            exe: Some("/bin/x".into()),
            cwd: None,
        })
    );
}

#[test]
fn wrongly_typed_optional_fields_do_not_reject_the_query() {
    let line = r#"{"kind":"filesystem","state":"query","query_id":"9","operation":"write","path":"/a","flags":"O_RDONLY","reason":5,"suggested_grant":["x"],"process":{"pid":-1,"exe":7},"errno":13,"code":null,"requested_path":{}}"#;
    let q = query(line);
    assert_eq!(
        q.kind,
        QueryKind::Filesystem(FsAccess {
            operation: FsOperation::Write,
            path: "/a".into(),
            requested_path: None,
            flags: Vec::new(),
            reason: None,
            suggested_grant: None,
        })
    );
    // Descriptive fields keep numbers as text.
    assert_eq!(q.errno.as_deref(), Some("13"));
    assert_eq!(q.code, None);
    assert_eq!(q.process, Some(ProcessInfo::default()));

    let flags = r#"{"kind":"filesystem","state":"query","query_id":"9","operation":"write","path":"/a","flags":["O_A",1,null,"O_B"],"reason":"new_reason","suggested_grant":{}}"#;
    let a = fs(query(flags).kind);
    assert_eq!(a.flags, vec!["O_A".to_string(), "O_B".to_string()]);
    assert_eq!(a.reason, Some(Reason::Other("new_reason".into())));
    assert_eq!(a.suggested_grant, None);
}

#[test]
fn escaped_strings_decode() {
    let line = r#"{"kind":"filesystem","state":"query","query_id":"1","operation":"write","path":"/tmp/a \"b\"\u00e9\n"}"#;
    assert_eq!(fs(query(line).kind).path, "/tmp/a \"b\"é\n");
}

#[test]
fn unusable_traps_say_why_and_keep_the_pending_id() {
    let cases: [(&str, TrapProblem); 5] = [
        (r#""path":"/x""#, TrapProblem::MissingOperation),
        (
            r#""operation":"exec","path":"/x""#,
            TrapProblem::UnknownOperation,
        ),
        (r#""operation":"write""#, TrapProblem::MissingPath),
        (r#""operation":"write","path":7"#, TrapProblem::MissingPath),
        (
            r#""operation":["write"],"path":"/x""#,
            TrapProblem::MissingOperation,
        ),
    ];
    for (fields, problem) in cases {
        let line = format!(r#"{{"kind":"filesystem","state":"query","query_id":"4",{fields}}}"#);
        assert_eq!(
            ignored(line.as_bytes()),
            IgnoreReason::MalformedTrap {
                problem,
                pending: Some(QueryId::from_json("\"4\"").unwrap()),
            },
            "{fields}"
        );
        let info = format!(r#"{{"kind":"filesystem","state":"info",{fields}}}"#);
        assert_eq!(
            ignored(info.as_bytes()),
            IgnoreReason::MalformedTrap {
                problem,
                pending: None
            }
        );
    }
    let net = br#"{"kind":"network","state":"query","query_id":1,"operation":"connect"}"#;
    assert_eq!(
        ignored(net),
        IgnoreReason::MalformedTrap {
            problem: TrapProblem::MissingTarget,
            pending: Some(QueryId::number(1)),
        }
    );
    // Unknown network operations are kept, not rejected.
    let sendto =
        r#"{"kind":"network","state":"query","query_id":1,"operation":"sendto","target":"x"}"#;
    assert_eq!(
        query(sendto).kind,
        QueryKind::Network(NetAccess {
            operation: NetOperation::Other("sendto".into()),
            target: "x".into()
        })
    );
}

#[test]
fn non_traps_are_ignored_with_a_reason() {
    assert_eq!(ignored(b"\xff{\"kind\":1}"), IgnoreReason::NotUtf8);
    assert_eq!(
        ignored(b"{\"kind\":\"usage\",\"message\":\"\xc3\"}"),
        IgnoreReason::NotUtf8
    );
    assert_eq!(ignored(b""), IgnoreReason::NotJson);
    assert_eq!(ignored(b"hello"), IgnoreReason::NotJson);
    assert_eq!(ignored(b"{\"kind\":"), IgnoreReason::NotJson);
    assert_eq!(ignored(b"{} {}"), IgnoreReason::NotJson);
    assert_eq!(
        ignored(br#"{"kind":"usage","kind":"launch"}"#),
        IgnoreReason::NotJson
    );
    assert_eq!(ignored(b"[1,2]"), IgnoreReason::NotObject);
    assert_eq!(ignored(b"\"str\""), IgnoreReason::NotObject);
    assert_eq!(ignored(b"  42 "), IgnoreReason::NotObject);
    assert_eq!(ignored(b"{}"), IgnoreReason::MissingKind);
    assert_eq!(ignored(br#"{"kind":7}"#), IgnoreReason::MissingKind);
    assert_eq!(ignored(br#"{"kind":"mystery"}"#), IgnoreReason::UnknownKind);
    // Surrounding whitespace is fine.
    assert!(matches!(
        decode_line(b"  {\"kind\":\"usage\"}  "),
        Line::Terminal(TerminalTrap::Usage(_))
    ));
}

#[test]
fn deep_nesting_does_not_overflow() {
    let mut line = String::from(r#"{"kind":"usage","x":"#);
    line.push_str(&"[".repeat(100_000));
    assert_eq!(ignored(line.as_bytes()), IgnoreReason::NotJson);
}

/// xorshift64: deterministic pseudo-random bytes without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn never_panics_on_random_or_damaged_input() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for _ in 0..20_000 {
        let len = (rng.next() % 200) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let _ = decode_line(&bytes);
    }
    // JSON-ish alphabet hits deeper parser paths than uniform bytes.
    let alphabet = br#"{}[]":,0123456789.-eE truefalsnul\kindqueryid_"#;
    for _ in 0..20_000 {
        let len = (rng.next() % 120) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| alphabet[(rng.next() % alphabet.len() as u64) as usize])
            .collect();
        let _ = decode_line(&bytes);
    }
    for real in REAL {
        let bytes = real.as_bytes();
        for cut in 0..bytes.len() {
            let _ = decode_line(&bytes[..cut]);
            let _ = decode_line(&bytes[cut..]);
        }
        for _ in 0..2_000 {
            let mut damaged = bytes.to_vec();
            for _ in 0..=(rng.next() % 4) {
                let at = (rng.next() % damaged.len() as u64) as usize;
                damaged[at] = rng.next() as u8;
            }
            let _ = decode_line(&damaged);
        }
    }
}

#[test]
fn framed_real_stream_decodes_every_line() {
    let mut stream = Vec::new();
    stream.extend_from_slice(br#"{"kind":"opencode-landstrip-session","sessionID":"ses_1"}"#);
    stream.extend_from_slice(b"\r\n\n");
    for real in REAL {
        stream.extend_from_slice(real.as_bytes());
        stream.push(b'\n');
    }
    let mut framer = LineFramer::new();
    let mut lines = Vec::new();
    for chunk in stream.chunks(37) {
        framer.push(chunk).unwrap();
        lines.extend(framer.lines().map(decode_line));
    }
    assert_eq!(lines.len(), 6);
    assert!(matches!(lines[0], Line::Hello(_)));
    let ids: Vec<String> = lines[1..]
        .iter()
        .map(|l| match l {
            Line::Query(q) => q.id.raw().to_owned(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(ids, ["\"1\"", "\"2\"", "\"3\"", "\"4\"", "\"5\""]);
}

#[test]
fn terminal_summary_and_serialization() {
    let info = br#"{"kind":"network","state":"info","operation":"connect","target":"1.2.3.4:80"}"#;
    let Line::Terminal(trap) = decode_line(info) else {
        panic!("terminal expected");
    };
    assert_eq!(
        trap.summary(),
        ("network".into(), "connect".into(), "1.2.3.4:80".into())
    );
    let launch = br#"{"kind":"launch","code":"LAUNCH_FAILED","program":"nope"}"#;
    let Line::Terminal(trap) = decode_line(launch) else {
        panic!("terminal expected");
    };
    assert_eq!(
        trap.summary(),
        ("launch".into(), "LAUNCH_FAILED".into(), "nope".into())
    );

    let q = query(REAL[0]);
    let v = serde_json::to_value(&q).unwrap();
    assert_eq!(v["id"], "1");
    assert_eq!(v["kind"]["kind"], "filesystem");
    assert_eq!(v["kind"]["operation"], "write");
    assert_eq!(v["kind"]["reason"], "allow_miss");
    assert_eq!(
        v["kind"]["suggested_grant"]["allowWrite"],
        "/tmp/ls/out.txt"
    );
    assert_eq!(v["process"]["pid"], 4271);
    let v = serde_json::to_value(query(REAL[4])).unwrap();
    assert_eq!(v["kind"]["operation"], "bind");
}
