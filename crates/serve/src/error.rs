//! Errors as HTTP responses in OpenAI's shape (`{"error": {message, type, param, code}}`), so
//! client libraries raise their usual exceptions for each status.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error answered to a client.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// OpenAI's `type` field.
    pub kind: &'static str,
    /// OpenAI's `code` field.
    pub code: Option<&'static str>,
    /// The argument at fault (`param`).
    pub param: Option<String>,
    /// What went wrong, for people.
    pub message: String,
    /// Seconds a client should wait before retrying (`Retry-After`).
    pub retry_after: Option<u64>,
    /// What a few errors add (boxed: an error stays small to return).
    pub more: Option<Box<More>>,
}

/// What a few errors add to their status and message.
#[derive(Debug, Clone, Default)]
pub struct More {
    /// Where a client gets a token (`WWW-Authenticate` of a 401).
    pub challenge: Option<String>,
    /// More fields of the error object (the decision that won, in a 409 to a decision).
    pub fields: serde_json::Map<String, serde_json::Value>,
}

impl ApiError {
    fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            kind,
            code: None,
            param: None,
            message: message.into(),
            retry_after: None,
            more: None,
        }
    }

    /// 400: the request is malformed; `param` names the field.
    pub fn bad_request(param: &str, message: impl Into<String>) -> Self {
        let mut e = Self::new(StatusCode::BAD_REQUEST, "invalid_request_error", message);
        if !param.is_empty() {
            e.param = Some(param.to_string());
        }
        e
    }

    /// 401: no or an unknown bearer token.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        let mut e = Self::new(StatusCode::UNAUTHORIZED, "invalid_request_error", message);
        e.code = Some("invalid_api_key");
        e
    }

    /// This error with the `WWW-Authenticate` challenge that says where to get a token.
    pub fn with_challenge(mut self, challenge: String) -> Self {
        self.more.get_or_insert_with(Default::default).challenge = Some(challenge);
        self
    }

    /// 403: the request asks for more than the token allows.
    pub fn forbidden(param: &str, message: impl Into<String>) -> Self {
        let mut e = Self::new(StatusCode::FORBIDDEN, "permission_error", message);
        e.param = Some(param.to_string());
        e
    }

    /// 404: an unknown agent, run, session or route.
    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        let mut e = Self::new(StatusCode::NOT_FOUND, "invalid_request_error", message);
        e.code = Some(code);
        e
    }

    /// 409: the request came too late to take effect (another decision won); `code` says what.
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        let mut e = Self::new(StatusCode::CONFLICT, "invalid_request_error", message);
        e.code = Some(code);
        e
    }

    /// This error with its field path (`param`, and where the message names it) rewritten by
    /// `rename`: a door that reads its body through another door's reader names its own
    /// fields.
    pub fn renamed(mut self, rename: impl Fn(&str) -> String) -> Self {
        if let Some(param) = &self.param {
            let new = rename(param);
            self.message = self.message.replace(param.as_str(), &new);
            self.param = Some(new);
        }
        self
    }

    /// This error with one more field in its error object.
    pub fn with_field(mut self, name: &str, value: serde_json::Value) -> Self {
        self.more
            .get_or_insert_with(Default::default)
            .fields
            .insert(name.to_string(), value);
        self
    }

    /// 413: the body is larger than `--max-body`.
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            format!("the request body is larger than the server's limit of {limit} bytes"),
        )
    }

    /// 415: the body is not JSON (a browser's form or `text/plain` post, sent to another site
    /// without asking first).
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        let mut e = Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid_request_error",
            message,
        );
        e.code = Some("unsupported_media_type");
        e
    }

    /// 429: every run slot and queue place is taken.
    pub fn busy(retry_after: u64) -> Self {
        let mut e = Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            "the server is running as many agents as it allows and its queue is full; retry later",
        );
        e.code = Some("rate_limit_exceeded");
        e.retry_after = Some(retry_after);
        e
    }

    /// 503: the server is shutting down.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "server_error", message)
    }

    /// 502: the durable engine behind the server answered with an error.
    pub fn upstream(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_GATEWAY, "server_error", message)
    }

    /// 500: the run failed.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "server_error", message)
    }

    /// 504: the run's deadline passed.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(StatusCode::GATEWAY_TIMEOUT, "timeout", message)
    }

    /// The `{"error": {...}}` body.
    pub fn body(&self) -> serde_json::Value {
        let mut error = json!({
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        });
        if let (Some(more), Some(error)) = (&self.more, error.as_object_mut()) {
            error.extend(more.fields.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        json!({ "error": error })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (self.status, axum::Json(self.body())).into_response();
        if let Some(secs) = self.retry_after {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if let Some(value) = self
            .more
            .as_ref()
            .and_then(|m| m.challenge.as_deref())
            .and_then(|c| HeaderValue::from_str(c).ok())
        {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
        resp
    }
}

/// The status and error of a failed run, as Chat Completions reports it.
pub fn from_run_error(e: &kiln_agent::RunError) -> ApiError {
    use kiln_agent::RunErrorKind;
    let message = kiln_core::error::public::scrub(&e.to_string());
    let mut error = match &e.kind {
        RunErrorKind::Deadline => ApiError::timeout(message),
        RunErrorKind::Cancelled => ApiError::unavailable("the run was cancelled"),
        // A call the run's grants do not allow: the request's (or its token's) doing, not the
        // server's failure.
        RunErrorKind::Capability(_) => ApiError {
            param: None,
            ..ApiError::forbidden("", message)
        },
        _ => ApiError::internal(message),
    };
    // The kind, as the run's `error.kind` says it elsewhere (`capability`, `tool_loop`, ...).
    error.code = Some(error_kind(e));
    error
}

/// A short name for how a run failed (`cancelled`, `deadline`, `provider`, ...).
pub fn error_kind(e: &kiln_agent::RunError) -> &'static str {
    match &e.kind {
        kiln_agent::RunErrorKind::JsonParse(_)
        | kiln_agent::RunErrorKind::InvalidPlan(_)
        | kiln_agent::RunErrorKind::MaxSteps(_) => "planner",
        other => other.name(),
    }
}
