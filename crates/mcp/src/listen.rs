//! Telling clients of a reload: a `subscriptions/listen` stream (2026-07-28) hears that each
//! list may have changed, and so may each resource it watches.

use rmcp::service::SubscriptionContext;
use tokio::sync::broadcast;

/// Tells a `subscriptions/listen` stream of a reload: each list may have changed, and so may
/// each resource it watches. The sink refuses the kinds its filter leaves out; false once the
/// stream is gone.
pub(crate) async fn notify_listener(cx: &SubscriptionContext) -> bool {
    use rmcp::service::SubscriptionSendError::NotificationNotAccepted;
    let sink = cx.sink();
    let mut sent = vec![
        sink.notify_tool_list_changed().await,
        sink.notify_prompt_list_changed().await,
        sink.notify_resource_list_changed().await,
    ];
    for uri in cx.accepted().resource_subscriptions.iter().flatten() {
        sent.push(sink.notify_resource_updated(uri.clone()).await);
    }
    sent.into_iter()
        .all(|r| matches!(r, Ok(()) | Err(NotificationNotAccepted(_))))
}

/// Waits for the next reload; false once the server is gone. Reloads missed while the
/// client was slow still count as one change (the client refetches the whole list anyway).
pub(crate) async fn changed(rx: &mut broadcast::Receiver<()>) -> bool {
    !matches!(rx.recv().await, Err(broadcast::error::RecvError::Closed))
}
