//! Integration tests: one binary (one link) with a module per area.

mod agent_loop;
mod cli;
mod conformance;
mod common;
mod dsl;
mod exec;
mod sandbox;
mod spec;
