//! Sending provider requests: one shared client that stays on the base URL's origin,
//! timeouts, retries with backoff that honour `retry-after`, `retry-after-ms` and
//! `x-should-retry`, bounded reads, and error bodies turned into messages.

use super::error::{quote, quote_bytes};
use super::{Endpoint, Limits, ProviderError};
pub use kiln_egress::describe;
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use reqwest::{Client, Response, StatusCode, Url, redirect};
use serde_json::Value;
use std::sync::OnceLock;
use std::time::Duration;
use tokio::time::Instant;

/// Longest wait a `retry-after` may impose.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

/// Redirects followed within one origin before giving up.
const MAX_REDIRECTS: usize = 10;

/// Most bytes of an error body read: the message is at its start.
const MAX_ERROR_BODY: usize = 64 << 10;

/// Why a redirect was not followed.
#[derive(Debug, thiserror::Error)]
enum RedirectRefused {
    #[error(
        "refused to follow a redirect to another origin ({to}); provider requests (and their API key) stay on {origin}"
    )]
    OtherOrigin { to: String, origin: String },
    #[error("more than {MAX_REDIRECTS} redirects")]
    TooMany,
}

fn origin(url: &Url) -> (String, Option<String>, Option<u16>) {
    (
        url.scheme().to_string(),
        url.host_str().map(str::to_ascii_lowercase),
        url.port_or_known_default(),
    )
}

/// Follows a redirect only within the origin (scheme, host, port) of the first request: the
/// client drops `Authorization` across origins but not Anthropic's `x-api-key`, so no provider
/// request may leave the origin it was sent to.
fn redirect_policy() -> redirect::Policy {
    redirect::Policy::custom(|attempt| {
        let Some(first) = attempt.previous().first().cloned() else {
            return attempt.stop();
        };
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error(RedirectRefused::TooMany);
        }
        if origin(attempt.url()) != origin(&first) {
            let to = attempt.url().to_string();
            return attempt.error(RedirectRefused::OtherOrigin {
                to: quote(&to),
                origin: first.origin().ascii_serialization(),
            });
        }
        attempt.follow()
    })
}

mod activity;
mod lanes;
use activity::SseActivity;
use lanes::Lanes;
pub use lanes::STREAMS_PER_LANE;

/// The shared HTTP client (connection pooling across requests and runs). Provider requests go
/// through lanes of such clients, at most [`STREAMS_PER_LANE`] requests on each.
pub fn client() -> &'static Client {
    static CLIENT: OnceLock<Client> = OnceLock::new();
    CLIENT.get_or_init(tls_client)
}

fn tls_client() -> Client {
    builder(kiln_egress::tls::client_builder())
        .build()
        // Only a broken TLS setup fails here; the provider is installed, so the default builds.
        .unwrap_or_default()
}

/// The client for plain `http://` endpoints (a local model, a mock): it never loads the
/// system's trust store, which is a third of a short `kiln ask`'s start-up. It trusts no
/// certificate at all, so should it ever meet `https` it fails closed.
fn plain_client() -> Client {
    builder(kiln_egress::tls::plain_client_builder())
        .build()
        .unwrap_or_else(|_| client().clone())
}

/// Provider requests over TLS, spread over lanes (HTTP/2 where the provider serves it).
static LANES: Lanes = Lanes::new(tls_client);
/// Provider requests to plain `http://` endpoints.
static PLAIN_LANES: Lanes = Lanes::new(plain_client);

fn builder(tls: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
    tls.connect_timeout(Duration::from_secs(10))
        .redirect(redirect_policy())
        .user_agent(concat!("kiln/", env!("CARGO_PKG_VERSION")))
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
            return quote(&format!("{kind}{m}"));
        }
    }
    let text = body.trim();
    if text.is_empty() {
        "(empty body)".into()
    } else {
        quote(text)
    }
}

/// What to check when the service refuses the key.
fn key_hint(endpoint: &Endpoint) -> String {
    match (&endpoint.key_var, &endpoint.api_key) {
        (Some(var), Some(_)) => format!(" (check the API key in {var})"),
        (Some(var), None) => format!(" (no API key was sent: set {var})"),
        (None, _) => String::new(),
    }
}

/// `body` as the bytes [`post`] sends.
pub fn json(body: &Value) -> bytes::Bytes {
    serde_json::to_vec(body).unwrap_or_default().into()
}

/// `url` parsed, remembered per thread: a run posts to the same URL round after round, and
/// parsing it each time cost more than the rest of building the request. `None` when it is not
/// a URL (the request then fails with reqwest's own error).
fn parsed(url: &str) -> Option<reqwest::Url> {
    thread_local! {
        static LAST: std::cell::RefCell<Option<(String, reqwest::Url)>> =
            const { std::cell::RefCell::new(None) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if let Some((_, parsed)) = last.as_ref().filter(|(text, _)| text == url) {
            return Some(parsed.clone());
        }
        let parsed = reqwest::Url::parse(url).ok()?;
        *last = Some((url.to_string(), parsed.clone()));
        Some(parsed)
    })
}

/// POSTs the JSON `body` to `url`, retrying what may be retried; returns a 2xx response. The request
/// timeout covers a whole reply, or for a `stream`ed one the wait for it to start (the body
/// then has [`Limits`]' idle and overall timeouts, in [`for_each_chunk`]).
pub async fn post(
    provider: &'static str,
    endpoint: &Endpoint,
    url: &str,
    mut headers: HeaderMap,
    body: bytes::Bytes,
    stream: bool,
) -> Result<Response, ProviderError> {
    headers.insert(
        CONTENT_TYPE,
        reqwest::header::HeaderValue::from_static("application/json"),
    );
    let secrets = endpoint.secrets();
    let mut attempt = 0;
    let target = parsed(url);
    loop {
        let lanes = match &target {
            Some(u) if u.scheme() == "http" => &PLAIN_LANES,
            _ => &LANES,
        };
        let (client, place) = lanes.take();
        let request = match &target {
            Some(u) => client.post(u.clone()),
            None => client.post(url),
        };
        let request = request.headers(headers.clone()).body(body.clone());
        let result = if stream {
            match tokio::time::timeout(endpoint.timeout, request.send()).await {
                Ok(r) => r.map_err(|e| (e.is_connect() || e.is_request(), describe(&e, url))),
                Err(_) => Err((
                    true,
                    format!(
                        "timed out ({url}): the reply did not start within {:.1} s (--request-timeout)",
                        endpoint.timeout.as_secs_f64()
                    ),
                )),
            }
        } else {
            request.timeout(endpoint.timeout).send().await.map_err(|e| {
                (
                    e.is_timeout() || e.is_connect() || e.is_request(),
                    describe(&e, url),
                )
            })
        };
        let (retry, err, wait_headers) = match result {
            Ok(mut resp) if resp.status().is_success() => {
                // The lane's place goes with the body: its stream is open until it is read.
                resp.extensions_mut().insert(place);
                return Ok(resp);
            }
            Ok(resp) => {
                let status = resp.status();
                let resp_headers = resp.headers().clone();
                let should = resp_headers
                    .get("x-should-retry")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string);
                let text = read_error_body(resp, endpoint.timeout).await;
                let retry = match should.as_deref() {
                    Some("true") => true,
                    Some("false") => false,
                    _ => retryable_status(status),
                };
                let mut message = error_message(&text);
                if status == StatusCode::UNAUTHORIZED {
                    message.push_str(&key_hint(endpoint));
                }
                let err = ProviderError::Http {
                    provider,
                    status: status.as_u16(),
                    message,
                };
                (retry, err, Some(resp_headers))
            }
            Err((retry, message)) => (retry, ProviderError::Transport { provider, message }, None),
        };
        // Redacted before it is logged below, not only when it is returned.
        let err = secrets.error(err);
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

/// The start of an error body (at most [`MAX_ERROR_BODY`] bytes, within `timeout`).
async fn read_error_body(mut resp: Response, timeout: Duration) -> String {
    let mut body = Vec::new();
    let read = async {
        while body.len() < MAX_ERROR_BODY {
            match resp.chunk().await {
                Ok(Some(bytes)) => body.extend_from_slice(&bytes),
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(timeout, read).await;
    body.truncate(MAX_ERROR_BODY);
    String::from_utf8_lossy(&body).into_owned()
}

fn too_large(provider: &'static str, limits: &Limits, start: &[u8]) -> ProviderError {
    ProviderError::TooLarge {
        provider,
        what: "the reply",
        limit: limits.max_reply_bytes,
        setting: "--max-reply-bytes or .max_reply_bytes(n)",
        start: quote_bytes(start),
    }
}

/// The media type of a reply (`text/html` of `text/html; charset=utf-8`), if it says.
fn media_type(resp: &Response) -> Option<String> {
    let v = resp.headers().get(CONTENT_TYPE)?.to_str().ok()?;
    Some(v.split(';').next().unwrap_or(v).trim().to_ascii_lowercase())
}

/// Reads a whole JSON reply of at most `limits.max_reply_bytes`.
pub async fn json_body(
    provider: &'static str,
    resp: Response,
    limits: &Limits,
) -> Result<Value, ProviderError> {
    let body = whole_body(provider, resp, limits).await?;
    body.json()
}

/// A reply's whole body (within the size limit) and its media type.
pub struct Body {
    provider: &'static str,
    /// The bytes.
    pub bytes: Vec<u8>,
    kind: Option<String>,
}

impl Body {
    /// The body as JSON, or an error quoting what it is instead.
    pub fn json(&self) -> Result<Value, ProviderError> {
        let (provider, bytes, kind) = (self.provider, &self.bytes, &self.kind);
        serde_json::from_slice(bytes).map_err(|e| ProviderError::Malformed {
            provider,
            message: format!(
                "reply is not JSON ({e}; content-type {}): {}",
                kind.as_deref().unwrap_or("not given"),
                quote_bytes(bytes)
            ),
        })
    }
}

/// Reads a reply's whole body, within the size limit.
pub async fn whole_body(
    provider: &'static str,
    resp: Response,
    limits: &Limits,
) -> Result<Body, ProviderError> {
    let kind = media_type(&resp);
    let mut bytes = Vec::new();
    read_body(provider, resp, limits, false, |chunk| {
        bytes.extend_from_slice(chunk);
        Ok(())
    })
    .await?;
    Ok(Body {
        provider,
        bytes,
        kind,
    })
}

/// Checks that a streamed reply is of one of the `accepted` media types; anything else (an
/// HTML error page from a proxy, say) is reported with its type and the start of its body.
pub async fn expect_content_type(
    provider: &'static str,
    mut resp: Response,
    accepted: &[&str],
    limits: &Limits,
) -> Result<Response, ProviderError> {
    let kind = media_type(&resp);
    if kind.as_deref().is_some_and(|k| accepted.contains(&k)) {
        return Ok(resp);
    }
    let mut start = Vec::new();
    let read = async {
        while start.len() < super::error::QUOTE_CHARS * 4 {
            match resp.chunk().await {
                Ok(Some(bytes)) => start.extend_from_slice(&bytes),
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(limits.idle_timeout, read).await;
    Err(ProviderError::Malformed {
        provider,
        message: format!(
            "expected a {} reply to a streamed request, got {}; it starts: {}",
            accepted.join(" or "),
            kind.as_deref().unwrap_or("no content-type"),
            quote_bytes(&start).trim()
        ),
    })
}

/// Calls `on_chunk` with each body chunk of a streamed reply as it arrives, within the idle
/// and overall timeouts and the size limit of `limits`.
pub async fn for_each_chunk(
    provider: &'static str,
    resp: Response,
    limits: &Limits,
    on_chunk: impl FnMut(&[u8]) -> Result<(), ProviderError>,
) -> Result<(), ProviderError> {
    read_body(provider, resp, limits, true, on_chunk).await
}

async fn read_body(
    provider: &'static str,
    mut resp: Response,
    limits: &Limits,
    stream: bool,
    mut on_chunk: impl FnMut(&[u8]) -> Result<(), ProviderError>,
) -> Result<(), ProviderError> {
    let url = resp.url().to_string();
    if resp
        .content_length()
        .is_some_and(|n| n > limits.max_reply_bytes as u64)
    {
        let start = resp.chunk().await.ok().flatten().unwrap_or_default();
        return Err(too_large(provider, limits, &start));
    }
    let deadline = Instant::now() + limits.stream_timeout;
    // The idle clock restarts on data only: a server's keep-alive comments (`: ping`) do not
    // keep a stream that sends nothing else alive past --idle-timeout.
    let mut last_data = Instant::now();
    let mut activity = SseActivity::default();
    let mut received = 0usize;
    let mut head = Vec::new();
    let head_len = super::error::QUOTE_CHARS * 4;
    loop {
        let next = if stream {
            let wait_until = deadline.min(last_data + limits.idle_timeout);
            match tokio::time::timeout_at(wait_until, resp.chunk()).await {
                Ok(next) => next,
                Err(_) => {
                    let message = if Instant::now() >= deadline {
                        format!(
                            "the stream took longer than {:.1} s (--stream-timeout) ({url})",
                            limits.stream_timeout.as_secs_f64()
                        )
                    } else {
                        format!(
                            "the stream sent nothing for {:.1} s (--idle-timeout) ({url})",
                            limits.idle_timeout.as_secs_f64()
                        )
                    };
                    return Err(ProviderError::Transport { provider, message });
                }
            }
        } else {
            resp.chunk().await
        };
        match next {
            Ok(Some(bytes)) => {
                if head.len() < head_len {
                    head.extend_from_slice(&bytes[..bytes.len().min(head_len - head.len())]);
                }
                if activity.carries_data(&bytes) {
                    last_data = Instant::now();
                }
                received = received.saturating_add(bytes.len());
                if received > limits.max_reply_bytes {
                    return Err(too_large(provider, limits, &head));
                }
                on_chunk(&bytes)?
            }
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
