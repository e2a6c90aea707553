//! Keeping API keys out of everything kiln prints, logs or stores. A service may echo the key
//! it was sent (`Incorrect API key provided: sk-…`, a redirect target, a reply's text), whole,
//! cut short, or encoded as it went out in an `Authorization: Basic` header, so every string
//! that comes back from a provider passes through [`Secrets`] before anyone sees it.
//!
//! What is redacted: any run of at least [`MIN_RUN`] consecutive characters of a key (its
//! prefix, its middle, its end), and the same of its base64 forms (standard and URL-safe, with
//! or without padding, at each of the three alignments it can have after a prefix such as
//! `user:` in Basic auth). Other encodings (hex, percent-encoding of unusual keys) are not
//! looked for.

use super::{CallArgs, ModelResponse, ProviderError, TextSink};
use aho_corasick::AhoCorasick;
use base64::Engine as _;
use serde_json::Value;
use std::borrow::Cow;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// What a key is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Shortest value treated as a secret. Shorter ones are placeholders local servers accept
/// (`EMPTY`, `none`); replacing those in every reply would garble ordinary words.
pub const MIN_SECRET_LEN: usize = 8;

/// Shortest run of a key's characters (or of its base64 form's) that is redacted; a key shorter
/// than this is redacted whole. Twelve characters of a key's random part carry some 70 bits, so
/// a shorter run that stays visible leaves a 30-character key well beyond guessing, while a
/// longer threshold would let a useful piece through. Shorter runs would also start to match
/// what is public and common to every key of a service (`sk-proj-`, `sk-ant-` are 7 or 8) and
/// ordinary words; the one such prefix of twelve or more (`sk-ant-api03`) is redacted too,
/// which costs nothing.
pub const MIN_RUN: usize = 12;

/// The key values sent to a service, and what finds them in text.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    /// Each key, and the parts of its base64 forms that only the key decides.
    forms: Vec<String>,
    /// Finds every run of [`MIN_RUN`] characters of a form (the whole form when shorter).
    finder: Option<Arc<AhoCorasick>>,
}

impl Secrets {
    /// Secrets from key values (placeholders shorter than [`MIN_SECRET_LEN`] are skipped).
    pub fn new(keys: impl IntoIterator<Item = String>) -> Secrets {
        // Building the finder costs far more than a round's other work (every window of every
        // form of the key), and a provider sends with the same keys every round: the last few
        // key sets are kept, in this process only.
        static RECENT: Mutex<Vec<(Vec<String>, Secrets)>> = Mutex::new(Vec::new());
        const KEPT: usize = 8;
        let keys: Vec<String> = keys.into_iter().collect();
        let mut recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, found)) = recent.iter().find(|(k, _)| *k == keys) {
            return found.clone();
        }
        let built = Secrets::build(keys.clone());
        if recent.len() >= KEPT {
            recent.remove(0);
        }
        recent.push((keys, built.clone()));
        built
    }

    fn build(keys: Vec<String>) -> Secrets {
        let mut forms: Vec<String> = Vec::new();
        for key in keys.into_iter().filter(|k| k.len() >= MIN_SECRET_LEN) {
            let encoded = base64_forms(key.as_bytes());
            for form in std::iter::once(key).chain(encoded) {
                if form.len() >= MIN_SECRET_LEN && !forms.contains(&form) {
                    forms.push(form);
                }
            }
        }
        let mut windows: Vec<&[u8]> = forms
            .iter()
            .flat_map(|f| f.as_bytes().windows(MIN_RUN.min(f.len())))
            .collect();
        windows.sort_unstable();
        windows.dedup();
        let finder = match windows.is_empty() {
            true => None,
            false => AhoCorasick::new(windows).ok().map(Arc::new),
        };
        Secrets { forms, finder }
    }

    /// True when there is nothing to hide.
    pub fn is_empty(&self) -> bool {
        self.forms.is_empty()
    }

    /// `text` with every run of a key (see the module's documentation) replaced by
    /// [`REDACTED`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let spans = self.spans(text);
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut from = 0;
        for span in spans {
            out.push_str(&text[from..span.start]);
            out.push_str(REDACTED);
            from = span.end;
        }
        out.push_str(&text[from..]);
        Cow::Owned(out)
    }

    /// Where `text` holds runs of a key, in order, overlapping runs joined, each widened to
    /// whole characters.
    fn spans(&self, text: &str) -> Vec<Range<usize>> {
        let mut found: Vec<Range<usize>> = match &self.finder {
            Some(finder) => finder
                .find_overlapping_iter(text)
                .map(|m| m.range())
                .collect(),
            // No finder could be built (it never fails for keys): whole forms at least.
            None => self
                .forms
                .iter()
                .flat_map(|f| text.match_indices(f.as_str()).map(|(i, m)| i..i + m.len()))
                .collect(),
        };
        found.sort_unstable_by_key(|r| r.start);
        let mut spans: Vec<Range<usize>> = Vec::new();
        for mut r in found {
            while !text.is_char_boundary(r.start) {
                r.start -= 1;
            }
            while !text.is_char_boundary(r.end) {
                r.end += 1;
            }
            match spans.last_mut() {
                Some(last) if r.start < last.end => last.end = last.end.max(r.end),
                _ => spans.push(r),
            }
        }
        spans
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
            ProviderError::Unsupported { provider, what } => ProviderError::Unsupported {
                provider,
                what: r(what),
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
                CallArgs::Parsed(v) => self.redact_value(std::sync::Arc::make_mut(v)),
                CallArgs::Invalid { raw, error } => {
                    self.redact_in_place(raw);
                    self.redact_in_place(error);
                }
            }
        }
    }

    /// A sink in front of `inner` that redacts streamed text. A key may arrive split across
    /// chunks, so text that could be part of a key is held back until the next chunk (or
    /// [`SinkGuard::flush`]) shows whether it is.
    pub fn guard_sink(&self, inner: TextSink) -> SinkGuard {
        SinkGuard {
            secrets: self.clone(),
            inner,
            pending: Arc::new(Mutex::new(String::new())),
        }
    }

    /// How much of `pending` can go out now, redacted: all but its longest end that is part of
    /// a key form (the next chunk may make it a run long enough to redact), and never a part of
    /// a run that reaches into what is held back.
    fn ready(&self, pending: &str) -> usize {
        let mut cut = pending.len() - self.partial_suffix(pending);
        if let Some(run) = self
            .spans(pending)
            .into_iter()
            .find(|r| r.start < cut && r.end > cut)
        {
            cut = run.start;
        }
        cut
    }

    /// Length of the longest end of `text` found inside some key form.
    fn partial_suffix(&self, text: &str) -> usize {
        let longest = self.forms.iter().map(String::len).max().unwrap_or(0);
        let mut best = 0;
        for n in 1..=longest.min(text.len()) {
            let start = text.len() - n;
            if !text.is_char_boundary(start) {
                continue;
            }
            // An end that is in no form has no longer end that is.
            if !self.forms.iter().any(|f| f.contains(&text[start..])) {
                break;
            }
            best = n;
        }
        best
    }
}

/// The parts of `key`'s base64 forms that only the key decides, in both alphabets: encoded
/// after 0, 1 or 2 bytes of something else (`user:` before it in Basic auth shifts it), the
/// characters mixing those bytes in at the start, and the last one mixing in what follows or
/// padding, are left out. Every run of them is what any encoding of text holding the key at
/// that alignment holds, padded or not.
fn base64_forms(key: &[u8]) -> Vec<String> {
    let engines = [
        &base64::engine::general_purpose::STANDARD_NO_PAD,
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ];
    let mut out = Vec::new();
    for align in 0..3 {
        let mut bytes = vec![0u8; align];
        bytes.extend_from_slice(key);
        let skip = [0, 2, 3][align];
        let last = usize::from(bytes.len() % 3 != 0);
        for engine in engines {
            let encoded = engine.encode(&bytes);
            if let Some(core) = encoded.get(skip..encoded.len().saturating_sub(last)) {
                out.push(core.to_string());
            }
        }
    }
    out
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
                let cut = secrets.ready(&pending);
                let ready = secrets.redact(&pending[..cut]).into_owned();
                pending.drain(..cut);
                ready
            };
            if !ready.is_empty() {
                inner(&ready);
            }
        })
    }

    /// Sends what was held back, redacted (the stream ended: nothing more will join it).
    pub fn flush(&self) {
        let rest = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()));
        if !rest.is_empty() {
            (self.inner)(&self.secrets.redact(&rest));
        }
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
            replay: None,
            answered_by: None,
            text: format!("a {KEY}"),
            tool_calls: vec![super::super::ToolCall {
                id: KEY.into(),
                name: "t".into(),
                args: CallArgs::parsed(serde_json::json!({ KEY: [KEY] })),
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

    /// A key whose base64 forms differ by alphabet (`+` and `/` against `-` and `_`).
    const ODD: &str = "sk-live-~~~>>>???-0123456789abcdef";

    fn odd() -> Secrets {
        Secrets::new([ODD.to_string()])
    }

    #[test]
    fn any_run_of_twelve_characters_of_a_key_is_redacted_and_a_shorter_one_is_not() {
        let s = odd();
        let cases = [
            // Its first 23 characters, as a service cutting long values quotes it.
            (
                "key sk-live-~~~>>>???-01234 was refused",
                "key [redacted] was refused",
            ),
            // Twelve from its middle, and its last twelve.
            ("got ~>>>???-01234.", "got [redacted]."),
            ("ends 6789abcdef!", "ends 6789abcdef!"),
            ("ends 456789abcdef!", "ends [redacted]!"),
            // Eleven are left: a shorter run starts matching what is public (`sk-live-`).
            ("uses 0123456789a", "uses 0123456789a"),
            ("sk-live- keys are live", "sk-live- keys are live"),
            // Twice, and the whole key.
            (
                "a sk-live-~~~>>> and >>???-0123456",
                "a [redacted] and [redacted]",
            ),
            ("sk-live-~~~>>>???-0123456789abcdef", "[redacted]"),
        ];
        for (text, want) in cases {
            assert_eq!(s.redact(text), want, "{text}");
        }
    }

    #[test]
    fn base64_forms_are_redacted_in_both_alphabets_padded_or_not_after_any_prefix() {
        let s = odd();
        // Encoded outside kiln (Python's base64): the key, "u:KEY", "ab:KEY" and "x" with the
        // key's first 20 characters. What stays visible is at most the prefix's own characters
        // and the last one or two, which mix in padding.
        let cases = [
            (
                "c2stbGl2ZS1+fn4+Pj4/Pz8tMDEyMzQ1Njc4OWFiY2RlZg==",
                "[redacted]g==",
            ),
            (
                "c2stbGl2ZS1-fn4-Pj4_Pz8tMDEyMzQ1Njc4OWFiY2RlZg==",
                "[redacted]g==",
            ),
            (
                "c2stbGl2ZS1-fn4-Pj4_Pz8tMDEyMzQ1Njc4OWFiY2RlZg",
                "[redacted]g",
            ),
            (
                "dTpzay1saXZlLX5+fj4+Pj8/Py0wMTIzNDU2Nzg5YWJjZGVm",
                "dTp[redacted]",
            ),
            (
                "YWI6c2stbGl2ZS1-fn4-Pj4_Pz8tMDEyMzQ1Njc4OWFiY2RlZg",
                "YWI6[redacted]g",
            ),
            ("eHNrLWxpdmUtfn5+Pj4+Pz8/LTAx", "eH[redacted]"),
        ];
        for (encoded, want) in cases {
            let text = format!("Authorization: Basic {encoded}");
            assert_eq!(s.redact(&text), format!("Authorization: Basic {want}"));
        }
    }

    #[test]
    fn a_short_key_is_redacted_whole_only() {
        let s = Secrets::new(["abcdefghij".to_string()]);
        assert_eq!(s.redact("abcdefghi"), "abcdefghi");
        assert_eq!(s.redact("xabcdefghijx"), "x[redacted]x");
    }

    #[test]
    fn a_prefix_split_across_chunks_never_reaches_the_sink_and_the_rest_is_flushed() {
        let seen = Arc::new(Mutex::new(String::new()));
        let out = seen.clone();
        let inner: TextSink = Arc::new(move |t: &str| out.lock().expect("lock").push_str(t));
        let guard = odd().guard_sink(inner);
        let sink = guard.sink();
        for part in ["see sk-li", "ve-~~~>>", ">??", " ok; 0123", "456789ab"] {
            sink(part);
            let now = seen.lock().expect("lock").clone();
            assert!(!now.contains("sk-li") && !now.contains("01234"), "{now}");
        }
        // The stream ends inside a key's run: what was held back goes out redacted.
        guard.flush();
        assert_eq!(*seen.lock().expect("lock"), "see [redacted] ok; [redacted]");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

        #[test]
        fn no_run_of_a_key_or_of_its_base64_survives(
            key in "[A-Za-z0-9_~+/-]{20,60}",
            from in 0usize..60,
            len in MIN_RUN..60,
            before in "[a-z :]{0,30}",
            after in "[a-z :]{0,30}",
            head in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..6),
            cuts in proptest::collection::vec(1usize..20, 0..8),
        ) {
            let s = Secrets::new([key.clone()]);
            let from = from % (key.len() - MIN_RUN + 1);
            let run = &key[from..(from + len).min(key.len())];
            let text = format!("{before}{run}{after}");
            proptest::prop_assert!(!s.redact(&text).contains(run), "{}", text);

            // Streamed in pieces, it never reaches the sink either.
            let seen = Arc::new(Mutex::new(String::new()));
            let out = seen.clone();
            let guard = s.guard_sink(Arc::new(move |t: &str| out.lock().expect("lock").push_str(t)));
            let sink = guard.sink();
            let mut rest = text.as_str();
            for cut in cuts {
                let (piece, tail) = rest.split_at(cut.min(rest.len()));
                sink(piece);
                rest = tail;
            }
            sink(rest);
            guard.flush();
            let streamed = seen.lock().expect("lock").clone();
            proptest::prop_assert!(!streamed.contains(run), "{}", streamed);

            // Encoded after a few other bytes, in either alphabet, padded or not: no run of
            // twelve of its characters is left.
            let mut bytes = head;
            bytes.extend_from_slice(key.as_bytes());
            for engine in [
                &base64::engine::general_purpose::STANDARD,
                &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            ] {
                let encoded = engine.encode(&bytes);
                let said = s.redact(&encoded);
                for w in encoded.as_bytes().windows(MIN_RUN) {
                    let w = String::from_utf8_lossy(w);
                    proptest::prop_assert!(!said.contains(w.as_ref()), "{} in {}", w, said);
                }
            }
        }
    }
}
