//! One round's tool calls: run concurrently (bounded, exclusive tools alone) and in call
//! order, each as one journaled step (and, in a durable run, a code-mode program's own calls
//! as steps of their own first, and the call's approvals waited for before its step).

pub(crate) mod notes;

use super::journal::{self, StepJournal, StepValue};
use super::report::RunErrorKind;
use kiln_core::context::CallContext;
use kiln_core::tool::{FailureKind, Tool, ToolOutcome};
use kiln_providers::{CallArgs, ToolCall};
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{RwLock, Semaphore};

/// What one round's tool calls share.
pub(super) struct RoundContext<'a> {
    pub(super) journal: &'a dyn StepJournal,
    pub(super) round: u32,
    pub(super) offered: &'a [Arc<kiln_core::tool::Tool>],
    pub(super) ctx: &'a CallContext,
    pub(super) exclusive: &'a Arc<RwLock<()>>,
    pub(super) max_parallel: usize,
    /// Who hears the calls' progress and events as they come.
    pub(super) observer: Option<crate::Observer>,
}

/// One tool call as its step remembers it: the outcome, which version of the tool ran it and
/// the run's state after it.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Executed {
    pub(super) outcome: ToolOutcome,
    pub(super) version: String,
    /// The calls it made (a code-mode program's), in order.
    #[serde(default)]
    pub(super) nested: Vec<kiln_core::context::NestedCall>,
    #[serde(default)]
    pub(super) state: Value,
    /// What the call told its caller while it ran (bounded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) notes: Vec<kiln_core::context::call_events::ToolNote>,
}

/// Runs one round's calls concurrently (bounded), exclusive tools alone, results in call order;
/// each call is one journaled step (a journal may run them one at a time). In a durable run, a
/// round with a code-mode program, or any round where approvals are waited for, runs its calls
/// one after another: a replay must meet every step and promise in the order it was journaled.
pub(super) async fn execute_round(
    calls: &[ToolCall],
    round: &RoundContext<'_>,
) -> Result<Vec<Executed>, RunErrorKind> {
    let permits = Arc::new(Semaphore::new(round.max_parallel.max(1)));
    // A journal that waits for approvals between steps meets them in call order only when
    // the calls go one after another (it runs its steps one at a time anyway).
    let in_order = round.journal.waits_for_approvals()
        || (round.journal.keeps_steps() && calls.iter().any(|c| records_nested(round.offered, c)));
    if in_order {
        let mut executed = Vec::with_capacity(calls.len());
        for call in calls {
            executed.push(step_call(call, round, permits.clone(), false).await?);
        }
        return Ok(executed);
    }
    // A lone call runs in place; several go to the blocking pool so they overlap.
    let alone = calls.len() == 1;
    let futures = calls
        .iter()
        .map(|call| step_call(call, round, permits.clone(), alone));
    futures_util::future::join_all(futures)
        .await
        .into_iter()
        .collect()
}

/// Whether `call` is to a tool that makes calls of its own (a code-mode program).
fn records_nested(offered: &[Arc<Tool>], call: &ToolCall) -> bool {
    offered
        .iter()
        .any(|t| t.name == call.name && t.nested_log().is_some())
}

/// One call as its journaled step (its nested calls journaled as steps of their own first,
/// where the journal keeps steps).
async fn step_call(
    call: &ToolCall,
    round: &RoundContext<'_>,
    permits: Arc<Semaphore>,
    alone: bool,
) -> Result<Executed, RunErrorKind> {
    let step = journal::tool_step(round.round, &call.id);
    let mut ctx = round.ctx.clone();
    ctx.who.idempotency_key = Some(journal::idempotency_key(&ctx.who.run_id, &step));
    ctx.who.call_id = Some(call.id.clone());
    let notes = Arc::new(notes::CallNotes::new(
        round.round,
        &call.id,
        &call.name,
        round.observer.clone(),
        round.ctx.run.events.clone(),
    ));
    let events = Arc::new(kiln_core::context::call_events::CallEvents::new(
        notes.clone(),
    ));
    ctx.run.events = Some(events.clone());
    let heard = Heard { notes, events };
    if round.journal.waits_for_approvals()
        && let (Some(tool), kiln_providers::CallArgs::Parsed(args)) = (
            round.offered.iter().find(|t| t.name == call.name),
            &call.args,
        )
    {
        let questions = crate::journal::approvals::questions(tool, args, &ctx);
        if !questions.is_empty() {
            ctx.approval.approver =
                Some(crate::journal::approvals::decide(round.journal, questions).await?);
        }
    }
    let state = round.ctx.run.state.clone();
    let exclusive = round.exclusive.clone();
    let nested = round.journal.keeps_steps() && records_nested(round.offered, call);
    let requests = nested.then(|| {
        let (bridge, requests) = crate::journal::nested_steps::Bridge::new(step.clone());
        ctx.run.steps = Some(Arc::new(bridge));
        requests
    });
    let in_place = alone && !nested;
    let work = execute_call(
        call.clone(),
        round.offered,
        ctx,
        permits,
        exclusive,
        in_place,
        heard,
    );
    let recalled = match requests {
        Some(requests) => {
            let value =
                crate::journal::nested_steps::serve(round.journal, work, requests, state.clone())
                    .await?;
            let ready: journal::StepWork = Box::pin(std::future::ready(Ok(value)));
            round.journal.step(step.clone(), ready).await?
        }
        None => round.journal.step(step.clone(), work).await?,
    };
    let mut executed = journal::decode::<Executed>(&step, recalled.value)?;
    if recalled.replayed
        && let Ok(mut s) = state.lock()
    {
        // The call's effect on ctx.state is restored before the next step runs.
        *s = std::mem::take(&mut executed.state);
    }
    Ok(executed)
}

/// Who hears one call's progress and events, and the events it sends them through.
struct Heard {
    notes: Arc<notes::CallNotes>,
    events: Arc<kiln_core::context::call_events::CallEvents>,
}

impl Heard {
    /// The call is over: what waited past the rate is passed on, and the notes kept.
    fn kept(&self) -> Vec<kiln_core::context::call_events::ToolNote> {
        self.events.flush();
        self.notes.kept()
    }
}

/// The work of one tool call's step.
fn execute_call(
    call: ToolCall,
    offered: &[Arc<kiln_core::tool::Tool>],
    ctx: CallContext,
    permits: Arc<Semaphore>,
    exclusive: Arc<RwLock<()>>,
    alone: bool,
    heard: Heard,
) -> journal::StepWork {
    let tool = offered.iter().find(|t| t.name == call.name).cloned();
    // The list of offered tools is only spelled out for a call to an unknown one.
    let available = tool.is_none().then(|| {
        let names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
        if names.is_empty() {
            "(none)".to_string()
        } else {
            names.join(", ")
        }
    });
    Box::pin(async move {
        let started = Instant::now();
        let version = tool.as_ref().map(|t| t.version().to_string());
        let state = ctx.run.state.clone();
        let mut ctx = ctx;
        let nested = tool.as_ref().and_then(|t| t.nested_log());
        ctx.run.nested = nested.clone();
        let outcome = match (tool, &call.args) {
            (None, _) => {
                let list = available.unwrap_or_default();
                let msg = format!("Unknown tool: {}. Available tools: {list}", call.name);
                ToolOutcome::failed(
                    kiln_core::tool::ToolFailure::visible(FailureKind::UnknownTool, msg),
                    started,
                )
            }
            (Some(_), CallArgs::Invalid { raw, error }) => {
                let msg = format!(
                    "Invalid arguments for tool \"{}\": not valid JSON ({error}): {}",
                    call.name,
                    kiln_providers::truncate(raw, 200)
                );
                ToolOutcome::failed(
                    kiln_core::tool::ToolFailure::visible(FailureKind::InvalidArguments, msg),
                    started,
                )
            }
            (Some(tool), CallArgs::Parsed(args)) => {
                let _permit = permits.acquire_owned().await.ok();
                let _lock = if tool.exclusive {
                    Err(exclusive.write().await)
                } else {
                    Ok(exclusive.read().await)
                };
                if alone {
                    tool.execute_in_place(Value::clone(args), ctx).await
                } else {
                    tool.execute_async(Value::clone(args), ctx).await
                }
            }
        };
        Ok(StepValue::Typed(Box::new(Executed {
            outcome,
            version: version.unwrap_or_default(),
            nested: nested
                .map(|n| std::mem::take(&mut *n.lock().unwrap_or_else(|e| e.into_inner())))
                .unwrap_or_default(),
            state: state.lock().map(|s| s.clone()).unwrap_or(Value::Null),
            notes: heard.kept(),
        })))
    })
}
