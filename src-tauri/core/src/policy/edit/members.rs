//! Removing a whole member of sandbox.json (`ctl policy remove-field`: a field the
//! installed plugin rejects), with the scanner of `edit.rs`: every other byte is kept.

use super::{find, finish, scan, splice, EditOutcome, Found, Node, PolicyError};

/// Removes the member at `key_path` (every duplicate of it); `Unchanged` when the file
/// has none. The result must still be a valid file.
pub fn remove_member(text: &str, key_path: &[&str]) -> Result<EditOutcome, PolicyError> {
    let Some((key, parents)) = key_path.split_last() else {
        return Ok(EditOutcome::Unchanged);
    };
    let mut out = text.to_owned();
    loop {
        let root = scan(&out)?;
        let object = match parents {
            [] => &root,
            _ => match find(&out, &root, parents)? {
                Found::Value(Node::Object(object)) => object,
                _ => break,
            },
        };
        let Some(i) = object.members.iter().position(|m| m.key == *key) else {
            break;
        };
        let member = &object.members[i];
        let previous = i.checked_sub(1).map(|p| &object.members[p]);
        out = match (object.members.get(i + 1), previous) {
            // Up to the next key: the member, its comma and the space after it.
            (Some(next), _) => splice(&out, member.key_start, next.key_start, ""),
            (None, Some(previous)) => splice(&out, previous.value.end(), member.value.end(), ""),
            (None, None) => splice(&out, object.start, object.end, "{}"),
        };
    }
    if out == text {
        Ok(EditOutcome::Unchanged)
    } else {
        finish(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn removed(text: &str, key_path: &[&str]) -> String {
        match remove_member(text, key_path) {
            Ok(EditOutcome::Changed(text)) => text,
            other => panic!("expected a change, got {other:?}"),
        }
    }

    #[test]
    fn a_member_goes_with_its_comma_and_the_rest_keeps_its_bytes() {
        let text = "{\n  \"filesystem\": {\n    \"denyReadAlways\": [\"~/.ssh\"],\n    \"allowWrite\": [\"out\"]\n  },\n  \"shell\": {\"readAccess\": \"policy\"}\n}\n";
        assert_eq!(
            removed(text, &["filesystem", "denyReadAlways"]),
            "{\n  \"filesystem\": {\n    \"allowWrite\": [\"out\"]\n  },\n  \"shell\": {\"readAccess\": \"policy\"}\n}\n"
        );
        assert_eq!(
            removed(text, &["shell"]),
            "{\n  \"filesystem\": {\n    \"denyReadAlways\": [\"~/.ssh\"],\n    \"allowWrite\": [\"out\"]\n  }\n}\n"
        );
        assert_eq!(
            removed(
                r#"{"filesystem": {"denyWriteAlways": []}}"#,
                &["filesystem", "denyWriteAlways"]
            ),
            r#"{"filesystem": {}}"#
        );
        assert_eq!(
            remove_member(text, &["windows"]).expect("no error"),
            EditOutcome::Unchanged
        );
    }
}
