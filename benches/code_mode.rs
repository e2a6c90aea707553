//! Code mode against plain tool calling on the same task: 20 price lookups and a total, an
//! agent run against `kiln mock` on loopback. Plain tool calling makes one call a round, as a
//! sequential model does (21 model rounds); code mode answers with one program (2 rounds).
//! Model rounds, bytes sent to the model, and wall time of the whole run, side by side.
//!
//! Then the same code-mode run again with programs in worker processes, as the `kiln` binary
//! runs them (issue 56): the pool is process-wide, so those samples follow the in-process ones
//! rather than interleave with them.
//!
//! `cargo bench --bench code_mode` measures (median of 21 runs each, interleaved); under
//! `cargo test` it runs each once as a smoke test. The mock answers at once: a real model
//! adds its own latency to every round, 21 times against 2.

mod support;

use kiln::{Host, RunOptions};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::{median, ratio, show, start_mock, table};

const TOOL: &str = r#"tool("lookup").description("Price of a SKU").param("sku", "string")
    .handler(|a| #{ sku: a.sku, price: 1.5 });"#;

/// One agent against its own mock: its host, the mock, and its base URL.
struct Variant {
    host: std::sync::Arc<Host>,
    mock: std::process::Child,
    base: String,
    _dir: tempfile::TempDir,
}

impl Variant {
    fn start(turns: Vec<Value>, mode: &str) -> Variant {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mock, base) = start_mock(
            &json!({"loop": true, "require_auth": false, "turns": turns}),
            dir.path(),
        );
        let agent = format!(
            "{TOOL}\nagent(\"shop\").provider(\"openai\").model(\"m\").base_url(\"{base}/v1\").tools([\"lookup\"]).max_iterations(25){mode};"
        );
        std::fs::write(dir.path().join("a.rhai"), agent).expect("write");
        let host = Host::builder()
            .scripts(dir.path())
            .stdlib(false)
            .build()
            .expect("host");
        assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
        Variant {
            host,
            mock,
            base,
            _dir: dir,
        }
    }

    async fn run(&self) -> kiln::RunReport {
        self.host
            .run("shop", "Total of SKU-1..20?", RunOptions::default())
            .await
            .expect("run")
    }

    /// Bytes of the request bodies the mock has received so far, and how many.
    async fn sent(&self, client: &reqwest::Client) -> (usize, usize) {
        let recorded: Value = client
            .get(format!("{}/_kiln/requests", self.base))
            .send()
            .await
            .expect("get")
            .json()
            .await
            .expect("json");
        let requests = recorded.as_array().cloned().unwrap_or_default();
        let bytes = requests.iter().map(|r| r["body"].to_string().len()).sum();
        (bytes, requests.len())
    }
}

impl Drop for Variant {
    fn drop(&mut self) {
        let _ = self.mock.kill();
        let _ = self.mock.wait();
    }
}

fn main() {
    let samples = if support::measuring() { 21 } else { 1 };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let plain_turns: Vec<Value> = (1..=20)
            .map(|i| json!({"tool_calls": [{"name": "lookup", "args": {"sku": format!("SKU-{i}")}}]}))
            .chain([json!({"text": "The total is 30."})])
            .collect();
        let program = "let t = 0.0; for i in 1..=20 { t += lookup(#{ sku: `SKU-${i}` }).price; } t";
        let code_turns = vec![json!({"code": program}), json!({"text": "The total is 30."})];
        let plain = Variant::start(plain_turns, "");
        let code = Variant::start(code_turns, ".code_mode()");
        let client = kiln::egress::http_client_builder().no_proxy().build().expect("client");

        // One run each first: rounds, answer, and the bytes one run sends.
        let mut shape = Vec::new();
        for v in [&plain, &code] {
            let report = v.run().await;
            assert_eq!(report.answer, "The total is 30.");
            let (bytes, requests) = v.sent(&client).await;
            assert_eq!(requests as u32, report.rounds);
            shape.push((report.rounds, bytes));
        }
        assert_eq!((shape[0].0, shape[1].0), (21, 2));

        let mut times: [Vec<Duration>; 2] = Default::default();
        for _ in 0..samples {
            for (i, v) in [&plain, &code].into_iter().enumerate() {
                let t = Instant::now();
                std::hint::black_box(v.run().await);
                times[i].push(t.elapsed());
            }
        }
        let [p, c] = times.map(|mut t| median(&mut t));

        // The same program in a worker process, from a pool kept warm as `kiln` keeps it.
        kiln::programs::install(kiln::programs::PoolSettings {
            command: env!("CARGO_BIN_EXE_kiln").into(),
            args: vec![kiln::programs::WORKER_ARG.to_string()],
            max_programs: 2,
            limits: kiln::programs::WorkerLimits::default(),
        });
        let report = code.run().await;
        assert_eq!(report.answer, "The total is 30.");
        let mut in_worker = Vec::new();
        for _ in 0..samples {
            let t = Instant::now();
            std::hint::black_box(code.run().await);
            in_worker.push(t.elapsed());
        }
        let w = median(&mut in_worker);
        let row = |name: &str, (rounds, bytes): (u32, usize), wall: Duration| {
            vec![
                name.to_string(),
                rounds.to_string(),
                bytes.to_string(),
                show(wall),
                ratio(wall, p),
            ]
        };
        table(
            &format!("Code mode against plain tool calling: one agent run of 20 price lookups and a total against `kiln mock` on loopback (answering at once), median of {samples} runs each, interleaved:"),
            &["variant", "model rounds", "bytes sent to the model", "wall time per run", "vs plain"],
            &[
                row("plain tool calling, one call a round", shape[0], p),
                row("code mode, one program in this process", shape[1], c),
                row("code mode, one program in a worker process", shape[1], w),
            ],
        );
    });
}
