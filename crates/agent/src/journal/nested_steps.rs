//! A code-mode program's calls as steps of a durable run's journal.
//!
//! The program runs on a blocking thread and makes its calls one after another, waiting for
//! each; the journal is async and borrowed by the loop. So each call is handed over to the
//! loop's side, journaled there (run now, or recalled when a resumed attempt runs the program
//! again from the top) and its outcome handed back to the waiting program.

use crate::journal::{self, StepJournal, StepValue, StepWork};
use crate::report::RunErrorKind;
use kiln_core::context::{NestedSteps, NestedWork};
use kiln_core::tool::{FailureKind, ToolFailure, ToolOutcome};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::mpsc;

/// One nested call waiting to be journaled, and where its outcome goes.
pub(crate) struct Request {
    name: String,
    work: NestedWork,
    reply: std::sync::mpsc::SyncSender<Result<ToolOutcome, String>>,
}

/// The program's side: sends each nested call to [`serve`] and waits for its outcome.
pub(crate) struct Bridge {
    requests: mpsc::UnboundedSender<Request>,
    parent: String,
}

impl Bridge {
    /// A bridge for the calls of the call whose step is `parent`, and the receiving end
    /// [`serve`] reads.
    pub(crate) fn new(parent: String) -> (Bridge, mpsc::UnboundedReceiver<Request>) {
        let (requests, received) = mpsc::unbounded_channel();
        (Bridge { requests, parent }, received)
    }
}

const RUN_ENDED: &str = "the run ended before this call could be journaled";

impl NestedSteps for Bridge {
    fn step(&self, index: u32, work: NestedWork) -> Result<ToolOutcome, String> {
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        let name = journal::nested_step(&self.parent, index);
        self.requests
            .send(Request { name, work, reply })
            .map_err(|_| RUN_ENDED.to_string())?;
        answer.recv().map_err(|_| RUN_ENDED.to_string())?
    }
}

/// What a nested call's step keeps: its outcome and the run's state after it.
#[derive(serde::Serialize, serde::Deserialize)]
struct NestedStep {
    outcome: ToolOutcome,
    #[serde(default)]
    state: Value,
}

/// Runs `work` (the parent call's, whose context holds the [`Bridge`]) while journaling the
/// nested calls it sends, one at a time in the order they come; returns the parent's value.
/// A journal failure fails the program's call and then the run.
pub(crate) async fn serve(
    journal: &dyn StepJournal,
    mut work: StepWork,
    mut requests: mpsc::UnboundedReceiver<Request>,
    state: Arc<Mutex<Value>>,
) -> Result<StepValue, RunErrorKind> {
    let mut failed = None;
    loop {
        tokio::select! {
            biased;
            done = &mut work => return match failed {
                Some(kind) => Err(kind),
                None => done,
            },
            Some(request) = requests.recv() => {
                let Request { name, work, reply } = request;
                let answer = match failed {
                    Some(_) => Err(RUN_ENDED.to_string()),
                    None => nested_step(journal, name, work, &state).await.map_err(|kind| {
                        let said = kind.to_string();
                        failed = Some(kind);
                        said
                    }),
                };
                let _ = reply.send(answer);
            }
        }
    }
}

/// One nested call as a journaled step; a recalled one restores the state it left.
async fn nested_step(
    journal: &dyn StepJournal,
    name: String,
    work: NestedWork,
    state: &Arc<Mutex<Value>>,
) -> Result<ToolOutcome, RunErrorKind> {
    let after = state.clone();
    let step: StepWork = Box::pin(async move {
        let started = Instant::now();
        let outcome = tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
            ToolOutcome::failed(
                ToolFailure::sanitized(FailureKind::Runtime, format!("handler task failed: {e}")),
                started,
            )
        });
        let state = after.lock().map(|s| s.clone()).unwrap_or(Value::Null);
        Ok(StepValue::Typed(Box::new(NestedStep { outcome, state })))
    });
    let recalled = journal.step(name.clone(), step).await?;
    let mut step: NestedStep = journal::decode(&name, recalled.value)?;
    if recalled.replayed
        && let Ok(mut s) = state.lock()
    {
        *s = std::mem::take(&mut step.state);
    }
    Ok(step.outcome)
}
