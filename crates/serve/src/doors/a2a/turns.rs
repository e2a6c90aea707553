//! A task's turns: each message it was sent, in order, becomes a kiln run in the task's context
//! (its session), through `launch` and every wall a door keeps. A run asking a person's
//! approval puts the task in `input-required` (the question as the agent's message), as a
//! tool's form does (`forms`); the answer
//! streams to the task's watchers as artifact chunks, each tool call shows as a status update,
//! and the run's whole answer becomes an artifact (its text, and its typed `.output` as data); the task completes
//! when its last queued message was answered, fails with its run, and a cancel ends it.

use super::caller::uuid;
use crate::launch::{RunRequest, launch};
use crate::state::AppState;
use crate::table::RunEntry;
use crate::table::tasks::A2aTask;
use crate::walls::auth::Principal;
use futures_util::StreamExt;
use kiln_a2a::{Artifact, Message, Part, TaskState};
use kiln_agent::{ApprovalAsked, Event, RunError, RunReport};
use serde_json::{Value, json};
use std::sync::Arc;

/// Runs `task`'s queued messages in their own tokio task (started once, when the task is
/// created).
pub(crate) fn start(state: Arc<AppState>, who: Principal, task: Arc<A2aTask>) {
    tokio::spawn(async move { drive(state, who, task).await });
}

async fn drive(state: Arc<AppState>, who: Principal, task: Arc<A2aTask>) {
    let mut last: Option<Message> = None;
    while let Some(message) = task.next_or_complete(last.take()) {
        task.set_state(TaskState::Working, None);
        let req = RunRequest {
            agent: task.agent.clone(),
            prompt: prompt_of(&message),
            // Checked when the message came.
            attachments: super::params::attachments(&message, "").unwrap_or_default(),
            session: Some(task.context_id.clone()),
            stream: true,
            caps_param: "params.metadata.caps",
            person: Some(Arc::new(super::forms::TaskPerson(task.clone()))),
            ..RunRequest::default()
        };
        let launched = tokio::select! {
            launched = launch(&state, &who, req) => launched,
            () = task.cancel.cancelled() => return,
        };
        let entry = match launched {
            Ok(entry) => entry,
            Err(e) => {
                let why = Message::agent_text(uuid(), e.message);
                task.set_state(TaskState::Failed, Some(why));
                return;
            }
        };
        task.set_run(Some(entry.clone()));
        let answered = follow(&task, &entry).await;
        task.set_run(None);
        match answered {
            Some(answer) => last = Some(answer),
            None => return,
        }
    }
}

/// The text a run gets for a message: its text parts, its data parts as JSON, and a file URL
/// of a type the model does not take as an attachment (the others are attachments).
pub(crate) fn prompt_of(message: &Message) -> String {
    let texts: Vec<String> = message
        .parts
        .iter()
        .filter_map(|p| match (&p.text, &p.data, &p.url) {
            (Some(t), _, _) => Some(t.clone()),
            (_, Some(d), _) => Some(d.to_string()),
            (_, _, Some(u)) if kiln_providers::Attachment::from_url(u).is_none() => {
                Some(format!("[file: {u}]"))
            }
            _ => None,
        })
        .collect();
    texts.join("\n\n")
}

/// Follows one run to its end; its answer, or `None` when the task ended with it.
async fn follow(task: &A2aTask, entry: &Arc<RunEntry>) -> Option<Message> {
    let mut events = std::pin::pin!(entry.events());
    let mut streamed = false;
    while let Some(ev) = events.next().await {
        match &*ev {
            Event::Text(text) if !text.is_empty() => {
                task.stream_text(&entry.id, text, !streamed);
                streamed = true;
            }
            Event::ToolStarted { name, args, .. } => {
                // The watchers see each call as it starts (the run log keeps its outcome); a
                // call waiting for a person's approval or form leaves the task asking.
                let mut m = Message::agent_text(uuid(), format!("Calling {name}"));
                m.parts
                    .push(Part::data(json!({"tool": name, "args": args})));
                task.working_on(m);
            }
            Event::ApprovalRequested(asked) => {
                let ApprovalAsked {
                    id,
                    capability,
                    question,
                    tool,
                    args,
                    ..
                } = &**asked;
                task.set_asking(Some(id.clone()));
                let mut m = Message::agent_text(uuid(), question.clone());
                m.parts.push(Part::data(json!({
                    "approval": id, "capability": capability, "tool": tool, "args": args,
                    "answer": "reply yes or no, or send a data part {\"approved\": true|false, \"reason\": \"...\"}",
                })));
                task.record(m.clone());
                task.set_state(TaskState::InputRequired, Some(m));
            }
            Event::ModelRequest { .. } | Event::ToolNote { .. }
                if task.asking().is_some() && entry.approvals.waiting().is_empty() =>
            {
                task.set_asking(None);
                task.set_state(TaskState::Working, None);
            }
            Event::ToolFinished(record) => {
                if let Some(files) = file_artifact(&entry.id, record) {
                    task.add_artifact(files);
                }
                if task.asking().is_some() && entry.approvals.waiting().is_empty() {
                    task.set_asking(None);
                    task.set_state(TaskState::Working, None);
                }
            }
            Event::Finished(result) => return finished(task, result),
            _ => {}
        }
    }
    None
}

fn finished(task: &A2aTask, result: &Result<RunReport, RunError>) -> Option<Message> {
    task.set_asking(None);
    match result {
        Ok(report) if report.error.is_none() => {
            let mut parts = vec![Part::text(report.answer.clone())];
            if let Some(output) = &report.output {
                parts.push(Part::data(output.clone()));
            }
            task.add_artifact(Artifact {
                artifact_id: report.run_id.clone(),
                name: Some("answer".into()),
                description: None,
                parts: parts.clone(),
                metadata: Some(run_meta(&report.run_id)),
            });
            let mut answer = Message::agent_text(uuid(), report.answer.clone());
            answer.parts = parts;
            task.record(answer.clone());
            Some(answer)
        }
        Ok(report) => {
            let why = kiln_core::error::public::scrub(report.error.as_deref().unwrap_or_default());
            task.set_state(TaskState::Failed, Some(Message::agent_text(uuid(), why)));
            None
        }
        Err(e) if matches!(e.kind, kiln_agent::RunErrorKind::Cancelled) => {
            task.set_state(TaskState::Canceled, None);
            None
        }
        Err(e) => {
            let why = kiln_core::error::public::scrub(&e.to_string());
            task.set_state(TaskState::Failed, Some(Message::agent_text(uuid(), why)));
            None
        }
    }
}

/// The files a tool call returned (its `$content` images, audio and resources) as an
/// artifact of their own: bytes as `raw` parts, text resources as text, each with its media
/// type and, for a resource, its name (the last part of its URI).
fn file_artifact(run: &str, record: &kiln_agent::ToolCallRecord) -> Option<Artifact> {
    use kiln_core::model::content::{Content, from_result};
    let kiln_agent::CallOutcome::Ok { result, .. } = &record.outcome else {
        return None;
    };
    let blocks = from_result(result)?.ok()?;
    let parts: Vec<Part> = blocks
        .into_iter()
        .filter_map(|block| match block {
            Content::Image { data, mime_type } | Content::Audio { data, mime_type } => Some(Part {
                raw: Some(data),
                media_type: Some(mime_type),
                ..Part::default()
            }),
            Content::Resource { resource: r } => Some(Part {
                filename: r
                    .uri
                    .rsplit('/')
                    .next()
                    .filter(|n| !n.is_empty())
                    .map(str::to_string),
                media_type: r.mime_type,
                raw: r.blob,
                text: r.text,
                ..Part::default()
            }),
            _ => None,
        })
        .collect();
    (!parts.is_empty()).then(|| Artifact {
        artifact_id: format!("{run}-{}", record.id),
        name: Some(format!("files from {}", record.name)),
        description: None,
        parts,
        metadata: Some(run_meta(run)),
    })
}

fn run_meta(run: &str) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("kilnRun".into(), json!(run));
    m
}
