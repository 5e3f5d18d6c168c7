//! Splitting one connection's byte stream into lines.

use thiserror::Error;

/// Longest line accepted (without its terminator), in bytes.
pub const MAX_LINE: usize = 1 << 20;

/// Buffer capacity kept after a long line has been consumed.
const RETAINED_CAPACITY: usize = 64 * 1024;

/// A line grew beyond [`MAX_LINE`]; the connection should be dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("line longer than {MAX_LINE} bytes")]
pub struct LineTooLong;

/// Frames one connection's byte stream into newline-terminated lines.
///
/// Call [`push`](Self::push) with each read, then drain [`lines`](Self::lines)
/// (or [`next_line`](Self::next_line)) before the next push. Yielded lines have
/// no `\n`, no trailing `\r`, and are never blank. Each byte is scanned once.
#[derive(Debug, Default)]
pub struct LineFramer {
    buf: Vec<u8>,
    /// Offsets in `buf` of `\n`s not yet yielded start at `ends[next_end]`.
    ends: Vec<usize>,
    next_end: usize,
    /// Start of the first line not yet yielded.
    consumed: usize,
    /// Start of the unterminated tail (just after the last `\n`).
    tail: usize,
    /// Set once a line was too long; the framer then refuses all input.
    failed: bool,
}

impl LineFramer {
    /// An empty framer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends bytes read from the connection.
    ///
    /// Fails (and discards everything buffered) if any line, complete or not,
    /// exceeds [`MAX_LINE`]; every later push fails too.
    pub fn push(&mut self, data: &[u8]) -> Result<(), LineTooLong> {
        if self.failed {
            return Err(LineTooLong);
        }
        self.compact();
        let base = self.buf.len();
        self.buf.extend_from_slice(data);
        let mut line_start = self.tail;
        for (i, &b) in data.iter().enumerate() {
            if b == b'\n' {
                let end = base + i;
                if end - line_start > MAX_LINE {
                    return Err(self.fail());
                }
                self.ends.push(end);
                line_start = end + 1;
            }
        }
        self.tail = line_start;
        if self.buf.len() - line_start > MAX_LINE {
            return Err(self.fail());
        }
        Ok(())
    }

    /// The next complete line, if any.
    pub fn next_line(&mut self) -> Option<&[u8]> {
        self.lines().next()
    }

    /// Iterates the complete lines buffered so far.
    pub fn lines(&mut self) -> Lines<'_> {
        Lines {
            buf: &self.buf,
            ends: &self.ends,
            next_end: &mut self.next_end,
            consumed: &mut self.consumed,
        }
    }

    /// Gives back the space of lines already yielded: call it once the lines of a read are
    /// drained. Without it a connection that sent one long line and then went quiet (as
    /// most runs do between queries) would keep that line's buffer, up to
    /// [`MAX_LINE`], for as long as it stays connected.
    pub fn release(&mut self) {
        self.compact();
    }

    /// Bytes of an unterminated line buffered so far (e.g. to log at EOF).
    pub fn partial_len(&self) -> usize {
        self.buf.len() - self.tail
    }

    fn fail(&mut self) -> LineTooLong {
        self.failed = true;
        self.buf = Vec::new();
        self.ends = Vec::new();
        self.next_end = 0;
        self.consumed = 0;
        self.tail = 0;
        LineTooLong
    }

    /// Gives the buffers back when nothing is buffered: for a connection going quiet, so
    /// that an idle one keeps nothing of its last burst.
    pub fn release_all(&mut self) {
        self.compact();
        if self.buf.is_empty() {
            self.buf = Vec::new();
            self.ends = Vec::new();
        }
    }

    /// Drops yielded lines from the front of the buffer.
    fn compact(&mut self) {
        if self.consumed == 0 {
            return;
        }
        if self.consumed == self.buf.len() {
            // Common case: everything was yielded; no bytes to move.
            self.buf.clear();
            if self.buf.capacity() > RETAINED_CAPACITY {
                self.buf.shrink_to(RETAINED_CAPACITY);
            }
            self.ends.clear();
            self.tail = 0;
        } else {
            // Only happens once per partial line (consumed is 0 afterwards), so
            // a long line arriving in pieces is not moved repeatedly.
            self.buf.drain(..self.consumed);
            if self.buf.len() <= RETAINED_CAPACITY && self.buf.capacity() > RETAINED_CAPACITY {
                self.buf.shrink_to(RETAINED_CAPACITY);
            }
            self.ends.drain(..self.next_end);
            for end in &mut self.ends {
                *end -= self.consumed;
            }
            self.tail -= self.consumed;
        }
        self.next_end = 0;
        self.consumed = 0;
    }
}

/// Iterator over a [`LineFramer`]'s complete lines; see [`LineFramer::lines`].
#[derive(Debug)]
pub struct Lines<'a> {
    buf: &'a [u8],
    ends: &'a [usize],
    next_end: &'a mut usize,
    consumed: &'a mut usize,
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        loop {
            let end = *self.ends.get(*self.next_end)?;
            let start = *self.consumed;
            *self.next_end += 1;
            *self.consumed = end + 1;
            let mut line = self.buf.get(start..end)?;
            if let Some(stripped) = line.strip_suffix(b"\r") {
                line = stripped;
            }
            if !line.iter().all(u8::is_ascii_whitespace) {
                return Some(line);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(f: &mut LineFramer) -> Vec<Vec<u8>> {
        f.lines().map(<[u8]>::to_vec).collect()
    }

    #[test]
    fn release_all_keeps_nothing_of_a_burst_but_keeps_a_partial_line() {
        let mut f = LineFramer::new();
        let burst = b"{\"query_id\":\"1\"}\n".repeat(8 * 1024);
        f.push(&burst).unwrap();
        assert_eq!(drain(&mut f).len(), 8 * 1024);
        f.release();
        assert!(
            f.buf.capacity() > 0,
            "release alone keeps a buffer for the next burst"
        );
        f.release_all();
        assert_eq!((f.buf.capacity(), f.ends.capacity()), (0, 0));
        f.push(b"{\"part").unwrap();
        f.release_all();
        assert_eq!(f.partial_len(), 6, "a partial line is kept");
        f.push(b"\":1}\n").unwrap();
        assert_eq!(drain(&mut f), vec![b"{\"part\":1}".to_vec()]);
    }

    #[test]
    fn one_line_per_read() {
        let mut f = LineFramer::new();
        f.push(b"{\"a\":1}\n").unwrap();
        assert_eq!(drain(&mut f), vec![b"{\"a\":1}".to_vec()]);
        f.push(b"{\"b\":2}\n").unwrap();
        assert_eq!(f.next_line(), Some(&b"{\"b\":2}"[..]));
        assert_eq!(f.next_line(), None);
        assert_eq!(f.partial_len(), 0);
    }

    #[test]
    fn line_split_across_reads() {
        let mut f = LineFramer::new();
        f.push(b"{\"a\"").unwrap();
        assert!(drain(&mut f).is_empty());
        assert_eq!(f.partial_len(), 4);
        f.push(b":1").unwrap();
        assert!(drain(&mut f).is_empty());
        f.push(b"}\n{\"b\"").unwrap();
        assert_eq!(drain(&mut f), vec![b"{\"a\":1}".to_vec()]);
        f.push(b":2}\n").unwrap();
        assert_eq!(drain(&mut f), vec![b"{\"b\":2}".to_vec()]);
    }

    #[test]
    fn several_lines_in_one_read() {
        let mut f = LineFramer::new();
        f.push(b"a\nb\nc\npartial").unwrap();
        assert_eq!(
            drain(&mut f),
            vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]
        );
        f.push(b"\n").unwrap();
        assert_eq!(drain(&mut f), vec![b"partial".to_vec()]);
    }

    #[test]
    fn lines_left_unread_survive_the_next_push() {
        let mut f = LineFramer::new();
        f.push(b"a\nb\nc").unwrap();
        assert_eq!(f.next_line(), Some(&b"a"[..]));
        f.push(b"d\ne\n").unwrap();
        assert_eq!(
            drain(&mut f),
            vec![b"b".to_vec(), b"cd".to_vec(), b"e".to_vec()]
        );
    }

    #[test]
    fn crlf_blank_and_whitespace_lines() {
        let mut f = LineFramer::new();
        f.push(b"a\r\n\n\r\n  \t \nb \r\n\r").unwrap();
        f.push(b"\nc\r").unwrap();
        assert_eq!(drain(&mut f), vec![b"a".to_vec(), b"b ".to_vec()]);
        // The lone `\r` line was blank; `c\r` is still unterminated.
        f.push(b"\n").unwrap();
        assert_eq!(drain(&mut f), vec![b"c".to_vec()]);
    }

    #[test]
    fn invalid_utf8_passes_through() {
        let mut f = LineFramer::new();
        f.push(b"\xff\xfe{\n").unwrap();
        assert_eq!(drain(&mut f), vec![b"\xff\xfe{".to_vec()]);
    }

    #[test]
    fn unterminated_line_beyond_max_fails_and_stays_failed() {
        let mut f = LineFramer::new();
        f.push(b"ok\n").unwrap();
        let chunk = vec![b'x'; 64 * 1024];
        for _ in 0..(MAX_LINE / chunk.len()) {
            f.push(&chunk).unwrap();
        }
        // Exactly MAX_LINE bytes pending is still fine.
        assert_eq!(f.partial_len(), MAX_LINE);
        assert_eq!(f.push(b"x"), Err(LineTooLong));
        assert_eq!(f.push(b"\n"), Err(LineTooLong));
        assert_eq!(f.next_line(), None);
    }

    #[test]
    fn a_long_line_s_buffer_is_given_back_once_drained() {
        let mut f = LineFramer::new();
        let mut data = vec![b'y'; MAX_LINE];
        data.extend_from_slice(b"\npart");
        f.push(&data).unwrap();
        assert_eq!(f.next_line().map(<[u8]>::len), Some(MAX_LINE));
        f.release();
        // Only the unterminated tail is kept, in a buffer of the retained size.
        assert!(
            f.buf.capacity() <= RETAINED_CAPACITY,
            "{}",
            f.buf.capacity()
        );
        assert_eq!(f.partial_len(), 4);
        f.push(b"ial\n").unwrap();
        assert_eq!(f.next_line(), Some(&b"partial"[..]));
        f.release();
        assert!(f.buf.is_empty() && f.buf.capacity() <= RETAINED_CAPACITY);
    }

    #[test]
    fn line_of_exactly_max_is_accepted() {
        let mut f = LineFramer::new();
        let mut data = vec![b'y'; MAX_LINE];
        data.push(b'\n');
        f.push(&data).unwrap();
        assert_eq!(f.next_line().map(<[u8]>::len), Some(MAX_LINE));
    }

    #[test]
    fn complete_overlong_line_in_one_read_fails() {
        let mut f = LineFramer::new();
        let mut data = vec![b'y'; MAX_LINE + 1];
        data.extend_from_slice(b"\nnext\n");
        assert_eq!(f.push(&data), Err(LineTooLong));
    }

    #[test]
    fn many_small_pieces_are_linear() {
        // 512 KiB in 1-byte pieces: quadratic rescanning would take ages.
        let mut f = LineFramer::new();
        f.push(b"first\n").unwrap();
        assert_eq!(f.next_line(), Some(&b"first"[..]));
        for _ in 0..512 * 1024 {
            f.push(b"z").unwrap();
            assert!(f.next_line().is_none());
        }
        f.push(b"\n").unwrap();
        assert_eq!(f.next_line().map(<[u8]>::len), Some(512 * 1024));
    }

    #[test]
    fn random_chunking_matches_whole_input() {
        let input: &[u8] = b"{\"kind\":\"a\"}\r\n\n  \nline two\nthree\r\n\xff\n";
        let expected = vec![
            b"{\"kind\":\"a\"}".to_vec(),
            b"line two".to_vec(),
            b"three".to_vec(),
            b"\xff".to_vec(),
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..500 {
            let mut f = LineFramer::new();
            let mut got = Vec::new();
            let mut rest = input;
            while !rest.is_empty() {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let n = (seed as usize % 5 + 1).min(rest.len());
                f.push(&rest[..n]).unwrap();
                got.extend(drain(&mut f));
                rest = &rest[n..];
            }
            assert_eq!(got, expected);
        }
    }
}
