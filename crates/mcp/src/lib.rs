//! kiln as an MCP server (the Model Context Protocol), an adapter over the library API:
//! [`McpServer`] serves the registry's tools to any MCP client over stdio or streamable HTTP
//! (the 2025-11-25 handshake and the 2026-07-28 stateless revision). `tools/list` follows the
//! caller's grants, `tools/call` goes through `Host::call` (validation, the guard, the run log),
//! `--agents` offers agents as `ask_AGENT` through `Host::run`; `ask` grants are asked of the
//! client, progress and logs become notifications, and JSON-RPC's own errors are answered
//! before rmcp sees a message ([`frames`]).
//!
//! May depend on: kiln-core, kiln-egress, kiln-registry, kiln-project (its defaults), kiln-script (code mode's tools), kiln-agent, kiln-host (with
//! `mcp`: its conversions and errors).

#![warn(missing_docs)]

pub mod actor;
mod ask;
mod caller;
pub mod frames;
pub mod http;
pub mod issuer;
mod listen;
mod listing;
mod notify;
mod served;
mod server;
mod task_call;
pub mod tasks;
mod trace;

pub use http::{HttpOptions, McpEndpoint, router};
pub use server::McpServer;
