//! `KilnInbox`: the messages a person adds to a session's turn while it runs (`POST
//! /v1/runs/{id}/input` under `--restate-ingress`). A turn is a `KilnSession` Virtual Object's
//! handler, which has no durable promises, so its messages wait in an object of their own,
//! keyed by the turn's invocation id: `input` (exclusive) keeps the next message, `message`
//! (shared) answers message `k` or null, and the turn asks for the next one it has not taken
//! before each model request — each answer in its journal, so a replay takes the same
//! messages at the same place. `close`, as the turn ends, refuses later messages.

use kiln_agent::steer::{MAX_MESSAGE_BYTES, MAX_QUEUED};
use restate_sdk::prelude::*;
use serde_json::{Value, json};
use std::time::Duration;

/// State keys: how many messages came, each message (`message-K`), and whether the turn ended.
const COUNT: &str = "count";
const ENDED: &str = "ended";

/// Code of the refusal of a message to a run (or turn) that has ended.
pub const REFUSED_ENDED: u16 = 409;
/// Code of the refusal of a message past the most a run takes.
pub const REFUSED_FULL: u16 = 429;

/// How long an ended turn's messages are kept before the object forgets them.
const KEPT: Duration = Duration::from_secs(24 * 60 * 60);

/// The message of an `input` (`{"text"}`), or its refusal (400): 1 to 32 KiB, not blank.
pub fn message_text(input: &Value) -> Result<String, TerminalError> {
    match input["text"].as_str() {
        Some(t) if !t.trim().is_empty() && t.len() <= MAX_MESSAGE_BYTES => Ok(t.to_string()),
        _ => Err(TerminalError::new_with_code(
            400,
            format!("text must be the message to add, 1 to {MAX_MESSAGE_BYTES} bytes"),
        )),
    }
}

fn message_key(k: u64) -> String {
    format!("message-{k}")
}

/// The messages of session turns, one object per turn (its invocation id).
pub struct Inbox;

#[restate_sdk::object(name = "KilnInbox")]
impl Inbox {
    /// Keeps `{"text"}` as the turn's next message: `{"waiting": n}` (the messages so far), or
    /// refused: too long or empty (400), the turn has ended (409), too many messages (429).
    #[handler]
    async fn input(
        &self,
        ctx: ObjectContext<'_>,
        input: Json<Value>,
    ) -> HandlerResult<Json<Value>> {
        let text = message_text(&input.into_inner())?;
        if ctx.get::<bool>(ENDED).await?.unwrap_or(false) {
            let ended = "the run has ended: nothing more reaches it";
            return Err(TerminalError::new_with_code(REFUSED_ENDED, ended).into());
        }
        let count = ctx.get::<u64>(COUNT).await?.unwrap_or(0);
        if count >= MAX_QUEUED as u64 {
            let full = format!("a durable run takes at most {MAX_QUEUED} messages");
            return Err(TerminalError::new_with_code(REFUSED_FULL, full).into());
        }
        ctx.set(&message_key(count), text);
        ctx.set(COUNT, count + 1);
        Ok(Json(json!({"waiting": count + 1})))
    }

    /// Message `k` (`{"k": n}`) as `{"text"}`, or null while there is none.
    #[handler]
    async fn message(
        &self,
        ctx: SharedObjectContext<'_>,
        input: Json<Value>,
    ) -> HandlerResult<Json<Value>> {
        let k = input.into_inner()["k"].as_u64().unwrap_or(u64::MAX);
        let text = ctx.get::<String>(&message_key(k)).await?;
        Ok(Json(text.map_or(Value::Null, |t| json!({"text": t}))))
    }

    /// The turn has ended: later messages are refused; the object forgets itself a day later.
    #[handler]
    async fn close(&self, ctx: ObjectContext<'_>) -> HandlerResult<()> {
        ctx.set(ENDED, true);
        ctx.object_client::<InboxClient>(ctx.key())
            .forget()
            .send_after(KEPT);
        Ok(())
    }

    /// Forgets the turn's messages.
    #[handler]
    async fn forget(&self, ctx: ObjectContext<'_>) -> HandlerResult<()> {
        ctx.clear_all();
        Ok(())
    }
}
