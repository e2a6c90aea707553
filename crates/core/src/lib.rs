//! kiln's core: what every layer above speaks, with no script engine, HTTP server, MCP or
//! durable-execution crate beneath it.
//!
//! Capabilities and grants ([`capability`], with `net` read by kiln-egress), JSON Schemas
//! from params ([`schema`], [`validate`]), tools and how a call ends ([`tool`], [`failure`],
//! [`running`]), the context a call knows ([`context`]), content blocks, call events, rate
//! limits, call policies and approvals, the neutral model types ([`model`], with the
//! [`model::LocalModel`] seam), and the seam to what runs beyond tools ([`runner`]: agents'
//! runs and the run log, which the host implements).
//!
//! May depend on: kiln-egress.

#![warn(missing_docs)]

pub mod approval;
mod approver;
pub mod call_events;
pub mod cancel;
pub mod capability;
pub mod content;
pub mod context;
pub mod defaults;
pub mod duration;
pub mod error;
pub mod failure;
pub mod model;
pub mod policy;
pub mod public_error;
pub mod ratelimit;
pub mod runner;
pub mod running;
pub mod schema;
pub mod services;
pub mod suggest;
pub mod telemetry;
pub mod tool;
pub mod tool_meta;
pub mod tool_parts;
pub mod validate;
