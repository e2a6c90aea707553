//! Durable runs on Restate (issue 14): a real `restate-server` on 127.0.0.1 with its data in a
//! temp dir, two `kiln worker --restate` processes behind one address (a failover TCP proxy),
//! agents against `kiln mock`, tools counting their executions at a loopback counter.
//!
//! `#[ignore]`d because it needs the Restate server binary: `.ci/run` installs the pinned
//! `@restatedev/restate-server@1.7.12` from npm and runs it with `KILN_RESTATE_SERVER` set.

use crate::common::{Mock, Scripts, kiln_bin};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(60);

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// Polls `f` until it returns `Some`, failing with `what` after [`WAIT`].
fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < WAIT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One HTTP request to Restate (ingress or admin): status and JSON body (or the text as a string).
fn http(method: &str, url: &str, headers: &[(&str, &str)], body: Option<&Value>) -> (u16, Value) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let client = reqwest::Client::new();
        let mut req = client.request(method.parse().expect("method"), url);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        match req.timeout(WAIT).send().await {
            Err(e) => (0, json!(e.to_string())),
            Ok(r) => {
                let status = r.status().as_u16();
                let text = r.text().await.unwrap_or_default();
                (status, serde_json::from_str(&text).unwrap_or(json!(text)))
            }
        }
    })
}

/// A child process killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The Restate server on loopback ports, its data in a temp dir.
struct Restate {
    admin: String,
    ingress: String,
    _proc: Proc,
    _dir: tempfile::TempDir,
}

impl Restate {
    fn start() -> Restate {
        let bin = std::env::var("KILN_RESTATE_SERVER").unwrap_or_default();
        assert!(
            !bin.is_empty() && Path::new(&bin).is_file(),
            "KILN_RESTATE_SERVER must name the restate-server binary (got {bin:?}); .ci/run installs \
             it with `npm install --prefix target/restate @restatedev/restate-server@1.7.12`"
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let (fabric, admin, ingress) = (free_port(), free_port(), free_port());
        let config = format!(
            "bind-ip = \"127.0.0.1\"\nbind-port = {fabric}\nlisten-mode = \"tcp\"\n\
             disable-telemetry = true\ncluster-name = \"kiln-test\"\nnode-name = \"n1\"\n\
             default-num-partitions = 2\n[admin]\nbind-port = {admin}\n[ingress]\nbind-port = {ingress}\n"
        );
        let config_path = dir.path().join("restate.toml");
        std::fs::write(&config_path, config).expect("config");
        let log = std::fs::File::create(dir.path().join("server.log")).expect("log");
        let child = Command::new(&bin)
            .arg("--config-file")
            .arg(&config_path)
            .arg("--base-dir")
            .arg(dir.path().join("data"))
            .args(["--no-logo", "--log-disable-ansi-codes", "true"])
            .env("DO_NOT_TRACK", "1")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start restate-server");
        let r = Restate {
            admin: format!("http://127.0.0.1:{admin}"),
            ingress: format!("http://127.0.0.1:{ingress}"),
            _proc: Proc(child),
            _dir: dir,
        };
        for url in [
            format!("{}/health", r.admin),
            format!("{}/restate/health", r.ingress),
        ] {
            wait_for(&url, || {
                (http("GET", &url, &[], None).0 == 200).then_some(())
            });
        }
        r
    }

    /// The journal entries of an invocation: `(entry_type, name)`.
    fn journal(&self, invocation: &str) -> Vec<(String, String)> {
        let query = format!(
            "SELECT index, entry_type, name FROM sys_journal WHERE id = '{invocation}' ORDER BY index"
        );
        let (status, body) = http(
            "POST",
            &format!("{}/query", self.admin),
            &[("accept", "application/json")],
            Some(&json!({ "query": query })),
        );
        assert_eq!(status, 200, "query: {body}");
        body["rows"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|r| {
                let s = |k: &str| r[k].as_str().unwrap_or("").to_string();
                (s("entry_type"), s("name"))
            })
            .collect()
    }
}

/// A `kiln worker --restate` process with its own database (as on its own machine).
fn worker(scripts: &Path, port: u16) -> Proc {
    let db = scripts.join(format!("worker-{port}.db"));
    let mut child = Command::new(kiln_bin())
        .args([
            "worker",
            "--restate",
            "--bind",
            &format!("127.0.0.1:{port}"),
        ])
        .arg("--scripts")
        .arg(scripts)
        .arg("--workspace")
        .arg(scripts)
        .arg("--db")
        .arg(&db)
        .arg("--no-stdlib")
        .env_remove("KILN_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start kiln worker");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("worker prints its address");
    assert!(
        line.contains("listening on http://127.0.0.1:"),
        "worker said: {line}"
    );
    Proc(child)
}

/// A TCP proxy on one address in front of the workers: each connection goes to the first
/// backend that accepts it, so Restate sees one deployment that survives a dead worker.
fn failover_proxy(backends: Vec<u16>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Some(server) = backends
                .iter()
                .find_map(|p| TcpStream::connect(("127.0.0.1", *p)).ok())
            else {
                continue;
            };
            // Without this, Nagle's algorithm holds back Restate's small HTTP/2 frames.
            let _ = (client.set_nodelay(true), server.set_nodelay(true));
            let pipe = |mut from: TcpStream, mut to: TcpStream| {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(std::net::Shutdown::Both);
                    let _ = from.shutdown(std::net::Shutdown::Both);
                });
            };
            let (c2, s2) = (
                client.try_clone().expect("clone"),
                server.try_clone().expect("clone"),
            );
            pipe(client, server);
            pipe(s2, c2);
        }
    });
    port
}

/// Counts tool executions (`POST /count/STEP` with the call's idempotency key) and can hold
/// the first execution of one step until released: the rendezvous for the kill.
#[derive(Default)]
struct CounterState {
    /// `(step, idempotency key, arrival)` in order.
    hits: Vec<(String, String, Instant)>,
    hold: Option<String>,
    holding: bool,
    released: bool,
}

#[derive(Clone, Default)]
struct Counter(Arc<(Mutex<CounterState>, Condvar)>);

impl Counter {
    fn start(&self) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind counter");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let me = self.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let me = me.clone();
                std::thread::spawn(move || me.serve(stream));
            }
        });
        url
    }

    fn serve(&self, stream: TcpStream) {
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut head = String::new();
        let mut len = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
            if line == "\r\n" {
                break;
            }
            head.push_str(&line);
        }
        let mut body = vec![0u8; len];
        let _ = reader.read_exact(&mut body);
        let step = head
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.strip_prefix("/count/"))
            .unwrap_or("?")
            .to_string();
        let key = serde_json::from_slice::<Value>(&body).unwrap_or_default()["key"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let (lock, cv) = &*self.0;
        let mut s = lock.lock().expect("counter");
        s.hits.push((step.clone(), key, Instant::now()));
        if s.hold.as_deref() == Some(step.as_str()) {
            s.hold = None;
            s.holding = true;
            cv.notify_all();
            let _held = cv
                .wait_timeout_while(s, WAIT, |s| !s.released)
                .expect("counter");
            // The worker that sent this is dead by now: nobody reads the answer.
            return;
        }
        cv.notify_all();
        drop(s);
        let mut stream = stream;
        let _ = stream.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
        );
    }

    fn hold(&self, step: &str) {
        self.0.0.lock().expect("counter").hold = Some(step.to_string());
    }

    fn wait_until(&self, what: &str, f: impl Fn(&CounterState) -> bool) {
        let (lock, cv) = &*self.0;
        let s = lock.lock().expect("counter");
        let (_s, timeout) = cv.wait_timeout_while(s, WAIT, |s| !f(s)).expect("counter");
        assert!(!timeout.timed_out(), "timed out waiting for {what}");
    }

    fn release(&self) {
        let (lock, cv) = &*self.0;
        lock.lock().expect("counter").released = true;
        cv.notify_all();
    }

    /// Executions per step (steps named with `prefix`), and each step's idempotency keys.
    fn counts(&self, prefix: &str) -> HashMap<String, Vec<String>> {
        let mut out: HashMap<String, Vec<String>> = HashMap::new();
        for (step, key, _) in &self.0.0.lock().expect("counter").hits {
            if step.starts_with(prefix) {
                out.entry(step.clone()).or_default().push(key.clone());
            }
        }
        out
    }

    fn arrivals(&self, step: &str) -> Vec<Instant> {
        let s = self.0.0.lock().expect("counter");
        s.hits.iter().filter(|h| h.0 == step).map(|h| h.2).collect()
    }
}

/// Three tool rounds (steps `{p}a`, `{p}b`, `{p}c`), then an answer.
fn three_steps(p: &str) -> Value {
    let call =
        |s: &str| json!({"tool_calls": [{"name": "count", "args": {"step": format!("{p}{s}")}}]});
    json!({"require_auth": false, "turns": [call("a"), call("b"), call("c"), {"text": "counted three"}]})
}

/// The scripts: a `count` tool (it reports at the counter with its idempotency key and keeps a
/// tally in ctx.state) and one agent per mock.
fn scripts(counter: &str, agents: &[(&str, &str)]) -> Scripts {
    let mut src = format!(
        r#"tool("count")
    .description("Count one step at the counter")
    .param("step", "string", "the step")
    .requires("net")
    .handler(|args, ctx| {{
        http_post(`{counter}/count/${{args.step}}`, #{{ key: ctx.idempotency_key }});
        let n = if ctx.state.n == () {{ 1 }} else {{ ctx.state.n + 1 }};
        ctx.state.n = n;
        `counted ${{args.step}} (#${{n}})`
    }});
"#
    );
    for (name, mock) in agents {
        src.push_str(&format!(
            "agent(\"{name}\").provider(\"openai\").model(\"m\").base_url(\"{mock}/v1\")\n    \
             .tools([\"count\"]).capabilities([\"net:127.0.0.1\"]);\n"
        ));
    }
    Scripts::new(&[("agents.rhai", &src)])
}

fn ok_output(what: &str, (status, body): (u16, Value)) -> Value {
    assert!(
        (200..300).contains(&status),
        "{what}: HTTP {status}: {body}"
    );
    body
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn a_run_survives_its_worker_being_killed_and_sessions_and_keys_hold_across_workers() {
    let counter = Counter::default();
    let counter_url = counter.start();
    let (m_kill, m_clean, m_local) = (
        Mock::start(&three_steps("k")),
        Mock::start(&three_steps("u")),
        Mock::start(&three_steps("l")),
    );
    let m_session = Mock::start(&json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "count", "args": {"step": "s1"}}]}, {"text": "first"},
        {"tool_calls": [{"name": "count", "args": {"step": "s2"}}]}, {"text": "second"},
    ]}));
    let m_idem = Mock::start(&json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "count", "args": {"step": "i1"}}]}, {"text": "once"},
    ]}));
    let s = scripts(
        &counter_url,
        &[
            ("kill", &m_kill.url),
            ("clean", &m_clean.url),
            ("local", &m_local.url),
            ("chat", &m_session.url),
            ("idem", &m_idem.url),
        ],
    );
    let restate = Restate::start();
    let (port_a, port_b) = (free_port(), free_port());
    let worker_a = worker(s.path(), port_a);
    let _worker_b = worker(s.path(), port_b);
    let proxy = failover_proxy(vec![port_a, port_b]);
    let out = Command::new(kiln_bin())
        .args([
            "restate",
            "register",
            "--admin",
            &restate.admin,
            "--endpoint",
        ])
        .arg(format!("http://127.0.0.1:{proxy}"))
        .output()
        .expect("kiln restate register");
    let registered = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "register: {registered} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        registered.contains("KilnSession") && registered.contains("KilnRun"),
        "{registered}"
    );
    let ingress = restate.ingress.clone();
    let post = |path: &str, key: Option<&str>, body: &Value| {
        let headers: Vec<(&str, &str)> = key.map(|k| ("idempotency-key", k)).into_iter().collect();
        http("POST", &format!("{ingress}{path}"), &headers, Some(body))
    };

    // The same idempotency key submitted twice: one invocation, the tool ran once.
    let req = json!({"agent": "idem", "prompt": "count once"});
    let first = ok_output(
        "send",
        post("/KilnSession/idem/turn/send", Some("key-1"), &req),
    );
    let again = ok_output(
        "resend",
        post("/KilnSession/idem/turn/send", Some("key-1"), &req),
    );
    assert_eq!(
        first["invocationId"], again["invocationId"],
        "{first} {again}"
    );
    assert_eq!(again["status"], "PreviouslyAccepted", "{again}");
    let inv = first["invocationId"]
        .as_str()
        .expect("invocation id")
        .to_string();
    let idem = ok_output(
        "attach",
        http(
            "GET",
            &format!("{ingress}/restate/invocation/{inv}/attach"),
            &[],
            None,
        ),
    );
    assert_eq!(idem["answer"], "once", "{idem}");
    assert_eq!(
        idem["run_id"],
        inv.as_str(),
        "the run id is the invocation id"
    );
    assert_eq!(counter.counts("i").get("i1").map(Vec::len), Some(1));
    assert_eq!(m_idem.requests().len(), 2, "one run: two model requests");

    // A session's first turn, on worker A.
    let turn1 = ok_output(
        "turn 1",
        post(
            "/KilnSession/s-1/turn",
            None,
            &json!({"agent": "chat", "prompt": "hello"}),
        ),
    );
    assert_eq!(turn1["answer"], "first", "{turn1}");

    // The run killed mid-way: hold the third tool step, check steps 1-2 are journaled, kill A.
    counter.hold("kc");
    let sent = ok_output(
        "send run",
        post(
            "/KilnRun/run-kill/run/send",
            None,
            &json!({"agent": "kill", "prompt": "count"}),
        ),
    );
    let inv = sent["invocationId"]
        .as_str()
        .expect("invocation id")
        .to_string();
    counter.wait_until("the third tool step to start", |s| s.holding);
    let journal = restate.journal(&inv);
    let steps: Vec<&str> = journal
        .iter()
        .filter(|(t, _)| t == "Command: Run")
        .map(|(_, n)| n.as_str())
        .collect();
    let completed = journal
        .iter()
        .filter(|(t, _)| t == "Notification: Run")
        .count();
    assert_eq!(
        (steps.as_slice(), completed),
        (
            &[
                "model-1",
                "tool-1-call_mock_0_0",
                "model-2",
                "tool-2-call_mock_1_0",
                "model-3"
            ][..],
            5
        ),
        "steps 1-5 journaled and completed before the kill: {journal:?}"
    );
    let mut worker_a = worker_a;
    let killed = Instant::now();
    worker_a.0.kill().expect("kill -9 worker A");
    let _ = worker_a.0.wait();
    counter.release();
    counter.wait_until("the third step to run again", |s| {
        s.hits.iter().filter(|h| h.0 == "kc").count() >= 2
    });
    let resumed = counter.arrivals("kc")[1].duration_since(killed);
    let report = ok_output(
        "attach run",
        http(
            "GET",
            &format!("{ingress}/restate/workflow/KilnRun/run-kill/attach"),
            &[],
            None,
        ),
    );
    let counts = counter.counts("k");
    assert_eq!(
        counts["ka"].len(),
        1,
        "completed steps run once: {counts:?}"
    );
    assert_eq!(
        counts["kb"].len(),
        1,
        "completed steps run once: {counts:?}"
    );
    assert_eq!(
        counts["kc"].len(),
        2,
        "the step in flight ran again: {counts:?}"
    );
    assert_eq!(
        counts["kc"][0], counts["kc"][1],
        "one idempotency key per step"
    );
    assert_eq!(counts["kc"][0], format!("{inv}/tool-3-call_mock_2_0"));
    assert_eq!(m_kill.requests().len(), 4, "no model request was repeated");

    // The session continues on worker B: it sees turn 1 and its ctx.state.
    let turn2 = ok_output(
        "turn 2",
        post(
            "/KilnSession/s-1/turn",
            None,
            &json!({"agent": "chat", "prompt": "again"}),
        ),
    );
    assert_eq!(turn2["answer"], "second", "{turn2}");
    let messages = turn2["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 8, "two turns of four messages: {turn2}");
    assert_eq!(
        messages[..4],
        turn1["messages"].as_array().expect("messages")[..]
    );
    assert_eq!(
        turn2["tool_calls"][0]["outcome"]["result"],
        "counted s2 (#2)"
    );
    let transcript = ok_output(
        "transcript",
        http(
            "POST",
            &format!("{ingress}/KilnSession/s-1/transcript"),
            &[],
            None,
        ),
    );
    assert_eq!(transcript.as_array().map(Vec::len), Some(8));

    // The same run uninterrupted (durable, on B) and in the local mode give the same transcript.
    let started = Instant::now();
    let clean = ok_output(
        "clean run",
        post(
            "/KilnRun/run-clean/run",
            None,
            &json!({"agent": "clean", "prompt": "count"}),
        ),
    );
    let durable_time = started.elapsed();
    let host = kiln::Host::builder()
        .scripts(s.path())
        .workspace(s.path())
        .stdlib(false)
        .build()
        .expect("host");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let started = Instant::now();
    let local = runtime
        .block_on(host.run("local", "count", kiln::RunOptions::default()))
        .expect("local run");
    let local_time = started.elapsed();
    // The runs differ only in their step names (ka / ua / la ...).
    let plain = |v: &Value, p: &str| {
        ["a", "b", "c"]
            .iter()
            .fold(v.to_string(), |t, x| t.replace(&format!("{p}{x}"), x))
    };
    let local = serde_json::to_value(&local).expect("report");
    assert_eq!(report["answer"], "counted three");
    assert_eq!(
        plain(&report["messages"], "k"),
        plain(&clean["messages"], "u")
    );
    assert_eq!(
        plain(&report["messages"], "k"),
        plain(&local["messages"], "l")
    );
    assert_eq!(
        report["tool_calls"][2]["outcome"]["result"],
        "counted kc (#3)"
    );

    // The resuming worker's run log has the run under its invocation id, with tool versions.
    let logs = Command::new(kiln_bin())
        .args(["logs", "--json", "--db"])
        .arg(s.path().join(format!("worker-{port_b}.db")))
        .output()
        .expect("kiln logs");
    let logs = String::from_utf8_lossy(&logs.stdout);
    assert!(
        logs.contains(&inv),
        "worker B's log names the invocation: {logs}"
    );

    let steps = 7.0; // four model requests and three tool calls
    eprintln!(
        "durable: kill -> resumed step running on the other worker: {resumed:?}; \
         run of {steps} steps: durable {durable_time:?}, local {local_time:?}, \
         overhead {:.1} ms/step, ratio {:.2}",
        (durable_time.as_secs_f64() - local_time.as_secs_f64()) * 1000.0 / steps,
        durable_time.as_secs_f64() / local_time.as_secs_f64()
    );
}
