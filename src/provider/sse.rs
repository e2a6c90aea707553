//! Incremental decoding of Server-Sent Events and NDJSON from a byte stream, and the reading
//! of a streamed reply into a wire format's stream state.

use super::{ModelResponse, ProviderError, TextSink, http};

/// One SSE event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The joined `data:` lines.
    pub data: String,
}

/// Splits bytes into lines across chunk boundaries.
#[derive(Default)]
pub struct LineBuffer {
    buf: Vec<u8>,
}

impl LineBuffer {
    /// Adds bytes and returns the complete lines (without line endings).
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.buf.extend_from_slice(bytes);
        let mut lines = Vec::new();
        while let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = self.buf.drain(..=i).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            lines.push(String::from_utf8_lossy(&line).into_owned());
        }
        lines
    }

    /// Whatever is left after the stream ended.
    pub fn rest(&mut self) -> Option<String> {
        let rest = std::mem::take(&mut self.buf);
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
    /// Adds bytes and returns the events they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for line in self.lines.push(bytes) {
            self.line(&line, &mut out);
        }
        out
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
    sink: &TextSink,
) -> Result<ModelResponse, ProviderError> {
    let mut decoder = SseDecoder::default();
    let mut state = S::default();
    http::for_each_chunk(provider, resp, |bytes| {
        for ev in decoder.push(bytes) {
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
#[cfg(test)]
pub(crate) fn parse_text<S: StreamState>(
    text: &str,
    sink: &TextSink,
) -> Result<ModelResponse, ProviderError> {
    let mut decoder = SseDecoder::default();
    let mut state = S::default();
    let mut events = decoder.push(text.as_bytes());
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
        assert!(d.push(b"event: a\nda").is_empty());
        let ev = d.push(b"ta: {\"x\":1}\r\n\r\n: comment\ndata: two\n");
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
}
