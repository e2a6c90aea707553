//! The Restate-backed [`StepJournal`]: each step is one `ctx.run`, so its result is in the
//! invocation's journal and a retry on any worker gets it back without running it again.

use super::decision::{ApprovalClient, decided, normalized};
use super::steer::{TAKEN, gather};
use kiln_agent::RunErrorKind;
use kiln_agent::journal::{
    ApprovalFuture, GatherFuture, Recalled, StepFuture, StepJournal, StepValue, StepWork,
};
use kiln_agent::steer::Steering;
use kiln_restate::approval_key;
use restate_sdk::prelude::*;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The state key of the approvals a run waits for (read by the `approvals` handlers):
/// `[{id, capability, question, expires_at}]`, the deadline in ms since the epoch.
pub const APPROVALS: &str = "approvals";

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
    waiting: Waiting,
    /// The first of the run's message promises it has not taken yet (see `steer`).
    steered: Mutex<usize>,
}

/// How a run waits for approvals: how long, which run slot it gives back meanwhile, and the
/// approvals pending now.
pub struct Waiting {
    /// Nobody deciding within it denies.
    pub timeout: Duration,
    /// The run's slot on this worker and where it came from: given back while a person
    /// decides, taken again after.
    pub slot: tokio::sync::Mutex<Option<tokio::sync::OwnedSemaphorePermit>>,
    /// The worker's slots.
    pub slots: Option<kiln_host::admission::Limiter>,
    pending: Mutex<Vec<Value>>,
}

impl Waiting {
    /// Waiting up to `timeout`, holding `slot` (of `slots`) between approvals.
    pub fn new(
        timeout: Duration,
        slot: Option<tokio::sync::OwnedSemaphorePermit>,
        slots: Option<kiln_host::admission::Limiter>,
    ) -> Self {
        Waiting {
            timeout,
            slot: tokio::sync::Mutex::new(slot),
            slots,
            pending: Mutex::new(Vec::new()),
        }
    }

    fn pending(&self, change: impl FnOnce(&mut Vec<Value>)) -> Vec<Value> {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        change(&mut pending);
        pending.clone()
    }
}

impl<'c, C> RestateJournal<'c, C> {
    /// A journal writing to `ctx`'s invocation, waiting for approvals as `waiting` says.
    pub fn new(ctx: &'c C, waiting: Waiting) -> Self {
        RestateJournal {
            ctx,
            one_at_a_time: tokio::sync::Mutex::new(()),
            waiting,
            steered: Mutex::new(0),
        }
    }

    /// The first of the run's message promises it has not taken yet.
    pub fn steered(&self) -> usize {
        *self.steered.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A wait in whole milliseconds (as the approval's writer takes it).
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
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
                            let (journaled, ran) = match work.await.and_then(StepValue::into_json) {
                                Ok(v) => (Ok(Json(v)), Ok(())),
                                Err(kind) => (Err(journaled_failure(&kind).into()), Err(kind)),
                            };
                            if let Ok(mut s) = slot.lock() {
                                *s = Some(ran);
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

            fn waits_for_approvals(&self) -> bool {
                true
            }

            fn gather_steering<'a>(&'a self, steering: &'a Steering) -> GatherFuture<'a> {
                Box::pin(async move {
                    let _turn = self.one_at_a_time.lock().await;
                    let from = self.steered();
                    let next = gather(self.ctx, from, steering)
                        .await
                        .map_err(|e| recalled_failure("steer", &e))?;
                    if next > from {
                        *self.steered.lock().unwrap_or_else(|e| e.into_inner()) = next;
                        self.ctx.set(TAKEN, next as u64);
                    }
                    Ok(())
                })
            }

            fn approval<'a>(&'a self, label: String, question: String) -> ApprovalFuture<'a> {
                Box::pin(async move {
                    let _turn = self.one_at_a_time.lock().await;
                    let waiting = &self.waiting;
                    let (id, promise) = self.ctx.awakeable::<Json<Value>>();
                    let timeout = waiting.timeout;
                    // Every decision goes through the approval's one writer (see `decision`).
                    let key = approval_key(&self.ctx.invocation_id().to_string(), &id);
                    let writer = || self.ctx.object_client::<ApprovalClient>(key.clone());
                    let open = json!({"awakeable": id, "timeout_ms": millis(timeout)});
                    let Json(opened) = writer()
                        .open(Json(open))
                        .call()
                        .await
                        .map_err(|e| recalled_failure("approval", &e))?;
                    let asked = json!({
                        "id": id, "capability": label, "question": question,
                        "expires_at": opened["expires_at"],
                    });
                    let pending = waiting.pending(|p| p.push(asked));
                    self.ctx.set(APPROVALS, Json(Value::Array(pending)));
                    // A person may take hours: the worker's slot is free meanwhile.
                    waiting.slot.lock().await.take();
                    let woke = restate_sdk::select! {
                        answer = promise => Ok(Some(match answer {
                            Ok(Json(v)) => normalized(&v),
                            Err(e) => json!({"decision": "deny", "reason": e.message()}),
                        })),
                        _ = self.ctx.sleep(timeout) => Ok(None),
                        on_cancel => Err(TerminalError::new_with_code(CANCELLED, "cancelled")),
                    };
                    // The decision the writer holds is the one the run takes, whatever woke it.
                    let held = match woke {
                        Ok(Some(proposal)) => writer().decide(Json(proposal)).call().await,
                        Ok(None) => writer().close(Json(json!({"why": "deadline"}))).call().await,
                        // Closed before the run ends, so no later decision is taken.
                        Err(e) => match writer().close(Json(json!({"why": "cancelled"}))).call().await {
                            Ok(_) => Err(e),
                            Err(closing) => Err(closing),
                        },
                    };
                    let pending = waiting.pending(|p| p.retain(|a| a["id"] != id.as_str()));
                    if pending.is_empty() {
                        self.ctx.clear(APPROVALS);
                    } else {
                        self.ctx.set(APPROVALS, Json(Value::Array(pending)));
                    }
                    let Json(held) = held.map_err(|e| recalled_failure("approval", &e))?;
                    let decision = decided(&held["decision"]);
                    if let Some(slots) = &waiting.slots {
                        // The run goes on once a slot is free again (the queue may be full).
                        let slot = loop {
                            match slots.acquire().await {
                                Ok(slot) => break slot,
                                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
                            }
                        };
                        *waiting.slot.lock().await = Some(slot);
                    }
                    Ok(decision)
                })
            }
        }
    )*};
}

restate_journal_for!(ObjectContext, WorkflowContext);
