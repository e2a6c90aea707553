//! `kiln serve`: the real binary on 127.0.0.1, its agents talking to `kiln mock`, driven by
//! the official OpenAI Python SDK (when installed; `.ci/run` requires it) and by raw HTTP.

use crate::common::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A running `kiln serve`; killed on drop.
pub struct Serve {
    pub url: String,
    pub child: Child,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl Serve {
    /// Starts `kiln serve --bind 127.0.0.1:0 --scripts DIR --db DB ARGS`.
    pub fn start(scripts: &Path, db: &Path, args: &[&str], env: &[(&str, &str)]) -> Serve {
        let mut cmd = Command::new(kiln_bin());
        cmd.args(["serve", "--bind", "127.0.0.1:0", "--scripts"])
            .arg(scripts)
            .arg("--db")
            .arg(db)
            .args(args)
            .current_dir(scripts)
            .env("NO_COLOR", "1")
            .env("OPENAI_API_KEY", TEST_KEY)
            .env_remove("KILN_TOKENS")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("KILN_LOG")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start kiln serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("serve prints its address");
        let mut err = child.stderr.take().expect("stderr");
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let url = line.trim().rsplit(' ').next().unwrap_or("").to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "serve said: {line}");
        Serve {
            url,
            child,
            stderr: Some(stderr),
        }
    }

    /// Waits for the process to exit (up to `secs`) and returns its stderr.
    pub fn wait_exit(&mut self, secs: u64) -> (std::process::ExitStatus, String) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                let err = self.stderr.take().map(|h| h.join().unwrap_or_default());
                return (status, err.unwrap_or_default());
            }
            assert!(
                std::time::Instant::now() < deadline,
                "kiln serve did not exit"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP/1.1 exchange on loopback: status, lower-cased headers, body.
pub fn http(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> (u16, Vec<(String, String)>, String) {
    let rest = url.strip_prefix("http://").expect("http url");
    let (host, path) = rest
        .split_once('/')
        .map(|(h, p)| (h, format!("/{p}")))
        .unwrap_or((rest, "/".into()));
    let mut s = std::net::TcpStream::connect(host).expect("connect");
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    if !body.is_empty() {
        head.push_str("content-type: application/json\r\n");
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).expect("send head");
    s.write_all(body.as_bytes()).expect("send body");
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).expect("read");
    let text = String::from_utf8_lossy(&buf).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .expect("status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    (status, headers, body)
}

fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&tail[..n.min(tail.len())]);
        rest = tail.get(n + 2..).unwrap_or("");
    }
    out
}

/// POSTs JSON and parses the JSON reply.
pub fn post(url: &str, body: &Value, headers: &[(&str, &str)]) -> (u16, Value) {
    let (status, _, text) = http("POST", url, headers, Some(body));
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// GETs and parses the JSON reply.
pub fn get(url: &str) -> (u16, Value) {
    let (status, _, text) = http("GET", url, &[], None);
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A scripts folder with a `lookup` tool and agent `shop` talking to `mock`.
pub fn shop_scripts(mock: &Mock) -> Scripts {
    Scripts::new(&[(
        "shop.rhai",
        &format!(
            r#"tool("lookup").description("Price of a SKU").param("sku", "string").handler(|a| #{{ sku: a.sku, price: 4.5 }});
agent("shop").provider("openai").model("mock-model").base_url("{}/v1").system("You sell bricks.").tools(["lookup"]);"#,
            mock.url
        ),
    )])
}

/// One lookup round, then the answer; each conversation gets the whole scenario.
pub fn shop_scenario() -> Value {
    json!({"by_round": true, "turns": [
        {"tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}], "usage": {"input_tokens": 20, "output_tokens": 5}},
        {"text": "SKU-1 costs 4.50.", "usage": {"input_tokens": 30, "output_tokens": 6}}
    ]})
}

fn openai_sdk() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import openai"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        assert!(
            std::env::var_os("KILN_REQUIRE_PEERS").is_none(),
            "KILN_REQUIRE_PEERS is set but the openai SDK is missing"
        );
        eprintln!("skipped: pip install openai to run the SDK checks of kiln serve");
    }
    ok
}

const TOKEN: &str = "kiln-test-token-0123456789";

#[test]
fn the_openai_sdk_drives_kiln_serve() {
    if !openai_sdk() {
        return;
    }
    let mock = Mock::start(&shop_scenario());
    let slow = Mock::start(&json!({"loop": true, "turns": [{"text": "done", "delay_ms": 1500}]}));
    let scripts = shop_scripts(&mock);
    std::fs::write(
        scripts.path().join("slow.rhai"),
        format!(
            r#"agent("slow").provider("openai").model("m").base_url("{}/v1");"#,
            slow.url
        ),
    )
    .expect("write slow.rhai");
    let db = scripts.path().join("kiln.db");
    let tokens = json!([{"token": TOKEN, "actor": "sdk-client", "caps": []}]).to_string();
    let serve = Serve::start(
        scripts.path(),
        &db,
        &["--max-runs", "1", "--queue", "0", "--retry-after", "2"],
        &[("KILN_TOKENS", &tokens)],
    );
    let out = Command::new("python3")
        .arg(repo().join("tests/peers/serve_sdk.py"))
        .args([&serve.url, TOKEN])
        .output()
        .expect("python3");
    assert!(out.status.success(), "SDK script failed:\n{}", stderr(&out));
    let v: Value = serde_json::from_str(stdout(&out).trim()).expect("json from the SDK script");
    assert_eq!(v["models"], json!(["shop", "slow"]));
    assert_eq!(v["text"], "SKU-1 costs 4.50.");
    assert_eq!(v["finish"], "stop");
    // Usage is summed over the run's two model requests.
    assert_eq!(v["usage"], json!([50, 11, 61]));
    assert_eq!(v["tool_calls"], json!(["lookup"]));
    assert_eq!(v["stream_text"], "SKU-1 costs 4.50.");
    assert_eq!(v["stream_finish"], "stop");
    assert_eq!(v["stream_usage"], 61);
    assert_eq!(v["unknown_agent"], json!(["NotFoundError", 404, null]));
    assert_eq!(v["bad_token"], json!(["AuthenticationError", 401, null]));
    assert_eq!(v["busy"], json!(["RateLimitError", 429, "2"]));
    // The client's system message follows the agent's own; `user` stays out of ctx.actor_id
    // because the token names the actor.
    let first = &mock.requests()[0]["body"]["messages"];
    assert_eq!(first[0]["content"], "You sell bricks.\n\nAnswer briefly.");
    // Each SDK run is in the run log as `kiln ask` writes it, with the token's actor.
    let logs = kiln(
        &["logs", "--json", "--db", &db.display().to_string()],
        scripts.path(),
    );
    let runs: Value = serde_json::from_str(&stdout(&logs)).expect("logs json");
    let runs = runs.as_array().expect("runs");
    assert_eq!(runs.len(), 3, "{runs:?}");
    let shop: Vec<&Value> = runs.iter().filter(|r| r["agent"] == "shop").collect();
    assert_eq!(shop.len(), 2);
    for r in shop {
        assert_eq!(r["answer"], "SKU-1 costs 4.50.");
        assert_eq!(r["tool_calls"][0]["name"], "lookup");
        assert_eq!(r["tool_calls"][0]["outcome"]["result"]["price"], 4.5);
    }
}
