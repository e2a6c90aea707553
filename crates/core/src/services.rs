//! Host services reached by gated host functions: the store, the workspace, approvals and
//! how the network is reached.

use kiln_egress::resolver::{NameResolver, Overrides, SystemResolver};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Key-value store, namespaced; values are JSON.
#[derive(Default)]
pub struct MemoryStore {
    data: Mutex<BTreeMap<String, BTreeMap<String, Value>>>,
}

impl MemoryStore {
    /// The value under `ns`/`key`.
    pub fn get(&self, ns: &str, key: &str) -> Option<Value> {
        self.data.lock().ok()?.get(ns)?.get(key).cloned()
    }

    /// Stores a value.
    pub fn set(&self, ns: &str, key: &str, value: Value) {
        if let Ok(mut d) = self.data.lock() {
            d.entry(ns.to_string())
                .or_default()
                .insert(key.to_string(), value);
        }
    }

    /// Deletes a key; true when it existed.
    pub fn delete(&self, ns: &str, key: &str) -> bool {
        self.data
            .lock()
            .ok()
            .and_then(|mut d| d.get_mut(ns).and_then(|m| m.remove(key)))
            .is_some()
    }

    /// Keys of a namespace, sorted.
    pub fn list(&self, ns: &str) -> Vec<String> {
        self.data
            .lock()
            .ok()
            .and_then(|d| d.get(ns).map(|m| m.keys().cloned().collect()))
            .unwrap_or_default()
    }
}

/// A persistent key-value store behind `store_*` (the host's SQLite database implements it,
/// namespaced by workspace); every method says why it failed.
pub trait KvStore: Send + Sync {
    /// The value under `ns`/`key`; `Ok(None)` when there is none.
    fn get(&self, ns: &str, key: &str) -> Result<Option<Value>, String>;
    /// Stores a value.
    fn set(&self, ns: &str, key: &str, value: &Value) -> Result<(), String>;
    /// Deletes a key; true when it existed.
    fn delete(&self, ns: &str, key: &str) -> Result<bool, String>;
    /// Keys of a namespace, sorted.
    fn list(&self, ns: &str) -> Result<Vec<String>, String>;
}

/// Where `store_*` keeps values: in memory (tests, one-off calls) or in a persistent store.
pub enum Store {
    /// Values live as long as the process.
    Memory(MemoryStore),
    /// Values persist (the database, keyed by workspace).
    Persistent(Arc<dyn KvStore>),
}

impl Store {
    /// The value under `ns`/`key`; `Ok(None)` when there is none, `Err` when the store failed.
    pub fn get(&self, ns: &str, key: &str) -> Result<Option<Value>, String> {
        match self {
            Store::Memory(m) => Ok(m.get(ns, key)),
            Store::Persistent(s) => s.get(ns, key),
        }
    }

    /// Stores a value.
    pub fn set(&self, ns: &str, key: &str, value: Value) -> Result<(), String> {
        match self {
            Store::Memory(m) => {
                m.set(ns, key, value);
                Ok(())
            }
            Store::Persistent(s) => s.set(ns, key, &value),
        }
    }

    /// Deletes a key; true when it existed.
    pub fn delete(&self, ns: &str, key: &str) -> Result<bool, String> {
        match self {
            Store::Memory(m) => Ok(m.delete(ns, key)),
            Store::Persistent(s) => s.delete(ns, key),
        }
    }

    /// Keys of a namespace, sorted.
    pub fn list(&self, ns: &str) -> Result<Vec<String>, String> {
        match self {
            Store::Memory(m) => Ok(m.list(ns)),
            Store::Persistent(s) => s.list(ns),
        }
    }
}

/// A canned reply to a host HTTP request (tests, `fake_http`).
#[derive(Debug, Clone)]
pub struct FakeReply {
    /// Status code.
    pub status: u16,
    /// Response headers.
    pub headers: Vec<(String, String)>,
    /// Response body.
    pub body: String,
}

/// Answers `http_get`/`http_post` instead of the network, after the capability gate:
/// `(method, url, body) -> reply`, or an error saying why nothing matched.
pub type HttpFake =
    std::sync::Arc<dyn Fn(&str, &str, Option<&Value>) -> Result<FakeReply, String> + Send + Sync>;

/// Asks a person whether a gated call may go ahead: `(capability, question) -> yes`.
pub type ApproverFn = Box<dyn Fn(&str, &str) -> bool + Send + Sync>;

/// How scripts' `http_get`/`http_post` reach the network (given to
/// `HostBuilder::egress`). By default names are looked up by the
/// system and the environment's proxies are not used; every address a name resolves to is
/// checked against the caller's `net` grants at connect time, whatever the resolver.
///
/// ```
/// // Given to a host with `Host::builder().egress(egress)`.
/// let egress = kiln_core::services::Egress::default()
///     .resolve("api.example.test", "127.0.0.1".parse().unwrap());
/// # drop(egress);
/// ```
#[derive(Clone)]
pub struct Egress {
    /// Where host names are looked up.
    pub resolver: Arc<dyn NameResolver>,
    /// Names answered with fixed addresses before `resolver` is asked ([`Egress::resolve`]).
    fixed: HashMap<String, Vec<IpAddr>>,
    /// Use the environment's proxies (`HTTP_PROXY` and friends).
    pub use_env_proxy: bool,
}

impl Default for Egress {
    fn default() -> Self {
        Egress {
            resolver: Arc::new(SystemResolver),
            fixed: HashMap::new(),
            use_env_proxy: false,
        }
    }
}

impl Egress {
    /// Looks host names up with `resolver` instead of the system's (names fixed with
    /// [`Egress::resolve`] still answer first).
    pub fn resolver(mut self, resolver: Arc<dyn NameResolver>) -> Self {
        self.resolver = resolver;
        self
    }

    /// Answers lookups of `name` with `addr` (like curl's `--resolve`); repeat a name for
    /// several addresses. The address is still checked against the grants.
    pub fn resolve(mut self, name: &str, addr: IpAddr) -> Self {
        self.fixed
            .entry(name.to_ascii_lowercase())
            .or_default()
            .push(addr);
        self
    }

    /// Sends requests through the environment's proxies (`HTTP_PROXY` and friends). Off unless
    /// the operator opts in: the proxy makes the connection, so the address check cannot hold.
    pub fn use_env_proxy(mut self, on: bool) -> Self {
        self.use_env_proxy = on;
        self
    }

    /// The settings with the fixed names folded into the resolver, as requests use them.
    pub fn settled(mut self) -> Egress {
        if !self.fixed.is_empty() {
            let fixed = std::mem::take(&mut self.fixed);
            self.resolver = Arc::new(Overrides::new(fixed, self.resolver));
        }
        self
    }
}

/// What host functions reach: the store, the workspace root, and who approves needs-approval
/// grants.
pub struct Services {
    /// The key-value store behind `store_*`.
    pub store: Store,
    /// The folder file functions are rooted at.
    pub workspace: PathBuf,
    /// Approve every needs-approval grant without asking (`--yes`).
    pub assume_yes: bool,
    /// Asks at the terminal; `None` when there is no terminal.
    pub approver: Option<ApproverFn>,
    /// How gated functions reach the network.
    pub egress: Egress,
    /// When set, host HTTP requests are answered by it and never reach the network (tests).
    pub http_fake: Option<HttpFake>,
    /// Every tool's rate-limit bucket, shared by all runs of the host.
    pub rate_limits: crate::ratelimit::RateLimiter,
    /// The scripts folders the host loads (canonical): a tool may not write scripts there.
    pub scripts: Vec<PathBuf>,
}

impl Services {
    /// Services rooted at a workspace folder.
    pub fn new(workspace: PathBuf) -> Self {
        Services {
            store: Store::Memory(MemoryStore::default()),
            workspace,
            assume_yes: false,
            approver: None,
            egress: Egress::default(),
            http_fake: None,
            rate_limits: crate::ratelimit::RateLimiter::default(),
            scripts: Vec::new(),
        }
    }

    /// Whether a needs-approval grant may be used for this call.
    pub fn approve(&self, cap: &str, question: &str) -> bool {
        self.assume_yes || self.approver.as_ref().is_some_and(|a| a(cap, question))
    }
}

/// The file in `.kiln/` holding the workspace's id.
const WORKSPACE_ID_FILE: &str = "workspace-id";

/// The workspace's id, kept in `WORKSPACE/.kiln/workspace-id` and created on first use, so the
/// store follows a workspace that moves. The flag is true when the id was created just now.
pub fn workspace_id(workspace: &Path) -> std::io::Result<(String, bool)> {
    let dir = workspace.join(crate::defaults::STATE_DIR);
    let file = dir.join(WORKSPACE_ID_FILE);
    if let Ok(id) = std::fs::read_to_string(&file) {
        return Ok((id.trim().to_string(), false));
    }
    std::fs::create_dir_all(&dir)?;
    let id = fresh_id();
    // Written aside, then linked into place: a concurrent first use sees a whole id or none,
    // and exactly one creator wins.
    let tmp = dir.join(format!(".{WORKSPACE_ID_FILE}.{id}"));
    std::fs::write(&tmp, format!("{id}\n"))?;
    let linked = std::fs::hard_link(&tmp, &file);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok((id, true)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Ok((std::fs::read_to_string(&file)?.trim().to_string(), false))
        }
        Err(e) => Err(e),
    }
}

/// A new unique name: time, process and a per-process random key (std seeds it per process).
pub fn fresh_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u32(std::process::id());
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("{:016x}{:08x}", h.finish(), std::process::id())
}
