//! A run's events for a front-end door (AG-UI, the AI SDK's UI message stream): from the run's
//! start, or from just after a person was asked approval `after` (a resumed front-end run),
//! each turned into the door's events by its [`Translate`], until the door's run has ended. A
//! client that goes away before then cancels the run; once the door's run has ended (finished,
//! or stopped to ask a person), the kiln run goes on without it.

use crate::doors::chat::CancelOnDrop;
use crate::table::RunEntry;
use futures_util::{Stream, StreamExt};
use kiln_agent::Event;
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// Turns a run's events into a door's.
pub(crate) trait Translate: Send + 'static {
    /// The door's events for one of the run's.
    fn on(&mut self, ev: &Event) -> Vec<Value>;
    /// The door's run has ended: nothing more is read.
    fn ended(&self) -> bool;
}

/// The door's events of `entry`'s run, translated by `door` (see the module).
pub(crate) fn events<T: Translate>(
    entry: Arc<RunEntry>,
    door: T,
    after: Option<String>,
) -> impl Stream<Item = Value> + Send + use<T> {
    let guard = Arc::new(Mutex::new(CancelOnDrop(Some(entry.cancel.clone()))));
    let mut skipping = after;
    let events = entry
        .events()
        .filter(move |ev| {
            let keep = match (&skipping, &**ev) {
                (None, _) => true,
                (Some(id), Event::ApprovalRequested { id: asked, .. }) if asked == id => {
                    skipping = None;
                    false
                }
                (Some(_), _) => false,
            };
            std::future::ready(keep)
        })
        .boxed();
    // Ends right after the door's last event: a run waiting for a person sends nothing more.
    futures_util::stream::unfold(
        (events, door, guard),
        |(mut events, mut door, guard)| async move {
            if door.ended() {
                return None;
            }
            let ev = events.next().await?;
            let out = door.on(&ev);
            if door.ended()
                && let Ok(mut g) = guard.lock()
            {
                // The door's run ended: the client going away now cancels nothing.
                g.0 = None;
            }
            Some((futures_util::stream::iter(out), (events, door, guard)))
        },
    )
    .flatten()
}
