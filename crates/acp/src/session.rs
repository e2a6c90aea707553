//! The sessions of one connection: each a kiln session (its messages and `ctx.state` in the
//! database, under the ACP session id), with what the person allowed for the rest of it and
//! the prompt running in it.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// One session.
pub struct Session {
    /// The session id (the kiln session's name).
    pub id: String,
    /// The working directory the client gave.
    #[allow(dead_code)] // read by the client's file system, next
    pub cwd: String,
    /// `(tool, capability)` pairs the person allowed always, for this session.
    always: Mutex<HashSet<(String, String)>>,
    /// The running prompt's cancellation, while one runs.
    running: Mutex<Option<CancellationToken>>,
}

impl Session {
    /// A session with nothing allowed and nothing running.
    pub fn new(id: String, cwd: String) -> Session {
        Session {
            id,
            cwd,
            always: Mutex::new(HashSet::new()),
            running: Mutex::new(None),
        }
    }

    /// Whether `tool` may use `cap` without asking again.
    pub fn allowed_always(&self, tool: &str, cap: &str) -> bool {
        self.always
            .lock()
            .is_ok_and(|a| a.contains(&(tool.to_string(), cap.to_string())))
    }

    /// Remembers that `tool` may use `cap` for the rest of the session.
    pub fn allow_always(&self, tool: &str, cap: &str) {
        if let Ok(mut a) = self.always.lock() {
            a.insert((tool.to_string(), cap.to_string()));
        }
    }

    /// Starts a prompt: its cancellation, or `None` when one already runs.
    pub fn start(&self) -> Option<CancellationToken> {
        let mut running = self.running.lock().ok()?;
        if running.is_some() {
            return None;
        }
        let token = CancellationToken::new();
        *running = Some(token.clone());
        Some(token)
    }

    /// The prompt ended.
    pub fn finish(&self) {
        if let Ok(mut r) = self.running.lock() {
            *r = None;
        }
    }

    /// Cancels the running prompt, if any.
    pub fn cancel(&self) {
        if let Some(t) = self.running.lock().ok().and_then(|r| r.clone()) {
            t.cancel();
        }
    }

    /// Whether a prompt runs.
    pub fn is_running(&self) -> bool {
        self.running.lock().is_ok_and(|r| r.is_some())
    }
}

/// The connection's sessions, by id.
#[derive(Default)]
pub struct Sessions(Mutex<HashMap<String, Arc<Session>>>);

impl Sessions {
    /// Session `id`, when this connection has it.
    pub fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.0.lock().ok()?.get(id).cloned()
    }

    /// Adds (or replaces) a session.
    pub fn insert(&self, session: Arc<Session>) {
        if let Ok(mut m) = self.0.lock() {
            m.insert(session.id.clone(), session);
        }
    }

    /// Every session.
    pub fn all(&self) -> Vec<Arc<Session>> {
        self.0
            .lock()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }
}
