//! Code mode: the model writes one Rhai program that calls the agent's tools as functions,
//! and kiln runs it in a sandbox of its own. The program reaches the tools and pure Rhai only
//! (no host functions, no imports); each nested call takes the tool's normal path
//! (`Tool::execute`: validation, the capability guard, approvals, rate limits, its deadline)
//! under the run's grants, within a budget of calls and the program's own deadline. A refused
//! or failed call is an error the program can catch with `try`/`catch`.

use crate::convert::{to_dynamic, to_json};
use crate::imports::ModuleCache;
use crate::program_error::{program_error, runtime_error};
use crate::sandbox::{self, Limits, PrintSink};
use kiln_core::context::CallContext;
use kiln_core::tool::{FailureKind, Handler, Tool, ToolFailure};
use kiln_core::tool_meta::Hints;
use kiln_core::tool_parts::ToolParts;
use kiln_registry::agent_spec::CodeMode;
use rhai::{Dynamic, Engine, EvalAltResult, Map, Position};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The tool the model is offered in code mode.
pub const RUN_CODE: &str = "run_code";

/// Printed lines a program may hand back, and bytes of each.
const MAX_PRINTS: usize = 100;
const MAX_PRINT_BYTES: usize = 2_000;

/// How Rhai differs from what models write by habit, said once in the tool's description.
const PRIMER: &str = "The program is Rhai, not JavaScript: object maps are #{ key: value } \
(a bare { } is a block), closures are |x| x + 1, variables are `let` (`const` cannot be \
reassigned), loops are `for item in list { }`, strings interpolate with `${x}` inside \
backticks, errors are caught with try { } catch (e) { }, and there is no null or undefined \
(use ()). Call each tool as a function with one object map of its arguments; run calls at \
the same time with parallel([|| f(#{ ... }), || g(#{ ... })]) (their values, in order); the \
program's value is its last expression, or finish(value).";

/// The tool that finds functions when there are too many to list.
pub const SEARCH_TOOLS: &str = "search_tools";

/// Past this many tools, `run_code` names them only and `search_tools` gives signatures.
pub const LIST_UP_TO: usize = 20;

/// Code mode's tools over `tools`: `run_code`, and `search_tools` past [`LIST_UP_TO`].
pub fn code_tools(tools: &[Arc<Tool>], mode: &CodeMode) -> Vec<Arc<Tool>> {
    let many = tools.len() > LIST_UP_TO;
    let mut out: Vec<Arc<Tool>> = run_code_tool(tools, mode, many).into_iter().collect();
    if many {
        out.extend(search_tool(tools));
    }
    out
}

/// `search_tools(query)`: the signatures and descriptions of the functions whose name or
/// description holds every word of the query.
pub fn search_tool(tools: &[Arc<Tool>]) -> Option<Arc<Tool>> {
    let listed: Vec<(String, String)> = tools
        .iter()
        .map(|t| (signature(t), t.description.clone()))
        .collect();
    let handler = kiln_registry::native::NativeTool::new(SEARCH_TOOLS, move |args: Value, _ctx: &CallContext| {
        let words: Vec<String> = args["query"]
            .as_str()
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_lowercase)
            .collect();
        let found: Vec<Value> = listed
            .iter()
            .filter(|(sig, desc)| {
                let text = format!("{sig} {desc}").to_lowercase();
                words.iter().all(|w| text.contains(w))
            })
            .take(20)
            .map(|(sig, desc)| json!({"function": sig, "description": desc}))
            .collect();
        async move { Ok(Value::Array(found)) }
    })
    .description("Finds the functions run_code programs can call: their signatures and descriptions, for the words of the query")
    .param("query", "string", json!({"desc": "words the function's name or description holds"}))
    // It only reads the list above, whatever the functions themselves may do.
    .hints(Hints {
        read_only: Some(true),
        destructive: Some(false),
        idempotent: Some(true),
        open_world: Some(false),
    });
    handler.into_tool().ok().map(Arc::new)
}

/// The `run_code` tool over `tools`; with `names_only`, the description names the functions
/// and `search_tools` gives their signatures.
fn run_code_tool(tools: &[Arc<Tool>], mode: &CodeMode, names_only: bool) -> Option<Arc<Tool>> {
    let parts = ToolParts {
        name: RUN_CODE.into(),
        description: describe(tools, names_only),
        requires: Vec::new(),
        schema: json!({
            "type": "object",
            "properties": {"code": {"type": "string", "description": "The Rhai program"}},
            "required": ["code"],
            "additionalProperties": false
        }),
        output_schema: None,
        exclusive: false,
        timeout: mode.timeout,
        retries: 0,
        rate_limit: None,
        loc: kiln_core::error::SourceLoc::new("<code mode>", 0, 0),
        title: Some("Run a program that calls the tools".into()),
        hints: reach_hints(tools),
        task: None,
        handler: Arc::new(CodeHandler {
            tools: tools.to_vec(),
            max_calls: mode.max_calls,
            max_parallel: mode.max_parallel.max(1),
        }),
    };
    parts.build().ok().map(Arc::new)
}

/// What a program over `tools` may do: read-only only when every tool it can call is,
/// destructive or open-world when any is, and idempotent only when read-only (a program of
/// idempotent calls need not be: `save(#{ n: read(#{}) + 1 })`). No tools: a pure computation.
fn reach_hints(tools: &[Arc<Tool>]) -> Hints {
    let each: Vec<_> = tools.iter().map(|t| t.hints()).collect();
    let read_only = each.iter().all(|h| h.read_only);
    Hints {
        read_only: Some(read_only),
        destructive: Some(each.iter().any(|h| h.destructive)),
        idempotent: Some(read_only),
        open_world: Some(each.iter().any(|h| h.open_world)),
    }
}

/// The description: what the tool does, the primer, and each tool as a function (or, with
/// `names_only`, their names and where to find their signatures).
fn describe(tools: &[Arc<Tool>], names_only: bool) -> String {
    let mut text = String::from(
        "Runs a program that calls the tools below as functions and returns its value. \
         Use it to make several calls in one step and compute with their results.\n",
    );
    text.push_str(PRIMER);
    if names_only {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        text.push_str(&format!(
            "\n\nFunctions ({}; search_tools gives their arguments): {}\n",
            names.len(),
            names.join(", ")
        ));
        return text;
    }
    text.push_str("\n\nFunctions:\n");
    for t in tools {
        text.push_str(&format!("- {}: {}\n", signature(t), t.description));
    }
    text
}

/// `name(#{ a: number, b?: string })` from the tool's schema.
fn signature(tool: &Tool) -> String {
    let required: Vec<&str> = tool.schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let fields: Vec<String> = tool.schema["properties"]
        .as_object()
        .map(|props| {
            props
                .iter()
                .map(|(name, s)| {
                    let ty = s["type"].as_str().unwrap_or("any");
                    let optional = if required.contains(&name.as_str()) {
                        ""
                    } else {
                        "?"
                    };
                    format!("{name}{optional}: {ty}")
                })
                .collect()
        })
        .unwrap_or_default();
    format!("{}(#{{ {} }})", tool.name, fields.join(", "))
}

/// Runs a program against the tools it was given.
struct CodeHandler {
    tools: Vec<Arc<Tool>>,
    max_calls: u32,
    max_parallel: usize,
}

/// What a running program shares with its functions.
struct Program {
    calls: AtomicU32,
    max_calls: u32,
    finished: Mutex<Option<Dynamic>>,
    printed: Mutex<Vec<String>>,
}

impl Handler for CodeHandler {
    fn records_nested(&self) -> bool {
        true
    }

    fn call(
        &self,
        _tool: &Tool,
        args: &Value,
        ctx: &CallContext,
        deadline: Instant,
    ) -> Result<Value, ToolFailure> {
        sandbox::dropping_captures(|| self.run_program(args, ctx, deadline))
    }
}

impl CodeHandler {
    /// One program: compiled, run under its deadline and budget, its value made JSON.
    fn run_program(
        &self,
        args: &Value,
        ctx: &CallContext,
        deadline: Instant,
    ) -> Result<Value, ToolFailure> {
        let code = args["code"].as_str().unwrap_or_default();
        let program = Arc::new(Program {
            calls: AtomicU32::new(0),
            max_calls: self.max_calls,
            finished: Mutex::new(None),
            printed: Mutex::new(Vec::new()),
        });
        let mut engine = self.engine(&program, ctx);
        let ast = engine.compile(code).map_err(|e| {
            let pos = e.position();
            program_error(code, pos, &e.err_type().to_string())
        })?;
        let ast = Arc::new(ast);
        // A durable run replays nested calls by their number, so they must be made in the
        // same order on every attempt: parallel() runs its closures one at a time there.
        let max_parallel = if ctx.run.steps.is_some() {
            1
        } else {
            self.max_parallel
        };
        register_parallel(&mut engine, ast.clone(), deadline, ctx, max_parallel);
        // A script function shadows a registered one: a program redefining a tool would run
        // its own version and never call the tool.
        if let Some(f) = ast
            .iter_functions()
            .find(|f| self.tools.iter().any(|t| t.name == f.name))
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
        let cancel = ctx.run.cancel.as_ref().map(|c| c.flag().clone());
        let result =
            sandbox::with_watch(Some(deadline), cancel, || engine.eval_ast::<Dynamic>(&ast));
        let finished = program.finished.lock().ok().and_then(|mut f| f.take());
        let value = match (result, finished) {
            (_, Some(v)) => v,
            (Ok(v), None) => v,
            (Err(e), None) => return Err(runtime_error(code, &e)),
        };
        let result = to_json(&value).map_err(|e| {
            ToolFailure::visible(FailureKind::ToolError, format!("the program's value: {e}"))
        })?;
        let printed = program
            .printed
            .lock()
            .map(|p| p.clone())
            .unwrap_or_default();
        let calls = program.calls.load(Ordering::Relaxed);
        Ok(match (result, printed.is_empty()) {
            (Value::Null, _) => json!({
                "result": null,
                "calls": calls,
                "printed": printed,
                "note": "the program's last expression has no value: end it with the value, or call finish(value)"
            }),
            (v, true) => v,
            (v, false) => json!({"result": v, "printed": printed}),
        })
    }

    /// A sandboxed engine whose only functions besides pure Rhai are the tools and `finish`.
    fn engine(&self, program: &Arc<Program>, ctx: &CallContext) -> Engine {
        let sink: PrintSink = {
            let program = program.clone();
            Arc::new(move |line: &str| {
                if let Ok(mut p) = program.printed.lock()
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
        let done = program.clone();
        engine.register_fn(
            "finish",
            move |value: Dynamic| -> Result<(), Box<EvalAltResult>> {
                if let Ok(mut f) = done.finished.lock() {
                    *f = Some(value);
                }
                Err(EvalAltResult::ErrorTerminated("finish".into(), Position::NONE).into())
            },
        );
        for tool in &self.tools {
            let call = nested(tool.clone(), ctx.clone(), program.clone());
            let bare = call.clone();
            engine.register_fn(tool.name.as_str(), move |args: Map| {
                call(Dynamic::from_map(args))
            });
            engine.register_fn(tool.name.as_str(), move || {
                bare(Dynamic::from_map(Map::new()))
            });
        }
        engine
    }
}

/// `parallel([|| a(...), || b(...)])`: runs the closures at the same time (at most
/// `max_parallel` at once, each under the program's deadline and cancellation) and returns
/// their values in order; the first error fails the whole.
fn register_parallel(
    engine: &mut Engine,
    ast: Arc<rhai::AST>,
    deadline: Instant,
    ctx: &CallContext,
    max_parallel: usize,
) {
    let cancel = ctx.run.cancel.as_ref().map(|c| c.flag().clone());
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
                // The closures share what is left of the program's memory budget, and the
                // program's captured variables (emptied when the program ends).
                let share = kiln_budget::remaining() / batch.len().max(1);
                let cells = rhai::captured::Cells::current().unwrap_or_default();
                let results: Vec<Result<Dynamic, Box<EvalAltResult>>> = std::thread::scope(|s| {
                    let running: Vec<_> = batch
                        .iter()
                        .map(|job| {
                            let (ast, cancel, cells) = (&ast, cancel.clone(), &cells);
                            s.spawn(move || {
                                cells.enter(|| sandbox::with_watch(Some(deadline), cancel, || {
                                    kiln_budget::with_budget(share, || job.call::<Dynamic>(engine, ast, ()))
                                }))
                            })
                        })
                        .collect();
                    running
                        .into_iter()
                        .map(|h| {
                            h.join()
                                .unwrap_or_else(|_| Err("parallel(): a closure panicked".into()))
                        })
                        .collect()
                });
                for r in results {
                    values.push(r?);
                }
            }
            Ok(values)
        },
    );
}

type NestedFn = Arc<dyn Fn(Dynamic) -> Result<Dynamic, Box<EvalAltResult>> + Send + Sync>;

/// A tool as a function of the program: its normal path, within the program's call budget.
fn nested(tool: Arc<Tool>, ctx: CallContext, program: Arc<Program>) -> NestedFn {
    Arc::new(move |args: Dynamic| {
        let n = program.calls.fetch_add(1, Ordering::Relaxed) + 1;
        if n > program.max_calls {
            return Err(format!(
                "{}(): the program's budget of {} tool calls is spent",
                tool.name, program.max_calls
            )
            .into());
        }
        // The run's budget counts a program's calls too.
        if let Some(left) = &ctx.run.calls_left
            && left
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_err()
        {
            return Err(format!("{}(): the run's budget of tool calls is spent", tool.name).into());
        }
        let args = to_json(&args).map_err(|e| format!("{}(): arguments: {e}", tool.name))?;
        let mut inner = ctx.clone();
        inner.who.depth += 1;
        inner.run.nested = None;
        inner.run.steps = None;
        // Each nested call has its own key, stable across a durable run's retries.
        inner.who.idempotency_key = ctx.who.idempotency_key.as_ref().map(|k| format!("{k}/{n}"));
        let outcome = match &ctx.run.steps {
            None => tool.execute(&args, &inner),
            Some(steps) => {
                let (called, args) = (tool.clone(), args.clone());
                steps
                    .step(n, Box::new(move || called.execute(&args, &inner)))
                    .map_err(|e| format!("{}(): {e}", tool.name))?
            }
        };
        let answer = match &outcome.result {
            Ok(v) => Ok(to_dynamic(v)),
            Err(f) => Err(format!("{}(): {} ({})", tool.name, f.message, f.kind.as_str()).into()),
        };
        if let Some(log) = &ctx.run.nested
            && let Ok(mut log) = log.lock()
        {
            log.push(kiln_core::context::NestedCall {
                tool: tool.name.clone(),
                args,
                outcome,
            });
        }
        answer
    })
}

fn truncate(line: &str) -> String {
    match line.char_indices().nth(MAX_PRINT_BYTES) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_string(),
    }
}
