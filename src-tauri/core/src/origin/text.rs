//! Command lines as text for people: words quoted the way a shell would read them back,
//! characters a terminal or a page could be fooled by written as escapes, and long text
//! shortened in the middle.

/// `word` made safe to print: control characters and the Unicode marks that reorder or
/// hide text (bidi overrides, zero-width characters) become visible escapes, so a program
/// cannot make its command line look like something else on a page or in a terminal.
pub fn printable(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    for c in word.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2069}'
            | '\u{feff}' => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// One word as a shell would read it back: bare when it is plain, else single-quoted
/// (double-quoted when it holds a single quote).
pub fn quote(word: &str) -> String {
    let word = printable(word);
    let plain = !word.is_empty()
        && word.chars().all(|c| {
            c.is_alphanumeric()
                || matches!(
                    c,
                    '-' | '_' | '.' | '/' | ':' | '=' | '+' | ',' | '@' | '%' | '~' | '*'
                )
        });
    if plain {
        word
    } else if !word.contains('\'') {
        format!("'{word}'")
    } else {
        let escaped = word
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('$', "\\$")
            .replace('`', "\\`");
        format!("\"{escaped}\"")
    }
}

/// Words joined as a command line, each quoted as needed.
pub fn join(words: &[String]) -> String {
    words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

/// `text` at most `max` characters long: the middle replaced by `…` when it is longer,
/// keeping more of the start than of the end (a command's name and first arguments say
/// most).
pub fn shorten_middle(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max || max < 3 {
        return text.to_owned();
    }
    let keep = max - 1;
    let head = keep * 3 / 5;
    let tail = keep - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(count - tail).collect();
    format!("{start}…{end}")
}

/// One word of a command line shortened for the one-line view: a long path keeps its
/// file name (`…/npm-cli.js`), any other long word is shortened in the middle.
pub fn short_word(word: &str, max: usize) -> String {
    if word.chars().count() <= max {
        return word.to_owned();
    }
    if word.starts_with('/') && !word.contains(char::is_whitespace) {
        if let Some((_, name)) = word.rsplit_once('/') {
            if !name.is_empty() && name.chars().count() + 2 <= max {
                return format!("…/{name}");
            }
        }
    }
    shorten_middle(word, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_as_a_shell_reads_them() {
        assert_eq!(quote("ci"), "ci");
        assert_eq!(quote("/usr/bin/node"), "/usr/bin/node");
        assert_eq!(quote("--max=3"), "--max=3");
        assert_eq!(quote("npm ci && npm test"), "'npm ci && npm test'");
        assert_eq!(quote("it's"), "\"it's\"");
        assert_eq!(quote("a\"$b'"), "\"a\\\"\\$b'\"");
        assert_eq!(quote(""), "''");
        assert_eq!(
            join(&["sh".into(), "-c".into(), "echo hi > f".into()]),
            "sh -c 'echo hi > f'"
        );
    }

    #[test]
    fn what_could_fool_a_reader_is_escaped() {
        assert_eq!(printable("a\nb\x1b[2Jc"), "a\\nb\\x1b[2Jc");
        assert_eq!(printable("evil\u{202e}txt.exe"), "evil\\u{202e}txt.exe");
        assert_eq!(printable("zero\u{200b}width"), "zero\\u{200b}width");
        assert_eq!(printable("ünïcödé ok"), "ünïcödé ok");
    }

    #[test]
    fn long_text_is_shortened_in_the_middle() {
        assert_eq!(shorten_middle("short", 10), "short");
        let long = "abcdefghijklmnopqrstuvwxyz";
        let short = shorten_middle(long, 11);
        assert_eq!(short.chars().count(), 11);
        assert_eq!(short, "abcdef…wxyz");
        assert_eq!(
            short_word("/usr/lib/node_modules/npm/bin/npm-cli.js", 20),
            "…/npm-cli.js"
        );
        assert_eq!(short_word("ci", 20), "ci");
        assert_eq!(shorten_middle("ééééééééééé", 5), "éé…éé");
    }
}
