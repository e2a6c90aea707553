//! The run log is off the critical path but never behind a side effect: a step commits while
//! the next model request is out, and no tool of the next step starts before that commit.

use crate::common::Mock;
use kiln::{Host, NativeTool, RunOptions};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// What the recorder and the tool see of each other.
#[derive(Default)]
struct Shared {
    /// The run's start is committed.
    started: AtomicBool,
    /// Steps committed so far.
    steps: AtomicUsize,
    /// The first step's commit saw the second model request arrive while it was running.
    overlapped: AtomicBool,
    /// Per tool call: (committed steps, start committed) when it began.
    seen: Mutex<Vec<(usize, bool)>>,
    /// Set when a tool of the second step begins; the first commit waits on it.
    second_tool: (Mutex<bool>, Condvar),
}

/// A recorder whose first step commit holds until the next model request reached the mock
/// and, as a trap, until a tool of the next step begins (a safety timeout ends the wait).
struct Latched {
    shared: Arc<Shared>,
    mock_url: String,
}

impl Latched {
    fn requests(&self) -> usize {
        let body = crate::common::http_get(&format!("{}/_kiln/requests", self.mock_url));
        serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|v| v.as_array().map(Vec::len))
            .unwrap_or(0)
    }
}

impl kiln::durable::Recorder for Latched {
    fn started(&self, _: &kiln::RunReport) -> Result<(), kiln::durable::RecordError> {
        self.shared.started.store(true, Ordering::SeqCst);
        Ok(())
    }
    fn model_reply(
        &self,
        _: &str,
        _: u32,
        _: kiln::model::Usage,
        _: &kiln::model::StopReason,
        _: &kiln::model::AnsweredBy,
        _: Duration,
    ) {
    }
    fn step(
        &self,
        _: &str,
        _: usize,
        _: &[kiln::model::Message],
        _: &[kiln::durable::ToolCallRecord],
        _: &Value,
    ) -> Result<(), kiln::durable::RecordError> {
        if self.shared.steps.load(Ordering::SeqCst) == 0 {
            let until = Instant::now() + Duration::from_secs(10);
            while self.requests() < 2 && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            self.shared
                .overlapped
                .store(self.requests() >= 2, Ordering::SeqCst);
            let (lock, cv) = &self.shared.second_tool;
            let began = lock.lock().expect("lock");
            let _ = cv
                .wait_timeout_while(began, Duration::from_millis(500), |began| !*began)
                .expect("wait");
        }
        self.shared.steps.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn ended(&self, _: &kiln::RunReport) -> Result<(), kiln::durable::RecordError> {
        Ok(())
    }
}

#[test]
fn a_step_commits_during_the_next_model_request_and_before_the_next_tool() {
    let mock = Mock::start(&json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "probe", "args": {}}]},
        {"tool_calls": [{"name": "probe", "args": {}}]},
        {"text": "done"}
    ]}));
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("a.rhai"),
        format!(
            r#"agent("a").provider("openai").model("m").base_url("{}/v1").tools(["probe"]);"#,
            mock.url
        ),
    )
    .expect("write");
    let shared = Arc::new(Shared::default());
    let probe = {
        let shared = shared.clone();
        NativeTool::new("probe", move |_args: Value, _ctx: &kiln::CallContext| {
            let shared = shared.clone();
            async move {
                let steps = shared.steps.load(Ordering::SeqCst);
                let started = shared.started.load(Ordering::SeqCst);
                let calls = {
                    let mut seen = shared.seen.lock().expect("lock");
                    seen.push((steps, started));
                    seen.len()
                };
                if calls == 2 {
                    let (lock, cv) = &shared.second_tool;
                    *lock.lock().expect("lock") = true;
                    cv.notify_all();
                } else {
                    // The commit overlaps a request handed to an idle pooled connection; this
                    // pause lets the first reply's connection get back to the pool first even
                    // on a loaded machine (else the request would wait for the commit: only the
                    // overlap is lost, never the order, which the rest of the test checks).
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Ok(json!("ok"))
            }
        })
    };
    let host = Host::builder()
        .scripts(dir.path())
        .stdlib(false)
        .tool(probe)
        .build()
        .expect("host");
    let opts = RunOptions {
        recorder: Some(Arc::new(Latched {
            shared: shared.clone(),
            mock_url: mock.url.clone(),
        })),
        ..Default::default()
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let report = rt.block_on(host.run("a", "go", opts)).expect("run");
    assert_eq!(report.answer, "done");
    assert!(
        shared.overlapped.load(Ordering::SeqCst),
        "the first step's commit ran while the second model request was out"
    );
    assert_eq!(
        *shared.seen.lock().expect("lock"),
        vec![(0, true), (1, true)],
        "each tool began only after the run's start and every earlier step were committed"
    );
    assert_eq!(
        shared.steps.load(Ordering::SeqCst),
        3,
        "two tool steps and the answer"
    );
}
