//! Decoding one input line into a [`Line`].
//!
//! Hot path: each line is deserialized once into a borrowed struct of
//! options, then the owned types are built from it. Field types are lenient: a
//! field of an unexpected JSON type reads as absent instead of rejecting the
//! whole trap, because an unanswered query leaves a syscall hanging.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::trap::{
    Access, Denial, DenialState, FsAccess, FsOperation, IgnoreReason, InternalTrap, LaunchTrap,
    Line, NetAccess, NetOperation, ProcessInfo, Query, QueryKind, Reason, SessionId,
    SuggestedGrant, TerminalTrap, TrapProblem, UsageTrap,
};
use super::QueryId;

/// Decodes one line (without its terminator). Never panics.
pub fn decode_line(line: &[u8]) -> Line {
    parse_line(line).into_line()
}

/// Parses one line just far enough to decide a query without building owned types
/// (the hot path); [`Parsed::into_line`] finishes the decode when needed.
pub fn parse_line(line: &[u8]) -> Parsed<'_> {
    let Ok(text) = std::str::from_utf8(line) else {
        return Parsed(Err(IgnoreReason::NotUtf8));
    };
    // serde would happily read a struct from a JSON array, so gate on `{`.
    if text.trim_start().as_bytes().first() != Some(&b'{') {
        let reason = if serde_json::from_str::<IgnoredAny>(text).is_ok() {
            IgnoreReason::NotObject
        } else {
            IgnoreReason::NotJson
        };
        return Parsed(Err(reason));
    }
    match serde_json::from_str::<WireTrap<'_>>(text) {
        Ok(wire) => Parsed(Ok(wire)),
        Err(_) => Parsed(Err(IgnoreReason::NotJson)),
    }
}

/// A line parsed into borrowed fields.
pub struct Parsed<'a>(Result<WireTrap<'a>, IgnoreReason>);

impl Parsed<'_> {
    /// The id and the access asked for, when this is a well-formed query; None for
    /// everything else (which [`Parsed::into_line`] then classifies).
    pub fn query(&self) -> Option<(QueryId, Access<'_>)> {
        let wire = self.0.as_ref().ok()?;
        if wire.state.as_deref() != Some("query") {
            return None;
        }
        let operation = wire.operation.as_deref()?;
        let access = match wire.kind.as_deref()? {
            "filesystem" => Access::Filesystem {
                operation: match operation {
                    "read" => FsOperation::Read,
                    "write" => FsOperation::Write,
                    _ => return None,
                },
                path: wire.path.as_deref()?,
                deny_match: wire.reason.as_deref() == Some("deny_match"),
            },
            "network" => Access::Network {
                operation: NetOperation::from_wire(operation),
                target: wire.target.as_deref()?,
            },
            _ => return None,
        };
        let id = QueryId::from_raw_value(wire.query_id?).ok()?;
        Some((id, access))
    }

    /// The asking process's pid and executable, if the trap names them.
    pub fn process(&self) -> (Option<u32>, Option<&str>) {
        match self.0.as_ref().ok().and_then(|w| w.process.as_ref()) {
            Some(p) => (p.pid, p.exe.as_deref()),
            None => (None, None),
        }
    }

    /// The held syscall, the path as the program passed it and the asking process's
    /// working directory, when the trap names them.
    pub fn fs_detail(&self) -> (Option<&str>, Option<&str>, Option<&str>) {
        match self.0.as_ref().ok() {
            Some(w) => (
                w.syscall.as_deref(),
                w.requested_path.as_deref(),
                w.process.as_ref().and_then(|p| p.cwd.as_deref()),
            ),
            None => (None, None, None),
        }
    }

    /// The full decode.
    pub fn into_line(self) -> Line {
        match self.0 {
            Ok(wire) => wire.into_line(),
            Err(reason) => Line::Ignored(reason),
        }
    }
}

/// Every field any trap kind may carry, borrowed from the line where possible.
#[derive(serde::Deserialize)]
struct WireTrap<'a> {
    #[serde(borrow, default, deserialize_with = "opt_str")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    state: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    query_id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    operation: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    path: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    requested_path: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    target: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "str_list")]
    flags: Vec<String>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    reason: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_object")]
    suggested_grant: Option<WireGrant<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_object")]
    process: Option<WireProcess<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    code: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    syscall: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    errno: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    mechanism: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    program: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    message: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    detail: Option<&'a RawValue>,
    #[serde(borrow, rename = "sessionID", default, deserialize_with = "opt_str")]
    session_id: Option<Cow<'a, str>>,
}

#[derive(serde::Deserialize)]
struct WireGrant<'a> {
    #[serde(borrow, rename = "allowRead", default, deserialize_with = "opt_str")]
    allow_read: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "allowWrite", default, deserialize_with = "opt_str")]
    allow_write: Option<Cow<'a, str>>,
}

#[derive(serde::Deserialize)]
struct WireProcess<'a> {
    #[serde(default, deserialize_with = "opt_u32")]
    pid: Option<u32>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    exe: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    cwd: Option<Cow<'a, str>>,
}

/// Whether a filesystem/network trap is answered or only recorded.
enum Disposition {
    Answer(QueryId),
    Record(DenialState),
}

fn owned(s: Option<Cow<'_, str>>) -> Option<String> {
    s.map(Cow::into_owned)
}

impl WireTrap<'_> {
    fn into_line(self) -> Line {
        let Some(kind) = self.kind.as_deref() else {
            return Line::Ignored(IgnoreReason::MissingKind);
        };
        match kind {
            "filesystem" | "network" => self.into_access_line(),
            "opencode-landstrip-session" => {
                match self.session_id.as_deref().and_then(SessionId::new) {
                    Some(id) => Line::Hello(id),
                    None => Line::Ignored(IgnoreReason::BadSessionId),
                }
            }
            "launch" => Line::Terminal(TerminalTrap::Launch(LaunchTrap {
                code: owned(self.code),
                program: owned(self.program),
                errno: owned(self.errno),
                message: owned(self.message),
            })),
            "usage" => Line::Terminal(TerminalTrap::Usage(UsageTrap {
                code: owned(self.code),
                message: owned(self.message),
            })),
            "internal" => Line::Terminal(TerminalTrap::Internal(InternalTrap {
                code: owned(self.code),
                message: owned(self.message),
                detail: self.detail.map(detail_entries).unwrap_or_default(),
            })),
            _ => Line::Ignored(IgnoreReason::UnknownKind),
        }
    }

    fn into_access_line(mut self) -> Line {
        // Only `"state":"query"` is answered; every other state (or none) is terminal.
        let disposition = match self.state.as_deref() {
            Some("query") => match self.query_id.map(QueryId::from_raw_value) {
                Some(Ok(id)) => Disposition::Answer(id),
                _ => return Line::Ignored(IgnoreReason::BadQueryId),
            },
            Some("info") => Disposition::Record(DenialState::Info),
            None => Disposition::Record(DenialState::Absent),
            Some(other) => Disposition::Record(DenialState::Other(other.to_owned())),
        };
        let is_fs = self.kind.as_deref() == Some("filesystem");
        let kind = match self.access_kind(is_fs) {
            Ok(kind) => kind,
            Err(problem) => {
                let pending = match disposition {
                    Disposition::Answer(id) => Some(id),
                    Disposition::Record(_) => None,
                };
                return Line::Ignored(IgnoreReason::MalformedTrap { problem, pending });
            }
        };
        let code = owned(self.code);
        let syscall = owned(self.syscall);
        let errno = owned(self.errno);
        let mechanism = owned(self.mechanism);
        let process = self.process.map(|p| ProcessInfo {
            pid: p.pid,
            exe: owned(p.exe),
            cwd: owned(p.cwd),
        });
        match disposition {
            Disposition::Answer(id) => Line::Query(Query {
                id,
                kind,
                code,
                syscall,
                errno,
                mechanism,
                process,
            }),
            Disposition::Record(state) => Line::Terminal(TerminalTrap::Denial(Denial {
                state,
                access: kind,
                code,
                syscall,
                errno,
                mechanism,
                process,
            })),
        }
    }

    /// Builds the access description, taking the fields it needs out of `self`.
    fn access_kind(&mut self, is_fs: bool) -> Result<QueryKind, TrapProblem> {
        let operation = self.operation.take().ok_or(TrapProblem::MissingOperation)?;
        if is_fs {
            let operation = match &*operation {
                "read" => FsOperation::Read,
                "write" => FsOperation::Write,
                _ => return Err(TrapProblem::UnknownOperation),
            };
            let path = self.path.take().ok_or(TrapProblem::MissingPath)?;
            let reason = self.reason.take().map(|r| match &*r {
                "allow_miss" => Reason::AllowMiss,
                "deny_match" => Reason::DenyMatch,
                _ => Reason::Other(r.into_owned()),
            });
            let suggested_grant = self.suggested_grant.take().and_then(|g| {
                let grant = SuggestedGrant {
                    allow_read: owned(g.allow_read),
                    allow_write: owned(g.allow_write),
                };
                (grant != SuggestedGrant::default()).then_some(grant)
            });
            Ok(QueryKind::Filesystem(FsAccess {
                operation,
                path: path.into_owned(),
                requested_path: owned(self.requested_path.take()),
                flags: std::mem::take(&mut self.flags),
                reason,
                suggested_grant,
            }))
        } else {
            let operation = NetOperation::from_wire(&operation);
            let target = self.target.take().ok_or(TrapProblem::MissingTarget)?;
            Ok(QueryKind::Network(NetAccess {
                operation,
                target: target.into_owned(),
            }))
        }
    }
}

/// `detail` of an internal trap: object entries in order, non-strings as JSON text.
/// Cold path (internal traps are rare), so it parses the raw text again.
fn detail_entries(raw: &RawValue) -> Vec<(String, String)> {
    let text_of = |v: serde_json::Value| match v {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    };
    match serde_json::from_str::<serde_json::Value>(raw.get()) {
        Ok(serde_json::Value::Object(map)) => {
            map.into_iter().map(|(k, v)| (k, text_of(v))).collect()
        }
        Ok(serde_json::Value::Null) | Err(_) => Vec::new(),
        Ok(other) => vec![("detail".to_owned(), text_of(other))],
    }
}

/// Skips a sequence or map the visitor does not want, so parsing can go on.
fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Reads a string (borrowed when unescaped); other JSON types read as `None`,
/// or as their text when `scalars_as_text` is set.
struct TextVisitor<'a> {
    scalars_as_text: bool,
    marker: PhantomData<&'a ()>,
}

impl<'de: 'a, 'a> Visitor<'de> for TextVisitor<'a> {
    type Value = Option<Cow<'a, str>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(v)))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(self.scalars_as_text.then(|| Cow::Owned(v.to_string())))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(self.scalars_as_text.then(|| Cow::Owned(v.to_string())))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(self.scalars_as_text.then(|| Cow::Owned(v.to_string())))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(self.scalars_as_text.then(|| Cow::Owned(v.to_string())))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        drain_seq(seq).map(|()| None)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        drain_map(map).map(|()| None)
    }
}

/// A string field; any other JSON type reads as absent.
fn opt_str<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'a, str>>, D::Error> {
    d.deserialize_any(TextVisitor {
        scalars_as_text: false,
        marker: PhantomData,
    })
}

/// A descriptive field: strings, and numbers/bools as their text.
fn opt_text<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'a, str>>, D::Error> {
    d.deserialize_any(TextVisitor {
        scalars_as_text: true,
        marker: PhantomData,
    })
}

/// One element of a string list; non-strings read as `None`.
struct LenientStr<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for LenientStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        opt_str(d).map(LenientStr)
    }
}

struct StrListVisitor;

impl<'de> Visitor<'de> for StrListVisitor {
    type Value = Vec<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(4).min(16));
        while let Some(LenientStr(item)) = seq.next_element()? {
            if let Some(s) = item {
                out.push(s.into_owned());
            }
        }
        Ok(out)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        drain_map(map).map(|()| Vec::new())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }
}

/// A list of strings; non-string elements are dropped, a non-list is empty.
fn str_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    d.deserialize_any(StrListVisitor)
}

struct ObjectVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(Some)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        drain_seq(seq).map(|()| None)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// A nested object; any other JSON type reads as absent.
fn opt_object<'de, T: Deserialize<'de>, D: Deserializer<'de>>(d: D) -> Result<Option<T>, D::Error> {
    d.deserialize_any(ObjectVisitor(PhantomData))
}

struct U32Visitor;

impl<'de> Visitor<'de> for U32Visitor {
    type Value = Option<u32>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(u32::try_from(v).ok())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(u32::try_from(v).ok())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        drain_seq(seq).map(|()| None)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        drain_map(map).map(|()| None)
    }
}

/// A u32 field; anything else (negative, too big, other types) reads as absent.
fn opt_u32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    d.deserialize_any(U32Visitor)
}
