//! How a tool call ended: its outcome, the failure kinds and the failure a model sees
//! (sanitized for unexpected ones) beside the detail kept for logs. Depends on nothing of kiln
//! but content blocks, so every layer can name an outcome.

use serde::Serialize;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Why a tool call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// Arguments failed the schema.
    InvalidArguments,
    /// The caller lacks a capability the tool requires.
    Capability,
    /// The handler threw `tool_error(msg)`: the message is for the model.
    ToolError,
    /// A Rhai runtime error in the handler.
    Runtime,
    /// A sandbox limit was hit (operations, depth, size).
    Limit,
    /// The call's deadline passed.
    Deadline,
    /// The call was cancelled (Ctrl-C).
    Cancelled,
    /// No such tool was offered.
    UnknownTool,
    /// A host function call was refused (capability scope, approval).
    Denied,
    /// The tool's rate limit had no free slot (not retried; the message says when one frees).
    RateLimited,
    /// The handler's result did not match the tool's `.output(...)` schema.
    InvalidOutput,
    /// The call stopped to ask its caller for input, which comes in a retried request (an MCP
    /// 2026-07-28 input-required result); the door answers with the questions instead.
    InputRequired,
}

impl FailureKind {
    /// Snake-case name, as in the JSON result.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::InvalidArguments => "invalid_arguments",
            FailureKind::Capability => "capability",
            FailureKind::ToolError => "tool_error",
            FailureKind::Runtime => "runtime",
            FailureKind::Limit => "limit",
            FailureKind::Deadline => "deadline",
            FailureKind::Cancelled => "cancelled",
            FailureKind::UnknownTool => "unknown_tool",
            FailureKind::Denied => "denied",
            FailureKind::RateLimited => "rate_limited",
            FailureKind::InvalidOutput => "invalid_output",
            FailureKind::InputRequired => "input_required",
        }
    }

    /// Whether `.retries(n)` re-runs a handler that failed this way: only an unexpected
    /// runtime error (a transient I/O failure, a flaky service) can pass on a second try.
    /// The rest would fail the same way again or must not be repeated: a refusal or a refused
    /// approval (asking again is nagging), the handler's own `tool_error`, a sandbox limit,
    /// the deadline (the time is spent), a cancel, and arguments or capabilities checked before
    /// the handler ran.
    pub fn is_retryable(self) -> bool {
        match self {
            FailureKind::Runtime => true,
            FailureKind::InvalidArguments
            | FailureKind::Capability
            | FailureKind::ToolError
            | FailureKind::Limit
            | FailureKind::Deadline
            | FailureKind::Cancelled
            | FailureKind::UnknownTool
            | FailureKind::RateLimited
            | FailureKind::InvalidOutput
            | FailureKind::InputRequired
            | FailureKind::Denied => false,
        }
    }
}

/// A failed call: what the model may see, and the full detail for logs and the CLI.
#[derive(Debug, Clone, Serialize, serde::Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct ToolFailure {
    /// The kind of failure.
    pub kind: FailureKind,
    /// The message shown to the model (sanitized for unexpected failures).
    pub message: String,
    /// Full detail (Rhai error with position) for logs and the CLI; never sent to a model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl ToolFailure {
    /// A failure whose message is safe to show as is.
    pub fn visible(kind: FailureKind, message: impl Into<String>) -> Self {
        ToolFailure {
            kind,
            message: message.into(),
            detail: None,
        }
    }

    /// A failure the handler reports on purpose, its message for the model (the Rust side of
    /// `tool_error(msg)`).
    pub fn tool_error(message: impl Into<String>) -> Self {
        Self::visible(FailureKind::ToolError, message)
    }

    /// A failure shown to the model only as `Tool failed (KIND)`.
    pub fn sanitized(kind: FailureKind, detail: impl Into<String>) -> Self {
        ToolFailure {
            kind,
            message: format!("Tool failed ({})", kind.as_str()),
            detail: Some(detail.into()),
        }
    }
}

impl ToolFailure {
    /// A result that breaks the content rules or the tool's `.output` schema.
    pub fn invalid_output(msg: &str) -> Self {
        ToolFailure::visible(
            FailureKind::InvalidOutput,
            format!("Tool failed (invalid_output): {msg}"),
        )
    }
}

/// The outcome of one tool call (serializable so a durable journal can keep it).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ToolOutcome {
    /// The result value, or why there is none.
    pub result: Result<Value, ToolFailure>,
    /// Wall time of the call, validation included.
    pub duration: Duration,
    /// Handler attempts made (1 + retries used).
    pub attempts: u32,
}

impl ToolOutcome {
    /// A failure outcome that never reached the handler.
    pub fn failed(failure: ToolFailure, started: Instant) -> Self {
        ToolOutcome {
            result: Err(failure),
            duration: started.elapsed(),
            attempts: 0,
        }
    }

    /// True when the call succeeded.
    pub fn is_ok(&self) -> bool {
        self.result.is_ok()
    }

    /// `{"success": true, "result", "duration_ms"}` or `{"success": false, "error": {...}}`.
    ///
    /// With `with_detail`, unexpected failures carry their detail (for the CLI, never a model).
    pub fn to_json(&self, with_detail: bool) -> Value {
        let ms = (self.duration.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0;
        match &self.result {
            Ok(v) => json!({"success": true, "result": v, "duration_ms": ms}),
            Err(f) => {
                let mut err = json!({"kind": f.kind.as_str(), "message": f.message});
                if let (true, Some(d)) = (with_detail, &f.detail) {
                    err["detail"] = json!(d);
                }
                json!({"success": false, "error": err, "duration_ms": ms})
            }
        }
    }

    /// The text a model receives as the tool result (content blocks as
    /// [`crate::model::content::render_text`] renders them).
    pub fn model_text(&self) -> String {
        match &self.result {
            Ok(Value::String(s)) => s.clone(),
            Ok(v) if let Some(Ok(blocks)) = crate::model::content::from_result(v) => {
                crate::model::content::render_text(&blocks)
            }
            // Written straight into bytes: `Display` goes through a formatter per fragment.
            Ok(v) => serde_json::to_string(v).unwrap_or_default(),
            Err(f) => f.message.clone(),
        }
    }
}
