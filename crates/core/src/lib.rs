//! kiln's core: what every layer above speaks, with no script engine, HTTP server, MCP or
//! durable-execution crate beneath it.
//!
//! Capabilities and grants ([`capability`], with `net` read by kiln-egress), JSON Schemas
//! from params ([`schema`], [`schema::validate`]), tools and how a call ends ([`tool`], with its
//! parts, meta, call policies and [`tool::running`]; [`failure`]), the context a call knows
//! ([`context`], with its call events, its approver and [`context::runner`], the seam to what
//! runs beyond tools: agents' runs and the run log, which the host implements), rate limits,
//! approvals, the neutral model types ([`model`], with content blocks and the
//! [`model::LocalModel`] seam), and errors ([`error`], with what a door shows and the nearest
//! name for "did you mean").
//!
//! May depend on: kiln-egress.

#![warn(missing_docs)]

pub mod approval;
pub mod cancel;
pub mod capability;
pub mod context;
pub mod defaults;
pub mod duration;
pub mod error;
pub mod failure;
pub mod model;
pub mod ratelimit;
pub mod schema;
pub mod services;
pub mod telemetry;
pub mod tool;
