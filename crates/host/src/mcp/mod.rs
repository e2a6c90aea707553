//! The MCP client side of the host: [`mount`] puts the tools of outside MCP servers (those
//! scripts declare with `mcp_server(...)` and those `--mcp` mounts) into the registry as
//! `SERVER__TOOL`, supervising and remounting them; it reaches the host only through
//! [`SourceSink`]. [`convert`] maps kiln's tools and outcomes to MCP's and back (the server door,
//! kiln-mcp, uses it too).

mod client_asks;
pub mod convert;
mod error;
pub mod mount;
pub mod oauth;
mod proxy;
mod recorded;
mod served_proxy;
mod servers;
mod sink;
mod state;
pub mod unstarted;

pub use error::McpError;
pub use kiln_registry::mount_spec::{MountSpec, SEPARATOR, Target};
pub use mount::{MOUNTED_AS_VAR, Mounts, ServerState};
pub use servers::{HostServers, ServerStatus};
pub use sink::SourceSink;
