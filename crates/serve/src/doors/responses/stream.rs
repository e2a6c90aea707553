//! A run's events as the Responses API's stream: `response.created`, `response.in_progress`,
//! each output item added, its text or arguments as deltas, done, then `response.completed`
//! (or `.incomplete`, `.failed`), each event with its `sequence_number`. The items streamed are
//! the ones the Response object holds, under the same ids.

use crate::doors::responses::output::{
    Ending, SERVER_LABEL, arguments_text, ending, function_call_item, mcp_item, mcp_started,
    message_item, report_of, text_part,
};
use crate::running::Shape;
use kiln_agent::{ApprovalAsked, Event};
use serde_json::{Value, json};

/// The message item being streamed.
struct OpenMessage {
    index: usize,
    id: String,
    text: String,
}

/// Turns a run's events into the Responses stream's events, in order.
pub(crate) struct Streamer {
    shape: Shape,
    seq: u64,
    /// The items so far, as they are now.
    output: Vec<Value>,
    open: Option<OpenMessage>,
    round: u32,
    /// The text of the last message item streamed.
    last_text: String,
    /// Tools' progress and events go out as `kiln:tool_progress` / `kiln:tool_event`.
    tool_notes: bool,
}

/// One stream event: its type and data.
pub(crate) type StreamEvent = (&'static str, Value);

impl Streamer {
    /// A stream for the response `shape`.
    pub fn new(shape: Shape) -> Self {
        Streamer {
            shape,
            seq: 0,
            output: Vec::new(),
            open: None,
            round: 0,
            last_text: String::new(),
            tool_notes: false,
        }
    }

    /// The stream with the tools' progress and events (`"kiln": {"events": true}`), as
    /// events named with kiln's prefix, which the Responses clients pass over.
    pub fn with_tool_notes(mut self, on: bool) -> Self {
        self.tool_notes = on;
        self
    }

    fn emit(&mut self, out: &mut Vec<StreamEvent>, kind: &'static str, mut data: Value) {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.seq);
        self.seq += 1;
        out.push((kind, data));
    }

    fn in_progress(&self) -> Value {
        let end = Ending {
            status: "in_progress",
            usage: None,
            error: Value::Null,
            incomplete: None,
        };
        self.shape.object(self.output.clone(), &end)
    }

    /// The first events: the response exists and is in progress.
    pub fn start(&mut self) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        let response = self.in_progress();
        self.emit(&mut out, "response.created", json!({"response": response}));
        let response = self.in_progress();
        self.emit(
            &mut out,
            "response.in_progress",
            json!({"response": response}),
        );
        out
    }

    /// The stream events of one run event.
    pub fn on(&mut self, ev: &Event) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        match ev {
            Event::ModelRequest { round } => self.round = *round,
            Event::Text(t) if !t.is_empty() => self.text(&mut out, t),
            Event::ModelReply { .. } => self.close_message(&mut out),
            Event::ToolStarted { id, name, args, .. } => {
                self.close_message(&mut out);
                let item = mcp_started(id, name, args);
                self.add_item(&mut out, item);
            }
            Event::ToolFinished(record) => {
                let item = mcp_item(record);
                let index = self.output.iter().position(|i| i["id"] == item["id"]);
                let index = match index {
                    Some(i) => i,
                    None => self.add_item(&mut out, item.clone()),
                };
                self.done_item(&mut out, index, item);
            }
            Event::ApprovalRequested(asked) => {
                let ApprovalAsked {
                    id,
                    capability,
                    question,
                    ..
                } = &**asked;
                let item = json!({
                    "type": "mcp_approval_request",
                    "id": id,
                    "server_label": SERVER_LABEL,
                    "name": capability,
                    "arguments": json!({"question": question}).to_string(),
                });
                let index = self.add_item(&mut out, item.clone());
                self.done_item(&mut out, index, item);
            }
            Event::Finished(result) => self.finish(&mut out, result),
            Event::ToolNote {
                round,
                id,
                name,
                note,
            } if self.tool_notes => {
                let (kind, data) = crate::table::note_json(*round, id, name, note);
                let kind = match kind {
                    "tool_progress" => "kiln:tool_progress",
                    _ => "kiln:tool_event",
                };
                self.emit(&mut out, kind, data);
            }
            _ => {}
        }
        out
    }

    /// Appends an item (as it starts) and announces it; returns its index.
    fn add_item(&mut self, out: &mut Vec<StreamEvent>, item: Value) -> usize {
        let index = self.output.len();
        self.output.push(item.clone());
        self.emit(
            out,
            "response.output_item.added",
            json!({"output_index": index, "item": item}),
        );
        index
    }

    fn done_item(&mut self, out: &mut Vec<StreamEvent>, index: usize, item: Value) {
        self.output[index] = item.clone();
        self.emit(
            out,
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        );
    }

    fn text(&mut self, out: &mut Vec<StreamEvent>, delta: &str) {
        if self.open.is_none() {
            let id = self.shape.message_id(self.round.max(1));
            let index = self.add_item(out, message_item(&id, "", "in_progress"));
            let part = text_part("");
            self.emit(
                out,
                "response.content_part.added",
                json!({"item_id": id, "output_index": index, "content_index": 0, "part": part}),
            );
            self.open = Some(OpenMessage {
                index,
                id,
                text: String::new(),
            });
        }
        let Some(open) = self.open.as_mut() else {
            return;
        };
        open.text.push_str(delta);
        let (id, index) = (open.id.clone(), open.index);
        self.emit(
            out,
            "response.output_text.delta",
            json!({"item_id": id, "output_index": index, "content_index": 0, "delta": delta, "logprobs": []}),
        );
    }

    fn close_message(&mut self, out: &mut Vec<StreamEvent>) {
        let Some(open) = self.open.take() else {
            return;
        };
        let OpenMessage { index, id, text } = open;
        self.emit(
            out,
            "response.output_text.done",
            json!({"item_id": id, "output_index": index, "content_index": 0, "text": text, "logprobs": []}),
        );
        self.emit(
            out,
            "response.content_part.done",
            json!({"item_id": id, "output_index": index, "content_index": 0, "part": text_part(&text)}),
        );
        self.done_item(out, index, message_item(&id, &text, "completed"));
        self.last_text = text;
    }

    /// A whole message at once (the answer did not stream).
    fn whole_message(&mut self, out: &mut Vec<StreamEvent>, text: &str) {
        self.text(out, text);
        self.close_message(out);
    }

    fn finish(
        &mut self,
        out: &mut Vec<StreamEvent>,
        result: &Result<kiln_agent::RunReport, kiln_agent::RunError>,
    ) {
        self.close_message(out);
        let report = report_of(result);
        if result.is_ok() && report.pending_calls.is_empty() {
            let answer = report.answer.clone();
            if !answer.is_empty() && answer != self.last_text {
                self.whole_message(out, &answer);
            }
        }
        for call in &report.pending_calls {
            let arguments = arguments_text(call);
            let item_id = format!("fc_{}", call.id);
            let index = self.add_item(out, function_call_item(call, "in_progress", ""));
            self.emit(
                out,
                "response.function_call_arguments.delta",
                json!({"item_id": item_id, "output_index": index, "delta": arguments}),
            );
            self.emit(
                out,
                "response.function_call_arguments.done",
                json!({"item_id": item_id, "output_index": index, "name": call.name, "arguments": arguments}),
            );
            self.done_item(
                out,
                index,
                function_call_item(call, "completed", &arguments),
            );
        }
        let end = ending(result);
        let kind = match end.status {
            "completed" => "response.completed",
            "incomplete" => "response.incomplete",
            _ => "response.failed",
        };
        let response = self.shape.object(self.output.clone(), &end);
        self.emit(out, kind, json!({"response": response}));
    }
}
