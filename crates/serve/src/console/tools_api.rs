//! Tools for people to try (`GET /v1/tools`, `POST /v1/tools/{name}`): every tool with its
//! description, capabilities and schema, and a call under the caller's grants (the token's
//! ceiling within the server's). A call goes through [`kiln_host::Host::call`]
//! (validation, the guard, the sandbox, the run log) and is a run of `call:TOOL` in the run
//! table, so an approval it needs waits in the inbox like any run's.

use crate::body::JsonBody;
use crate::error::ApiError;
use crate::state::AppState;
use crate::table::RunEntry;
use crate::walls::auth::Principal;
use axum::Json;
use axum::extract::{Path, State};
use kiln_agent::{Event, RunReport, ToolCallRecord};
use kiln_core::capability::Grants;
use kiln_core::context::call_events::{CallObserver, LogLevel, ToolNote};
use kiln_core::failure::{FailureKind, ToolFailure};
use kiln_core::tool::{Tool, ToolOutcome};
use serde_json::{Value, json};
use std::sync::Arc;

/// The model-style id the console's call has in its run.
const CALL_ID: &str = "call_1";

/// `GET /v1/tools`: `{"tools": [{name, description, capabilities, schema, available, file,
/// line}]}`; `available` says whether the caller's grants cover the tool's capabilities.
pub async fn list(State(state): State<Arc<AppState>>, who: Principal) -> Json<Value> {
    let grants = grants_for(&state, &who);
    let tools: Vec<Value> = state
        .host
        .tools()
        .iter()
        .map(|t| {
            json!({
                "name": t.name, "description": t.description,
                "capabilities": t.requires.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "schema": t.schema,
                "available": grants.missing(&t.requires).is_empty(),
                "file": (!t.loc.path.is_empty()).then_some(&t.loc.path),
                "line": (t.loc.line > 0).then_some(t.loc.line),
            })
        })
        .collect();
    Json(json!({ "tools": tools }))
}

/// What a direct call holds: the token's ceiling within the server's (`--caps`, with its
/// `--needs-approval` marks); nothing on an open server started without `--caps`.
pub(crate) fn grants_for(state: &AppState, who: &Principal) -> Grants {
    Grants::effective(&[who.ceiling.as_ref(), state.options.ceiling.as_ref()])
}

/// `POST /v1/tools/{name}` with `{"arguments": {...}}`: `{"run", "result", "duration_ms"}`,
/// or `{"run", "error": {kind, message}, "duration_ms"}` when the tool failed; arguments that
/// break the schema are a 400 whose `fields` name each violation's path (`/` the whole).
pub async fn call(
    State(state): State<Arc<AppState>>,
    who: Principal,
    Path(name): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Json<Value>, ApiError> {
    let tool = state.host.tool(&name).map_err(|_| {
        ApiError::not_found(
            "tool_not_found",
            format!("no tool named \"{name}\" (GET /v1/tools lists them)"),
        )
    })?;
    let args = arguments(&body)?;
    let (run, outcome) = run_call(&state, &who, tool.clone(), args.clone()).await?;
    answer(&run, &tool, &args, &outcome)
}

/// A call's `arguments`: a JSON object, none meaning `{}`.
pub(crate) fn arguments(body: &Value) -> Result<Value, ApiError> {
    match &body["arguments"] {
        Value::Null => Ok(json!({})),
        v @ Value::Object(_) => Ok(v.clone()),
        _ => Err(ApiError::bad_request(
            "arguments",
            "arguments must be a JSON object",
        )),
    }
}

/// Calls `tool` for `who` as the console does: a run of `call:TOOL` in the table (an approval
/// it needs waits in the inbox), under the caller's grants, logged; its run id and outcome.
pub(crate) async fn run_call(
    state: &Arc<AppState>,
    who: &Principal,
    tool: Arc<Tool>,
    args: Value,
) -> Result<(String, ToolOutcome), ApiError> {
    if state.draining() {
        return Err(ApiError::unavailable("the server is shutting down"));
    }
    let permit = state.limiter.acquire().await?;
    let entry = start(state, who, &tool, &args);
    let notes = Arc::new(EntryNotes {
        entry: entry.clone(),
        tool: tool.name.clone(),
        kept: Default::default(),
    });
    let opts = kiln_host::CallOptions {
        observer: Some(notes.clone()),
        grants: Some(grants_for(state, who)),
        actor_id: who.actor.clone(),
        timeout: state.options.run_timeout,
        cancel: Some(entry.cancel.clone()),
        approver: Some(entry.approvals.clone()),
        run_id: Some(entry.id.clone()),
        ..Default::default()
    };
    // The call runs in a task of its own: a client that goes away does not leave its run
    // unfinished (it ends, is logged and leaves the table like any run).
    let call = {
        let (state, entry, tool, args) = (state.clone(), entry.clone(), tool.clone(), args.clone());
        tokio::spawn(async move {
            let _slot = permit;
            let called = state.host.call_tool(&tool, args.clone(), opts).await;
            let outcome = match &called {
                Ok(outcome) => outcome.clone(),
                Err(e) => ToolOutcome::failed(
                    ToolFailure::visible(FailureKind::Runtime, e.to_string()),
                    std::time::Instant::now(),
                ),
            };
            finish(&state, &entry, &tool, args, &outcome, notes.kept());
            called
        })
    };
    let outcome = call
        .await
        .map_err(|e| ApiError::internal(format!("the call stopped: {e}")))?
        .map_err(|e| ApiError::internal(e.to_string()))?;
    Ok((entry.id.clone(), outcome))
}

/// The call's run: in the table (its approvals in the inbox), its call started.
fn start(state: &Arc<AppState>, who: &Principal, tool: &Tool, args: &Value) -> Arc<RunEntry> {
    let approvals = Arc::new(crate::table::approvals::Approvals::new(
        state.options.approval_timeout,
    ));
    // A call has no model to tell anything: its queue is closed from the start.
    let steering = Arc::new(kiln_agent::steer::Steering::default());
    steering.close();
    let run = (
        kiln_core::context::new_run_id(),
        format!("call:{}", tool.name),
    );
    let entry = crate::launch::register(
        state,
        who,
        run,
        state.stop_runs.child_token(),
        approvals,
        steering,
    );
    entry.push(Event::ToolStarted {
        round: 1,
        id: CALL_ID.to_string(),
        name: tool.name.clone(),
        args: args.clone().into(),
    });
    entry
}

/// What the tool tells its caller while it runs, live on its run's events and kept (the
/// first 64, the latest last) for its record.
struct EntryNotes {
    entry: Arc<RunEntry>,
    tool: String,
    kept: std::sync::Mutex<Vec<ToolNote>>,
}

impl EntryNotes {
    fn heard(&self, note: ToolNote) {
        if let Ok(mut kept) = self.kept.lock() {
            match kept.len() < 64 {
                true => kept.push(note.clone()),
                false => {
                    if let Some(last) = kept.last_mut() {
                        *last = note.clone();
                    }
                }
            }
        }
        self.entry.push(Event::ToolNote {
            round: 1,
            id: CALL_ID.to_string(),
            name: self.tool.clone(),
            note: Box::new(note),
        });
    }

    fn kept(&self) -> Vec<ToolNote> {
        self.kept.lock().map(|k| k.clone()).unwrap_or_default()
    }
}

impl CallObserver for EntryNotes {
    fn progress(&self, done: f64, total: Option<f64>, message: Option<String>) {
        self.heard(ToolNote::Progress {
            done,
            total,
            message,
        });
    }

    fn log(&self, _level: LogLevel, _message: String) {}

    fn emit(&self, name: &str, value: Value) {
        self.heard(ToolNote::Emit {
            name: name.to_string(),
            value,
        });
    }
}

/// Ends the call's run with its one call recorded.
fn finish(
    state: &AppState,
    entry: &RunEntry,
    tool: &Tool,
    args: Value,
    outcome: &ToolOutcome,
    notes: Vec<ToolNote>,
) {
    let record = ToolCallRecord::new(
        1,
        CALL_ID,
        &tool.name,
        args.clone().into(),
        outcome,
        tool.version().to_string(),
    )
    .with_notes(notes);
    let mut report = RunReport::new(
        &entry.agent,
        vec![kiln_providers::Message::user(args.to_string())],
    );
    report.run_id = entry.id.clone();
    report.actor = entry.owner.clone();
    report.tool_calls = vec![record.clone()];
    match &outcome.result {
        Ok(v) => report.answer = v.to_string(),
        Err(f) => report.error = Some(f.message.clone()),
    }
    entry.push(Event::ToolFinished(record.into()));
    entry.push(Event::Finished(Box::new(Ok(report))));
    crate::launch::announce_end(state, entry);
    state.runs.finished(&entry.id);
}

/// The caller's answer: the result, the failure, or the schema's violations by path.
fn answer(
    run: &str,
    tool: &Tool,
    args: &Value,
    outcome: &ToolOutcome,
) -> Result<Json<Value>, ApiError> {
    let ms = outcome.duration.as_secs_f64() * 1000.0;
    match &outcome.result {
        Ok(result) => Ok(Json(
            json!({"run": run, "result": result, "duration_ms": ms}),
        )),
        Err(f) if f.kind == FailureKind::InvalidArguments => {
            let fields: Vec<Value> = tool
                .violations(args)
                .iter()
                .map(|v| match v.split_once(": ") {
                    Some((path, message)) => json!({"path": path, "message": message}),
                    None => json!({"path": "/", "message": v}),
                })
                .collect();
            let first = fields
                .first()
                .and_then(|f| f["path"].as_str())
                .unwrap_or("/")
                .to_string();
            let mut e = ApiError::bad_request(&first, f.message.clone());
            e.code = Some("invalid_arguments");
            Err(e
                .with_field("fields", json!(fields))
                .with_field("run", json!(run)))
        }
        Err(f) => Ok(Json(json!({
            "run": run,
            "error": {"kind": f.kind.as_str(), "message": kiln_core::error::public::scrub(&f.message)},
            "duration_ms": ms,
        }))),
    }
}
