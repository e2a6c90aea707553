//! "Do this step and remember its result": the one seam between the tool-calling loop and the
//! place its steps are kept. Locally a step just runs (the run log still records it through the
//! [`Recorder`](super::Recorder)); a durable engine journals each step, so a run resumed on
//! another worker gets a completed step's result back without running it again.

use super::report::RunErrorKind;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;

/// The work of one step: a model request or a tool call, its result as JSON (what a journal
/// keeps). `'static` because a durable engine may hold it beyond the loop's borrows.
pub type StepWork = Pin<Box<dyn Future<Output = Result<Value, RunErrorKind>> + Send + 'static>>;

/// A step as the loop awaits it.
pub type StepFuture<'a> = Pin<Box<dyn Future<Output = Result<Recalled, RunErrorKind>> + Send + 'a>>;

/// A step's result, and whether it came from the journal instead of running here.
#[derive(Debug, Clone)]
pub struct Recalled {
    /// What the work returned (now or in an earlier attempt).
    pub value: Value,
    /// True when the work did not run in this attempt: its side effects on the run (such as
    /// `ctx.state`) must be restored from `value`.
    pub replayed: bool,
}

/// Runs named steps and remembers their results.
///
/// Names come only from journaled data (the round and the model's call ids), so a replay asks
/// for the same steps in the same order.
pub trait StepJournal: Send + Sync {
    /// Runs `work` as step `name`, or returns its remembered result.
    fn step<'a>(&'a self, name: String, work: StepWork) -> StepFuture<'a>;
}

/// The local mode: every step runs, nothing is kept here.
pub struct Local;

impl StepJournal for Local {
    fn step<'a>(&'a self, _name: String, work: StepWork) -> StepFuture<'a> {
        Box::pin(async move {
            work.await.map(|value| Recalled {
                value,
                replayed: false,
            })
        })
    }
}

/// The step name of round `round`'s model request.
pub fn model_step(round: u32) -> String {
    format!("model-{round}")
}

/// The step name of tool call `call_id` in round `round`.
pub fn tool_step(round: u32, call_id: &str) -> String {
    format!("tool-{round}-{call_id}")
}

/// The idempotency key a tool call sees as `ctx.idempotency_key`: the same on every retry of
/// that step, on any worker, as long as the run id is (a durable run's id is its invocation's).
pub fn idempotency_key(run_id: &str, step: &str) -> String {
    format!("{run_id}/{step}")
}

/// Reads a journaled value back as `T`; a mismatch means the journal was written by an
/// incompatible version of kiln.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(
    step: &str,
    value: Value,
) -> Result<T, RunErrorKind> {
    serde_json::from_value(value)
        .map_err(|e| RunErrorKind::Journal(format!("step {step}: unreadable result: {e}")))
}
