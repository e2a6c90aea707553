//! Steering a durable run (`POST /v1/runs/{id}/input` under `--restate-ingress`): a person's
//! message is a durable promise of the run's `KilnRun` workflow, `steer-0`, `steer-1`, ... in
//! the order they came. The `input` handler resolves the first free one; the run, before each
//! model request (and before it ends on an answer), peeks the next one it has not taken, and
//! each peek is in its journal, so a replay on any worker takes the same messages at the same
//! place. When the run ends it resolves its next free promise as closed: a later message finds
//! it and is refused.

use super::inbox::{InboxClient, REFUSED_ENDED, REFUSED_FULL, message_text};
use kiln_agent::steer::Steering;
use restate_sdk::prelude::*;
use serde_json::{Value, json};

/// The promises of a run's messages: at most this many messages reach one durable run.
pub static PROMISES: [&str; 16] = [
    "steer-0", "steer-1", "steer-2", "steer-3", "steer-4", "steer-5", "steer-6", "steer-7",
    "steer-8", "steer-9", "steer-10", "steer-11", "steer-12", "steer-13", "steer-14", "steer-15",
];

// A durable run takes as many messages in all as a local one holds waiting at once.
const _: () = assert!(PROMISES.len() == kiln_agent::steer::MAX_QUEUED);

/// State key of a `KilnRun` workflow: how many messages the run has taken.
pub const TAKEN: &str = "steered";
/// State key of a `KilnRun` workflow: set when the run has ended.
pub const ENDED: &str = "ended";

/// A context whose handler may take a person's messages: a `KilnRun` workflow's (its
/// promises) or a `KilnSession` turn's (its `KilnInbox`).
pub trait SteerSource {
    /// Message promise `k`: `None` while unresolved.
    fn peek_message(
        &self,
        k: usize,
    ) -> impl std::future::Future<Output = Result<Option<Value>, TerminalError>> + Send;
}

impl SteerSource for WorkflowContext<'_> {
    async fn peek_message(&self, k: usize) -> Result<Option<Value>, TerminalError> {
        let Some(key) = PROMISES.get(k).copied() else {
            return Ok(None);
        };
        Ok(self
            .peek_promise::<Json<Value>>(key)
            .await?
            .map(Json::into_inner))
    }
}

/// A session's turn: its messages wait in its `KilnInbox` (see [`crate::inbox`]), asked
/// through a call whose answer is journaled.
impl SteerSource for ObjectContext<'_> {
    async fn peek_message(&self, k: usize) -> Result<Option<Value>, TerminalError> {
        let inbox = self.invocation_id().to_string();
        let Json(answer) = self
            .object_client::<InboxClient>(inbox)
            .message(Json(json!({"k": k})))
            .call()
            .await?;
        Ok((!answer.is_null()).then_some(answer))
    }
}

/// Moves the messages from promise `next` on into `steering` while it has room; how many
/// promises it has taken now.
pub async fn gather<C: SteerSource>(
    ctx: &C,
    mut next: usize,
    steering: &Steering,
) -> Result<usize, TerminalError> {
    while next < PROMISES.len() && steering.has_room() {
        let Some(message) = ctx.peek_message(next).await? else {
            break;
        };
        let Some(text) = message["text"].as_str() else {
            // Closed: the run is ending.
            break;
        };
        // A message the `input` handler let in; one too long is not carried (it checked).
        let _ = steering.add(text);
        next += 1;
    }
    Ok(next)
}

/// Ends the run's steering: its next free promise from `next` on is resolved as closed (a
/// message that came after the run's last look is dropped, as a local run drops it).
pub async fn close(ctx: &WorkflowContext<'_>, next: usize) {
    ctx.set(ENDED, true);
    for key in PROMISES.iter().copied().skip(next) {
        ctx.resolve_promise(key, Json(json!({"closed": true})));
        match ctx.peek_promise::<Json<Value>>(key).await {
            Ok(Some(Json(v))) if v["text"].is_string() => continue,
            _ => break,
        }
    }
}

/// The `input` handler's work: resolves the first free message promise with `text` (as this
/// invocation's, `by`), or refuses it: too long (400), the run has ended (409), too many
/// messages (429). Answers how many of the run's messages wait.
pub async fn add(ctx: &SharedWorkflowContext<'_>, input: Value) -> Result<Value, TerminalError> {
    let text = message_text(&input)?;
    let ended = || {
        TerminalError::new_with_code(REFUSED_ENDED, "the run has ended: nothing more reaches it")
    };
    if ctx.get::<bool>(ENDED).await?.unwrap_or(false) {
        return Err(ended());
    }
    let me = ctx.invocation_id().to_string();
    for (k, key) in PROMISES.iter().copied().enumerate() {
        let mut held = ctx
            .peek_promise::<Json<Value>>(key)
            .await?
            .map(Json::into_inner);
        if held.is_none() {
            ctx.resolve_promise(key, Json(json!({"text": text, "by": me})));
            // Resolving keeps the first value: whether it is this one, the promise says.
            held = ctx
                .peek_promise::<Json<Value>>(key)
                .await?
                .map(Json::into_inner);
        }
        match held {
            Some(v) if v["by"] == me.as_str() => {
                let taken = ctx.get::<u64>(TAKEN).await?.unwrap_or(0);
                let waiting = (k as u64 + 1).saturating_sub(taken);
                return Ok(json!({"waiting": waiting}));
            }
            Some(v) if v["text"].is_string() => continue,
            _ => return Err(ended()),
        }
    }
    Err(TerminalError::new_with_code(
        REFUSED_FULL,
        format!("a durable run takes at most {} messages", PROMISES.len()),
    ))
}
