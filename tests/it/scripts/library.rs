//! kiln as a library: the builder, native tools, app host functions, run events, watching.

use futures_util::StreamExt;
use kiln::Grants;
use kiln::{CallOptions, Event, Host, HostFn, NativeTool, ToolFailure};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

fn grants(caps: &[&str]) -> CallOptions {
    CallOptions {
        grants: Some(Grants::parse(caps).expect("caps")),
        ..CallOptions::default()
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn error_of(outcome: &kiln::ToolOutcome) -> (String, String) {
    match &outcome.result {
        Err(f) => (f.kind.as_str().to_string(), f.message.clone()),
        Ok(v) => panic!("expected a failure, got {v}"),
    }
}

const SCRIPT_TOOLS: &str = r#"
tool("double")
    .description("Doubles n")
    .param("n", "integer")
    .requires("math")
    .handler(|args| args.n * 2);

tool("double_via_native")
    .param("n", "integer")
    .requires("math")
    .handler(|args| call_tool("native_triple", #{ n: args.n }) + 1);

tool("sneaky")
    .param("n", "integer")
    .handler(|args| call_tool("native_triple", #{ n: args.n }));
"#;

fn native_tools() -> Vec<NativeTool> {
    vec![
        NativeTool::new(
            "native_triple",
            |args: Value, _ctx: &kiln::CallContext| async move {
                let n = args["n"]
                    .as_i64()
                    .ok_or_else(|| ToolFailure::tool_error("n must be an integer"))?;
                Ok(json!(n * 3))
            },
        )
        .description("Triples n")
        .param("n", "integer", json!({"min": 0}))
        .requires("math"),
        NativeTool::new(
            "native_calls_script",
            |args: Value, ctx: &kiln::CallContext| {
                let ctx = ctx.clone();
                async move {
                    let doubled = ctx.call_tool("double", args).await?;
                    Ok(json!({"doubled": doubled}))
                }
            },
        )
        .param("n", "integer", json!({}))
        .requires("math"),
        NativeTool::new(
            "native_undeclared",
            |args: Value, ctx: &kiln::CallContext| {
                let ctx = ctx.clone();
                async move { ctx.call_tool("double", args).await }
            },
        )
        .param("n", "integer", json!({})),
    ]
}

fn host(dir: &std::path::Path, scripts: &str) -> Arc<Host> {
    std::fs::write(dir.join("t.rhai"), scripts).expect("write");
    let mut b = Host::builder().scripts(dir).workspace(dir).stdlib(false);
    for t in native_tools() {
        b = b.tool(t);
    }
    b.build().expect("host")
}

#[test]
fn native_and_script_tools_call_each_other_under_the_capability_rules() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = host(dir.path(), SCRIPT_TOOLS);
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    let rt = rt();
    let call = |name: &str, args: Value, caps: &[&str]| {
        rt.block_on(host.call(name, args, grants(caps)))
            .expect("tool exists")
    };
    // Script -> native and native -> script, each declaring what the callee needs.
    assert_eq!(
        call("double_via_native", json!({"n": 4}), &["math"])
            .result
            .expect("ok"),
        json!(13)
    );
    assert_eq!(
        call("native_calls_script", json!({"n": 5}), &["math"])
            .result
            .expect("ok"),
        json!({"doubled": 10})
    );
    // The native tool's own schema is enforced before its handler runs.
    let bad = call("native_triple", json!({"n": -1}), &["math"]);
    assert_eq!(error_of(&bad).0, "invalid_arguments");
    // Callers that do not declare the callee's capability are refused, both ways.
    let (kind, msg) = error_of(&call("sneaky", json!({"n": 1}), &["math"]));
    assert_eq!(kind, "denied");
    assert!(
        msg.contains("requires [math] which tool \"sneaky\" does not declare"),
        "{msg}"
    );
    let (kind, msg) = error_of(&call("native_undeclared", json!({"n": 1}), &[]));
    assert_eq!(kind, "denied");
    assert!(
        msg.contains("requires [math] which tool \"native_undeclared\" does not declare"),
        "{msg}"
    );
    // And a caller without the grant is stopped at the guard.
    let (kind, _) = error_of(&call("native_calls_script", json!({"n": 1}), &[]));
    assert_eq!(kind, "capability");
    // The host lists native tools beside script tools and exports them alike.
    let names: Vec<String> = host.tools().iter().map(|t| t.name.clone()).collect();
    assert!(names.contains(&"native_triple".to_string()) && names.contains(&"double".to_string()));
    let (defs, _) = host.schemas(kiln::model::Format::Anthropic);
    let triple = defs
        .iter()
        .find(|d| d["name"] == "native_triple")
        .expect("exported");
    assert_eq!(
        triple["input_schema"]["properties"]["n"]["minimum"],
        json!(0)
    );
}

#[test]
fn a_script_tool_named_like_a_native_one_is_a_located_load_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = host(
        dir.path(),
        "\n\ntool(\"native_triple\").handler(|args| 1);\n",
    );
    let errors: Vec<String> = host.load_errors().iter().map(|e| e.to_string()).collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains(
            "t.rhai:3:1: duplicate tool \"native_triple\": already defined at tests/it/scripts/library.rs:"
        ),
        "{errors:?}"
    );
    // The native tool stays.
    let outcome = rt()
        .block_on(host.call("native_triple", json!({"n": 2}), grants(&["math"])))
        .expect("tool");
    assert_eq!(outcome.result.expect("ok"), json!(6));
}

#[test]
fn unknown_tools_are_a_typed_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = host(dir.path(), SCRIPT_TOOLS);
    let err = rt()
        .block_on(host.call("nope", json!({}), CallOptions::default()))
        .expect_err("unknown");
    assert_eq!(err.kind(), kiln::ErrorKind::UnknownTool);
}

const CRM_TOOLS: &str = r#"
tool("lookup")
    .param("id", "string")
    .requires("crm")
    .handler(|args| crm_lookup(args.id));

tool("undeclared_lookup")
    .param("id", "string")
    .handler(|args| crm_lookup(args.id));
"#;

fn crm_host(dir: &std::path::Path) -> Arc<Host> {
    std::fs::write(dir.join("crm.rhai"), CRM_TOOLS).expect("write");
    let crm = HostFn::new("crm_lookup", "crm", &["id"], |args, ctx| {
        Ok(json!({"id": args[0], "name": "Ada", "for": ctx.who.actor_id}))
    })
    // A grant crm:acme covers customers whose id starts with "acme-".
    .scope_check(|scope, args| {
        args[0]
            .as_str()
            .is_some_and(|id| id.starts_with(&format!("{scope}-")))
    });
    Host::builder()
        .scripts(dir)
        .stdlib(false)
        .host_fn(crm)
        .build()
        .expect("host")
}

#[test]
fn an_app_host_function_is_gated_like_the_built_ins() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = crm_host(dir.path());
    let rt = rt();
    let call = |tool: &str, caps: &[&str]| {
        rt.block_on(host.call(tool, json!({"id": "acme-7"}), grants(caps)))
            .expect("tool")
    };
    let ok = call("lookup", &["crm:acme"]);
    assert_eq!(ok.result.expect("allowed")["name"], json!("Ada"));
    // Undeclared by the tool: refused even though the caller holds the grant.
    let (kind, msg) = error_of(&call("undeclared_lookup", &["crm"]));
    assert_eq!(kind, "denied");
    assert!(msg.contains("does not declare capability \"crm\""), "{msg}");
    // Declared but not granted: the guard stops the call before the handler.
    assert_eq!(error_of(&call("lookup", &[])).0, "capability");
    // Granted for another scope: the tool runs, the function refuses the target.
    let (kind, msg) = error_of(&call("lookup", &["crm:globex"]));
    assert_eq!(kind, "denied");
    assert!(
        msg.contains("crm_lookup(\"acme-7\") refused") && msg.contains("covering \"acme-7\""),
        "{msg}"
    );
    // The static scan warns about the undeclared use, and the definitions list the function.
    let warnings: Vec<String> = host
        .registry()
        .warnings
        .iter()
        .map(|w| w.to_string())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("calls crm_lookup(), which needs capability \"crm\"")),
        "{warnings:?}"
    );
    let defs = host.definitions();
    assert!(
        defs.contains("crm_lookup: needs capability \"crm\""),
        "{defs}"
    );
    assert!(defs.contains("fn crm_lookup("), "{defs}");
}

const AGENT: &str = r#"
tool("echo").param("text", "string").handler(|args| args.text);
agent("echoer")
    .provider("script")
    .tools(["echo"])
    .planner(|messages, tools| {
        let last = messages[messages.len() - 1];
        if last.role == "user" {
            return #{ text: "calling", tool_calls: [#{ id: "c1", name: "echo", args: #{ text: "hi" } }] };
        }
        #{ text: `done: ${last.content}` }
    });
"#;

#[test]
fn run_stream_delivers_events_in_order_and_ends_with_the_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.rhai"), AGENT).expect("write");
    let host = Host::builder()
        .scripts(dir.path())
        .stdlib(false)
        .build()
        .expect("host");
    let events: Vec<Event> = rt().block_on(async {
        host.run_stream("echoer", "go", Default::default())
            .collect()
            .await
    });
    let names: Vec<String> = events
        .iter()
        .map(|e| match e {
            Event::Text(t) => format!("text:{t}"),
            Event::ModelRequest { round } => format!("request:{round}"),
            Event::ModelReply { round } => format!("reply:{round}"),
            Event::ToolStarted { name, args, .. } => format!("start:{name}:{args}"),
            Event::ToolFinished(r) => format!(
                "done:{}:{}",
                r.name,
                r.outcome.result().unwrap_or(&serde_json::Value::Null)
            ),
            Event::Finished(r) => format!("finished:{}", r.as_ref().as_ref().expect("ok").answer),
            _ => "other".into(),
        })
        .collect();
    assert_eq!(
        names,
        [
            "request:1",
            "text:calling",
            "reply:1",
            "start:echo:{\"text\":\"hi\"}",
            "done:echo:\"hi\"",
            "request:2",
            "text:done: hi",
            "reply:2",
            "finished:done: hi",
        ]
    );
}

#[test]
fn dropping_the_watch_handle_stops_reloading() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("w.rhai");
    std::fs::write(&file, "tool(\"one\").handler(|args| 1);").expect("write");
    let host = Host::builder()
        .scripts(dir.path())
        .stdlib(false)
        .build()
        .expect("host");
    let rt = rt();
    rt.block_on(async {
        let mut watch = host.watch().expect("watch");
        std::fs::write(&file, "tool(\"two\").handler(|args| 2);").expect("write");
        let report = tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .expect("a reload within 10 s")
            .expect("a report");
        assert!(report.ok(), "{report}");
        assert!(host.registry().find("two").is_some());
        drop(watch);
        // A second host on the same folder is the clock: once its watcher has seen the next
        // change, a live first watcher would have seen it too.
        let witness = Host::builder()
            .scripts(dir.path())
            .stdlib(false)
            .build()
            .expect("host");
        let mut seen = witness.watch().expect("watch");
        std::fs::write(&file, "tool(\"three\").handler(|args| 3);").expect("write");
        tokio::time::timeout(Duration::from_secs(10), seen.next())
            .await
            .expect("the witness reloads")
            .expect("a report");
        assert!(witness.registry().find("three").is_some());
    });
    assert!(
        host.registry().find("three").is_none(),
        "the dropped watcher still reloaded"
    );
    assert!(host.registry().find("two").is_some());
}

#[test]
fn the_starter_scripts_folder_checks_clean_and_its_agent_runs_offline() {
    use crate::common::{kiln, repo, stderr, stdout};
    let db = tempfile::tempdir().expect("tempdir");
    let db = db.path().join("kiln.db").display().to_string();
    // `kiln` in a fresh clone loads ./scripts by default.
    let out = kiln(&["check"], &repo());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("1 agents"), "{}", stdout(&out));
    let out = kiln(&["--db", &db, "ask", "greeter", "Greet Ada"], &repo());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Hello, Ada!");
    let out = kiln(&["check", "--scripts", "examples/support"], &repo());
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn an_app_host_function_without_a_scope_check_matches_the_scope_to_its_first_argument() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("t.rhai"), CRM_TOOLS).expect("write");
    let host = Host::builder()
        .scripts(dir.path())
        .stdlib(false)
        .host_fn(HostFn::new("crm_lookup", "crm", &["id"], |args, _| {
            Ok(args[0].clone())
        }))
        .build()
        .expect("host");
    let rt = rt();
    let call = |caps: &[&str]| {
        rt.block_on(host.call("lookup", json!({"id": "acme-7"}), grants(caps)))
            .expect("tool")
    };
    assert_eq!(
        call(&["crm:acme-7"]).result.expect("in scope"),
        json!("acme-7")
    );
    assert_eq!(call(&["crm"]).result.expect("unscoped"), json!("acme-7"));
    assert_eq!(error_of(&call(&["crm:acme-8"])).0, "denied");
}

#[test]
fn a_call_stops_when_its_cancel_token_fires_and_a_native_tool_at_its_deadline() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("t.rhai"),
        "tool(\"spin\").requires(\"probe\").handler(|args| { started(); loop { sleep(0.01); } });",
    )
    .expect("write");
    // The script says when it runs, so the test cancels a call that is under way.
    let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
    let started_tx = std::sync::Mutex::new(started_tx);
    let started = HostFn::new("started", "probe", &[], move |_, _| {
        let _ = started_tx.lock().expect("lock").send(());
        Ok(Value::Null)
    });
    let host = Host::builder()
        .scripts(dir.path())
        .stdlib(false)
        .host_fn(started)
        .tool(
            NativeTool::new("stall", |_args: Value, _ctx: &kiln::CallContext| async {
                std::future::pending::<()>().await;
                Ok(json!(null))
            })
            .timeout(Duration::from_millis(100)),
        )
        .build()
        .expect("host");
    let rt = rt();
    let token = kiln::CancellationToken::new();
    let opts = CallOptions {
        cancel: Some(token.clone()),
        ..grants(&["probe"])
    };
    let canceller = std::thread::spawn(move || {
        started_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the handler started");
        token.cancel();
    });
    let outcome = rt.block_on(host.call("spin", json!({}), opts));
    canceller.join().expect("canceller");
    assert_eq!(error_of(&outcome.expect("tool")).0, "cancelled");
    let outcome = rt
        .block_on(host.call("stall", json!({}), CallOptions::default()))
        .expect("tool");
    assert_eq!(error_of(&outcome).0, "deadline");
}

/// Hands the report of each ended run to a channel (the Recorder seam a durable engine uses).
struct Ended(std::sync::Mutex<std::sync::mpsc::Sender<kiln::RunReport>>);

impl kiln::durable::Recorder for Ended {
    fn started(&self, _: &kiln::RunReport) -> Result<(), kiln::durable::RecordError> {
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
        Ok(())
    }
    fn ended(&self, report: &kiln::RunReport) -> Result<(), kiln::durable::RecordError> {
        let _ = self.0.lock().expect("lock").send(report.clone());
        Ok(())
    }
}

#[test]
fn dropping_a_run_stream_cancels_the_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("a.rhai"),
        r#"
tool("spin").handler(|args| { loop { sleep(0.01); } });
agent("spinner").provider("script").tools(["spin"]).planner(|messages, tools| {
    #{ tool_calls: [#{ name: "spin", args: #{} }] }
});
"#,
    )
    .expect("write");
    let host = Host::builder()
        .scripts(dir.path())
        .stdlib(false)
        .build()
        .expect("host");
    let (tx, rx) = std::sync::mpsc::channel();
    let opts = kiln::RunOptions {
        recorder: Some(Arc::new(Ended(std::sync::Mutex::new(tx)))),
        ..Default::default()
    };
    let rt = rt();
    rt.block_on(async {
        let mut events = host.run_stream("spinner", "go", opts);
        while let Some(ev) = events.next().await {
            if matches!(ev, Event::ToolStarted { .. }) {
                break;
            }
        }
        drop(events);
    });
    let report = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the run ended after its stream was dropped");
    assert_eq!(report.error.as_deref(), Some("cancelled"));
}

/// A tool written as a type (rig's `ToolDyn`): its schema is its own.
struct Multiply;

impl kiln::tool::DynTool for Multiply {
    fn name(&self) -> String {
        "multiply".into()
    }

    fn description(&self) -> String {
        "Multiplies two integers".into()
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
               "required": ["a", "b"], "additionalProperties": false})
    }

    fn requires(&self) -> Vec<String> {
        vec!["math".into()]
    }

    fn call(&self, args: Value, _ctx: &kiln::CallContext) -> kiln::tool::HandlerFuture {
        let product = args["a"].as_i64().unwrap_or(0) * args["b"].as_i64().unwrap_or(0);
        Box::pin(async move { Ok(json!(product)) })
    }
}

#[derive(serde::Deserialize)]
struct Greeting {
    name: String,
    times: u8,
}

#[test]
fn tools_written_as_types_are_validated_and_guarded_like_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let greet = NativeTool::typed(
        "greet",
        |g: Greeting, _ctx: &kiln::CallContext| async move {
            Ok(json!(
                vec![format!("hi {}", g.name); usize::from(g.times)].join(" ")
            ))
        },
    )
    .param("name", "string", json!({}))
    .param("times", "integer", json!({"min": 0}));
    let host = Host::builder()
        .scripts(dir.path())
        .stdlib(false)
        .tool(NativeTool::from_dyn(Arc::new(Multiply)))
        .tool(greet)
        .build()
        .expect("host");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    let rt = rt();
    let call = |name: &str, args: Value, opts: CallOptions| {
        rt.block_on(host.call(name, args, opts))
            .expect("known tool")
    };
    let ok = call("multiply", json!({"a": 6, "b": 7}), grants(&["math"]));
    assert_eq!(ok.result.expect("product"), json!(42));
    let refused = call("multiply", json!({"a": 6, "b": 7}), grants(&[]));
    assert_eq!(error_of(&refused).0, "capability");
    let invalid = call("multiply", json!({"a": "six", "b": 7}), grants(&["math"]));
    assert_eq!(error_of(&invalid).0, "invalid_arguments");
    let greeted = call("greet", json!({"name": "Ada", "times": 2}), grants(&[]));
    assert_eq!(greeted.result.expect("greeting"), json!("hi Ada hi Ada"));
    // The schema admits 300; the handler's type (u8) cannot hold it: invalid arguments.
    let too_big = call("greet", json!({"name": "Ada", "times": 300}), grants(&[]));
    assert_eq!(error_of(&too_big).0, "invalid_arguments");
}

/// An application's approver that asks "a person" on another task and awaits the answer.
struct Inbox(tokio::sync::mpsc::UnboundedSender<(String, tokio::sync::oneshot::Sender<bool>)>);

impl kiln::AsyncApprover for Inbox {
    fn approve<'a>(&'a self, cap: &'a str, question: &'a str) -> kiln::ApprovalFuture<'a> {
        Box::pin(async move {
            let (tx, rx) = tokio::sync::oneshot::channel();
            self.0
                .send((format!("{cap}: {question}"), tx))
                .map_err(|_| "the inbox is closed".to_string())?;
            rx.await.map_err(|_| "nobody answered".to_string())
        })
    }
}

#[test]
fn an_async_approver_decides_ask_grants_while_the_runtime_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("notes.rhai"),
        r#"tool("remember").param("text", "string").requires("store")
    .handler(|args| { store_set("notes", args.text, true); `kept ${args.text}` });"#,
    )
    .expect("script");
    let (inbox, mut asked) = tokio::sync::mpsc::unbounded_channel();
    let host = Host::builder()
        .scripts(dir.path())
        .workspace(dir.path())
        .stdlib(false)
        .async_approver(Inbox(inbox))
        .build()
        .expect("host");
    let mut caps = Grants::parse(&["store"]).expect("caps");
    caps.mark_ask(&["store"]);
    let opts = CallOptions {
        grants: Some(caps),
        ..CallOptions::default()
    };
    rt().block_on(async {
        // The person: approves the first question, refuses the rest, after a moment each.
        let person = tokio::spawn(async move {
            let mut questions = Vec::new();
            while let Some((question, answer)) = asked.recv().await {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let _ = answer.send(questions.is_empty());
                questions.push(question);
            }
            questions
        });
        let milk = host
            .call("remember", json!({"text": "milk"}), opts.clone())
            .await
            .expect("call");
        assert_eq!(
            milk.result.as_ref().ok(),
            Some(&json!("kept milk")),
            "{milk:?}"
        );
        let beer = host
            .call("remember", json!({"text": "beer"}), opts)
            .await
            .expect("call");
        let (kind, message) = error_of(&beer);
        assert_eq!(kind, "denied", "{message}");
        assert!(message.contains("not approved"), "{message}");
        drop(host);
        let questions = person.await.expect("person");
        assert_eq!(questions.len(), 2, "{questions:?}");
        assert!(
            questions[0]
                .starts_with("store: tool \"remember\" may use store only when a person approves"),
            "{questions:?}"
        );
    });
}
