//! How a mounted server is doing, shared by its supervisor and whoever shows it.

use std::sync::{Arc, RwLock};

/// The live connection to one server, or `None` while it is being restarted.
pub(super) type Slot = Arc<RwLock<Option<rmcp::Peer<rmcp::RoleClient>>>>;

/// How a mounted server is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerState {
    /// The first connection is being made.
    Starting,
    /// Connected, with this many tools mounted.
    Running {
        /// Tools the server lists.
        tools: usize,
    },
    /// It stopped; kiln restarts it after a backoff (its tools stay listed, calls fail).
    Restarting {
        /// Why it stopped.
        reason: String,
    },
    /// The last start failed; kiln tries again after a backoff.
    Failed {
        /// Why it could not start.
        reason: String,
    },
    /// Not started: the command only reads the project. Its tools are listed as its last
    /// start recorded them, when one did.
    NotStarted {
        /// How many tools the last start listed, if one is recorded.
        recorded: Option<usize>,
    },
}

impl std::fmt::Display for ServerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerState::Starting => write!(f, "starting"),
            ServerState::Running { tools } => write!(f, "running ({tools} tools)"),
            ServerState::Restarting { reason } => write!(f, "restarting ({reason})"),
            ServerState::Failed { reason } => write!(f, "failed: {reason} (retrying)"),
            ServerState::NotStarted { recorded: Some(n) } => {
                write!(f, "not started ({n} tools as last recorded)")
            }
            ServerState::NotStarted { recorded: None } => write!(f, "not started"),
        }
    }
}

/// A server's state, shared by its supervisor and whoever shows it.
pub type StateCell = Arc<RwLock<ServerState>>;

pub fn set_state(cell: &StateCell, state: ServerState) {
    if let Ok(mut s) = cell.write() {
        *s = state;
    }
}
