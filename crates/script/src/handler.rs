//! The script side of the core's abstractions: a Rhai function as a tool [`Handler`], an
//! agent's planner and validator as its [`AgentScript`], the `ctx` map handlers see, and the
//! sorting of Rhai errors into failure kinds.

use super::failure::classify;
use super::model::ScriptModel;
use crate::{ScriptUnit, host, sandbox};
use kiln_core::context::CallContext;
use kiln_core::model::LocalModel;
use kiln_core::tool::{FailureKind, Handler, Tool, ToolFailure};
use kiln_registry::agent_spec::AgentScript;
use rhai::{Dynamic, FnPtr, Map};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A tool handler written in Rhai: `|args|` or `|args, ctx|`, with an optional `available_if`.
pub struct ScriptHandler {
    pub handler: FnPtr,
    pub arity: usize,
    pub available_if: Option<FnPtr>,
    pub unit: Arc<ScriptUnit>,
    /// Hands the function this field of the arguments instead of the whole map (a
    /// completion's `|prefix|`).
    pub first: Option<&'static str>,
}

impl Handler for ScriptHandler {
    fn call(
        &self,
        tool: &Tool,
        args: &Value,
        ctx: &CallContext,
        deadline: Instant,
    ) -> Result<Value, ToolFailure> {
        sandbox::dropping_captures(|| self.run(tool, args, ctx, deadline))
    }

    fn runs_in_place(&self) -> bool {
        self.unit.in_place
    }

    fn is_available(&self, tool: &Tool, ctx: &CallContext) -> bool {
        let Some(f) = &self.available_if else {
            return true;
        };
        let ctx_map = ctx_map(ctx, &Dynamic::UNIT);
        let deadline = Some(Instant::now() + Duration::from_millis(200));
        let result = sandbox::with_watch(deadline, None, || {
            f.call::<bool>(&self.unit.engine, &self.unit.ast, (ctx_map,))
        });
        result.unwrap_or_else(|e| {
            tracing::warn!(tool = %tool.name, "available_if failed: {e}");
            false
        })
    }

    fn version(&self) -> &str {
        &self.unit.version
    }
}

impl ScriptHandler {
    /// One call of the handler, its result made JSON.
    fn run(
        &self,
        tool: &Tool,
        args: &Value,
        ctx: &CallContext,
        deadline: Instant,
    ) -> Result<Value, ToolFailure> {
        let args = match self.first {
            Some(field) => &args[field],
            None => args,
        };
        let args_dyn = rhai::serde::to_dynamic(args)
            .map_err(|e| ToolFailure::sanitized(FailureKind::Runtime, format!("arguments: {e}")))?;
        let unit = &self.unit;
        // Only a handler that takes `ctx` can reach the state: the others skip the
        // JSON -> Rhai -> JSON round trip of it.
        let state = (self.arity != 1).then(|| state_dynamic(ctx));
        let result = host::with_call(tool, ctx, || {
            sandbox::with_watch(
                Some(deadline),
                ctx.run.cancel.as_ref().map(|c| c.flag().clone()),
                || match &state {
                    None => self
                        .handler
                        .call::<Dynamic>(&unit.engine, &unit.ast, (args_dyn,)),
                    Some(state) => self.handler.call::<Dynamic>(
                        &unit.engine,
                        &unit.ast,
                        (args_dyn, ctx_map(ctx, state)),
                    ),
                },
            )
        });
        if let Some(state) = &state {
            store_state(ctx, state);
        }
        match result {
            Ok(value) => crate::host::out::result_json(&value),
            Err(err) => Err(classify(&err, &tool.loc.path)),
        }
    }
}

/// An agent's planner (the `script` provider's model) and `.validator(...)`.
pub struct ScriptAgent {
    pub planner: Option<FnPtr>,
    pub validator: Option<FnPtr>,
    pub unit: Arc<ScriptUnit>,
}

impl AgentScript for ScriptAgent {
    fn planner_model(&self) -> Option<Arc<dyn LocalModel>> {
        let planner = self.planner.clone()?;
        Some(Arc::new(ScriptModel {
            planner,
            unit: self.unit.clone(),
        }))
    }

    fn validate(&self, tool: &str, args: Value) -> Option<Result<Value, String>> {
        let f = self.validator.as_ref()?;
        let unit = &self.unit;
        let deadline = Some(Instant::now() + Duration::from_secs(2));
        let result = sandbox::with_watch(deadline, None, || {
            f.call::<Dynamic>(
                &unit.engine,
                &unit.ast,
                (tool.to_string(), crate::convert::to_dynamic(&args)),
            )
        });
        Some(match result {
            Ok(v) => crate::convert::to_json(&v),
            Err(e) => {
                let f = classify(&e, &unit.path);
                Err(f.detail.unwrap_or(f.message))
            }
        })
    }

    fn code_tools(
        &self,
        tools: &[Arc<kiln_core::tool::Tool>],
        mode: &kiln_registry::agent_spec::CodeMode,
    ) -> Vec<Arc<kiln_core::tool::Tool>> {
        crate::program::code_mode::code_tools(tools, mode)
    }
}

/// The current state as a shared Rhai value, so handler writes to `ctx.state` stick.
pub fn state_dynamic(ctx: &CallContext) -> Dynamic {
    let state = ctx
        .run
        .state
        .lock()
        .map(|s| s.clone())
        .unwrap_or(Value::Null);
    rhai::serde::to_dynamic(&state)
        .unwrap_or(Dynamic::UNIT)
        .into_shared()
}

/// Writes a handler's state back.
pub fn store_state(ctx: &CallContext, state: &Dynamic) {
    if let Ok(v) = crate::convert::to_json(&state.flatten_clone())
        && let Ok(mut s) = ctx.run.state.lock()
    {
        *s = v;
    }
}

/// The `ctx` map scripts see.
pub fn ctx_map(ctx: &CallContext, state: &Dynamic) -> Map {
    let mut m = Map::new();
    let opt = |v: &Option<String>| v.clone().map(Dynamic::from).unwrap_or(Dynamic::UNIT);
    m.insert("actor_id".into(), opt(&ctx.who.actor_id));
    m.insert("agent".into(), opt(&ctx.who.caller.label()));
    m.insert("run_id".into(), ctx.who.run_id.clone().into());
    m.insert("idempotency_key".into(), opt(&ctx.who.idempotency_key));
    let context = rhai::serde::to_dynamic(&ctx.run.context).unwrap_or(Dynamic::UNIT);
    m.insert("context".into(), context);
    m.insert("state".into(), state.clone());
    m.insert("restored".into(), ctx.run.restored.into());
    let caps: rhai::Array = ctx
        .granted
        .grants
        .iter()
        .map(|g| g.cap.to_string().into())
        .collect();
    m.insert("capabilities".into(), caps.into());
    m
}
