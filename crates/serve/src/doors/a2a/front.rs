//! The A2A door of a fleet (`kiln serve --restate-ingress URL`): a task is a `KilnSession`
//! turn submitted to Restate's ingress (the context's session, keyed under the token's actor;
//! the message's id is the idempotency key, so a resent message is the same task), its id the
//! turn's invocation id, and any worker answers for it from the invocation alone: working, its
//! approval (`input-required`, decided through whichever worker the answer reaches), or its
//! end (the report's answer as the artifact). A worker that dies mid-task leaves it to another,
//! as `/v1/runs` does. What lives in one process is not offered here: a message on a working
//! task (send it as a new task in the context), `ListTasks` and push notifications.

use super::caller::uuid;
use super::caller::{Caller, Reply, to_json};
use super::params::{self, object};
use crate::doors::runs::front::{open_approvals, restate_error, scoped};
use crate::launch::{RunRequest, find_agent, grants_for};
use crate::table::approvals::Decision;
use futures_util::StreamExt;
use kiln_a2a::error::ErrorKind;
use kiln_a2a::{
    A2aError, Artifact, Message, Part, StatusUpdate, StreamResponse, Task, TaskState, TaskStatus,
};
use kiln_core::capability::GrantMode;
use kiln_restate::{Invocation, Outcome, RestateClient, Target};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// How often a waiting send or a stream looks at the task again.
const POLL: Duration = Duration::from_millis(250);

fn unsupported(what: &str) -> A2aError {
    A2aError::new(
        ErrorKind::UnsupportedOperation,
        format!(
            "This operation is not supported: {what} (this server is a front door of a fleet, --restate-ingress)"
        ),
    )
}

fn upstream(e: kiln_restate::DurableError) -> A2aError {
    A2aError::new(ErrorKind::Internal, restate_error(e).message)
}

/// The operations of a fleet's door, by their JSON-RPC method names; `None` for those the
/// door answers the same here (the extended card, an unknown method).
pub(crate) async fn call(
    c: &Caller<'_>,
    front: &RestateClient,
    method: &str,
    params: &Value,
) -> Option<Result<Reply, A2aError>> {
    Some(match method {
        "SendMessage"
        | "SendStreamingMessage"
        | "GetTask"
        | "CancelTask"
        | "SubscribeToTask"
        | "ListTasks" => task_call(c, front, method, params).await,
        m if m.contains("PushNotificationConfig") => {
            Err(unsupported("push notifications need the task's own server"))
        }
        _ => return None,
    })
}

async fn task_call(
    c: &Caller<'_>,
    front: &RestateClient,
    method: &str,
    params: &Value,
) -> Result<Reply, A2aError> {
    let json = |v: Value| Ok(Reply::Json(v));
    let id = || params::required(object(params, "params")?, "id", "params");
    match method {
        "SendMessage" => send(c, front, params, false).await,
        "SendStreamingMessage" => send(c, front, params, true).await,
        "GetTask" => json(to_json(&render(c, front, &id()?).await?)),
        "CancelTask" => {
            let task = render(c, front, &id()?).await?;
            if task.status.state.is_terminal() {
                return Err(A2aError::new(
                    ErrorKind::TaskNotCancelable,
                    format!(
                        "Task cannot be canceled: it is {}",
                        task.status.state.name()
                    ),
                ));
            }
            front.cancel(&task.id).await.map_err(upstream)?;
            json(to_json(
                &settle(c, front, &task.id, Duration::from_secs(5), None).await?,
            ))
        }
        "SubscribeToTask" => {
            let task = render(c, front, &id()?).await?;
            if task.status.state.is_terminal() {
                return Err(unsupported(&format!("task {} has ended", task.id)));
            }
            Ok(Reply::Stream(watch(c, front, task, None)))
        }
        _ => Err(unsupported("tasks are listed by the server that ran them")),
    }
}

async fn send(
    c: &Caller<'_>,
    front: &RestateClient,
    params: &Value,
    streaming: bool,
) -> Result<Reply, A2aError> {
    let map = object(params, "params")?;
    let message = map
        .get("message")
        .ok_or_else(|| A2aError::invalid_params("params.message", "params.message is required"))?;
    let message = params::message(message, "params.message")?;
    let attachments = params::attachments(&message, "params.message")?;
    let opts = params::send_options(map)?;
    if opts.push.is_some() {
        return Err(unsupported("push notifications need the task's own server"));
    }
    let (task, decided) = match &message.task_id {
        Some(id) => answer(c, front, id, &message).await?,
        None => (submit(c, front, &message, attachments).await?, None),
    };
    if streaming {
        return Ok(Reply::Stream(watch(c, front, task, decided)));
    }
    let task = match opts.return_immediately {
        true => task,
        false => {
            let wait = c.state.options.a2a.wait;
            settle(c, front, &task.id, wait, decided.as_deref()).await?
        }
    };
    Ok(Reply::Json(json!({"task": to_json(&task)})))
}

/// A new task: the message as a turn of the context's session, submitted to Restate.
async fn submit(
    c: &Caller<'_>,
    front: &RestateClient,
    message: &Message,
    attachments: Vec<kiln_providers::Attachment>,
) -> Result<Task, A2aError> {
    let invalid = |e: crate::error::ApiError| A2aError::invalid_params("params.message", e.message);
    let context = message.context_id.clone().unwrap_or_else(uuid);
    crate::state::check_session_name(&context)
        .map_err(|e| A2aError::invalid_params("params.message.contextId", e.message))?;
    let agent = find_agent(c.state, c.agent).map_err(invalid)?;
    let req = RunRequest {
        agent: c.agent.to_string(),
        caps_param: "params.metadata.caps",
        ..RunRequest::default()
    };
    let grants = grants_for(c.state, c.who, &agent.grants, &req).map_err(invalid)?;
    let input = json!({
        "agent": c.agent,
        "prompt": super::turns::prompt_of(message),
        "actor": c.who.actor,
        "caps": grants.iter().map(|g| g.cap.to_string()).collect::<Vec<_>>(),
        "ask": grants.iter().filter(|g| g.mode == GrantMode::NeedsApproval)
            .map(|g| g.cap.to_string()).collect::<Vec<_>>(),
        "attachments": attachments,
    });
    let key = scoped(c.who, &context);
    let id = front
        .submit(Target::Session, &key, &message.message_id, &input)
        .await
        .map_err(upstream)?;
    tracing::info!(task = %id, context = %context, agent = %c.agent, actor = ?c.who.actor, "A2A task submitted to Restate");
    Ok(task(&id, context, TaskState::Submitted))
}

/// A message on task `id`: the answer to the approval it waits for (the task, and the
/// approval decided).
async fn answer(
    c: &Caller<'_>,
    front: &RestateClient,
    id: &str,
    message: &Message,
) -> Result<(Task, Option<String>), A2aError> {
    let (inv, context) = find(c, front, id).await?;
    if inv.completed() {
        return Err(unsupported(&format!(
            "task {id} has ended; send a new message in its context"
        )));
    }
    let waiting = open_approvals(front, &inv).await;
    let Some(approval) = waiting.first().and_then(|a| a["id"].as_str()) else {
        return Err(unsupported(&format!(
            "task {id} is working; send another message as a new task in context {context}"
        )));
    };
    let decision = match params::decision(message)? {
        Decision::Approve => json!({"decision": "approve"}),
        Decision::Deny(reason) => json!({"decision": "deny", "reason": reason}),
    };
    let answer = front
        .decide(id, approval, &decision)
        .await
        .map_err(upstream)?;
    if answer["taken"] != true {
        return Err(unsupported(&format!(
            "approval {approval} was decided already"
        )));
    }
    tracing::info!(task = %id, approval = %approval, actor = ?c.who.actor, "approval decided (A2A, fleet)");
    Ok((
        task(id, context, TaskState::Working),
        Some(approval.to_string()),
    ))
}

/// The invocation of task `id` and its context, if the caller may see it.
async fn find(
    c: &Caller<'_>,
    front: &RestateClient,
    id: &str,
) -> Result<(Invocation, String), A2aError> {
    let inv = front
        .lookup(id)
        .await
        .map_err(upstream)?
        .filter(|inv| inv.service == "KilnSession" && c.who.sees_key(&inv.key))
        .ok_or_else(|| A2aError::task_not_found(id))?;
    let context = match &c.who.actor {
        Some(_) => inv.key.split_once('/').map(|(_, rest)| rest.to_string()),
        None => Some(inv.key.clone()),
    }
    .ok_or_else(|| A2aError::task_not_found(id))?;
    Ok((inv, context))
}

/// Task `id` as Restate knows it now.
async fn render(c: &Caller<'_>, front: &RestateClient, id: &str) -> Result<Task, A2aError> {
    let (inv, context) = find(c, front, id).await?;
    let mut task = task(id, context, TaskState::Working);
    if !inv.completed() {
        if let Some(a) = open_approvals(front, &inv).await.first() {
            task.status = status(TaskState::InputRequired, Some(asking(a)));
        }
        return Ok(task);
    }
    match front.attach(id).await.map_err(upstream)? {
        Outcome::Output(report) => {
            let text = report["answer"].as_str().unwrap_or_default().to_string();
            let mut parts = vec![Part::text(text)];
            if !report["output"].is_null() {
                parts.push(Part::data(report["output"].clone()));
            }
            task.artifacts.push(Artifact {
                artifact_id: id.to_string(),
                name: Some("answer".into()),
                description: None,
                parts,
                metadata: None,
            });
            task.status = status(TaskState::Completed, None);
        }
        Outcome::Failed { code: 409, .. } => task.status = status(TaskState::Canceled, None),
        Outcome::Failed { message, .. } => {
            let why = kiln_core::error::public::scrub(&message);
            task.status = status(TaskState::Failed, Some(Message::agent_text(uuid(), why)));
        }
    }
    Ok(task)
}

/// The question of an approval a task waits for, as its status message.
fn asking(a: &Value) -> Message {
    let question = a["question"].as_str().unwrap_or("May the agent go on?");
    let mut m = Message::agent_text(uuid(), question.to_string());
    m.parts.push(Part::data(json!({
        "approval": a["id"], "capability": a["capability"], "tool": a.get("tool"),
        "args": a.get("args"),
        "answer": "reply yes or no, or send a data part {\"approved\": true|false, \"reason\": \"...\"}",
    })));
    m
}

/// Task `id` once it ends or asks, or as it is after `wait`. Restate may list an approval
/// for a moment after it was decided: asking `decided` again is not asking.
async fn settle(
    c: &Caller<'_>,
    front: &RestateClient,
    id: &str,
    wait: Duration,
    decided: Option<&str>,
) -> Result<Task, A2aError> {
    let until = Instant::now() + wait;
    loop {
        let task = render(c, front, id).await?;
        if settled(&task, decided) || Instant::now() >= until {
            return Ok(task);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Whether `task` ended or asks something other than the approval just `decided`.
fn settled(task: &Task, decided: Option<&str>) -> bool {
    let s = task.status.state;
    s.is_terminal() || (s.is_interrupted() && !asks_again(task, decided))
}

/// Whether `task` asks the approval just `decided` (Restate lists it a moment longer).
fn asks_again(task: &Task, decided: Option<&str>) -> bool {
    let asked = task.status.message.as_ref().and_then(|m| {
        m.parts
            .iter()
            .find_map(|p| p.data.as_ref().and_then(|d| d["approval"].as_str()))
    });
    decided.is_some() && asked == decided
}

/// The task, then each change of its status, until it ends or asks.
fn watch(
    c: &Caller<'_>,
    front: &RestateClient,
    first: Task,
    decided: Option<String>,
) -> futures_util::stream::BoxStream<'static, StreamResponse> {
    let caller = (
        c.state.clone(),
        c.who.clone(),
        c.agent.to_string(),
        c.origin.clone(),
    );
    let front = front.clone();
    let start = futures_util::stream::once(futures_util::future::ready(StreamResponse::Task(
        first.clone(),
    )));
    let rest = futures_util::stream::unfold(Some(first), move |last| {
        let (state, who, agent, origin) = caller.clone();
        let front = front.clone();
        let decided = decided.clone();
        async move {
            let last = last?;
            let s = last.status.state;
            if s.is_terminal() || s.is_interrupted() {
                return None;
            }
            let c = Caller {
                state: &state,
                who: &who,
                agent: &agent,
                origin,
            };
            loop {
                tokio::time::sleep(POLL).await;
                let now = match render(&c, &front, &last.id).await {
                    Ok(now) => now,
                    Err(e) => {
                        let why = Message::agent_text(uuid(), e.message);
                        let failed = Task {
                            status: status(TaskState::Failed, Some(why)),
                            ..last
                        };
                        return Some((update(&failed), None));
                    }
                };
                if now.status.state != s && !asks_again(&now, decided.as_deref()) {
                    let event = match now.status.state {
                        TaskState::Completed => StreamResponse::Task(now.clone()),
                        _ => update(&now),
                    };
                    return Some((event, Some(now)));
                }
            }
        }
    });
    start.chain(rest).boxed()
}

fn update(task: &Task) -> StreamResponse {
    StreamResponse::StatusUpdate(StatusUpdate {
        task_id: task.id.clone(),
        context_id: task.context_id.clone(),
        status: task.status.clone(),
        metadata: None,
    })
}

/// Task `id` of `context` in `state`, naming its run (the invocation).
fn task(id: &str, context: String, state: TaskState) -> Task {
    Task {
        id: id.to_string(),
        context_id: context,
        status: status(state, None),
        artifacts: Vec::new(),
        history: Vec::new(),
        metadata: Some(run_meta(id)),
    }
}

fn status(state: TaskState, message: Option<Message>) -> TaskStatus {
    TaskStatus {
        state,
        message,
        timestamp: Some(kiln_a2a::now_timestamp()),
    }
}

fn run_meta(run: &str) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("kilnRuns".into(), json!([run]));
    m
}
