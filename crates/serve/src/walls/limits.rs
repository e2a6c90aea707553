//! Concurrency limits: at most `max_runs` runs at once, a bounded queue of runs waiting for a
//! slot, and `429` with `Retry-After` beyond that.

use crate::error::ApiError;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

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

    /// How long a request may wait in the queue before it is answered `503`.
    pub fn with_queue_timeout(mut self, timeout: Duration) -> Self {
        self.queue_timeout = timeout;
        self
    }

    /// A run slot: at once, after waiting in the queue, or `429` when the queue is full.
    pub async fn acquire(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        if let Ok(p) = self.slots.clone().try_acquire_owned() {
            return Ok(p);
        }
        self.wait_queued("a run slot", self.slots.clone().acquire_owned())
            .await?
            .map_err(|_| ApiError::unavailable("the server is shutting down"))
    }

    /// Waits for `what` (a run slot, a busy session) in one of the queue's places: `429` when
    /// the queue is full, `503` with `Retry-After` when the wait passes the queue timeout. Every
    /// wait counts in [`Limiter::queued`], so `/readyz` shows it.
    pub async fn wait_queued<T>(
        &self,
        what: &str,
        wait: impl Future<Output = T>,
    ) -> Result<T, ApiError> {
        let reserved = self
            .waiting
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |w| {
                (w < self.queue).then_some(w + 1)
            });
        if reserved.is_err() {
            return Err(ApiError::busy(self.retry_after));
        }
        let _waiting = Waiting(self.waiting.clone());
        tokio::time::timeout(self.queue_timeout, wait)
            .await
            .map_err(|_| {
                let mut e = ApiError::unavailable(format!(
                    "waited {} s in the queue for {what}; retry later",
                    self.queue_timeout.as_secs_f64()
                ));
                e.retry_after = Some(self.retry_after);
                e
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(refused.status, axum::http::StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused.retry_after, Some(3));
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
        assert_eq!(e.status, axum::http::StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(e.retry_after, Some(2));
        assert!(e.message.contains("the session"), "{}", e.message);
        assert_eq!(limiter.queued(), 0);
        drop(held);
    }
}
