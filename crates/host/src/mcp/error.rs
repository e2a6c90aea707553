//! [`McpError`]: what went wrong serving or mounting MCP, shared by the mount, its OAuth, the
//! proxy and the servers.

/// What went wrong serving or mounting MCP.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The protocol session could not start or ended with an error.
    #[error("MCP session failed: {0}")]
    Session(String),
    /// The HTTP address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// A `--mcp` mount was written wrong.
    #[error(transparent)]
    BadSpec(#[from] kiln_registry::mount_spec::BadMountSpec),
    /// A mounted server refused kiln's authorization (none, expired, or too few scopes).
    #[error("MCP server \"{server}\": {message}")]
    Unauthorized {
        /// The server's name.
        server: String,
        /// What it wants, and the login that gives it.
        message: String,
    },
    /// A mounted server could not be started or reached.
    #[error("MCP server \"{server}\": {message}")]
    Server {
        /// The server's name.
        server: String,
        /// What happened.
        message: String,
    },
}
