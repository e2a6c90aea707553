//! `kiln test`: test files (`*.test.rhai`) holding `test("name", || { ... })` blocks.
//!
//! Each test runs against a host of its own (a temporary workspace, an in-memory store, HTTP
//! answered by `fake_http` routes only) under a deadline, so tests never touch the network, the
//! real store or each other. `api` is what test scripts call, `agent` runs agents against a
//! scripted model (an in-process `kiln mock`), `runner` finds, loads and runs tests in parallel,
//! `report` renders results (JSON, JUnit XML), `export` turns a logged run into a scenario.
//!
//! May depend on: kiln-core, kiln-registry, kiln-providers, kiln-script, kiln-db, kiln-agent, kiln-host,
//! kiln-mock.

#![warn(missing_docs)]

mod agent;
mod api;
pub mod diff;
mod env;
mod error;
pub mod export;
pub mod report;
pub mod runner;
#[cfg(test)]
mod table_tests;
pub mod watch;

pub use agent::{comparable_message, request_deltas};
pub use error::TestError;
pub use runner::{Outcome, RunConfig, TestResult, Tests, register};

pub use kiln_script::is_test_file;
