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
    /// The Rhai planner failed.
    #[error("script planner: {0}")]
    Planner(String),
}
