//! Helpers shared by the integration tests.

use kiln::{CallOptions, Grants, Host, ToolOutcome};
use serde_json::Value;
use std::io::{BufRead as _, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

/// A temp scripts folder with files written into it.
pub struct Scripts {
    pub dir: tempfile::TempDir,
}

impl Scripts {
    pub fn new(files: &[(&str, &str)]) -> Scripts {
        let dir = tempfile::tempdir().expect("tempdir");
        for (name, src) in files {
            std::fs::write(dir.path().join(name), src).expect("write script");
        }
        Scripts { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn host(&self) -> Arc<Host> {
        self.host_with_limits(kiln::tool::Limits::default())
    }

    /// A host with custom sandbox limits.
    pub fn host_with_limits(&self, limits: kiln::tool::Limits) -> Arc<Host> {
        Host::builder()
            .scripts(self.dir.path())
            .workspace(self.dir.path())
            .limits(limits)
            .build()
            .expect("host")
    }

    /// Load errors as strings with the temp path replaced by `DIR`.
    pub fn errors(&self, host: &Host) -> Vec<String> {
        let prefix = format!("{}/", self.dir.path().display());
        host.registry()
            .errors
            .iter()
            .map(|e| e.to_string().replace(&prefix, "DIR/"))
            .collect()
    }
}

/// A host with one script.
pub fn host_with(src: &str) -> (Scripts, Arc<Host>) {
    let s = Scripts::new(&[("t.rhai", src)]);
    let h = s.host();
    (s, h)
}

/// Calls a tool synchronously with grants.
pub fn call(host: &Host, tool: &str, args: Value, caps: &[&str]) -> ToolOutcome {
    let opts = CallOptions {
        grants: Some(Grants::parse(caps).expect("caps")),
        ..CallOptions::default()
    };
    host.call_blocking(tool, args, opts).expect("tool exists")
}

/// The error kind and message of a failed outcome.
pub fn failure(o: &ToolOutcome) -> (String, String) {
    match &o.result {
        Err(f) => (f.kind.as_str().to_string(), f.message.clone()),
        Ok(v) => panic!("expected failure, got {v}"),
    }
}

/// The path of the real kiln binary built for these tests.
pub fn kiln_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_kiln"))
}

/// Runs the real binary.
pub fn kiln(args: &[&str], cwd: &Path) -> Output {
    Command::new(kiln_bin())
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env_remove("KILN_LOG")
        .output()
        .expect("run kiln")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// The repository root (for examples and specs).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A running `kiln mock` (the real binary); killed on drop.
pub struct Mock {
    pub url: String,
    child: std::process::Child,
    _scenario: tempfile::NamedTempFile,
}

impl Mock {
    pub fn start(scenario: &Value) -> Mock {
        Mock::start_with(scenario, &[])
    }

    /// [`Mock::start`] with more `kiln mock` arguments (`--aws-access-key-id ...`).
    pub fn start_with(scenario: &Value, args: &[&str]) -> Mock {
        use std::io::{BufRead, Write};
        let mut file = tempfile::NamedTempFile::new().expect("scenario file");
        file.write_all(scenario.to_string().as_bytes())
            .expect("write scenario");
        let mut child = Command::new(kiln_bin())
            .args(["mock", &file.path().display().to_string(), "--port", "0"])
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("start kiln mock");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("mock prints its address");
        let url = line.trim().rsplit(' ').next().expect("url").to_string();
        assert!(
            url.starts_with("http://127.0.0.1:") || url.starts_with("https://127.0.0.1:"),
            "mock said: {line}"
        );
        Mock {
            url,
            child,
            _scenario: file,
        }
    }

    /// Waits (up to 5 s) until the mock has received `n` requests.
    pub fn wait_for_requests(&self, n: usize) {
        // A safety net only: it returns as soon as the requests are there.
        for _ in 0..3000 {
            if self.requests().len() >= n {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("the mock never received {n} requests");
    }

    /// Every request the mock received.
    pub fn requests(&self) -> Vec<Value> {
        let body = http_get(&format!("{}/_kiln/requests", self.url));
        serde_json::from_str::<Value>(&body)
            .expect("requests json")
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A minimal HTTP/1.1 GET on loopback: the body.
pub fn http_get(url: &str) -> String {
    http("GET", url, &[], None).2
}

/// An HTTP/1.1 exchange on loopback: status, lower-cased headers, body.
pub fn http(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> (u16, Vec<(String, String)>, String) {
    let text = body.map(|b| b.to_string());
    let mut all = headers.to_vec();
    if text.is_some() {
        all.push(("content-type", "application/json"));
    }
    http_raw(method, url, &all, text.as_deref().unwrap_or(""))
}

/// [`http`] with the body sent as it is (to test what a door does with bytes a library
/// would refuse to send).
pub fn http_raw(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    let rest = url.strip_prefix("http://").expect("http url");
    let (host, path) = rest
        .split_once('/')
        .map(|(h, p)| (h, format!("/{p}")))
        .unwrap_or((rest, "/".into()));
    let mut s = std::net::TcpStream::connect(host).expect("connect");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
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

/// The body of a chunked HTTP/1.1 reply.
pub fn dechunk(body: &str) -> String {
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

/// `kiln ask ARGS` with test keys set and provider endpoints from the environment removed.
pub fn ask_command(args: &[&str], cwd: &Path) -> Command {
    let mut cmd = Command::new(kiln_bin());
    cmd.arg("ask")
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env("ANTHROPIC_API_KEY", TEST_KEY)
        .env("OPENAI_API_KEY", TEST_KEY)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OLLAMA_HOST")
        .env_remove("KILN_LOG");
    cmd
}

/// Runs `kiln ask` to the end.
pub fn ask(args: &[&str], cwd: &Path) -> Output {
    ask_command(args, cwd).output().expect("run kiln ask")
}

/// `kiln ask AGENT PROMPT --json` on the scripts in `cwd` (no stdlib), which must succeed;
/// its report.
pub fn ask_report(cwd: &Path, agent: &str, prompt: &str) -> serde_json::Value {
    let args = [agent, prompt, "--json", "--no-stdlib", "--scripts", "."];
    let out = ask(&args, cwd);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("the report as JSON")
}

/// Starts `kiln ask` in the background (stdout and stderr piped).
pub fn spawn_ask(args: &[&str], cwd: &Path) -> std::process::Child {
    ask_command(args, cwd)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn kiln ask")
}

/// A key that must never appear in any output.
pub const TEST_KEY: &str = "sk-kiln-test-SECRET-0123456789";

/// Status, headers and body of a canned reply.
pub type Canned = (u16, Vec<(String, String)>, Vec<u8>);

/// A tiny HTTP server on 127.0.0.1 answering every request with `respond(path)`.
pub struct TestServer {
    pub addr: String,
}

impl TestServer {
    pub fn start(respond: fn(&str) -> Canned) -> TestServer {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut stream = stream;
                let mut buf = [0u8; 65536];
                let n = stream.read(&mut buf).unwrap_or(0);
                let req = String::from_utf8_lossy(&buf[..n]).to_string();
                let path = req.split_whitespace().nth(1).unwrap_or("/").to_string();
                let (status, headers, body) = respond(&path);
                let mut head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n",
                    body.len()
                );
                for (k, v) in headers {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&body);
            }
        });
        TestServer { addr }
    }
}

/// Sends a signal (`INT`, `KILL`) to a process with the shell's built-in `kill`.
pub fn signal(pid: u32, sig: &str) {
    let status = Command::new("sh")
        .args(["-c", &format!("kill -{sig} {pid}")])
        .status()
        .expect("sh");
    assert!(status.success(), "kill -{sig} {pid}");
}

/// Talks JSON-RPC to `kiln mcp ARGS` over stdio: sends each message, and for a request collects
/// every line up to its answer; returns all lines in order.
pub fn mcp_stdio(dir: &Path, args: &[&str], msgs: &[Value]) -> Vec<Value> {
    let mut child = Command::new(kiln_bin())
        .arg("mcp")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start kiln mcp");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut seen = Vec::new();
    for msg in msgs {
        writeln!(stdin, "{msg}").expect("send");
        let Some(id) = msg.get("id") else { continue };
        loop {
            let line = lines.next().expect("a line").expect("read");
            let v: Value = serde_json::from_str(&line).expect("JSON-RPC on stdout");
            let done = v.get("id") == Some(id);
            seen.push(v);
            if done {
                break;
            }
        }
    }
    drop(stdin);
    let _ = child.wait();
    seen
}

/// An OTLP/HTTP receiver on 127.0.0.1 that keeps every request body.
pub struct Collector {
    pub url: String,
    bodies: std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>,
}

impl Collector {
    pub fn start() -> Collector {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/v1/traces", listener.local_addr().expect("addr"));
        let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = bodies.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if let Some(body) = read_request(stream) {
                    kept.lock().expect("bodies").push(body);
                }
            }
        });
        Collector { url, bodies }
    }

    /// Every request body so far.
    pub fn bodies(&self) -> Vec<Vec<u8>> {
        self.bodies.lock().expect("bodies").clone()
    }
}

/// Reads one HTTP/1.1 request with a Content-Length body and answers 200.
fn read_request(mut stream: std::net::TcpStream) -> Option<Vec<u8>> {
    use std::io::{Read, Write};
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(10)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let (head_end, length) = loop {
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            break (end + 4, length);
        }
    };
    while buf.len() < head_end + length {
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    Some(buf[head_end..].to_vec())
}

/// A request with a bearer token: status and JSON body (the text as a string when it is not
/// JSON).
pub fn with_token(method: &str, url: &str, token: &str, body: Option<&Value>) -> (u16, Value) {
    let bearer = format!("Bearer {token}");
    let (status, _, text) = http(method, url, &[("authorization", &bearer)], body);
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Starts a run on `kiln serve` at `base` as `token`'s actor without waiting (`body` has
/// `"wait": false`); its id.
pub fn start_run_as(base: &str, token: &str, body: &Value) -> String {
    let (status, run) = with_token("POST", &format!("{base}/v1/runs"), token, Some(body));
    assert_eq!(status, 202, "{run}");
    run["id"].as_str().expect("id").to_string()
}
