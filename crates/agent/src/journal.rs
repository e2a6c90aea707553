//! "Do this step and remember its result": the one seam between the tool-calling loop and the
//! place its steps are kept. Locally a step just runs (the run log still records it through the
//! [`Recorder`](super::Recorder)); a durable engine journals each step, so a run resumed on
//! another worker gets a completed step's result back without running it again.

pub(crate) mod approvals;
pub(crate) mod nested_steps;

use super::report::RunErrorKind;
use serde_json::Value;
use std::any::Any;
use std::future::Future;
use std::pin::Pin;

/// The work of one step: a model request or a tool call, and its result. `'static` because a
/// durable engine may hold it beyond the loop's borrows.
pub type StepWork = Pin<Box<dyn Future<Output = Result<StepValue, RunErrorKind>> + Send + 'static>>;

/// A step's result: as the work made it, or as JSON (what a journal keeps and gives back on a
/// replay). The local mode hands the typed value straight back: no JSON round trip per step.
pub enum StepValue {
    /// The value the work returned, read back by the loop as the same type.
    Typed(Box<dyn Journaled>),
    /// The value as JSON.
    Json(Value),
}

impl StepValue {
    /// The value as a journal keeps it.
    pub fn into_json(self) -> Result<Value, RunErrorKind> {
        match self {
            StepValue::Json(v) => Ok(v),
            StepValue::Typed(t) => t
                .to_json()
                .map_err(|e| RunErrorKind::Journal(format!("a step result is not JSON: {e}"))),
        }
    }
}

impl std::fmt::Debug for StepValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StepValue::Typed(_) => f.write_str("Typed(..)"),
            StepValue::Json(v) => f.debug_tuple("Json").field(v).finish(),
        }
    }
}

/// A typed step result: JSON on demand (for a journal), or itself again (for the loop).
pub trait Journaled: Send {
    /// The value as JSON.
    fn to_json(&self) -> Result<Value, serde_json::Error>;
    /// The value, to be downcast to its type.
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

impl<T: serde::Serialize + Send + 'static> Journaled for T {
    fn to_json(&self) -> Result<Value, serde_json::Error> {
        serde_json::to_value(self)
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// A step as the loop awaits it.
pub type StepFuture<'a> = Pin<Box<dyn Future<Output = Result<Recalled, RunErrorKind>> + Send + 'a>>;

/// A step's result, and whether it came from the journal instead of running here.
#[derive(Debug)]
pub struct Recalled {
    /// What the work returned (now or in an earlier attempt).
    pub value: StepValue,
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

    /// True when steps outlive the attempt (a durable journal): then the calls a code-mode
    /// program makes are journaled one by one too, so a resumed program does not repeat them.
    fn keeps_steps(&self) -> bool {
        false
    }

    /// True when the journal waits for approvals itself ([`StepJournal::approval`]): then the
    /// approvals a call needs are asked before its step, each as a durable promise.
    fn waits_for_approvals(&self) -> bool {
        false
    }

    /// Waits for a person's decision on `question` (about `label`: a capability, or
    /// `policy:NAME`) without holding the run's worker, surviving a restart of it. Only called
    /// where [`StepJournal::waits_for_approvals`] is true.
    fn approval<'a>(&'a self, label: String, question: String) -> ApprovalFuture<'a> {
        let _ = (label, question);
        Box::pin(std::future::ready(Ok(Decided::Denied(
            "this run cannot wait for approvals".into(),
        ))))
    }

    /// Moves the messages a person added through the journal's own store into `steering`
    /// (a durable run's come through its workflow, each read journaled, so a replay moves the
    /// same ones at the same place). The local journal has none: `POST /v1/runs/{id}/input`
    /// adds to the run's [`Steering`](crate::steer::Steering) itself.
    fn gather_steering<'a>(&'a self, steering: &'a crate::steer::Steering) -> GatherFuture<'a> {
        let _ = steering;
        Box::pin(std::future::ready(Ok(())))
    }
}

/// [`StepJournal::gather_steering`] as the loop awaits it.
pub type GatherFuture<'a> = Pin<Box<dyn Future<Output = Result<(), RunErrorKind>> + Send + 'a>>;

/// What a person decided about an approval.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Decided {
    /// Go ahead.
    Approved,
    /// Refused, with the reason (empty: none given).
    Denied(String),
}

/// An approval as the loop awaits it.
pub type ApprovalFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Decided, RunErrorKind>> + Send + 'a>>;

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

/// The step name of nested call `index` (from 1) of the call whose step is `parent`.
pub fn nested_step(parent: &str, index: u32) -> String {
    format!("{parent}/{index}")
}

/// The idempotency key a tool call sees as `ctx.idempotency_key`: the same on every retry of
/// that step, on any worker, as long as the run id is (a durable run's id is its invocation's).
pub fn idempotency_key(run_id: &str, step: &str) -> String {
    format!("{run_id}/{step}")
}

/// Reads a step's value back as `T`; a mismatch means the journal was written by an
/// incompatible version of kiln.
pub fn decode<T: serde::de::DeserializeOwned + 'static>(
    step: &str,
    value: StepValue,
) -> Result<T, RunErrorKind> {
    let unreadable =
        |e: String| RunErrorKind::Journal(format!("step {step}: unreadable result: {e}"));
    match value {
        StepValue::Typed(t) => match t.into_any().downcast::<T>() {
            Ok(t) => Ok(*t),
            Err(_) => Err(unreadable("not the type this step returns".into())),
        },
        StepValue::Json(v) => serde_json::from_value(v).map_err(|e| unreadable(e.to_string())),
    }
}
