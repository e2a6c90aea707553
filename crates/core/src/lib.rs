//! kiln's core: what every layer above speaks, with no script engine, HTTP server, MCP or
//! durable-execution crate beneath it.
//!
//! Capabilities and grants ([`capability`], with `net` read by kiln-egress), JSON Schemas
//! from params ([`schema`], [`validate`]), tools and how a call ends ([`tool`], [`failure`],
//! [`running`]), the context a call knows ([`context`]), content blocks, call events, rate
//! limits, the registry snapshot, native tools and host functions ([`native`]), the neutral
//! model types ([`model`], with the [`model::LocalModel`] seam), and the specs of agents,
//! pipelines and MCP mounts, with the pipeline runner ([`pipeline`], reaching agents through
//! [`pipeline::AgentRunner`]).
//!
//! May depend on: kiln-egress.

#![warn(missing_docs)]

pub mod agent_spec;
pub mod agent_tool;
pub mod approval;
pub mod call_events;
pub mod cancel;
pub mod capability;
pub mod content;
pub mod context;
pub mod contract;
pub mod duration;
pub mod dyn_tool;
pub mod error;
pub mod failure;
pub mod model;
pub mod mount_spec;
pub mod native;
pub mod pipeline;
pub mod policy;
pub mod public_error;
pub mod ratelimit;
pub mod registry;
pub mod running;
pub mod schema;
pub mod served;
pub mod services;
pub mod suggest;
pub mod telemetry;
pub mod tool;
pub mod tool_meta;
pub mod tool_parts;
pub mod validate;
