//! The step journal seam without an engine: a journal that remembers each step's result makes a
//! second run with the same id replay them, so no tool runs again, `ctx.state` is restored from
//! the remembered steps and the transcript is the same.

use crate::common::{Mock, Scripts};
use kiln::durable::{Recalled, StepFuture, StepJournal, StepValue, StepWork};
use kiln::{CallContext, Host, NativeTool, RunOptions};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Remembering {
    results: Mutex<HashMap<String, Value>>,
    asked: Mutex<Vec<String>>,
    /// Says it keeps steps beyond the attempt, as a durable engine's journal does.
    durable: bool,
}

impl StepJournal for Remembering {
    fn step<'a>(&'a self, name: String, work: StepWork) -> StepFuture<'a> {
        Box::pin(async move {
            self.asked.lock().expect("asked").push(name.clone());
            let known = self.results.lock().expect("results").get(&name).cloned();
            if let Some(value) = known {
                return Ok(Recalled {
                    value: StepValue::Json(value),
                    replayed: true,
                });
            }
            let value = work.await?.into_json()?;
            self.results
                .lock()
                .expect("results")
                .insert(name, value.clone());
            Ok(Recalled {
                value: StepValue::Json(value),
                replayed: false,
            })
        })
    }

    fn keeps_steps(&self) -> bool {
        self.durable
    }
}

/// A tool counting its runs in `ctx.state.n` and in `runs`, answering with its idempotency key.
fn tally(runs: &Arc<AtomicUsize>) -> NativeTool {
    let counted = runs.clone();
    NativeTool::new("tally", move |_args: Value, ctx: &CallContext| {
        counted.fetch_add(1, Ordering::SeqCst);
        let n = {
            let mut state = ctx.run.state.lock().expect("state");
            let n = state["n"].as_u64().unwrap_or(0) + 1;
            state["n"] = json!(n);
            n
        };
        let key = ctx.who.idempotency_key.clone();
        async move { Ok(json!({"n": n, "key": key})) }
    })
    .description("Counts")
}

#[test]
fn a_remembering_journal_replays_steps_without_running_them_and_restores_state() {
    let mock = Mock::start(&json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "tally", "args": {}}]},
        {"tool_calls": [{"name": "tally", "args": {}}]},
        {"text": "tallied"},
    ]}));
    let scripts = Scripts::new(&[(
        "a.rhai",
        &format!(
            "agent(\"a\").provider(\"openai\").model(\"m\").base_url(\"{}/v1\").tools([\"tally\"]);",
            mock.url
        ),
    )]);
    let runs = Arc::new(AtomicUsize::new(0));
    let host = Host::builder()
        .scripts(scripts.path())
        .stdlib(false)
        .tool(tally(&runs))
        .build()
        .expect("host");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let journal = Remembering::default();
    let run = |state: &Arc<Mutex<Value>>| {
        let opts = RunOptions {
            run_id: Some("run-x".into()),
            state: Some(state.clone()),
            ..RunOptions::default()
        };
        runtime
            .block_on(host.run_journaled(&journal, "a", "go", opts))
            .expect("run")
    };
    let first_state = Arc::new(Mutex::new(json!({})));
    let first = run(&first_state);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(
        *first.tool_calls[1]
            .outcome
            .result()
            .unwrap_or(&serde_json::Value::Null),
        json!({"n": 2, "key": "run-x/tool-2-call_mock_1_0"})
    );
    let steps = journal.asked.lock().expect("asked").clone();
    assert_eq!(
        steps,
        [
            "model-1",
            "tool-1-call_mock_0_0",
            "model-2",
            "tool-2-call_mock_1_0",
            "model-3"
        ]
    );

    let replayed_state = Arc::new(Mutex::new(json!({})));
    let replay = run(&replayed_state);
    assert_eq!(runs.load(Ordering::SeqCst), 2, "no tool ran again");
    assert_eq!(mock.requests().len(), 3, "no model request was sent again");
    assert_eq!(replay.messages, first.messages);
    assert_eq!(replay.answer, "tallied");
    assert_eq!(replay.run_id, "run-x");
    assert_eq!(
        *replayed_state.lock().expect("state"),
        json!({"n": 2}),
        "state restored"
    );
    assert_eq!(
        journal.asked.lock().expect("asked")[5..],
        steps[..],
        "same steps, same order"
    );
}

/// A host with `tally` and a code-mode agent `a` on `mock`, and the tally's run count.
fn coder(mock: &Mock) -> (Scripts, Arc<Host>, Arc<AtomicUsize>) {
    let scripts = Scripts::new(&[(
        "a.rhai",
        &format!(
            "agent(\"a\").provider(\"openai\").model(\"m\").base_url(\"{}/v1\")\n\
             .tools([\"tally\"]).code_mode();",
            mock.url
        ),
    )]);
    let runs = Arc::new(AtomicUsize::new(0));
    let host = Host::builder()
        .scripts(scripts.path())
        .stdlib(false)
        .tool(tally(&runs))
        .build()
        .expect("host");
    (scripts, host, runs)
}

#[test]
fn a_resumed_code_mode_program_gets_its_completed_calls_back_from_the_journal() {
    let program = "let a = tally(); let b = tally(); let c = tally(); let d = tally(); \
                   [a.key, b.n, c.n, d.n, d.key]";
    let mock = Mock::start(&json!({"require_auth": false, "turns": [
        {"code": program},
        {"text": "tallied"},
        // The resumed attempt's model request, which the first attempt had not journaled.
        {"text": "tallied"},
    ]}));
    let (_scripts, host, runs) = coder(&mock);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let journal = Remembering {
        durable: true,
        ..Remembering::default()
    };
    let run = || {
        let opts = RunOptions {
            run_id: Some("run-c".into()),
            state: Some(Arc::new(Mutex::new(json!({})))),
            ..RunOptions::default()
        };
        runtime
            .block_on(host.run_journaled(&journal, "a", "go", opts))
            .expect("run")
    };
    let first = run();
    assert_eq!(runs.load(Ordering::SeqCst), 4);
    let parent = "tool-1-call_mock_0_0";
    let nested = |i: u32| format!("{parent}/{i}");
    let steps = journal.asked.lock().expect("asked").clone();
    assert_eq!(
        steps,
        [
            "model-1".to_string(),
            nested(1),
            nested(2),
            nested(3),
            nested(4),
            parent.to_string(),
            "model-2".to_string()
        ]
    );
    let result = first.tool_calls[0]
        .outcome
        .result()
        .unwrap_or(&serde_json::Value::Null);
    assert_eq!(
        result,
        &json!([
            format!("run-c/{parent}/1"),
            2,
            3,
            4,
            format!("run-c/{parent}/4")
        ])
    );

    // The worker died after nested call 2 was journaled: what came after it is not kept.
    journal.asked.lock().expect("asked").clear();
    {
        let mut results = journal.results.lock().expect("results");
        for name in [nested(3), nested(4), parent.to_string(), "model-2".into()] {
            results.remove(&name);
        }
    }
    let resumed = run();
    assert_eq!(
        runs.load(Ordering::SeqCst),
        6,
        "calls 1 and 2 were recalled, 3 and 4 ran again"
    );
    assert_eq!(
        journal.asked.lock().expect("asked").clone(),
        steps,
        "the resumed program asked for the same steps in the same order"
    );
    // Calls 1 and 2 restored ctx.state, so call 3 counted on from 2.
    assert_eq!(
        *resumed.tool_calls[0]
            .outcome
            .result()
            .unwrap_or(&serde_json::Value::Null),
        *result
    );
    assert_eq!(resumed.tool_calls[0].nested.len(), 4);
    assert_eq!(resumed.answer, "tallied");
}

#[test]
fn a_local_run_does_not_journal_a_programs_calls() {
    let mock = Mock::start(&json!({"require_auth": false, "turns": [
        {"code": "tally(); tally()"},
        {"text": "done"},
    ]}));
    let (_scripts, host, runs) = coder(&mock);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let journal = Remembering::default();
    runtime
        .block_on(host.run_journaled(&journal, "a", "go", RunOptions::default()))
        .expect("run");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(
        journal.asked.lock().expect("asked").clone(),
        ["model-1", "tool-1-call_mock_0_0", "model-2"]
    );
}
