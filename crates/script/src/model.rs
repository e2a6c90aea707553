//! The offline provider: the model is a Rhai function `|messages, tools| ...` returning
//! `#{ tool_calls: [#{ name, args }] }` or `#{ text: "..." }`, as a [`LocalModel`]. Tests use it
//! like a test model.

use crate::convert;
use crate::{ScriptUnit, sandbox};
use kiln_core::model::local::{LocalModel, LocalReply};
use kiln_core::model::{
    CallArgs, ModelResponse, ProviderError, StopReason, TextSink, ToolCall, Usage,
};
use rhai::{Array, Dynamic, FnPtr, Map};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long one planner call may run.
const PLANNER_DEADLINE: Duration = Duration::from_secs(10);

/// A Rhai planner and the script it lives in.
pub struct ScriptModel {
    /// The planner function.
    pub planner: FnPtr,
    /// Its script.
    pub unit: Arc<ScriptUnit>,
}

fn parse_reply(value: Dynamic, round: usize) -> Result<ModelResponse, ProviderError> {
    let bad = |m: &str| {
        ProviderError::Planner(format!(
            "{m}; return #{{ text: \"...\" }} or #{{ tool_calls: [#{{ name: \"tool\", args: #{{...}} }}] }}"
        ))
    };
    if value.is_string() {
        return Ok(ModelResponse {
            replay: None,
            answered_by: None,
            text: value.to_string(),
            tool_calls: vec![],
            stop: StopReason::EndTurn,
            usage: Usage::default(),
        });
    }
    let map: Map = value
        .try_cast::<Map>()
        .ok_or_else(|| bad("the planner returned neither a map nor a string"))?;
    // A planner-mode step written as a map (`#{ tool, args }`) is sent on as its JSON text.
    if map.contains_key("tool") && !map.contains_key("tool_calls") {
        let plan = convert::to_json(&Dynamic::from_map(map)).map_err(|e| bad(&e))?;
        return Ok(ModelResponse {
            replay: None,
            answered_by: None,
            text: plan.to_string(),
            tool_calls: vec![],
            stop: StopReason::EndTurn,
            usage: Usage::default(),
        });
    }
    let text = map.get("text").map(|t| t.to_string()).unwrap_or_default();
    let mut calls = Vec::new();
    if let Some(list) = map.get("tool_calls") {
        let list: Array = list
            .clone()
            .try_cast::<Array>()
            .ok_or_else(|| bad("tool_calls must be an array"))?;
        for (i, c) in list.into_iter().enumerate() {
            let c: Map = c
                .try_cast::<Map>()
                .ok_or_else(|| bad("each tool call must be a map"))?;
            let name = c
                .get("name")
                .map(|n| n.to_string())
                .ok_or_else(|| bad("a tool call has no name"))?;
            let args = match c.get("args") {
                None => CallArgs::parsed(json!({})),
                Some(a) if a.is_string() => CallArgs::from_text(&a.to_string()),
                Some(a) => {
                    CallArgs::parsed(convert::to_json(a).map_err(|e| bad(&format!("args: {e}")))?)
                }
            };
            let id = c
                .get("id")
                .map(|v| v.to_string())
                .unwrap_or_else(|| format!("script_{round}_{i}"));
            calls.push(ToolCall { id, name, args });
        }
    }
    let stop = if calls.is_empty() {
        StopReason::EndTurn
    } else {
        StopReason::ToolUse
    };
    Ok(ModelResponse {
        replay: None,
        answered_by: None,
        text,
        tool_calls: calls,
        stop,
        usage: Usage::default(),
    })
}

impl ScriptModel {
    /// Calls the planner on the blocking pool with the planner input in `input`.
    async fn answer(&self, input: &[u8], sink: &TextSink) -> Result<ModelResponse, ProviderError> {
        let input: Value = serde_json::from_slice(input)
            .map_err(|e| ProviderError::Planner(format!("planner input: {e}")))?;
        let messages = convert::to_dynamic(&input["messages"]);
        let tools = convert::to_dynamic(&input["tools"]);
        let round = input["round"].as_u64().unwrap_or(0) as usize;
        let planner = self.planner.clone();
        let unit = self.unit.clone();
        let result = tokio::task::spawn_blocking(move || {
            let deadline = Some(Instant::now() + PLANNER_DEADLINE);
            sandbox::with_watch(deadline, None, || {
                planner.call::<Dynamic>(&unit.engine, &unit.ast, (messages, tools))
            })
            .map_err(|e| crate::failure::describe(&e, &unit.path))
        })
        .await
        .map_err(|e| ProviderError::Planner(e.to_string()))?
        .map_err(ProviderError::Planner)?;
        let reply = parse_reply(result, round)?;
        if !reply.text.is_empty() {
            sink(&reply.text);
        }
        Ok(reply)
    }
}

impl LocalModel for ScriptModel {
    fn name(&self) -> &'static str {
        "script"
    }

    fn send<'a>(&'a self, input: &'a [u8], sink: &'a TextSink) -> LocalReply<'a> {
        Box::pin(self.answer(input, sink))
    }
}
