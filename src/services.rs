//! Host services reached by gated host functions: the store and the workspace.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

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

/// Where `store_*` keeps values: in memory (tests, one-off calls) or in the database.
pub enum Store {
    /// Values live as long as the process.
    Memory(MemoryStore),
    /// Values persist in SQLite, namespaced by workspace.
    Sqlite {
        /// The database.
        db: std::sync::Arc<crate::db::Db>,
        /// The workspace key (its canonical path).
        workspace: String,
    },
}

impl Store {
    /// The value under `ns`/`key`.
    pub fn get(&self, ns: &str, key: &str) -> Option<Value> {
        match self {
            Store::Memory(m) => m.get(ns, key),
            Store::Sqlite { db, workspace } => db.kv_get(workspace, ns, key),
        }
    }

    /// Stores a value.
    pub fn set(&self, ns: &str, key: &str, value: Value) -> Result<(), String> {
        match self {
            Store::Memory(m) => {
                m.set(ns, key, value);
                Ok(())
            }
            Store::Sqlite { db, workspace } => db
                .kv_set(workspace, ns, key, &value)
                .map_err(|e| e.to_string()),
        }
    }

    /// Deletes a key; true when it existed.
    pub fn delete(&self, ns: &str, key: &str) -> bool {
        match self {
            Store::Memory(m) => m.delete(ns, key),
            Store::Sqlite { db, workspace } => db.kv_delete(workspace, ns, key),
        }
    }

    /// Keys of a namespace, sorted.
    pub fn list(&self, ns: &str) -> Vec<String> {
        match self {
            Store::Memory(m) => m.list(ns),
            Store::Sqlite { db, workspace } => db.kv_list(workspace, ns),
        }
    }
}

/// Asks a person whether a gated call may go ahead: `(capability, question) -> yes`.
pub type Approver = Box<dyn Fn(&str, &str) -> bool + Send + Sync>;

/// What host functions reach: the store, the workspace root, and who approves `ask` grants.
pub struct Services {
    /// The key-value store behind `store_*`.
    pub store: Store,
    /// The folder file functions are rooted at.
    pub workspace: PathBuf,
    /// Approve every `ask` grant without asking (`--yes`).
    pub assume_yes: bool,
    /// Asks at the terminal; `None` when there is no terminal.
    pub approver: Option<Approver>,
    /// Every tool's rate-limit bucket, shared by all runs of the host.
    pub rate_limits: crate::ratelimit::RateLimiter,
}

impl Services {
    /// Services rooted at a workspace folder.
    pub fn new(workspace: PathBuf) -> Self {
        Services {
            store: Store::Memory(MemoryStore::default()),
            workspace,
            assume_yes: false,
            approver: None,
            rate_limits: crate::ratelimit::RateLimiter::default(),
        }
    }

    /// Whether an `ask` grant may be used for this call.
    pub fn approve(&self, cap: &str, question: &str) -> bool {
        self.assume_yes || self.approver.as_ref().is_some_and(|a| a(cap, question))
    }
}
