//! A durable step against Restate's own floor (issue 31). One Restate server, and on it:
//!
//! - kiln: a `kiln serve --restate` worker, registered directly, runs a 7-step agent run (four
//!   model requests and three tool calls against `kiln mock`) as `KilnRun/{key}/run`;
//! - the same run in this process with the local journal, with and without the run log: the
//!   work the steps do;
//! - the floor: a bare service on the same SDK (`restate-sdk`) and its own HTTP server, in this
//!   process: a workflow like `KilnRun` whose handler runs 7 (or 0) `ctx.run` steps returning
//!   the very bytes kiln's steps journal (read back from `sys_journal`) and answers with as
//!   many bytes as kiln's run report.
//!
//! Both durable runs go through the same ingress with the same client, interleaved with the
//! local ones; median of 61 each (one run under `cargo test`). kiln per step is (durable − local
//! with the run log) / 7, the floor's its whole run / 7. Needs the Restate server binary in
//! `KILN_RESTATE_SERVER` (`.ci/run` installs it); without it the bench says so and stops.
//!
//! Run: `KILN_RESTATE_SERVER=... cargo bench --bench durable_steps`.

#[allow(dead_code)]
#[path = "../tests/it/common.rs"]
mod common;
#[allow(dead_code)]
#[path = "../tests/it/durable/counter.rs"]
mod counter;
#[allow(dead_code)]
#[path = "../tests/it/durable/fixtures.rs"]
mod fixtures;
mod support;

use fixtures::{Restate, free_port, three_steps, worker_with};
use restate_sdk::prelude::*;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{median, ratio, show, table};

/// Four model requests and three tool calls.
const STEPS: u32 = 7;

/// What the floor's steps return and what it answers.
struct Floor {
    steps: Vec<Vec<u8>>,
    reply: Vec<u8>,
}

struct FloorService(Arc<Floor>);

#[restate_sdk::workflow(name = "FloorRun")]
impl FloorService {
    /// `{"steps": n}`: journals the first `n` steps, then answers. Payloads are bytes: no
    /// serialisation beyond a copy.
    #[handler]
    async fn run(&self, ctx: WorkflowContext<'_>, input: Json<Value>) -> HandlerResult<Vec<u8>> {
        let n = input.into_inner()["steps"].as_u64().unwrap_or(0) as usize;
        for (i, payload) in self.0.steps.iter().take(n).enumerate() {
            let payload = payload.clone();
            let _: Vec<u8> = ctx
                .run(move || async move { Ok(payload) })
                .name(format!("step-{i}"))
                .await?;
        }
        Ok(self.0.reply.clone())
    }
}

/// Serves the floor on the SDK's own HTTP server at `port`. Its connections inherit
/// `TCP_NODELAY` from the listening socket, as kiln's worker sets it on each: without it Nagle
/// holds back every step's small frames.
fn serve_floor(rt: &tokio::runtime::Runtime, floor: Floor, port: u16) {
    let endpoint = Endpoint::builder()
        .bind(FloorService(Arc::new(floor)).into_service_definition())
        .build();
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_nodelay(true).expect("nodelay");
    socket
        .bind(([127, 0, 0, 1], port).into())
        .expect("bind the floor");
    rt.spawn(async move {
        let listener = socket.listen(128).expect("listen");
        HttpServer::new(endpoint)
            .serve_with_cancel(listener, std::future::pending::<()>())
            .await;
    });
}

/// Bytes that look like text (not all one byte, which would compress to nothing).
fn filler(len: usize) -> Vec<u8> {
    let alphabet = b"abcdefghijklmnopqrstuvwxyz \"{}:,0123456789";
    let mut x: u32 = 0x9e37_79b9;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            alphabet[x as usize % alphabet.len()]
        })
        .collect()
}

/// The bench's one client of Restate (ingress, admin API and metrics), pooled, on `rt`.
struct Client {
    rt: Arc<tokio::runtime::Runtime>,
    http: reqwest::Client,
}

impl Client {
    /// A request answered with JSON (or its text as a JSON string).
    fn json(&self, url: &str, body: Option<&Value>) -> (u16, Value) {
        self.rt.block_on(async {
            let req = match body {
                Some(b) => self.http.post(url).json(b),
                None => self.http.get(url),
            };
            let r = req
                .header("accept", "application/json")
                .timeout(Duration::from_secs(60))
                .send()
                .await
                .expect("request");
            let status = r.status().as_u16();
            let text = r.text().await.expect("body");
            (status, serde_json::from_str(&text).unwrap_or(json!(text)))
        })
    }

    /// Runs the handler at `url` through the ingress: how long it took, and its reply.
    fn invoke(&self, url: &str, body: &Value) -> (Duration, Vec<u8>) {
        self.rt.block_on(async {
            let started = Instant::now();
            let r = self
                .http
                .post(url)
                .json(body)
                .timeout(Duration::from_secs(60))
                .send()
                .await
                .expect("invoke");
            let status = r.status();
            let reply = r.bytes().await.expect("reply");
            let took = started.elapsed();
            assert!(
                status.is_success(),
                "{url}: HTTP {status}: {}",
                String::from_utf8_lossy(&reply)
            );
            (took, reply.to_vec())
        })
    }
}

/// The first child of this process whose command line contains `word`.
fn child_with(word: &str) -> u32 {
    let tasks = std::fs::read_dir("/proc/self/task").expect("tasks");
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok())
                .collect::<Vec<_>>()
        })
        .find(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(word))
                .unwrap_or(false)
        })
        .unwrap_or_else(|| panic!("no child process running {word}"))
}

/// Where the Restate server `pid` serves its metrics (its node port, from its config file).
fn metrics_url(pid: u32) -> String {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).expect("cmdline");
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let config = args
        .iter()
        .position(|a| a == "--config-file")
        .and_then(|i| args.get(i + 1))
        .expect("restate-server --config-file");
    let config = std::fs::read_to_string(config).expect("restate config");
    let port = config
        .lines()
        .find_map(|l| l.strip_prefix("bind-port = "))
        .expect("bind-port");
    format!("http://127.0.0.1:{port}/metrics")
}

/// How many appends Restate's log has made so far (its sequencer's append waves: one write and
/// fsync each).
fn appends(client: &Client, url: &str) -> f64 {
    let (_, text) = client.json(url, None);
    let metric = "restate_bifrost_sequencer_append_waves_count";
    text.as_str()
        .unwrap_or("")
        .lines()
        .filter(|l| l.starts_with(metric))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

/// Registers the deployment at `uri` with the server's admin API.
fn register(client: &Client, restate: &Restate, uri: &str) {
    let url = format!("{}/deployments", restate.admin);
    let (status, body) = client.json(&url, Some(&json!({"uri": uri, "force": true})));
    assert!(
        (200..300).contains(&status),
        "register {uri}: {status} {body}"
    );
}

/// The values invocation `key` of `service` journaled for its `ctx.run` steps, in order (each
/// step's notification in `sys_journal`, from its value's first `{`).
fn journaled(client: &Client, restate: &Restate, service: &str, key: &str) -> Vec<Vec<u8>> {
    let query = format!(
        "SELECT j.entry_type, j.raw FROM sys_journal j JOIN sys_invocation i ON j.id = i.id \
         WHERE i.target_service_name = '{service}' AND i.target_service_key = '{key}' \
         ORDER BY j.index"
    );
    let url = format!("{}/query", restate.admin);
    let (status, body) = client.json(&url, Some(&json!({ "query": query })));
    assert_eq!(status, 200, "query: {body}");
    let hex = |s: &str| -> Vec<u8> {
        (0..s.len() / 2)
            .filter_map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok())
            .collect()
    };
    body["rows"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|r| r["entry_type"] == "Notification: Run")
        .map(|r| {
            let raw = hex(r["raw"].as_str().unwrap_or(""));
            let at = raw.iter().position(|b| *b == b'{').unwrap_or(raw.len());
            raw[at..].to_vec()
        })
        .collect()
}

/// The agent: the durable tests' `count` tool without its visit to their counter (a tool whose
/// own work is next to nothing, so a step costs what journaling it costs), on `mock`.
fn agent_script(mock: &str) -> String {
    format!(
        r#"tool("count")
    .description("Count one step")
    .param("step", "string", "the step")
    .handler(|args, ctx| {{
        let n = if ctx.state.n == () {{ 1 }} else {{ ctx.state.n + 1 }};
        ctx.state.n = n;
        `counted ${{args.step}} (#${{n}})`
    }});
agent("bench").provider("openai").model("m").base_url("{mock}/v1").tools(["count"]);
"#
    )
}

/// What each variant cost, summed over the samples.
#[derive(Default)]
struct Costs {
    wall: Vec<Duration>,
    /// CPU of this process, the worker, Restate.
    cpu: [Duration; 3],
    appends: f64,
}

fn main() {
    if std::env::var_os("KILN_RESTATE_SERVER").is_none() {
        println!("durable_steps: skipped (set KILN_RESTATE_SERVER to the restate-server binary)");
        return;
    }
    let samples = if support::measuring() { 61 } else { 1 };
    let rt = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime"),
    );
    let client = Client {
        rt: rt.clone(),
        http: kiln::egress::http_client_builder().build().expect("client"),
    };

    // kiln: a worker registered directly (no proxy in front), its run log outside the scripts
    // folder it watches (as `kiln serve` keeps it by default), its agent on a mock.
    let mut scenario = three_steps("b");
    scenario["loop"] = json!(true);
    let mock = common::Mock::start(&scenario);
    let scripts = common::Scripts::new(&[("agents.rhai", &agent_script(&mock.url))]);
    let data = tempfile::tempdir().expect("tempdir");
    let restate = Restate::start();
    let worker = worker_with(
        scripts.path(),
        &data.path().join("worker.db"),
        &restate,
        &[],
        false,
    );
    register(
        &client,
        &restate,
        &format!("http://127.0.0.1:{}", worker.port),
    );
    let (_, version) = client.json(&format!("{}/version", restate.admin), None);
    let version = version["version"].as_str().unwrap_or("?").to_string();
    let body = json!({"agent": "bench", "prompt": "count"});
    let nonce = std::process::id();
    let kiln_url = |i: usize| format!("{}/KilnRun/bench-{nonce}-{i}/run", restate.ingress);

    // One run first: what its steps journal is what the floor's steps return.
    let (_, reply) = client.invoke(&kiln_url(0), &body);
    let steps = journaled(&client, &restate, "KilnRun", &format!("bench-{nonce}-0"));
    assert_eq!(
        steps.len(),
        STEPS as usize,
        "kiln's run journals {STEPS} steps"
    );
    let sizes: Vec<usize> = steps.iter().map(Vec::len).collect();
    let floor_port = free_port();
    let reply_len = reply.len();
    serve_floor(
        &rt,
        Floor {
            steps,
            reply: filler(reply_len),
        },
        floor_port,
    );
    register(&client, &restate, &format!("http://127.0.0.1:{floor_port}"));
    let floor_url = |i: usize, n: u32| format!("{}/FloorRun/f{n}-{nonce}-{i}/run", restate.ingress);
    let (_, floor_reply) = client.invoke(&floor_url(0, STEPS), &json!({"steps": STEPS}));
    let floor_steps = journaled(
        &client,
        &restate,
        "FloorRun",
        &format!("f{STEPS}-{nonce}-0"),
    );
    assert_eq!(
        floor_steps.iter().map(Vec::len).collect::<Vec<_>>(),
        sizes,
        "the floor journals what kiln does"
    );
    assert_eq!(floor_reply.len(), reply_len, "the floor answers as much");

    // The same run locally, with a run log as the worker's and without one.
    let local = |log: bool| {
        let mut b = kiln::Host::builder()
            .scripts(scripts.path())
            .workspace(scripts.path())
            .stdlib(false);
        if log {
            b = b.database(data.path().join("local.db"));
        }
        b.build().expect("host")
    };
    let (logged, unlogged) = (local(true), local(false));
    let local_run = |host: &kiln::Host| {
        let started = Instant::now();
        rt.block_on(host.run("bench", "count", kiln::RunOptions::default()))
            .expect("local run");
        started.elapsed()
    };

    let restate_pid = child_with("restate-server");
    let pids = [std::process::id(), worker.proc.0.id(), restate_pid];
    let metrics = metrics_url(restate_pid);
    let mut costs: [Costs; 5] = Default::default();
    // The first two rounds are warm-up.
    for i in 1..=samples + 2 {
        let variants: [&dyn Fn() -> Duration; 5] = [
            &|| client.invoke(&kiln_url(i), &body).0,
            &|| local_run(&logged),
            &|| local_run(&unlogged),
            &|| {
                client
                    .invoke(&floor_url(i, STEPS), &json!({"steps": STEPS}))
                    .0
            },
            &|| client.invoke(&floor_url(i, 0), &json!({"steps": 0})).0,
        ];
        for (cost, run) in costs.iter_mut().zip(variants) {
            let appended = appends(&client, &metrics);
            let cpu = pids.map(support::cpu_time_of);
            let took = run();
            let cpu_after = pids.map(support::cpu_time_of);
            let appended = appends(&client, &metrics) - appended;
            if i > 2 {
                cost.wall.push(took);
                for (sum, (b, a)) in cost.cpu.iter_mut().zip(cpu.iter().zip(cpu_after)) {
                    *sum += a.saturating_sub(*b);
                }
                cost.appends += appended;
            }
        }
    }
    let per_run = |c: &Costs| {
        (
            c.cpu.map(|d| d / samples as u32),
            c.appends / samples as f64,
        )
    };
    let [durable, logged, unlogged, floor7, floor0] = costs.map(|mut c| {
        let wall = median(&mut c.wall);
        let (cpu, appends) = per_run(&c);
        (wall, cpu, appends)
    });
    drop(worker);
    drop(mock);

    let per = |d: Duration| d / STEPS;
    let kiln_step = per(durable.0.saturating_sub(logged.0));
    let floor_step = per(floor7.0);
    // The bench's own CPU during kiln's runs is its client's: taken off the floor's handler.
    let client_cpu = durable.1[0];
    let handler = |cpu: [Duration; 3], floor: bool| {
        if floor {
            show(cpu[0].saturating_sub(client_cpu))
        } else {
            show(cpu[1])
        }
    };
    let appends = |a: f64| format!("{a:.1}");
    table(
        &format!(
            "Durable steps against Restate's floor: one Restate server ({version}, on \
             loopback) runs kiln's {STEPS}-step run (4 model requests and 3 tool calls against \
             `kiln mock`) as `KilnRun/{{key}}/run` on a `kiln serve --restate` worker, and the \
             floor: a bare workflow on the same SDK (restate-sdk 0.13) in the bench process \
             whose handler runs {STEPS} (or 0) `ctx.run` steps returning the very bytes kiln's \
             steps journal ({sizes:?} bytes) and answers {reply_len} bytes like kiln's run \
             report, both through the same ingress with the same client; the local rows are the \
             same run in process (the work the steps do). Interleaved, median of {samples}. \
             kiln per step: (durable − local with the run log) / {STEPS}; the floor's: its whole \
             run / {STEPS}. Log appends: Restate's writes to its log (an fsync each) per run; \
             CPU per run: the handler's process (the worker, or the bench less its client) and \
             Restate's:"
        ),
        &[
            "variant",
            "whole run",
            "per step",
            "vs floor",
            "log appends",
            "handler CPU",
            "Restate CPU",
        ],
        &[
            vec![
                "floor, 0 steps".into(),
                show(floor0.0),
                "–".into(),
                "–".into(),
                appends(floor0.2),
                handler(floor0.1, true),
                show(floor0.1[2]),
            ],
            vec![
                format!("floor, {STEPS} steps"),
                show(floor7.0),
                show(floor_step),
                "1.00x".into(),
                appends(floor7.2),
                handler(floor7.1, true),
                show(floor7.1[2]),
            ],
            vec![
                "kiln local, no run log".into(),
                show(unlogged.0),
                show(per(unlogged.0)),
                "–".into(),
                "–".into(),
                show(unlogged.1[0]),
                "–".into(),
            ],
            vec![
                "kiln local, run log".into(),
                show(logged.0),
                show(per(logged.0)),
                "–".into(),
                "–".into(),
                show(logged.1[0]),
                "–".into(),
            ],
            vec![
                "kiln durable".into(),
                show(durable.0),
                show(kiln_step),
                ratio(kiln_step, floor_step),
                appends(durable.2),
                handler(durable.1, false),
                show(durable.1[2]),
            ],
        ],
    );
}
