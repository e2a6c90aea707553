//! `kiln mock`: a wire-faithful fake provider on 127.0.0.1. It serves `/v1/messages`
//! (Anthropic), `/v1/chat/completions` (OpenAI), `/v1/responses` (OpenAI Responses), Azure
//! OpenAI's routes (`/openai/...`), `/api/chat` (Ollama) and
//! `/v1beta/models/{model}:generateContent` (Gemini, also under `/v1/`), answers from a
//! scenario, records every request (`GET /_kiln/requests`, with the connection it came on and
//! its HTTP version), and rejects protocol violations with the real services' error shapes. It
//! serves HTTP/1.1 and HTTP/2 (h2c with prior knowledge, or over TLS by ALPN), or HTTP/1.1 alone
//! ([`bind_with`], [`ServeOptions`]).

pub mod azure;
pub mod bedrock;
pub mod check;
#[cfg(test)]
mod conformance;
pub mod errors;
pub mod fits;
pub mod gemini;
pub mod offered;
pub mod parts;
pub mod render;
pub mod responses;
pub mod scenario;
mod serve;
pub mod tool_choice;

pub use bedrock::sigv4;
pub use serve::ServeOptions;

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use render::Reply;
use scenario::{Fault, Scenario, Turn};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Clone, Copy, PartialEq)]
enum Wire {
    Anthropic,
    OpenAi,
    Ollama,
    Responses,
    Gemini,
}

struct Shared {
    scenario: Scenario,
    /// Each client's place in the scenario (see [`client_key`]).
    cursors: Mutex<HashMap<u64, usize>>,
    requests: Mutex<Vec<Value>>,
    /// The turns whose `reset_connection` has closed a connection (by index): spent, they
    /// answer as usual.
    reset: Mutex<HashSet<usize>>,
}

/// The router of a mock serving `scenario`.
pub fn router(scenario: Scenario) -> Router {
    let shared = Arc::new(Shared {
        scenario,
        cursors: Mutex::new(HashMap::new()),
        requests: Mutex::new(Vec::new()),
        reset: Mutex::new(HashSet::new()),
    });
    Router::new()
        .route(
            "/v1/messages",
            post(|s: State<Arc<Shared>>, h: HeaderMap, b: Bytes| {
                handle(s, h, b, Wire::Anthropic, "/v1/messages", None)
            }),
        )
        .route(
            "/v1/chat/completions",
            post(|s: State<Arc<Shared>>, h: HeaderMap, b: Bytes| {
                handle(s, h, b, Wire::OpenAi, "/v1/chat/completions", None)
            }),
        )
        .route(
            "/v1/responses",
            post(|s: State<Arc<Shared>>, h: HeaderMap, b: Bytes| {
                handle(s, h, b, Wire::Responses, "/v1/responses", None)
            }),
        )
        .route(azure::CHAT, post(azure::chat))
        .route(azure::RESPONSES, post(azure::responses))
        .route(
            "/api/chat",
            post(|s: State<Arc<Shared>>, h: HeaderMap, b: Bytes| {
                handle(s, h, b, Wire::Ollama, "/api/chat", None)
            }),
        )
        .route(
            "/v1beta/models/{call}",
            post(
                |s: State<Arc<Shared>>, p: Path<String>, u: Uri, h: HeaderMap, b: Bytes| {
                    gemini::handle(s, p, u, h, b, "v1beta")
                },
            ),
        )
        .route(
            "/v1/models/{call}",
            post(
                |s: State<Arc<Shared>>, p: Path<String>, u: Uri, h: HeaderMap, b: Bytes| {
                    gemini::handle(s, p, u, h, b, "v1")
                },
            ),
        )
        .route(
            "/model/{id}/converse",
            post(|s, p, u, h, b| handle_bedrock(s, p, u, h, b, false)),
        )
        .route(
            "/model/{id}/converse-stream",
            post(|s, p, u, h, b| handle_bedrock(s, p, u, h, b, true)),
        )
        .route(
            "/_kiln/requests",
            get(|State(s): State<Arc<Shared>>| async move {
                Json(Value::Array(
                    s.requests.lock().map(|r| r.clone()).unwrap_or_default(),
                ))
            }),
        )
        // The services take requests far past axum's 2 MB default (a long run's transcript).
        .layer(axum::extract::DefaultBodyLimit::max(MAX_REQUEST_BYTES))
        .with_state(shared)
}

/// The largest request body the mock reads.
pub const MAX_REQUEST_BYTES: usize = 64 << 20;

/// Binds `addr` (port 0 picks one) and returns the bound address and the server future:
/// plain TCP, HTTP/1.1 and HTTP/2 with prior knowledge (h2c). See [`bind_with`] for TLS or
/// HTTP/1.1 alone.
pub async fn bind(
    scenario: Scenario,
    addr: SocketAddr,
) -> std::io::Result<(
    SocketAddr,
    impl std::future::Future<Output = std::io::Result<()>>,
)> {
    bind_with(scenario, addr, ServeOptions::default()).await
}

/// Binds `addr` (port 0 picks one) and returns the bound address and the server future,
/// serving `app` (a [`Scenario`], or any router: the benches' slow provider) as `options`
/// say: plain or over TLS, HTTP/1.1 and HTTP/2 or HTTP/1.1 alone. The TLS certificate and key
/// are read before binding; an error reading either names its file. Dropping the server
/// future closes its connections.
pub async fn bind_with(
    app: impl Into<Router>,
    addr: SocketAddr,
    options: ServeOptions,
) -> std::io::Result<(
    SocketAddr,
    impl std::future::Future<Output = std::io::Result<()>>,
)> {
    serve::listen(app.into(), addr, &options).await
}

/// A scenario served as the mock's router.
impl From<Scenario> for Router {
    fn from(scenario: Scenario) -> Router {
        router(scenario)
    }
}

fn redact(headers: &HeaderMap) -> Value {
    let mut m = serde_json::Map::new();
    for (name, value) in headers {
        let n = name.as_str().to_ascii_lowercase();
        let secret = matches!(
            n.as_str(),
            "x-api-key" | "authorization" | "api-key" | "x-goog-api-key"
        );
        let v = if secret || n == "x-amz-security-token" {
            "<redacted>".to_string()
        } else {
            value.to_str().unwrap_or("<binary>").to_string()
        };
        m.insert(n, json!(v));
    }
    Value::Object(m)
}

fn error_body(wire: Wire, status: u16, message: &str) -> Value {
    match wire {
        Wire::Anthropic => {
            let kind = match status {
                400 => "invalid_request_error",
                401 => "authentication_error",
                404 => "not_found_error",
                429 => "rate_limit_error",
                529 => "overloaded_error",
                _ => "api_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_mock"})
        }
        Wire::OpenAi | Wire::Responses => {
            let kind = if status == 429 {
                "rate_limit_exceeded"
            } else if status >= 500 {
                "server_error"
            } else {
                "invalid_request_error"
            };
            json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
        }
        Wire::Ollama => json!({"error": message}),
        Wire::Gemini => gemini::error(status, message),
    }
}

fn json_response(status: u16, body: Value, extra: &[(&str, String)]) -> Response {
    let mut resp = (
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        Json(body),
    )
        .into_response();
    for (k, v) in extra {
        if let (Ok(name), Ok(val)) = (
            axum::http::HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_str(v),
        ) {
            resp.headers_mut().insert(name, val);
        }
    }
    resp
}

fn fault_response(wire: Wire, f: &Fault) -> Response {
    let mut headers = Vec::new();
    if let Some(s) = f.retry_after {
        headers.push(("retry-after", format!("{s}")));
    }
    if let Some(ms) = f.retry_after_ms {
        headers.push(("retry-after-ms", ms.to_string()));
    }
    if let Some(r) = f.should_retry {
        headers.push(("x-should-retry", r.to_string()));
    }
    let msg = f
        .message
        .clone()
        .unwrap_or_else(|| format!("mock fault {}", f.status));
    json_response(f.status, error_body(wire, f.status, &msg), &headers)
}

/// Header naming a client explicitly, for clients that share an API key.
pub const CLIENT_HEADER: &str = "x-kiln-client";

/// Which client a request comes from: the `x-kiln-client` header, else its API key (hashed,
/// so no key is kept), else one shared client. Each client walks the scenario on its own, so
/// concurrent tests and replays do not take each other's turns.
fn client_key(headers: &HeaderMap) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    if let Some(v) = headers.get(CLIENT_HEADER) {
        (CLIENT_HEADER, v.as_bytes()).hash(&mut h);
        return h.finish();
    }
    // The same key is the same client on every wire (`x-api-key: K`, `Bearer K`).
    for name in ["x-api-key", "authorization", "api-key", "x-goog-api-key"] {
        if let Some(v) = headers.get(name) {
            let key = v.as_bytes();
            key.strip_prefix(b"Bearer ").unwrap_or(key).hash(&mut h);
            return h.finish();
        }
    }
    0
}

/// The turn for a request: by the conversation's round (`by_round`), else the client's next;
/// either way among the turns that fit it ([`fits::fits`]: their `model`, `user`, `offered`).
/// `url_model`: the model the request's URL names (Gemini, Bedrock, Azure's deployment).
fn next_turn(
    shared: &Shared,
    client: u64,
    body: &Value,
    url_model: Option<&str>,
) -> Result<(usize, Turn), usize> {
    let request = fits::Request::of(body, url_model);
    let turns = &shared.scenario.turns;
    if shared.scenario.by_round {
        let round = match body.get("input") {
            Some(input) => responses::check::assistant_turns(input),
            None => {
                body["messages"]
                    .as_array()
                    .map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count())
                    + body["contents"]
                        .as_array()
                        .map_or(0, |c| c.iter().filter(|c| c["role"] == "model").count())
            }
        };
        // The round-th of the turns that fit the request.
        let picked = fits::by_round(turns, round, shared.scenario.repeat, &request);
        return picked.map(|i| (round, resets(shared, i))).ok_or(round);
    }
    let mut cursors = shared.cursors.lock().unwrap_or_else(|e| e.into_inner());
    let cursor = cursors.entry(client).or_insert(0);
    // The next turn that fits the request, from the cursor on.
    let Some(n) = fits::next(turns, *cursor, shared.scenario.repeat, &request) else {
        return Err(*cursor);
    };
    let turn = resets(shared, n % turns.len());
    // A request whose connection the turn closes was not answered: its client stays there.
    *cursor = if turn.reset_connection { n } else { n + 1 };
    Ok((n, turn))
}

/// The turn at `index`, its `reset_connection` kept for the first request that reaches it
/// (which spends it, for every client) and cleared for every later one.
fn resets(shared: &Shared, index: usize) -> Turn {
    let mut turn = shared.scenario.turns[index].clone();
    if turn.reset_connection {
        let mut spent = shared.reset.lock().unwrap_or_else(|e| e.into_inner());
        turn.reset_connection = spent.insert(index);
    }
    turn
}

/// Records a request for `GET /_kiln/requests`, unless the scenario keeps none: `entry`'s
/// fields (its `path`, and a route's own) with its headers (keys redacted), its body (as text
/// when it is not JSON), the connection it came on (`connection`: its number in accept order;
/// `http`: `HTTP/1.1` or `HTTP/2.0`) and, under `count_usage`, its input tokens.
fn record(
    shared: &Shared,
    mut entry: Value,
    headers: &HeaderMap,
    parsed: &Result<Value, serde_json::Error>,
    raw: &[u8],
) {
    if !shared.scenario.record {
        return;
    }
    entry["headers"] = redact(headers);
    entry["body"] = match parsed {
        Ok(v) => v.clone(),
        Err(_) => json!(String::from_utf8_lossy(raw)),
    };
    if let Some((number, http)) = serve::connection() {
        entry["connection"] = json!(number);
        entry["http"] = json!(http);
    }
    let entry = counted(&shared.scenario, entry);
    if let Ok(mut r) = shared.requests.lock() {
        r.push(entry);
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
    wire: Wire,
    path: &'static str,
    url_model: Option<String>,
) -> Response {
    let parsed: Result<Value, _> = serde_json::from_slice(&body);
    record(&shared, json!({"path": path}), &headers, &parsed, &body);
    let Ok(body) = parsed else {
        return json_response(
            400,
            error_body(wire, 400, "the request body is not valid JSON"),
            &[],
        );
    };
    let auth = shared.scenario.require_auth;
    let checked = match wire {
        Wire::Anthropic => check::anthropic(&headers, &body, shared.scenario.require_auth),
        Wire::OpenAi => check::openai(&headers, &body, auth && !azure::is_azure(path)),
        Wire::Responses => responses::check::check(&headers, &body, auth && !azure::is_azure(path)),
        Wire::Ollama => check::ollama(&body),
        Wire::Gemini => gemini::check(&body, body["model"].as_str().unwrap_or("")),
    };
    if let Err((status, err)) = checked {
        return json_response(status, err, &[("x-should-retry", "false".into())]);
    }
    let (n, mut turn) = match next_turn(&shared, client_key(&headers), &body, url_model.as_deref())
    {
        Ok(t) => t,
        Err(served) => {
            return json_response(
                400,
                error_body(
                    wire,
                    400,
                    &format!("kiln-mock: scenario exhausted after {served} turns"),
                ),
                &[("x-should-retry", "false".into())],
            );
        }
    };
    if let Some(ms) = turn.delay_ms {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    if turn.reset_connection {
        serve::reset_connection().await;
    }
    if let Some(f) = &turn.fault {
        return fault_response(wire, f);
    }
    if let Err(message) = search_tools(&mut turn, wire, &body) {
        let refusal = error_body(wire, 400, &message);
        return json_response(400, refusal, &[("x-should-retry", "false".into())]);
    }
    count_usage(&shared.scenario, &mut turn, &body);
    let model = body["model"].as_str().unwrap_or("mock-model").to_string();
    let stream = body["stream"]
        .as_bool()
        .unwrap_or(wire == Wire::Ollama && body.get("stream").is_none());
    let reply = match wire {
        Wire::Anthropic => render::anthropic(&turn, n, &model, stream),
        Wire::OpenAi => render::openai(
            &turn,
            n,
            &model,
            stream,
            body["stream_options"]["include_usage"] == true,
        ),
        Wire::Ollama => render::ollama(&turn, n, &model, stream, shared.scenario.ollama_ids),
        Wire::Responses => {
            responses::render::render(&turn, n, &model, &responses::render::Asked::of(&body))
        }
        Wire::Gemini => gemini::render::reply(&turn, n, &model, stream),
    };
    match reply {
        Reply::Json(v) => json_response(200, v, &[]),
        Reply::Raw(text) => (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            text,
        )
            .into_response(),
        Reply::Stream(chunks) => {
            let delay = Duration::from_millis(shared.scenario.chunk_delay_ms);
            let content_type = if wire == Wire::Ollama {
                "application/x-ndjson"
            } else {
                "text/event-stream"
            };
            let stream =
                futures_util::stream::unfold(chunks.into_iter(), move |mut it| async move {
                    let next = it.next()?;
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    Some((Ok::<Bytes, std::convert::Infallible>(Bytes::from(next)), it))
                });
            (
                [(axum::http::header::CONTENT_TYPE, content_type)],
                Body::from_stream(stream),
            )
                .into_response()
        }
    }
}

/// A recorded request `entry`, with the input tokens counted from its body under
/// `count_usage`.
fn counted(scenario: &Scenario, mut entry: Value) -> Value {
    if scenario.count_usage {
        entry["input_tokens"] = json!(render::count::input_tokens(&entry["body"]));
    }
    entry
}

/// With `count_usage`, the turn reports the request's input tokens as counted
/// ([`render::count`]); its output tokens stay the turn's.
fn count_usage(scenario: &Scenario, turn: &mut Turn, body: &Value) {
    if scenario.count_usage {
        let usage = turn.usage();
        let input_tokens = render::count::input_tokens(body);
        turn.usage = Some(scenario::MockUsage {
            input_tokens,
            ..usage
        });
    }
}

/// Runs the service's own tool search a turn asks for (`tool_search`) over the request's
/// deferred tools, for the reply to render; a wire without one, or a request without its
/// search tool, cannot search.
fn search_tools(turn: &mut Turn, wire: Wire, body: &Value) -> Result<(), String> {
    use crate::offered::search;
    let Some(query) = &turn.tool_search else {
        return Ok(());
    };
    turn.searched =
        Some(match wire {
            Wire::Anthropic => search::anthropic(body, query)?,
            Wire::Responses => search::responses(body, query)?,
            _ => return Err(
                "kiln-mock: tool_search is served on the anthropic and openai-responses wires only"
                    .into(),
            ),
        });
    Ok(())
}

/// A Bedrock Converse request (`/model/{id}/converse`, or `converse-stream` when `stream`):
/// its credentials verified (the SigV4 signature against the mock's key pair), its body
/// checked, the next turn rendered.
async fn handle_bedrock(
    State(shared): State<Arc<Shared>>,
    axum::extract::Path(model): axum::extract::Path<String>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
    stream: bool,
) -> Response {
    let parsed: Result<Value, _> = serde_json::from_slice(&body);
    let route = if stream {
        "converse-stream"
    } else {
        "converse"
    };
    let entry = json!({"path": uri.path(), "route": route, "model": model});
    record(&shared, entry, &headers, &parsed, &body);
    let scenario = &shared.scenario;
    let verified = sigv4::verify(
        scenario.aws.as_ref(),
        scenario.require_auth,
        &uri,
        &headers,
        &body,
    );
    if let Err(refusal) = verified {
        return bedrock::error_response(refusal);
    }
    let Ok(body) = parsed else {
        return bedrock::error_response((
            400,
            "SerializationException",
            "the request body is not valid JSON".into(),
        ));
    };
    if let Err(refusal) = bedrock::check(&body) {
        return bedrock::error_response(refusal);
    }
    let client = match (headers.get(CLIENT_HEADER), sigv4::identity(&headers)) {
        (None, Some(id)) => {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            id.hash(&mut h);
            h.finish()
        }
        _ => client_key(&headers),
    };
    let (n, mut turn) = match next_turn(&shared, client, &body, Some(&model)) {
        Ok(t) => t,
        Err(served) => {
            let message = format!("kiln-mock: scenario exhausted after {served} turns");
            return bedrock::error_response((400, "ValidationException", message));
        }
    };
    if let Some(ms) = turn.delay_ms {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    if turn.reset_connection {
        serve::reset_connection().await;
    }
    count_usage(scenario, &mut turn, &body);
    match (&turn.fault, stream) {
        (Some(f), _) => bedrock::fault_response(f),
        (None, false) => bedrock::whole(&turn, n),
        (None, true) => bedrock::streamed(&turn, n, Duration::from_millis(scenario.chunk_delay_ms)),
    }
}
