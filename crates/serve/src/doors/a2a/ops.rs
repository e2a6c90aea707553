//! The A2A operations, the same for both bindings: each takes its params as JSON (the
//! JSON-RPC `params`, or what the HTTP+JSON binding read from its path, query and body) and
//! answers a result or a stream of events, or an [`A2aError`] the binding renders.

use super::caller::uuid;
use super::caller::{Caller, Reply, to_json};
use super::params::{self, normalize, object};
use super::push;
use super::turns;
use crate::table::tasks::{A2aTask, PushTarget};
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use kiln_a2a::error::ErrorKind;
use kiln_a2a::{A2aError, Message, PushConfig, StreamResponse, TaskState};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// The operations, by their JSON-RPC method names: here, or through Restate on a fleet's
/// front door (`front`).
pub(crate) async fn call(c: &Caller<'_>, method: &str, params: &Value) -> Result<Reply, A2aError> {
    let params = normalize(params);
    if let Some(front) = &c.state.front
        && let Some(reply) = super::front::call(c, front, method, &params).await
    {
        return reply;
    }
    let json = |v: Value| Ok(Reply::Json(v));
    match method {
        "SendMessage" => send(c, &params, false).await,
        "SendStreamingMessage" => send(c, &params, true).await,
        "GetTask" => json(get_task(c, &params)?),
        "ListTasks" => json(super::listing::list(c, &params)?),
        "CancelTask" => {
            let task = c.task(&params::required(
                object(&params, "params")?,
                "id",
                "params",
            )?)?;
            task.cancel()?;
            json(to_json(&task.snapshot(None, true)))
        }
        "SubscribeToTask" => subscribe(c, &params),
        "CreateTaskPushNotificationConfig" => json(push_create(c, &params)?),
        "GetTaskPushNotificationConfig" => json(push_get(c, &params)?),
        "ListTaskPushNotificationConfigs" => json(push_list(c, &params)?),
        "DeleteTaskPushNotificationConfig" => json(push_delete(c, &params)?),
        "GetExtendedAgentCard" => json(extended_card(c)?),
        other => Err(A2aError::new(
            ErrorKind::MethodNotFound,
            format!("Method not found: {other}"),
        )),
    }
}

async fn send(c: &Caller<'_>, params: &Value, streaming: bool) -> Result<Reply, A2aError> {
    let map = object(params, "params")?;
    let message = map
        .get("message")
        .ok_or_else(|| A2aError::invalid_params("params.message", "params.message is required"))?;
    let message = params::message(message, "params.message")?;
    params::attachments(&message, "params.message")?;
    let opts = params::send_options(map)?;
    let push_target = match &opts.push {
        Some(p) => Some(checked_push(
            c,
            p,
            "params.configuration.taskPushNotificationConfig",
        )?),
        None => None,
    };
    let (task, created) = match &message.task_id {
        Some(id) => (c.task(id)?, false),
        None => (new_task(c, &message)?, true),
    };
    if let (Some(p), Some(t)) = (opts.push, push_target) {
        add_push(c, &task, p, t)?;
        if created {
            // The client's webhook hears of the task before the client does.
            let first = StreamResponse::Task(task.snapshot(None, false));
            push::deliver(c.state, &task, &first).await;
        }
    }
    let events = task.subscribe();
    let mut changes = task.changes();
    match created {
        true => {
            task.enqueue(message)?;
            turns::start(c.state.clone(), c.who.clone(), task.clone());
        }
        false => continue_task(c, &task, message)?,
    }
    if streaming {
        return Ok(Reply::Stream(watch(task, events, opts.history_length)));
    }
    if !opts.return_immediately {
        let wait = c.state.options.a2a.wait;
        let ended = changes.wait_for(|_| {
            let s = task.state();
            s.is_terminal() || s.is_interrupted()
        });
        let _ = tokio::time::timeout(wait, ended).await;
    }
    Ok(Reply::Json(
        json!({"task": task.snapshot(opts.history_length, true)}),
    ))
}

/// A new task in the message's context (or a new one), owned by the caller.
fn new_task(c: &Caller<'_>, message: &Message) -> Result<Arc<A2aTask>, A2aError> {
    let context = message.context_id.clone().unwrap_or_else(uuid);
    crate::state::check_session_name(&context)
        .map_err(|e| A2aError::invalid_params("params.message.contextId", e.message))?;
    let task = Arc::new(A2aTask::new(
        uuid(),
        context,
        c.agent.to_string(),
        c.who.actor.clone(),
    ));
    c.state.a2a.insert(task.clone());
    tracing::info!(task = %task.id, context = %task.context_id, agent = %c.agent, actor = ?c.who.actor, "A2A task created");
    Ok(task)
}

/// A message on an existing task: the answer to its question (`input-required`), or the next
/// turn, queued behind the one in progress.
fn continue_task(c: &Caller<'_>, task: &A2aTask, message: Message) -> Result<(), A2aError> {
    if let Some(ctx) = &message.context_id
        && *ctx != task.context_id
    {
        return Err(A2aError::invalid_params(
            "params.message.contextId",
            format!(
                "task {} belongs to context {}, not {ctx}",
                task.id, task.context_id
            ),
        ));
    }
    if let Some(schema) = task.form_schema() {
        let answer = super::forms::answer(&message, &schema)?;
        if !task.answer_form(answer) {
            return Err(A2aError::new(
                ErrorKind::UnsupportedOperation,
                "the form's tool stopped waiting for its answer",
            ));
        }
        tracing::info!(task = %task.id, actor = ?c.who.actor, "form answered (A2A)");
        task.record(message);
        task.set_state(TaskState::Working, None);
        return Ok(());
    }
    let asking = task
        .asking()
        .filter(|_| task.state() == TaskState::InputRequired);
    let (Some(approval), Some(run)) = (asking, task.run()) else {
        return task.enqueue(message);
    };
    let decision = params::decision(&message)?;
    run.approvals
        .decide(&approval, decision)
        .map_err(|e| A2aError::new(ErrorKind::UnsupportedOperation, e.message))?;
    tracing::info!(task = %task.id, run_id = %run.id, approval = %approval, actor = ?c.who.actor, "approval decided (A2A)");
    task.record(message);
    task.set_asking(None);
    task.set_state(TaskState::Working, None);
    Ok(())
}

/// The task's events from now on, after its snapshot, until it ends or waits for input.
fn watch(
    task: Arc<A2aTask>,
    events: tokio::sync::broadcast::Receiver<StreamResponse>,
    history: Option<usize>,
) -> BoxStream<'static, StreamResponse> {
    let first = task.snapshot(history, true);
    let over = |s: TaskState| s.is_terminal() || s.is_interrupted();
    let done = over(first.status.state) && task.run().is_none();
    let rest = futures_util::stream::unfold((events, done), move |(mut rx, done)| async move {
        if done {
            return None;
        }
        loop {
            match rx.recv().await {
                Ok(ev) => {
                    let end = ev.state().is_some_and(over);
                    return Some((ev, (rx, end)));
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(_) => return None,
            }
        }
    });
    futures_util::stream::once(async move { StreamResponse::Task(first) })
        .chain(rest)
        .boxed()
}

fn get_task(c: &Caller<'_>, params: &Value) -> Result<Value, A2aError> {
    let map = object(params, "params")?;
    let task = c.task(&params::required(map, "id", "params")?)?;
    let history = params::count(map, "historyLength", "params")?;
    Ok(to_json(&task.snapshot(history, true)))
}

fn subscribe(c: &Caller<'_>, params: &Value) -> Result<Reply, A2aError> {
    let task = c.task(&params::required(
        object(params, "params")?,
        "id",
        "params",
    )?)?;
    if task.state().is_terminal() {
        return Err(A2aError::new(
            ErrorKind::UnsupportedOperation,
            format!(
                "This operation is not supported: task {} is {}",
                task.id,
                task.state().name()
            ),
        ));
    }
    let events = task.subscribe();
    Ok(Reply::Stream(watch(task, events, None)))
}

fn push_supported(c: &Caller<'_>) -> Result<(), A2aError> {
    match c.state.options.a2a.push.is_empty() {
        true => Err(A2aError::new(
            ErrorKind::PushNotificationNotSupported,
            "Push Notification is not supported: this server was started without --a2a-push",
        )),
        false => Ok(()),
    }
}

fn checked_push(c: &Caller<'_>, config: &PushConfig, path: &str) -> Result<PushTarget, A2aError> {
    push_supported(c)?;
    push::check(c.state, config, path)
}

fn add_push(
    c: &Caller<'_>,
    task: &Arc<A2aTask>,
    mut config: PushConfig,
    target: PushTarget,
) -> Result<PushConfig, A2aError> {
    config.id = Some(config.id.clone().unwrap_or_else(uuid));
    config.task_id = Some(task.id.clone());
    task.add_push(config.clone(), target)?;
    if !task.forwarding.swap(true, Ordering::SeqCst) {
        push::forward(c.state.clone(), task.clone());
    }
    Ok(config)
}

fn push_create(c: &Caller<'_>, params: &Value) -> Result<Value, A2aError> {
    push_supported(c)?;
    let map = object(params, "params")?;
    // The 1.0 request is the config itself; an earlier draft nested it.
    let body = map
        .get("pushNotificationConfig")
        .or_else(|| map.get("config"))
        .unwrap_or(params);
    let config = params::push_config(body, "params")?;
    let task_id = params::required(map, "taskId", "params")?;
    let task = c.task(&task_id)?;
    let target = push::check(c.state, &config, "params")?;
    Ok(to_json(&add_push(c, &task, config, target)?))
}

fn push_of(c: &Caller<'_>, params: &Value) -> Result<(Arc<A2aTask>, Map<String, Value>), A2aError> {
    push_supported(c)?;
    let map = object(params, "params")?.clone();
    let task = c.task(&params::required(&map, "taskId", "params")?)?;
    Ok((task, map))
}

fn config_not_found(id: &str) -> A2aError {
    A2aError::new(
        ErrorKind::TaskNotFound,
        format!("push notification config \"{id}\" not found on this task"),
    )
}

fn push_get(c: &Caller<'_>, params: &Value) -> Result<Value, A2aError> {
    let (task, map) = push_of(c, params)?;
    let id = params::required(&map, "id", "params")?;
    task.push_configs()
        .into_iter()
        .find(|(p, _)| p.id.as_deref() == Some(&id))
        .map(|(p, _)| to_json(&p))
        .ok_or_else(|| config_not_found(&id))
}

fn push_list(c: &Caller<'_>, params: &Value) -> Result<Value, A2aError> {
    let (task, _) = push_of(c, params)?;
    let configs: Vec<Value> = task
        .push_configs()
        .iter()
        .map(|(p, _)| to_json(p))
        .collect();
    Ok(json!({"configs": configs}))
}

fn push_delete(c: &Caller<'_>, params: &Value) -> Result<Value, A2aError> {
    let (task, map) = push_of(c, params)?;
    let id = params::required(&map, "id", "params")?;
    match task.remove_push(&id) {
        true => Ok(Value::Null),
        false => Err(config_not_found(&id)),
    }
}

fn extended_card(c: &Caller<'_>) -> Result<Value, A2aError> {
    if c.state.tokens.is_empty() {
        return Err(A2aError::new(
            ErrorKind::UnsupportedOperation,
            "This operation is not supported: this server takes no tokens, so its public card is the whole card",
        ));
    }
    let spec = c
        .state
        .host
        .agent(c.agent)
        .map_err(|_| A2aError::new(ErrorKind::Internal, "the agent was unloaded"))?;
    Ok(to_json(&super::card::card(
        c.state,
        &spec,
        &c.origin,
        Some(c.who),
    )))
}
