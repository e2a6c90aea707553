//! kiln's script layer: the sandboxed Rhai engine, the DSL builders (`tool`, `agent`,
//! `pipeline`, `mcp_server`), the host functions scripts call (gated by capability), imports
//! confined to the scripts folders, the file loader, the embedded stdlib, and the agent planner
//! as a [`kiln_core::model::LocalModel`].
//!
//! May depend on: kiln-core, kiln-egress, kiln-pipeline, kiln-registry.

#![warn(missing_docs)]

pub mod convert;
pub mod dsl;
pub mod failure;
pub(crate) mod handler;
pub mod host;
pub mod imports;
pub mod loader;
pub mod math;
mod model;
pub mod program;
#[cfg(test)]
mod props;
pub mod reference;
pub mod renames;
pub mod sandbox;
pub mod scan;
pub mod stdlib;

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
    sandbox::bounded::register(&mut engine);
    // The builders, each registered by its own file (none of them registers another).
    dsl::register(&mut engine);
    dsl::agent::register(&mut engine);
    dsl::rate_limit::register(&mut engine);
    dsl::meta::register(&mut engine);
    dsl::ui::register(&mut engine);
    dsl::mcp::register(&mut engine);
    dsl::a2a::register(&mut engine);
    dsl::pipeline::register(&mut engine);
    dsl::served::register(&mut engine);
    dsl::policy::register(&mut engine);
    dsl::eval::register(&mut engine);
    host::register(&mut engine);
    host::io::register(&mut engine);
    host::net::register(&mut engine);
    host::out::register(&mut engine);
    host::ask::register(&mut engine);
    host::terminal::register(&mut engine);
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
