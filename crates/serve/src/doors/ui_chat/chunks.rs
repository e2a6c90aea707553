//! A run's events as the AI SDK's UI message stream: `start` (the assistant message), a step
//! a round (`start-step`, `finish-step`), the answer as `text-start`/`text-delta`/`text-end`,
//! each tool call as `tool-input-start` and `tool-input-available` then `tool-output-available`
//! or `tool-output-error`, a tool's `emit(name, value)` as a `data-NAME` part and its progress
//! as one `data-progress` part per call (each update replaces the last), a call that needs a
//! person's approval as `tool-approval-request`, and the end as `finish` (the front end's tool
//! calls left for it to run, `finishReason` `tool-calls`) or `error`.

use kiln_agent::{ApprovalAsked, Event, RunError, RunReport};
use kiln_core::context::call_events::ToolNote;
use serde_json::{Value, json};

/// Turns one kiln run's events into one UI message stream.
pub(crate) struct UiStream {
    kiln_run: String,
    message_id: String,
    text: Option<String>,
    texts: u32,
    step: bool,
    /// Calls started and not finished, latest last.
    open_calls: Vec<String>,
    /// Calls whose input the front end has (announced here, or before a resume).
    announced: std::collections::HashSet<String>,
    ended: bool,
}

impl UiStream {
    /// The stream of kiln run `kiln_run`, into assistant message `message_id`.
    pub fn new(kiln_run: &str, message_id: &str) -> Self {
        UiStream {
            kiln_run: kiln_run.to_string(),
            message_id: message_id.to_string(),
            text: None,
            texts: 0,
            step: false,
            open_calls: Vec::new(),
            announced: Default::default(),
            ended: false,
        }
    }

    /// The stream with call `id` already shown to the front end (a resumed run's call that
    /// asked for approval): its input is not announced again.
    pub fn with_announced(mut self, id: Option<String>) -> Self {
        self.announced.extend(id);
        self
    }

    /// The first chunk: the assistant message, with the kiln run in its metadata.
    pub fn start(&self) -> Value {
        json!({"type": "start", "messageId": self.message_id,
            "messageMetadata": {"kiln_run_id": self.kiln_run}})
    }

    fn close_text(&mut self, out: &mut Vec<Value>) {
        if let Some(id) = self.text.take() {
            out.push(json!({"type": "text-end", "id": id}));
        }
    }

    fn close_step(&mut self, out: &mut Vec<Value>) {
        self.close_text(out);
        if std::mem::take(&mut self.step) {
            out.push(json!({"type": "finish-step"}));
        }
    }

    fn finish(&mut self, out: &mut Vec<Value>, reason: &str) {
        self.close_step(out);
        out.push(json!({"type": "finish", "finishReason": reason}));
        self.ended = true;
    }

    fn end(&mut self, out: &mut Vec<Value>, result: &Result<RunReport, RunError>) {
        match result {
            Ok(report) => {
                self.close_text(out);
                for call in &report.pending_calls {
                    input_chunks(out, &call.id, &call.name, call.args.to_value());
                }
                let reason = if report.pending_calls.is_empty() {
                    "stop"
                } else {
                    "tool-calls"
                };
                self.finish(out, reason);
            }
            Err(e) => {
                self.close_step(out);
                out.push(json!({"type": "error",
                    "errorText": kiln_core::error::public::scrub(&e.to_string())}));
                self.ended = true;
            }
        }
    }
}

impl crate::doors::live::Translate for UiStream {
    fn ended(&self) -> bool {
        self.ended
    }

    fn on(&mut self, ev: &Event) -> Vec<Value> {
        let mut out = Vec::new();
        if self.ended {
            return out;
        }
        match ev {
            Event::ModelRequest { .. } => {
                self.close_step(&mut out);
                out.push(json!({"type": "start-step"}));
                self.step = true;
            }
            Event::Text(t) if !t.is_empty() => {
                let id = match &self.text {
                    Some(id) => id.clone(),
                    None => {
                        self.texts += 1;
                        let id = format!("{}-t{}", self.kiln_run, self.texts);
                        out.push(json!({"type": "text-start", "id": id}));
                        self.text = Some(id.clone());
                        id
                    }
                };
                out.push(json!({"type": "text-delta", "id": id, "delta": t}));
            }
            Event::ModelReply { .. } => self.close_text(&mut out),
            Event::ToolStarted { id, name, args, .. } => {
                self.close_text(&mut out);
                if self.announced.insert(id.clone()) {
                    input_chunks(&mut out, id, name, Value::clone(args));
                }
                self.open_calls.push(id.clone());
            }
            Event::ToolNote { id, name, note, .. } => out.push(data_part(id, name, note)),
            Event::ToolFinished(record) => {
                self.open_calls.retain(|c| *c != record.id);
                out.push(match record.outcome.error() {
                    Some(e) => json!({"type": "tool-output-error", "toolCallId": record.id,
                        "errorText": kiln_core::error::public::scrub(&e.message)}),
                    None => json!({"type": "tool-output-available", "toolCallId": record.id,
                        "output": record.outcome.result().cloned().unwrap_or(Value::Null)}),
                });
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
                let approval = format!("{}/{id}", self.kiln_run);
                let call = match (call_id, self.open_calls.last()) {
                    // Asked before its call started: the call is announced with the question.
                    (Some(call), _) => {
                        if self.announced.insert(call.clone()) {
                            let name = tool.as_deref().unwrap_or("tool");
                            let input = args.clone().unwrap_or_else(|| json!({}));
                            input_chunks(&mut out, call, name, input);
                        }
                        call.clone()
                    }
                    (None, Some(call)) => call.clone(),
                    (None, None) => {
                        // Asked outside a call the stream announced: shown as a call of its own.
                        let args = json!({"capability": capability});
                        input_chunks(&mut out, &approval, "approval", args);
                        approval.clone()
                    }
                };
                out.push(
                    json!({"type": "tool-approval-request", "approvalId": approval,
                    "toolCallId": call, "reason": question}),
                );
                self.finish(&mut out, "tool-calls");
            }
            Event::Finished(result) => self.end(&mut out, result),
            _ => {}
        }
        out
    }
}

/// A tool call's input, whole: started, then available.
fn input_chunks(out: &mut Vec<Value>, id: &str, name: &str, input: Value) {
    out.push(json!({"type": "tool-input-start", "toolCallId": id, "toolName": name}));
    out.push(
        json!({"type": "tool-input-available", "toolCallId": id, "toolName": name, "input": input}),
    );
}

/// A tool's event as a `data-NAME` part; its progress as the call's `data-progress` part,
/// replaced by each update (the same id).
fn data_part(id: &str, tool: &str, note: &ToolNote) -> Value {
    match note {
        ToolNote::Emit { name, value } => json!({"type": format!("data-{name}"), "data": value}),
        ToolNote::Progress {
            done,
            total,
            message,
        } => json!({"type": "data-progress", "id": format!("progress-{id}"),
            "data": {"toolCallId": id, "tool": tool, "done": done, "total": total, "message": message}}),
    }
}
