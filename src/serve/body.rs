//! Request bodies: JSON only (which also keeps browsers' simple cross-site posts out), within
//! the size limit, with errors in OpenAI's shape.

use super::error::ApiError;
use super::state::AppState;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use serde_json::Value;
use std::sync::Arc;

/// A JSON object body.
pub struct JsonBody(pub Value);

impl FromRequest<Arc<AppState>> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &Arc<AppState>) -> Result<Self, ApiError> {
        let is_json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.trim_start()
                    .to_ascii_lowercase()
                    .starts_with("application/json")
            });
        if !is_json {
            return Err(ApiError::bad_request(
                "",
                "the body must be JSON (Content-Type: application/json)",
            ));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::too_large(state.options.max_body)
            } else {
                ApiError::bad_request("", format!("could not read the body: {e}"))
            }
        })?;
        let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
            ApiError::bad_request(
                "",
                format!(
                    "the body is not valid JSON: line {} column {}: {e}",
                    e.line(),
                    e.column()
                ),
            )
        })?;
        if !value.is_object() {
            return Err(ApiError::bad_request("", "the body must be a JSON object"));
        }
        Ok(JsonBody(value))
    }
}
