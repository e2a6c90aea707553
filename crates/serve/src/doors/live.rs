//! A run's events for a front-end door (AG-UI, the AI SDK's UI message stream): from the run's
//! start, or from just after a person was asked approval `after` (a resumed front-end run),
//! each turned into the door's events by its [`Translate`], until the door's run has ended. A
//! client that goes away before then cancels the run; once the door's run has ended (finished,
//! or stopped to ask a person), the kiln run goes on without it.

use crate::doors::chat::CancelOnDrop;
use crate::error::ApiError;
use crate::launch::{RunRequest, launch};
use crate::state::AppState;
use crate::table::RunEntry;
use crate::table::approvals::Decision;
use crate::walls::auth::Principal;
use futures_util::{Stream, StreamExt};
use kiln_agent::Event;
use kiln_agent::connect::ProviderOverrides;
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// A run a front-end door starts: the front end keeps the conversation and sends it whole.
pub(crate) struct FrontRun {
    /// The agent.
    pub agent: String,
    /// The last user message (empty when the conversation ends with tool results).
    pub prompt: String,
    /// The conversation before it.
    pub history: Vec<kiln_providers::Message>,
    /// Lines for the system prompt (the front end's context and system messages).
    pub system: Vec<String>,
    /// The session (the thread, the chat), and the field of the request that names it.
    pub session: (String, &'static str),
    /// Tools the front end runs.
    pub client_tools: Vec<kiln_providers::ToolDef>,
    /// `ctx.state`, shared so the door reads it as the run changes it.
    pub state: Option<Arc<Mutex<Value>>>,
    /// Files on the prompt.
    pub attachments: Vec<kiln_providers::Attachment>,
}

/// Refuses a front-end door on a server that sends runs to Restate (`--restate-ingress`).
pub(crate) fn here_only(state: &AppState, door: &str) -> Result<(), ApiError> {
    match state.front {
        Some(_) => Err(ApiError::bad_request(
            "",
            format!(
                "the {door} door runs agents on this server: it is not served with --restate-ingress yet"
            ),
        )),
        None => Ok(()),
    }
}

/// Starts `run` through the walls every door keeps (the token, its ceiling, the session's
/// turn, the run log).
pub(crate) async fn start(
    state: &Arc<AppState>,
    who: &Principal,
    run: FrontRun,
) -> Result<Arc<RunEntry>, ApiError> {
    let system = run.system.join("\n\n");
    let (session, field) = run.session;
    let req = RunRequest {
        agent: run.agent,
        prompt: run.prompt,
        history: run.history,
        overrides: ProviderOverrides {
            extra_system: (!system.is_empty()).then_some(system),
            ..ProviderOverrides::default()
        },
        caps_param: "caps",
        session: Some(session),
        keep_history: true,
        stream: true,
        client_tools: run.client_tools,
        state: run.state,
        attachments: run.attachments,
        ..RunRequest::default()
    };
    launch(state, who, req).await.map_err(|e| {
        e.renamed(|p| {
            if p == "session" {
                field.into()
            } else {
                p.into()
            }
        })
    })
}

/// An approval a front end decided: its run, its id in the run, and the call that asked (shown
/// to the front end with the question, so not shown again when the run goes on).
pub(crate) struct Decided {
    /// The run that waited.
    pub entry: Arc<RunEntry>,
    /// The approval's id in the run.
    pub approval: String,
    /// The model's id of the call that asked, when known.
    pub call: Option<String>,
}

/// Decides approval `asked` (`RUN/ID`, as the front-end doors name it) on the caller's own
/// run. Another actor's, or one not waiting here, is `not_found`.
pub(crate) fn decide(
    state: &AppState,
    who: &Principal,
    asked: &str,
    decision: Decision,
    not_found: impl Fn() -> ApiError,
) -> Result<Decided, ApiError> {
    let (run, id) = asked.split_once('/').ok_or_else(&not_found)?;
    let entry = state.runs.get(run, who).ok_or_else(&not_found)?;
    entry.approvals.decide(id, decision)?;
    tracing::info!(run_id = %run, approval = %id, actor = ?who.actor, "approval decided (front-end door)");
    let call = entry
        .approvals
        .history()
        .into_iter()
        .find(|(w, _)| w.id == id)
        .and_then(|(w, _)| w.call_id);
    Ok(Decided {
        entry,
        approval: id.to_string(),
        call,
    })
}

/// Turns a run's events into a door's.
pub(crate) trait Translate: Send + 'static {
    /// The door's events for one of the run's.
    fn on(&mut self, ev: &Event) -> Vec<Value>;
    /// The door's run has ended: nothing more is read.
    fn ended(&self) -> bool;
}

/// The door's events of `entry`'s run, translated by `door` (see the module).
pub(crate) fn events<T: Translate>(
    entry: Arc<RunEntry>,
    door: T,
    after: Option<String>,
) -> impl Stream<Item = Value> + Send + use<T> {
    let guard = Arc::new(Mutex::new(CancelOnDrop(Some(entry.cancel.clone()))));
    let mut skipping = after;
    let events = entry
        .events()
        .filter(move |ev| {
            let keep = match (&skipping, &**ev) {
                (None, _) => true,
                (Some(id), Event::ApprovalRequested(asked)) if asked.id == *id => {
                    skipping = None;
                    false
                }
                (Some(_), _) => false,
            };
            std::future::ready(keep)
        })
        .boxed();
    // Ends right after the door's last event: a run waiting for a person sends nothing more.
    futures_util::stream::unfold(
        (events, door, guard),
        |(mut events, mut door, guard)| async move {
            if door.ended() {
                return None;
            }
            let ev = events.next().await?;
            let out = door.on(&ev);
            if door.ended()
                && let Ok(mut g) = guard.lock()
            {
                // The door's run ended: the client going away now cancels nothing.
                g.0 = None;
            }
            Some((futures_util::stream::iter(out), (events, door, guard)))
        },
    )
    .flatten()
}
