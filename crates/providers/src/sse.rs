//! Incremental decoding of Server-Sent Events and NDJSON from a byte stream, and the reading
//! of a streamed reply into a wire format's stream state.

use super::{Limits, ModelResponse, ProviderError, TextSink, http};

/// One SSE event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The joined `data:` lines.
    pub data: String,
}

/// Which bytes end a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEnds {
    /// CRLF, LF or a bare CR, as the SSE spec allows.
    Any,
    /// LF (a CR before it is dropped): NDJSON, where a CR is not a line end.
    Lf,
}

/// A line longer than the limit; the stream cannot go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineTooLong {
    /// The limit in bytes.
    pub limit: usize,
    /// The first bytes of the line, for the message.
    pub start: String,
}

impl LineTooLong {
    /// The provider error it becomes.
    pub fn into_error(self, provider: &'static str) -> ProviderError {
        ProviderError::TooLarge {
            provider,
            what: "one stream line",
            limit: self.limit,
            setting: "--max-line-bytes or .max_line_bytes(n)",
            start: self.start,
        }
    }
}

/// Splits bytes into lines across chunk boundaries. Each byte is examined once however the
/// stream is chunked: a long line arriving in many chunks costs its length, not its square.
pub struct LineBuffer {
    buf: Vec<u8>,
    /// How much of `buf` (the start of a line) was already searched for a line end.
    scanned: usize,
    /// The last line ended with a CR at the end of a chunk: an LF next belongs to it.
    after_cr: bool,
    ends: LineEnds,
    max_line: usize,
    examined: u64,
}

impl Default for LineBuffer {
    fn default() -> Self {
        LineBuffer::new(LineEnds::Any, super::Limits::DEFAULT_MAX_LINE_BYTES)
    }
}

impl LineBuffer {
    /// A buffer for `ends` that refuses lines longer than `max_line` bytes.
    pub fn new(ends: LineEnds, max_line: usize) -> LineBuffer {
        LineBuffer {
            buf: Vec::new(),
            scanned: 0,
            after_cr: false,
            ends,
            max_line,
            examined: 0,
        }
    }

    /// Bytes examined so far (each byte once: the linearity the tests check).
    #[cfg(test)]
    pub fn examined(&self) -> u64 {
        self.examined
    }

    fn too_long(&self, line: &[u8]) -> LineTooLong {
        LineTooLong {
            limit: self.max_line,
            start: super::error::quote_bytes(line),
        }
    }

    /// Adds bytes and returns the complete lines (without line endings).
    pub fn push(&mut self, mut bytes: &[u8]) -> Result<Vec<String>, LineTooLong> {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        self.buf.extend_from_slice(bytes);
        let any = self.ends == LineEnds::Any;
        let mut lines = Vec::new();
        let mut start = 0;
        let mut i = self.scanned;
        while let Some(offset) = self.buf[i..]
            .iter()
            .position(|&b| b == b'\n' || (any && b == b'\r'))
        {
            self.examined += offset as u64 + 1;
            let end = i + offset;
            let mut next = end + 1;
            let mut line = &self.buf[start..end];
            if self.buf[end] == b'\r' {
                match self.buf.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            } else if !any && line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            if line.len() > self.max_line {
                return Err(self.too_long(line));
            }
            lines.push(String::from_utf8_lossy(line).into_owned());
            start = next;
            i = next;
        }
        self.examined += (self.buf.len() - i) as u64;
        self.buf.drain(..start);
        self.scanned = self.buf.len();
        if self.buf.len() > self.max_line {
            return Err(self.too_long(&self.buf));
        }
        Ok(lines)
    }

    /// Whatever is left after the stream ended.
    pub fn rest(&mut self) -> Option<String> {
        let rest = std::mem::take(&mut self.buf);
        self.scanned = 0;
        let text = String::from_utf8_lossy(&rest).trim().to_string();
        (!text.is_empty()).then_some(text)
    }
}

/// Decodes SSE events from lines.
#[derive(Default)]
pub struct SseDecoder {
    lines: LineBuffer,
    event: Option<String>,
    data: Vec<String>,
}

impl SseDecoder {
    /// A decoder that refuses lines longer than `max_line` bytes.
    pub fn new(max_line: usize) -> SseDecoder {
        SseDecoder {
            lines: LineBuffer::new(LineEnds::Any, max_line),
            ..SseDecoder::default()
        }
    }

    /// Adds bytes and returns the events they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, LineTooLong> {
        let mut out = Vec::new();
        for line in self.lines.push(bytes)? {
            self.line(&line, &mut out);
        }
        Ok(out)
    }
    /// Flushes an event not followed by a blank line at the end of the stream.
    pub fn finish(&mut self) -> Vec<SseEvent> {
        let mut out = Vec::new();
        if let Some(rest) = self.lines.rest() {
            self.line(&rest, &mut out);
        }
        self.line("", &mut out);
        out
    }

    fn line(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if !self.data.is_empty() || self.event.is_some() {
                out.push(SseEvent {
                    event: self.event.take(),
                    data: self.data.join("\n"),
                });
                self.data.clear();
            }
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => self.event = Some(value.trim().to_string()),
            "data" => self.data.push(value.to_string()),
            _ => {}
        }
    }
}

/// A wire format's accumulator of streamed events.
pub trait StreamState: Default {
    /// Applies one event's `data`; streamed text goes to `sink`.
    fn apply(&mut self, data: &str, sink: &TextSink) -> Result<(), ProviderError>;
    /// The reply once the stream ended.
    fn finish(self) -> Result<ModelResponse, ProviderError>;
}

/// Reads an SSE reply as it arrives into a stream state `S`.
pub async fn read_stream<S: StreamState>(
    provider: &'static str,
    resp: reqwest::Response,
    limits: &Limits,
    sink: &TextSink,
) -> Result<ModelResponse, ProviderError> {
    let resp = http::expect_content_type(provider, resp, &["text/event-stream"], limits).await?;
    let mut decoder = SseDecoder::new(limits.max_line_bytes);
    let mut state = S::default();
    http::for_each_chunk(provider, resp, limits, |bytes| {
        let events = decoder.push(bytes).map_err(|e| e.into_error(provider))?;
        for ev in events {
            state.apply(&ev.data, sink)?;
        }
        Ok(())
    })
    .await?;
    for ev in decoder.finish() {
        state.apply(&ev.data, sink)?;
    }
    state.finish()
}

/// Parses a whole recorded SSE text into a stream state `S` (tests and replay).
pub fn parse_text<S: StreamState>(
    text: &str,
    sink: &TextSink,
) -> Result<ModelResponse, ProviderError> {
    let mut decoder = SseDecoder::default();
    let mut state = S::default();
    let mut events = decoder
        .push(text.as_bytes())
        .map_err(|e| e.into_error("replay"))?;
    events.extend(decoder.finish());
    for ev in events {
        state.apply(&ev.data, sink)?;
    }
    state.finish()
}

/// A whole (non-streamed) reply: its text goes to `sink` at once.
pub fn whole(reply: ModelResponse, sink: &TextSink) -> ModelResponse {
    if !reply.text.is_empty() {
        sink(&reply.text);
    }
    reply
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks() {
        let mut d = SseDecoder::default();
        assert!(d.push(b"event: a\nda").expect("short").is_empty());
        let ev = d
            .push(b"ta: {\"x\":1}\r\n\r\n: comment\ndata: two\n")
            .expect("short");
        assert_eq!(
            ev,
            vec![SseEvent {
                event: Some("a".into()),
                data: "{\"x\":1}".into()
            }]
        );
        assert_eq!(
            d.finish(),
            vec![SseEvent {
                event: None,
                data: "two".into()
            }]
        );
    }

    fn lines_of(ends: LineEnds, chunks: &[&[u8]]) -> Vec<String> {
        let mut b = LineBuffer::new(ends, 1 << 20);
        let mut out = Vec::new();
        for c in chunks {
            out.extend(b.push(c).expect("short lines"));
        }
        out.extend(b.rest());
        out
    }

    #[test]
    fn sse_lines_end_at_cr_lf_or_crlf_even_split_between_chunks() {
        let want = vec!["a", "b", "c", "", "d", "e"];
        assert_eq!(lines_of(LineEnds::Any, &[b"a\rb\nc\r\n\rd\r\ne"]), want);
        assert_eq!(
            lines_of(
                LineEnds::Any,
                &[b"a\r", b"b\n", b"c\r", b"\n", b"\r", b"d\r", b"\ne"]
            ),
            want,
            "a CR at the end of a chunk and the LF that starts the next are one line end"
        );
        assert_eq!(
            lines_of(LineEnds::Lf, &[b"{\"a\":1}\r", b"\n{\"b\":\r2}\n"]),
            vec!["{\"a\":1}", "{\"b\":\r2}"],
            "NDJSON ends lines at LF only"
        );
    }

    #[test]
    fn a_bare_cr_stream_decodes_like_an_lf_one() {
        let lf = b"event: a\ndata: 1\n\ndata: 2\ndata: 3\n\n";
        let cr: Vec<u8> = lf
            .iter()
            .map(|&b| if b == b'\n' { b'\r' } else { b })
            .collect();
        let mut d = SseDecoder::default();
        let mut from_cr = d.push(&cr).expect("short");
        from_cr.extend(d.finish());
        let mut d = SseDecoder::default();
        let mut from_lf = d.push(lf).expect("short");
        from_lf.extend(d.finish());
        assert_eq!(from_cr, from_lf);
        assert_eq!(from_cr.len(), 2);
    }

    #[test]
    fn a_long_line_in_many_chunks_is_examined_once() {
        // 4 MiB in 4 KiB chunks: rescanning the buffer per chunk would examine ~2 GiB.
        let total = 4 << 20;
        let chunk = vec![b'x'; 4096];
        let mut b = LineBuffer::new(LineEnds::Any, 8 << 20);
        for _ in 0..total / chunk.len() {
            assert!(b.push(&chunk).expect("under the limit").is_empty());
        }
        let lines = b.push(b"\n").expect("under the limit");
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].len(), total);
        assert!(
            b.examined() <= total as u64 + 1,
            "examined {} bytes for a {total}-byte line",
            b.examined()
        );
    }

    #[test]
    fn many_lines_in_one_chunk_are_examined_once() {
        let body = "data: x\n".repeat(100_000);
        let mut b = LineBuffer::new(LineEnds::Any, 1 << 20);
        assert_eq!(b.push(body.as_bytes()).expect("short").len(), 100_000);
        assert_eq!(b.examined(), body.len() as u64);
    }

    #[test]
    fn a_line_over_the_limit_is_refused_with_its_start_quoted() {
        let mut b = LineBuffer::new(LineEnds::Any, 1000);
        let err = loop {
            match b.push(&[b'y'; 300]) {
                Ok(lines) => assert!(lines.is_empty()),
                Err(e) => break e,
            }
        };
        assert_eq!(err.limit, 1000);
        assert!(err.start.starts_with("yyy"));
        assert!(err.start.len() < 400, "quoted at most a few hundred bytes");
        let mut b = LineBuffer::new(LineEnds::Lf, 10);
        assert!(
            b.push(b"0123456789abcdef\n").is_err(),
            "a whole line in one chunk too"
        );
    }
}
