//! A durable step against a local one: the same 7-step run (four model requests and three tool
//! calls against `kiln mock`) through a Restate server and a kiln worker, and in this process
//! with the local journal; median of 5 each. Needs the Restate server binary in
//! `KILN_RESTATE_SERVER` (`.ci/run` installs it); without it the bench says so and stops.
//!
//! Run: `KILN_RESTATE_SERVER=... cargo bench --bench durable_steps`.

#[allow(dead_code)]
#[path = "../tests/it/common.rs"]
mod common;
#[allow(dead_code)]
#[path = "../tests/it/durable/fixtures.rs"]
mod fixtures;

use fixtures::{Cluster, ok_output, three_steps};
use serde_json::json;
use std::time::{Duration, Instant};

const RUNS: usize = 5;
/// Four model requests and three tool calls.
const STEPS: f64 = 7.0;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    if std::env::var_os("KILN_RESTATE_SERVER").is_none() {
        println!("durable_steps: skipped (set KILN_RESTATE_SERVER to the restate-server binary)");
        return;
    }
    let mut scenario = three_steps("b");
    scenario["loop"] = json!(true);
    let c = Cluster::start(&[("bench", scenario)]);
    let durable = median(
        (0..RUNS)
            .map(|i| {
                let started = Instant::now();
                let body = json!({"agent": "bench", "prompt": "count"});
                ok_output(
                    "run",
                    c.post(&format!("/KilnRun/bench-{i}/run"), None, &body),
                );
                started.elapsed()
            })
            .collect(),
    );
    let host = kiln::Host::builder()
        .scripts(c.scripts.path())
        .workspace(c.scripts.path())
        .stdlib(false)
        .build()
        .expect("host");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let local = median(
        (0..RUNS)
            .map(|_| {
                let started = Instant::now();
                let run = host.run("bench", "count", kiln::RunOptions::default());
                runtime.block_on(run).expect("local run");
                started.elapsed()
            })
            .collect(),
    );
    println!(
        "durable_steps: median run of {STEPS} steps: durable {durable:?}, local {local:?}, \
         overhead {:.2} ms/step, durable/local {:.2}x",
        (durable.as_secs_f64() - local.as_secs_f64()) * 1000.0 / STEPS,
        durable.as_secs_f64() / local.as_secs_f64()
    );
}
