//! What a run reports as it goes, for a run log or a session store.
//!
//! A step's commit runs on the blocking pool while the loop sends its next model request; the
//! loop waits for it before any tool of the next step runs (and before the run ends). So no
//! side effect ever happens on top of a step that is not durable, a killed process loses at
//! most the step in flight and one model request, and a step that cannot be committed ends the
//! run with a [`RecordError`] before any further tool runs.

use super::{RunReport, ToolCallRecord};
use crate::provider::{Message, StopReason, Usage};
use serde_json::Value;
use std::time::Duration;
use tokio::task::JoinHandle;

/// A write to the run's record failed. The run stops: it never goes on unrecorded.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the run log could not record the run's {what}: {message}")]
pub struct RecordError {
    /// What was being recorded (`start`, `step`, `end`).
    pub what: &'static str,
    /// Why it failed.
    pub message: String,
}

/// Receives a run's progress. `started` and `step` are called on the blocking pool, one at a
/// time and in order; the loop goes on with its next model request meanwhile, but runs no tool
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

/// The one commit a run may have in flight.
#[derive(Default)]
pub(super) struct InFlight(Option<JoinHandle<Result<(), RecordError>>>);

impl InFlight {
    /// Waits until the commit in flight, if any, has returned; its error is the run's.
    pub(super) async fn settle(&mut self) -> Result<(), RecordError> {
        let Some(handle) = self.0.take() else {
            return Ok(());
        };
        match handle.await {
            Ok(committed) => committed,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => Err(RecordError {
                what: "step",
                message: e.to_string(),
            }),
        }
    }

    /// Starts `commit` on the blocking pool once the one before it has returned, so commits
    /// land in order (and one that failed stops the ones after it).
    pub(super) async fn start(
        &mut self,
        commit: impl FnOnce() -> Result<(), RecordError> + Send + 'static,
    ) -> Result<(), RecordError> {
        self.settle().await?;
        self.0 = Some(tokio::task::spawn_blocking(commit));
        Ok(())
    }
}
