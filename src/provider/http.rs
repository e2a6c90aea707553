//! Sending provider requests: one shared client, timeouts, retries with backoff that honour
//! `retry-after`, `retry-after-ms` and `x-should-retry`, and error bodies turned into messages.

use super::{Endpoint, ProviderError};
use reqwest::header::HeaderMap;
use reqwest::{Client, Response, StatusCode};
use serde_json::Value;
use std::sync::OnceLock;
use std::time::Duration;

/// Longest wait a `retry-after` may impose.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

/// The shared HTTP client (connection pooling across requests and runs).
pub fn client() -> &'static Client {
    static CLIENT: OnceLock<Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("kiln/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_else(|_| Client::new())
    })
}

fn retryable_status(status: StatusCode) -> bool {
    matches!(status.as_u16(), 408 | 409 | 429) || status.is_server_error()
}

/// How long to wait before retry `attempt` (0-based), from headers or exponential backoff.
pub fn retry_delay(headers: Option<&HeaderMap>, attempt: u32) -> Duration {
    let header = |name: &str| {
        headers
            .and_then(|h| h.get(name))
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Duration::from_secs_f64((ms / 1000.0).clamp(0.0, MAX_RETRY_WAIT.as_secs_f64()));
    }
    if let Some(s) = header("retry-after").and_then(|v| v.parse::<f64>().ok()) {
        return Duration::from_secs_f64(s.clamp(0.0, MAX_RETRY_WAIT.as_secs_f64()));
    }
    Duration::from_millis(500u64.saturating_mul(1 << attempt.min(4)))
}

/// The message inside an error body (`{"error": {"message"}}`, `{"error": "..."}`), or the text.
pub fn error_message(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        let e = &v["error"];
        if let Some(m) = e["message"]
            .as_str()
            .or_else(|| e.as_str())
            .or_else(|| v["message"].as_str())
        {
            let kind = e["type"]
                .as_str()
                .map(|t| format!("{t}: "))
                .unwrap_or_default();
            return format!("{kind}{m}");
        }
    }
    let text = body.trim();
    if text.is_empty() {
        "(empty body)".into()
    } else {
        text.chars().take(500).collect()
    }
}

/// POSTs `body` to `url`, retrying what may be retried; returns a 2xx response.
pub async fn post(
    provider: &'static str,
    endpoint: &Endpoint,
    url: &str,
    headers: HeaderMap,
    body: &Value,
) -> Result<Response, ProviderError> {
    let mut attempt = 0;
    loop {
        let result = client()
            .post(url)
            .headers(headers.clone())
            .timeout(endpoint.timeout)
            .json(body)
            .send()
            .await;
        let (retry, err, wait_headers) = match result {
            Ok(resp) if resp.status().is_success() => return Ok(resp),
            Ok(resp) => {
                let status = resp.status();
                let resp_headers = resp.headers().clone();
                let should = resp_headers
                    .get("x-should-retry")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string);
                let text = resp.text().await.unwrap_or_default();
                let retry = match should.as_deref() {
                    Some("true") => true,
                    Some("false") => false,
                    _ => retryable_status(status),
                };
                let err = ProviderError::Http {
                    provider,
                    status: status.as_u16(),
                    message: error_message(&text),
                };
                (retry, err, Some(resp_headers))
            }
            Err(e) => {
                let retry = e.is_timeout() || e.is_connect() || e.is_request();
                (
                    retry,
                    ProviderError::Transport {
                        provider,
                        message: describe(&e, url),
                    },
                    None,
                )
            }
        };
        if !retry || attempt >= endpoint.max_retries {
            return Err(err);
        }
        let wait = retry_delay(wait_headers.as_ref(), attempt);
        tracing::warn!(
            "{err}; retrying in {:.1}s (attempt {}/{})",
            wait.as_secs_f64(),
            attempt + 1,
            endpoint.max_retries
        );
        tokio::time::sleep(wait).await;
        attempt += 1;
    }
}

/// A transport error in words, without the request's headers.
pub fn describe(e: &reqwest::Error, url: &str) -> String {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else if e.is_body() || e.is_decode() {
        "the reply body broke off"
    } else {
        "failed"
    };
    let mut source = std::error::Error::source(e);
    let mut detail = String::new();
    while let Some(s) = source {
        detail = s.to_string();
        source = s.source();
    }
    if detail.is_empty() {
        format!("{what} ({url})")
    } else {
        format!("{what} ({url}): {detail}")
    }
}

/// Reads a whole JSON reply.
pub async fn json_body(provider: &'static str, resp: Response) -> Result<Value, ProviderError> {
    let url = resp.url().to_string();
    let bytes = resp.bytes().await.map_err(|e| ProviderError::Transport {
        provider,
        message: describe(&e, &url),
    })?;
    serde_json::from_slice(&bytes).map_err(|e| ProviderError::Malformed {
        provider,
        message: format!(
            "reply is not JSON ({e}): {}",
            String::from_utf8_lossy(&bytes)
                .chars()
                .take(200)
                .collect::<String>()
        ),
    })
}

/// Calls `on_chunk` with each body chunk as it arrives.
pub async fn for_each_chunk(
    provider: &'static str,
    mut resp: Response,
    mut on_chunk: impl FnMut(&[u8]) -> Result<(), ProviderError>,
) -> Result<(), ProviderError> {
    let url = resp.url().to_string();
    loop {
        match resp.chunk().await {
            Ok(Some(bytes)) => on_chunk(&bytes)?,
            Ok(None) => return Ok(()),
            Err(e) => {
                return Err(ProviderError::Transport {
                    provider,
                    message: describe(&e, &url),
                });
            }
        }
    }
}

/// Reads an API key from the environment, or says which variable to set.
pub fn api_key(provider: &'static str, var: &str) -> Result<String, ProviderError> {
    match std::env::var(var) {
        Ok(k) if !k.trim().is_empty() => Ok(k.trim().to_string()),
        _ => Err(ProviderError::MissingKey {
            provider,
            var: var.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_headers_take_precedence_over_backoff() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_delay(None, 0), Duration::from_millis(500));
        assert_eq!(retry_delay(None, 2), Duration::from_millis(2000));
        h.insert("retry-after", "2".parse().expect("header"));
        assert_eq!(retry_delay(Some(&h), 0), Duration::from_secs(2));
        h.insert("retry-after-ms", "150".parse().expect("header"));
        assert_eq!(retry_delay(Some(&h), 0), Duration::from_millis(150));
        h.insert("retry-after-ms", "99999999".parse().expect("header"));
        assert_eq!(retry_delay(Some(&h), 0), MAX_RETRY_WAIT);
    }

    #[test]
    fn error_messages_come_from_each_shape() {
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "overloaded_error: Overloaded"
        );
        assert_eq!(
            error_message(r#"{"error":"model 'x' not found"}"#),
            "model 'x' not found"
        );
        assert_eq!(error_message("plain"), "plain");
    }
}
