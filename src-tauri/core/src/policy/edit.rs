//! Minimal, format-preserving edits of sandbox.json text: only the touched
//! array or value changes; every other byte is kept.

use std::path::Path;

use super::schema::{
    is_bool_path, is_string_list_path, parse_overrides, FsList, PolicyError, SandboxOverrides,
};

mod members;
pub use members::remove_member;

/// The result of an edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditOutcome {
    /// The new text of the file.
    Changed(String),
    /// The file already said that; nothing to write.
    Unchanged,
}

/// Label for errors in text whose file is not known here (callers relabel with
/// [`PolicyError::with_file`]).
const UNNAMED: &str = "sandbox.json";

fn edit_error(message: impl Into<String>) -> PolicyError {
    PolicyError::Edit {
        message: message.into(),
    }
}

// ---------------------------------------------------------------------------
// A small JSON scanner that records byte spans.

#[derive(Debug)]
struct ObjectNode {
    start: usize,
    end: usize,
    members: Vec<MemberNode>,
}

#[derive(Debug)]
struct MemberNode {
    key: String,
    key_start: usize,
    value: Node,
}

#[derive(Debug)]
struct ArrayNode {
    start: usize,
    end: usize,
    items: Vec<Node>,
}

#[derive(Debug)]
enum Node {
    Object(ObjectNode),
    Array(ArrayNode),
    String {
        start: usize,
        end: usize,
        value: String,
    },
    /// A number, `true`, `false` or `null`.
    Other {
        start: usize,
        end: usize,
    },
}

impl Node {
    fn start(&self) -> usize {
        match self {
            Node::Object(o) => o.start,
            Node::Array(a) => a.start,
            Node::String { start, .. } | Node::Other { start, .. } => *start,
        }
    }

    fn end(&self) -> usize {
        match self {
            Node::Object(o) => o.end,
            Node::Array(a) => a.end,
            Node::String { end, .. } | Node::Other { end, .. } => *end,
        }
    }
}

struct Scanner<'a> {
    text: &'a [u8],
    pos: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn fail<T>(&self, what: &str) -> Result<T, PolicyError> {
        Err(edit_error(format!("{what} at byte {}", self.pos)))
    }

    fn expect(&mut self, byte: u8) -> Result<(), PolicyError> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            self.fail(&format!("expected '{}'", char::from(byte)))
        }
    }

    fn value(&mut self) -> Result<Node, PolicyError> {
        self.skip_ws();
        match self.peek() {
            Some(b'{') => self.object().map(Node::Object),
            Some(b'[') => self.array().map(Node::Array),
            Some(b'"') => {
                let start = self.pos;
                let value = self.string()?;
                Ok(Node::String {
                    start,
                    end: self.pos,
                    value,
                })
            }
            Some(_) => {
                let start = self.pos;
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r')
                ) {
                    self.pos += 1;
                }
                if self.pos == start {
                    return self.fail("expected a value");
                }
                Ok(Node::Other {
                    start,
                    end: self.pos,
                })
            }
            None => self.fail("unexpected end of text"),
        }
    }

    fn object(&mut self) -> Result<ObjectNode, PolicyError> {
        let start = self.pos;
        self.expect(b'{')?;
        let mut members = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(ObjectNode {
                start,
                end: self.pos,
                members,
            });
        }
        loop {
            self.skip_ws();
            let key_start = self.pos;
            let key = self.string()?;
            self.skip_ws();
            self.expect(b':')?;
            let value = self.value()?;
            members.push(MemberNode {
                key,
                key_start,
                value,
            });
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(ObjectNode {
                        start,
                        end: self.pos,
                        members,
                    });
                }
                _ => return self.fail("expected ',' or '}'"),
            }
        }
    }

    fn array(&mut self) -> Result<ArrayNode, PolicyError> {
        let start = self.pos;
        self.expect(b'[')?;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(ArrayNode {
                start,
                end: self.pos,
                items,
            });
        }
        loop {
            items.push(self.value()?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(ArrayNode {
                        start,
                        end: self.pos,
                        items,
                    });
                }
                _ => return self.fail("expected ',' or ']'"),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, PolicyError> {
        let digits = self
            .text
            .get(self.pos..self.pos + 4)
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|d| u32::from_str_radix(d, 16).ok());
        match digits {
            Some(value) => {
                self.pos += 4;
                Ok(value)
            }
            None => self.fail("bad \\u escape"),
        }
    }

    fn string(&mut self) -> Result<String, PolicyError> {
        self.expect(b'"')?;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(byte) = self.peek() else {
                return self.fail("unterminated string");
            };
            self.pos += 1;
            match byte {
                b'"' => break,
                b'\\' => {
                    let Some(escape) = self.peek() else {
                        return self.fail("unterminated escape");
                    };
                    self.pos += 1;
                    let decoded = match escape {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let first = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&first)
                                && self.text.get(self.pos..self.pos + 2) == Some(b"\\u")
                            {
                                let save = self.pos;
                                self.pos += 2;
                                let second = self.hex4()?;
                                if (0xDC00..0xE000).contains(&second) {
                                    0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                                } else {
                                    self.pos = save;
                                    first
                                }
                            } else {
                                first
                            };
                            char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER)
                        }
                        _ => return self.fail("bad escape"),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(decoded.encode_utf8(&mut buf).as_bytes());
                }
                other => out.push(other),
            }
        }
        String::from_utf8(out).map_err(|_| edit_error("string is not UTF-8"))
    }
}

fn scan(text: &str) -> Result<ObjectNode, PolicyError> {
    let mut scanner = Scanner {
        text: text.as_bytes(),
        pos: 0,
    };
    let root = scanner.value()?;
    scanner.skip_ws();
    if scanner.pos != text.len() {
        return scanner.fail("trailing text");
    }
    match root {
        Node::Object(object) => Ok(object),
        _ => Err(edit_error("the root is not an object")),
    }
}

// ---------------------------------------------------------------------------
// Rendering new text in the file's own style.

struct Style {
    unit: String,
    newline: &'static str,
}

impl Style {
    fn of(text: &str) -> Self {
        let unit = text
            .lines()
            .map(|line| {
                let len = line.len() - line.trim_start_matches([' ', '\t']).len();
                (&line[..len], len < line.trim_end_matches('\r').len())
            })
            .find(|(indent, has_content)| !indent.is_empty() && *has_content)
            .map_or_else(|| "  ".to_string(), |(indent, _)| indent.to_string());
        let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
        Self { unit, newline }
    }
}

/// The leading whitespace of the line holding byte `pos`.
fn line_indent(text: &str, pos: usize) -> &str {
    let line_start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

fn json_string(value: &str) -> Result<String, PolicyError> {
    serde_json::to_string(value).map_err(|error| edit_error(error.to_string()))
}

#[derive(Clone, Copy)]
enum Leaf<'a> {
    /// A new array holding one string.
    Entry(&'a str),
    Bool(bool),
}

impl Leaf<'_> {
    fn render(self) -> Result<String, PolicyError> {
        Ok(match self {
            Leaf::Entry(entry) => format!("[{}]", json_string(entry)?),
            Leaf::Bool(value) => value.to_string(),
        })
    }
}

/// `"k1": {"k2": leaf}`, multi-line when not `inline`; `indent` is the
/// indentation of the line the member starts on.
fn render_member(
    keys: &[&str],
    leaf: Leaf<'_>,
    indent: &str,
    style: &Style,
    inline: bool,
) -> Result<String, PolicyError> {
    let Some((first, rest)) = keys.split_first() else {
        return Err(edit_error("empty key path"));
    };
    let key = json_string(first)?;
    if rest.is_empty() {
        return Ok(format!("{key}: {}", leaf.render()?));
    }
    let inner_indent = format!("{indent}{}", style.unit);
    let inner = render_member(rest, leaf, &inner_indent, style, inline)?;
    Ok(if inline {
        format!("{key}: {{{inner}}}")
    } else {
        let nl = style.newline;
        format!("{key}: {{{nl}{inner_indent}{inner}{nl}{indent}}}")
    })
}

fn splice(text: &str, start: usize, end: usize, insert: &str) -> String {
    let mut out = String::with_capacity(text.len() + insert.len());
    out.push_str(&text[..start]);
    out.push_str(insert);
    out.push_str(&text[end..]);
    out
}

fn is_inline(text: &str, object: &ObjectNode) -> Option<bool> {
    let last = object.members.last()?;
    Some(!text[object.start..last.key_start].contains('\n'))
}

/// Insert the member chain `keys` (ending in `leaf`) at the end of `object`.
fn insert_member(
    text: &str,
    object: &ObjectNode,
    keys: &[&str],
    leaf: Leaf<'_>,
    inline_context: bool,
) -> Result<String, PolicyError> {
    let style = Style::of(text);
    if let (Some(last), Some(inline)) = (object.members.last(), is_inline(text, object)) {
        let at = last.value.end();
        let insert = if inline {
            format!(", {}", render_member(keys, leaf, "", &style, true)?)
        } else {
            let indent = line_indent(text, last.key_start);
            let member = render_member(keys, leaf, indent, &style, false)?;
            format!(",{}{indent}{member}", style.newline)
        };
        return Ok(splice(text, at, at, &insert));
    }
    let replacement = if inline_context {
        format!("{{{}}}", render_member(keys, leaf, "", &style, true)?)
    } else {
        let outer = line_indent(text, object.start);
        let indent = format!("{outer}{}", style.unit);
        let member = render_member(keys, leaf, &indent, &style, false)?;
        let nl = style.newline;
        format!("{{{nl}{indent}{member}{nl}{outer}}}")
    };
    Ok(splice(text, object.start, object.end, &replacement))
}

enum Found<'n> {
    Value(&'n Node),
    /// The path stops at `object`, which lacks `keys[0]`.
    Missing {
        object: &'n ObjectNode,
        keys_from: usize,
        inline_context: bool,
    },
}

/// Follow `key_path` from the root (the last of duplicate keys wins, as in JSON.parse).
fn find<'n>(text: &str, root: &'n ObjectNode, key_path: &[&str]) -> Result<Found<'n>, PolicyError> {
    let mut object = root;
    let mut inline_context = false;
    for (depth, key) in key_path.iter().enumerate() {
        inline_context = is_inline(text, object).unwrap_or(inline_context);
        let Some(member) = object.members.iter().rev().find(|m| m.key == *key) else {
            return Ok(Found::Missing {
                object,
                keys_from: depth,
                inline_context,
            });
        };
        if depth + 1 == key_path.len() {
            return Ok(Found::Value(&member.value));
        }
        match &member.value {
            Node::Object(inner) => object = inner,
            _ => return Err(edit_error(format!("{key} is not an object"))),
        }
    }
    Err(edit_error("empty key path"))
}

fn validate_input(text: &str) -> Result<SandboxOverrides, PolicyError> {
    parse_overrides(text, Path::new(UNNAMED))
}

fn finish(output: String) -> Result<EditOutcome, PolicyError> {
    parse_overrides(&output, Path::new(UNNAMED))
        .map_err(|error| edit_error(format!("the edit would produce an invalid file: {error}")))?;
    Ok(EditOutcome::Changed(output))
}

fn new_document(key_path: &[&str], leaf: Leaf<'_>) -> Result<EditOutcome, PolicyError> {
    let style = Style {
        unit: "  ".to_string(),
        newline: "\n",
    };
    let member = render_member(key_path, leaf, &style.unit, &style, false)?;
    finish(format!("{{\n  {member}\n}}\n"))
}

/// Set `key_path` to `leaf` (creating what is missing); `on_found` edits an existing value.
fn upsert(
    text: &str,
    key_path: &[&str],
    leaf: Leaf<'_>,
    on_found: impl FnOnce(&Node) -> Result<String, PolicyError>,
) -> Result<EditOutcome, PolicyError> {
    let root = scan(text)?;
    let output = match find(text, &root, key_path)? {
        Found::Value(node) => on_found(node)?,
        Found::Missing {
            object,
            keys_from,
            inline_context,
        } => insert_member(text, object, &key_path[keys_from..], leaf, inline_context)?,
    };
    finish(output)
}

fn check_list_path(key_path: &[&str]) -> Result<(), PolicyError> {
    if is_string_list_path(key_path) {
        Ok(())
    } else {
        Err(PolicyError::InvalidKeyPath {
            key_path: key_path.join("."),
            expected: "string list",
        })
    }
}

/// Append `entry` to the string array at `key_path` (e.g. `["network", "allowedDomains"]`).
/// `None` text means the file does not exist yet.
pub fn add_string(
    text: Option<&str>,
    key_path: &[&str],
    entry: &str,
) -> Result<EditOutcome, PolicyError> {
    check_list_path(key_path)?;
    let Some(text) = text else {
        return new_document(key_path, Leaf::Entry(entry));
    };
    let current = validate_input(text)?;
    if current
        .string_list(key_path)
        .is_some_and(|list| list.iter().any(|e| e == entry))
    {
        return Ok(EditOutcome::Unchanged);
    }
    upsert(text, key_path, Leaf::Entry(entry), |node| {
        let Node::Array(array) = node else {
            return Err(edit_error(format!(
                "{} is not an array",
                key_path.join(".")
            )));
        };
        let literal = json_string(entry)?;
        let (Some(first), Some(last)) = (array.items.first(), array.items.last()) else {
            return Ok(splice(
                text,
                array.start,
                array.end,
                &format!("[{literal}]"),
            ));
        };
        let insert = if text[array.start..last.start()].contains('\n') {
            let indent = line_indent(text, last.start());
            format!(",{}{indent}{literal}", Style::of(text).newline)
        } else {
            let separator = match array.items.get(1) {
                Some(second) => &text[first.end()..second.start()],
                None => ", ",
            };
            format!("{separator}{literal}")
        };
        Ok(splice(text, last.end(), last.end(), &insert))
    })
}

/// Remove every occurrence of `entry` from the string array at `key_path`.
pub fn remove_string(
    text: &str,
    key_path: &[&str],
    entry: &str,
) -> Result<EditOutcome, PolicyError> {
    check_list_path(key_path)?;
    let current = validate_input(text)?;
    if !current
        .string_list(key_path)
        .is_some_and(|list| list.iter().any(|e| e == entry))
    {
        return Ok(EditOutcome::Unchanged);
    }
    let mut output = text.to_string();
    loop {
        let root = scan(&output)?;
        let Found::Value(Node::Array(array)) = find(&output, &root, key_path)? else {
            return Err(edit_error(format!(
                "{} is not an array",
                key_path.join(".")
            )));
        };
        let Some(index) = array
            .items
            .iter()
            .position(|item| matches!(item, Node::String { value, .. } if value == entry))
        else {
            break;
        };
        let item = &array.items[index];
        output = if array.items.len() == 1 {
            splice(&output, array.start, array.end, "[]")
        } else if let Some(next) = array.items.get(index + 1) {
            splice(&output, item.start(), next.start(), "")
        } else {
            let previous = &array.items[index - 1];
            splice(&output, previous.end(), item.end(), "")
        };
    }
    finish(output)
}

/// Replace the first occurrence of `old` in the string array at `key_path` with `new`,
/// in place: the entry keeps its position and every other byte of the text is kept.
/// `old` must be listed; `new` must not be listed already (that would make a duplicate).
pub fn replace_string(
    text: &str,
    key_path: &[&str],
    old: &str,
    new: &str,
) -> Result<EditOutcome, PolicyError> {
    check_list_path(key_path)?;
    let current = validate_input(text)?;
    let listed = current.string_list(key_path).unwrap_or(&[]);
    if !listed.iter().any(|e| e == old) {
        return Err(edit_error(format!(
            "{old:?} is not in {}",
            key_path.join(".")
        )));
    }
    if old == new {
        return Ok(EditOutcome::Unchanged);
    }
    if listed.iter().any(|e| e == new) {
        return Err(edit_error(format!(
            "{new:?} is already in {}; remove {old:?} instead",
            key_path.join(".")
        )));
    }
    let root = scan(text)?;
    let Found::Value(Node::Array(array)) = find(text, &root, key_path)? else {
        return Err(edit_error(format!(
            "{} is not an array",
            key_path.join(".")
        )));
    };
    let Some(item) = array
        .items
        .iter()
        .find(|item| matches!(item, Node::String { value, .. } if value == old))
    else {
        return Err(edit_error(format!(
            "{old:?} is not in {}",
            key_path.join(".")
        )));
    };
    finish(splice(text, item.start(), item.end(), &json_string(new)?))
}

/// Add `entry` to a filesystem list. `None` text means the file does not exist yet.
pub fn add_entry(
    text: Option<&str>,
    list: FsList,
    entry: &str,
) -> Result<EditOutcome, PolicyError> {
    add_string(text, &list.key_path(), entry)
}

/// Remove `entry` from a filesystem list (every occurrence).
pub fn remove_entry(text: &str, list: FsList, entry: &str) -> Result<EditOutcome, PolicyError> {
    remove_string(text, &list.key_path(), entry)
}

/// Set a boolean (`["enabled"]`, `["network", "allowNetwork"]`, …). `None`
/// text means the file does not exist yet.
pub fn set_bool(
    text: Option<&str>,
    key_path: &[&str],
    value: bool,
) -> Result<EditOutcome, PolicyError> {
    if !is_bool_path(key_path) {
        return Err(PolicyError::InvalidKeyPath {
            key_path: key_path.join("."),
            expected: "boolean",
        });
    }
    let Some(text) = text else {
        return new_document(key_path, Leaf::Bool(value));
    };
    let current = validate_input(text)?;
    if current.bool_field(key_path) == Some(value) {
        return Ok(EditOutcome::Unchanged);
    }
    upsert(text, key_path, Leaf::Bool(value), |node| {
        Ok(splice(text, node.start(), node.end(), &value.to_string()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::defaults::BUNDLED_SANDBOX_JSON;

    fn changed(outcome: Result<EditOutcome, PolicyError>) -> String {
        match outcome {
            Ok(EditOutcome::Changed(text)) => text,
            other => panic!("expected a change, got {other:?}"),
        }
    }

    #[test]
    fn creates_a_missing_file() {
        assert_eq!(
            changed(add_entry(None, FsList::AllowWrite, "x")),
            "{\n  \"filesystem\": {\n    \"allowWrite\": [\"x\"]\n  }\n}\n"
        );
        assert_eq!(
            changed(set_bool(None, &["network", "allowNetwork"], true)),
            "{\n  \"network\": {\n    \"allowNetwork\": true\n  }\n}\n"
        );
        assert_eq!(
            changed(set_bool(None, &["enabled"], false)),
            "{\n  \"enabled\": false\n}\n"
        );
    }

    #[test]
    fn appends_to_a_multi_line_array() {
        let text = "{\n  \"filesystem\": {\n    \"allowWrite\": [\n      \"a\",\n      \"b\"\n    ],\n    \"denyRead\": []\n  }\n}\n";
        let out = changed(add_entry(Some(text), FsList::AllowWrite, "/tmp/c d\"e"));
        assert_eq!(
            out,
            "{\n  \"filesystem\": {\n    \"allowWrite\": [\n      \"a\",\n      \"b\",\n      \"/tmp/c d\\\"e\"\n    ],\n    \"denyRead\": []\n  }\n}\n"
        );
    }

    #[test]
    fn appends_to_single_line_arrays_keeping_their_style() {
        let out = changed(add_entry(
            Some(BUNDLED_SANDBOX_JSON),
            FsList::AllowWrite,
            "/srv",
        ));
        assert_eq!(
            out,
            BUNDLED_SANDBOX_JSON.replace(
                "\"allowWrite\": [\".\", \"/dev/null\"]",
                "\"allowWrite\": [\".\", \"/dev/null\", \"/srv\"]"
            )
        );
        let text = r#"{"filesystem":{"allowRead":["a","b"]}}"#;
        assert_eq!(
            changed(add_entry(Some(text), FsList::AllowRead, "c")),
            r#"{"filesystem":{"allowRead":["a","b","c"]}}"#
        );
        let text = r#"{"filesystem": {"allowRead": [ "a" ]}}"#;
        assert_eq!(
            changed(add_entry(Some(text), FsList::AllowRead, "c")),
            r#"{"filesystem": {"allowRead": [ "a", "c" ]}}"#
        );
    }

    #[test]
    fn fills_an_empty_array() {
        let text = "{\n  \"filesystem\": {\n    \"allowWrite\": []\n  }\n}\n";
        assert_eq!(
            changed(add_entry(Some(text), FsList::AllowWrite, "x")),
            "{\n  \"filesystem\": {\n    \"allowWrite\": [\"x\"]\n  }\n}\n"
        );
        let text = "{\"filesystem\": {\"allowWrite\": [\n]}}";
        assert_eq!(
            changed(add_entry(Some(text), FsList::AllowWrite, "x")),
            "{\"filesystem\": {\"allowWrite\": [\"x\"]}}"
        );
    }

    #[test]
    fn inserts_missing_keys_and_objects() {
        // Missing array key: at the end of filesystem, indented like its siblings.
        let text =
            "{\n\t\"enabled\": true,\n\t\"filesystem\": {\n\t\t\"denyRead\": [\"/home\"]\n\t}\n}";
        assert_eq!(
            changed(add_entry(Some(text), FsList::AllowWrite, "/w")),
            "{\n\t\"enabled\": true,\n\t\"filesystem\": {\n\t\t\"denyRead\": [\"/home\"],\n\t\t\"allowWrite\": [\"/w\"]\n\t}\n}"
        );
        // Missing filesystem object: at the end of the root.
        let text = "{\n    \"enabled\": true\n}\n";
        assert_eq!(
            changed(add_entry(Some(text), FsList::DenyWrite, "*.secret")),
            "{\n    \"enabled\": true,\n    \"filesystem\": {\n        \"denyWrite\": [\"*.secret\"]\n    }\n}\n"
        );
        // Single-line objects stay single-line.
        let text = r#"{"enabled": true}"#;
        assert_eq!(
            changed(add_entry(Some(text), FsList::AllowRead, "~/x")),
            r#"{"enabled": true, "filesystem": {"allowRead": ["~/x"]}}"#
        );
        // An empty nested object inside a multi-line file.
        let text = "{\n  \"enabled\": true,\n  \"filesystem\": {}\n}\n";
        assert_eq!(
            changed(add_entry(Some(text), FsList::AllowRead, "a")),
            "{\n  \"enabled\": true,\n  \"filesystem\": {\n    \"allowRead\": [\"a\"]\n  }\n}\n"
        );
    }

    #[test]
    fn edits_an_empty_root_object() {
        assert_eq!(
            changed(add_entry(Some("{}"), FsList::AllowWrite, "x")),
            "{\n  \"filesystem\": {\n    \"allowWrite\": [\"x\"]\n  }\n}"
        );
        assert_eq!(
            changed(add_entry(Some("{}\n"), FsList::AllowWrite, "x")),
            "{\n  \"filesystem\": {\n    \"allowWrite\": [\"x\"]\n  }\n}\n"
        );
        assert_eq!(
            changed(set_bool(Some("{ }\n"), &["enabled"], false)),
            "{\n  \"enabled\": false\n}\n"
        );
    }

    #[test]
    fn keeps_crlf_line_endings() {
        let text = "{\r\n  \"filesystem\": {\r\n    \"allowWrite\": [\r\n      \"a\"\r\n    ]\r\n  }\r\n}\r\n";
        assert_eq!(
            changed(add_entry(Some(text), FsList::AllowWrite, "b")),
            "{\r\n  \"filesystem\": {\r\n    \"allowWrite\": [\r\n      \"a\",\r\n      \"b\"\r\n    ]\r\n  }\r\n}\r\n"
        );
    }

    #[test]
    fn duplicate_add_is_a_no_op() {
        assert_eq!(
            add_entry(Some(BUNDLED_SANDBOX_JSON), FsList::AllowWrite, "/dev/null").expect("valid"),
            EditOutcome::Unchanged
        );
        // Present in a duplicate key that JSON.parse ignores: the last one counts.
        let text = r#"{"filesystem": {"allowRead": ["a"], "allowRead": ["b"]}}"#;
        assert_eq!(
            changed(add_entry(Some(text), FsList::AllowRead, "a")),
            r#"{"filesystem": {"allowRead": ["a"], "allowRead": ["b", "a"]}}"#
        );
    }

    #[test]
    fn removes_entries() {
        let text = "{\n  \"filesystem\": {\n    \"allowWrite\": [\n      \"a\",\n      \"b\",\n      \"c\"\n    ]\n  }\n}\n";
        let first = "{\n  \"filesystem\": {\n    \"allowWrite\": [\n      \"b\",\n      \"c\"\n    ]\n  }\n}\n";
        let last = "{\n  \"filesystem\": {\n    \"allowWrite\": [\n      \"a\",\n      \"b\"\n    ]\n  }\n}\n";
        let middle = "{\n  \"filesystem\": {\n    \"allowWrite\": [\n      \"a\",\n      \"c\"\n    ]\n  }\n}\n";
        assert_eq!(changed(remove_entry(text, FsList::AllowWrite, "a")), first);
        assert_eq!(changed(remove_entry(text, FsList::AllowWrite, "c")), last);
        assert_eq!(changed(remove_entry(text, FsList::AllowWrite, "b")), middle);

        let text = r#"{"filesystem": {"allowRead": ["a", "b", "a"], "denyRead": ["a"]}}"#;
        assert_eq!(
            changed(remove_entry(text, FsList::AllowRead, "a")),
            r#"{"filesystem": {"allowRead": ["b"], "denyRead": ["a"]}}"#
        );
        let text = "{\"filesystem\": {\"allowRead\": [\n  \"only\"\n]}}";
        assert_eq!(
            changed(remove_entry(text, FsList::AllowRead, "only")),
            "{\"filesystem\": {\"allowRead\": []}}"
        );
        assert_eq!(
            remove_entry(text, FsList::AllowRead, "absent").expect("valid"),
            EditOutcome::Unchanged
        );
        assert_eq!(
            remove_entry("{}", FsList::DenyWrite, "x").expect("valid"),
            EditOutcome::Unchanged
        );
        // Escaped strings compare by value.
        let text = r#"{"filesystem": {"allowRead": ["\/tmp\u0020x", "y"]}}"#;
        assert_eq!(
            changed(remove_entry(text, FsList::AllowRead, "/tmp x")),
            r#"{"filesystem": {"allowRead": ["y"]}}"#
        );
    }

    #[test]
    fn replaces_an_entry_in_place() {
        let text = "{\n  \"filesystem\": {\n    \"allowWrite\": [\n      \"a\",  \"b\" ,\n      \"c\"\n    ]\n  },\n  \"network\": {\"allowedDomains\": [\"x.org\"]}\n}\n";
        let out = changed(replace_string(
            text,
            &["filesystem", "allowWrite"],
            "b",
            "~/.cache/\"q\"",
        ));
        assert_eq!(
            out,
            text.replacen("\"b\"", "\"~/.cache/\\\"q\\\"\"", 1),
            "only the entry's own bytes change"
        );
        let parsed = parse_overrides(&out, Path::new("s.json")).unwrap();
        assert_eq!(
            parsed.filesystem.unwrap().list(FsList::AllowWrite),
            Some(&["a".to_owned(), "~/.cache/\"q\"".to_owned(), "c".to_owned()][..])
        );
        let crlf = "{\r\n  \"network\": {\"allowedDomains\": [\"x.org\", \"y.org\"]}\r\n}";
        assert_eq!(
            changed(replace_string(
                crlf,
                &["network", "allowedDomains"],
                "x.org",
                "z.org"
            )),
            crlf.replacen("x.org", "z.org", 1)
        );
        assert_eq!(
            replace_string(text, &["filesystem", "allowWrite"], "a", "a").unwrap(),
            EditOutcome::Unchanged
        );
        for (old, new) in [("missing", "z"), ("a", "c")] {
            let err = replace_string(text, &["filesystem", "allowWrite"], old, new).unwrap_err();
            assert!(err.to_string().contains(&format!("{old:?}")), "{err}");
        }
        assert!(replace_string(text, &["enabled"], "a", "b").is_err());
    }

    #[test]
    fn sets_booleans() {
        let out = changed(set_bool(
            Some(BUNDLED_SANDBOX_JSON),
            &["network", "allowNetwork"],
            true,
        ));
        assert_eq!(
            out,
            BUNDLED_SANDBOX_JSON.replace("\"allowNetwork\": false", "\"allowNetwork\": true")
        );
        assert_eq!(
            set_bool(Some(BUNDLED_SANDBOX_JSON), &["enabled"], true).expect("valid"),
            EditOutcome::Unchanged
        );
        let text = "{\n  \"filesystem\": {\"allowRead\": []}\n}";
        assert_eq!(
            changed(set_bool(Some(text), &["network", "allowLocalBinding"], false)),
            "{\n  \"filesystem\": {\"allowRead\": []},\n  \"network\": {\n    \"allowLocalBinding\": false\n  }\n}"
        );
        assert_eq!(
            changed(set_bool(Some(r#"{"enabled":true}"#), &["enabled"], false)),
            r#"{"enabled":false}"#
        );
    }

    #[test]
    fn network_lists_are_editable_too() {
        let out = changed(add_string(
            Some(BUNDLED_SANDBOX_JSON),
            &["network", "allowedDomains"],
            "example.com",
        ));
        assert_eq!(
            out,
            BUNDLED_SANDBOX_JSON.replace(
                "\"allowedDomains\": []",
                "\"allowedDomains\": [\"example.com\"]"
            )
        );
    }

    #[test]
    fn refuses_invalid_input_and_bad_key_paths() {
        assert!(matches!(
            add_entry(Some("{\"filesystem\": {}},"), FsList::AllowRead, "a"),
            Err(PolicyError::Syntax { .. })
        ));
        assert!(matches!(
            add_entry(Some(r#"{"filesystem": {"x": []}}"#), FsList::AllowRead, "a"),
            Err(PolicyError::Schema { .. })
        ));
        assert!(matches!(
            remove_entry("[]", FsList::AllowRead, "a"),
            Err(PolicyError::Schema { .. })
        ));
        assert!(matches!(
            set_bool(Some(r#"{"enabled": "no"}"#), &["enabled"], true),
            Err(PolicyError::Schema { .. })
        ));
        assert!(matches!(
            set_bool(Some("{}"), &["network", "allowedDomains"], true),
            Err(PolicyError::InvalidKeyPath { .. })
        ));
        assert!(matches!(
            add_string(Some("{}"), &["enabled"], "x"),
            Err(PolicyError::InvalidKeyPath { .. })
        ));
        assert!(matches!(
            add_string(Some(""), &["filesystem", "allowRead"], "x"),
            Err(PolicyError::Syntax { .. })
        ));
    }

    #[test]
    fn unicode_and_escapes_survive() {
        let text = "{\"filesystem\": {\"allowRead\": [\"/ä/ö\"]}, \"enabled\": true}";
        assert_eq!(
            changed(add_entry(Some(text), FsList::AllowRead, "/日本\n")),
            "{\"filesystem\": {\"allowRead\": [\"/ä/ö\", \"/日本\\n\"]}, \"enabled\": true}"
        );
        assert_eq!(
            add_entry(Some(text), FsList::AllowRead, "/ä/ö").expect("valid"),
            EditOutcome::Unchanged
        );
    }
}
