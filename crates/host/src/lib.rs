//! kiln's host: [`Host`] (the shared engine, the loaded files, the current registry snapshot),
//! its builder and the library API ([`api`]: call, run, run_stream, watch), hot reload
//! ([`reload`]), the run log and store over kiln-db, and — with the `mcp` feature — the MCP
//! servers scripts declare or `--mcp` mounts ([`mcp`]), which reach the host only through
//! [`mcp::SourceSink`]. The host implements the lower layers' seams: the loop's
//! [`kiln_agent::RunHost`] and the pipeline's [`kiln_core::context::runner::AgentRunner`].
//!
//! May depend on: kiln-core, kiln-egress, kiln-pipeline, kiln-registry, kiln-project, kiln-providers, kiln-script, kiln-db, kiln-agent (and rmcp with
//! `mcp`).

#![warn(missing_docs)]

pub mod admission;
pub mod api;
mod host;
#[cfg(feature = "mcp")]
pub mod mcp;
mod pipelines;
pub mod reload;

pub use api::{CallOptions, HostBuilder, RunStream, WatchHandle};
pub use host::{Host, HostConfig};
pub use kiln_agent::Event;
pub use kiln_agent::RunOptions;
pub use reload::{script_files, test_files};

#[cfg(test)]
mod future_size_tests;
#[cfg(test)]
mod handler_tests;
