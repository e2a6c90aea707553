//! The hostile server: raw HTTP/1.1 on 127.0.0.1 whose handler writes any bytes it likes, and
//! the wire-format pieces (whole replies and stream events) the cases are built from.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// One request the hostile server received.
#[derive(Debug, Clone)]
pub struct Req {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Req {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The key the client sent, whichever header it used.
    pub fn key(&self) -> String {
        self.header("x-api-key")
            .or_else(|| {
                self.header("authorization")
                    .and_then(|v| v.strip_prefix("Bearer "))
            })
            .unwrap_or_default()
            .to_string()
    }
}

type Handler = dyn Fn(&Req, usize, &mut TcpStream) + Send + Sync;

/// A raw HTTP/1.1 server on 127.0.0.1: one thread per connection, one request each, and a
/// handler that writes whatever bytes it likes (with whatever pauses) to the socket.
pub struct Hostile {
    pub url: String,
    pub port: u16,
    requests: Arc<Mutex<Vec<Req>>>,
}

impl Hostile {
    pub fn start(handler: impl Fn(&Req, usize, &mut TcpStream) + Send + Sync + 'static) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let seen = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (handler, seen) = (handler.clone(), seen.clone());
                std::thread::spawn(move || {
                    let mut stream = stream;
                    let Some(req) = read_request(&stream) else {
                        return;
                    };
                    let n = {
                        let mut all = seen.lock().expect("requests");
                        all.push(req.clone());
                        all.len() - 1
                    };
                    handler(&req, n, &mut stream);
                    let _ = stream.flush();
                });
            }
        });
        Hostile {
            url: format!("http://127.0.0.1:{port}"),
            port,
            requests,
        }
    }

    pub fn requests(&self) -> Vec<Req> {
        self.requests.lock().expect("requests").clone()
    }
}

fn read_request(stream: &TcpStream) -> Option<Req> {
    let mut r = BufReader::new(stream);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        r.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let len = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some(Req {
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

/// A whole reply with a content length.
pub fn reply(s: &mut TcpStream, status: u16, content_type: &str, body: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = s.write_all(head.as_bytes());
    let _ = s.write_all(body);
}

/// The head of a reply whose body runs until the connection closes.
pub fn open_stream(s: &mut TcpStream, content_type: &str) {
    let head =
        format!("HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\nconnection: close\r\n\r\n");
    let _ = s.write_all(head.as_bytes());
    let _ = s.flush();
}

/// Blocks until the client hangs up (a stall that ends when kiln gives up, with no timer).
pub fn until_closed(s: &mut TcpStream) {
    let mut buf = [0u8; 64];
    while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
}

pub fn json_reply(s: &mut TcpStream, v: &Value) {
    reply(s, 200, "application/json", v.to_string().as_bytes());
}

pub fn anthropic_text(text: &str) -> Value {
    json!({"type": "message", "role": "assistant", "content": [{"type": "text", "text": text}],
           "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}})
}

pub fn openai_text(text: &str) -> Value {
    json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})
}

/// One OpenAI stream chunk carrying text.
pub fn openai_delta(text: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
    )
}

pub const OPENAI_END: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

pub fn anthropic_stream(text: &str) -> String {
    let ev = |name: &str, v: Value| format!("event: {name}\ndata: {v}\n\n");
    [
        ev(
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 1, "output_tokens": 0}}}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        ev(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}}),
        ),
        ev("message_stop", json!({"type": "message_stop"})),
    ]
    .concat()
}
