//! Query ids, kept exactly as landstrip sent them.

use std::borrow::Cow;
use std::fmt;
use std::hash::{Hash, Hasher};

use serde_json::value::RawValue;
use thiserror::Error;

/// Longest raw id text accepted; real ids are a few digits.
pub const MAX_QUERY_ID_LEN: usize = 128;

/// The JSON type a query id arrived as; the answer must use the same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueryIdKind {
    /// A JSON number (landstrip ≤ 0.15).
    Number,
    /// A JSON string (landstrip ≥ 0.18).
    String,
}

/// Why a JSON value cannot be a query id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum QueryIdError {
    /// The text is not a single JSON value.
    #[error("query id is not valid JSON")]
    NotJson,
    /// The value is neither a number nor a string.
    #[error("query id is neither a number nor a string")]
    WrongType,
    /// The raw text is longer than [`MAX_QUERY_ID_LEN`].
    #[error("query id longer than {MAX_QUERY_ID_LEN} bytes")]
    TooLong,
}

/// A query id as received: its raw JSON text and JSON type.
///
/// Equality and hashing use the raw text only, so `7` and `"7"` are distinct
/// ids, as they are on the wire.
#[derive(Debug, Clone)]
pub struct QueryId {
    raw: Box<str>,
    kind: QueryIdKind,
}

impl QueryId {
    /// Builds an id from an already-parsed raw JSON value.
    pub fn from_raw_value(raw: &RawValue) -> Result<Self, QueryIdError> {
        Self::from_valid_json(raw.get())
    }

    /// Builds an id from JSON text such as `7` or `"12"`.
    pub fn from_json(text: &str) -> Result<Self, QueryIdError> {
        // Cheap length gate before parsing; whitespace around the value is allowed.
        if text.trim().len() > MAX_QUERY_ID_LEN {
            return Err(QueryIdError::TooLong);
        }
        let raw: &RawValue = serde_json::from_str(text).map_err(|_| QueryIdError::NotJson)?;
        Self::from_raw_value(raw)
    }

    /// A numeric id, as landstrip ≤ 0.15 sends them.
    pub fn number(n: u64) -> Self {
        Self {
            raw: n.to_string().into_boxed_str(),
            kind: QueryIdKind::Number,
        }
    }

    /// A string id, as landstrip ≥ 0.18 sends them.
    pub fn string(s: &str) -> Result<Self, QueryIdError> {
        let raw = serde_json::to_string(s).map_err(|_| QueryIdError::NotJson)?;
        Self::from_valid_json(&raw)
    }

    /// `text` must be exactly one JSON value with no surrounding whitespace.
    fn from_valid_json(text: &str) -> Result<Self, QueryIdError> {
        if text.len() > MAX_QUERY_ID_LEN {
            return Err(QueryIdError::TooLong);
        }
        let kind = match text.as_bytes().first() {
            Some(b'"') => QueryIdKind::String,
            Some(b'-' | b'0'..=b'9') => QueryIdKind::Number,
            _ => return Err(QueryIdError::WrongType),
        };
        Ok(Self {
            raw: text.into(),
            kind,
        })
    }

    /// The id's JSON text exactly as received (strings include their quotes).
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// Whether the id arrived as a number or a string.
    pub fn kind(&self) -> QueryIdKind {
        self.kind
    }

    /// The id's value for display: the number's text, or the decoded string.
    pub fn value(&self) -> Cow<'_, str> {
        match self.kind {
            QueryIdKind::Number => Cow::Borrowed(&self.raw),
            QueryIdKind::String => {
                let inner = self
                    .raw
                    .strip_prefix('"')
                    .and_then(|s| s.strip_suffix('"'))
                    .unwrap_or(&self.raw);
                if inner.contains('\\') {
                    // Escapes are rare; fall back to the raw text if decoding fails.
                    serde_json::from_str::<String>(&self.raw)
                        .map(Cow::Owned)
                        .unwrap_or(Cow::Borrowed(&self.raw))
                } else {
                    Cow::Borrowed(inner)
                }
            }
        }
    }
}

impl PartialEq for QueryId {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

impl Eq for QueryId {}

impl Hash for QueryId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.raw.hash(state);
    }
}

impl serde::Serialize for QueryId {
    /// As its JSON value: numbers stay numbers, strings stay strings.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.kind {
            QueryIdKind::String => s.serialize_str(&self.value()),
            QueryIdKind::Number => {
                if let Ok(n) = self.raw.parse::<u64>() {
                    s.serialize_u64(n)
                } else if let Ok(n) = self.raw.parse::<i64>() {
                    s.serialize_i64(n)
                } else if let Ok(n) = self.raw.parse::<f64>() {
                    s.serialize_f64(n)
                } else {
                    s.serialize_str(&self.raw)
                }
            }
        }
    }
}

impl fmt::Display for QueryId {
    /// Shows the raw JSON text, so `7` and `"7"` stay distinguishable in logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn number_and_string_keep_their_type_and_text() {
        let n = QueryId::from_json("7").unwrap();
        assert_eq!(n.raw(), "7");
        assert_eq!(n.kind(), QueryIdKind::Number);
        assert_eq!(n.value(), "7");

        let s = QueryId::from_json("\"7\"").unwrap();
        assert_eq!(s.raw(), "\"7\"");
        assert_eq!(s.kind(), QueryIdKind::String);
        assert_eq!(s.value(), "7");

        let z = QueryId::from_json("\"00a\"").unwrap();
        assert_eq!(z.raw(), "\"00a\"");
        assert_eq!(z.value(), "00a");

        assert_ne!(n, s);
    }

    #[test]
    fn escaped_string_is_kept_raw_but_decoded_for_display() {
        let id = QueryId::from_json(r#""a\u0062""#).unwrap();
        assert_eq!(id.raw(), r#""a\u0062""#);
        assert_eq!(id.value(), "ab");
        // Raw-text identity: a differently escaped spelling is another id.
        assert_ne!(id, QueryId::string("ab").unwrap());
    }

    #[test]
    fn other_json_types_and_long_ids_are_rejected() {
        for bad in ["true", "null", "[1]", "{}", "false"] {
            assert_eq!(
                QueryId::from_json(bad),
                Err(QueryIdError::WrongType),
                "{bad}"
            );
        }
        assert_eq!(QueryId::from_json("nope"), Err(QueryIdError::NotJson));
        let long = format!("\"{}\"", "1".repeat(MAX_QUERY_ID_LEN));
        assert_eq!(QueryId::from_json(&long), Err(QueryIdError::TooLong));
        let just_fits = format!("\"{}\"", "1".repeat(MAX_QUERY_ID_LEN - 2));
        assert!(QueryId::from_json(&just_fits).is_ok());
    }

    #[test]
    fn constructors_match_parsed_ids() {
        assert_eq!(QueryId::number(42), QueryId::from_json("42").unwrap());
        assert_eq!(
            QueryId::string("42").unwrap(),
            QueryId::from_json("\"42\"").unwrap()
        );
        assert_eq!(QueryId::string("42").unwrap().kind(), QueryIdKind::String);
    }

    #[test]
    fn hash_eq_detect_duplicates_by_raw_text() {
        let mut seen = HashSet::new();
        assert!(seen.insert(QueryId::from_json("\"1\"").unwrap()));
        assert!(!seen.insert(QueryId::from_json("\"1\"").unwrap()));
        assert!(seen.insert(QueryId::from_json("1").unwrap()));
        assert!(!seen.insert(QueryId::number(1)));
        assert_eq!(seen.len(), 2);
    }

    #[test]
    fn serializes_as_its_json_value() {
        let n = serde_json::to_string(&QueryId::from_json("7").unwrap()).unwrap();
        assert_eq!(n, "7");
        let s = serde_json::to_string(&QueryId::from_json("\"7\"").unwrap()).unwrap();
        assert_eq!(s, "\"7\"");
    }
}
