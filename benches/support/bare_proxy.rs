//! The floor `kiln serve` is measured against: a minimal server on kiln's own HTTP stack (axum
//! served by `kiln_http::serve`, the model requests by kiln's reqwest client) that takes a chat
//! completion, makes the same round trips to `kiln mock` as a kiln run of the load agent would
//! (the growing transcript, the same tool definition, a tool result per call) and answers. No
//! tools run, nothing is validated, nothing is logged.
//!
//! It runs in a process of its own (the bench binary started again with `KILN_BARE_PROXY` set
//! to the mock's base URL), so its peak RSS and CPU are its own. The answer carries
//! `bare.model_ms`, the time its model requests took, as kiln's run log does for a kiln run.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;

/// The environment variable that turns the bench binary into the bare proxy.
pub const ENV: &str = "KILN_BARE_PROXY";

struct Proxy {
    client: reqwest::Client,
    url: String,
    tools: Value,
}

/// Serves the bare proxy on a loopback port (printing `bare proxy listening on URL`) until
/// the process is killed.
pub fn run(mock: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let proxy = Arc::new(Proxy {
            client: kiln::egress::http_client_builder().build().expect("client"),
            url: format!("{mock}/v1/chat/completions"),
            tools: json!([{"type": "function", "function": {
                "name": "step",
                "description": "One step",
                "parameters": {"type": "object", "properties": {"n": {"type": "integer"}},
                               "required": ["n"], "additionalProperties": false}
            }}]),
        });
        let app = axum::Router::new()
            .route("/v1/chat/completions", axum::routing::post(chat))
            .with_state(proxy);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        println!("bare proxy listening on http://{addr}");
        // As many connections as a bench opens (serve_load's 1,000, waiting's 10,000).
        let limits = kiln_http::HttpLimits {
            max_connections: 1 << 16,
            ..kiln_http::HttpLimits::default()
        };
        let stop = tokio_util::sync::CancellationToken::new();
        kiln_http::serve(listener, app, limits, stop)
            .await
            .expect("serve");
    });
}

async fn chat(State(proxy): State<Arc<Proxy>>, body: Bytes) -> Response {
    match rounds(&proxy, &body).await {
        Ok(answer) => Json(answer).into_response(),
        Err(e) => (StatusCode::BAD_GATEWAY, e).into_response(),
    }
}

/// The round trips of one run: until the model answers without tool calls.
async fn rounds(proxy: &Proxy, body: &[u8]) -> Result<Value, String> {
    let request: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let mut messages = request["messages"].as_array().cloned().unwrap_or_default();
    let mut model_ms = 0.0;
    for _ in 0..64 {
        let started = Instant::now();
        let reply: Value = proxy
            .client
            .post(&proxy.url)
            .bearer_auth("sk-load")
            .json(&json!({"model": "m", "messages": messages, "tools": proxy.tools}))
            .send()
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())?;
        model_ms += started.elapsed().as_secs_f64() * 1000.0;
        let message = reply["choices"][0]["message"].clone();
        let calls = message["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if calls.is_empty() {
            return Ok(json!({
                "object": "chat.completion",
                "model": request["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": message["content"]},
                             "finish_reason": "stop"}],
                "bare": {"model_ms": model_ms},
            }));
        }
        messages.push(message);
        for call in calls {
            messages.push(json!({"role": "tool", "tool_call_id": call["id"],
                                 "content": "{\"ok\":true}"}));
        }
    }
    Err("the model never stopped calling tools".into())
}
