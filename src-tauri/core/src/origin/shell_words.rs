//! A shell command string split the way a shell would split it, closely enough to find
//! its words (quotes and backslashes undone) and where each sits in the text: the masker
//! replaces secrets in place, and program naming reads the first word. Not a shell
//! parser: expansions are left as they are written.

use std::ops::Range;

/// One word of a command string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The word with quotes and backslashes undone.
    pub value: String,
    /// Where it is in the text (bytes), quotes included.
    pub span: Range<usize>,
    /// The quote it started with, if any.
    pub quote: Option<char>,
}

/// A command string as simple commands (the words between `;`, `&`, `|`, newlines,
/// parentheses), each a list of words. Redirection operators end a word and are dropped.
pub fn split_commands(text: &str) -> Vec<Vec<Word>> {
    let mut commands = Vec::new();
    let mut words: Vec<Word> = Vec::new();
    let mut chars = text.char_indices().peekable();
    let mut current: Option<(String, usize, Option<char>)> = None;
    let flush =
        |current: &mut Option<(String, usize, Option<char>)>, words: &mut Vec<Word>, end: usize| {
            if let Some((value, start, quote)) = current.take() {
                words.push(Word {
                    value,
                    span: start..end,
                    quote,
                });
            }
        };
    while let Some((i, c)) = chars.next() {
        match c {
            ' ' | '\t' => flush(&mut current, &mut words, i),
            ';' | '&' | '|' | '\n' | '(' | ')' => {
                flush(&mut current, &mut words, i);
                if !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
            }
            '<' | '>' => flush(&mut current, &mut words, i),
            '\'' | '"' => {
                let (value, _, _) = current.get_or_insert_with(|| (String::new(), i, Some(c)));
                let mut closed = false;
                while let Some((_, q)) = chars.next() {
                    if q == c {
                        closed = true;
                        break;
                    }
                    if c == '"' && q == '\\' {
                        if let Some(&(_, next)) = chars.peek() {
                            if matches!(next, '"' | '\\' | '$' | '`') {
                                value.push(next);
                                chars.next();
                                continue;
                            }
                        }
                    }
                    value.push(q);
                }
                if !closed {
                    break;
                }
            }
            '\\' => {
                let (value, _, _) = current.get_or_insert_with(|| (String::new(), i, None));
                if let Some((_, next)) = chars.next() {
                    if next != '\n' {
                        value.push(next);
                    }
                }
            }
            c => current
                .get_or_insert_with(|| (String::new(), i, None))
                .0
                .push(c),
        }
    }
    flush(&mut current, &mut words, text.len());
    if !words.is_empty() {
        commands.push(words);
    }
    commands
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(text: &str) -> Vec<Vec<String>> {
        split_commands(text)
            .into_iter()
            .map(|c| c.into_iter().map(|w| w.value).collect())
            .collect()
    }

    #[test]
    fn commands_split_into_words() {
        assert_eq!(
            values("npm ci && npm test"),
            vec![vec!["npm", "ci"], vec!["npm", "test"]]
        );
        assert_eq!(
            values(r#"python3 -c "open(\"/x\",\"w\")"; true"#),
            vec![vec!["python3", "-c", r#"open("/x","w")"#], vec!["true"]]
        );
        assert_eq!(
            values("echo hi > ~/f.txt"),
            vec![vec!["echo", "hi", "~/f.txt"]]
        );
        assert_eq!(values("a 'b c'd e\\ f"), vec![vec!["a", "b cd", "e f"]]);
        assert_eq!(values("  "), Vec::<Vec<String>>::new());
    }

    #[test]
    fn spans_cover_the_written_word() {
        let text = r#"curl -H "Authorization: x" u"#;
        let words = &split_commands(text)[0];
        assert_eq!(&text[words[2].span.clone()], "\"Authorization: x\"");
        assert_eq!(words[2].quote, Some('"'));
        assert_eq!(&text[words[3].span.clone()], "u");
    }

    #[test]
    fn an_unclosed_quote_keeps_what_was_read() {
        assert_eq!(values("echo 'abc"), vec![vec!["echo", "abc"]]);
    }
}
