//! Who calls the A2A door, and what an operation answers: shared by the operations and the
//! bindings.

use crate::state::AppState;
use crate::table::tasks::A2aTask;
use crate::walls::auth::Principal;
use futures_util::stream::BoxStream;
use kiln_a2a::{A2aError, StreamResponse};
use serde_json::Value;
use std::sync::Arc;

/// Who calls which agent.
pub(crate) struct Caller<'a> {
    /// The server.
    pub state: &'a Arc<AppState>,
    /// The token's actor and ceiling.
    pub who: &'a Principal,
    /// The agent.
    pub agent: &'a str,
    /// The origin the client reached the server by (for the card's URLs).
    pub origin: String,
}

impl Caller<'_> {
    pub(crate) fn task(&self, id: &str) -> Result<Arc<A2aTask>, A2aError> {
        let task = self.state.a2a.get(id, self.who.actor.as_deref())?;
        match task.agent == self.agent {
            true => Ok(task),
            false => Err(A2aError::task_not_found(id)),
        }
    }
}

/// An operation's answer.
pub(crate) enum Reply {
    /// A result.
    Json(Value),
    /// Events, ending when the task's turn does.
    Stream(BoxStream<'static, StreamResponse>),
}

/// `v` as JSON (`null` if it cannot be: the protocol's types always can).
pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// A fresh id for a message or a task.
pub(crate) fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}
