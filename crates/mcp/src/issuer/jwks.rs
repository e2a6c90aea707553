//! The authorization server's published keys (its JWKS), cached. Verifying a token signed with
//! a known key reads the cached set under a short read lock and never waits for a fetch. A
//! fetch happens one at a time (the others wait for it and use what it brought), when the set
//! is stale, and for a key id the set does not have at most once per [`UNKNOWN_KID_EVERY`]:
//! a forged token naming a made-up key id costs the issuer nothing beyond that.

use serde_json::Value;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// How long the keys are used before they are fetched again.
const KEYS_FOR: Duration = Duration::from_secs(300);
/// The shortest time between two fetches that a key id missing from fresh keys may cause.
pub const UNKNOWN_KID_EVERY: Duration = Duration::from_secs(30);
/// After a failed fetch, how long requests are answered "unreachable" without fetching again.
const RETRY_FAILED_AFTER: Duration = Duration::from_secs(2);

/// Why no key was found.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KeyError {
    /// The issuer publishes no such key (as of its last fetch).
    #[error("no such key")]
    Unknown,
    /// The keys could not be fetched.
    #[error("the keys could not be fetched")]
    Unreachable,
}

/// The keys as last fetched.
#[derive(Default)]
struct KeySet {
    fetched: Option<Instant>,
    keys: Vec<Value>,
}

impl KeySet {
    fn fresh(&self) -> bool {
        self.fetched.is_some_and(|at| at.elapsed() < KEYS_FOR)
    }

    fn find(&self, kid: Option<&str>) -> Option<Value> {
        self.keys
            .iter()
            .find(|k| kid.is_none_or(|id| k["kid"].as_str() == Some(id)))
            .cloned()
    }
}

/// When the last fetch was tried, and whether it worked.
#[derive(Default)]
struct Attempt {
    at: Option<Instant>,
    failed: bool,
}

impl Attempt {
    fn within(&self, interval: Duration) -> bool {
        self.at.is_some_and(|at| at.elapsed() < interval)
    }
}

/// The cached keys of one issuer.
pub struct KeyCache {
    /// Swapped whole after a fetch; read (and the `Arc` cloned) under a short lock.
    current: RwLock<Arc<KeySet>>,
    /// One fetch at a time (single flight); never held while a known key is looked up.
    refresh: tokio::sync::Mutex<Attempt>,
    /// The shortest time between fetches for key ids the keys do not have.
    unknown_kid_every: Duration,
}

impl Default for KeyCache {
    fn default() -> Self {
        KeyCache::new(UNKNOWN_KID_EVERY)
    }
}

impl KeyCache {
    /// No keys yet; a key id the keys lack fetches them at most once per `unknown_kid_every`.
    pub fn new(unknown_kid_every: Duration) -> Self {
        KeyCache {
            current: RwLock::default(),
            refresh: tokio::sync::Mutex::default(),
            unknown_kid_every,
        }
    }

    fn snapshot(&self) -> Arc<KeySet> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The key `kid` (or the only key), fetching with `fetch` when the keys are stale or the id
    /// is new to them (at most once per interval for a new id).
    pub async fn key<F, Fut>(&self, kid: Option<&str>, fetch: F) -> Result<Value, KeyError>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Vec<Value>, String>>,
    {
        let set = self.snapshot();
        if set.fresh()
            && let Some(key) = set.find(kid)
        {
            return Ok(key);
        }
        let mut attempt = self.refresh.lock().await;
        // Another request may have fetched while this one waited.
        let set = self.snapshot();
        if set.fresh() {
            if let Some(key) = set.find(kid) {
                return Ok(key);
            }
            if attempt.within(self.unknown_kid_every) {
                return Err(KeyError::Unknown);
            }
        } else if attempt.failed && attempt.within(RETRY_FAILED_AFTER) {
            return Err(KeyError::Unreachable);
        }
        *attempt = Attempt {
            at: Some(Instant::now()),
            failed: true,
        };
        let keys = fetch().await.map_err(|_| KeyError::Unreachable)?;
        attempt.failed = false;
        let set = Arc::new(KeySet {
            fetched: Some(Instant::now()),
            keys,
        });
        let key = set.find(kid);
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = set;
        key.ok_or(KeyError::Unknown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn keys() -> Vec<Value> {
        vec![json!({"kid": "a", "kty": "EC"})]
    }

    #[tokio::test]
    async fn unknown_ids_fetch_once_per_interval_and_known_ones_never_again() {
        let cache = KeyCache::default();
        let fetches = AtomicUsize::new(0);
        let fetch = || async {
            fetches.fetch_add(1, Ordering::SeqCst);
            Ok(keys())
        };
        assert!(cache.key(Some("a"), fetch).await.is_ok());
        for _ in 0..10 {
            assert_eq!(
                cache.key(Some("forged"), fetch).await,
                Err(KeyError::Unknown)
            );
            assert!(cache.key(Some("a"), fetch).await.is_ok());
        }
        assert_eq!(fetches.load(Ordering::SeqCst), 1, "within the interval");
    }

    #[tokio::test]
    async fn a_fetch_under_way_holds_up_no_known_key() {
        let cache = Arc::new(KeyCache::new(Duration::ZERO));
        assert!(cache.key(Some("a"), || async { Ok(keys()) }).await.is_ok());
        // A forged id starts a fetch that does not end until released.
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let (started, fetching) = tokio::sync::oneshot::channel::<()>();
        let forged = tokio::spawn({
            let cache = cache.clone();
            async move {
                let fetch = || async move {
                    let _ = started.send(());
                    let _ = released.await;
                    Ok(keys())
                };
                cache.key(Some("forged"), fetch).await
            }
        });
        fetching.await.expect("the fetch started");
        let known = tokio::time::timeout(
            Duration::from_secs(5),
            cache.key(Some("a"), || async { Err("not fetched".to_string()) }),
        )
        .await;
        assert!(
            matches!(known, Ok(Ok(_))),
            "waited for the fetch: {known:?}"
        );
        let _ = release.send(());
        assert_eq!(forged.await.ok(), Some(Err(KeyError::Unknown)));
    }

    #[tokio::test]
    async fn a_failed_fetch_is_not_retried_by_every_request() {
        let cache = KeyCache::default();
        let fetches = AtomicUsize::new(0);
        let fetch = || async {
            fetches.fetch_add(1, Ordering::SeqCst);
            Err::<Vec<Value>, _>("down".to_string())
        };
        for _ in 0..5 {
            assert_eq!(
                cache.key(Some("a"), fetch).await,
                Err(KeyError::Unreachable)
            );
        }
        assert_eq!(fetches.load(Ordering::SeqCst), 1);
    }
}
