//! The Responses door's running responses, kept in the server's state beside the run table:
//! what each Response object repeats (`Shape`, `Echo`) and the table of those running here.

use serde_json::Value;
use std::sync::{Arc, Mutex};

/// The request's settings a Response object repeats.
#[derive(Clone, Debug, Default)]
pub(crate) struct Echo {
    pub instructions: Option<String>,
    pub tools: Vec<Value>,
    pub tool_choice: Value,
    pub parallel_tool_calls: bool,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_output_tokens: Option<u32>,
    pub metadata: Value,
    pub user: Option<String>,
}

/// What every Response object of one request repeats.
#[derive(Clone, Debug)]
pub(crate) struct Shape {
    /// `resp_<run id>`.
    pub id: String,
    /// The run behind it.
    pub run_id: String,
    /// The agent (the request's `model`).
    pub agent: String,
    /// Seconds since the epoch.
    pub created_at: u64,
    /// `previous_response_id`.
    pub previous: Option<String>,
    /// `store`.
    pub store: bool,
    /// The request's settings.
    pub echo: Echo,
    /// Where this response's messages start in its run's transcript.
    pub from: usize,
}

/// The responses running here, by run id: what `cancel` answers them with.
#[derive(Default)]
pub(crate) struct Running {
    shapes: Mutex<std::collections::HashMap<String, Arc<Shape>>>,
    /// Counts the ended responses stored whole: a request continuing one that just ended
    /// waits on it for the stored copy.
    stored: tokio::sync::watch::Sender<u64>,
}

impl Running {
    /// Tells the waiters that an ended response was stored whole.
    pub(crate) fn stored_one(&self) {
        self.stored.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Hears of each ended response stored from now on.
    pub(crate) fn on_stored(&self) -> tokio::sync::watch::Receiver<u64> {
        self.stored.subscribe()
    }

    pub(crate) fn insert(&self, shape: &Shape) {
        let mut m = self.shapes.lock().unwrap_or_else(|e| e.into_inner());
        m.insert(shape.run_id.clone(), Arc::new(shape.clone()));
    }

    pub(crate) fn get(&self, run_id: &str) -> Option<Arc<Shape>> {
        let m = self.shapes.lock().unwrap_or_else(|e| e.into_inner());
        m.get(run_id).cloned()
    }

    pub(crate) fn remove(&self, run_id: &str) {
        let mut m = self.shapes.lock().unwrap_or_else(|e| e.into_inner());
        m.remove(run_id);
    }
}
