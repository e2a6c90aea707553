//! A lean fake provider for measuring kiln late in long conversations: the replies `kiln mock`
//! renders (its `render` module, so they are as wire-faithful), served over plain HTTP/1.1 on
//! loopback from a process of its own (this bench binary run again), with nothing else done per
//! request. `kiln mock` parses, checks and records every request, so it answers later the
//! longer the conversation (2.5 ms at round 200 against 0.37 ms at round 1, on this machine),
//! and a longer wait costs kiln CPU by itself (caches gone cold while it slept: 3 ms more wait a
//! round measured 170-280 µs more CPU a round in whole `kiln ask` processes), which would be
//! counted as kiln's own growth. Here a request costs reading its bytes and counting its
//! assistant messages.
//!
//! The path says what to answer: `/{whole|stream}/{rounds}/` and then the wire's own path
//! (Anthropic, OpenAI Chat Completions and Responses, Ollama, Gemini, Bedrock Converse); the
//! reply to a request with `n` earlier model turns is a calculator call, or the answer in round
//! `rounds`.

use kiln_mock::render::{self, Reply};
use kiln_mock::scenario::Turn;
use kiln_mock::{gemini, responses};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Set in the fake's own process.
const ENV: &str = "KILN_BENCH_FAKE";

/// The fake provider in a process of its own; its base URL.
pub fn start() -> (std::process::Child, String) {
    let exe = std::env::current_exe().expect("the bench binary");
    let mut child = std::process::Command::new(exe)
        .env(ENV, "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start the fake provider");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
        &mut line,
    )
    .expect("the fake prints its address");
    let url = line.trim().to_string();
    assert!(
        url.starts_with("http://127.0.0.1:"),
        "the fake said: {line}"
    );
    (child, url)
}

/// In the fake's process (started by [`start`]): serves until killed, and never returns.
pub fn serve_if_asked() {
    if std::env::var_os(ENV).is_none() {
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        println!("http://{}", listener.local_addr().expect("address"));
        loop {
            let (socket, _) = listener.accept().await.expect("accept");
            tokio::spawn(connection(socket));
        }
    });
    std::process::exit(0);
}

/// Answers the requests of one keep-alive connection until it closes.
async fn connection(mut socket: tokio::net::TcpStream) {
    let mut buf: Vec<u8> = Vec::with_capacity(64 << 10);
    loop {
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            if !read_more(&mut socket, &mut buf).await {
                return;
            }
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_string();
        let length: usize = head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.trim().parse().ok())
            .unwrap_or(0);
        while buf.len() < end + length {
            if !read_more(&mut socket, &mut buf).await {
                return;
            }
        }
        let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
        let body = String::from_utf8_lossy(&buf[end..end + length]).to_string();
        buf.drain(..end + length);
        let reply = answer(&path, &body);
        if socket.write_all(&reply).await.is_err() {
            return;
        }
    }
}

async fn read_more(socket: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 64 << 10];
    match socket.read(&mut chunk).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
    }
}

/// The whole HTTP response to a request for `path` carrying `body`.
fn answer(path: &str, body: &str) -> Vec<u8> {
    let mut parts = path.trim_start_matches('/').splitn(3, '/');
    let stream = parts.next() == Some("stream");
    let rounds: usize = parts.next().and_then(|r| r.parse().ok()).unwrap_or(1);
    let wire = parts.next().unwrap_or_default();
    // The model's earlier turns in the request: one call (and its result) a round.
    let n = if wire == "v1/responses" {
        body.matches("\"type\":\"function_call_output\"").count()
    } else if wire.starts_with("v1beta/") {
        body.matches("\"role\":\"model\"").count()
    } else {
        body.matches("\"role\":\"assistant\"").count()
    };
    let turn: Turn = serde_json::from_value(if n + 1 < rounds {
        json!({"tool_calls": [{"name": "calculator", "args": {"expression": format!("{n} * 3 + 1")}}]})
    } else {
        json!({"text": "All done."})
    })
    .expect("turn");
    if wire.starts_with("model/") {
        return bedrock(&turn, n, stream);
    }
    let (reply, stream_type) = match wire {
        "v1/messages" => (
            render::anthropic(&turn, n, "m", stream),
            "text/event-stream",
        ),
        "api/chat" => (
            render::ollama(&turn, n, "m", stream, false),
            "application/x-ndjson",
        ),
        "v1/responses" => {
            let asked = responses::render::Asked {
                stream,
                encrypted_reasoning: true,
            };
            let reply = responses::render::render(&turn, n, "m", &asked);
            (reply, "text/event-stream")
        }
        w if w.starts_with("v1beta/") => (
            gemini::render::reply(&turn, n, "m", stream),
            "text/event-stream",
        ),
        _ => (
            render::openai(&turn, n, "m", stream, true),
            "text/event-stream",
        ),
    };
    match reply {
        Reply::Json(v) => response("application/json", vec![v.to_string().into_bytes()], false),
        Reply::Raw(text) => response("application/json", vec![text.into_bytes()], false),
        Reply::Stream(chunks) => {
            let chunks = chunks.into_iter().map(String::into_bytes).collect();
            response(stream_type, chunks, true)
        }
    }
}

/// Bedrock Converse's reply: JSON, or the event stream's binary frames.
fn bedrock(turn: &Turn, n: usize, stream: bool) -> Vec<u8> {
    if stream {
        let frames = kiln_mock::bedrock::frames(turn, n);
        return response("application/vnd.amazon.eventstream", frames, true);
    }
    let body = kiln_mock::bedrock::whole_body(turn, n).to_string();
    response("application/json", vec![body.into_bytes()], false)
}

/// An HTTP/1.1 response of `chunks`, chunked or with its length.
fn response(kind: &str, chunks: Vec<Vec<u8>>, chunked: bool) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\n").into_bytes();
    if chunked {
        out.extend_from_slice(b"transfer-encoding: chunked\r\n\r\n");
        for c in chunks {
            out.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
            out.extend_from_slice(&c);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
    } else {
        let body = chunks.concat();
        out.extend_from_slice(format!("content-length: {}\r\n\r\n", body.len()).as_bytes());
        out.extend_from_slice(&body);
    }
    out
}
