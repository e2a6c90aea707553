//! The live feed the console listens to (`GET /v1/events`, served by `listing`): runs starting and ending,
//! approvals asked and decided, scripts reloaded. Each item names who may see it, and a
//! listener gets only what its token may: its own runs, the approvals it may decide, reloads.

use crate::walls::auth::Principal;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::{broadcast, mpsc};

/// Items a slow listener may fall behind by before it misses some (it is told, and reloads).
const BACKLOG: usize = 1024;

/// Who may see a feed item.
#[derive(Debug, Clone)]
pub enum Audience {
    /// The run's owner (the actor that started it).
    Owner(Option<String>),
    /// The run's owner, and every token that may decide any run's approvals.
    Deciders(Option<String>),
    /// Every caller the server lets in.
    Everyone,
}

/// One item of the feed: an SSE event name, its data, and who may see it.
#[derive(Debug, Clone)]
pub struct FeedItem {
    /// `run_started`, `run_ended`, `approval_requested`, `approval_decided` or `reload`.
    pub event: &'static str,
    /// The event's JSON data.
    pub data: Value,
    /// Who may see it.
    pub audience: Audience,
}

/// The feed's sender; listeners subscribe per request.
pub struct Feed {
    tx: broadcast::Sender<Arc<FeedItem>>,
    /// Where items about runs also go: the other servers sharing the database.
    relay: std::sync::OnceLock<mpsc::UnboundedSender<Arc<FeedItem>>>,
}

impl Default for Feed {
    fn default() -> Self {
        Feed {
            tx: broadcast::Sender::new(BACKLOG),
            relay: std::sync::OnceLock::new(),
        }
    }
}

impl Feed {
    /// Sends an item to the listeners there are (none is fine), and to the other servers
    /// sharing the database when it is about a run.
    pub fn publish(&self, event: &'static str, audience: Audience, data: Value) {
        let item = Arc::new(FeedItem {
            event,
            data,
            audience,
        });
        if let Some(relay) = self.relay.get()
            && !matches!(item.audience, Audience::Everyone)
        {
            let _ = relay.send(item.clone());
        }
        let _ = self.tx.send(item);
    }

    /// Sends an item another server published to this server's listeners only.
    pub fn publish_heard(&self, event: &'static str, audience: Audience, data: Value) {
        let _ = self.tx.send(Arc::new(FeedItem {
            event,
            data,
            audience,
        }));
    }

    /// Sends every item about a run to `relay` as well, from now on.
    pub fn relay_to(&self, relay: mpsc::UnboundedSender<Arc<FeedItem>>) {
        let _ = self.relay.set(relay);
    }

    /// A new listener, from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<FeedItem>> {
        self.tx.subscribe()
    }
}

/// Whether `who` may see `item`.
pub fn visible(who: &Principal, item: &FeedItem) -> bool {
    match &item.audience {
        Audience::Owner(owner) => who.sees(owner.as_deref()),
        Audience::Deciders(owner) => who.sees(owner.as_deref()) || who.may_decide_all(),
        Audience::Everyone => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(actor: &str, caps: &[&str]) -> Principal {
        Principal {
            actor: Some(actor.into()),
            ceiling: Some(kiln_core::capability::Grants::parse(caps).expect("caps")),
            every_run: false,
        }
    }

    #[test]
    fn each_listener_sees_its_own_runs_and_the_approvals_it_may_decide() {
        let item = |audience| FeedItem {
            event: "x",
            data: Value::Null,
            audience,
        };
        let alice = token("alice", &["store"]);
        let bob = token("bob", &["store"]);
        let approver = token("carol", &["approve"]);
        let run = item(Audience::Owner(Some("alice".into())));
        assert!(visible(&alice, &run) && !visible(&bob, &run) && !visible(&approver, &run));
        let asked = item(Audience::Deciders(Some("alice".into())));
        assert!(visible(&alice, &asked) && !visible(&bob, &asked) && visible(&approver, &asked));
        let reload = item(Audience::Everyone);
        assert!(visible(&bob, &reload));
        // The open server's one caller sees the open server's runs, not a token's.
        let open = Principal::default();
        assert!(visible(&open, &item(Audience::Owner(None))) && !visible(&open, &run));
    }
}
