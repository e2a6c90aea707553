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
pub mod export;
pub mod report;
pub mod runner;
#[cfg(test)]
mod table_tests;
pub mod watch;

pub use runner::{Outcome, RunConfig, TestResult, Tests};

/// Adds what test files call (`test`, the assertions, `call_tool` with grants, `run_agent`,
/// `fake_http`, ...) to an engine, e.g. one whose definitions are written for editors.
pub fn register(engine: &mut rhai::Engine) {
    api::register(engine);
    agent::register(engine);
}

pub use kiln_script::is_test_file;

/// What goes wrong finding, loading or exporting tests.
#[derive(Debug, thiserror::Error)]
pub enum TestError {
    /// A path given on the command line does not exist.
    #[error("{0}: no such file or folder")]
    NoSuchPath(String),
    /// A folder could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The folder or file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The runtime the tests' agent runs and scripted models use could not start.
    #[error("cannot start the test runtime: {0}")]
    Runtime(std::io::Error),
    /// The host could not be built.
    #[error(transparent)]
    Host(#[from] kiln_core::error::HostError),
    /// The log could not be read.
    #[error(transparent)]
    Db(#[from] kiln_db::DbError),
    /// No run with this id was logged.
    #[error("no run \"{0}\" in the log (see `kiln logs`)")]
    UnknownRun(String),
    /// The watcher could not start.
    #[error("cannot watch {path}: {message}")]
    Watch {
        /// The folder.
        path: String,
        /// Why.
        message: String,
    },
}
