//! kiln's script layer: the sandboxed Rhai engine, the DSL builders (`tool`, `agent`,
//! `pipeline`, `mcp_server`), the host functions scripts call (gated by capability), imports
//! confined to the scripts folders, the file loader, the embedded stdlib, and the agent planner
//! as a [`kiln_core::model::LocalModel`].
//!
//! May depend on: kiln-core, kiln-egress, kiln-pipeline, kiln-registry.

#![warn(missing_docs)]

mod agent_dsl;
mod agent_load;
mod bounded;
pub mod code_mode;
mod contract_dsl;
pub mod convert;
pub mod dsl;
mod eval_cases;
mod eval_checks;
mod eval_dsl;
pub mod failure;
pub(crate) mod handler;
pub mod host_ask;
pub mod host_fns;
pub mod host_io;
pub mod host_net;
pub mod host_out;
pub mod imports;
pub mod loader;
pub mod math;
mod mcp_dsl;
mod meta_dsl;
mod model;
pub mod pipeline_dsl;
mod policy_dsl;
pub mod program;
mod program_error;
#[cfg(test)]
mod props;
mod rate_limit_dsl;
pub mod reference;
pub mod renames;
pub mod sandbox;
pub mod scan;
mod served_dsl;
pub mod stdlib;
mod unknown_fn;

use rhai::{AST, Engine};
use std::path::PathBuf;
use std::sync::Arc;

/// One compiled script file: the AST its handlers live in and the engine that runs them.
pub struct ScriptUnit {
    /// The compiled script.
    pub ast: AST,
    /// The shared sandboxed engine.
    pub engine: Arc<Engine>,
    /// Path of the file as shown in messages.
    pub path: String,
    /// A short hash of the source, naming this version of the file.
    pub version: String,
    /// Whether its handlers may run on the thread that drives the caller's runtime
    /// ([`scan::may_run_in_place`]).
    pub in_place: bool,
}

/// The location of a Rhai position in a script.
pub fn loc(path: &str, pos: rhai::Position) -> kiln_core::error::SourceLoc {
    kiln_core::error::SourceLoc::new(path, pos.line().unwrap_or(0), pos.position().unwrap_or(0))
}

/// A short, stable hash of a script's source (FNV-1a, 64 bits).
pub fn source_version(source: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in source.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Builds kiln's engine: sandbox + DSL + host functions.
pub fn engine(
    limits: &sandbox::Limits,
    roots: Vec<PathBuf>,
    print: Option<sandbox::PrintSink>,
) -> Engine {
    engine_with_modules(limits, roots, imports::ModuleCache::default(), print)
}

/// [`engine`], keeping compiled modules in `modules` (which the host empties on reload).
pub fn engine_with_modules(
    limits: &sandbox::Limits,
    roots: Vec<PathBuf>,
    modules: imports::ModuleCache,
    print: Option<sandbox::PrintSink>,
) -> Engine {
    let mut engine = sandbox::build_engine(limits, roots, modules, print);
    bounded::register(&mut engine);
    // The builders, each registered by its own file (none of them registers another).
    dsl::register(&mut engine);
    agent_dsl::register(&mut engine);
    rate_limit_dsl::register(&mut engine);
    meta_dsl::register(&mut engine);
    mcp_dsl::register(&mut engine);
    pipeline_dsl::register(&mut engine);
    served_dsl::register(&mut engine);
    policy_dsl::register(&mut engine);
    eval_dsl::register(&mut engine);
    host_fns::register(&mut engine);
    host_io::register(&mut engine);
    host_net::register(&mut engine);
    host_out::register(&mut engine);
    host_ask::register(&mut engine);
    engine
}

/// Parameters of the handler minus curried (captured) values; `None` when it is not defined.
pub(crate) fn handler_arity(ast: &rhai::AST, f: &rhai::FnPtr) -> Option<usize> {
    ast.iter_functions()
        .filter(|m| m.name == f.fn_name())
        .map(|m| m.params.len().saturating_sub(f.curry().len()))
        .min()
}

/// Test files end in `.test.rhai`; the script loader and the reloader skip them.
pub fn is_test_file(path: &std::path::Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".test.rhai"))
}
