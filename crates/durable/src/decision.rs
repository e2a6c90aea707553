//! `KilnApproval`: the one writer of a durable approval's decision. A Restate awakeable takes
//! any number of resolutions and keeps the first, so deciding by resolving it directly cannot
//! tell a person whether their decision counted. Instead every decision (a person's, through
//! any worker, the deadline's, the run's cancellation) goes through this Virtual Object, keyed
//! by run and approval: Restate runs its exclusive handlers one at a time per key, the first
//! decision is recorded and resolves the awakeable, and every later one is answered with the
//! decision that won. A decision after the deadline records the deadline's denial, whether or
//! not a worker was running the run when the deadline passed.

use kiln_agent::journal::Decided;
use restate_sdk::prelude::*;
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// State keys: the awakeable the run waits on, the deadline (ms since the epoch), the wait it
/// was opened with (ms), and the decision once made.
const AWAKEABLE: &str = "awakeable";
const EXPIRES_AT: &str = "expires_at";
const TIMEOUT_MS: &str = "timeout_ms";
const DECISION: &str = "decision";

/// How long a decision is remembered after the deadline (a late decision is answered with it
/// meanwhile; after that the approval is unknown).
const KEPT: Duration = Duration::from_secs(24 * 60 * 60);

/// The input of `open`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Open {
    awakeable: String,
    timeout_ms: u64,
}

/// Why the run closes an approval nobody decided.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Closed {
    /// Its deadline passed.
    Deadline,
    /// The run was cancelled while it waited.
    Cancelled,
}

/// The decision as it is recorded and answered: `{"decision": "approve"}` or
/// `{"decision": "deny", "reason": "..."}` (anything but an approval denies).
pub fn normalized(v: &Value) -> Value {
    match v["decision"].as_str() {
        Some("approve") => json!({"decision": "approve"}),
        _ => json!({"decision": "deny", "reason": v["reason"].as_str().unwrap_or_default()}),
    }
}

/// A recorded decision as the run's loop takes it.
pub fn decided(v: &Value) -> Decided {
    match v["decision"].as_str() {
        Some("approve") => Decided::Approved,
        _ => Decided::Denied(v["reason"].as_str().unwrap_or_default().to_string()),
    }
}

/// The denial of an approval closed for `why` after waiting `timeout_ms`.
fn denial(why: Closed, timeout_ms: u64) -> Value {
    let reason = match why {
        Closed::Deadline => format!(
            "nobody approved it within {} s",
            Duration::from_millis(timeout_ms).as_secs_f64()
        ),
        Closed::Cancelled => "the run was cancelled".to_string(),
    };
    json!({"decision": "deny", "reason": reason})
}

/// The answer of `decide` and `close`: whether the decision asked for was the one taken, and
/// the decision that holds (`null`: no such approval).
fn answer(taken: bool, decision: Value) -> Json<Value> {
    Json(json!({"taken": taken, "decision": decision}))
}

/// Milliseconds since the epoch, as one journaled step (the same on every replay).
async fn now(ctx: &ObjectContext<'_>) -> Result<u64, TerminalError> {
    ctx.run(|| async {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Ok(u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
    })
    .name("now")
    .await
}

/// Records `decision` and gives it to the run waiting on `awakeable`.
fn record(ctx: &ObjectContext<'_>, awakeable: &str, decision: &Value) {
    ctx.set(DECISION, Json(decision.clone()));
    ctx.resolve_awakeable(awakeable, Json(decision.clone()));
}

/// The decisions of durable approvals, one object per run and approval
/// (`kiln_restate::approval_key`).
pub struct Approval;

#[restate_sdk::object(name = "KilnApproval")]
impl Approval {
    /// Opens the approval whose run waits on `awakeable`, denied `timeout_ms` from now; returns
    /// its deadline (`{"expires_at": ms since the epoch}`).
    #[handler]
    async fn open(&self, ctx: ObjectContext<'_>, input: Json<Value>) -> HandlerResult<Json<Value>> {
        let open: Open = serde_json::from_value(input.into_inner()).map_err(|e| {
            TerminalError::new_with_code(400, format!("invalid approval to open: {e}"))
        })?;
        if let Some(at) = ctx.get::<u64>(EXPIRES_AT).await? {
            return Ok(Json(json!({"expires_at": at})));
        }
        let at = now(&ctx).await?.saturating_add(open.timeout_ms);
        ctx.set(AWAKEABLE, open.awakeable);
        ctx.set(EXPIRES_AT, at);
        ctx.set(TIMEOUT_MS, open.timeout_ms);
        let forget = Duration::from_millis(open.timeout_ms).saturating_add(KEPT);
        ctx.object_client::<ApprovalClient>(ctx.key())
            .forget()
            .send_after(forget);
        Ok(Json(json!({"expires_at": at})))
    }

    /// A decision (`{"decision": "approve"}` or `{"decision": "deny", "reason"?}`): taken if
    /// it is the first and the deadline has not passed; else the decision that holds.
    #[handler]
    async fn decide(
        &self,
        ctx: ObjectContext<'_>,
        input: Json<Value>,
    ) -> HandlerResult<Json<Value>> {
        let Some(awakeable) = ctx.get::<String>(AWAKEABLE).await? else {
            return Ok(answer(false, Value::Null));
        };
        if let Some(Json(won)) = ctx.get::<Json<Value>>(DECISION).await? {
            return Ok(answer(false, won));
        }
        let expires_at = ctx.get::<u64>(EXPIRES_AT).await?.unwrap_or_default();
        if now(&ctx).await? >= expires_at {
            let timeout = ctx.get::<u64>(TIMEOUT_MS).await?.unwrap_or_default();
            let won = denial(Closed::Deadline, timeout);
            record(&ctx, &awakeable, &won);
            return Ok(answer(false, won));
        }
        let decision = normalized(&input.into_inner());
        record(&ctx, &awakeable, &decision);
        Ok(answer(true, decision))
    }

    /// Closes an approval nobody decided (`{"why": "deadline" | "cancelled"}`): its denial is
    /// recorded unless a decision was; the decision that holds.
    #[handler]
    async fn close(
        &self,
        ctx: ObjectContext<'_>,
        input: Json<Value>,
    ) -> HandlerResult<Json<Value>> {
        let why = input.into_inner().get("why").cloned().unwrap_or_default();
        let why: Closed = serde_json::from_value(why)
            .map_err(|e| TerminalError::new_with_code(400, format!("invalid close: {e}")))?;
        let Some(awakeable) = ctx.get::<String>(AWAKEABLE).await? else {
            return Ok(answer(false, Value::Null));
        };
        if let Some(Json(won)) = ctx.get::<Json<Value>>(DECISION).await? {
            return Ok(answer(false, won));
        }
        let timeout = ctx.get::<u64>(TIMEOUT_MS).await?.unwrap_or_default();
        let won = denial(why, timeout);
        record(&ctx, &awakeable, &won);
        Ok(answer(true, won))
    }

    /// Forgets the approval (a day after its deadline).
    #[handler]
    async fn forget(&self, ctx: ObjectContext<'_>) -> HandlerResult<()> {
        ctx.clear_all();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::decision::{Closed, Decided, decided, denial, json, normalized};

    #[test]
    fn anything_but_an_approval_denies() {
        assert_eq!(
            normalized(&json!({"decision": "approve", "reason": "x"})),
            json!({"decision": "approve"})
        );
        assert_eq!(
            normalized(&json!({"decision": "maybe"})),
            json!({"decision": "deny", "reason": ""})
        );
        assert_eq!(
            decided(&json!({"decision": "deny", "reason": "no"})),
            Decided::Denied("no".into())
        );
    }

    #[test]
    fn the_deadline_denial_names_the_wait() {
        assert_eq!(
            denial(Closed::Deadline, 2000)["reason"],
            "nobody approved it within 2 s"
        );
        assert_eq!(
            denial(Closed::Deadline, 1500)["reason"],
            "nobody approved it within 1.5 s"
        );
    }
}
