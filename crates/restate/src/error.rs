//! [`DurableError`]: what went wrong calling Restate, shared by the client and the registration.

/// What went wrong serving or registering a worker.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DurableError {
    /// The admin API could not be reached.
    #[error("cannot reach the Restate admin API at {url}: {message}")]
    Unreachable {
        /// The URL tried.
        url: String,
        /// Why.
        message: String,
    },
    /// The admin API refused the registration.
    #[error("Restate refused to register {endpoint} (HTTP {status}): {body}")]
    Refused {
        /// The worker address.
        endpoint: String,
        /// The HTTP status.
        status: u16,
        /// Restate's explanation.
        body: String,
    },
    /// A URL argument is not an http(s) URL.
    #[error("{arg}: \"{value}\" is not an http:// or https:// URL")]
    BadUrl {
        /// The argument.
        arg: &'static str,
        /// What was given.
        value: String,
    },
    /// A request identity key Restate signs its requests with is malformed.
    #[error("--restate-identity-key: {0}")]
    BadIdentityKey(String),
    /// Restate answered a call of the front door with an error.
    #[error("Restate answered {url} with HTTP {status}: {body}")]
    Answered {
        /// The URL called.
        url: String,
        /// The HTTP status.
        status: u16,
        /// Restate's explanation.
        body: String,
    },
}
