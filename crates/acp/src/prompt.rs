//! `session/prompt`: one run of the agent in the session (its history and `ctx.state` from the
//! database, the run logged under the session), its events streamed as `session/update`s,
//! answered with the turn's `stopReason` once the run ended.

use crate::content;
use crate::error::{RpcError, code};
use crate::lent::Lent;
use crate::params;
use crate::permission::Permission;
use crate::session::Session;
use crate::state::Door;
use crate::updates::{self, Calls};
use futures_util::StreamExt;
use kiln_agent::{Event, RunErrorKind, RunOptions, RunReport};
use kiln_core::context::call_events::CallEvents;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Clears the session's running prompt however the turn ends.
struct Running(Arc<Session>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.finish();
    }
}

/// Handles `session/prompt`.
pub async fn prompt(door: &Arc<Door>, params: Option<&Value>) -> Result<Value, RpcError> {
    let p = params::object(params)?;
    let id = params::string(p, "", "sessionId")?;
    let blocks = params::array(p, "", "prompt", false)?;
    let prompt = content::read(blocks)?;
    let session = door
        .sessions
        .get(id)
        .ok_or_else(|| RpcError::no_session("sessionId", id))?;
    let cancel = session.start().ok_or_else(|| {
        RpcError::new(
            code::INVALID_REQUEST,
            format!("session \"{id}\" is already answering a prompt (send session/cancel first)"),
        )
    })?;
    let _running = Running(session.clone());
    let opts = run_options(door, &session, cancel.clone(), prompt.attachments)?;
    let calls = Arc::new(Calls::for_tools(&door.host.tools()));
    let lent = Lent {
        outbox: door.outbox.clone(),
        session: id.to_string(),
        caps: door.client_caps(),
        cancel: cancel.clone(),
    };
    let opts = RunOptions {
        tool_events: Some(Arc::new(CallEvents::new(Arc::new(lent)))),
        approver: Some(Arc::new(Permission {
            outbox: door.outbox.clone(),
            session: session.clone(),
            calls: calls.clone(),
            cancel: cancel.clone(),
            asks: Default::default(),
        })),
        ..opts
    };
    let mut stream = door
        .host
        .run_stream(&door.options.agent, &prompt.text, opts);
    let mut texted = false;
    let mut plan = updates::Plan::default();
    while let Some(ev) = stream.next().await {
        if let Some(p) = plan.on(&ev) {
            door.update(id, p);
        }
        if let Event::Finished(result) = &ev {
            let result = (**result).as_ref().map_err(|e| &e.kind);
            return finish(door, id, &cancel, result, texted);
        }
        for update in updates::on_event(&ev, &calls) {
            texted |= update["sessionUpdate"] == "agent_message_chunk";
            door.update(id, update);
        }
    }
    Err(RpcError::new(
        code::INTERNAL_ERROR,
        "the run ended without a report",
    ))
}

/// The run's options: the door's, with the session's history and state, this prompt's
/// cancellation and files.
fn run_options(
    door: &Door,
    session: &Session,
    cancel: CancellationToken,
    attachments: Vec<kiln_core::model::Attachment>,
) -> Result<RunOptions, RpcError> {
    let agent = &door.options.agent;
    let resumed = door
        .db
        .resume_session(&session.id, &session.id, agent)
        .map_err(|e| RpcError::new(code::INTERNAL_ERROR, e.to_string()))?;
    Ok(RunOptions {
        stream: true,
        cancel,
        history: resumed.messages,
        state: resumed.state,
        attachments,
        session: Some(session.id.clone()),
        observer: None,
        recorder: None,
        ..door.options.run.clone()
    })
}

/// The turn's answer: its `stopReason` (`cancelled` once the client cancelled, whatever the
/// run did after), or the run's error.
fn finish(
    door: &Door,
    id: &str,
    cancel: &CancellationToken,
    result: Result<&RunReport, &RunErrorKind>,
    texted: bool,
) -> Result<Value, RpcError> {
    if cancel.is_cancelled() {
        return Ok(json!({"stopReason": "cancelled"}));
    }
    let reason = match result {
        Ok(report) => {
            // A reply that did not stream (a provider without streaming) arrives whole.
            if !texted && !report.answer.is_empty() {
                door.update(id, updates::chunk("agent_message_chunk", &report.answer));
            }
            "end_turn"
        }
        Err(RunErrorKind::Cancelled) => "cancelled",
        Err(RunErrorKind::ToolLoop(_) | RunErrorKind::MaxSteps(_)) => "max_turn_requests",
        Err(kind) => {
            return Err(RpcError {
                code: code::INTERNAL_ERROR,
                message: kind.to_string(),
                data: Some(json!({"sessionId": id})),
            });
        }
    };
    Ok(json!({"stopReason": reason}))
}
