//! kiln's agents over A2A 1.0 (`kiln serve`'s `/a2a/{agent}`): the A2A TCK (`tck`), the
//! official SDKs as clients (`sdk`), and the walls every door keeps (`walls`), all against the
//! agents of tests/fixtures/a2a on `kiln mock`; and kiln as an A2A client (`client`:
//! `a2a_agent(...)` tools asking kiln's door and a server on the official SDK).

pub(crate) mod client;
pub(crate) mod forms;
pub(crate) mod sdk;
pub(crate) mod tck;
pub(crate) mod walls;

use crate::common::*;
use crate::doors::serve::Serve;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The fixture's folder.
fn fixture() -> PathBuf {
    repo().join("tests/fixtures/a2a")
}

/// `kiln serve` on a copy of the fixture, its agents on `kiln mock` serving the fixture's
/// scenario.
pub(crate) struct A2a {
    pub serve: Serve,
    pub mock: Mock,
    /// `http://localhost:PORT`: the origin clients use (the TCK refuses `127.0.0.1` in cards).
    pub base: String,
    _dir: tempfile::TempDir,
}

impl A2a {
    /// Starts both, `args` added to `kiln serve`'s, `env` to its environment.
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> A2a {
        let text = std::fs::read_to_string(fixture().join("scenario.json")).expect("scenario");
        let scenario: Value = serde_json::from_str(&text).expect("scenario.json is JSON");
        let mock = Mock::start(&scenario);
        let dir = tempfile::tempdir().expect("tempdir");
        for entry in std::fs::read_dir(fixture()).expect("the fixture folder") {
            let path = entry.expect("entry").path();
            std::fs::copy(&path, dir.path().join(path.file_name().expect("name"))).expect("copy");
        }
        let base_url = format!("{}/v1", mock.url);
        let mut all_env = vec![("OPENAI_BASE_URL", base_url.as_str())];
        all_env.extend_from_slice(env);
        let serve = Serve::start(dir.path(), &dir.path().join("kiln.db"), args, &all_env);
        let base = serve.url.replace("127.0.0.1", "localhost");
        A2a {
            serve,
            mock,
            base,
            _dir: dir,
        }
    }

    /// A JSON-RPC call of `method` on `agent` with the A2A-Version header and `headers`: the
    /// HTTP status and the response.
    pub fn rpc(
        &self,
        agent: &str,
        method: &str,
        params: Value,
        headers: &[(&str, &str)],
    ) -> (u16, Value) {
        let mut all = vec![("A2A-Version", "1.0")];
        all.extend_from_slice(headers);
        let body = json!({"jsonrpc": "2.0", "id": "t1", "method": method, "params": params});
        post(&format!("{}/a2a/{agent}", self.serve.url), &body, &all)
    }

    /// `SendMessage` of `text` (on `task`, when given) as the user: the result's task.
    pub fn send(
        &self,
        agent: &str,
        text: &str,
        task: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> Value {
        let mut message =
            json!({"messageId": uuid(), "role": "ROLE_USER", "parts": [{"text": text}]});
        if let Some(t) = task {
            message["taskId"] = t["id"].clone();
            message["contextId"] = t["contextId"].clone();
        }
        let (status, reply) = self.rpc(agent, "SendMessage", json!({"message": message}), headers);
        assert_eq!(status, 200, "{reply}");
        assert!(
            reply["result"]["task"].is_object(),
            "SendMessage answered {reply}"
        );
        reply["result"]["task"].clone()
    }
}

/// A fresh id.
pub(crate) fn uuid() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "msg-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// A request a webhook received: its head (lower-cased) and its body.
pub(crate) type Received = (String, Vec<u8>);

/// A webhook on 127.0.0.1 keeping each request (its head, lower-cased, and its body).
pub(crate) struct Webhook {
    pub port: u16,
    requests: Arc<Mutex<Vec<Received>>>,
}

impl Webhook {
    pub fn start() -> Webhook {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let kept = requests.clone();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(10)));
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                let mut want = None;
                while want.is_none_or(|n| buf.len() < n) {
                    match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                    if want.is_none()
                        && let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n")
                    {
                        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                        let length = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        want = Some(end + 4 + length);
                    }
                }
                let end = buf
                    .windows(4)
                    .position(|w| w == b"\r\n\r\n")
                    .unwrap_or(buf.len());
                let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                let body = buf.get(end + 4..).unwrap_or_default().to_vec();
                kept.lock().expect("requests").push((head, body));
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                );
            }
        });
        Webhook { port, requests }
    }

    /// The requests so far.
    pub fn requests(&self) -> Vec<Received> {
        self.requests.lock().expect("requests").clone()
    }

    /// Waits (up to 10 s) until `n` requests came.
    pub fn wait_for(&self, n: usize) -> Vec<Received> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while self.requests().len() < n && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        self.requests()
    }
}
