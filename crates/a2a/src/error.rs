//! The protocol's errors: each with its JSON-RPC code, its HTTP status and its problem type
//! (A2A 1.0 §5.4), rendered once per binding.

use serde_json::{Map, Value, json};

/// What went wrong, as the protocol names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The body is not JSON.
    Parse,
    /// Not a valid JSON-RPC request.
    InvalidRequest,
    /// No such method.
    MethodNotFound,
    /// The parameters are wrong.
    InvalidParams,
    /// The server failed.
    Internal,
    /// No such task (or another actor's).
    TaskNotFound,
    /// The task has ended or cannot be cancelled.
    TaskNotCancelable,
    /// Push notifications are not served.
    PushNotificationNotSupported,
    /// The operation is not served (or not in the task's state).
    UnsupportedOperation,
    /// A media type the agent does not take.
    ContentTypeNotSupported,
    /// The remote agent answered something that is not A2A.
    InvalidAgentResponse,
    /// No extended card.
    ExtendedCardNotConfigured,
    /// A protocol version the server does not speak.
    VersionNotSupported,
}

impl ErrorKind {
    /// The JSON-RPC error code.
    pub fn code(self) -> i64 {
        match self {
            ErrorKind::Parse => -32700,
            ErrorKind::InvalidRequest => -32600,
            ErrorKind::MethodNotFound => -32601,
            ErrorKind::InvalidParams => -32602,
            ErrorKind::Internal => -32603,
            ErrorKind::TaskNotFound => -32001,
            ErrorKind::TaskNotCancelable => -32002,
            ErrorKind::PushNotificationNotSupported => -32003,
            ErrorKind::UnsupportedOperation => -32004,
            ErrorKind::ContentTypeNotSupported => -32005,
            ErrorKind::InvalidAgentResponse => -32006,
            ErrorKind::ExtendedCardNotConfigured => -32007,
            ErrorKind::VersionNotSupported => -32009,
        }
    }

    /// The HTTP status of the HTTP+JSON binding.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorKind::TaskNotFound | ErrorKind::MethodNotFound => 404,
            ErrorKind::TaskNotCancelable => 409,
            ErrorKind::ContentTypeNotSupported => 415,
            ErrorKind::InvalidAgentResponse => 502,
            ErrorKind::Internal => 500,
            _ => 400,
        }
    }

    /// The problem type URI of the HTTP+JSON binding.
    pub fn problem_type(self) -> &'static str {
        match self {
            ErrorKind::TaskNotFound => "https://a2a-protocol.org/errors/task-not-found",
            ErrorKind::TaskNotCancelable => "https://a2a-protocol.org/errors/task-not-cancelable",
            ErrorKind::PushNotificationNotSupported => {
                "https://a2a-protocol.org/errors/push-notification-not-supported"
            }
            ErrorKind::UnsupportedOperation => {
                "https://a2a-protocol.org/errors/unsupported-operation"
            }
            ErrorKind::ContentTypeNotSupported => {
                "https://a2a-protocol.org/errors/content-type-not-supported"
            }
            ErrorKind::InvalidAgentResponse => {
                "https://a2a-protocol.org/errors/invalid-agent-response"
            }
            ErrorKind::ExtendedCardNotConfigured => {
                "https://a2a-protocol.org/errors/extended-agent-card-not-configured"
            }
            ErrorKind::VersionNotSupported => {
                "https://a2a-protocol.org/errors/version-not-supported"
            }
            _ => "about:blank",
        }
    }

    /// The title of the problem.
    pub fn title(self) -> &'static str {
        match self {
            ErrorKind::Parse => "Invalid JSON payload",
            ErrorKind::InvalidRequest => "Request payload validation error",
            ErrorKind::MethodNotFound => "Method not found",
            ErrorKind::InvalidParams => "Invalid parameters",
            ErrorKind::Internal => "Internal error",
            ErrorKind::TaskNotFound => "Task not found",
            ErrorKind::TaskNotCancelable => "Task cannot be canceled",
            ErrorKind::PushNotificationNotSupported => "Push Notification is not supported",
            ErrorKind::UnsupportedOperation => "This operation is not supported",
            ErrorKind::ContentTypeNotSupported => "Incompatible content types",
            ErrorKind::InvalidAgentResponse => "Invalid agent response",
            ErrorKind::ExtendedCardNotConfigured => "Extended card not configured",
            ErrorKind::VersionNotSupported => "Protocol version not supported",
        }
    }

    /// The kind a JSON-RPC code names.
    pub fn from_code(code: i64) -> Option<ErrorKind> {
        use ErrorKind::*;
        [
            Parse,
            InvalidRequest,
            MethodNotFound,
            InvalidParams,
            Internal,
            TaskNotFound,
            TaskNotCancelable,
            PushNotificationNotSupported,
            UnsupportedOperation,
            ContentTypeNotSupported,
            InvalidAgentResponse,
            ExtendedCardNotConfigured,
            VersionNotSupported,
        ]
        .into_iter()
        .find(|k| k.code() == code)
    }
}

/// An error of the protocol: its kind, a message for people and context fields (`taskId`,
/// the argument path in `field`).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct A2aError {
    /// What went wrong.
    pub kind: ErrorKind,
    /// For people.
    pub message: String,
    /// Context: the task, the argument path.
    pub data: Map<String, Value>,
}

impl A2aError {
    /// An error of `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> A2aError {
        A2aError {
            kind,
            message: message.into(),
            data: Map::new(),
        }
    }

    /// Invalid parameters at argument path `field` (`params.message.parts[0]`).
    pub fn invalid_params(field: &str, message: impl Into<String>) -> A2aError {
        A2aError::new(ErrorKind::InvalidParams, message).with("field", json!(field))
    }

    /// No task `id` (for this caller).
    pub fn task_not_found(id: &str) -> A2aError {
        A2aError::new(ErrorKind::TaskNotFound, format!("Task not found: \"{id}\""))
            .with("taskId", json!(id))
    }

    /// Adds a context field.
    pub fn with(mut self, name: &str, value: Value) -> A2aError {
        self.data.insert(name.to_string(), value);
        self
    }

    /// The JSON-RPC `error` object.
    pub fn to_jsonrpc(&self) -> Value {
        let mut e = json!({"code": self.kind.code(), "message": self.message});
        if !self.data.is_empty() {
            e["data"] = Value::Object(self.data.clone());
        }
        e
    }

    /// The RFC 9457 problem details of the HTTP+JSON binding.
    pub fn to_problem(&self) -> Value {
        let mut p = Map::new();
        p.insert("type".into(), json!(self.kind.problem_type()));
        p.insert("title".into(), json!(self.kind.title()));
        p.insert("status".into(), json!(self.kind.http_status()));
        p.insert("detail".into(), json!(self.message));
        for (k, v) in &self.data {
            p.entry(k.clone()).or_insert_with(|| v.clone());
        }
        Value::Object(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_keeps_its_code_and_status() {
        let e = A2aError::task_not_found("t1");
        assert_eq!(e.to_jsonrpc()["code"], -32001);
        assert_eq!(e.to_jsonrpc()["data"]["taskId"], "t1");
        let p = e.to_problem();
        assert_eq!(p["status"], 404);
        assert_eq!(p["type"], "https://a2a-protocol.org/errors/task-not-found");
        assert_eq!(
            ErrorKind::from_code(-32009),
            Some(ErrorKind::VersionNotSupported)
        );
        assert_eq!(ErrorKind::TaskNotCancelable.http_status(), 409);
    }
}
