//! Integration tests: one binary (one link) with a module per area.

mod adversarial;
mod agent_loop;
mod cli;
mod common;
mod conformance;
mod db;
mod dsl;
mod durable;
mod egress;
mod exec;
mod hostile;
mod journal;
mod ktest;
mod library;
mod mcp;
mod mcp_mount;
mod mcp_peers;
mod peers;
mod pipeline;
mod pipes;
mod planner;
mod ratelimit;
mod reload;
mod repl;
mod sandbox;
mod spec;
