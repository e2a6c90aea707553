//! Keeping API keys out of everything kiln prints, logs or stores. A service may echo the key
//! it was sent (`Incorrect API key provided: sk-…`, a redirect target, a reply's text), so every
//! string that comes back from a provider passes through [`Secrets`] before anyone sees it.

use super::{CallArgs, ModelResponse, ProviderError, TextSink};
use serde_json::Value;
use std::borrow::Cow;
use std::sync::{Arc, Mutex};

/// What a key is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Shortest value treated as a secret. Shorter ones are placeholders local servers accept
/// (`EMPTY`, `none`); replacing those in every reply would garble ordinary words.
pub const MIN_SECRET_LEN: usize = 8;

/// The key values sent to a service.
#[derive(Debug, Clone, Default)]
pub struct Secrets(Vec<String>);

impl Secrets {
    /// Secrets from key values (placeholders shorter than [`MIN_SECRET_LEN`] are skipped).
    pub fn new(keys: impl IntoIterator<Item = String>) -> Secrets {
        Secrets(
            keys.into_iter()
                .filter(|k| k.len() >= MIN_SECRET_LEN)
                .collect(),
        )
    }

    /// True when there is nothing to hide.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `text` with every key replaced by [`REDACTED`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for key in &self.0 {
            if out.contains(key.as_str()) {
                out = Cow::Owned(out.replace(key.as_str(), REDACTED));
            }
        }
        out
    }

    fn redact_in_place(&self, text: &mut String) {
        if let Cow::Owned(clean) = self.redact(text) {
            *text = clean;
        }
    }

    fn redact_value(&self, v: &mut Value) {
        match v {
            Value::String(s) => self.redact_in_place(s),
            Value::Array(items) => items.iter_mut().for_each(|i| self.redact_value(i)),
            Value::Object(map) => {
                let dirty = map.keys().any(|k| self.redact(k) != k.as_str());
                if dirty {
                    *map = std::mem::take(map)
                        .into_iter()
                        .map(|(k, v)| (self.redact(&k).into_owned(), v))
                        .collect();
                }
                map.values_mut().for_each(|i| self.redact_value(i));
            }
            _ => {}
        }
    }

    /// The error with every key redacted from its text.
    pub fn error(&self, e: ProviderError) -> ProviderError {
        if self.is_empty() {
            return e;
        }
        let r = |s: String| self.redact(&s).into_owned();
        match e {
            ProviderError::MissingKey { .. } => e,
            ProviderError::Http {
                provider,
                status,
                message,
            } => ProviderError::Http {
                provider,
                status,
                message: r(message),
            },
            ProviderError::Transport { provider, message } => ProviderError::Transport {
                provider,
                message: r(message),
            },
            ProviderError::Malformed { provider, message } => ProviderError::Malformed {
                provider,
                message: r(message),
            },
            ProviderError::Truncated { provider, tool } => ProviderError::Truncated {
                provider,
                tool: r(tool),
            },
            ProviderError::Stream { provider, message } => ProviderError::Stream {
                provider,
                message: r(message),
            },
            ProviderError::TooLarge {
                provider,
                what,
                limit,
                setting,
                start,
            } => ProviderError::TooLarge {
                provider,
                what,
                limit,
                setting,
                start: r(start),
            },
            ProviderError::Planner(m) => ProviderError::Planner(r(m)),
        }
    }

    /// Redacts a reply's text and tool calls (ids, names, arguments).
    pub fn reply(&self, reply: &mut ModelResponse) {
        if self.is_empty() {
            return;
        }
        self.redact_in_place(&mut reply.text);
        for call in &mut reply.tool_calls {
            self.redact_in_place(&mut call.id);
            self.redact_in_place(&mut call.name);
            match &mut call.args {
                CallArgs::Parsed(v) => self.redact_value(v),
                CallArgs::Invalid { raw, error } => {
                    self.redact_in_place(raw);
                    self.redact_in_place(error);
                }
            }
        }
    }

    /// A sink in front of `inner` that redacts streamed text. A key may arrive split across
    /// chunks, so text that could be the start of a key is held back until the next chunk
    /// (or [`SinkGuard::flush`]) shows whether it is.
    pub fn guard_sink(&self, inner: TextSink) -> SinkGuard {
        SinkGuard {
            secrets: self.clone(),
            inner,
            pending: Arc::new(Mutex::new(String::new())),
        }
    }
}

/// A redacting sink (see [`Secrets::guard_sink`]).
pub struct SinkGuard {
    secrets: Secrets,
    inner: TextSink,
    pending: Arc<Mutex<String>>,
}

impl SinkGuard {
    /// The sink to hand to the provider.
    pub fn sink(&self) -> TextSink {
        if self.secrets.is_empty() {
            return self.inner.clone();
        }
        let (secrets, inner, pending) = (
            self.secrets.clone(),
            self.inner.clone(),
            self.pending.clone(),
        );
        Arc::new(move |text: &str| {
            let ready = {
                let mut pending = pending.lock().unwrap_or_else(|p| p.into_inner());
                pending.push_str(text);
                secrets.redact_in_place(&mut pending);
                let cut = pending.len() - secrets.partial_key_suffix(&pending);
                let ready = pending[..cut].to_string();
                pending.drain(..cut);
                ready
            };
            if !ready.is_empty() {
                inner(&ready);
            }
        })
    }

    /// Sends what was held back (the stream ended, so it is not a key).
    pub fn flush(&self) {
        let rest = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()));
        if !rest.is_empty() {
            (self.inner)(&rest);
        }
    }
}

impl Secrets {
    /// Length of the longest end of `text` that is the start of a key.
    fn partial_key_suffix(&self, text: &str) -> usize {
        self.0
            .iter()
            .map(|key| {
                (1..key.len().min(text.len() + 1))
                    .rev()
                    .find(|&n| {
                        key.is_char_boundary(n)
                            && text.is_char_boundary(text.len() - n)
                            && text.ends_with(&key[..n])
                    })
                    .unwrap_or(0)
            })
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-secret-0123456789";

    #[test]
    fn keys_split_across_chunks_never_reach_the_sink() {
        let seen = Arc::new(Mutex::new(String::new()));
        let out = seen.clone();
        let inner: TextSink = Arc::new(move |t: &str| out.lock().expect("lock").push_str(t));
        let guard = Secrets::new([KEY.to_string()]).guard_sink(inner);
        let sink = guard.sink();
        for part in [
            "your key is s",
            "k-secret-01",
            "23456789, and s",
            "k is not it",
        ] {
            sink(part);
            assert!(!seen.lock().expect("lock").contains("sk-secret-01"));
        }
        guard.flush();
        assert_eq!(
            *seen.lock().expect("lock"),
            "your key is [redacted], and sk is not it"
        );
    }

    #[test]
    fn short_placeholders_are_not_secrets() {
        let s = Secrets::new(["EMPTY".to_string()]);
        assert!(s.is_empty());
        assert_eq!(s.redact("EMPTY"), "EMPTY");
    }

    #[test]
    fn replies_and_errors_are_redacted_everywhere() {
        let s = Secrets::new([KEY.to_string()]);
        let mut reply = ModelResponse {
            text: format!("a {KEY}"),
            tool_calls: vec![super::super::ToolCall {
                id: KEY.into(),
                name: "t".into(),
                args: CallArgs::Parsed(serde_json::json!({ KEY: [KEY] })),
            }],
            stop: super::super::StopReason::EndTurn,
            usage: Default::default(),
        };
        s.reply(&mut reply);
        assert!(!serde_json::to_string(&reply).expect("json").contains(KEY));
        let e = s.error(ProviderError::Http {
            provider: "openai",
            status: 401,
            message: format!("Incorrect API key provided: {KEY}"),
        });
        assert_eq!(
            e.to_string(),
            "openai: HTTP 401: Incorrect API key provided: [redacted]"
        );
    }
}
