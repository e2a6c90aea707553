//! What every request handler reaches: the host, the agent served, the connection's outbox,
//! its sessions and what the client said it can do.

use crate::session::Sessions;
use crate::wire::Outbox;
use kiln_agent::RunOptions;
use std::sync::{Arc, Mutex};

/// What `kiln acp` serves: the agent, and the options each prompt's run starts from.
#[derive(Clone, Default)]
pub struct Options {
    /// The agent that answers every session.
    pub agent: String,
    /// Each run's options (provider overrides, grants, context, limits); the door sets the
    /// session, history, cancellation and approver of each prompt.
    pub run: RunOptions,
}

/// What the client offered in `initialize`'s `clientCapabilities`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCaps {
    /// `fs.readTextFile`.
    pub read_text_file: bool,
    /// `fs.writeTextFile`.
    pub write_text_file: bool,
    /// `terminal`.
    pub terminal: bool,
}

/// The connection's state, shared by its request handlers.
pub struct Door {
    /// The host the agent runs on (with its database).
    pub host: Arc<kiln_host::Host>,
    /// The database sessions are kept in.
    pub db: Arc<kiln_db::Db>,
    /// The agent and its runs' options.
    pub options: Options,
    /// Messages to the client.
    pub outbox: Arc<Outbox>,
    /// This connection's sessions.
    pub sessions: Sessions,
    /// The client's capabilities (defaults until `initialize`).
    pub client: Mutex<ClientCaps>,
}

impl Door {
    /// The client's capabilities.
    pub fn client_caps(&self) -> ClientCaps {
        self.client.lock().map(|c| *c).unwrap_or_default()
    }

    /// Sends `update` as a `session/update` notification of session `id`.
    pub fn update(&self, id: &str, update: serde_json::Value) {
        self.outbox.notify(
            "session/update",
            serde_json::json!({"sessionId": id, "update": update}),
        );
    }
}
