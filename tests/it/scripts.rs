//! The DSL and what scripts declare: tools, contracts, pipelines, the planner, code mode, reloads, renames, the run log's steps.

pub(crate) mod agent_loop;
pub(crate) mod code_mode;
pub(crate) mod contracts;
pub(crate) mod dsl;
pub(crate) mod exec;
pub(crate) mod library;
pub(crate) mod partial_load;
pub(crate) mod pipeline;
pub(crate) mod pipes;
pub(crate) mod planner;
pub(crate) mod ratelimit;
pub(crate) mod reload;
pub(crate) mod renames;
pub(crate) mod spec;
pub(crate) mod tool_meta;
