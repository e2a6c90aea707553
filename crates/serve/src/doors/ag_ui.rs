//! `POST /v1/ag-ui/{agent}`: an agent as an AG-UI agent, for CopilotKit and any front end on
//! `@ag-ui/client`. The request is AG-UI's `RunAgentInput` (see `input`); the answer is AG-UI
//! events as SSE (see `events`). `threadId` is the kiln session (the actor's own: another
//! actor's thread is another session), the front end's `tools` run in the browser (the run
//! finishes with their calls pending, and the next input carries their results), and a call
//! that needs a person's approval finishes the AG-UI run with an interrupt while the kiln run
//! waits: the next input's `resume` decides it and streams the rest of the run. Through the
//! same walls as every door: tokens, the actor's ceiling, body limits, the run log.

pub(crate) mod events;
pub(crate) mod input;

use crate::body::JsonBody;
use crate::doors::live;
use crate::error::ApiError;
use crate::state::AppState;
use crate::table::RunEntry;
use crate::walls::auth::Principal;
use axum::extract::{Path, State};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use events::AgUiStream;
use futures_util::StreamExt;
use serde_json::json;
use std::sync::{Arc, Mutex};

/// `POST /v1/ag-ui/{agent}`.
pub async fn run(
    State(state): State<Arc<AppState>>,
    who: Principal,
    Path(agent): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    live::here_only(&state, "AG-UI")?;
    let input = input::parse(&body)?;
    if !input.resume.is_empty() {
        return resume(&state, &who, input).await;
    }
    let run_state = Arc::new(Mutex::new(input.state.clone().unwrap_or_else(|| json!({}))));
    let run = live::FrontRun {
        agent,
        prompt: input.prompt,
        history: input.history,
        system: input.system,
        session: (input.thread_id.clone(), "threadId"),
        client_tools: input.client_tools,
        state: Some(run_state.clone()),
        attachments: input.attachments,
    };
    // The snapshot is the state the run starts from: the run may change it before the stream
    // below exists, and that change is a delta the client must see.
    let snapshot = input.state.clone().unwrap_or_else(|| json!({}));
    let entry = live::start(&state, &who, run).await?;
    state.run_states.keep(&entry.id, &run_state);
    let ag = AgUiStream::new(&input.thread_id, &input.run_id, &entry.id, run_state)
        .with_snapshot(snapshot);
    Ok(stream(entry, ag, None))
}

/// A `resume`: each interrupt decided on the actor's own run, then the rest of that run.
async fn resume(
    state: &Arc<AppState>,
    who: &Principal,
    input: input::AgUiInput,
) -> Result<Response, ApiError> {
    // The run's state is read before any decision: once decided the run goes on, and may end
    // (dropping its state) before this request streams it.
    let kept_states: Vec<(&str, Arc<Mutex<serde_json::Value>>)> = input
        .resume
        .iter()
        .filter_map(|(interrupt, _)| {
            let (run, _) = interrupt.split_once('/')?;
            Some((run, state.run_states.get(run)?))
        })
        .collect();
    let mut run = None;
    for (i, (interrupt, decision)) in input.resume.iter().enumerate() {
        let not_found = || {
            ApiError::not_found(
                "interrupt_not_found",
                format!(
                    "resume[{i}]: no interrupt \"{interrupt}\" is waiting on this server for you"
                ),
            )
        };
        run = Some(live::decide(
            state,
            who,
            interrupt,
            decision.clone(),
            not_found,
        )?);
    }
    let Some(decided) = run else {
        return Err(ApiError::bad_request("resume", "resume is empty"));
    };
    let entry = decided.entry;
    let run_state = kept_states
        .into_iter()
        .find(|(run, _)| *run == entry.id)
        .map(|(_, kept)| kept)
        .unwrap_or_else(|| Arc::new(Mutex::new(json!({}))));
    // The call that asked was shown with its interrupt.
    let ag = AgUiStream::new(&input.thread_id, &input.run_id, &entry.id, run_state)
        .with_announced(decided.call);
    Ok(stream(entry, ag, Some(decided.approval)))
}

/// The run's events as AG-UI SSE (see [`crate::doors::live`]).
fn stream(entry: Arc<RunEntry>, mut ag: AgUiStream, after: Option<String>) -> Response {
    let first = ag.start();
    let all = futures_util::stream::iter(first)
        .chain(crate::doors::live::events(entry, ag, after))
        .map(|v| Ok::<_, std::convert::Infallible>(SseEvent::default().data(v.to_string())));
    Sse::new(all)
        .keep_alive(KeepAlive::default())
        .into_response()
}
