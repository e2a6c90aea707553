//! A run's events as AG-UI events: `RUN_STARTED`; a step a round (`STEP_STARTED`,
//! `STEP_FINISHED`); the answer as `TEXT_MESSAGE_START`/`CONTENT`/`END`; each tool call as
//! `TOOL_CALL_START`/`ARGS`/`END` and its `TOOL_CALL_RESULT`; `ctx.state` as a
//! `STATE_SNAPSHOT` first and a `STATE_DELTA` (JSON Patch) after each call that changed it;
//! a tool's `emit` as `CUSTOM` (its progress as `CUSTOM` named `progress`); and the end as
//! `RUN_FINISHED` (with the front end's tool calls pending, or an interrupt when a call waits
//! for a person's approval) or `RUN_ERROR`. Every message, call and step opened is closed
//! before the run's end, as the AG-UI client checks.

use kiln_agent::{ApprovalAsked, Event, RunError, RunReport};
use kiln_core::context::call_events::ToolNote;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// Turns one kiln run's events into one AG-UI run's events.
pub(crate) struct AgUiStream {
    thread_id: String,
    run_id: String,
    kiln_run: String,
    text: Option<String>,
    /// The assistant message of this round (its text's, or made up for its tool calls): the
    /// round's calls go under it, so the front end keeps one reply as one message.
    reply: Option<String>,
    round: u32,
    step: Option<String>,
    messages: u32,
    state: Arc<Mutex<Value>>,
    sent_state: Value,
    /// The AG-UI run has ended (finished, interrupted or failed): nothing follows.
    ended: bool,
    /// Calls the front end has been shown (here, or with an interrupt before a resume).
    announced: std::collections::HashSet<String>,
}

impl AgUiStream {
    /// The stream of AG-UI run `run_id` on `thread_id`, for kiln run `kiln_run` whose
    /// `ctx.state` is `state`.
    pub fn new(thread_id: &str, run_id: &str, kiln_run: &str, state: Arc<Mutex<Value>>) -> Self {
        let sent_state = state.lock().map(|s| s.clone()).unwrap_or(Value::Null);
        AgUiStream {
            thread_id: thread_id.to_string(),
            run_id: run_id.to_string(),
            kiln_run: kiln_run.to_string(),
            text: None,
            reply: None,
            round: 0,
            step: None,
            messages: 0,
            state,
            sent_state,
            ended: false,
            announced: Default::default(),
        }
    }

    /// The stream with call `id` already shown to the front end (with the interrupt a resume
    /// answers): it is not announced again.
    pub fn with_announced(mut self, id: Option<String>) -> Self {
        self.announced.extend(id);
        self
    }

    /// The first events: the run started, and the state it starts from.
    pub fn start(&mut self) -> Vec<Value> {
        vec![
            json!({"type": "RUN_STARTED", "threadId": self.thread_id, "runId": self.run_id,
                "metadata": {"kiln_run_id": self.kiln_run}}),
            json!({"type": "STATE_SNAPSHOT", "snapshot": self.sent_state}),
        ]
    }
}

impl crate::doors::live::Translate for AgUiStream {
    fn ended(&self) -> bool {
        self.ended
    }

    /// The AG-UI events of one kiln event.
    fn on(&mut self, ev: &Event) -> Vec<Value> {
        let mut out = Vec::new();
        if self.ended {
            return out;
        }
        match ev {
            Event::ModelRequest { round } => {
                self.close_text(&mut out);
                self.close_step(&mut out);
                let name = format!("round {round}");
                out.push(json!({"type": "STEP_STARTED", "stepName": name}));
                self.round = *round;
                self.reply = None;
                self.step = Some(name);
            }
            Event::Text(t) if !t.is_empty() => {
                let id = match &self.text {
                    Some(id) => id.clone(),
                    None => {
                        self.messages += 1;
                        let id = format!("{}-m{}", self.kiln_run, self.messages);
                        out.push(json!({"type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant"}));
                        self.text = Some(id.clone());
                        self.reply = Some(id.clone());
                        id
                    }
                };
                out.push(json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": t}));
            }
            Event::ModelReply { .. } => self.close_text(&mut out),
            Event::ToolStarted { id, name, args, .. } => {
                self.close_text(&mut out);
                if self.announced.insert(id.clone()) {
                    let parent = self.reply_id();
                    call_events(&mut out, id, name, &args.to_string(), &parent);
                }
            }
            Event::ToolNote { id, name, note, .. } => out.push(custom(id, name, note)),
            Event::ToolFinished(record) => {
                let content = match record.outcome.error() {
                    Some(e) => json!({"error": e.message}).to_string(),
                    None => record
                        .outcome
                        .result()
                        .map(|v| v.to_string())
                        .unwrap_or_default(),
                };
                out.push(json!({"type": "TOOL_CALL_RESULT", "messageId": format!("{}-r-{}", self.kiln_run, record.id),
                    "toolCallId": record.id, "content": content, "role": "tool"}));
                self.state_delta(&mut out);
            }
            Event::ApprovalRequested(asked) => {
                let ApprovalAsked {
                    id,
                    capability,
                    question,
                    call_id,
                    tool,
                    args,
                } = &**asked;
                self.close_text(&mut out);
                let mut interrupt = json!({"id": format!("{}/{id}", self.kiln_run), "reason": "approval",
                    "message": question, "metadata": {"capability": capability}});
                if let Some(call) = call_id {
                    // Asked before its call started: the call is shown with the question.
                    if self.announced.insert(call.clone()) {
                        let parent = self.reply_id();
                        let args = args.as_ref().map_or_else(|| "{}".into(), Value::to_string);
                        call_events(
                            &mut out,
                            call,
                            tool.as_deref().unwrap_or("tool"),
                            &args,
                            &parent,
                        );
                    }
                    interrupt["toolCallId"] = json!(call);
                }
                self.close(&mut out);
                out.push(self.finished(json!({"type": "interrupt", "interrupts": [interrupt]})));
            }
            Event::Finished(result) => self.end(&mut out, result),
            _ => {}
        }
        out
    }
}

impl AgUiStream {
    fn end(&mut self, out: &mut Vec<Value>, result: &Result<RunReport, RunError>) {
        match result {
            Ok(report) => {
                self.close_text(out);
                let mut pending = Vec::new();
                let parent = self.reply_id();
                for call in &report.pending_calls {
                    let args = call.args.to_value().to_string();
                    call_events(out, &call.id, &call.name, &args, &parent);
                    pending.push(call.id.clone());
                }
                self.state_delta(out);
                self.close(out);
                let mut outcome = json!({"type": "success"});
                if !pending.is_empty() {
                    outcome["pendingToolCallIds"] = json!(pending);
                }
                out.push(self.finished(outcome));
            }
            Err(e) => {
                self.ended = true;
                let code = crate::error::error_kind(e);
                out.push(json!({"type": "RUN_ERROR", "code": code,
                    "message": kiln_core::error::public::scrub(&e.to_string())}));
            }
        }
    }

    /// The id of this round's assistant message.
    fn reply_id(&mut self) -> String {
        let (run, round) = (&self.kiln_run, self.round);
        self.reply
            .get_or_insert_with(|| format!("{run}-a{round}"))
            .clone()
    }

    fn finished(&mut self, outcome: Value) -> Value {
        self.ended = true;
        json!({"type": "RUN_FINISHED", "threadId": self.thread_id, "runId": self.run_id, "outcome": outcome})
    }

    /// Starts from `snapshot` (the state the run began with) instead of the state as it is now.
    pub fn with_snapshot(mut self, snapshot: Value) -> Self {
        self.sent_state = snapshot;
        self
    }

    /// A `STATE_DELTA` when `ctx.state` changed since it was last sent.
    fn state_delta(&mut self, out: &mut Vec<Value>) {
        let now = self.state.lock().map(|s| s.clone()).unwrap_or(Value::Null);
        if now == self.sent_state {
            return;
        }
        let patch = json_patch::diff(&self.sent_state, &now);
        out.push(json!({"type": "STATE_DELTA", "delta": patch}));
        self.sent_state = now;
    }

    fn close(&mut self, out: &mut Vec<Value>) {
        self.close_text(out);
        self.close_step(out);
    }

    fn close_text(&mut self, out: &mut Vec<Value>) {
        if let Some(id) = self.text.take() {
            out.push(json!({"type": "TEXT_MESSAGE_END", "messageId": id}));
        }
    }

    fn close_step(&mut self, out: &mut Vec<Value>) {
        if let Some(name) = self.step.take() {
            out.push(json!({"type": "STEP_FINISHED", "stepName": name}));
        }
    }
}

/// A tool call announced whole, under assistant message `parent`: start, its arguments as
/// one delta, end.
fn call_events(out: &mut Vec<Value>, id: &str, name: &str, args: &str, parent: &str) {
    out.push(
        json!({"type": "TOOL_CALL_START", "toolCallId": id, "toolCallName": name,
        "parentMessageId": parent}),
    );
    out.push(json!({"type": "TOOL_CALL_ARGS", "toolCallId": id, "delta": args}));
    out.push(json!({"type": "TOOL_CALL_END", "toolCallId": id}));
}

/// A tool's event or progress as `CUSTOM`, the call it came from in `metadata`.
fn custom(id: &str, tool: &str, note: &ToolNote) -> Value {
    let (name, value) = match note {
        ToolNote::Emit { name, value } => (name.as_str(), value.clone()),
        ToolNote::Progress {
            done,
            total,
            message,
        } => (
            "progress",
            json!({"done": done, "total": total, "message": message}),
        ),
    };
    json!({"type": "CUSTOM", "name": name, "value": value,
        "metadata": {"toolCallId": id, "tool": tool}})
}
