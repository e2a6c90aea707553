//! Rhai: the sandboxed engine, the DSL builders, host functions and the file loader.

pub mod dsl;
pub mod host_fns;
pub mod host_io;
pub mod imports;
pub mod loader;
pub mod math;
pub mod sandbox;
pub mod scan;

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
}

/// Builds kiln's engine: sandbox + DSL + host functions.
pub fn engine(
    limits: &sandbox::Limits,
    roots: Vec<PathBuf>,
    print: Option<sandbox::PrintSink>,
) -> Engine {
    let mut engine = sandbox::build_engine(limits, roots, print);
    dsl::register(&mut engine);
    host_fns::register(&mut engine);
    host_io::register(&mut engine);
    engine
}
