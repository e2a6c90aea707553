//! What a run reports as it goes, for a run log or a session store. Each `step` is committed
//! before the loop sends its next model request, so a killed process loses at most the step
//! in flight.

use super::{RunReport, ToolCallRecord};
use crate::provider::{Message, StopReason, Usage};
use serde_json::Value;
use std::time::Duration;

/// Receives a run's progress.
pub trait Recorder: Send + Sync {
    /// The run began (its prompt is the last message of the report).
    fn started(&self, report: &RunReport);
    /// A model reply arrived.
    fn model_reply(
        &self,
        run_id: &str,
        round: u32,
        usage: Usage,
        stop: &StopReason,
        took: Duration,
    );
    /// A step completed: the messages new since the last step (numbered from `first_seq`),
    /// the tool calls of the step and the run's state after it.
    fn step(
        &self,
        run_id: &str,
        first_seq: usize,
        messages: &[Message],
        calls: &[ToolCallRecord],
        state: &Value,
    );
    /// The run ended, well or not (`report.error`).
    fn ended(&self, report: &RunReport);
}
