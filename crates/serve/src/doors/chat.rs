//! OpenAI-compatible endpoints: `GET /v1/models` lists the agents, `POST /v1/chat/completions`
//! runs one (`model` = agent name), whole or as SSE chunks ending with `[DONE]`.

use crate::body::{JsonBody, number, object, positive, string_list};
use crate::error::{ApiError, from_run_error};
use crate::launch::{RunRequest, launch};
use crate::state::AppState;
use crate::table::RunEntry;
use crate::walls::auth::Principal;
use axum::Json;
use axum::extract::{Path, State};
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use kiln_agent::Event;
use kiln_agent::RunError;
use kiln_agent::RunReport;
use kiln_agent::connect::ProviderOverrides;
use kiln_providers::{Message, StopReason};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

fn model_json(name: &str) -> Value {
    json!({"id": name, "object": "model", "created": 0, "owned_by": "kiln"})
}

/// `GET /v1/models`: the loaded agents.
pub async fn models(State(state): State<Arc<AppState>>, _who: Principal) -> Json<Value> {
    let registry = state.host.registry();
    let data: Vec<Value> = registry.agents().map(|a| model_json(&a.name)).collect();
    Json(json!({"object": "list", "data": data}))
}

/// `GET /v1/models/{name}`: one agent.
pub async fn model(
    State(state): State<Arc<AppState>>,
    _who: Principal,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    state
        .host
        .registry()
        .agent(&name)
        .map(|a| Json(model_json(&a.name)))
        .ok_or_else(|| ApiError::not_found("model_not_found", format!("no agent named \"{name}\"")))
}

/// The text of a message's `content`: a string or text parts.
fn content_text(content: &Value, at: &str) -> Result<String, ApiError> {
    match content {
        Value::String(s) => Ok(s.clone()),
        Value::Null => Ok(String::new()),
        Value::Array(parts) => {
            let mut text = String::new();
            for (j, p) in parts.iter().enumerate() {
                match (p["type"].as_str(), p["text"].as_str()) {
                    (Some("text"), Some(t)) => text.push_str(t),
                    _ => {
                        return Err(ApiError::bad_request(
                            &format!("{at}[{j}]"),
                            "only text content parts ({\"type\": \"text\", \"text\": ...}) are supported",
                        ));
                    }
                }
            }
            Ok(text)
        }
        _ => Err(ApiError::bad_request(
            at,
            "content must be a string or an array of text parts",
        )),
    }
}

/// The parts of a Chat Completions request kiln uses.
struct ChatRequest {
    run: RunRequest,
    include_usage: bool,
    include_tool_calls: bool,
    /// `kiln.events`: the tools' progress and events, as chunks with a `kiln.event`.
    tool_notes: bool,
}

fn parse(body: &Value) -> Result<ChatRequest, ApiError> {
    let agent = body["model"]
        .as_str()
        .ok_or_else(|| ApiError::bad_request("model", "model (the agent's name) is required"))?;
    let messages = body["messages"].as_array().filter(|m| !m.is_empty());
    let messages = messages
        .ok_or_else(|| ApiError::bad_request("messages", "messages must be a non-empty array"))?;
    let mut system: Vec<String> = Vec::new();
    let mut history = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let at = format!("messages[{i}]");
        let content = content_text(&m["content"], &format!("{at}.content"))?;
        match m["role"].as_str() {
            Some("system" | "developer") => system.push(content),
            Some("user") => history.push(Message::user(content)),
            Some("assistant") if m.get("tool_calls").is_some_and(|t| !t.is_null()) => {
                return Err(ApiError::bad_request(
                    &format!("{at}.tool_calls"),
                    "kiln agents run their own tools: send the conversation's text only",
                ));
            }
            Some("assistant") => history.push(Message::Assistant {
                replay: None,
                content,
                tool_calls: Vec::new(),
            }),
            Some(other) => {
                return Err(ApiError::bad_request(
                    &format!("{at}.role"),
                    format!(
                        "role \"{other}\" is not supported (system, developer, user, assistant)"
                    ),
                ));
            }
            None => {
                return Err(ApiError::bad_request(
                    &format!("{at}.role"),
                    "role is required",
                ));
            }
        }
    }
    let prompt = match history.pop() {
        Some(Message::User { content, .. }) => content,
        _ => {
            return Err(ApiError::bad_request(
                "messages",
                "the last non-system message must be the user's",
            ));
        }
    };
    let max_tokens = match &body["max_completion_tokens"] {
        Value::Null => positive(body, "max_tokens")?,
        _ => positive(body, "max_completion_tokens")?,
    };
    let kiln = &body["kiln"];
    let caps = string_list(&kiln["caps"], "kiln.caps")?;
    let context = object(&kiln["context"], "kiln.context")?;
    Ok(ChatRequest {
        run: RunRequest {
            agent: agent.to_string(),
            prompt,
            history,
            overrides: ProviderOverrides {
                extra_system: (!system.is_empty()).then(|| system.join("\n\n")),
                temperature: number(body, "temperature")?,
                max_tokens,
                ..ProviderOverrides::default()
            },
            caps,
            caps_param: "kiln.caps",
            context,
            actor: body["user"].as_str().map(str::to_string),
            session: None,
            stream: body["stream"] == true,
            budget: crate::body::budget(&kiln["budget"])?,
            ..RunRequest::default()
        },
        include_usage: body["stream_options"]["include_usage"] == true,
        include_tool_calls: kiln["include_tool_calls"] == true,
        tool_notes: crate::body::flag(&kiln["events"], "kiln.events")?,
    })
}

fn created() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn finish_reason(report: &RunReport) -> &'static str {
    match report.stop_reason {
        Some(StopReason::MaxTokens) => "length",
        _ => "stop",
    }
}

fn usage_json(report: &RunReport) -> Value {
    let (i, o) = (report.usage.input_tokens, report.usage.output_tokens);
    json!({"prompt_tokens": i, "completion_tokens": o, "total_tokens": i + o})
}

/// The error a client sees for a failed run; a run the server stopped says so.
fn run_error(state: &AppState, e: &RunError) -> ApiError {
    if matches!(e.kind, kiln_agent::RunErrorKind::Cancelled) && state.stop_runs.is_cancelled() {
        return ApiError::unavailable(
            "kiln serve shut down: the run was cancelled when the grace period ran out",
        );
    }
    from_run_error(e)
}

/// Cancels the run if the client goes away before its end.
pub(crate) struct CancelOnDrop(pub(crate) Option<CancellationToken>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(t) = self.0.take() {
            t.cancel();
        }
    }
}

/// `POST /v1/chat/completions`.
pub async fn completions(
    State(state): State<Arc<AppState>>,
    who: Principal,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let req = parse(&body)?;
    let extras = Extras {
        usage: req.include_usage,
        calls: req.include_tool_calls,
        notes: req.tool_notes,
    };
    let stream = req.run.stream;
    let entry = launch(&state, &who, req.run).await?;
    if stream {
        return Ok(streamed(state, entry, extras).into_response());
    }
    let include_calls = extras.calls;
    let mut guard = CancelOnDrop(Some(entry.cancel.clone()));
    let end = entry.wait().await;
    guard.0 = None;
    let Event::Finished(result) = &*end else {
        return Err(ApiError::internal("the run ended without a result"));
    };
    let report = match result.as_ref() {
        Ok(r) => r,
        Err(e) => return Err(run_error(&state, e)),
    };
    let mut reply = json!({
        "id": format!("chatcmpl-{}", entry.id),
        "object": "chat.completion",
        "created": created(),
        "model": entry.agent,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": report.answer, "refusal": null},
            "logprobs": null,
            "finish_reason": finish_reason(report),
        }],
        "usage": usage_json(report),
        "kiln": {"run_id": entry.id},
    });
    if include_calls {
        reply["kiln"]["tool_calls"] = crate::table::public_report(report)["tool_calls"].take();
    }
    Ok(Json(reply).into_response())
}

fn chunk(entry: &RunEntry, delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": format!("chatcmpl-{}", entry.id),
        "object": "chat.completion.chunk",
        "created": created(),
        "model": entry.agent,
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
    })
}

/// The chunks after the run's end: the finish reason and usage, or an error.
fn closing(
    state: &AppState,
    entry: &RunEntry,
    result: &Result<RunReport, RunError>,
    usage: bool,
) -> Vec<Value> {
    match result {
        Ok(report) => {
            let mut out = vec![chunk(entry, json!({}), Some(finish_reason(report)))];
            if usage {
                let mut last = chunk(entry, json!({}), None);
                last["choices"] = json!([]);
                last["usage"] = usage_json(report);
                out.push(last);
            }
            out
        }
        Err(e) => vec![run_error(state, e).body()],
    }
}

/// What a stream carries besides the answer, as the request asked.
#[derive(Clone, Copy)]
struct Extras {
    /// The usage chunk (`stream_options.include_usage`).
    usage: bool,
    /// kiln's tool calls (`kiln.include_tool_calls`).
    calls: bool,
    /// The tools' progress and events (`kiln.events`).
    notes: bool,
}

fn streamed(state: Arc<AppState>, entry: Arc<RunEntry>, extras: Extras) -> impl IntoResponse {
    let guard = Arc::new(std::sync::Mutex::new(CancelOnDrop(Some(
        entry.cancel.clone(),
    ))));
    let first = chunk(&entry, json!({"role": "assistant", "content": ""}), None);
    let events = entry.events().flat_map(move |ev| {
        let out: Vec<Value> = match &*ev {
            Event::Text(t) => vec![chunk(&entry, json!({"content": t}), None)],
            Event::ToolFinished(r) if extras.calls => {
                let mut c = chunk(&entry, json!({}), None);
                c["choices"] = json!([]);
                c["kiln"] = json!({"tool_call": r});
                vec![c]
            }
            Event::ToolNote {
                round,
                id,
                name,
                note,
            } if extras.notes => {
                // A chunk with no choices, as the usage chunk: the OpenAI SDKs pass it over.
                let (kind, mut data) = crate::table::note_json(*round, id, name, note);
                data["type"] = json!(kind);
                let mut c = chunk(&entry, json!({}), None);
                c["choices"] = json!([]);
                c["kiln"] = json!({"event": data});
                vec![c]
            }
            Event::Finished(result) => {
                if let Ok(mut g) = guard.lock() {
                    g.0 = None;
                }
                closing(&state, &entry, result, extras.usage)
            }
            _ => Vec::new(),
        };
        futures_util::stream::iter(
            out.into_iter()
                .map(|v| SseEvent::default().data(v.to_string())),
        )
    });
    let all =
        futures_util::stream::once(async move { SseEvent::default().data(first.to_string()) })
            .chain(events)
            .chain(futures_util::stream::once(async {
                SseEvent::default().data("[DONE]")
            }))
            .map(Ok::<_, std::convert::Infallible>);
    Sse::new(all)
}
