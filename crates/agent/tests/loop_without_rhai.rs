//! The tool-calling loop against a fake host and a function model (pydantic-ai's
//! `FunctionModel`): no Rhai, no HTTP. The host is a registry of native tools; the model is a
//! closure over the conversation it is sent. One test logs concurrent runs to a real database.

use kiln_agent::{RunErrorKind, RunHost, RunOptions};
use kiln_core::capability::Grants;
use kiln_core::context::CallContext;
use kiln_core::error::{HostError, SourceLoc};
use kiln_core::model::{
    CallArgs, LocalModel, LocalReply, ModelResponse, StopReason, TextSink, ToolCall, Usage,
};
use kiln_core::services::Services;
use kiln_registry::Registry;
use kiln_registry::agent_spec::{AgentMode, AgentScript, AgentSpec, ProviderKind};
use kiln_registry::native::{NativeTool, native_source};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// A model that is a function of the conversation (the planner input, as JSON).
struct FunctionModel(Box<dyn Fn(&Value) -> ModelResponse + Send + Sync>);

impl LocalModel for FunctionModel {
    fn name(&self) -> &'static str {
        "function"
    }

    fn send<'a>(&'a self, input: &'a [u8], _sink: &'a TextSink) -> LocalReply<'a> {
        let input: Value = serde_json::from_slice(input).unwrap_or(Value::Null);
        let reply = (self.0)(&input);
        Box::pin(async move { Ok(reply) })
    }
}

/// The agent's "script": only the model.
struct Script(Arc<FunctionModel>);

impl AgentScript for Script {
    fn planner_model(&self) -> Option<Arc<dyn LocalModel>> {
        Some(self.0.clone())
    }

    fn validate(&self, _tool: &str, _args: Value) -> Option<Result<Value, String>> {
        None
    }
}

/// A host of native tools and one agent.
struct FakeHost {
    registry: Arc<Registry>,
    agent: Arc<AgentSpec>,
    services: Arc<Services>,
}

impl RunHost for FakeHost {
    fn registry(&self) -> Arc<Registry> {
        self.registry.clone()
    }

    fn agent(&self, name: &str) -> Result<Arc<AgentSpec>, HostError> {
        match name == self.agent.name {
            true => Ok(self.agent.clone()),
            false => Err(HostError::UnknownAgent {
                name: name.into(),
                known: self.agent.name.clone(),
            }),
        }
    }

    fn context(&self, grants: Grants) -> CallContext {
        let mut ctx = CallContext::new(grants, self.services.clone());
        ctx.run.registry = Some(self.registry.clone());
        ctx
    }
}

fn reply(text: &str, calls: Vec<ToolCall>) -> ModelResponse {
    let stop = match calls.is_empty() {
        true => StopReason::EndTurn,
        false => StopReason::ToolUse,
    };
    ModelResponse {
        replay: None,
        answered_by: None,
        text: text.into(),
        tool_calls: calls,
        stop,
        usage: Usage::default(),
    }
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        args: CallArgs::parsed(args),
    }
}

fn host(model: impl Fn(&Value) -> ModelResponse + Send + Sync + 'static) -> FakeHost {
    let add = NativeTool::new("add", |args: Value, _ctx: &CallContext| async move {
        let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
        Ok(json!(sum))
    });
    host_with(model, add)
}

/// A host whose agent `adder` has `add`, a tool of two numbers `a` and `b` run by `add`.
fn host_with(
    model: impl Fn(&Value) -> ModelResponse + Send + Sync + 'static,
    add: NativeTool,
) -> FakeHost {
    let add = add
        .description("Adds two numbers")
        .param("a", "number", json!({}))
        .param("b", "number", json!({}));
    let file = native_source(vec![add]);
    let agent = AgentSpec {
        name: "adder".into(),
        description: String::new(),
        provider: ProviderKind::Script,
        model: None,
        system: None,
        tools: vec!["add".into()],
        grants: Grants::default(),
        max_iterations: 3,
        temperature: None,
        max_tokens: None,
        base_url: None,
        api_key_env: None,
        max_reply_bytes: None,
        max_line_bytes: None,
        max_parallel: 4,
        mode: AgentMode::Tools,
        max_steps: 10,
        loc: SourceLoc::new("test", 0, 0),
        code_mode: None,
        contract: Default::default(),
        handoffs: Vec::new(),
        fallback: Vec::new(),
        text_tool_calls: Default::default(),
        skills: Vec::new(),
        compaction: None,
        defer_loading: Vec::new(),
        defer_with_kiln: false,
        script: Some(Arc::new(Script(Arc::new(FunctionModel(Box::new(model)))))),
    };
    FakeHost {
        registry: Arc::new(Registry::build([&file])),
        agent: Arc::new(agent),
        services: Arc::new(Services::new(std::env::temp_dir())),
    }
}

/// The last message the model was sent.
fn last(input: &Value) -> &Value {
    input["messages"]
        .as_array()
        .and_then(|m| m.last())
        .unwrap_or(&Value::Null)
}

fn run(host: &FakeHost, prompt: &str) -> Result<kiln_agent::RunReport, kiln_agent::RunError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(kiln_agent::run(
            host,
            "adder",
            prompt,
            RunOptions::default(),
        ))
}

#[test]
fn the_loop_runs_a_tool_and_hands_its_result_back() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let host = host(move |input| {
        log.lock().expect("lock").push(input["tools"].clone());
        let m = last(input);
        match m["role"].as_str() {
            Some("user") => reply("", vec![call("c1", "add", json!({"a": 2, "b": 40}))]),
            _ => reply(&format!("the sum is {}", m["content"]), vec![]),
        }
    });
    let report = run(&host, "2 + 40?").expect("run");
    assert_eq!(report.answer, "the sum is 42.0");
    assert_eq!(report.rounds, 2);
    assert_eq!(report.tool_calls.len(), 1);
    assert_eq!(report.tool_calls[0].name, "add");
    let offered = seen.lock().expect("lock");
    assert_eq!(offered[0][0]["name"], "add", "the agent's tool is offered");
}

#[test]
fn invalid_arguments_go_back_to_the_model_as_an_error_result() {
    let host = host(|input| {
        let m = last(input);
        match (m["role"].as_str(), m["is_error"].as_bool()) {
            (Some("user"), _) => reply("", vec![call("c1", "add", json!({"a": "two"}))]),
            (Some("tool"), Some(true)) => reply("it failed", vec![]),
            _ => reply("unexpected", vec![]),
        }
    });
    let report = run(&host, "add").expect("run");
    assert_eq!(report.answer, "it failed");
    assert!(report.tool_calls[0].is_error);
}

#[test]
fn a_model_that_never_stops_calling_ends_in_a_tool_loop_error() {
    let host = host(|_| reply("", vec![call("c", "add", json!({"a": 1, "b": 1}))]));
    let err = run(&host, "forever").expect_err("a loop");
    assert!(
        matches!(err.kind, RunErrorKind::ToolLoop(3)),
        "{:?}",
        err.kind
    );
    assert_eq!(err.report.tool_calls.len(), 3);
}

#[test]
fn an_unknown_agent_is_a_clear_error() {
    let host = host(|_| reply("never", vec![]));
    let err = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(kiln_agent::run(
            &host,
            "nobody",
            "hi",
            RunOptions::default(),
        ))
        .expect_err("unknown");
    assert!(err.to_string().contains("nobody"), "{err}");
}

#[test]
fn concurrent_runs_sharing_group_commits_never_run_a_tool_on_an_uncommitted_step() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Arc::new(kiln_db::Db::open(&dir.path().join("k.db")).expect("db"));
    no_tool_runs_on_an_uncommitted_step(db);
}

#[test]
#[ignore = "needs PostgreSQL: KILN_POSTGRES (.ci/postgres start)"]
fn concurrent_runs_sharing_group_commits_on_postgres_never_run_a_tool_on_an_uncommitted_step() {
    let scratch = kiln_db::scratch::Scratch::new().expect("a PostgreSQL database");
    let db = Arc::new(kiln_db::Db::connect(scratch.url()).expect("connect"));
    no_tool_runs_on_an_uncommitted_step(db);
}

/// A count `sql` selects for `run_id` (-1 when it cannot be read).
fn count_of(db: &kiln_db::Db, sql: &str, run_id: &str) -> i64 {
    db.query_row(sql, &kiln_db::args![run_id])
        .ok()
        .flatten()
        .and_then(|r| r.int(0))
        .unwrap_or(-1)
}

fn no_tool_runs_on_an_uncommitted_step(db: Arc<kiln_db::Db>) {
    // Round k's tool (a = k) must see exactly the steps before it committed: its run's start
    // and, from round 2 on, the prompt and rounds 1..k-1 (each an assistant message and its
    // tool result; the prompt goes with the first step).
    let (seen_by_tools, tools_db) = (Arc::new(Mutex::new(Vec::new())), db.clone());
    let seen = seen_by_tools.clone();
    let add = NativeTool::new("add", move |args: Value, ctx: &CallContext| {
        let (db, seen, run_id) = (tools_db.clone(), seen.clone(), ctx.who.run_id.clone());
        async move {
            let round = args["a"].as_i64().unwrap_or(0);
            let started = count_of(&db, "SELECT COUNT(*) FROM runs WHERE id = ?1", &run_id);
            let messages = count_of(
                &db,
                "SELECT COUNT(*) FROM steps WHERE run_id = ?1 AND kind = 'message'",
                &run_id,
            );
            seen.lock().expect("lock").push((round, started, messages));
            Ok(json!(round))
        }
    });
    let host = host_with(
        |input| {
            let rounds_done = input["messages"]
                .as_array()
                .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
            match rounds_done {
                n @ 0..3 => reply("", vec![call("c", "add", json!({"a": n + 1, "b": 0}))]),
                _ => reply("done", vec![]),
            }
        },
        add,
    );
    let logger: Arc<dyn kiln_agent::Recorder> =
        Arc::new(kiln_agent::record::runlog::RunLogger::new(db.clone(), None));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let host = Arc::new(host);
    let reports: Vec<_> = runtime.block_on(async {
        let runs: Vec<_> = (0..64)
            .map(|i| {
                let (host, logger) = (host.clone(), logger.clone());
                tokio::spawn(async move {
                    let opts = RunOptions {
                        recorder: Some(logger),
                        ..RunOptions::default()
                    };
                    kiln_agent::run(host.as_ref(), "adder", &format!("go {i}"), opts).await
                })
            })
            .collect();
        let mut reports = Vec::new();
        for r in runs {
            reports.push(r.await.expect("task").expect("run"));
        }
        reports
    });
    let seen = seen_by_tools.lock().expect("lock");
    assert_eq!(seen.len(), 64 * 3);
    for &(round, started, messages) in seen.iter() {
        assert_eq!(
            started, 1,
            "round {round}'s tool ran before its run's start was logged"
        );
        let committed = if round == 1 { 0 } else { 2 * round - 1 };
        assert_eq!(
            messages, committed,
            "round {round}'s tool saw {messages} messages"
        );
    }
    // Every run is logged whole: its 8 messages, 3 calls, 4 model replies and its end.
    for report in &reports {
        let r = db
            .query_row(
                "SELECT status, rounds,
                   (SELECT COUNT(*) FROM steps WHERE run_id = ?1 AND kind = 'message'),
                   (SELECT COUNT(*) FROM steps WHERE run_id = ?1 AND kind = 'tool')
                 FROM runs WHERE id = ?1",
                &kiln_db::args![&report.run_id],
            )
            .expect("run row")
            .expect("logged");
        let row = (r.str(0), r.int(1), r.int(2), r.int(3));
        assert_eq!(row, ("ok".to_string(), Some(4), Some(8), Some(3)));
    }
}
