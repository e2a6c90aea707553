//! What the front-end doors cost kiln: the same run (R model rounds against `kiln mock`, a tool
//! call in every round but the last, the tool reporting progress and an event) through
//! `/v1/runs` (waited, then its events read: what a front end on the runs API does), the
//! chat completions stream with `"kiln": {"events": true}`, the AG-UI door and the UI message
//! stream door; the server's CPU a round for each, as a ratio to `/v1/runs` measured in the same
//! pass. And what `emit` costs a tool: a loop of 100,000 `emit`s against the same loop building
//! the same values without sending them, each called through the runs API.
//!
//! Doors alternate within each pass (runs, AG-UI, UI, chat; then reversed), one server for all.
//! `cargo bench --bench frontend_doors`; under `cargo test` a few tiny runs as a smoke test.
//! `KILN_DOOR_RUNS` (runs per door per pass) and `KILN_DOOR_PASSES` override the sizes.

mod support;

use serde_json::{Value, json};
use std::time::Instant;

const ROUNDS: usize = 5;

fn var(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// The model calls `work` in every round but the last, then answers.
fn scenario() -> Value {
    let call = json!({"tool_calls": [{"name": "work", "args": {"n": 3}}], "usage": {"input_tokens": 10, "output_tokens": 2}});
    let mut turns = vec![call; ROUNDS - 1];
    turns.push(json!({"text": "done", "usage": {"input_tokens": 10, "output_tokens": 2}}));
    json!({"by_round": true, "turns": turns})
}

fn scripts(mock: &str) -> String {
    format!(
        r#"tool("work").description("w").param("n", "integer").handler(|a| {{
    for i in 0..a.n {{ progress(i + 1, a.n); }}
    emit("done", #{{ n: a.n }});
    a.n
}});
tool("emits").description("e").param("n", "integer").handler(|a| {{
    for i in 0..a.n {{ emit("tick", #{{ i: i }}); }}
    a.n
}});
tool("builds").description("b").param("n", "integer").handler(|a| {{
    let last = ();
    for i in 0..a.n {{ last = #{{ i: i }}; }}
    a.n
}});
agent("bench").provider("openai").model("m").base_url("{mock}/v1").tools(["work"]);
"#
    )
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Door {
    Runs,
    Chat,
    AgUi,
    UiChat,
}

impl Door {
    fn name(self) -> &'static str {
        match self {
            Door::Runs => "/v1/runs (wait, then events)",
            Door::Chat => "chat completions, stream + kiln.events",
            Door::AgUi => "AG-UI",
            Door::UiChat => "UI message stream",
        }
    }
}

/// One run through `door`, read to its end.
async fn one_run(client: &reqwest::Client, base: &str, door: Door, i: usize) {
    let text = |r: reqwest::Response| async move { r.text().await.unwrap_or_default() };
    let body = match door {
        Door::Runs => {
            let run = support::post_json(
                client,
                &format!("{base}/v1/runs"),
                &json!({"agent": "bench", "input": "go", "wait": true}),
            )
            .await;
            let id = run
                .as_ref()
                .and_then(|r| r["id"].as_str())
                .unwrap_or_default()
                .to_string();
            let events = client
                .get(format!("{base}/v1/runs/{id}/events"))
                .send()
                .await
                .expect("events");
            text(events).await
        }
        Door::Chat => {
            let r = client
                .post(format!("{base}/v1/chat/completions"))
                .json(
                    &json!({"model": "bench", "stream": true, "kiln": {"events": true},
                    "messages": [{"role": "user", "content": "go"}]}),
                )
                .send()
                .await
                .expect("chat");
            text(r).await
        }
        Door::AgUi => {
            let r = client.post(format!("{base}/v1/ag-ui/bench"))
                .json(&json!({"threadId": format!("t{i}"), "runId": format!("r{i}"), "state": {},
                    "tools": [], "context": [], "messages": [{"id": "u", "role": "user", "content": "go"}]}))
                .send().await.expect("ag-ui");
            text(r).await
        }
        Door::UiChat => {
            let r = client.post(format!("{base}/v1/ui-chat/bench"))
                .json(&json!({"id": format!("c{i}"), "trigger": "submit-message",
                    "messages": [{"id": "u", "role": "user", "parts": [{"type": "text", "text": "go"}]}]}))
                .send().await.expect("ui-chat");
            text(r).await
        }
    };
    assert!(body.contains("done"), "{door:?}: {body}");
}

fn main() {
    let measuring = support::measuring();
    let runs = var("KILN_DOOR_RUNS").unwrap_or(if measuring { 300 } else { 2 });
    let passes = var("KILN_DOOR_PASSES").unwrap_or(if measuring { 4 } else { 1 });
    let dir = tempfile::tempdir().expect("tmp");
    let (mut mock, mock_url) = support::start_mock(&scenario(), dir.path());
    let scripts_dir = dir.path().join("scripts");
    std::fs::create_dir_all(&scripts_dir).expect("scripts");
    std::fs::write(scripts_dir.join("bench.rhai"), scripts(&mock_url)).expect("write");
    let mut cmd = support::kiln_serve(&scripts_dir);
    cmd.arg("--db")
        .arg(dir.path().join("k.db"))
        .current_dir(dir.path());
    let (mut server, base) = support::start_server(cmd);
    let pid = server.id();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("rt");
    let client = kiln::egress::http_client_builder()
        .timeout(std::time::Duration::from_secs(120))
        .build()
        .expect("client");
    let doors = [Door::Runs, Door::AgUi, Door::UiChat, Door::Chat];
    let mut cpu = std::collections::HashMap::<&str, Vec<f64>>::new();
    runtime.block_on(async {
        // Warm: each door once.
        for d in doors {
            one_run(&client, &base, d, 0).await;
        }
        for pass in 0..passes {
            let order: Vec<Door> = if pass % 2 == 0 {
                doors.to_vec()
            } else {
                doors.iter().rev().copied().collect()
            };
            for d in order {
                let before = support::cpu_time_of(pid);
                for i in 0..runs {
                    one_run(&client, &base, d, pass * runs + i + 1).await;
                }
                let used = support::cpu_time_of(pid).saturating_sub(before);
                cpu.entry(d.name())
                    .or_default()
                    .push(used.as_secs_f64() * 1e6 / (runs * ROUNDS) as f64);
            }
        }
    });
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let floor = median(cpu.get_mut(Door::Runs.name()).expect("runs"));
    let mut rows = Vec::new();
    for d in doors {
        let us = median(cpu.get_mut(d.name()).expect("door"));
        rows.push(vec![
            d.name().to_string(),
            format!("{us:.0} µs"),
            format!("{:.2}x", us / floor),
        ]);
    }
    support::table(
        &format!(
            "Server CPU a round, the same run through each door ({runs} runs × {passes} passes, median)"
        ),
        &["door", "CPU a round", "vs /v1/runs"],
        &rows,
    );
    let emits = if measuring { 100_000 } else { 1_000 };
    let tool_ms = |tool: &str| {
        let mut took = Vec::new();
        for _ in 0..if measuring { 7 } else { 1 } {
            let url = format!("{base}/v1/tools/{tool}");
            let started = Instant::now();
            let out = std::process::Command::new("curl")
                .args([
                    "-s",
                    "-X",
                    "POST",
                    &url,
                    "-H",
                    "content-type: application/json",
                    "-d",
                ])
                .arg(json!({"arguments": {"n": emits}}).to_string())
                .output()
                .expect("curl");
            let reply: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
            assert_eq!(reply["result"], emits, "{reply}");
            took.push(started.elapsed().as_secs_f64() * 1e3);
        }
        took.sort_by(|a, b| a.total_cmp(b));
        took[took.len() / 2]
    };
    let (emitting, building) = (tool_ms("emits"), tool_ms("builds"));
    support::table(
        &format!(
            "A tool's loop of {emits} values, emitted or only built (median ms, through POST /v1/tools)"
        ),
        &["loop", "ms", "vs building only"],
        &[
            vec![
                "emit(\"tick\", #{ i })".into(),
                format!("{emitting:.1}"),
                format!("{:.2}x", emitting / building),
            ],
            vec![
                "let last = #{ i }".into(),
                format!("{building:.1}"),
                "1.00x".into(),
            ],
        ],
    );
    let _ = server.kill();
    let _ = mock.kill();
}
