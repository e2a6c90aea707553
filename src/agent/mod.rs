//! Agents: their spec and the tool-calling loop.

pub mod spec;

pub use spec::AgentSpec;
