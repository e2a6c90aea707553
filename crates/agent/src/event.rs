//! The one event type of a run, for live display and streams.

use crate::report::{RunError, RunReport, ToolCallRecord};
use serde_json::Value;
use std::sync::Arc;

/// Something that happened in a run: what an [`Observer`] hears as it happens, and what
/// `Host::run_stream` delivers.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Event {
    /// Answer text as it streams in.
    Text(String),
    /// A model request is about to be sent (round, 1-based).
    ModelRequest {
        /// The round.
        round: u32,
    },
    /// The model's reply arrived.
    ModelReply {
        /// The round.
        round: u32,
    },
    /// The model's reasoning in its reply, as text, where its wire gives it (OpenAI Responses'
    /// reasoning summaries, Gemini's thoughts); after its `ModelReply`. Never the answer.
    Thought {
        /// The round.
        round: u32,
        /// The reasoning.
        text: String,
    },
    /// A person's message added to the run while it ran ([`crate::steer`]), carried by the
    /// request of this round.
    Steered {
        /// The round whose request carries it.
        round: u32,
        /// What the person said.
        text: String,
    },
    /// A tool call was dispatched.
    ToolStarted {
        /// The round.
        round: u32,
        /// The call id.
        id: String,
        /// The tool.
        name: String,
        /// The arguments as the model sent them (shared with the transcript's call).
        args: std::sync::Arc<Value>,
    },
    /// A running tool call told its caller something: progress or an event it emitted.
    ToolNote {
        /// The round.
        round: u32,
        /// The call id.
        id: String,
        /// The tool.
        name: String,
        /// What it said (boxed: the one large variant would size every event).
        note: Box<kiln_core::context::call_events::ToolNote>,
    },
    /// A tool call finished (or was refused). Shared: each listener's copy of the event, and
    /// the copies a server keeps for its readers, are the one record.
    ToolFinished(Arc<ToolCallRecord>),
    /// A call waits for a person to approve it (a door that can ask over its own channel,
    /// such as `kiln serve`, sends this).
    /// (Boxed: the largest variants would size every event a server keeps.)
    ApprovalRequested(Box<ApprovalAsked>),
    /// The run ended: its report, or the error with the report so far. Always last.
    Finished(Box<Result<RunReport, RunError>>),
}

/// What [`Event::ApprovalRequested`] says.
#[derive(Debug, Clone)]
pub struct ApprovalAsked {
    /// The approval's id, to answer it by.
    pub id: String,
    /// What needs approval (`store`, `policy:NAME`).
    pub capability: String,
    /// What the person is asked.
    pub question: String,
    /// The model's id of the call that asks, when known (an approval is asked before its
    /// call's `ToolStarted`).
    pub call_id: Option<String>,
    /// The tool that asks, when known.
    pub tool: Option<String>,
    /// The call's arguments, when known.
    pub args: Option<Value>,
}

/// Receives a run's events as they happen (on the loop's task: keep it quick).
pub type Observer = Arc<dyn Fn(&Event) + Send + Sync>;

#[cfg(test)]
mod tests {
    /// A server keeps every event of a run for its readers (and each listener gets a copy):
    /// large payloads go behind a pointer, so the common events stay small.
    #[test]
    fn an_event_is_a_few_words() {
        let size = std::mem::size_of::<super::Event>();
        assert!(size <= 80, "an Event is {size} bytes");
    }
}
