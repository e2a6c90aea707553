//! A run's cancellation as one value: the token async code awaits and the flag scripts poll
//! (Rhai checks it from `on_progress`), linked once. Whoever cancels sets the flag on their
//! own thread (the token's waker), so a tool running on the thread that drives the runtime
//! still sees a cancel at once; nothing polls and no task is spawned to carry it over.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// The token and the flag of one run or call.
#[derive(Clone)]
pub struct Cancel {
    token: CancellationToken,
    flag: Arc<AtomicBool>,
    /// Keeps the flag linked to the token; dropped with the last clone.
    _link: Arc<Link>,
}

struct Link {
    _waiting: Pin<Box<WaitForCancellationFutureOwned>>,
}

struct SetFlag(Arc<AtomicBool>);

impl std::task::Wake for SetFlag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl Cancel {
    /// A cancellation nobody has asked for yet.
    pub fn new() -> Cancel {
        Cancel::linked(&CancellationToken::new())
    }

    /// The cancellation of `token`: its flag is set when the token is cancelled (or at once,
    /// when it already is).
    pub fn linked(token: &CancellationToken) -> Cancel {
        let flag = Arc::new(AtomicBool::new(false));
        let mut waiting = Box::pin(token.clone().cancelled_owned());
        let waker = std::task::Waker::from(Arc::new(SetFlag(flag.clone())));
        // Registers the waker (or finds the token already cancelled).
        if waiting
            .as_mut()
            .poll(&mut std::task::Context::from_waker(&waker))
            .is_ready()
        {
            flag.store(true, Ordering::Relaxed);
        }
        Cancel {
            token: token.clone(),
            flag,
            _link: Arc::new(Link { _waiting: waiting }),
        }
    }

    /// Cancels: the token's waiters wake and the flag is set.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::Relaxed);
        self.token.cancel();
    }

    /// Whether it was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Relaxed) || self.token.is_cancelled()
    }

    /// The token, for async code (`token().cancelled().await`).
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// The flag, for code that polls (the sandbox, rate-limit waits).
    pub fn flag(&self) -> &Arc<AtomicBool> {
        &self.flag
    }
}

impl Default for Cancel {
    fn default() -> Self {
        Cancel::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_is_set_by_the_cancelling_thread_with_no_runtime_running() {
        let token = CancellationToken::new();
        let cancel = Cancel::linked(&token);
        assert!(!cancel.flag().load(Ordering::Relaxed));
        let other = token.clone();
        std::thread::spawn(move || other.cancel())
            .join()
            .expect("cancelled");
        assert!(cancel.flag().load(Ordering::Relaxed));
        drop(cancel);
        let again = Cancel::linked(&token);
        assert!(
            again.flag().load(Ordering::Relaxed),
            "an already cancelled token"
        );
        let fresh = Cancel::linked(&CancellationToken::new());
        assert!(!fresh.flag().load(Ordering::Relaxed));
    }

    #[test]
    fn cancel_sets_both() {
        let c = Cancel::new();
        c.cancel();
        assert!(c.token().is_cancelled() && c.flag().load(Ordering::Relaxed));
    }
}
