//! Where a call runs: in place on the thread that drives the caller's runtime (marked, so a
//! handler that would wait on that runtime refuses instead of hanging it), or an async handler
//! driven to its end on a blocking thread, stopped at its deadline or on cancellation.

use crate::context::CallContext;
use crate::failure::{FailureKind, ToolFailure};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

/// The future a native handler returns.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Value, ToolFailure>> + Send>>;

thread_local! {
    /// Set while a tool runs on a thread that drives a runtime (current-thread, or a worker).
    static IN_PLACE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` on the thread that drives the caller's runtime (its only thread or a worker),
/// [`drive`] refuses instead of blocking that runtime forever.
pub fn in_place<T>(f: impl FnOnce() -> T) -> T {
    struct Unmark(bool);
    impl Drop for Unmark {
        fn drop(&mut self) {
            IN_PLACE.with(|m| m.set(self.0));
        }
    }
    let _unmark = Unmark(IN_PLACE.with(|m| m.replace(true)));
    f()
}

/// Drives an async handler to completion on the calling (blocking) thread, stopping it at
/// `deadline` or when the run is cancelled.
pub fn drive(
    future: HandlerFuture,
    deadline: Instant,
    ctx: &CallContext,
    name: &str,
) -> Result<Value, ToolFailure> {
    // Unreachable by design (`Handler::runs_in_place` rules out whatever could get here), but
    // if it were reached, an error beats a thread that waits on itself.
    if IN_PLACE.with(|m| m.get()) {
        return Err(ToolFailure::sanitized(
            FailureKind::Runtime,
            format!(
                "tool \"{name}\" cannot run here: its caller runs it on the runtime's own thread"
            ),
        ));
    }
    let guarded = guard(future, deadline, ctx.run.cancel.clone(), name.to_string());
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle.block_on(guarded),
        Err(_) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ToolFailure::sanitized(FailureKind::Runtime, e.to_string()))?
            .block_on(guarded),
    }
}

async fn guard(
    future: HandlerFuture,
    deadline: Instant,
    cancel: Option<crate::cancel::Cancel>,
    name: String,
) -> Result<Value, ToolFailure> {
    let cancelled = async {
        match cancel {
            Some(c) => c.token().cancelled().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        r = future => r,
        _ = tokio::time::sleep_until(deadline.into()) => Err(ToolFailure::sanitized(
            FailureKind::Deadline,
            format!("tool \"{name}\" passed its deadline"),
        )),
        _ = cancelled => Err(ToolFailure::sanitized(
            FailureKind::Cancelled,
            format!("tool \"{name}\" was cancelled"),
        )),
    }
}
