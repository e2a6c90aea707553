//! Fixtures of the durable-run tests: the Restate server, `kiln serve --restate` workers behind
//! a failover proxy (each also a front door to Restate), a loopback execution counter, and a
//! cluster of them with agents on mocks.

use crate::common::{Mock, Scripts, kiln_bin};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::counter::Counter;
pub use super::counter::WAIT;

pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// One HTTP request to Restate (ingress or admin): status and JSON body (or the text as a string).
pub fn http(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> (u16, Value) {
    http_within(WAIT, method, url, headers, body)
}

/// [`http`] giving up after `limit` (status 0).
pub fn http_within(
    limit: Duration,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> (u16, Value) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let client = kiln::egress::http_client_builder().build().expect("client");
        let mut req = client.request(method.parse().expect("method"), url);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        match req.timeout(limit).send().await {
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
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The Restate server on loopback ports, its data in a temp dir.
pub struct Restate {
    pub admin: String,
    pub ingress: String,
    _proc: Proc,
    _dir: tempfile::TempDir,
}

impl Restate {
    pub fn start() -> Restate {
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
        let mut r = Restate {
            admin: format!("http://127.0.0.1:{admin}"),
            ingress: format!("http://127.0.0.1:{ingress}"),
            _proc: Proc(child),
            _dir: dir,
        };
        let log = r._dir.path().join("server.log");
        let start = Instant::now();
        for url in [
            format!("{}/health", r.admin),
            format!("{}/restate/health", r.ingress),
        ] {
            while http_within(Duration::from_secs(2), "GET", &url, &[], None).0 != 200 {
                let exited = r._proc.0.try_wait().ok().flatten();
                let log = || std::fs::read_to_string(&log).unwrap_or_default();
                assert!(
                    exited.is_none(),
                    "restate-server exited ({exited:?}):\n{}",
                    log()
                );
                assert!(
                    start.elapsed() < WAIT,
                    "restate-server never answered {url}:\n{}",
                    log()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        r
    }

    /// The `status` of an invocation in `sys_invocation` (`backing-off`, `completed`, ...).
    pub fn status(&self, invocation: &str) -> String {
        let query = format!("SELECT status FROM sys_invocation WHERE id = '{invocation}'");
        let (_, body) = http(
            "POST",
            &format!("{}/query", self.admin),
            &[("accept", "application/json")],
            Some(&json!({ "query": query })),
        );
        body["rows"][0]["status"].as_str().unwrap_or("").to_string()
    }

    /// The journal entries of an invocation: `(entry_type, name)`.
    pub fn journal(&self, invocation: &str) -> Vec<(String, String)> {
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

/// The bearer tokens of the workers' HTTP API: two actors with the same ceiling.
pub const ALICE: &str = "alice-token-0123456789";
pub const BOB: &str = "bob-token-0123456789ab";

/// A `kiln serve --restate` process logging runs in `db`: a Restate worker on `port`, and the
/// HTTP API (tokens [`ALICE`], [`BOB`]) in front of `restate` at `api`.
pub struct Worker {
    pub proc: Proc,
    pub api: String,
    pub port: u16,
}

/// Starts a worker on free ports (it picks them: no race with other tests for a port), with
/// the tokens [`ALICE`] and [`BOB`], or without tokens (so it also serves `/mcp`).
pub fn worker_with(
    scripts: &Path,
    db: &Path,
    restate: &Restate,
    more: &[&str],
    tokens: bool,
) -> Worker {
    let mut cmd = Command::new(kiln_bin());
    if tokens {
        let tokens = json!([
            {"token": ALICE, "actor": "alice", "caps": ["net:127.0.0.1"]},
            {"token": BOB, "actor": "bob", "caps": ["net:127.0.0.1"]},
        ]);
        cmd.env("KILN_TOKENS", tokens.to_string());
    } else {
        cmd.env_remove("KILN_TOKENS");
    }
    let mut child = cmd
        .args(["serve", "--bind", "127.0.0.1:0", "--restate"])
        .args(["--restate-bind", "127.0.0.1:0"])
        .args(["--restate-ingress", &restate.ingress])
        .args(["--restate-admin", &restate.admin])
        .arg("--scripts")
        .arg(scripts)
        .arg("--workspace")
        .arg(scripts)
        .arg("--db")
        .arg(db)
        .arg("--no-stdlib")
        .args(["--request-timeout", "30"])
        .args(more)
        .env_remove("KILN_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start kiln serve --restate");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line)
        .expect("kiln serve prints its address");
    let api = line
        .trim()
        .strip_prefix("kiln serve: listening on ")
        .unwrap_or_else(|| panic!("kiln serve said: {line}"))
        .to_string();
    line.clear();
    out.read_line(&mut line)
        .expect("the worker prints its address");
    let port = line
        .trim()
        .strip_prefix("kiln serve: Restate worker listening on http://127.0.0.1:")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("kiln serve said: {line}"));
    Worker {
        proc: Proc(child),
        api,
        port,
    }
}

/// A TCP proxy on one address in front of the workers: each connection goes to the first
/// backend that accepts it, so Restate sees one deployment that survives a dead worker.
pub fn failover_proxy(backends: Vec<u16>) -> u16 {
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

/// Three tool rounds (steps `{p}a`, `{p}b`, `{p}c`), then an answer.
pub fn three_steps(p: &str) -> Value {
    let call =
        |s: &str| json!({"tool_calls": [{"name": "count", "args": {"step": format!("{p}{s}")}}]});
    json!({"require_auth": false, "turns": [call("a"), call("b"), call("c"), {"text": "counted three"}]})
}

/// The script: a `count` tool (it reports at the counter with its idempotency key and keeps a
/// tally in ctx.state), a `vault_read` tool needing a capability of its own (`vault`), one agent
/// per mock (in code mode when its name starts with `code`, asking before each use of `net` when
/// it starts with `ask`, compacting past 1,000 tokens when it starts with `compact`, calling `vault_read` under `.ask(["vault"])` when it starts with
/// `vault`), and a json_planner agent `plan`.
pub fn script(counter: &str, agents: &[(&str, &str)]) -> String {
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
tool("count_task")
    .description("Count one step at the counter, as an MCP task")
    .param("step", "string", "the step")
    .requires("net")
    .task("optional")
    .handler(|args, ctx| {{
        http_post(`{counter}/count/${{args.step}}`, #{{ key: ctx.idempotency_key }});
        `counted ${{args.step}} in a task`
    }});
tool("vault_read").description("Read a secret").param("key", "string").requires("vault").handler(|a| "VAULT-SECRET");
"#
    );
    for (name, mock) in agents {
        if name.starts_with("vault") {
            // The seeds' flagship case: a capability of the tool's own, asked before each use.
            src.push_str(&format!(
                "agent(\"{name}\").provider(\"openai\").model(\"m\").base_url(\"{mock}/v1\")\n    \
                 .tools([\"vault_read\"]).capabilities([\"vault\"]).ask([\"vault\"]);\n"
            ));
            continue;
        }
        if name.starts_with("gemini") {
            // On the Gemini wire, as Gemini 3 (the mock checks the thought signatures).
            src.push_str(&format!(
                "agent(\"{name}\").provider(\"gemini\").model(\"gemini-3-flash-preview\").base_url(\"{mock}\")\n    \
                 .tools([\"count\"]).capabilities([\"net:127.0.0.1\"]);\n"
            ));
            continue;
        }
        let mode = if name.starts_with("code") {
            ".code_mode()"
        } else if name.starts_with("compact") {
            // The smallest budget: a 4,000-byte transcript is over it.
            ".compact(#{ at: 1000, keep_last: 1, how: \"summary\" })"
        } else if name.starts_with("ask") {
            ".ask([\"net\"])"
        } else {
            ""
        };
        src.push_str(&format!(
            "agent(\"{name}\").provider(\"openai\").model(\"m\").base_url(\"{mock}/v1\")\n    \
             .tools([\"count\"]).capabilities([\"net:127.0.0.1\"]){mode};\n"
        ));
    }
    // Refused by workers (its steps are not journaled); never reaches its base URL.
    src.push_str(
        "agent(\"plan\").provider(\"openai\").model(\"m\").base_url(\"http://127.0.0.1:9/v1\")\n    \
         .tools([\"count\"]).capabilities([\"net:127.0.0.1\"]).mode(\"json_planner\");\n",
    );
    src
}

pub fn ok_output(what: &str, (status, body): (u16, Value)) -> Value {
    assert!(
        (200..300).contains(&status),
        "{what}: HTTP {status}: {body}"
    );
    body
}

/// Restate, two workers (A, then B) behind one registered address, and agents each on its own
/// mock, their `count` tool reporting to `counter`. B's copy of the script differs by a comment,
/// so the two workers run different versions of the same tool. Both log runs in one database
/// (workers on one machine), so a run resumed by B replaces what A logged of it.
pub struct Cluster {
    pub counter: Counter,
    pub workers: Vec<Option<Worker>>,
    /// The workers' HTTP API addresses (A, B).
    pub apis: Vec<String>,
    pub restate: Restate,
    /// The address registered with Restate (the proxy in front of the workers).
    pub endpoint: String,
    /// Worker A's scripts folder (and where the database lives).
    pub scripts: Scripts,
    _scripts_b: Scripts,
    mocks: HashMap<String, Mock>,
}

impl Cluster {
    /// Starts everything; `agents` are `(name, mock scenario)`.
    pub fn start(agents: &[(&str, Value)]) -> Cluster {
        Self::start_with(agents, &[])
    }

    /// [`Cluster::start`] with more `kiln serve` arguments for the workers.
    pub fn start_with(agents: &[(&str, Value)], more: &[&str]) -> Cluster {
        Self::start_full(agents, more, true)
    }

    /// Workers without tokens, so they serve `/mcp` too (to local clients).
    pub fn start_open(agents: &[(&str, Value)], more: &[&str]) -> Cluster {
        Self::start_full(agents, more, false)
    }

    fn start_full(agents: &[(&str, Value)], more: &[&str], tokens: bool) -> Cluster {
        let counter = Counter::default();
        let counter_url = counter.start();
        let mocks: HashMap<String, Mock> = agents
            .iter()
            .map(|(name, scenario)| (name.to_string(), Mock::start(scenario)))
            .collect();
        let urls: Vec<(&str, &str)> = mocks
            .iter()
            .map(|(n, m)| (n.as_str(), m.url.as_str()))
            .collect();
        let src = script(&counter_url, &urls);
        let scripts = Scripts::new(&[("agents.rhai", &src)]);
        let scripts_b = Scripts::new(&[("agents.rhai", &format!("{src}// worker B's copy\n"))]);
        let restate = Restate::start();
        let db = scripts.path().join("workers.db");
        let workers = vec![
            Some(worker_with(scripts.path(), &db, &restate, more, tokens)),
            Some(worker_with(scripts_b.path(), &db, &restate, more, tokens)),
        ];
        let apis = workers.iter().flatten().map(|w| w.api.clone()).collect();
        let ports = workers.iter().flatten().map(|w| w.port).collect();
        let endpoint = format!("http://127.0.0.1:{}", failover_proxy(ports));
        let out = Command::new(kiln_bin())
            .args([
                "restate",
                "register",
                "--admin",
                &restate.admin,
                "--endpoint",
            ])
            .arg(&endpoint)
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
        Cluster {
            counter,
            workers,
            apis,
            restate,
            endpoint,
            scripts,
            _scripts_b: scripts_b,
            mocks,
        }
    }

    /// `POST` to the ingress, with an idempotency key if given.
    pub fn post(&self, path: &str, key: Option<&str>, body: &Value) -> (u16, Value) {
        let headers: Vec<(&str, &str)> = key.map(|k| ("idempotency-key", k)).into_iter().collect();
        http(
            "POST",
            &format!("{}{path}", self.restate.ingress),
            &headers,
            Some(body),
        )
    }

    /// `GET` from the ingress.
    pub fn get(&self, path: &str) -> (u16, Value) {
        http("GET", &format!("{}{path}", self.restate.ingress), &[], None)
    }

    /// A request to worker `i`'s HTTP API with bearer `token` and more headers.
    pub fn api(
        &self,
        i: usize,
        token: &str,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&Value>,
    ) -> (u16, Value) {
        let bearer = format!("Bearer {token}");
        let mut all = vec![("authorization", bearer.as_str())];
        all.extend_from_slice(headers);
        http(method, &format!("{}{path}", self.apis[i]), &all, body)
    }

    /// Worker A's copy of the scripts.
    pub fn script_a(&self) -> std::path::PathBuf {
        self.scripts.path().join("agents.rhai")
    }

    /// The mock agent `name` talks to.
    pub fn mock(&self, name: &str) -> &Mock {
        &self.mocks[name]
    }

    /// `kill -9` worker `i` and wait for it; returns when it was killed.
    pub fn kill(&mut self, i: usize) -> Instant {
        let mut worker = self.workers[i].take().expect("worker running");
        let killed = Instant::now();
        worker.proc.0.kill().expect("kill -9 worker");
        let _ = worker.proc.0.wait();
        killed
    }

    /// The workers' database.
    pub fn db(&self) -> std::path::PathBuf {
        self.scripts.path().join("workers.db")
    }
}
