//! Rate limits per tool: a token bucket per tool name, shared by every run of a host (so by
//! every run in a `kiln` process), checked by [`Tool::execute`](crate::tool::Tool::execute)
//! after the capability guard and before the handler.

use crate::failure::{FailureKind, ToolFailure};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often a tool may be called: `calls` per `per`, optionally waiting for a slot.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// Calls allowed per window (the bucket's capacity).
    pub calls: u32,
    /// The window the calls refill over.
    pub per: Duration,
    /// Wait for a slot (within the call's deadline) instead of failing at once.
    pub wait: bool,
}

impl RateLimit {
    /// `calls` per `per`, failing when no slot is free.
    pub fn new(calls: u32, per: Duration) -> Self {
        RateLimit {
            calls,
            per,
            wait: false,
        }
    }

    /// Waits for a free slot (within the tool's deadline) instead of failing.
    pub fn wait(mut self, yes: bool) -> Self {
        self.wait = yes;
        self
    }

    /// What is wrong with this limit, if anything (zero calls or an empty window).
    pub fn problem(&self) -> Option<String> {
        if self.calls == 0 {
            Some("rate_limit: calls must be at least 1".into())
        } else if self.per.is_zero() {
            Some("rate_limit: the window must be longer than zero".into())
        } else {
            None
        }
    }

    /// Time for one token to come back.
    fn refill(&self) -> Duration {
        self.per / self.calls
    }
}

impl std::fmt::Display for RateLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = if self.calls == 1 { "" } else { "s" };
        write!(f, "{} call{s} per {}", self.calls, secs(self.per))
    }
}

fn secs(d: Duration) -> String {
    format!("{:.2}s", d.as_secs_f64()).replace(".00s", "s")
}

/// One tool's bucket: tokens left as of `at`, under the limit it was made for.
struct Bucket {
    limit: RateLimit,
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn new(limit: RateLimit, now: Instant) -> Self {
        Bucket {
            limit,
            tokens: f64::from(limit.calls),
            at: now,
        }
    }

    /// Takes a token, or says how long until one is free.
    fn take(&mut self, now: Instant) -> Result<(), Duration> {
        let rate = f64::from(self.limit.calls) / self.limit.per.as_secs_f64();
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * rate).min(f64::from(self.limit.calls));
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            let missing = (1.0 - self.tokens) / rate;
            Err(Duration::from_secs_f64(missing).min(self.limit.refill()))
        }
    }
}

/// The buckets of one host, by tool name. A reloaded tool keeps its bucket unless its limit
/// changed (then it starts full under the new limit).
#[derive(Default)]
pub struct RateLimiter {
    buckets: Mutex<HashMap<String, Bucket>>,
}

/// How long a waiting call sleeps between looks at its cancel flag.
const WAIT_SLICE: Duration = Duration::from_millis(20);

impl RateLimiter {
    /// Takes a slot for one call of `tool`. Without `wait`, or when the next slot comes after
    /// `deadline`, a full bucket is a `rate_limited` failure naming the time until the next
    /// slot. Blocking (it sleeps while waiting): call it on the blocking pool.
    pub fn acquire(
        &self,
        tool: &str,
        limit: &RateLimit,
        deadline: Instant,
        cancel: Option<&Arc<AtomicBool>>,
    ) -> Result<(), ToolFailure> {
        loop {
            let now = Instant::now();
            let next = {
                let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
                let bucket = buckets
                    .entry(tool.to_string())
                    .or_insert_with(|| Bucket::new(*limit, now));
                if bucket.limit != *limit {
                    *bucket = Bucket::new(*limit, now);
                }
                match bucket.take(now) {
                    Ok(()) => return Ok(()),
                    Err(next) => next,
                }
            };
            if !limit.wait || now + next > deadline {
                return Err(limited(tool, limit, next));
            }
            if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                return Err(ToolFailure::sanitized(
                    FailureKind::Cancelled,
                    format!("tool \"{tool}\" was cancelled while waiting for a rate-limit slot"),
                ));
            }
            std::thread::sleep(next.min(WAIT_SLICE).max(Duration::from_millis(1)));
        }
    }
}

fn limited(tool: &str, limit: &RateLimit, next: Duration) -> ToolFailure {
    ToolFailure::visible(
        FailureKind::RateLimited,
        format!(
            "Rate limit of tool \"{tool}\" reached ({limit}); the next slot is free in {:.2}s",
            next.as_secs_f64()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_bucket_names_the_wait_and_refills() {
        let limit = RateLimit::new(2, Duration::from_secs(10));
        let t0 = Instant::now();
        let mut b = Bucket::new(limit, t0);
        assert!(b.take(t0).is_ok());
        assert!(b.take(t0).is_ok());
        let wait = b.take(t0).expect_err("third call in the window is limited");
        assert_eq!(wait, Duration::from_secs(5));
        assert!(b.take(t0 + Duration::from_secs(5)).is_ok());
        assert!(b.take(t0 + Duration::from_secs(5)).is_err());
    }

    #[test]
    fn a_changed_limit_starts_a_new_bucket() {
        let limiter = RateLimiter::default();
        let far = Instant::now() + Duration::from_secs(60);
        let one = RateLimit::new(1, Duration::from_secs(60));
        assert!(limiter.acquire("t", &one, far, None).is_ok());
        let f = limiter.acquire("t", &one, far, None).expect_err("limited");
        assert_eq!(f.kind, FailureKind::RateLimited);
        assert!(f.message.contains("1 call per 60s"), "{}", f.message);
        let two = RateLimit::new(2, Duration::from_secs(60));
        assert!(limiter.acquire("t", &two, far, None).is_ok());
    }

    #[test]
    fn waiting_past_the_deadline_fails_at_once() {
        let limiter = RateLimiter::default();
        let limit = RateLimit::new(1, Duration::from_secs(60)).wait(true);
        let soon = Instant::now() + Duration::from_millis(50);
        assert!(limiter.acquire("t", &limit, soon, None).is_ok());
        let f = limiter
            .acquire("t", &limit, soon, None)
            .expect_err("limited");
        assert_eq!(f.kind, FailureKind::RateLimited);
    }
}
