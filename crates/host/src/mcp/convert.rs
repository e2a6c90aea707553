//! Conversions between kiln's tools and results and MCP's, in both directions.

use kiln_core::model::content::{self, Content, Resource};
use kiln_core::tool::{Tool, ToolFailure, ToolOutcome};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, ToolAnnotations};
use serde_json::{Value, json};
use std::sync::Arc;

/// A kiln tool as MCP lists it: its title, the compiled input schema, the `.output` schema
/// as `outputSchema`, its hints as annotations, and its `_meta` (MCP Apps' `ui`).
///
/// An output schema whose root is not an object is served as is: the 2026-07-28 revision
/// allows any schema (SEP-2106), and rmcp drops it for peers on older revisions, which
/// require an object.
pub fn tool_to_mcp(tool: &Tool) -> rmcp::model::Tool {
    let mut out = rmcp::model::Tool::new(
        tool.name.clone(),
        tool.description.clone(),
        Arc::new(object(&tool.schema)),
    )
    .with_annotations(annotations(tool));
    out.title = tool.meta.title.clone();
    if let Some(returns) = &tool.meta.output {
        out = out.with_raw_output_schema(Arc::new(object(&returns.schema)));
    }
    if !tool.meta.extra.is_empty() {
        out.meta = Some(rmcp::model::MetaObject(tool.meta.extra.clone()));
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
pub fn agent_to_mcp(name: &str, agent: &str, description: &str) -> rmcp::model::Tool {
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

/// A kiln outcome as an MCP result: a content result is its blocks; objects, and any result of
/// a tool that declares `.output`, are `structuredContent` (with their text as content); other
/// values are text; a failure is an `isError` result carrying kiln's message (for an argument
/// error, each violation with its path).
pub fn outcome_to_mcp(outcome: &ToolOutcome, declared: bool) -> CallToolResult {
    match &outcome.result {
        Ok(v) if let Some(Ok(blocks)) = content::from_result(v) => {
            CallToolResult::success(blocks.iter().map(block_to_mcp).collect())
        }
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
pub fn result_from_mcp(result: CallToolResult) -> Result<Value, ToolFailure> {
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

/// An MCP server's blocks as a kiln value: text alone is one string; with images, audio or
/// embedded resources it is a content result (so a model reads them as text, and kiln's own
/// MCP clients get the blocks back). Resource links become text naming the link.
fn content_value(blocks: &[ContentBlock]) -> Value {
    let ours: Vec<Content> = blocks.iter().map(block_from_mcp).collect();
    if ours.iter().all(|b| matches!(b, Content::Text { .. })) {
        let texts: Vec<String> = ours
            .into_iter()
            .filter_map(|b| match b {
                Content::Text { text } => Some(text),
                _ => None,
            })
            .collect();
        return Value::String(texts.join("\n"));
    }
    content::to_result(&ours)
}

/// A kiln content block as MCP's.
fn block_to_mcp(block: &Content) -> ContentBlock {
    match block {
        Content::Text { text } => ContentBlock::text(text.clone()),
        Content::Image { data, mime_type } => ContentBlock::image(data.clone(), mime_type.clone()),
        Content::Audio { data, mime_type } => ContentBlock::audio(data.clone(), mime_type.clone()),
        Content::Resource { resource: r } => {
            let contents = match (&r.text, &r.blob) {
                (Some(text), _) => ResourceContents::text(text.clone(), r.uri.clone()),
                (None, blob) => {
                    ResourceContents::blob(blob.clone().unwrap_or_default(), r.uri.clone())
                }
            };
            let contents = match &r.mime_type {
                Some(mime) => contents.with_mime_type(mime.clone()),
                None => contents,
            };
            ContentBlock::resource(contents)
        }
        // A kind added later than this converter: as the text a model would see.
        other => ContentBlock::text(content::render_text(std::slice::from_ref(other))),
    }
}

/// An MCP block as kiln's (annotations dropped; a resource link as text).
fn block_from_mcp(block: &ContentBlock) -> Content {
    if let Some(t) = block.as_text() {
        return Content::text(t.text.clone());
    }
    if let Some(i) = block.as_image() {
        return Content::image(i.data.clone(), i.mime_type.clone());
    }
    if let Some(a) = block.as_audio() {
        return Content::audio(a.data.clone(), a.mime_type.clone());
    }
    if let Some(e) = block.as_resource() {
        let resource = match &e.resource {
            ResourceContents::TextResourceContents {
                uri,
                mime_type,
                text,
                ..
            } => Resource {
                uri: uri.clone(),
                mime_type: mime_type.clone(),
                text: Some(text.clone()),
                blob: None,
                meta: contents_meta(&e.resource),
            },
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => Resource {
                uri: uri.clone(),
                mime_type: mime_type.clone(),
                text: None,
                blob: Some(blob.clone()),
                meta: contents_meta(&e.resource),
            },
            _ => return described(block),
        };
        return Content::Resource { resource };
    }
    described(block)
}

/// A resource link (or a block this version does not know), as JSON text.
fn described(block: &ContentBlock) -> Content {
    Content::text(serde_json::to_string(block).unwrap_or_default())
}

/// The `_meta` of resource contents (MCP Apps' `ui` of a page), kept through kiln.
fn contents_meta(contents: &ResourceContents) -> Option<Value> {
    let meta = match contents {
        ResourceContents::TextResourceContents { meta, .. }
        | ResourceContents::BlobResourceContents { meta, .. } => meta.as_ref()?,
        _ => return None,
    };
    serde_json::to_value(meta).ok()
}
