//! The other servers sharing this server's PostgreSQL database (issue 62): an approval asked
//! here may be decided through any of them, and the run waiting here hears the decision at
//! once; the console's live feed carries their runs and approvals as well as this server's.
//! Both ride on PostgreSQL's `NOTIFY`: decisions on `kiln_approvals` (sent by the claim that
//! won, see [`kiln_db::approvals`]), feed items on [`FEED_CHANNEL`]. A notice missed while the
//! listening connection was down is made up for by reading the waiting approvals' decisions
//! again when it is back (and each waiting call reads its own every two seconds meanwhile).

use crate::error::ApiError;
use crate::feed::{Audience, FeedItem};
use crate::state::AppState;
use crate::table::approvals::{Decision, decided_already, decision_json, decision_of};
use crate::walls::auth::Principal;
use kiln_db::Db;
use kiln_db::approvals::{APPROVALS_CHANNEL, Claim};
use kiln_db::listen::{MAX_PAYLOAD, Notice};
use serde_json::{Value, json};
use std::sync::{Arc, Weak};
use tokio::sync::mpsc;

/// The channel the console's feed items go to the other servers on.
pub const FEED_CHANNEL: &str = "kiln_feed";

/// Hearing the other servers; stops when dropped.
pub struct Peers(Vec<tokio::task::JoinHandle<()>>);

impl Drop for Peers {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// Starts hearing the other servers and telling them this one's feed, when the database is
/// shared (PostgreSQL); `None` otherwise.
pub fn start(state: &Arc<AppState>) -> Option<Peers> {
    let db = state.host.database().filter(|db| db.is_postgres())?.clone();
    let notices = db.listen(&[APPROVALS_CHANNEL, FEED_CHANNEL])?;
    // Feed items this server sends carry its tag, so it ignores its own when they come back.
    let tag = kiln_core::context::new_run_id();
    let (relay, items) = mpsc::unbounded_channel();
    state.feed.relay_to(relay);
    let hear = tokio::spawn(hear(
        Arc::downgrade(state),
        db.clone(),
        notices,
        tag.clone(),
    ));
    let tell = tokio::spawn(tell(db, items, tag));
    Some(Peers(vec![hear, tell]))
}

/// Passes what the other servers send on: decisions to the runs waiting here, feed items to
/// this server's listeners.
async fn hear(
    state: Weak<AppState>,
    db: Arc<Db>,
    mut notices: mpsc::UnboundedReceiver<Notice>,
    tag: String,
) {
    while let Some(notice) = notices.recv().await {
        let Some(state) = state.upgrade() else {
            return;
        };
        match notice {
            Notice::Listening => read_decisions_again(&state, &db).await,
            Notice::Heard { channel, payload } if channel == APPROVALS_CHANNEL => {
                if let Some((run, id)) = payload.split_once('/') {
                    decided_elsewhere(&state, &db, run, id).await;
                }
            }
            Notice::Heard { channel, payload } if channel == FEED_CHANNEL => {
                relayed(&state, &tag, &payload);
            }
            Notice::Heard { .. } => {}
        }
    }
}

/// Hands approval `id` of run `run`, when it waits here, the decision that took effect.
async fn decided_elsewhere(state: &AppState, db: &Arc<Db>, run: &str, id: &str) {
    let Some(entry) = state.runs.any(run) else {
        return;
    };
    if !entry.approvals.is_waiting(id) {
        // Decided through this server (its own notice), or ended meanwhile.
        return;
    }
    let (db, r, i) = (db.clone(), run.to_string(), id.to_string());
    let found = tokio::task::spawn_blocking(move || db.approval_decision(&r, &i)).await;
    match found {
        Ok(Ok(Some(decision))) => {
            tracing::info!(run_id = %run, approval = %id, "approval decided through another server");
            entry.approvals.deliver(id, decision_of(&decision));
        }
        Ok(Ok(None)) => {}
        Ok(Err(e)) => {
            tracing::warn!(run_id = %run, approval = %id, "cannot read a decision taken through another server: {e}")
        }
        Err(_) => {}
    }
}

/// After the listening connection was down: the decisions of every approval waiting here,
/// read again (one taken meanwhile sent a notice nobody heard).
async fn read_decisions_again(state: &AppState, db: &Arc<Db>) {
    let everyone = Principal {
        every_run: true,
        ..Principal::default()
    };
    for entry in state.runs.awaiting(&everyone) {
        for w in entry.approvals.waiting_calls() {
            decided_elsewhere(state, db, &entry.id, &w.id).await;
        }
    }
}

/// An item of another server's feed, told to this server's listeners.
fn relayed(state: &AppState, tag: &str, payload: &str) {
    let Ok(item) = serde_json::from_str::<Value>(payload) else {
        return;
    };
    if item["from"] == tag {
        return;
    }
    let event = match item["event"].as_str() {
        Some("run_started") => "run_started",
        Some("run_ended") => "run_ended",
        Some("approval_requested") => "approval_requested",
        Some("approval_decided") => "approval_decided",
        _ => return,
    };
    let actor = item["audience"]["actor"].as_str().map(str::to_string);
    let audience = match item["audience"]["to"].as_str() {
        Some("owner") => Audience::Owner(actor),
        Some("deciders") => Audience::Deciders(actor),
        // Nothing of a run goes to everyone: an item that says so is not this kiln's.
        _ => return,
    };
    state
        .feed
        .publish_heard(event, audience, item["data"].clone());
}

/// Sends this server's feed items to the other servers.
async fn tell(db: Arc<Db>, mut items: mpsc::UnboundedReceiver<Arc<FeedItem>>, tag: String) {
    while let Some(item) = items.recv().await {
        let Some(payload) = payload(&item, &tag) else {
            continue;
        };
        if let Err(e) = db.notify(FEED_CHANNEL, &payload).await {
            tracing::debug!("the other servers' consoles missed a feed item: {e}");
        }
    }
}

/// A feed item as the other servers read it; a call's arguments are left out when they would
/// not fit in a notice (the inbox lists them), and an item still too long is not sent.
fn payload(item: &FeedItem, tag: &str) -> Option<String> {
    let (to, actor) = match &item.audience {
        Audience::Owner(actor) => ("owner", actor),
        Audience::Deciders(actor) => ("deciders", actor),
        Audience::Everyone => return None,
    };
    let mut shown = json!({
        "from": tag, "event": item.event, "audience": {"to": to, "actor": actor},
        "data": item.data,
    });
    let mut text = shown.to_string();
    if text.len() > MAX_PAYLOAD && shown["data"].get("args").is_some() {
        shown["data"]["args"] = Value::Null;
        text = shown.to_string();
    }
    (text.len() <= MAX_PAYLOAD).then_some(text)
}

/// `POST /v1/runs/{id}/approvals/{approval}` for a run another server runs: the decision is
/// claimed in the shared database (one winner) and the server running it hears of it at once.
/// `None` when this server shares no database (the run is unknown here).
pub async fn decide(
    state: &AppState,
    decider: &Principal,
    (run, approval): (&str, &str),
    decision: &Decision,
) -> Option<Result<Value, ApiError>> {
    let db = state.host.database().filter(|db| db.is_postgres())?.clone();
    let (r, a, d) = (run.to_string(), approval.to_string(), decision.clone());
    let who = decider.clone();
    let claimed = tokio::task::spawn_blocking(move || {
        let Some(actor) = db.approval_actor(&r, &a)? else {
            return Ok(None);
        };
        // Nobody learns of another actor's run by trying to decide it.
        if !who.sees(actor.as_deref()) {
            return Ok(None);
        }
        let value = decision_json(&d);
        db.approval_claim(&r, &a, &value).map(Some)
    });
    Some(match claimed.await {
        Ok(Ok(None)) | Ok(Ok(Some(Claim::Unknown))) => return None,
        Ok(Ok(Some(Claim::Decided(won)))) => Err(decided_already(approval, &won)),
        // The run goes on on its server, which tells the feed; the answer says no more of it
        // than the local one tells an approver.
        Ok(Ok(Some(Claim::Won))) => {
            tracing::info!(run_id = %run, approval = %approval, actor = ?decider.actor, "approval decided for a run on another server");
            Ok(json!({"id": run, "agent": null, "status": "running"}))
        }
        Ok(Err(e)) => Err(ApiError::unavailable(format!(
            "the decision could not be recorded, so it did not take effect: {e}"
        ))),
        Err(e) => Err(ApiError::internal(format!("deciding: {e}"))),
    })
}

/// The approvals waiting on the other servers that `who` may decide, as the inbox lists
/// them, leaving out those in `here` (this server's own).
pub async fn waiting_elsewhere(state: &AppState, who: &Principal, here: &[Value]) -> Vec<Value> {
    let Some(db) = state.host.database().filter(|db| db.is_postgres()).cloned() else {
        return Vec::new();
    };
    let all = tokio::task::spawn_blocking(move || db.approvals_waiting(None, kiln_db::now()))
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let decides_all = who.may_decide_all();
    all.into_iter()
        .filter(|a| decides_all || who.sees(a.actor.as_deref()))
        .filter(|a| {
            !here
                .iter()
                .any(|h| h["run"] == a.run_id.as_str() && h["id"] == a.ask.id.as_str())
        })
        .map(|a| {
            json!({
                "run": a.run_id, "id": a.ask.id, "capability": a.ask.capability,
                "question": a.ask.question, "tool": a.ask.tool, "args": a.ask.args,
                "asked_at": a.ask.asked_at, "expires_at": a.ask.expires_at,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::doors::runs::peers::payload;
    use crate::feed::{Audience, FeedItem};
    use serde_json::json;

    #[test]
    fn a_feed_item_too_long_for_a_notice_goes_without_its_arguments_or_not_at_all() {
        let item = |data| FeedItem {
            event: "approval_requested",
            data,
            audience: Audience::Deciders(Some("alice".into())),
        };
        let small = payload(&item(json!({"run": "r", "args": {"v": 1}})), "t").expect("sent");
        assert!(
            small.contains("\"v\":1") && small.contains("\"deciders\""),
            "{small}"
        );
        let long = "x".repeat(10_000);
        let cut = payload(&item(json!({"run": "r", "args": {"v": long}})), "t").expect("sent");
        assert!(cut.contains("\"args\":null"), "{cut}");
        assert!(payload(&item(json!({"question": long})), "t").is_none());
        let reload = FeedItem {
            event: "reload",
            data: json!({}),
            audience: Audience::Everyone,
        };
        assert!(
            payload(&reload, "t").is_none(),
            "a server's reloads are its own"
        );
    }
}
