//! The DSL builders scripts use at their top level: `tool(name)...` and `agent(name)...`.
//!
//! Each builder call records into a draft shared by the chain; the loader collects the drafts
//! of one file once its top level has run. Mistakes are recorded with the position of the
//! offending call instead of aborting, so one bad tool does not hide the others.

pub(crate) mod a2a;
pub(crate) mod agent;
pub(crate) mod contract;
pub(crate) mod eval;
pub(crate) mod mcp;
pub(crate) mod meta;
pub mod pipeline;
pub(crate) mod policy;
pub(crate) mod rate_limit;
pub(crate) mod served;
pub mod ui;

use crate::convert::timeout_ms;
use kiln_core::schema::{self, Param};
use rhai::{Array, Dynamic, Engine, EvalAltResult, FnPtr, INT, Map, NativeCallContext, Position};
use serde_json::Value;
use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// What a script said about one tool, before it is checked and compiled.
#[derive(Debug, Default)]
pub struct ToolDraft {
    /// The tool name.
    pub name: String,
    /// Position of the `tool(...)` call.
    pub pos: Position,
    /// `.description(...)`.
    pub description: String,
    /// `.param(...)` calls in order.
    pub params: Vec<Param>,
    /// Position of the first `.param` call.
    pub params_pos: Option<Position>,
    /// `.input_schema(...)` and its position.
    pub input_schema: Option<(Value, Position)>,
    /// `.requires(...)` capability strings.
    pub requires: Vec<(String, Position)>,
    /// `.exclusive()`.
    pub exclusive: bool,
    /// `.timeout(ms | "30s")`.
    pub timeout_ms: Option<u64>,
    /// `.retries(n)`.
    pub retries: u32,
    /// `.rate_limit(calls, per_seconds[, #{ wait: true }])`.
    pub rate_limit: Option<kiln_core::ratelimit::RateLimit>,
    /// `.available_if(fn)`.
    pub available_if: Option<FnPtr>,
    /// `.handler(fn)`.
    pub handler: Option<(FnPtr, Position)>,
    /// `.title(...)`.
    pub title: Option<String>,
    /// `.output(...)`: the output schema and where it was declared.
    pub output: Option<(Value, Position)>,
    /// `.annotations(#{...})`.
    pub hints: kiln_core::tool::Hints,
    /// `.task(mode[, #{ start }])`.
    pub task: Option<kiln_core::tool::TaskMode>,
    /// Hands the handler this field of the arguments instead of the whole map.
    pub first: Option<&'static str>,
    /// `.ui(uri, #{...})`: the tool's app (MCP Apps).
    pub ui: Option<ui::UiDraft>,
    /// Problems found while building, with the position of the call.
    pub errors: Vec<(Position, String)>,
}

/// What a script said about one agent.
#[derive(Debug, Default)]
pub struct AgentDraft {
    /// The agent name.
    pub name: String,
    /// Position of the `agent(...)` call.
    pub pos: Position,
    /// `.provider(...)`, `.model(...)`, `.temperature(...)` and the other settings.
    pub settings: AgentSettings,
    /// `.tools([...])` with the position of the call.
    pub tools: Vec<String>,
    /// Position of `.tools(...)`.
    pub tools_pos: Position,
    /// `.capabilities([...])`.
    pub capabilities: Vec<String>,
    /// Position of `.capabilities(...)`.
    pub caps_pos: Position,
    /// `.needs_approval([...])`: grants that need approval.
    pub needs_approval: Vec<String>,
    /// `.planner(fn)` for the script provider.
    pub planner: Option<FnPtr>,
    /// `.validator(fn)` for planner mode.
    pub validator: Option<FnPtr>,
    /// `.code_mode(...)`.
    pub code_mode: Option<kiln_registry::agent_spec::CodeMode>,
    /// `.output(...)` (the schema, and where), `.output_retries(n)`, `.budget(...)`, `.price(...)`.
    pub contract: ContractDraft,
    /// `.handoffs([...])`.
    pub handoffs: Vec<String>,
    /// `.defer_loading([...])`: tools offered only once a search found them.
    pub defer_loading: Vec<String>,
    /// `#{ search: "kiln" }` given to `.defer_loading`: kiln's search on every wire.
    pub defer_with_kiln: bool,
    /// `.compact(#{...})`: when and how the transcript is compacted.
    pub compaction: Option<kiln_registry::agent_spec::compact::Compaction>,
    /// `.skills([...])`: folders of Agent Skills, each with where it was written.
    pub skills: Vec<(String, Position)>,
    /// `.fallback([...])`, each entry checked where it was written.
    pub fallback: Vec<kiln_registry::fallback::FallbackModel>,
    /// Problems found while building.
    pub errors: Vec<(Position, String)>,
}

/// An agent's contract as the script set it (the schema is compiled by the loader).
#[derive(Debug, Default)]
pub struct ContractDraft {
    /// `.output(...)`: the JSON Schema and the position of the call.
    pub output: Option<(Value, Position)>,
    /// `.output_retries(n)`.
    pub retries: Option<u32>,
    /// `.budget(#{ ... })`.
    pub budget: kiln_registry::contract::Budget,
    /// `.price(input_per_mtok, output_per_mtok)`.
    pub price: Option<kiln_registry::contract::Price>,
}

/// An agent's one-value settings, as the script set them (checked by the loader).
#[derive(Debug, Default)]
pub struct AgentSettings {
    /// `.description(...)`.
    pub description: Option<String>,
    /// `.provider(...)`.
    pub provider: Option<String>,
    /// `.model(...)`.
    pub model: Option<String>,
    /// `.system(...)`.
    pub system: Option<String>,
    /// `.base_url(...)`.
    pub base_url: Option<String>,
    /// `.api_key_env(...)`.
    pub api_key_env: Option<String>,
    /// `.mode(...)`.
    pub mode: Option<String>,
    /// `.temperature(t)`.
    pub temperature: Option<f64>,
    /// `.max_iterations(n)`.
    pub max_iterations: Option<i64>,
    /// `.max_tokens(n)`.
    pub max_tokens: Option<i64>,
    /// `.max_steps(n)`.
    pub max_steps: Option<i64>,
    /// `.max_parallel(n)`.
    pub max_parallel: Option<i64>,
    /// `.max_reply_bytes(n)`.
    pub max_reply_bytes: Option<i64>,
    /// `.max_line_bytes(n)`.
    pub max_line_bytes: Option<i64>,
    /// `.text_tool_calls(...)` and the position of the call.
    pub text_tool_calls: Option<(String, Position)>,
}

/// Handle to a tool draft, returned by every tool builder method.
#[derive(Clone)]
pub struct ToolBuilder(Arc<Mutex<ToolDraft>>);

/// Handle to an agent draft, returned by every agent builder method.
#[derive(Clone)]
pub struct AgentBuilder(pub(crate) Arc<Mutex<AgentDraft>>);

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Drafts collected from one file's top level.
#[derive(Default)]
pub struct Collected {
    /// Tools in definition order.
    pub tools: Vec<ToolDraft>,
    /// Agents in definition order.
    pub agents: Vec<AgentDraft>,
    /// Drafts of the other builders (pipelines, MCP servers), by their type, in definition
    /// order: each kind's file hands its drafts in with [`collect_draft`] and the loader takes
    /// them out with [`Collected::take`], so this file names none of them.
    others: HashMap<TypeId, Vec<Box<dyn Any>>>,
}

impl Collected {
    /// The drafts of type `T`, in definition order.
    pub fn take<T: Default + 'static>(&mut self) -> Vec<T> {
        self.others
            .remove(&TypeId::of::<T>())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|d| d.downcast::<Arc<Mutex<T>>>().ok())
            .map(|d| take(*d))
            .collect()
    }
}

#[derive(Default)]
struct Collector {
    tools: Vec<Arc<Mutex<ToolDraft>>>,
    agents: Vec<Arc<Mutex<AgentDraft>>>,
    others: HashMap<TypeId, Vec<Box<dyn Any>>>,
}

thread_local! {
    static COLLECTOR: RefCell<Option<Collector>> = const { RefCell::new(None) };
}

/// Runs `f` (a file's top level) while collecting the drafts it defines.
pub fn collect<T>(f: impl FnOnce() -> T) -> (T, Collected) {
    COLLECTOR.with(|c| *c.borrow_mut() = Some(Collector::default()));
    let stop = StopCollecting;
    let out = f();
    drop(stop);
    let col = COLLECTOR
        .with(|c| c.borrow_mut().take())
        .unwrap_or_default();
    let collected = Collected {
        tools: col.tools.into_iter().map(take).collect(),
        agents: col.agents.into_iter().map(take).collect(),
        others: col.others,
    };
    (out, collected)
}

/// How many drafts of each kind were collected so far (see [`forget_since`]).
pub struct Mark {
    tools: usize,
    agents: usize,
    others: HashMap<TypeId, usize>,
}

/// Where collecting stands now.
pub fn mark() -> Mark {
    COLLECTOR.with(|c| match c.borrow().as_ref() {
        Some(col) => Mark {
            tools: col.tools.len(),
            agents: col.agents.len(),
            others: col.others.iter().map(|(k, v)| (*k, v.len())).collect(),
        },
        None => Mark {
            tools: 0,
            agents: 0,
            others: HashMap::new(),
        },
    })
}

/// Drops the drafts collected after `mark`: a statement that failed half-way leaves its
/// builders incomplete, and its error is the one to report, not theirs.
pub fn forget_since(mark: &Mark) {
    COLLECTOR.with(|c| {
        if let Some(col) = c.borrow_mut().as_mut() {
            col.tools.truncate(mark.tools);
            col.agents.truncate(mark.agents);
            for (kind, drafts) in col.others.iter_mut() {
                drafts.truncate(mark.others.get(kind).copied().unwrap_or(0));
            }
        }
    });
}

/// Ends collecting if the top level panics, so the thread's later calls of `tool(...)` are
/// refused as outside a load instead of being collected.
struct StopCollecting;

impl Drop for StopCollecting {
    fn drop(&mut self) {
        if std::thread::panicking() {
            COLLECTOR.with(|c| c.borrow_mut().take());
        }
    }
}

fn take<T: Default>(m: Arc<Mutex<T>>) -> T {
    match Arc::try_unwrap(m) {
        Ok(m) => m.into_inner().unwrap_or_else(|e| e.into_inner()),
        Err(shared) => std::mem::take(&mut *lock(&shared)),
    }
}

/// Records a draft of another builder (`kind`: `pipeline`, `mcp_server`) made at a file's top
/// level; an error anywhere else.
pub(super) fn collect_draft<T: 'static>(
    draft: &Arc<Mutex<T>>,
    kind: &str,
    pos: Position,
) -> Result<(), Box<EvalAltResult>> {
    COLLECTOR.with(|c| match c.borrow_mut().as_mut() {
        Some(col) => {
            col.others
                .entry(TypeId::of::<T>())
                .or_default()
                .push(Box::new(draft.clone()));
            Ok(())
        }
        None => Err(outside_load(kind, pos)),
    })
}

/// Adds `.param`-style parameter `name` to `params`, or records why it cannot be.
pub(super) fn push_param(
    params: &mut Vec<Param>,
    errors: &mut Vec<(Position, String)>,
    pos: Position,
    name: &str,
    ty: &str,
    options: Result<Value, String>,
) {
    let built = options.and_then(|o| {
        let map = o.as_object().cloned().unwrap_or_default();
        schema::build_param(name, ty, &map)
    });
    match built {
        Ok((schema, required)) if !params.iter().any(|p| p.name == name) => params.push(Param {
            name: name.to_string(),
            schema,
            required,
        }),
        Ok(_) => errors.push((pos, format!("param \"{name}\" is declared twice"))),
        Err(e) => errors.push((pos, e)),
    }
}

fn outside_load(what: &str, pos: Position) -> Box<EvalAltResult> {
    EvalAltResult::ErrorRuntime(
        format!("{what}(...) can only be used at the top level of a script file").into(),
        pos,
    )
    .into()
}

fn new_tool(ctx: NativeCallContext, name: &str) -> Result<ToolBuilder, Box<EvalAltResult>> {
    let draft = Arc::new(Mutex::new(ToolDraft {
        name: name.to_string(),
        pos: ctx.call_position(),
        ..ToolDraft::default()
    }));
    COLLECTOR.with(|c| match c.borrow_mut().as_mut() {
        Some(col) => {
            col.tools.push(draft.clone());
            Ok(ToolBuilder(draft))
        }
        None => Err(outside_load("tool", ctx.call_position())),
    })
}

fn new_agent(ctx: NativeCallContext, name: &str) -> Result<AgentBuilder, Box<EvalAltResult>> {
    let draft = Arc::new(Mutex::new(AgentDraft {
        name: name.to_string(),
        pos: ctx.call_position(),
        ..AgentDraft::default()
    }));
    COLLECTOR.with(|c| match c.borrow_mut().as_mut() {
        Some(col) => {
            col.agents.push(draft.clone());
            Ok(AgentBuilder(draft))
        }
        None => Err(outside_load("agent", ctx.call_position())),
    })
}

pub(super) fn to_json(value: &Dynamic) -> Result<Value, String> {
    rhai::serde::from_dynamic::<Value>(value).map_err(|e| e.to_string())
}

/// `.requires([...])`'s capabilities, each at the position of the call.
pub(super) fn required(pos: Position, caps: &Array) -> Result<Vec<(String, Position)>, String> {
    strings(caps)
        .map(|list| list.into_iter().map(|c| (c, pos)).collect())
        .map_err(|e| format!("requires: {e}"))
}

pub(super) fn strings(arr: &Array) -> Result<Vec<String>, String> {
    arr.iter()
        .map(|v| {
            v.clone()
                .into_immutable_string()
                .map(|s| s.to_string())
                .map_err(|t| format!("expected a list of strings, found a {t}"))
        })
        .collect()
}

impl ToolBuilder {
    pub(super) fn with(&mut self, f: impl FnOnce(&mut ToolDraft)) -> ToolBuilder {
        f(&mut lock(&self.0));
        self.clone()
    }

    fn add_param(
        &mut self,
        pos: Position,
        name: &str,
        ty: &str,
        options: Result<Value, String>,
    ) -> ToolBuilder {
        self.with(|d| {
            d.params_pos.get_or_insert(pos);
            push_param(&mut d.params, &mut d.errors, pos, name, ty, options);
        })
    }
}

impl AgentBuilder {
    /// Changes the draft; the builder is returned for the next method of the chain.
    pub(crate) fn with(&mut self, f: impl FnOnce(&mut AgentDraft)) -> AgentBuilder {
        f(&mut lock(&self.0));
        self.clone()
    }
}

/// Registers `tool(...)` and `agent(...)` and the tool builder's methods (the agent's are
/// agent_dsl.rs's).
pub fn register(engine: &mut Engine) {
    engine.register_type_with_name::<ToolBuilder>("ToolBuilder");
    engine.register_type_with_name::<AgentBuilder>("AgentBuilder");
    engine.register_fn("tool", new_tool);
    engine.register_fn("agent", new_agent);

    engine.register_fn("description", |b: &mut ToolBuilder, text: &str| {
        b.with(|d| d.description = text.to_string())
    });
    engine.register_fn(
        "param",
        |ctx: NativeCallContext, b: &mut ToolBuilder, name: &str, ty: &str| {
            b.add_param(ctx.call_position(), name, ty, Ok(Value::Null))
        },
    );
    engine.register_fn(
        "param",
        |ctx: NativeCallContext, b: &mut ToolBuilder, name: &str, ty: &str, desc: &str| {
            b.add_param(
                ctx.call_position(),
                name,
                ty,
                Ok(serde_json::json!({ "desc": desc })),
            )
        },
    );
    engine.register_fn(
        "param",
        |ctx: NativeCallContext, b: &mut ToolBuilder, name: &str, ty: &str, opts: Map| {
            b.add_param(
                ctx.call_position(),
                name,
                ty,
                to_json(&Dynamic::from_map(opts)),
            )
        },
    );
    engine.register_fn(
        "input_schema",
        |ctx: NativeCallContext, b: &mut ToolBuilder, schema: Map| {
            let pos = ctx.call_position();
            b.with(|d| match to_json(&Dynamic::from_map(schema)) {
                Ok(v) => d.input_schema = Some((v, pos)),
                Err(e) => d.errors.push((pos, format!("input_schema: {e}"))),
            })
        },
    );
    register_running(engine);
}

fn set_timeout(b: &mut ToolBuilder, pos: Position, value: Dynamic) -> ToolBuilder {
    b.with(|d| match timeout_ms(&value) {
        Ok(ms) => d.timeout_ms = Some(ms),
        Err(e) => d.errors.push((pos, e)),
    })
}

/// The tool methods that say how it runs: `.requires`, `.exclusive`, `.timeout`, `.retries`,
/// `.available_if`, `.handler`.
fn register_running(engine: &mut Engine) {
    engine.register_fn(
        "requires",
        |ctx: NativeCallContext, b: &mut ToolBuilder, cap: &str| {
            let pos = ctx.call_position();
            b.with(|d| d.requires.push((cap.to_string(), pos)))
        },
    );
    engine.register_fn(
        "requires",
        |ctx: NativeCallContext, b: &mut ToolBuilder, caps: Array| {
            let pos = ctx.call_position();
            b.with(|d| match required(pos, &caps) {
                Ok(list) => d.requires.extend(list),
                Err(e) => d.errors.push((pos, e)),
            })
        },
    );
    engine.register_fn("exclusive", |b: &mut ToolBuilder| {
        b.with(|d| d.exclusive = true)
    });
    engine.register_fn(
        "timeout",
        |ctx: NativeCallContext, b: &mut ToolBuilder, ms: INT| {
            set_timeout(b, ctx.call_position(), Dynamic::from_int(ms))
        },
    );
    engine.register_fn(
        "timeout",
        |ctx: NativeCallContext, b: &mut ToolBuilder, text: &str| {
            set_timeout(b, ctx.call_position(), Dynamic::from(text.to_string()))
        },
    );
    engine.register_fn(
        "retries",
        |ctx: NativeCallContext, b: &mut ToolBuilder, n: INT| {
            let pos = ctx.call_position();
            b.with(|d| match u32::try_from(n) {
                Ok(n) if n <= 10 => d.retries = n,
                _ => d
                    .errors
                    .push((pos, format!("retries must be between 0 and 10, not {n}"))),
            })
        },
    );
    engine.register_fn("available_if", |b: &mut ToolBuilder, f: FnPtr| {
        b.with(|d| d.available_if = Some(f))
    });
    engine.register_fn(
        "handler",
        |ctx: NativeCallContext, b: &mut ToolBuilder, f: FnPtr| {
            let pos = ctx.call_position();
            b.with(|d| d.handler = Some((f, pos)))
        },
    );
    engine.register_fn(
        "handler",
        |ctx: NativeCallContext, b: &mut ToolBuilder, name: &str| {
            let pos = ctx.call_position();
            b.with(|d| match FnPtr::new(name) {
                Ok(f) => d.handler = Some((f, pos)),
                Err(e) => d.errors.push((pos, format!("handler: {e}"))),
            })
        },
    );
}
