//! What a run reports as it goes, for a run log or a session store. Each `step` is committed
//! before the loop sends its next model request, so a killed process loses at most the step
//! in flight; a step that cannot be committed ends the run with a [`RecordError`].

use super::{RunReport, ToolCallRecord};
use crate::provider::{Message, StopReason, Usage};
use serde_json::Value;
use std::time::Duration;

/// A write to the run's record failed. The run stops: it never goes on unrecorded.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the run log could not record the run's {what}: {message}")]
pub struct RecordError {
    /// What was being recorded (`start`, `step`, `end`).
    pub what: &'static str,
    /// Why it failed.
    pub message: String,
}

/// Receives a run's progress.
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
