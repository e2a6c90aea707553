//! The Responses door of a fleet (`kiln serve --restate-ingress`): `POST /v1/responses`
//! submits a `KilnRun` workflow to Restate's ingress (keyed by the actor-scoped idempotency
//! key, as `/v1/runs` is), so a response whose worker dies is finished by another. The run's
//! input carries the conversation, the client's function tools and a `response` payload the
//! worker hands back beside the report; any worker renders the Response object from the
//! invocation alone. A response's id is `resp_` + the invocation id; `previous_response_id`
//! continues the previous invocation's messages (the actor's own only). `DELETE` is refused:
//! Restate keeps invocations until its retention ends, and kiln cannot purge one early.

use crate::doors::responses::input::{ResponsesRequest, append_items, parse, split_prompt};
use crate::doors::responses::output::{Ending, ending, items, now};
use crate::doors::responses::stream::{StreamEvent, Streamer};
use crate::doors::runs::front::{idempotency_key, restate_error, scoped};
use crate::error::ApiError;
use crate::launch::{find_agent, grants_for};
use crate::running::Echo;
use crate::running::Shape;
use crate::state::AppState;
use crate::walls::auth::Principal;
use axum::Json;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use kiln_agent::{
    CallError, CallOutcome, Event, RunError, RunErrorKind, RunReport, ToolCallRecord,
};
use kiln_core::capability::GrantMode;
use kiln_providers::Message;
use kiln_restate::{Invocation, Outcome, RestateClient, Target};
use serde_json::{Value, json};
use std::sync::Arc;

/// The prefix of a response id; the rest is the invocation's id.
const PREFIX: &str = "resp_";

fn not_found(id: &str) -> ApiError {
    ApiError::not_found("response_not_found", format!("no response \"{id}\""))
}

/// The invocation behind response `id` if `who` may see it, with the `response` payload it
/// was sent with (a `store: false` one is seen by no one).
async fn find(
    front: &RestateClient,
    who: &Principal,
    id: &str,
) -> Result<(String, Invocation, Value), ApiError> {
    let inv_id = id.strip_prefix(PREFIX).ok_or_else(|| not_found(id))?;
    let inv = front
        .lookup(inv_id)
        .await
        .map_err(restate_error)?
        .filter(|inv| inv.service == "KilnRun" && who.sees_key(&inv.key))
        .ok_or_else(|| not_found(id))?;
    let payload = front
        .shared(&inv, "response")
        .await
        .map_err(restate_error)?;
    if !payload.is_object() || payload["store"] == false {
        return Err(not_found(id));
    }
    Ok((inv_id.to_string(), inv, payload))
}

fn echo_json(e: &Echo) -> Value {
    json!({
        "instructions": e.instructions, "tools": e.tools, "tool_choice": e.tool_choice,
        "parallel_tool_calls": e.parallel_tool_calls, "temperature": e.temperature,
        "top_p": e.top_p, "max_output_tokens": e.max_output_tokens, "metadata": e.metadata,
        "user": e.user,
    })
}

fn echo_of(v: &Value) -> Echo {
    let text = |k: &str| v[k].as_str().map(str::to_string);
    Echo {
        instructions: text("instructions"),
        tools: v["tools"].as_array().cloned().unwrap_or_default(),
        tool_choice: v["tool_choice"].clone(),
        parallel_tool_calls: v["parallel_tool_calls"].as_bool().unwrap_or(true),
        temperature: v["temperature"].as_f64(),
        top_p: v["top_p"].as_f64(),
        max_output_tokens: v["max_output_tokens"]
            .as_u64()
            .and_then(|n| u32::try_from(n).ok()),
        metadata: v["metadata"].clone(),
        user: text("user"),
    }
}

/// The payload a response's run carries: what its Response object repeats.
fn payload(shape: &Shape, input_items: &[Value]) -> Value {
    json!({
        "agent": shape.agent, "created_at": shape.created_at, "previous": shape.previous,
        "store": shape.store, "echo": echo_json(&shape.echo), "from": shape.from,
        "input_items": input_items,
    })
}

/// The shape of response `id` (invocation `inv_id`) from its payload.
fn shape_of(inv_id: &str, p: &Value) -> Shape {
    Shape {
        id: format!("{PREFIX}{inv_id}"),
        run_id: inv_id.to_string(),
        agent: p["agent"].as_str().unwrap_or_default().to_string(),
        created_at: p["created_at"].as_u64().unwrap_or(0),
        previous: p["previous"].as_str().map(str::to_string),
        store: p["store"].as_bool().unwrap_or(true),
        echo: echo_of(&p["echo"]),
        from: p["from"]
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0),
    }
}

/// A tool call record as the worker's report serialized it.
fn record_of(v: &Value) -> ToolCallRecord {
    let duration_ms = v["duration_ms"].as_f64().unwrap_or(0.0);
    let o = &v["outcome"];
    let outcome = if o["success"] == true {
        CallOutcome::Ok {
            result: o["result"].clone(),
            duration_ms,
        }
    } else {
        CallOutcome::Failed {
            error: CallError {
                kind: serde_json::from_value(o["error"]["kind"].clone())
                    .unwrap_or(kiln_core::failure::FailureKind::Runtime),
                message: o["error"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                detail: None,
            },
            duration_ms,
        }
    };
    let text = |k: &str| v[k].as_str().unwrap_or_default().to_string();
    ToolCallRecord {
        round: v["round"]
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(0),
        id: text("id"),
        name: text("name"),
        args: v["args"].clone().into(),
        outcome,
        is_error: v["is_error"] == true,
        duration_ms,
        script_version: String::new(),
        nested: Vec::new(),
        notes: serde_json::from_value(v["notes"].clone()).unwrap_or_default(),
    }
}

/// The parts of a worker's serialized report a Response is made of.
fn report_of(v: &Value) -> RunReport {
    let field = |k: &str| v[k].clone();
    let messages: Vec<Message> = serde_json::from_value(field("messages")).unwrap_or_default();
    let mut r = RunReport::new(v["agent"].as_str().unwrap_or_default(), messages);
    r.run_id = v["run_id"].as_str().unwrap_or_default().to_string();
    r.usage = serde_json::from_value(field("usage")).unwrap_or_default();
    r.stop_reason = serde_json::from_value(field("stop_reason")).unwrap_or_default();
    r.answer = v["answer"].as_str().unwrap_or_default().to_string();
    r.pending_calls = serde_json::from_value(field("pending_calls")).unwrap_or_default();
    r.tool_calls = v["tool_calls"]
        .as_array()
        .map(|calls| calls.iter().map(record_of).collect())
        .unwrap_or_default();
    r
}

/// How a response's invocation ended: its run's result and the error as the caller sees it.
fn result_of(outcome: Outcome) -> (Result<RunReport, RunError>, Value) {
    let (report, error) = match outcome {
        Outcome::Output(v) => (report_of(&v["report"]), v["error"].clone()),
        // The run could not start (the worker refused it).
        Outcome::Failed { code, message } => {
            let kind = if code == 409 { "cancelled" } else { "error" };
            let message = kiln_core::error::public::scrub(&message);
            (
                RunReport::new("", Vec::new()),
                json!({"code": kind, "message": message}),
            )
        }
    };
    if error.is_null() {
        return (Ok(report), error);
    }
    let kind = match error["code"].as_str() {
        Some("cancelled") => RunErrorKind::Cancelled,
        Some("deadline") => RunErrorKind::Deadline,
        _ => RunErrorKind::Journal(error["message"].as_str().unwrap_or_default().to_string()),
    };
    let e = RunError {
        kind,
        report: Box::new(report),
    };
    (Err(e), error)
}

/// The Response object of a run that ended.
fn rendered(shape: &Shape, outcome: Outcome) -> Value {
    let (result, error) = result_of(outcome);
    let report = crate::doors::responses::output::report_of(&result);
    let output = items(shape, report);
    let mut end = ending(&result);
    if !error.is_null() && end.status != "cancelled" {
        end.error = error;
    }
    shape.object(output, &end)
}

/// The conversation a request continues (the previous response's messages) with its items
/// appended; returns where the new messages start.
async fn conversation(
    front: &RestateClient,
    who: &Principal,
    req: &mut ResponsesRequest,
) -> Result<usize, ApiError> {
    let mut messages = match &req.previous {
        Some(prev) => {
            let missing = || {
                ApiError::not_found(
                    "previous_response_not_found",
                    format!("no stored response \"{prev}\" to continue (responses made with \"store\": false are not kept)"),
                )
                .with_field("param", json!("previous_response_id"))
            };
            let (inv_id, _, _) = find(front, who, prev).await.map_err(|_| missing())?;
            match front.attach(&inv_id).await.map_err(restate_error)? {
                Outcome::Output(v) => report_of(&v["report"]).messages,
                Outcome::Failed { .. } => return Err(missing()),
            }
        }
        None => Vec::new(),
    };
    let mut system = Vec::new();
    append_items(&mut messages, &req.input_items, &mut system)?;
    if !system.is_empty() {
        let instructions = req.run.overrides.extra_system.take();
        system.splice(0..0, instructions);
        req.run.overrides.extra_system = Some(system.join("\n\n"));
    }
    let (history, prompt, attachments) = split_prompt(messages)?;
    let from = history.len();
    req.run.history = history;
    req.run.prompt = prompt;
    req.run.attachments = attachments;
    Ok(from)
}

/// The worker's input for the request's run.
fn run_input(
    state: &AppState,
    who: &Principal,
    req: &ResponsesRequest,
    response: Value,
) -> Result<Value, ApiError> {
    let agent = find_agent(state, &req.run.agent)?;
    if agent.mode == kiln_registry::agent_spec::AgentMode::JsonPlanner {
        return Err(ApiError::bad_request(
            "model",
            format!(
                "agent \"{}\" is a json_planner agent; durable runs support the tool-calling loop only",
                req.run.agent
            ),
        ));
    }
    let grants = grants_for(state, who, &agent.grants, &req.run)?;
    let caps: Vec<String> = grants.iter().map(|g| g.cap.to_string()).collect();
    let ask: Vec<String> = grants
        .iter()
        .filter(|g| g.mode == GrantMode::NeedsApproval)
        .map(|g| g.cap.to_string())
        .collect();
    let run = &req.run;
    let client_tools: Vec<Value> = run
        .client_tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "schema": t.schema}))
        .collect();
    Ok(json!({
        "agent": run.agent,
        "prompt": run.prompt,
        "context": run.context,
        "actor": who.actor.clone().or(run.actor.clone()),
        "caps": caps,
        "ask": ask,
        "history": run.history,
        "client_tools": client_tools,
        "attachments": run.attachments,
        "instructions": run.overrides.extra_system,
        "temperature": run.overrides.temperature,
        "max_tokens": run.overrides.max_tokens,
        "tool_choice": run.overrides.tool_choice,
        "parallel_tool_calls": run.overrides.parallel_tool_calls,
        "response": response,
    }))
}

/// `POST /v1/responses` through Restate: the same body and answers as a local response.
pub(crate) async fn create(
    state: &Arc<AppState>,
    front: &RestateClient,
    who: &Principal,
    headers: &HeaderMap,
    body: &Value,
) -> Result<Response, ApiError> {
    let mut req = parse(body)?;
    if state.draining() {
        return Err(ApiError::unavailable("the server is shutting down"));
    }
    let from = conversation(front, who, &mut req).await?;
    crate::doors::responses::input::check_tool_names(state, &req)?;
    let input_items =
        crate::doors::responses::input::with_ids(std::mem::take(&mut req.input_items));
    let mut shape = Shape {
        id: String::new(),
        run_id: String::new(),
        agent: req.run.agent.clone(),
        created_at: now(),
        previous: req.previous.clone(),
        store: req.store,
        echo: req.echo.clone(),
        from,
    };
    let input = run_input(state, who, &req, payload(&shape, &input_items))?;
    let key = idempotency_key(headers)?;
    let id = front
        .submit(Target::Run, &scoped(who, &key), &key, &input)
        .await
        .map_err(restate_error)?;
    tracing::info!(run_id = %id, agent = %req.run.agent, actor = ?who.actor, "response submitted to Restate");
    shape.id = format!("{PREFIX}{id}");
    shape.run_id = id.clone();
    if req.run.stream {
        return Ok(streamed(front.clone(), id, shape));
    }
    let outcome = front.attach(&id).await.map_err(restate_error)?;
    Ok(Json(rendered(&shape, outcome)).into_response())
}

/// The stream of a response whose steps run on other workers: created and in progress now,
/// then its items and its end once the run ends.
fn streamed(front: RestateClient, id: String, shape: Shape) -> Response {
    let mut streamer = Streamer::new(shape.clone());
    let first = streamer.start();
    let rest = futures_util::stream::once(async move {
        let outcome = match front.attach(&id).await {
            Ok(outcome) => outcome,
            Err(e) => Outcome::Failed {
                code: 502,
                message: e.to_string(),
            },
        };
        futures_util::stream::iter(replayed(&mut streamer, &shape, outcome))
    })
    .flatten();
    let all = futures_util::stream::iter(first)
        .chain(rest)
        .map(|(kind, data)| {
            Ok::<_, std::convert::Infallible>(
                SseEvent::default().event(kind).data(data.to_string()),
            )
        });
    Sse::new(all)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// The stream events of a run that ended, as if its events had been seen as they happened.
fn replayed(streamer: &mut Streamer, shape: &Shape, outcome: Outcome) -> Vec<StreamEvent> {
    let (result, error) = result_of(outcome);
    let report = crate::doors::responses::output::report_of(&result);
    let mut events = Vec::new();
    let mut round = 0;
    for m in report.messages.iter().skip(shape.from) {
        let Message::Assistant {
            content,
            tool_calls,
            ..
        } = m
        else {
            continue;
        };
        round += 1;
        events.push(Event::ModelRequest { round });
        if !content.is_empty() {
            events.push(Event::Text(content.clone()));
        }
        events.push(Event::ModelReply { round });
        for call in tool_calls {
            if let Some(r) = report.tool_calls.iter().find(|r| r.id == call.id) {
                events.push(Event::ToolFinished(r.clone().into()));
            }
        }
    }
    let mut out: Vec<StreamEvent> = events.iter().flat_map(|ev| streamer.on(ev)).collect();
    out.extend(streamer.on(&Event::Finished(Box::new(result))));
    if let Some((_, last)) = out.last_mut()
        && !error.is_null()
        && last["response"]["status"] == "failed"
    {
        last["response"]["error"] = error;
    }
    out
}

/// `GET /v1/responses/{id}` through Restate: any worker answers for any response.
pub(crate) async fn get(
    front: &RestateClient,
    who: &Principal,
    id: &str,
) -> Result<Value, ApiError> {
    let (inv_id, inv, payload) = find(front, who, id).await?;
    let shape = shape_of(&inv_id, &payload);
    if !inv.completed() {
        let end = Ending {
            status: "in_progress",
            usage: None,
            error: Value::Null,
            incomplete: None,
        };
        return Ok(shape.object(Vec::new(), &end));
    }
    let outcome = front.attach(&inv_id).await.map_err(restate_error)?;
    Ok(rendered(&shape, outcome))
}

/// `POST /v1/responses/{id}/cancel` through Restate: the invocation is cancelled there, and
/// the response is answered as it ended.
pub(crate) async fn cancel(
    front: &RestateClient,
    who: &Principal,
    id: &str,
) -> Result<Value, ApiError> {
    let (inv_id, inv, payload) = find(front, who, id).await?;
    if !inv.completed() {
        front.cancel(&inv_id).await.map_err(restate_error)?;
    }
    let outcome = front.attach(&inv_id).await.map_err(restate_error)?;
    Ok(rendered(&shape_of(&inv_id, &payload), outcome))
}

/// The input items response `id` was asked with.
pub(crate) async fn input_items(
    front: &RestateClient,
    who: &Principal,
    id: &str,
) -> Result<Vec<Value>, ApiError> {
    let (_, _, payload) = find(front, who, id).await?;
    Ok(payload["input_items"]
        .as_array()
        .cloned()
        .unwrap_or_default())
}

/// `DELETE /v1/responses/{id}` through Restate: refused (`400`); the response lives in
/// Restate's invocation store until its retention ends.
pub(crate) async fn delete(front: &RestateClient, who: &Principal, id: &str) -> ApiError {
    if let Err(e) = find(front, who, id).await {
        return e;
    }
    ApiError::bad_request(
        "response_id",
        "responses run through Restate cannot be deleted: Restate keeps each one until its invocation retention ends",
    )
}
