//! Provider errors: each names the provider and says what to do where it can.

/// Why a model request failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProviderError {
    /// The API key variable is not set.
    #[error("{provider}: no API key: set the {var} environment variable")]
    MissingKey {
        /// Provider name.
        provider: &'static str,
        /// Variable to set.
        var: String,
    },
    /// The service answered with an error status.
    #[error("{provider}: HTTP {status}: {message}")]
    Http {
        /// Provider name.
        provider: &'static str,
        /// HTTP status.
        status: u16,
        /// The service's error message.
        message: String,
    },
    /// The request did not complete (connect, timeout, reset).
    #[error("{provider}: request failed: {message}")]
    Transport {
        /// Provider name.
        provider: &'static str,
        /// What happened.
        message: String,
    },
    /// The reply could not be understood.
    #[error("{provider}: malformed reply: {message}")]
    Malformed {
        /// Provider name.
        provider: &'static str,
        /// What was wrong.
        message: String,
    },
    /// The token limit cut a tool call short; it was not executed.
    #[error(
        "{provider}: the reply hit max_tokens in the middle of tool call \"{tool}\"; the truncated call was not executed (raise max_tokens)"
    )]
    Truncated {
        /// Provider name.
        provider: &'static str,
        /// The tool whose call was cut.
        tool: String,
    },
    /// The stream carried an error event.
    #[error("{provider}: error in stream: {message}")]
    Stream {
        /// Provider name.
        provider: &'static str,
        /// The error.
        message: String,
    },
    /// A reply (or one line of a stream) is larger than its limit.
    #[error(
        "{provider}: {what} is larger than {limit} bytes (raise {setting}); it starts: {start}"
    )]
    TooLarge {
        /// Provider name.
        provider: &'static str,
        /// `the reply` or `one stream line`.
        what: &'static str,
        /// The limit in bytes.
        limit: usize,
        /// The flag and agent setting that raise it.
        setting: &'static str,
        /// The first bytes, quoted (at most a few hundred characters).
        start: String,
    },
    /// The wire cannot take what the conversation carries (an attachment); nothing was sent.
    #[error("{provider}: cannot take {what}; nothing was sent")]
    Unsupported {
        /// Provider name.
        provider: &'static str,
        /// What it cannot take, and why.
        what: String,
    },
    /// The Rhai planner failed.
    #[error("script planner: {0}")]
    Planner(String),
}

impl ProviderError {
    /// Whether a fallback chain tries its next model after this error (the member's own
    /// retries already spent): the service was busy or unreachable (429, 408, overload, 5xx,
    /// a timeout, a refused or reset connection, an overload announced inside a stream). An
    /// error the request itself caused (400, 401, 403, 404, 422...), a reply kiln could not
    /// read, a missing key or a planner's error is the run's error on every model alike.
    pub fn falls_back(&self) -> bool {
        match self {
            ProviderError::Http {
                status, message, ..
            } => matches!(status, 408 | 429 | 500..=599) || overloaded(message),
            ProviderError::Transport { .. } => true,
            ProviderError::Stream { message, .. } => overloaded(message),
            ProviderError::MissingKey { .. }
            | ProviderError::Malformed { .. }
            | ProviderError::Truncated { .. }
            | ProviderError::TooLarge { .. }
            | ProviderError::Unsupported { .. }
            | ProviderError::Planner(_) => false,
        }
    }
}

/// An error message that says the service is overloaded or rate limited.
fn overloaded(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("overloaded") || m.contains("rate_limit") || m.contains("rate limit")
}

/// Most characters of a reply quoted in an error: enough to recognise it, never megabytes.
pub const QUOTE_CHARS: usize = 300;

/// The start of `text` for an error message, with its full size when it is cut.
pub fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_CHARS) {
        None => text.to_string(),
        Some((end, _)) => format!("{}… ({} bytes in all)", &text[..end], text.len()),
    }
}

/// [`quote`] for bytes that may not be UTF-8.
pub fn quote_bytes(bytes: &[u8]) -> String {
    // Four bytes per character at most, so this prefix holds every quoted character.
    let cut = bytes.len().min(QUOTE_CHARS * 4);
    let head = String::from_utf8_lossy(&bytes[..cut]);
    match head.char_indices().nth(QUOTE_CHARS) {
        None if cut == bytes.len() => head.into_owned(),
        None => format!("{head}… ({} bytes in all)", bytes.len()),
        Some((end, _)) => format!("{}… ({} bytes in all)", &head[..end], bytes.len()),
    }
}
