//! Conversions between kiln's tools and results and MCP's, in both directions.

use crate::tool::{Tool, ToolFailure, ToolOutcome};
use rmcp::model::{CallToolResult, ContentBlock, ToolAnnotations};
use serde_json::{Value, json};
use std::sync::Arc;

/// A kiln tool as MCP lists it: the compiled input schema and annotations derived from what
/// the tool requires.
pub(crate) fn tool_to_mcp(tool: &Tool) -> rmcp::model::Tool {
    let schema = match &tool.schema {
        Value::Object(map) => map.clone(),
        _ => serde_json::Map::new(),
    };
    rmcp::model::Tool::new(
        tool.name.clone(),
        tool.description.clone(),
        Arc::new(schema),
    )
    .with_annotations(annotations(tool))
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

/// Hints from the declared capabilities: `net` (or another MCP server) reaches an open world;
/// `fs.write` and `store` may change things; a tool needing none of those only reads.
fn annotations(tool: &Tool) -> ToolAnnotations {
    let needs = |name: &str| tool.requires.iter().any(|c| c.name == name);
    let open_world = needs("net") || needs("mcp");
    let destructive = needs("fs.write") || needs("store");
    let reads_only = tool
        .requires
        .iter()
        .all(|c| matches!(c.name.as_str(), "fs.read" | "env"));
    ToolAnnotations::new()
        .read_only(reads_only)
        .destructive(destructive)
        .open_world(open_world)
}

/// A kiln outcome as an MCP result: objects are `structuredContent` (with their JSON text),
/// other values are text; a failure is an `isError` result carrying kiln's message (for an
/// argument error, each violation with its path).
pub(crate) fn outcome_to_mcp(outcome: &ToolOutcome) -> CallToolResult {
    match &outcome.result {
        Ok(v @ Value::Object(_)) => CallToolResult::structured(v.clone()),
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
