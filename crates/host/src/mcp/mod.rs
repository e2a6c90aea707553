//! The MCP client side of the host: [`mount`] puts the tools of outside MCP servers (those
//! scripts declare with `mcp_server(...)` and those `--mcp` mounts) into the registry as
//! `SERVER__TOOL`, supervising and remounting them; it reaches the host only through
//! [`SourceSink`]. [`convert`] maps kiln's tools and outcomes to MCP's and back (the server door,
//! kiln-mcp, uses it too).

mod client_asks;
pub mod convert;
pub mod mount;
pub mod oauth;
mod proxy;
mod served_proxy;
mod servers;
mod sink;
mod state;

pub use kiln_registry::mount_spec::{MountSpec, SEPARATOR, Target};
pub use mount::{MOUNTED_AS_VAR, Mounts, ServerState};
pub use servers::{HostServers, ServerStatus};
pub use sink::SourceSink;

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
