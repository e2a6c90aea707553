//! Integration tests: one binary (one link) with a module per area.

// As in the `kiln` binary: scripts run in this process are held to their memory budget.
#[global_allocator]
static ALLOCATOR: kiln::budget::Counting<std::alloc::System> =
    kiln::budget::Counting(std::alloc::System);

mod adversarial;
mod agent_loop;
mod approvals;
mod architecture;
mod claude_code;
mod cli;
mod code_mode;
mod commit_order;
mod common;
mod conformance;
mod contracts;
mod db;
mod docs;
mod door_errors;
mod dsl;
mod durable;
mod egress;
mod exec;
mod gemini;
mod grants;
mod hostile;
mod http_doors;
mod journal;
mod ktest;
mod library;
mod limits;
mod lsp;
mod mcp;
mod mcp_conformance;
mod mcp_mount;
mod mcp_oauth;
mod mcp_output_peers;
mod mcp_peers;
mod mcp_sampling;
mod mcp_served_peers;
mod mcp_stateless;
mod mcp_tasks;
mod mcp_tool_output;
mod memory;
mod partial_load;
mod peers;
mod pipeline;
mod pipes;
mod planner;
mod policies;
mod project;
mod ratelimit;
mod reload;
mod renames;
mod repl;
mod runlog_ops;
mod sandbox;
mod serve;
mod serve_oauth;
mod serve_ops;
mod serve_tokens;
mod served;
mod spec;
mod tool_asks;
mod tool_asks_http;
mod tool_meta;
mod traces;
