//! Whether a reply's bytes are more than SSE keep-alives: what resets the idle timer of a
//! streamed reply.

/// Whether a stream's bytes carry anything but SSE comment lines (`: ping`) and blank lines,
/// read across chunks (a line may be split between two).
#[derive(Debug, Clone)]
pub(super) struct SseActivity {
    at_line_start: bool,
    in_comment: bool,
}

impl Default for SseActivity {
    fn default() -> Self {
        SseActivity {
            at_line_start: true,
            in_comment: false,
        }
    }
}

impl SseActivity {
    /// True when `bytes` hold data: a byte outside a comment line that is not a line break.
    ///
    /// Read a line at a time (line breaks found with `memchr`), and once data is found only
    /// the last line matters for the next chunk: every reply's bytes pass through here, and
    /// a byte at a time cost 2% of a run's instructions.
    pub(super) fn carries_data(&mut self, bytes: &[u8]) -> bool {
        let mut data = false;
        let mut rest = bytes;
        loop {
            let end = memchr::memchr2(b'\n', b'\r', rest).unwrap_or(rest.len());
            let (line, after) = rest.split_at(end);
            if let Some(&first) = line.first() {
                if self.at_line_start && first == b':' {
                    self.in_comment = true;
                }
                data |= !self.in_comment;
                self.at_line_start = false;
            }
            let Some((_, next)) = after.split_first() else {
                return data;
            };
            self.at_line_start = true;
            self.in_comment = false;
            rest = next;
            if data {
                // What follows the chunk's last line break is all the next chunk needs.
                if let Some(at) = memchr::memrchr2(b'\n', b'\r', rest) {
                    rest = &rest[at + 1..];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SseActivity;

    /// The rule a byte at a time, as it was written first.
    fn byte_by_byte(a: &mut SseActivity, bytes: &[u8]) -> bool {
        let mut data = false;
        for &b in bytes {
            match b {
                b'\n' | b'\r' => {
                    a.at_line_start = true;
                    a.in_comment = false;
                }
                b':' if a.at_line_start => {
                    a.in_comment = true;
                    a.at_line_start = false;
                }
                _ => {
                    a.at_line_start = false;
                    data |= !a.in_comment;
                }
            }
        }
        data
    }

    #[test]
    fn keep_alive_comments_are_not_data_and_data_is_split_anywhere() {
        let mut a = SseActivity::default();
        assert!(!a.carries_data(b": ping\n\n"));
        assert!(!a.carries_data(b": pi"));
        assert!(!a.carries_data(b"ng\n\r\n"));
        assert!(a.carries_data(b"data: {\"a\":1}\n\n"));
        assert!(!a.carries_data(b":"));
        assert!(!a.carries_data(b" still a comment\n"));
        assert!(a.carries_data(b"da"));
        assert!(a.carries_data(b"ta: x\n"));
        assert!(a.carries_data(b"{\"ndjson\": true}\n"));
    }

    proptest::proptest! {
        /// Any bytes of `:`, line breaks and others, in any chunks: what the lines say and
        /// the state left for the next chunk are the byte-at-a-time rule's.
        #[test]
        fn reading_by_lines_agrees_with_reading_by_bytes(
            chunks in proptest::collection::vec(
                proptest::collection::vec(proptest::sample::select(b":\n\r a".to_vec()), 0..12),
                0..8,
            )
        ) {
            let (mut fast, mut slow) = (SseActivity::default(), SseActivity::default());
            for chunk in &chunks {
                proptest::prop_assert_eq!(fast.carries_data(chunk), byte_by_byte(&mut slow, chunk));
                proptest::prop_assert_eq!(
                    (fast.at_line_start, fast.in_comment),
                    (slow.at_line_start, slow.in_comment)
                );
            }
        }
    }
}
