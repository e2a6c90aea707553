//! Conversions between kiln's tools and results and MCP's, in both directions.

use crate::tool::{Tool, ToolFailure, ToolOutcome};
use rmcp::model::{CallToolResult, ContentBlock, ToolAnnotations};
use serde_json::{Value, json};
use std::sync::Arc;

/// A kiln tool as MCP lists it: its title, the compiled input schema, the `.returns` schema
/// as `outputSchema`, and its hints as annotations.
///
/// An output schema whose root is not an object is served as is: the 2026-07-28 revision
/// allows any schema (SEP-2106), and rmcp drops it for peers on older revisions, which
/// require an object.
pub(crate) fn tool_to_mcp(tool: &Tool) -> rmcp::model::Tool {
    let mut out = rmcp::model::Tool::new(
        tool.name.clone(),
        tool.description.clone(),
        Arc::new(object(&tool.schema)),
    )
    .with_annotations(annotations(tool));
    out.title = tool.meta.title.clone();
    if let Some(returns) = &tool.meta.returns {
        out = out.with_raw_output_schema(Arc::new(object(&returns.schema)));
    }
    out
}

/// A schema as the JSON object MCP carries (kiln's schemas are always objects).
fn object(schema: &Value) -> serde_json::Map<String, Value> {
    match schema {
        Value::Object(map) => map.clone(),
        _ => serde_json::Map::new(),
    }
}

/// An agent offered as tool `name`: one `prompt` parameter; it may reach anything the agent's
/// tools do, so it is neither read-only nor closed-world.
pub(crate) fn agent_to_mcp(name: &str, agent: &str, description: &str) -> rmcp::model::Tool {
    let schema = json!({
        "type": "object",
        "properties": {"prompt": {"type": "string", "description": "What to ask the agent"}},
        "required": ["prompt"],
        "additionalProperties": false
    });
    let schema = schema.as_object().cloned().unwrap_or_default();
    let what = if description.is_empty() {
        String::new()
    } else {
        format!(": {description}")
    };
    rmcp::model::Tool::new(
        name.to_string(),
        format!("Hand a task to the kiln agent \"{agent}\"{what}"),
        Arc::new(schema),
    )
    .with_annotations(ToolAnnotations::new().read_only(false).open_world(true))
}

/// The tool's hints (declared, or derived from its capabilities: [`Tool::hints`]).
fn annotations(tool: &Tool) -> ToolAnnotations {
    let h = tool.hints();
    ToolAnnotations::new()
        .read_only(h.read_only)
        .destructive(h.destructive)
        .idempotent(h.idempotent)
        .open_world(h.open_world)
}

/// A kiln outcome as an MCP result: objects, and any result of a tool that declares
/// `.returns`, are `structuredContent` (with their text as content); other values are text; a
/// failure is an `isError` result carrying kiln's message (for an argument error, each
/// violation with its path).
pub(crate) fn outcome_to_mcp(outcome: &ToolOutcome, declared: bool) -> CallToolResult {
    match &outcome.result {
        Ok(v @ Value::Object(_)) => CallToolResult::structured(v.clone()),
        Ok(v) if declared => {
            let mut result =
                CallToolResult::success(vec![ContentBlock::text(outcome.model_text())]);
            result.structured_content = Some(v.clone());
            result
        }
        Ok(_) => CallToolResult::success(vec![ContentBlock::text(outcome.model_text())]),
        Err(f) => CallToolResult::error(vec![ContentBlock::text(f.message.clone())]),
    }
}

/// An MCP server's result as a kiln result: `structuredContent` when present, else the text
/// blocks joined (other blocks described as JSON); `isError` becomes a failure the model reads.
pub(crate) fn result_from_mcp(result: CallToolResult) -> Result<Value, ToolFailure> {
    let is_error = result.is_error == Some(true);
    let value = match result.structured_content {
        Some(v) if !is_error => v,
        _ => content_value(&result.content),
    };
    if is_error {
        let text = match value {
            Value::String(s) => s,
            other => other.to_string(),
        };
        return Err(ToolFailure::tool_error(text));
    }
    Ok(value)
}

fn content_value(blocks: &[ContentBlock]) -> Value {
    let mut texts = Vec::new();
    let mut others = Vec::new();
    for block in blocks {
        match block.as_text() {
            Some(t) => texts.push(t.text.clone()),
            // Images, audio and resources are passed on as their JSON (a model reads it).
            None => others.push(serde_json::to_value(block).unwrap_or(Value::Null)),
        }
    }
    if others.is_empty() {
        Value::String(texts.join("\n"))
    } else {
        json!({"text": texts.join("\n"), "content": others})
    }
}
