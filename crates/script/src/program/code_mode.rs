//! Code mode: the model writes one Rhai program that calls the agent's tools as functions,
//! and kiln runs it in a sandbox of its own. The program reaches the tools and pure Rhai only
//! (no host functions, no imports); each nested call takes the tool's normal path
//! (`Tool::execute`: validation, the capability guard, approvals, rate limits, its deadline)
//! under the run's grants, within a budget of calls and the program's own deadline. A refused
//! or failed call is an error the program can catch with `try`/`catch`.

use crate::program::eval::{self, CallTool, ProgramSpec};
use crate::program::pool;
use kiln_core::cancel::Cancel;
use kiln_core::context::CallContext;
use kiln_core::tool::meta::Hints;
use kiln_core::tool::parts::ToolParts;
use kiln_core::tool::{Handler, Tool, ToolFailure};
use kiln_registry::agent_spec::CodeMode;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

/// The tool the model is offered in code mode.
pub const RUN_CODE: &str = "run_code";

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
        let spec = ProgramSpec {
            code: args["code"].as_str().unwrap_or_default().to_string(),
            tools: self.tools.iter().map(|t| t.name.clone()).collect(),
            // A durable run replays nested calls by their number, so they must be made in
            // the same order on every attempt: parallel() runs its closures one at a time.
            max_parallel: if ctx.run.steps.is_some() {
                1
            } else {
                self.max_parallel
            },
            deadline,
        };
        // The program's calls end with it: one still waiting (for a person's approval, a
        // slow tool) when its program is stopped is cancelled, never left to run later.
        let calls_cancel = match &ctx.run.cancel {
            Some(run) => Cancel::linked(&run.token().child_token()),
            None => Cancel::new(),
        };
        let calls = Arc::new(ProgramCalls {
            tools: self.tools.clone(),
            ctx: ctx.clone(),
            made: AtomicU32::new(0),
            in_flight: AtomicU32::new(0),
            max_calls: self.max_calls,
            cancel: calls_cancel.clone(),
            deadline,
        });
        let made = calls.clone();
        let call: CallTool = Arc::new(move |name: &str, args: Value| made.call(name, args));
        let cancel = ctx.run.cancel.as_ref().map(|c| c.flag().clone());
        // In a worker process when the host keeps a pool (the kiln binary always does); in
        // this process for an embedder that installed none.
        let done = match pool::installed() {
            Some(pool) => pool.run(&spec, cancel, call, ctx.run.events.clone()),
            None => eval::evaluate(&spec, call, ctx.run.events.clone(), cancel),
        };
        calls_cancel.cancel();
        // A call the program left waiting (its worker stopped mid-call) ends before the
        // program's does: its approval has left the inbox when the run goes on.
        calls.wait_for_calls(Instant::now() + std::time::Duration::from_secs(2));
        let done = done?;
        let calls = calls.made.load(Ordering::Relaxed).min(self.max_calls);
        Ok(match (done.value, done.printed.is_empty()) {
            (Value::Null, _) => json!({
                "result": null,
                "calls": calls,
                "printed": done.printed,
                "note": "the program's last expression has no value: end it with the value, or call finish(value)"
            }),
            (v, true) => v,
            (v, false) => json!({"result": v, "printed": done.printed}),
        })
    }
}

/// The calls of one program, made here in the host: each takes the tool's normal path
/// within the program's and the run's budgets of calls.
struct ProgramCalls {
    tools: Vec<Arc<Tool>>,
    ctx: CallContext,
    made: AtomicU32,
    /// Calls running now.
    in_flight: AtomicU32,
    max_calls: u32,
    /// Cancelled when the program ends, however it ends.
    cancel: Cancel,
    /// The program's deadline, which no call outlives.
    deadline: Instant,
}

impl ProgramCalls {
    /// Waits (until `until`) for the calls still running to end.
    fn wait_for_calls(&self, until: Instant) {
        while self.in_flight.load(Ordering::SeqCst) > 0 && Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// One call of `name` with `args`: its value, or the error the program sees.
    fn call(&self, name: &str, args: Value) -> Result<Value, String> {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let answer = self.call_counted(name, args);
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        answer
    }

    fn call_counted(&self, name: &str, args: Value) -> Result<Value, String> {
        let Some(tool) = self.tools.iter().find(|t| t.name == name).cloned() else {
            return Err(format!("{name}(): no such tool in this program"));
        };
        let n = self.made.fetch_add(1, Ordering::Relaxed) + 1;
        if n > self.max_calls {
            return Err(format!(
                "{name}(): the program's budget of {} tool calls is spent",
                self.max_calls
            ));
        }
        let ctx = &self.ctx;
        // The run's budget counts a program's calls too.
        if let Some(left) = &ctx.run.calls_left
            && left
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_err()
        {
            return Err(format!("{name}(): the run's budget of tool calls is spent"));
        }
        let mut inner = ctx.clone();
        inner.who.depth += 1;
        inner.run.nested = None;
        inner.run.steps = None;
        inner.run.cancel = Some(self.cancel.clone());
        inner.run.deadline = Some(
            inner
                .run
                .deadline
                .map_or(self.deadline, |d| d.min(self.deadline)),
        );
        // Each nested call has its own key, stable across a durable run's retries.
        inner.who.idempotency_key = ctx.who.idempotency_key.as_ref().map(|k| format!("{k}/{n}"));
        let outcome = match &ctx.run.steps {
            None => tool.execute(&args, &inner),
            Some(steps) => {
                let (called, args) = (tool.clone(), args.clone());
                steps
                    .step(n, Box::new(move || called.execute(&args, &inner)))
                    .map_err(|e| format!("{name}(): {e}"))?
            }
        };
        let answer = match &outcome.result {
            Ok(v) => Ok(v.clone()),
            Err(f) => Err(format!("{name}(): {} ({})", f.message, f.kind.as_str())),
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
    }
}
