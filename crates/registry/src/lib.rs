//! kiln's registry: what a load defines and the snapshot built from it.
//!
//! A load (the stdlib, the application's native tools, each script file, each mounted MCP
//! server) yields a [`LoadedFile`]: its tools, agents ([`agent_spec`], with the contracts of
//! their answers and budgets in [`contract`]), pipelines, declared MCP servers
//! ([`mount_spec`]), served resources and prompts ([`served`]), call policies and evals ([`eval_spec`]). The
//! [`Registry`] checks them against each other and is swapped in whole on every (re)load.
//! Tools an application writes in Rust ([`native`], [`dyn_tool`]) and agents offered as tools
//! ([`agent_tool`]) are built here too.
//!
//! May depend on: kiln-core, kiln-egress, kiln-pipeline.

#![warn(missing_docs)]

pub mod a2a_agent;
pub mod agent_spec;
pub mod agent_tool;
pub mod contract;
pub mod dyn_tool;
pub mod eval_spec;
pub mod fallback;
pub mod gemini_schema;
pub mod mount_spec;
pub mod native;
pub mod provider_kind;
pub mod reach;
pub mod registry;
pub mod served;
pub mod tool_search;

pub use registry::{LoadedFile, Origin, Registry};
