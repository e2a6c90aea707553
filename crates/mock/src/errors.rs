//! The error bodies of the services the mock stands for (OpenAI's, Anthropic's, Google's) and
//! protobuf-JSON field reading: the leaf the request checks share.

use serde_json::{Value, json};

/// A rejected request: status and error body.
pub type Rejection = (u16, Value);

pub fn anthropic_error(status: u16, kind: &str, message: impl Into<String>) -> Rejection {
    (
        status,
        json!({"type": "error", "error": {"type": kind, "message": message.into()}, "request_id": "req_mock"}),
    )
}

pub fn openai_error(
    status: u16,
    message: impl Into<String>,
    param: Option<&str>,
    code: Option<&str>,
) -> Rejection {
    (
        status,
        json!({"error": {"message": message.into(), "type": "invalid_request_error", "param": param, "code": code}}),
    )
}

/// Google's status name of an HTTP status.
pub fn gemini_status_name(status: u16) -> &'static str {
    match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        500 => "INTERNAL",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "UNKNOWN",
    }
}

/// Google's error body.
pub fn gemini_error(status: u16, message: impl Into<String>) -> Value {
    json!({"error": {"code": status, "message": message.into(), "status": gemini_status_name(status)}})
}

/// A field of a protobuf-JSON object in either spelling: `camel` or its snake_case.
pub fn field<'v>(v: &'v Value, camel: &str) -> &'v Value {
    if let Some(found) = v.get(camel) {
        return found;
    }
    let mut snake = String::with_capacity(camel.len() + 4);
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            snake.push('_');
            snake.push(c.to_ascii_lowercase());
        } else {
            snake.push(c);
        }
    }
    v.get(&snake).unwrap_or(&Value::Null)
}

/// A refusal: status, AWS error type and message.
pub type Refusal = (u16, &'static str, String);
