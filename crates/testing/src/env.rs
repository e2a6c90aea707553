//! The world of one running test: its own host (temporary workspace, in-memory store, faked
//! HTTP), its deadline, and the folder its scenario files are relative to. The test runs on
//! one thread, so the functions test scripts call find it in a thread-local.

use kiln_core::services::{FakeReply, HttpFake};
use kiln_host::Host;
use serde_json::Value;
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// One `fake_http` route: URLs matching `pattern` (`*` matches any text) get `reply`.
pub struct Route {
    pub pattern: String,
    pub reply: FakeReply,
}

/// A request a test's tools made, answered by a fake.
pub type Seen = (String, String, Option<Value>);

/// The routes and the requests seen, shared with the host's HTTP fake.
#[derive(Default)]
pub struct FakeHttp {
    pub routes: Mutex<Vec<Route>>,
    pub seen: Mutex<Vec<Seen>>,
}

impl FakeHttp {
    /// The reply of the last route added that matches (later routes override earlier ones).
    fn answer(&self, method: &str, url: &str, body: Option<&Value>) -> Result<FakeReply, String> {
        if let Ok(mut s) = self.seen.lock() {
            s.push((method.to_string(), url.to_string(), body.cloned()));
        }
        let routes = self
            .routes
            .lock()
            .map_err(|_| "fake_http routes are poisoned")?;
        routes
            .iter()
            .rev()
            .find(|r| wildcard_match(&r.pattern, url))
            .map(|r| r.reply.clone())
            .ok_or_else(|| {
                let known: Vec<&str> = routes.iter().map(|r| r.pattern.as_str()).collect();
                format!(
                    "no fake_http route matches {method} {url}; tests never reach the network (routes: {})",
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                )
            })
    }
}

/// `*` matches any run of characters; everything else literally.
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    true
}

/// A folder removed when the test ends.
pub struct TempDir(PathBuf);

impl TempDir {
    fn new() -> std::io::Result<TempDir> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "kiln-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Everything a running test reaches.
pub struct TestEnv {
    pub host: Arc<Host>,
    pub fakes: Arc<FakeHttp>,
    pub deadline: Instant,
    /// The test file's folder (scenario paths are relative to it).
    pub dir: PathBuf,
    pub runtime: tokio::runtime::Handle,
    _workspace: TempDir,
}

impl TestEnv {
    /// A fresh host over `scripts` rooted at a new temporary workspace.
    pub fn new(
        scripts: &[PathBuf],
        stdlib: bool,
        test_file: &Path,
        deadline: Instant,
        runtime: tokio::runtime::Handle,
    ) -> Result<TestEnv, String> {
        let workspace =
            TempDir::new().map_err(|e| format!("cannot create a temporary workspace: {e}"))?;
        let fakes = Arc::new(FakeHttp::default());
        let responder = fakes.clone();
        let fake: HttpFake = Arc::new(move |m, u, b| responder.answer(m, u, b));
        let mut builder = Host::builder()
            .workspace(workspace.0.clone())
            .stdlib(stdlib)
            .http_fake(fake);
        for dir in scripts {
            builder = builder.scripts(dir.clone());
        }
        let host = builder.build().map_err(|e| e.to_string())?;
        Ok(TestEnv {
            host,
            fakes,
            deadline,
            dir: test_file
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            runtime,
            _workspace: workspace,
        })
    }

    /// Time left before the deadline.
    pub fn remaining(&self) -> std::time::Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<TestEnv>>> = const { RefCell::new(None) };
}

/// Runs `f` with `env` as the current test's world.
pub fn with_env<T>(env: Arc<TestEnv>, f: impl FnOnce() -> T) -> T {
    let previous = CURRENT.with(|c| c.replace(Some(env)));
    let out = f();
    CURRENT.with(|c| *c.borrow_mut() = previous);
    out
}

/// The current test's world, or an error naming the function called outside a test.
pub fn current(func: &str) -> Result<Arc<TestEnv>, String> {
    CURRENT
        .with(|c| c.borrow().clone())
        .ok_or_else(|| format!("{func}() can only be called inside a test(\"name\", || {{ ... }})"))
}

#[cfg(test)]
mod tests {
    use super::wildcard_match;

    #[test]
    fn wildcards_match_any_text() {
        assert!(wildcard_match(
            "https://api.x.com/*",
            "https://api.x.com/a/b?c=1"
        ));
        assert!(wildcard_match(
            "*/weather?*",
            "https://w.io/weather?city=Oslo"
        ));
        assert!(wildcard_match("https://a.io/x", "https://a.io/x"));
        assert!(!wildcard_match("https://a.io/x", "https://a.io/xy"));
        assert!(!wildcard_match("https://a.io/*/z", "https://a.io/y"));
        assert!(!wildcard_match("a*a", "a"));
    }
}
