//! One code-mode program evaluated: compiled, run under its deadline and budget with the
//! tools as functions, `parallel` and `finish`, and its value made JSON. The same code runs
//! in a worker process (`worker`) and, for an embedder that keeps no pool, in the caller's.

use crate::convert::{to_dynamic, to_json};
use crate::imports::ModuleCache;
use crate::program::error::{program_error, runtime_error};
use crate::sandbox::{self, Limits, PrintSink};
use kiln_core::context::call_events::CallEvents;
use kiln_core::tool::{FailureKind, ToolFailure};
use rhai::{Dynamic, Engine, EvalAltResult, Map, Position};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Printed lines a program may hand back, and characters of each.
pub const MAX_PRINTS: usize = 100;
/// Characters of one printed line handed back.
pub const MAX_PRINT_CHARS: usize = 2_000;
/// Threads a program's `parallel` branches may hold at once, nested ones included; past it a
/// batch runs its closures one after another on the thread that asked. (Each thread costs
/// its stack and its allocator's heap in the worker's capped address space.)
pub const MAX_BRANCH_THREADS: usize = 8;

/// A tool call made by a program: the tool's name and its arguments, answered with the
/// tool's value or the message the program sees as the error.
pub type CallTool = Arc<dyn Fn(&str, Value) -> Result<Value, String> + Send + Sync>;

/// What to evaluate and under which bounds.
#[derive(Debug, Clone)]
pub struct ProgramSpec {
    /// The program's source.
    pub code: String,
    /// The names of the tools it may call.
    pub tools: Vec<String>,
    /// `parallel` closures run at once (1: one at a time, as a durable run needs).
    pub max_parallel: usize,
    /// When the program must have ended.
    pub deadline: Instant,
}

/// A program's value and the lines it printed.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluated {
    /// The value of its last expression, or what it gave `finish`.
    pub value: Value,
    /// The lines it printed (at most [`MAX_PRINTS`], each cut to [`MAX_PRINT_CHARS`]).
    pub printed: Vec<String>,
}

/// What a running program shares with its functions.
struct Running {
    finished: Mutex<Option<Dynamic>>,
    printed: Mutex<Vec<String>>,
    branch_threads: AtomicUsize,
}

/// Where a program's `progress(...)` and `emit(...)` go: the calling tool's events (in the
/// host), or the pipe to the host (in a worker).
pub type Notes = Option<Arc<CallEvents>>;

/// Evaluates `spec`, each tool call going to `call` and its progress and events to `notes`,
/// stopping at the deadline or when `cancel` is set.
pub fn evaluate(
    spec: &ProgramSpec,
    call: CallTool,
    notes: Notes,
    cancel: Option<Arc<AtomicBool>>,
) -> Result<Evaluated, ToolFailure> {
    sandbox::dropping_captures(|| evaluate_collected(spec, call, notes, cancel))
}

fn evaluate_collected(
    spec: &ProgramSpec,
    call: CallTool,
    notes: Notes,
    cancel: Option<Arc<AtomicBool>>,
) -> Result<Evaluated, ToolFailure> {
    let code = spec.code.as_str();
    let running = Arc::new(Running {
        finished: Mutex::new(None),
        printed: Mutex::new(Vec::new()),
        branch_threads: AtomicUsize::new(0),
    });
    let mut engine = engine(&running, &spec.tools, call);
    crate::host::out::register_notes(&mut engine, Arc::new(move || notes.clone()));
    let ast = engine.compile(code).map_err(|e| {
        let pos = e.position();
        program_error(code, pos, &e.err_type().to_string())
    })?;
    let ast = Arc::new(ast);
    register_parallel(&mut engine, ast.clone(), spec, cancel.clone(), &running);
    // A script function shadows a registered one: a program redefining a tool would run
    // its own version and never call the tool.
    if let Some(f) = ast
        .iter_functions()
        .find(|f| spec.tools.iter().any(|t| *t == f.name))
    {
        return Err(program_error(
            code,
            Position::NONE,
            &format!(
                "{} is a tool: call it as {}(#{{ ... }}), do not define it",
                f.name, f.name
            ),
        ));
    }
    let result = sandbox::with_watch(Some(spec.deadline), cancel, || {
        engine.eval_ast::<Dynamic>(&ast)
    });
    let finished = running.finished.lock().ok().and_then(|mut f| f.take());
    let value = match (result, finished) {
        (_, Some(v)) => v,
        (Ok(v), None) => v,
        (Err(e), None) => return Err(runtime_error(code, &e)),
    };
    let value = to_json(&value).map_err(|e| {
        ToolFailure::visible(FailureKind::ToolError, format!("the program's value: {e}"))
    })?;
    let printed = running
        .printed
        .lock()
        .map(|p| p.clone())
        .unwrap_or_default();
    Ok(Evaluated { value, printed })
}

/// A sandboxed engine whose only functions besides pure Rhai are the tools, `finish`,
/// `parallel`, `progress` and `emit`.
fn engine(running: &Arc<Running>, tools: &[String], call: CallTool) -> Engine {
    let sink: PrintSink = {
        let running = running.clone();
        Arc::new(move |line: &str| {
            if let Ok(mut p) = running.printed.lock()
                && p.len() < MAX_PRINTS
            {
                p.push(truncate(line));
            }
        })
    };
    // No scripts folders: a program imports nothing.
    let mut engine = sandbox::build_engine(
        &Limits::default(),
        Vec::new(),
        ModuleCache::default(),
        Some(sink),
    );
    let done = running.clone();
    engine.register_fn(
        "finish",
        move |value: Dynamic| -> Result<(), Box<EvalAltResult>> {
            if let Ok(mut f) = done.finished.lock() {
                *f = Some(value);
            }
            Err(EvalAltResult::ErrorTerminated("finish".into(), Position::NONE).into())
        },
    );
    for name in tools {
        let with_args = tool_fn(name.clone(), call.clone());
        let bare = with_args.clone();
        engine.register_fn(name.as_str(), move |args: Map| {
            with_args(Dynamic::from_map(args))
        });
        engine.register_fn(name.as_str(), move || bare(Dynamic::from_map(Map::new())));
    }
    engine
}

type ToolFn = Arc<dyn Fn(Dynamic) -> Result<Dynamic, Box<EvalAltResult>> + Send + Sync>;

/// A tool as a function of the program: its arguments made JSON, the call made through
/// `call`, its value made Rhai again.
fn tool_fn(name: String, call: CallTool) -> ToolFn {
    Arc::new(move |args: Dynamic| {
        let args = to_json(&args).map_err(|e| format!("{name}(): arguments: {e}"))?;
        match call(&name, args) {
            Ok(v) => Ok(to_dynamic(&v)),
            Err(message) => Err(message.into()),
        }
    })
}

/// `parallel([|| a(...), || b(...)])`: runs the closures at the same time (at most
/// `max_parallel` at once, each under the program's deadline and cancellation) and returns
/// their values in order; the first error fails the whole.
fn register_parallel(
    engine: &mut Engine,
    ast: Arc<rhai::AST>,
    spec: &ProgramSpec,
    cancel: Option<Arc<AtomicBool>>,
    running: &Arc<Running>,
) {
    let (deadline, max_parallel) = (spec.deadline, spec.max_parallel.max(1));
    let running = running.clone();
    engine.register_fn(
        "parallel",
        move |call: rhai::NativeCallContext, jobs: rhai::Array| -> Result<rhai::Array, Box<EvalAltResult>> {
            let jobs: Vec<rhai::FnPtr> = jobs
                .into_iter()
                .map(|j| {
                    j.try_cast::<rhai::FnPtr>()
                        .ok_or_else(|| "parallel(): expects a list of closures, such as [|| f(#{ }), || g(#{ })]".to_string())
                })
                .collect::<Result<_, _>>()?;
            let engine = call.engine();
            let mut values = Vec::with_capacity(jobs.len());
            for batch in jobs.chunks(max_parallel) {
                let threads = &running.branch_threads;
                let taken = threads.fetch_add(batch.len(), Ordering::SeqCst);
                let results = if batch.len() < 2 || taken + batch.len() > MAX_BRANCH_THREADS {
                    // Too many threads already (nested parallel): one after another, here.
                    threads.fetch_sub(batch.len(), Ordering::SeqCst);
                    batch.iter().map(|job| job.call::<Dynamic>(engine, &ast, ())).collect()
                } else {
                    let out = run_batch(batch, engine, &ast, deadline, cancel.clone());
                    threads.fetch_sub(batch.len(), Ordering::SeqCst);
                    out
                };
                for r in results {
                    values.push(r?);
                }
            }
            Ok(values)
        },
    );
}

/// One batch of closures, each on its own thread.
fn run_batch(
    batch: &[rhai::FnPtr],
    engine: &Engine,
    ast: &rhai::AST,
    deadline: Instant,
    cancel: Option<Arc<AtomicBool>>,
) -> Vec<Result<Dynamic, Box<EvalAltResult>>> {
    // The closures share what is left of the program's memory budget, and the program's
    // captured variables (emptied when the program ends).
    let share = kiln_budget::remaining() / batch.len().max(1);
    let cells = rhai::captured::Cells::current().unwrap_or_default();
    std::thread::scope(|s| {
        let running: Vec<_> = batch
            .iter()
            .map(|job| {
                let (cancel, cells) = (cancel.clone(), &cells);
                let work = move || {
                    cells.enter(|| {
                        sandbox::with_watch(Some(deadline), cancel, || {
                            kiln_budget::with_budget(share, || job.call::<Dynamic>(engine, ast, ()))
                        })
                    })
                };
                // No thread to be had (the worker's memory cap): the closure runs when its
                // turn comes, on this thread.
                std::thread::Builder::new()
                    .spawn_scoped(s, work)
                    .map_err(|_| job)
            })
            .collect();
        running
            .into_iter()
            .map(|h| match h {
                Ok(h) => h
                    .join()
                    .unwrap_or_else(|_| Err("parallel(): a closure panicked".into())),
                Err(job) => job.call::<Dynamic>(engine, ast, ()),
            })
            .collect()
    })
}

/// A printed line cut to [`MAX_PRINT_CHARS`] characters.
pub fn truncate(line: &str) -> String {
    match line.char_indices().nth(MAX_PRINT_CHARS) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_string(),
    }
}
