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
    let counted = runs.clone();
    let tally = NativeTool::new("tally", move |_args: Value, ctx: &CallContext| {
        counted.fetch_add(1, Ordering::SeqCst);
        let n = {
            let mut state = ctx.state.lock().expect("state");
            let n = state["n"].as_u64().unwrap_or(0) + 1;
            state["n"] = json!(n);
            n
        };
        let key = ctx.idempotency_key.clone();
        async move { Ok(json!({"n": n, "key": key})) }
    })
    .description("Counts");
    let host = Host::builder()
        .scripts(scripts.path())
        .stdlib(false)
        .tool(tally)
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
        first.tool_calls[1].outcome["result"],
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
