//! What lets a run in, the same at every door of `kiln serve` and in the Restate worker: the
//! process's run slots with a bounded queue in front of them ([`Limiter`]), and the ceiling a
//! caller's grants must stay within ([`check_within`]). Each refusal is typed; a door renders
//! it (`429`, `503`, `403`), the worker turns it into a retry or a terminal error.

use kiln_core::capability::Grants;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Why a run (or a wait for a busy session) got no slot.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SlotRefused {
    /// Every slot is taken and the queue is full.
    #[error("the server is running as many agents as it allows and its queue is full; retry later")]
    Busy {
        /// Seconds a client should wait before trying again.
        retry_after: u64,
    },
    /// The wait in the queue passed the queue timeout.
    #[error("waited {waited_secs} s in the queue for {what}; retry later")]
    Waited {
        /// What was waited for (`a run slot`, `the session`).
        what: String,
        /// How long it waited.
        waited_secs: f64,
        /// Seconds a client should wait before trying again.
        retry_after: u64,
    },
    /// The process is shutting down.
    #[error("the server is shutting down")]
    ShuttingDown,
}

/// Grants asked beyond the ceiling a caller's token (or the worker's `--caps`) allows.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("capability \"{cap}\" is beyond what this token allows {ceiling}{hint}")]
pub struct BeyondCeiling {
    /// The request's field that asked (`caps`, `kiln.caps`).
    pub param: String,
    /// The first grant beyond the ceiling.
    pub cap: String,
    /// The ceiling, listed.
    pub ceiling: String,
    /// What an unscoped ceiling does not reach, where it matters.
    pub hint: &'static str,
}

/// Run slots and the queue in front of them (clones share them: the HTTP API and the Restate
/// handlers of one process draw from the same slots).
#[derive(Clone)]
pub struct Limiter {
    slots: Arc<Semaphore>,
    max_runs: usize,
    queue: usize,
    waiting: Arc<AtomicUsize>,
    retry_after: u64,
    queue_timeout: Duration,
}

/// Decrements the queue depth when a waiter leaves, whether it got a slot or gave up.
struct Waiting(Arc<AtomicUsize>);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Limiter {
    /// `max_runs` slots (at least 1), `queue` waiting places, `retry_after` seconds in 429s;
    /// a request waits in the queue at most `kiln_project::defaults::QUEUE_TIMEOUT` (see
    /// [`Limiter::with_queue_timeout`]).
    pub fn new(max_runs: usize, queue: usize, retry_after: u64) -> Self {
        let max_runs = max_runs.max(1);
        Limiter {
            slots: Arc::new(Semaphore::new(max_runs)),
            max_runs,
            queue,
            waiting: Arc::new(AtomicUsize::new(0)),
            retry_after,
            queue_timeout: kiln_project::defaults::QUEUE_TIMEOUT,
        }
    }

    /// How long a request may wait in the queue before it is refused.
    pub fn with_queue_timeout(mut self, timeout: Duration) -> Self {
        self.queue_timeout = timeout;
        self
    }

    /// A run slot: at once, after waiting in the queue, or `Busy` when the queue is full.
    pub async fn acquire(&self) -> Result<OwnedSemaphorePermit, SlotRefused> {
        if let Ok(p) = self.slots.clone().try_acquire_owned() {
            return Ok(p);
        }
        self.wait_queued("a run slot", self.slots.clone().acquire_owned())
            .await?
            .map_err(|_| SlotRefused::ShuttingDown)
    }

    /// Waits for `what` (a run slot, a busy session) in one of the queue's places:
    /// [`SlotRefused::Busy`] when the queue is full, [`SlotRefused::Waited`] when the wait
    /// passes the queue timeout. Every wait counts in [`Limiter::queued`], so `/readyz` shows
    /// it.
    pub async fn wait_queued<T>(
        &self,
        what: &str,
        wait: impl Future<Output = T>,
    ) -> Result<T, SlotRefused> {
        let reserved = self
            .waiting
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |w| {
                (w < self.queue).then_some(w + 1)
            });
        if reserved.is_err() {
            return Err(SlotRefused::Busy {
                retry_after: self.retry_after,
            });
        }
        let _waiting = Waiting(self.waiting.clone());
        tokio::time::timeout(self.queue_timeout, wait)
            .await
            .map_err(|_| SlotRefused::Waited {
                what: what.to_string(),
                waited_secs: self.queue_timeout.as_secs_f64(),
                retry_after: self.retry_after,
            })
    }

    /// Runs holding a slot.
    pub fn active(&self) -> usize {
        self.max_runs - self.slots.available_permits()
    }

    /// Runs waiting for a slot.
    pub fn queued(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }

    /// Waits until no run holds a slot.
    pub async fn idle(&self) {
        if let Ok(all) = self.slots.acquire_many(self.max_runs as u32).await {
            drop(all);
        }
    }
}

/// Checks that requested `grants` stay within `ceiling`, naming the first that does not: one
/// that shares nothing with it (an unscoped ceiling reaches what the unscoped grant reaches, so
/// `net` does not admit `net:127.0.0.1` nor `env` admit `env:OPENAI_API_KEY`).
pub fn check_within(grants: &Grants, ceiling: &Grants, param: &str) -> Result<(), BeyondCeiling> {
    match grants.beyond(ceiling) {
        None => Ok(()),
        Some(g) => Err(BeyondCeiling {
            param: param.to_string(),
            cap: g.cap.to_string(),
            ceiling: ceiling.list(),
            hint: reach_hint(&g.cap.name),
        }),
    }
}

/// What an unscoped ceiling does not reach, said where it matters.
fn reach_hint(name: &str) -> &'static str {
    use kiln_core::capability::HostCap;
    match HostCap::of(name) {
        Some(HostCap::Net) => " (an unscoped net reaches public addresses only)",
        Some(HostCap::Env) => " (an unscoped env reaches no secret)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_core::capability::Grants;

    fn grants(caps: &[&str]) -> Grants {
        Grants::parse(caps).expect("caps")
    }

    #[test]
    fn a_request_cannot_widen_its_token() {
        let ceiling = grants(&["net:api.example.com"]);
        assert!(check_within(&grants(&["net:api.example.com"]), &ceiling, "caps").is_ok());
        let e = check_within(&grants(&["net"]), &ceiling, "caps").expect_err("wider");
        assert!(e.to_string().contains("\"net\""), "{e}");
        assert!(check_within(&grants(&["store"]), &ceiling, "caps").is_err());
    }

    #[test]
    fn an_unscoped_ceiling_admits_no_scope_it_does_not_reach() {
        let ceiling = grants(&["env", "net"]);
        for asked in [
            "env:OPENAI_API_KEY",
            "net:127.0.0.1",
            "net:private",
            "net:169.254.169.254",
        ] {
            let e = check_within(&grants(&[asked]), &ceiling, "caps").expect_err(asked);
            assert!(e.to_string().contains(asked), "{e}");
        }
        assert!(
            check_within(
                &grants(&["env:HOME", "net:*.example.com"]),
                &ceiling,
                "caps"
            )
            .is_ok()
        );
    }

    #[tokio::test]
    async fn beyond_the_slots_and_the_queue_comes_a_429() {
        let limiter = Arc::new(Limiter::new(1, 1, 3));
        let first = limiter.acquire().await.expect("slot");
        let queued = {
            let l = limiter.clone();
            tokio::spawn(async move { l.acquire().await.map(drop) })
        };
        while limiter.queued() == 0 {
            tokio::task::yield_now().await;
        }
        let refused = limiter.acquire().await.expect_err("queue full");
        assert_eq!(refused, SlotRefused::Busy { retry_after: 3 });
        drop(first);
        queued
            .await
            .expect("join")
            .expect("the queued run got the slot");
        assert_eq!((limiter.active(), limiter.queued()), (0, 0));
    }

    #[tokio::test]
    async fn a_wait_in_the_queue_counts_and_times_out() {
        let limiter = Limiter::new(1, 1, 2).with_queue_timeout(Duration::from_millis(50));
        let busy = Arc::new(tokio::sync::Mutex::new(()));
        let held = busy.clone().lock_owned().await;
        let waited = limiter.wait_queued("the session", busy.clone().lock_owned());
        let e = waited.await.expect_err("timed out");
        assert!(
            matches!(e, SlotRefused::Waited { retry_after: 2, .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains("the session"), "{e}");
        assert_eq!(limiter.queued(), 0);
        drop(held);
    }
}
