//! What a run reports as it goes, for a run log or a session store.
//!
//! A step's commit waits until the loop has sent its next model request, then runs while the
//! model works; the request's step ends only once that commit has returned. So no tool ever
//! runs on top of a step that is not durable, a killed process loses at most the step in
//! flight and one model request, and a step that cannot be committed ends the run with a
//! [`RecordError`] before any further tool runs. The commit runs in the loop's own task: no
//! thread hand-off, no copy of the step. A recorder may instead hand the commit to another
//! thread (the run log's group committer, which commits concurrent runs' steps together): the
//! loop then waits for the returned [`Commit`] where it would have waited for the call.

pub mod runlog;

use super::{RecordError, RunReport, ToolCallRecord};
use futures_util::future::BoxFuture;
use kiln_providers::{AnsweredBy, Message, StopReason, Usage};
use serde_json::Value;
use std::time::Duration;

/// A commit handed off: resolves once it has landed, or with why it could not.
pub type Commit = BoxFuture<'static, Result<(), RecordError>>;

/// A commit that has already happened (or failed).
pub fn committed(result: Result<(), RecordError>) -> Commit {
    Box::pin(std::future::ready(result))
}

/// Receives a run's progress. `started` and `step` are called one at a time and in order, each
/// while the run's next model request is out (or before the run ends); the loop runs no tool
/// and does not end before they return.
pub trait Recorder: Send + Sync {
    /// The run began (its prompt is the last message of the report).
    fn started(&self, report: &RunReport) -> Result<(), RecordError>;
    /// A model reply arrived from `by` (recorded with the step it belongs to).
    fn model_reply(
        &self,
        run_id: &str,
        round: u32,
        usage: Usage,
        stop: &StopReason,
        by: &AnsweredBy,
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

    /// Like [`Recorder::started`], but the commit may land later: the loop awaits the
    /// [`Commit`] before the run goes on past it. The default commits in place.
    fn commit_started(&self, report: &RunReport) -> Commit {
        committed(self.started(report))
    }

    /// Like [`Recorder::step`], but the commit may land later (what it needs of the step is
    /// taken now). The default commits in place.
    fn commit_step(
        &self,
        run_id: &str,
        first_seq: usize,
        messages: &[Message],
        calls: &[ToolCallRecord],
        state: &Value,
    ) -> Commit {
        committed(self.step(run_id, first_seq, messages, calls, state))
    }

    /// Like [`Recorder::ended`], but the commit may land later. The default commits in place.
    fn commit_ended(&self, report: &RunReport) -> Commit {
        committed(self.ended(report))
    }

    /// Whether its last write failed (a full disk): a run's start is then committed before
    /// anything runs, and the run refused if it cannot be. The default: never.
    fn failing(&self) -> bool {
        false
    }
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
    /// Hands the commit to `recorder`, reading the step from `report` now.
    pub(super) fn commit(self, recorder: &dyn Recorder, report: &RunReport) -> Commit {
        match self {
            Pending::Started => recorder.commit_started(report),
            Pending::Step {
                messages,
                calls,
                state,
            } => recorder.commit_step(
                &report.run_id,
                messages.start,
                &report.messages[messages],
                &report.tool_calls[calls],
                &state,
            ),
        }
    }
}
