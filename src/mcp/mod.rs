//! kiln speaks MCP (the Model Context Protocol) both ways, as an adapter over the library API:
//! [`McpServer`] serves the registry's tools to any MCP client (stdio or streamable HTTP, the
//! 2025-11-25 handshake and the 2026-07-28 stateless revision), and [`mount`] puts the tools of
//! outside MCP servers into kiln's registry as `SERVER__TOOL`.

mod ask;
mod convert;
pub(crate) mod frames;
pub(crate) mod http;
pub mod mount;
mod notify;
mod proxy;
mod server;
mod servers;
mod spec;

pub use http::{HttpOptions, McpEndpoint, router};
pub use mount::{Mounts, ServerState};
pub use server::McpServer;
pub(crate) use servers::HostServers;
pub use servers::ServerStatus;
pub(crate) use spec::check_url;
pub use spec::{MountSpec, SEPARATOR, Target};

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
    #[error("bad MCP server spec \"{spec}\": {reason}")]
    BadSpec {
        /// The spec as given.
        spec: String,
        /// What is wrong with it.
        reason: String,
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
