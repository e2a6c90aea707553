//! A tool's form (`elicit(...)`) on an A2A task: the task goes `input-required` with the form's
//! message as text and a data part holding the fields' schema; the task's next message answers
//! it (a data part with the fields, or `{"action": "decline" | "cancel"}`), checked against the
//! schema before the tool sees it. The tool waits on its own thread until the answer comes, the
//! task is cancelled, or its call's wait ends.

use super::caller::uuid;
use crate::table::tasks::{A2aTask, FormWait};
use kiln_a2a::{A2aError, Message, Part, TaskState};
use kiln_core::context::call_events::LogLevel;
use kiln_core::context::call_events::{Answer, AskError, CallObserver, ClientAsk, FormRequest};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How to answer a form, as the task's status message says it.
const HOW: &str =
    "send a data part with the fields, or {\"action\": \"decline\"} or {\"action\": \"cancel\"}";

/// The person behind a task, as the task's runs' tools may ask them.
pub(crate) struct TaskPerson(pub(crate) Arc<A2aTask>);

impl CallObserver for TaskPerson {
    // A tool's progress reaches the task's watchers as run events already.
    fn progress(&self, _done: f64, _total: Option<f64>, _message: Option<String>) {}

    fn log(&self, _level: LogLevel, _message: String) {}

    fn ask(
        &self,
        asks: &[(String, ClientAsk)],
        _lenient: bool,
        timeout: Duration,
    ) -> Result<Vec<Answer>, AskError> {
        asks.iter()
            .map(|(_, ask)| match ask {
                ClientAsk::Form(form) => self.form(form, timeout).map(Answer::Value),
                other => Ok(Answer::Unsupported(format!(
                    "an A2A client cannot be asked for {}",
                    other.capability()
                ))),
            })
            .collect()
    }
}

impl TaskPerson {
    /// Puts `form` to the task's client and waits for the answer.
    fn form(&self, form: &FormRequest, timeout: Duration) -> Result<Value, AskError> {
        let task = &self.0;
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        task.set_form(Some(FormWait {
            schema: form.schema.clone(),
            answer: tx,
        }));
        let mut m = Message::agent_text(uuid(), form.message.clone());
        m.parts.push(Part::data(json!({
            "form": {"message": form.message, "requestedSchema": form.schema},
            "answer": HOW,
        })));
        task.record(m.clone());
        task.set_state(TaskState::InputRequired, Some(m));
        let until = Instant::now() + timeout;
        let answer = loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(answer) => break Ok(answer),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    break Err("the task stopped waiting for the form");
                }
                Err(_) if task.cancel.is_cancelled() => break Err("the task was cancelled"),
                Err(_) if Instant::now() >= until => break Err("nobody answered the form in time"),
                Err(_) => {}
            }
        };
        task.set_form(None);
        if answer.is_err() {
            // Answered, the door moved the task on already.
            task.set_state(TaskState::Working, None);
        }
        answer.map_err(|why| AskError::Refused(why.to_string()))
    }
}

/// The form's answer in `message`, checked against the form's `schema`: `{"action",
/// "content"}` as a tool's `elicit` returns it.
pub(crate) fn answer(message: &Message, schema: &Value) -> Result<Value, A2aError> {
    let bad = |why: String| A2aError::invalid_params("params.message.parts", why);
    if let Some(data) = message.parts.iter().find_map(|p| p.data.as_ref()) {
        match data.get("action").and_then(Value::as_str) {
            Some(action @ ("decline" | "cancel")) => return Ok(json!({"action": action})),
            Some("accept") | None => {}
            Some(other) => return Err(bad(format!("unknown action \"{other}\"; {HOW}"))),
        }
        let content = data.get("content").unwrap_or(data);
        check(content, schema).map_err(bad)?;
        return Ok(json!({"action": "accept", "content": content}));
    }
    match message.text().trim().to_lowercase().as_str() {
        "decline" | "no" => Ok(json!({"action": "decline"})),
        "cancel" => Ok(json!({"action": "cancel"})),
        _ => Err(bad(format!("the task waits for a form: {HOW}"))),
    }
}

/// Checks `content` against the form's schema; the first problem, naming its path.
fn check(content: &Value, schema: &Value) -> Result<(), String> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("the form's schema is not valid: {e}"))?;
    match validator.iter_errors(content).next() {
        None => Ok(()),
        Some(e) => {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() {
                "the fields".to_string()
            } else {
                format!("field {at}")
            };
            Err(format!("{at}: {e}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]})
    }

    fn with_data(data: Value) -> Message {
        let mut m = Message::agent_text("m".into(), String::new());
        m.parts = vec![Part::data(data)];
        m
    }

    #[test]
    fn a_data_part_answers_with_its_fields_checked() {
        let ok = answer(&with_data(json!({"size": 3})), &schema()).expect("accepted");
        assert_eq!(ok, json!({"action": "accept", "content": {"size": 3}}));
        let wrapped = json!({"action": "accept", "content": {"size": 4}});
        assert_eq!(
            answer(&with_data(wrapped), &schema()).expect("ok")["content"]["size"],
            4
        );
        let wrong = answer(&with_data(json!({"size": "big"})), &schema()).expect_err("a string");
        assert!(wrong.message.contains("/size"), "{}", wrong.message);
        let missing = answer(&with_data(json!({})), &schema()).expect_err("required");
        assert!(missing.message.contains("size"), "{}", missing.message);
    }

    #[test]
    fn decline_and_cancel_carry_no_content_and_other_text_is_refused() {
        let declined = answer(&with_data(json!({"action": "decline"})), &schema()).expect("ok");
        assert_eq!(declined, json!({"action": "decline"}));
        let text = Message::agent_text("m".into(), "cancel");
        assert_eq!(
            answer(&text, &schema()).expect("ok"),
            json!({"action": "cancel"})
        );
        let other = Message::agent_text("m".into(), "maybe");
        assert!(answer(&other, &schema()).is_err());
    }
}
