//! Response lines written back to landstrip.

use super::QueryId;

/// The answer to a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Let the held syscall proceed.
    Allow,
    /// Fail the held syscall with EACCES.
    Deny,
}

impl Action {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
        }
    }
}

/// `{"query_id":<raw id>,"action":"allow"}\n`, echoing the id's JSON type and text.
pub fn response_line(id: &QueryId, action: Action) -> Vec<u8> {
    let mut out = Vec::with_capacity(RESPONSE_OVERHEAD + id.raw().len());
    write_response(&mut out, id, action);
    out
}

/// Appends a response line to `out` (for batching several answers in one write).
pub fn write_response(out: &mut Vec<u8>, id: &QueryId, action: Action) {
    out.extend_from_slice(b"{\"query_id\":");
    out.extend_from_slice(id.raw().as_bytes());
    out.extend_from_slice(b",\"action\":\"");
    out.extend_from_slice(action.as_str().as_bytes());
    out.extend_from_slice(b"\"}\n");
}

/// Bytes of a response besides the id: the fixed parts plus the longest action.
const RESPONSE_OVERHEAD: usize = 12 + 11 + 5 + 3;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echoes_string_ids_as_strings() {
        let id = QueryId::from_json("\"1\"").unwrap();
        assert_eq!(
            response_line(&id, Action::Allow),
            b"{\"query_id\":\"1\",\"action\":\"allow\"}\n"
        );
        assert_eq!(
            response_line(&id, Action::Deny),
            b"{\"query_id\":\"1\",\"action\":\"deny\"}\n"
        );
    }

    #[test]
    fn echoes_numeric_ids_as_numbers() {
        let id = QueryId::from_json("7").unwrap();
        assert_eq!(
            response_line(&id, Action::Allow),
            b"{\"query_id\":7,\"action\":\"allow\"}\n"
        );
    }

    #[test]
    fn response_is_valid_json_with_the_same_id_value() {
        for raw in [
            "7",
            "\"7\"",
            "\"00a\"",
            "\"a\\\"b\"",
            "123456789012345678901234567890",
        ] {
            let id = QueryId::from_json(raw).unwrap();
            let line = response_line(&id, Action::Deny);
            assert!(line.len() <= RESPONSE_OVERHEAD + raw.len());
            assert_eq!(line.last(), Some(&b'\n'));
            let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
            let sent: serde_json::Value = serde_json::from_str(raw).unwrap();
            assert_eq!(v["query_id"], sent, "{raw}");
            assert_eq!(v["action"], "deny");
        }
    }

    #[test]
    fn write_response_appends() {
        let mut out = Vec::new();
        write_response(&mut out, &QueryId::number(1), Action::Allow);
        write_response(&mut out, &QueryId::number(2), Action::Deny);
        assert_eq!(
            out,
            b"{\"query_id\":1,\"action\":\"allow\"}\n{\"query_id\":2,\"action\":\"deny\"}\n"
        );
    }
}
