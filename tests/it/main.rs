//! Integration tests: one binary (one link) with a module per area.

// As in the `kiln` binary: scripts run in this process are held to their memory budget.
#[global_allocator]
static ALLOCATOR: kiln::budget::Counting<std::alloc::System> =
    kiln::budget::Counting(std::alloc::System);

mod a2a;
mod acp;
mod agents;
mod approvals;
mod architecture;
mod commands;
mod common;
mod console;
mod docs;
mod doors;
mod durable;
mod evals;
mod frontends;
mod mcp;
mod runlog;
mod scripts;

mod walls;
mod wires;
