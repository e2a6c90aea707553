//! The Restate-backed [`StepJournal`]: each step is one `ctx.run`, so its result is in the
//! invocation's journal and a retry on any worker gets it back without running it again.

use kiln_agent::RunErrorKind;
use kiln_agent::journal::{Recalled, StepFuture, StepJournal, StepValue, StepWork};
use restate_sdk::prelude::*;
use std::sync::{Arc, Mutex};

/// The error code a failed step is journaled with (kept so a replay can tell it apart).
const STEP_FAILED: u16 = 500;
/// Restate's code for a cancelled invocation.
pub const CANCELLED: u16 = 409;
/// The code a step that hit the run's deadline is journaled with.
pub const DEADLINE: u16 = 504;

/// Journals steps through a Restate context. Steps run one at a time, in the order the loop asks
/// for them: Restate replays a journal by order and name, so concurrent `ctx.run`s could
/// interleave differently on a retry.
pub struct RestateJournal<'c, C> {
    ctx: &'c C,
    one_at_a_time: tokio::sync::Mutex<()>,
}

impl<'c, C> RestateJournal<'c, C> {
    /// A journal writing to `ctx`'s invocation.
    pub fn new(ctx: &'c C) -> Self {
        RestateJournal {
            ctx,
            one_at_a_time: tokio::sync::Mutex::new(()),
        }
    }
}

/// What the step's work did in this attempt: nothing (it was recalled), or its result.
type Ran = Arc<Mutex<Option<Result<(), RunErrorKind>>>>;

/// The terminal error a failed step is journaled as.
fn journaled_failure(kind: &RunErrorKind) -> TerminalError {
    let code = match kind {
        RunErrorKind::Cancelled => CANCELLED,
        RunErrorKind::Deadline => DEADLINE,
        _ => STEP_FAILED,
    };
    TerminalError::new_with_code(code, kind.to_string())
}

/// A failure read back from the journal (or Restate's cancellation) as the loop's error.
fn recalled_failure(step: &str, e: &TerminalError) -> RunErrorKind {
    match e.code() {
        CANCELLED => RunErrorKind::Cancelled,
        DEADLINE => RunErrorKind::Deadline,
        _ => RunErrorKind::Journal(format!("step {step} failed: {}", e.message())),
    }
}

// `ctx.run` is a trait default method whose future is only `Send` on the concrete context
// types, so the impl is written per context type (the ones whose handlers run agents).
macro_rules! restate_journal_for {
    ($($ctx:ident),*) => {$(
        impl<'c, 'ctx> StepJournal for RestateJournal<'c, $ctx<'ctx>> {
            fn step<'a>(&'a self, name: String, work: StepWork) -> StepFuture<'a> {
                Box::pin(async move {
                    let _turn = self.one_at_a_time.lock().await;
                    let ran: Ran = Arc::new(Mutex::new(None));
                    let slot = ran.clone();
                    let result = self
                        .ctx
                        .run(move || async move {
                            let result = work.await.and_then(StepValue::into_json);
                            let journaled = match &result {
                                Ok(v) => Ok(Json(v.clone())),
                                Err(kind) => Err(journaled_failure(kind).into()),
                            };
                            if let Ok(mut s) = slot.lock() {
                                *s = Some(result.map(|_| ()));
                            }
                            journaled
                        })
                        .name(name.clone())
                        .await;
                    let live = ran.lock().ok().and_then(|mut s| s.take());
                    match (result, live) {
                        (Ok(Json(value)), live) => Ok(Recalled {
                            value: StepValue::Json(value),
                            replayed: live.is_none(),
                        }),
                        // The work failed here: its own error, not its journaled form.
                        (Err(_), Some(Err(kind))) => Err(kind),
                        (Err(e), _) => Err(recalled_failure(&name, &e)),
                    }
                })
            }

            fn keeps_steps(&self) -> bool {
                true
            }
        }
    )*};
}

restate_journal_for!(ObjectContext, WorkflowContext);
