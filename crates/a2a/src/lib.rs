//! The A2A (Agent2Agent) protocol, version 1.0, as JSON: what kiln's A2A server and client
//! send and read. The shapes follow `a2a.proto`'s JSON mapping (camelCase fields, enum values
//! as their proto names such as `"TASK_STATE_COMPLETED"`, a [`Part`] holding one of text, raw
//! bytes, a URL or data); [`error`] holds the protocol's errors with their JSON-RPC codes and
//! HTTP statuses.

pub mod card;
pub mod error;
pub mod types;

pub use card::{AgentCapabilities, AgentCard, AgentInterface, AgentSkill};
pub use error::A2aError;
pub use types::{
    Artifact, ArtifactUpdate, AuthenticationInfo, Message, Part, PushConfig, Role, StatusUpdate,
    StreamResponse, Task, TaskState, TaskStatus,
};

/// The protocol version kiln speaks (the `A2A-Version` header's value, the interfaces').
pub const PROTOCOL_VERSION: &str = "1.0";

/// The header a client names the protocol version it speaks in.
pub const VERSION_HEADER: &str = "A2A-Version";

/// The JSON-RPC binding's name in an agent card's interfaces.
pub const BINDING_JSONRPC: &str = "JSONRPC";

/// The HTTP+JSON (REST) binding's name in an agent card's interfaces.
pub const BINDING_REST: &str = "HTTP+JSON";

/// Now, as RFC 3339 in UTC (a task status's `timestamp`).
pub fn now_timestamp() -> String {
    jiff::Timestamp::now().to_string()
}

/// `secs` since the epoch as RFC 3339 in UTC; the epoch itself when out of range.
pub fn timestamp_at(secs: f64) -> String {
    let nanos = (secs * 1e9) as i128;
    jiff::Timestamp::from_nanosecond(nanos)
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        .to_string()
}

/// Seconds since the epoch of an RFC 3339 timestamp, `None` when it is not one.
pub fn parse_timestamp(text: &str) -> Option<f64> {
    let t: jiff::Timestamp = text.parse().ok()?;
    Some(t.as_nanosecond() as f64 / 1e9)
}
