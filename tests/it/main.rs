//! Integration tests: one binary (one link) with a module per area.

mod adversarial;
mod agent_loop;
mod cli;
mod common;
mod conformance;
mod db;
mod dsl;
mod exec;
mod library;
mod peers;
mod planner;
mod reload;
mod repl;
mod sandbox;
mod serve;
mod serve_ops;
mod spec;
