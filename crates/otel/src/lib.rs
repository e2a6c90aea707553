//! kiln's traces.
//!
//! kiln's crates describe their work as `tracing` spans named and attributed after the
//! OpenTelemetry GenAI semantic conventions (`invoke_agent {agent}`, `chat {model}`,
//! `execute_tool {tool}`: see docs/operations.md). This crate carries their W3C trace context
//! across kiln's doors ([`context`]: a `traceparent` header, an MCP request's `_meta`), and,
//! with feature `export`, sends them to a collector over OTLP ([`export`]).

pub mod context;
#[cfg(feature = "export")]
pub mod export;
