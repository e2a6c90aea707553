//! What a run reports as it goes, for a run log or a session store.
//!
//! A step's commit waits until the loop has sent its next model request, then runs while the
//! model works; the request's step ends only once that commit has returned. So no tool ever
//! runs on top of a step that is not durable, a killed process loses at most the step in
//! flight and one model request, and a step that cannot be committed ends the run with a
//! [`RecordError`] before any further tool runs. The commit runs in the loop's own task: no
//! thread hand-off, no copy of the step.

use super::{RecordError, RunReport, ToolCallRecord};
use kiln_providers::{Message, StopReason, Usage};
use serde_json::Value;
use std::time::Duration;

/// Receives a run's progress. `started` and `step` are called one at a time and in order, each
/// while the run's next model request is out (or before the run ends); the loop runs no tool
/// and does not end before they return.
pub trait Recorder: Send + Sync {
    /// The run began (its prompt is the last message of the report).
    fn started(&self, report: &RunReport) -> Result<(), RecordError>;
    /// A model reply arrived (recorded with the step it belongs to).
    fn model_reply(
        &self,
        run_id: &str,
        round: u32,
        usage: Usage,
        stop: &StopReason,
        took: Duration,
    );
    /// A step completed: the messages new since the last step (numbered from `first_seq`),
    /// the tool calls of the step and the run's state after it. Returns once committed.
    fn step(
        &self,
        run_id: &str,
        first_seq: usize,
        messages: &[Message],
        calls: &[ToolCallRecord],
        state: &Value,
    ) -> Result<(), RecordError>;
    /// The run ended, well or not (`report.error`).
    fn ended(&self, report: &RunReport) -> Result<(), RecordError>;
}

/// What a run has handed to its recorder but not committed yet: at most one commit, which runs
/// during the next model request.
pub(super) enum Pending {
    /// The run began.
    Started,
    /// A step: the messages and tool calls in these ranges of the report, and the run's state
    /// after it.
    Step {
        messages: std::ops::Range<usize>,
        calls: std::ops::Range<usize>,
        state: Value,
    },
}

impl Pending {
    /// Commits through `recorder`, reading the step from `report`.
    pub(super) fn commit(
        self,
        recorder: &dyn Recorder,
        report: &RunReport,
    ) -> Result<(), RecordError> {
        match self {
            Pending::Started => recorder.started(report),
            Pending::Step {
                messages,
                calls,
                state,
            } => recorder.step(
                &report.run_id,
                messages.start,
                &report.messages[messages],
                &report.tool_calls[calls],
                &state,
            ),
        }
    }
}
