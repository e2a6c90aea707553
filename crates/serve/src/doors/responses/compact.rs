//! `POST /v1/responses/compact` (the Open Responses / OpenAI shape): a conversation — the
//! input items, after the stored conversation of `previous_response_id` when given — comes
//! back shorter: a `compaction` item standing for its older part (a summary by the agent
//! named by `model`, as its `.compact(...)` says, else a summary keeping the latest eight
//! messages), then the latest items as they were. The client sends that output as the next
//! request's input. The compaction is a run in the run log (`compact:AGENT`), the caller's.
//!
//! kiln encrypts nothing: `encrypted_content` is the summary, base64url-encoded behind a
//! version prefix, so any kiln server reads it back (it is a user message to the model, so a
//! client writing its own gains nothing it could not send as text).

use crate::body::JsonBody;
use crate::doors::responses::input::append_items;
use crate::doors::responses::output::{function_call_item, now, text_part, usage_json};
use crate::doors::responses::parts::compaction_item;
use crate::error::ApiError;
use crate::launch::find_agent;
use crate::state::AppState;
use crate::walls::auth::Principal;
use axum::Json;
use axum::extract::State;
use kiln_agent::compaction::{CompactRequest, compact_transcript};
use kiln_providers::Message;
use serde_json::{Value, json};
use std::sync::Arc;

/// `POST /v1/responses/compact`.
pub async fn compact(
    State(state): State<Arc<AppState>>,
    who: Principal,
    JsonBody(body): JsonBody,
) -> Result<Json<Value>, ApiError> {
    if state.draining() {
        return Err(ApiError::unavailable("the server is shutting down"));
    }
    let name = body["model"]
        .as_str()
        .ok_or_else(|| ApiError::bad_request("model", "model (the agent's name) is required"))?;
    let agent = find_agent(&state, name)?;
    let mut messages = match &body["previous_response_id"] {
        Value::Null => Vec::new(),
        Value::String(prev) => super::previous(&state, &who, prev).await?.messages,
        _ => {
            return Err(ApiError::bad_request(
                "previous_response_id",
                "previous_response_id must be a response id",
            ));
        }
    };
    let items = match &body["input"] {
        Value::Null => Vec::new(),
        Value::String(s) => vec![json!({"type": "message", "role": "user", "content": s})],
        Value::Array(items) => items.clone(),
        _ => {
            return Err(ApiError::bad_request(
                "input",
                "input must be a string or an array of items",
            ));
        }
    };
    // The instructions and system messages are not part of what is compacted.
    append_items(&mut messages, &items, &mut Vec::new())?;
    if messages.is_empty() {
        return Err(ApiError::bad_request(
            "input",
            "nothing to compact: give input items or previous_response_id",
        ));
    }
    // A compaction asks a model as a run does: it takes a run slot (or waits in the queue).
    let _permit = state.limiter.acquire().await?;
    let cancel = state.stop_runs.child_token();
    let _cancel_on_drop = cancel.clone().drop_guard();
    let compacted = compact_transcript(
        &agent,
        &Default::default(),
        &state.host.config().providers,
        &messages,
        &CompactRequest::default(),
        &cancel,
    )
    .await
    .map_err(|e| compact_error(name, e))?;
    let report = compacted.report(&agent, who.actor.clone());
    if let Some(db) = state.host.database() {
        kiln_agent::record::runlog::log_finished(db, &report)
            .map_err(|e| ApiError::internal(e.to_string()))?;
    }
    let mut output: Vec<Value> = match (compacted.summary(), compacted.head.as_slice()) {
        (Some(_), [Message::User { content, .. }]) => {
            vec![compaction_item(&format!("cmp_{}", report.run_id), content)]
        }
        (_, head) => head
            .iter()
            .enumerate()
            .flat_map(|(i, m)| items_of(m, &format!("{}_h{i}", report.run_id)))
            .collect(),
    };
    for (i, m) in compacted.kept.iter().enumerate() {
        output.extend(items_of(m, &format!("{}_k{i}", report.run_id)));
    }
    Ok(Json(json!({
        "id": format!("resp_{}", report.run_id),
        "object": "response.compaction",
        "created_at": now(),
        "output": output,
        "usage": usage_json(&compacted.usage),
    })))
}

/// Why a compaction failed, as the caller sees it: the model's service failing is a 502, the
/// server stopping a 503, anything else (an agent kiln cannot connect) a 500.
fn compact_error(agent: &str, e: kiln_agent::RunErrorKind) -> ApiError {
    use kiln_agent::RunErrorKind as K;
    let message = format!("compacting with agent \"{agent}\": {e}");
    match e {
        K::Cancelled => ApiError::unavailable(message),
        K::Provider(_) => ApiError::upstream(message),
        _ => ApiError::internal(message),
    }
}

/// One message as Responses items (an assistant's text and calls are one item each).
fn items_of(m: &Message, id: &str) -> Vec<Value> {
    match m {
        Message::User {
            content,
            attachments,
        } => {
            let mut parts = vec![json!({"type": "input_text", "text": content})];
            parts.extend(attachments.iter().map(attachment_part));
            vec![json!({
                "type": "message", "id": format!("msg_{id}"), "status": "completed", "role": "user",
                "content": parts,
            })]
        }
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            let mut out = Vec::new();
            if !content.is_empty() || tool_calls.is_empty() {
                out.push(json!({
                    "type": "message", "id": format!("msg_{id}"), "status": "completed",
                    "role": "assistant", "content": [text_part(content)],
                }));
            }
            out.extend(tool_calls.iter().map(|c| {
                function_call_item(
                    c,
                    "completed",
                    &crate::doors::responses::output::arguments_text(c),
                )
            }));
            out
        }
        Message::Tool { results } => results
            .iter()
            .map(|r| {
                // An error's text goes back as the model read it (kiln marks it on its wires).
                json!({
                    "type": "function_call_output", "id": format!("fco_{}", r.call_id),
                    "call_id": r.call_id, "output": r.content, "status": "completed",
                })
            })
            .collect(),
    }
}

/// An image or file of a kept user message as the part it came in (`input_image`,
/// `input_file`), so the next request sends it again.
fn attachment_part(a: &kiln_providers::Attachment) -> Value {
    use kiln_providers::{AttachmentKind, AttachmentSource};
    let url = match &a.source {
        AttachmentSource::Base64 { data } => format!("data:{};base64,{data}", a.media_type),
        AttachmentSource::Url { url } => url.clone(),
    };
    match (a.kind, &a.source) {
        (AttachmentKind::Image, _) => json!({"type": "input_image", "image_url": url}),
        (AttachmentKind::File, AttachmentSource::Url { .. }) => {
            json!({"type": "input_file", "file_url": url, "filename": a.filename})
        }
        (AttachmentKind::File, AttachmentSource::Base64 { .. }) => {
            json!({"type": "input_file", "file_data": url, "filename": a.filename})
        }
    }
}
