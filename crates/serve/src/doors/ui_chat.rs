//! `POST /v1/ui-chat/{agent}`: an agent for the AI SDK's `useChat` (`DefaultChatTransport`),
//! answered as the UI message stream protocol (SSE with `x-vercel-ai-ui-message-stream: v1`,
//! ending `[DONE]`). The chat's `id` is the kiln session (the actor's own); the front end keeps
//! the conversation and sends it whole. A call to a tool the front end runs (`onToolCall`)
//! ends the stream with it pending, and the next request carries its output; a call that needs
//! a person's approval ends the stream with a `tool-approval-request` while the run waits, and
//! the request carrying the answer (`addToolApprovalResponse`) decides it and streams the rest
//! into the same message. Through the same walls as every door.

pub(crate) mod chunks;
pub(crate) mod input;

use crate::body::JsonBody;
use crate::doors::live;
use crate::error::ApiError;
use crate::state::AppState;
use crate::table::RunEntry;
use crate::walls::auth::Principal;
use axum::extract::{Path, State};
use axum::http::HeaderValue;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use chunks::UiStream;
use futures_util::StreamExt;
use std::sync::Arc;

/// `POST /v1/ui-chat/{agent}`.
pub async fn chat(
    State(state): State<Arc<AppState>>,
    who: Principal,
    Path(agent): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    live::here_only(&state, "UI message stream")?;
    let input = input::parse(&body)?;
    if !input.approvals.is_empty() {
        return resume(&state, &who, input);
    }
    let run = live::FrontRun {
        agent,
        prompt: input.prompt,
        history: input.history,
        system: input.system,
        session: (input.chat_id.clone(), "id"),
        client_tools: client_tools(&body["kiln"]["client_tools"])?,
        state: None,
        attachments: input.attachments,
    };
    let entry = live::start(&state, &who, run).await?;
    // A continuation (the front end's tool outputs) streams into the message it continues.
    let message = input
        .last_assistant
        .unwrap_or_else(|| format!("{}-msg", entry.id));
    let ui = UiStream::new(&entry.id, &message);
    Ok(stream(entry, ui, None))
}

/// The front end's tools, given as the Responses door takes function tools (`useChat` sends no
/// tool list: a front end names the tools it runs in its request body, `kiln.client_tools`).
fn client_tools(v: &serde_json::Value) -> Result<Vec<kiln_providers::ToolDef>, ApiError> {
    let (defs, _) = crate::doors::responses::input::client_tools(v)
        .map_err(|e| e.renamed(|p| format!("kiln.client_{p}")))?;
    Ok(defs)
}

/// Each approval the last message answers decided on the actor's own waiting run, then the rest of that run
/// into the same message.
fn resume(
    state: &Arc<AppState>,
    who: &Principal,
    input: input::UiChatInput,
) -> Result<Response, ApiError> {
    let mut run = None;
    for (approval, decision) in &input.approvals {
        let not_found = || {
            ApiError::not_found(
                "approval_not_found",
                format!("no approval \"{approval}\" waits on this server for you"),
            )
        };
        run = Some(live::decide(
            state,
            who,
            approval,
            decision.clone(),
            not_found,
        )?);
    }
    let Some(decided) = run else {
        return Err(ApiError::bad_request("messages", "no answered approval"));
    };
    let entry = decided.entry;
    let message = input
        .last_assistant
        .unwrap_or_else(|| format!("{}-msg", entry.id));
    // The call that asked is in the front end's message already.
    let ui = UiStream::new(&entry.id, &message).with_announced(decided.call);
    Ok(stream(entry, ui, Some(decided.approval)))
}

/// The run's chunks as the UI message stream (see [`crate::doors::live`]), ending `[DONE]`.
fn stream(entry: Arc<RunEntry>, ui: UiStream, after: Option<String>) -> Response {
    let first = ui.start();
    let chunks = futures_util::stream::once(async move { first })
        .chain(crate::doors::live::events(entry, ui, after))
        .map(|v| SseEvent::default().data(v.to_string()))
        .chain(futures_util::stream::once(async {
            SseEvent::default().data("[DONE]")
        }))
        .map(Ok::<_, std::convert::Infallible>);
    let mut response = Sse::new(chunks)
        .keep_alive(KeepAlive::default())
        .into_response();
    let headers = response.headers_mut();
    headers.insert(
        "x-vercel-ai-ui-message-stream",
        HeaderValue::from_static("v1"),
    );
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    headers.insert("cache-control", HeaderValue::from_static("no-cache"));
    response
}
