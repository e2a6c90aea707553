//! A remote A2A agent as a tool: `a2a_agent("billing").url("https://…/a2a/billing")` in a
//! script, listed by an agent as `"a2a:billing"` and offered to its model as `a2a__billing`,
//! needing capability `a2a:billing`. A call sends the model's message to the remote agent
//! (A2A 1.0, JSON-RPC binding; its card read first, once), follows the task until it ends or
//! asks something, and answers the task's state, its answer (the artifacts' text and data)
//! and its question; the model continues a task by passing its `task_id`. An agent whose card
//! says it streams is followed through `SendStreamingMessage`, others by polling `GetTask`;
//! each change of the remote task's status is the call's progress, as every door shows a
//! tool's. A question the remote task asks (`input-required`) goes to the person behind the
//! caller's door first: a remote kiln agent's approval to its approver, any other question
//! (or a remote kiln tool's form, with its fields) as a form; where nobody can be asked, the
//! model reads it and answers with `task_id`. Every connection goes through the host's
//! resolver and is checked against the declared host (never a link-local or metadata
//! address), without redirects (`remote`).

mod oauth;
mod remote;

pub use crate::agent_spec::{A2A_PREFIX as PREFIX, A2aAgentSpec, named_a2a_agent as named};
use crate::native::NativeTool;
use kiln_core::context::CallContext;
use kiln_core::context::call_events::{Answer, CallEvents, ClientAsk, FormRequest};
use kiln_core::failure::ToolFailure;
use kiln_core::tool::Tool;
use remote::{Reach, Remote, failed};
use serde_json::{Value, json};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How long one call follows the remote task at most, when the run sets no deadline.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// The tool name the model sees for remote agent `name`.
pub fn tool_name(name: &str) -> String {
    format!("a2a__{name}")
}

/// The tool calling `spec`'s agent.
pub fn a2a_tool(spec: &A2aAgentSpec) -> Option<Arc<Tool>> {
    let remote = Arc::new(Remote {
        spec: spec.clone(),
        card: OnceLock::new(),
        kept: Default::default(),
    });
    let description = spec.description.clone().unwrap_or_else(|| {
        format!(
            "Ask the remote agent \"{}\" (A2A); pass task_id to answer its question or go on with its task",
            spec.name
        )
    });
    NativeTool::new(
        tool_name(&spec.name),
        move |args: Value, ctx: &CallContext| {
            let call = Call {
                remote: remote.clone(),
                resolver: ctx.run.services.egress.resolver.clone(),
                events: ctx.run.events.clone(),
                approver: ctx.approval.approver.clone(),
                call_id: ctx.who.call_id.clone(),
                deadline: ctx
                    .run
                    .deadline
                    .unwrap_or_else(|| Instant::now() + CALL_TIMEOUT),
            };
            async move { call.ask(&args).await }
        },
    )
    .description(description)
    .param(
        "message",
        "string",
        json!({"desc": "what to tell the agent"}),
    )
    .param(
        "task_id",
        "string",
        json!({"desc": "the task to go on with (from an earlier answer)", "optional": true}),
    )
    .requires(&format!("{PREFIX}{}", spec.name))
    .timeout(CALL_TIMEOUT)
    .located(spec.loc.clone())
    .into_tool()
    .ok()
    .map(Arc::new)
}

/// One call of the tool: the remote agent, and what the caller's context lends it.
struct Call {
    remote: Arc<Remote>,
    resolver: Arc<dyn kiln_egress::resolver::NameResolver>,
    /// Where the call's progress goes (its door shows it), and who a form is put to.
    events: Option<Arc<CallEvents>>,
    /// The person behind the caller's door, who answers a remote kiln agent's approval.
    approver: Option<Arc<dyn kiln_core::context::Approver>>,
    call_id: Option<String>,
    deadline: Instant,
}

/// A message to the remote agent: `parts`, on `task` when it goes on with one.
fn send_params(parts: Value, task: Option<&str>, streaming: bool) -> Value {
    let mut message = json!({"messageId": uuid(), "role": "ROLE_USER", "parts": parts});
    if let Some(t) = task {
        message["taskId"] = json!(t);
    }
    match streaming {
        true => json!({"message": message}),
        false => json!({"message": message, "configuration": {"returnImmediately": true}}),
    }
}

impl Call {
    /// The message sent, the task followed (streamed or polled, its status changes as
    /// progress, its questions put to the caller's person), its state and answer.
    async fn ask(&self, args: &Value) -> Result<Value, ToolFailure> {
        let name = &self.remote.spec.name;
        let token = match (&self.remote.spec.bearer_env, &self.remote.spec.oauth) {
            (Some(var), _) => Some(std::env::var(var).map_err(|_| {
                failed(format!(
                    "a2a agent \"{name}\": set {var} to its bearer token"
                ))
            })?),
            (None, Some(oauth)) => Some(self.remote.oauth_token(oauth, &self.resolver).await?),
            (None, None) => None,
        };
        let reach = Reach {
            resolver: &self.resolver,
            token: token.as_deref(),
        };
        let mut shown = Shown::default();
        let text = args["message"].as_str().unwrap_or_default();
        let parts = json!([{"text": text}]);
        let mut task = self
            .exchange(parts, args["task_id"].as_str(), &reach, &mut shown)
            .await?;
        loop {
            shown.show(self.events.as_deref(), &task);
            if Instant::now() >= self.deadline {
                return Ok(answer(&task));
            }
            let state = task["status"]["state"].as_str().unwrap_or_default();
            task = match state {
                "TASK_STATE_SUBMITTED" | "TASK_STATE_WORKING" => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    let got = self
                        .remote
                        .rpc("GetTask", json!({"id": task["id"]}), &reach);
                    got.await?
                }
                "TASK_STATE_INPUT_REQUIRED" => match self.reply(&task, args).await {
                    Some(parts) => {
                        let id = task["id"].as_str().map(str::to_string);
                        self.exchange(parts, id.as_deref(), &reach, &mut shown)
                            .await?
                    }
                    None => return Ok(answer(&task)),
                },
                _ => return Ok(answer(&task)),
            };
        }
    }

    /// Sends `parts` (on `task`) and follows the answer: streamed to its end or question
    /// where the agent streams, else the task as the send answered it.
    async fn exchange(
        &self,
        parts: Value,
        task: Option<&str>,
        reach: &Reach<'_>,
        shown: &mut Shown,
    ) -> Result<Value, ToolFailure> {
        let streaming = self.remote.card(reach).await?.streaming;
        let params = send_params(parts, task, streaming);
        let mut known = Value::Null;
        if !streaming {
            let sent = self.remote.rpc("SendMessage", params, reach).await?;
            fold(&mut known, sent);
            return Ok(known);
        }
        let events = self.events.as_deref();
        let each = |ev: Value| {
            fold(&mut known, ev);
            shown.show(events, &known);
            !settled(&known)
        };
        self.remote.stream(params, reach, each).await?;
        Ok(known)
    }

    /// The answer to the task's question from the person behind the caller's door: a remote
    /// kiln agent's approval decided by the approver, any other question (a remote kiln
    /// tool's form with its fields) as a form. `None`: nobody could answer it; the model
    /// reads the question.
    async fn reply(&self, task: &Value, args: &Value) -> Option<Value> {
        let parts = task["status"]["message"]["parts"].as_array()?;
        if parts.iter().any(|p| p["data"]["approval"].is_string()) {
            return self.decide(parts, args).map(|word| json!([{"text": word}]));
        }
        let events = self.events.clone()?;
        let said: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
        let remote_form = parts
            .iter()
            .find_map(|p| p["data"]["form"]["requestedSchema"].as_object())
            .map(|s| Value::Object(s.clone()));
        let schema = remote_form.clone().unwrap_or_else(|| {
            json!({"type": "object", "properties": {"reply": {"type": "string",
                "description": "your answer"}}, "required": ["reply"]})
        });
        let form = FormRequest {
            message: format!(
                "The agent \"{}\" asks: {}",
                self.remote.spec.name,
                said.join(" ")
            ),
            schema,
        };
        let wait = self.deadline.saturating_duration_since(Instant::now());
        let asked = tokio::task::spawn_blocking(move || {
            events.ask(vec![(None, ClientAsk::Form(form))], true, wait)
        });
        let answer = match asked.await.ok()?.ok()?.pop()? {
            Answer::Value(v) => v,
            Answer::Unsupported(_) => return None,
        };
        let action = answer["action"].as_str().unwrap_or_default();
        match (action, remote_form.is_some()) {
            ("accept", true) => Some(json!([{"data": answer["content"]}])),
            ("accept", false) => Some(json!([{"text": answer["content"]["reply"].as_str()?}])),
            (_, true) => Some(json!([{"data": {"action": action}}])),
            _ => None,
        }
    }

    /// A remote kiln agent's approval asked of the person behind the caller's door: "yes" or
    /// "no" to send back; `None` leaves the question to the model.
    fn decide(&self, parts: &[Value], args: &Value) -> Option<&'static str> {
        let approver = self.approver.as_ref()?;
        let name = &self.remote.spec.name;
        let said: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
        let question = format!("the agent \"{name}\" asks: {}", said.join(" "));
        let label = format!("{PREFIX}{name}");
        let tool = tool_name(name);
        let ask = kiln_core::context::ApprovalAsk {
            label: &label,
            question: &question,
            tool: &tool,
            args: Some(args),
            call_id: self.call_id.as_deref(),
            ends: kiln_core::context::WaitEnds {
                deadline: Some(self.deadline),
                ..Default::default()
            },
        };
        match approver.approve_call(&ask) {
            Ok(true) => Some("yes"),
            Ok(false) => Some("no"),
            Err(_) => None,
        }
    }
}

/// The status lines shown so far: each new one is the call's progress.
#[derive(Default)]
struct Shown {
    line: String,
    changes: f64,
}

impl Shown {
    fn show(&mut self, events: Option<&CallEvents>, task: &Value) {
        if task.is_null() {
            return;
        }
        let line = status_line(task);
        if line != self.line {
            self.changes += 1.0;
            let _ =
                kiln_core::context::call_events::progress(events, self.changes, None, Some(&line));
            self.line = line;
        }
    }
}

/// Whether the task waits for nobody but the remote agent no more: ended, or asking.
fn settled(task: &Value) -> bool {
    !matches!(
        task["status"]["state"].as_str(),
        None | Some("TASK_STATE_SUBMITTED" | "TASK_STATE_WORKING")
    )
}

/// Adds a streamed piece to an artifact's parts: text that goes on the text before it.
fn append_part(parts: &mut Vec<Value>, part: Value) {
    if let (Some(last), Some(more)) = (parts.last_mut(), part["text"].as_str())
        && let Some(text) = last["text"].as_str()
    {
        last["text"] = json!(format!("{text}{more}"));
        return;
    }
    parts.push(part);
}

/// Folds a send's result or one streamed event into the task as this call knows it: a whole
/// task, a status update, an artifact (or a piece of one), or a direct message (the answer of
/// an agent that keeps no task).
fn fold(task: &mut Value, ev: Value) {
    if let Some(t) = ev.get("task") {
        *task = t.clone();
    } else if let Some(u) = ev.get("statusUpdate") {
        task["id"] = u["taskId"].clone();
        task["contextId"] = u["contextId"].clone();
        task["status"] = u["status"].clone();
    } else if let Some(u) = ev.get("artifactUpdate") {
        task["id"] = u["taskId"].clone();
        let artifact = &u["artifact"];
        if !task["artifacts"].is_array() {
            task["artifacts"] = json!([]);
        }
        let Some(list) = task["artifacts"].as_array_mut() else {
            return;
        };
        let same = list
            .iter_mut()
            .find(|a| a["artifactId"] == artifact["artifactId"]);
        match (same, u["append"] == true) {
            (Some(a), true) => {
                let more = artifact["parts"].as_array().cloned().unwrap_or_default();
                if let Some(parts) = a["parts"].as_array_mut() {
                    for part in more {
                        append_part(parts, part);
                    }
                }
            }
            (Some(a), false) => *a = artifact.clone(),
            (None, _) => list.push(artifact.clone()),
        }
    } else if let Some(m) = ev.get("message") {
        *task = json!({"id": m["taskId"], "status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [{"artifactId": "message", "parts": m["parts"]}]});
    } else if ev.get("id").is_some() && ev.get("status").is_some() {
        *task = ev;
    }
}

/// A task's status as one line: its state, and the agent's status message.
fn status_line(task: &Value) -> String {
    let state = task["status"]["state"]
        .as_str()
        .unwrap_or("TASK_STATE_UNSPECIFIED");
    let state = state.trim_start_matches("TASK_STATE_").to_lowercase();
    let said: Vec<&str> = (task["status"]["message"]["parts"]
        .as_array()
        .into_iter()
        .flatten())
    .filter_map(|p| p["text"].as_str())
    .collect();
    match said.is_empty() {
        true => state,
        false => format!("{state}: {}", said.join(" ")),
    }
}

/// What the model reads of a task: its id, state, answer (the artifacts' text and data), the
/// agent's status message (its question, when it asks one) and the artifacts' files.
fn answer(task: &Value) -> Value {
    let texts = |parts: &Value| -> Vec<String> {
        parts
            .as_array()
            .map(|ps| {
                ps.iter()
                    .filter_map(|p| match (&p["text"], &p["data"]) {
                        (Value::String(t), _) => Some(t.clone()),
                        (_, d) if !d.is_null() => Some(d.to_string()),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let answer: Vec<String> = task["artifacts"]
        .as_array()
        .map(|a| a.iter().flat_map(|a| texts(&a["parts"])).collect())
        .unwrap_or_default();
    let said = texts(&task["status"]["message"]["parts"]).join("\n");
    let state = task["status"]["state"]
        .as_str()
        .unwrap_or("TASK_STATE_UNSPECIFIED");
    let mut out = json!({
        "task_id": task["id"],
        "state": state.trim_start_matches("TASK_STATE_").to_lowercase(),
        "answer": answer.join("\n"),
    });
    if !said.is_empty() {
        out["message"] = json!(said);
    }
    let files: Vec<Value> = task["artifacts"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|a| a["parts"].as_array().into_iter().flatten())
        .filter_map(file_of)
        .collect();
    if !files.is_empty() {
        out["files"] = json!(files);
    }
    out
}

/// A file part as the model reads of it: its name, media type and URL, or its size (its bytes
/// stay out of the model's context).
fn file_of(part: &Value) -> Option<Value> {
    let mut file = serde_json::Map::new();
    match (&part["url"], &part["raw"]) {
        (Value::String(url), _) => file.insert("url".into(), json!(url)),
        (_, Value::String(raw)) => {
            let pad = raw.bytes().rev().take_while(|b| *b == b'=').count();
            file.insert(
                "bytes".into(),
                json!((raw.len() / 4 * 3).saturating_sub(pad)),
            )
        }
        _ => return None,
    };
    for (from, to) in [("filename", "name"), ("mediaType", "media_type")] {
        if let Some(v) = part[from].as_str() {
            file.insert(to.into(), json!(v));
        }
    }
    Some(Value::Object(file))
}

fn uuid() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("kiln-{now:x}-{}", N.fetch_add(1, Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_reads_as_its_state_answer_and_question() {
        let task = json!({"id": "t1", "status": {"state": "TASK_STATE_INPUT_REQUIRED",
            "message": {"parts": [{"text": "Refund A-1?"}]}},
            "artifacts": [{"artifactId": "a", "parts": [{"text": "partial"}, {"data": {"n": 1}}]}]});
        assert_eq!(
            answer(&task),
            json!({"task_id": "t1", "state": "input_required", "answer": "partial\n{\"n\":1}", "message": "Refund A-1?"})
        );
        assert_eq!(named("a2a:billing"), Some("billing"));
        assert_eq!(tool_name("billing"), "a2a__billing");
    }

    #[test]
    fn streamed_events_fold_into_the_task() {
        let mut task = Value::Null;
        fold(
            &mut task,
            json!({"task": {"id": "t", "status": {"state": "TASK_STATE_SUBMITTED"}}}),
        );
        assert!(!settled(&task));
        let piece = |text: &str, append: bool| {
            json!({"artifactUpdate": {"taskId": "t",
            "append": append, "artifact": {"artifactId": "a", "parts": [{"text": text}]}}})
        };
        fold(&mut task, piece("Hel", false));
        fold(&mut task, piece("lo", true));
        fold(
            &mut task,
            json!({"statusUpdate": {"taskId": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_COMPLETED"}}}),
        );
        assert!(settled(&task));
        assert_eq!(answer(&task)["answer"], "Hello");
        assert_eq!(answer(&task)["state"], "completed");
        let files = json!({"id": "t", "status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [{"artifactId": "f", "parts": [
                {"raw": "iVBORw0KGgo=", "mediaType": "image/png", "filename": "a.png"},
                {"url": "https://files.example.test/r.pdf", "mediaType": "application/pdf"}]}]});
        assert_eq!(
            answer(&files)["files"],
            json!([{"bytes": 8, "name": "a.png", "media_type": "image/png"},
                {"url": "https://files.example.test/r.pdf", "media_type": "application/pdf"}])
        );
        let mut direct = Value::Null;
        fold(
            &mut direct,
            json!({"message": {"role": "ROLE_AGENT", "parts": [{"text": "Hi"}]}}),
        );
        assert_eq!(answer(&direct)["answer"], "Hi");
    }
}
