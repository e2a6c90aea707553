//! A tool's own `ask` capability at the HTTP doors (tests/it/approvals/tool_asks.rs has the others):
//! `kiln mcp --http` asks a client that can elicit and refuses one that cannot; `kiln serve`'s
//! `/v1/chat/completions` waits for a person through the runs API, as `/v1/runs` does, and
//! nobody deciding in time denies.

use crate::common::*;
use crate::doors::serve::Serve;
use crate::mcp::McpHttp;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const VAULT: &str = r#"tool("vault_read").description("Read a secret").param("key", "string").requires("vault").handler(|a| "VAULT-SECRET");"#;

/// An HTTP/1.1 POST whose reply is an event stream, read one `data:` payload at a time while
/// the exchange goes on.
struct Events {
    reader: BufReader<TcpStream>,
    chunked: bool,
    /// Decoded body text not yet split into events.
    pending: String,
    pub status: u16,
}

impl Events {
    fn post(url: &str, headers: &[(&str, &str)], body: &Value) -> Events {
        let rest = url.strip_prefix("http://").expect("http url");
        let (host, path) = rest
            .split_once('/')
            .map(|(h, p)| (h, format!("/{p}")))
            .unwrap_or((rest, "/".into()));
        let body = body.to_string();
        let mut head = format!(
            "POST {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
            body.len()
        );
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let mut s = TcpStream::connect(host).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        s.write_all(head.as_bytes()).expect("send head");
        s.write_all(body.as_bytes()).expect("send body");
        let mut reader = BufReader::new(s);
        let mut status = 0;
        let mut chunked = false;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).expect("a header line");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if status == 0 {
                status = line
                    .split_whitespace()
                    .nth(1)
                    .and_then(|c| c.parse().ok())
                    .unwrap_or_else(|| panic!("no status in {line:?}"));
            }
            let lower = line.to_ascii_lowercase();
            chunked |= lower.starts_with("transfer-encoding:") && lower.contains("chunked");
        }
        Events {
            reader,
            chunked,
            pending: String::new(),
            status,
        }
    }

    /// More of the body; false at its end.
    fn fill(&mut self) -> bool {
        let mut bytes = Vec::new();
        if self.chunked {
            let mut size = String::new();
            if self.reader.read_line(&mut size).unwrap_or(0) == 0 {
                return false;
            }
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if n == 0 {
                return false;
            }
            bytes.resize(n + 2, 0);
            self.reader.read_exact(&mut bytes).expect("a chunk");
            bytes.truncate(n);
        } else {
            let mut line = String::new();
            if self.reader.read_line(&mut line).unwrap_or(0) == 0 {
                return false;
            }
            bytes = line.into_bytes();
        }
        self.pending
            .push_str(&String::from_utf8_lossy(&bytes).replace("\r\n", "\n"));
        true
    }

    /// The next event's data (its `data:` lines joined), or `None` at the end of the stream.
    fn next(&mut self) -> Option<String> {
        loop {
            if let Some((event, rest)) = self.pending.split_once("\n\n") {
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                let data = data.join("\n");
                self.pending = rest.to_string();
                if !data.is_empty() {
                    return Some(data);
                }
                continue;
            }
            if !self.fill() {
                return None;
            }
        }
    }

    /// The next event's data as JSON.
    fn next_json(&mut self) -> Value {
        let data = self.next().expect("another event");
        serde_json::from_str(&data).unwrap_or_else(|e| panic!("{e}: {data}"))
    }
}

/// A stateful session on `kiln mcp --http` (protocol `version`, these client capabilities,
/// as client `client`): the headers every later request sends.
pub(crate) fn mcp_session(
    url: &str,
    version: &str,
    capabilities: Value,
    client: &str,
) -> Vec<(String, String)> {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": capabilities,
        "clientInfo": {"name": client, "version": "0"}}});
    let accept = ("accept", "application/json, text/event-stream");
    let (status, headers, body) = http("POST", url, &[accept], Some(&init));
    assert_eq!(status, 200, "{body}");
    let id = headers
        .iter()
        .find(|(k, _)| k == "mcp-session-id")
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("no session id: {headers:?}"));
    let session = vec![
        ("accept".to_string(), accept.1.to_string()),
        ("mcp-protocol-version".to_string(), version.to_string()),
        ("mcp-session-id".to_string(), id),
    ];
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, body) = http("POST", url, &borrowed(&session), Some(&done));
    assert!(status < 300, "{status}: {body}");
    session
}

pub(crate) fn borrowed(headers: &[(String, String)]) -> Vec<(&str, &str)> {
    headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

/// Reads events until the JSON-RPC message answering `id`.
fn answer_to(events: &mut Events, id: u32) -> Value {
    loop {
        let msg = events.next_json();
        if msg["id"] == id && msg.get("method").is_none() {
            return msg;
        }
    }
}

#[test]
fn kiln_mcp_http_asks_a_client_that_can_elicit_and_refuses_one_that_cannot() {
    let s = Scripts::new(&[("vault.rhai", VAULT)]);
    let server = McpHttp::start(
        s.path(),
        &["--scripts", ".", "--caps", "vault", "--ask", "vault"],
        &[],
    );
    let call = |id: u32| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "vault_read", "arguments": {"key": "k"}}})
    };
    // A client that cannot ask: refused, saying how to grant it instead.
    let plain = mcp_session(&server.url, "2025-11-25", json!({}), "asks");
    let mut events = Events::post(&server.url, &borrowed(&plain), &call(1));
    assert_eq!(events.status, 200);
    let reply = answer_to(&mut events, 1);
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(!reply.to_string().contains("VAULT-SECRET"), "{reply}");
    assert!(
        reply.to_string().contains("this MCP client cannot ask"),
        "{reply}"
    );
    // Clients that ask their person, on both revisions with sessions: declined, then accepted.
    for version in ["2025-06-18", "2025-11-25"] {
        let asking = mcp_session(&server.url, version, json!({"elicitation": {}}), "asks");
        for (id, action, runs) in [(2, "decline", false), (3, "accept", true)] {
            let mut events = Events::post(&server.url, &borrowed(&asking), &call(id));
            let question = events.next_json();
            assert_eq!(question["method"], "elicitation/create", "{question}");
            assert!(
                question.to_string().contains("vault_read"),
                "{version}: {question}"
            );
            let content = if runs {
                json!({"approve": true})
            } else {
                json!({})
            };
            let answer = json!({"jsonrpc": "2.0", "id": question["id"],
                "result": {"action": action, "content": content}});
            let (status, _, body) = http("POST", &server.url, &borrowed(&asking), Some(&answer));
            assert!(status < 300, "{status}: {body}");
            let reply = answer_to(&mut events, id);
            let text = reply.to_string();
            assert_eq!(
                text.contains("VAULT-SECRET"),
                runs,
                "{version} {action}: {reply}"
            );
            if !runs {
                assert_eq!(reply["result"]["isError"], true, "{reply}");
                assert!(text.contains("was not approved"), "{reply}");
            }
        }
    }
}

/// A chat completion's run id, from the first chunk of its stream (`chatcmpl-ID`).
fn run_id(chunk: &Value) -> String {
    chunk["id"]
        .as_str()
        .and_then(|i| i.strip_prefix("chatcmpl-"))
        .unwrap_or_else(|| panic!("no run id in {chunk}"))
        .to_string()
}

/// Polls run `id` until it waits for an approval; that approval.
fn awaiting(serve: &Serve, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let (_, run) = get(&format!("{}/v1/runs/{id}", serve.url));
        if run["status"] == "awaiting_approval" {
            return run["approvals"][0].clone();
        }
        assert_eq!(run["status"], "running", "{run}");
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("run {id} never waited for approval");
}

/// `/v1/chat/completions` is a run like `/v1/runs`: its call waits for a person, who decides
/// through the runs API (the run id is in every chunk's `id`); a yes runs the tool once, a no is
/// what the model reads.
#[test]
fn a_chat_completion_waits_for_a_person_before_the_handler() {
    let call = json!({"tool_calls": [{"name": "vault_read", "args": {"key": "k"}}]});
    let mock = Mock::start(&json!({"require_auth": false, "turns": [
        call, {"text": "read it"}, call, {"text": "it was refused"},
    ]}));
    let s = Scripts::new(&[("vault.rhai", &crate::approvals::tool_asks::asker(&mock.url))]);
    let serve = Serve::start(s.path(), &s.path().join("k.db"), &["--no-stdlib"], &[]);
    let request = json!({"model": "asker", "stream": true,
        "messages": [{"role": "user", "content": "read the secret"}],
        "kiln": {"include_tool_calls": true}});
    for (decision, runs, answer) in [
        ("approve", true, "read it"),
        ("deny", false, "it was refused"),
    ] {
        let url = format!("{}/v1/chat/completions", serve.url);
        let mut events = Events::post(&url, &[], &request);
        assert_eq!(events.status, 200);
        let id = run_id(&events.next_json());
        let approval = awaiting(&serve, &id);
        assert_eq!(approval["capability"], "vault", "{approval}");
        let decide = format!(
            "{}/v1/runs/{id}/approvals/{}",
            serve.url,
            approval["id"].as_str().unwrap_or("")
        );
        let (status, _) = post(&decide, &json!({"decision": decision}), &[]);
        assert_eq!(status, 200);
        let mut rest = Vec::new();
        while let Some(data) = events.next() {
            rest.push(data);
        }
        let text = rest.join("\n");
        assert_eq!(rest.last().map(String::as_str), Some("[DONE]"), "{text}");
        let chunks: Vec<Value> = rest
            .iter()
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .collect();
        let said: String = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert_eq!(said, answer, "{decision}: {text}");
        let calls: Vec<&Value> = chunks
            .iter()
            .filter_map(|c| c["kiln"].get("tool_call"))
            .collect();
        assert_eq!(calls.len(), 1, "the tool was called once: {text}");
        assert_eq!(text.contains("VAULT-SECRET"), runs, "{decision}: {text}");
        if !runs {
            assert!(
                calls[0]
                    .to_string()
                    .contains("\\\"vault\\\" needs approval"),
                "{text}"
            );
        }
    }
}

/// Without anyone deciding in time, a (non-streamed) chat completion's call is denied and the
/// model reads why; the tool never ran.
#[test]
fn a_chat_completion_nobody_approves_in_time_is_denied() {
    let mock = Mock::start(&json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "vault_read", "args": {"key": "k"}}]}, {"text": "gave up"},
    ]}));
    let s = Scripts::new(&[("vault.rhai", &crate::approvals::tool_asks::asker(&mock.url))]);
    let serve = Serve::start(
        s.path(),
        &s.path().join("k.db"),
        &["--no-stdlib", "--approval-timeout", "0.5"],
        &[],
    );
    let request = json!({"model": "asker",
        "messages": [{"role": "user", "content": "read the secret"}],
        "kiln": {"include_tool_calls": true}});
    let (status, reply) = post(&format!("{}/v1/chat/completions", serve.url), &request, &[]);
    assert_eq!(status, 200, "{reply}");
    let text = reply.to_string();
    assert!(!text.contains("VAULT-SECRET"), "ran unasked: {reply}");
    assert_eq!(
        reply["choices"][0]["message"]["content"], "gave up",
        "{reply}"
    );
    assert!(
        text.contains("needs approval and nobody approved it within 0.5 s"),
        "{reply}"
    );
    // The model read the refusal.
    let requests = mock.requests();
    assert!(
        requests
            .last()
            .is_some_and(|r| r.to_string().contains("needs approval")),
        "{requests:?}"
    );
}
