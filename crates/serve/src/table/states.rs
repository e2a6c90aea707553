//! The `ctx.state` of the runs the front-end doors started, by run id, held weakly.

use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

/// The `ctx.state` of runs a front-end door started, by run id, so a resumed run's stream
/// can say how its state changed (held weakly: a run's state goes with it).
#[derive(Default)]
pub struct RunStates(Mutex<HashMap<String, Weak<Mutex<Value>>>>);

impl RunStates {
    /// Remembers run `id`'s state (and forgets the states of runs that are gone).
    pub(crate) fn keep(&self, id: &str, state: &Arc<Mutex<Value>>) {
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|_, s| s.strong_count() > 0);
        all.insert(id.to_string(), Arc::downgrade(state));
    }

    /// Run `id`'s state, while the run holds it.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<Mutex<Value>>> {
        let all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        all.get(id).and_then(Weak::upgrade)
    }
}
