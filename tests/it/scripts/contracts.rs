//! Agent contracts through the real binary against `kiln mock`: a typed final answer with
//! bounded repair (the repair does not grow the request), and budgets that end a run at the
//! step that would pass them, a code-mode program's own calls counted.

use crate::common::*;
use serde_json::{Value, json};

const LOOKUP: &str = r#"tool("lookup").description("Price of a SKU").param("sku", "string")
    .handler(|a| #{ sku: a.sku, price: 1.5 });
"#;

fn agent(mock: &Mock, settings: &str) -> Scripts {
    Scripts::new(&[(
        "a.rhai",
        &format!(
            "{LOOKUP}agent(\"a\").provider(\"openai\").model(\"m\").base_url(\"{}/v1\").tools([\"lookup\"]){settings};",
            mock.url
        ),
    )])
}

/// `kiln ask a go --json` (plus `more`): the exit code and the report (or the error's).
fn run(s: &Scripts, more: &[&str]) -> (Option<i32>, Value) {
    let mut args = vec!["a", "go", "--json", "--no-stdlib", "--scripts", "."];
    args.extend_from_slice(more);
    let out = ask(&args, s.path());
    let text = stdout(&out);
    let v = serde_json::from_str(&text)
        .unwrap_or_else(|_| json!({"stderr": stderr(&out), "stdout": text}));
    (out.status.code(), v)
}

const PERSON: &str = r#".output(#{ name: "string", age: "integer" })"#;

#[test]
fn a_bad_answer_is_repaired_twice_without_growing_the_request_then_typed() {
    let mock = Mock::start(&json!({"require_auth": false, "turns": [
        {"text": "Ada, 36"},
        {"text": "{\"name\": 5}"},
        {"text": "```json\n{\"name\": \"Ada\", \"age\": 36}\n```"},
    ]}));
    let s = agent(&mock, PERSON);
    let (code, report) = run(&s, &[]);
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(
        report["output"],
        json!({"name": "Ada", "age": 36}),
        "{report}"
    );
    let bodies: Vec<Value> = mock.requests().iter().map(|r| r["body"].clone()).collect();
    assert_eq!(bodies.len(), 3);
    let sizes: Vec<usize> = bodies
        .iter()
        .map(|b| b["messages"].as_array().map_or(0, Vec::len))
        .collect();
    // system + user, then + bad answer + repair, then the same size: the repair replaced.
    assert_eq!(sizes, [2, 4, 4], "{bodies:?}");
    let repair = bodies[2]["messages"][3]["content"].as_str().unwrap_or("");
    assert!(
        repair.contains("/name") && repair.contains("\"age\" is a required property"),
        "{repair}"
    );
    assert_eq!(bodies[2]["messages"][2]["content"], "{\"name\": 5}");
    for b in &bodies {
        assert_eq!(
            b["tools"][0]["function"]["name"], "lookup",
            "tools stay offered"
        );
        let system = b["messages"][0]["content"].as_str().unwrap_or("");
        assert!(
            system.contains("must be only JSON matching this JSON Schema"),
            "{system}"
        );
    }
}

#[test]
fn an_answer_that_never_matches_ends_in_an_output_error_naming_every_violation() {
    let bad = json!({"text": "{\"name\": 5}"});
    let mock = Mock::start(&json!({"require_auth": false, "turns": [bad, bad, bad]}));
    let s = agent(&mock, &format!("{PERSON}.output_retries(2)"));
    let (code, report) = run(&s, &[]);
    assert_eq!(code, Some(1), "{report}");
    let said = report.to_string();
    assert!(
        said.contains(
            "OutputError: the final answer does not match the output schema after 3 attempts"
        ),
        "{said}"
    );
    assert!(
        said.contains("/name: 5 is not of type")
            && said.contains("\\\"age\\\" is a required property"),
        "{said}"
    );
    assert_eq!(mock.requests().len(), 3);
}

#[test]
fn a_budget_of_tool_calls_stops_the_round_that_would_pass_it() {
    let call = |sku: &str| json!({"tool_calls": [{"name": "lookup", "args": {"sku": sku}}]});
    let mock = Mock::start(
        &json!({"require_auth": false, "turns": [call("A"), call("B"), call("C"), {"text": "done"}]}),
    );
    let s = agent(&mock, ".budget(#{ tool_calls: 5 })");
    // The request's budget narrows the agent's.
    let (code, report) = run(&s, &["--budget", "tool_calls=2"]);
    assert_eq!(code, Some(1), "{report}");
    let said = report.to_string();
    assert!(
        said.contains(
            "BudgetError: budget tool_calls of 2 reached (spent 2; the next round asks for 1 more)"
        ),
        "{said}"
    );
    assert_eq!(mock.requests().len(), 3, "the third round's call never ran");
}

#[test]
fn a_token_budget_is_checked_before_each_model_request() {
    let call = json!({"tool_calls": [{"name": "lookup", "args": {"sku": "A"}}], "usage": {"input_tokens": 60, "output_tokens": 5}});
    let mock =
        Mock::start(&json!({"require_auth": false, "turns": [call, call, call, {"text": "done"}]}));
    let s = agent(&mock, ".budget(#{ input_tokens: 100 }).price(3.0, 15.0)");
    let (code, report) = run(&s, &[]);
    assert_eq!(code, Some(1), "{report}");
    assert!(
        report
            .to_string()
            .contains("BudgetError: budget input_tokens of 100 reached (spent 120)"),
        "{report}"
    );
    assert_eq!(mock.requests().len(), 2);
    // What it spent is in the run log: 120 tokens in at $3/M and 10 out at $15/M.
    let logs = kiln(&["logs", "--json"], s.path());
    let runs: Value = serde_json::from_str(&stdout(&logs)).expect("logs");
    let cost = runs[0]["cost_usd"].as_f64().unwrap_or_default();
    assert!((cost - 0.00051).abs() < 1e-9, "{runs}");
    let text = stdout(&kiln(&["logs"], s.path()));
    assert!(text.contains("120+10 tokens, $0.0005"), "{text}");
    let bad = run(&s, &["--budget", "calls=1"]);
    assert_eq!(bad.0, Some(2), "{:?}", bad.1);
    assert!(
        bad.1
            .to_string()
            .contains("unknown budget limit \\\"calls\\\""),
        "{:?}",
        bad.1
    );
}

#[test]
fn a_programs_calls_count_against_the_runs_budget() {
    let program = "let n = 0; for i in 1..=5 { try { lookup(#{ sku: `S${i}` }); n += 1; } catch (e) { return `${n} calls, then: ${e}`; } } n";
    let mock = Mock::start(
        &json!({"require_auth": false, "turns": [{"code": program}, {"text": "done"}]}),
    );
    let s = agent(&mock, ".code_mode()");
    let (code, report) = run(&s, &["--budget", "tool_calls=3"]);
    assert_eq!(code, Some(0), "{report}");
    let result = report["tool_calls"][0]["outcome"]["result"]
        .as_str()
        .unwrap_or("");
    // run_code is one call; the program had two left.
    assert!(
        result.starts_with("2 calls, then: lookup(): the run's budget of tool calls is spent"),
        "{report}"
    );
}

/// Over HTTP: `/v1/runs` takes a `budget` and answers with the typed `output`.
#[test]
fn v1_runs_takes_a_budget_and_returns_the_typed_output() {
    use crate::doors::serve::Serve;
    let call = json!({"tool_calls": [{"name": "lookup", "args": {"sku": "A"}}]});
    let answer = json!({"text": "{\"name\": \"Ada\", \"age\": 36}"});
    // Requests in order: a run of two rounds, a run stopped before its first call, a run
    // stopped before its second model request.
    let mock = Mock::start(&json!({"require_auth": false, "turns": [call, answer, call, call]}));
    let s = agent(&mock, PERSON);
    let serve = Serve::start(s.path(), &s.path().join("k.db"), &["--no-stdlib"], &[]);
    let url = format!("{}/v1/runs", serve.url);
    let (status, run) = post(&url, &json!({"agent": "a", "input": "who?"}), &[]);
    assert_eq!(status, 200, "{run}");
    assert_eq!(
        run["report"]["output"],
        json!({"name": "Ada", "age": 36}),
        "{run}"
    );
    // No tool calls at all: the first round's call never runs.
    let limited = json!({"agent": "a", "input": "who?", "budget": {"tool_calls": 0}});
    let (_, run) = post(&url, &limited, &[]);
    assert_eq!(run["error"]["kind"], "budget", "{run}");
    assert_eq!(run["report"]["tool_calls"], json!([]), "{run}");
    let limited = json!({"agent": "a", "input": "who?", "budget": {"input_tokens": 1}});
    let (_, run) = post(&url, &limited, &[]);
    assert!(
        run.to_string()
            .contains("BudgetError: budget input_tokens of 1 reached (spent 10)"),
        "{run}"
    );
    let (status, bad) = post(
        &url,
        &json!({"agent": "a", "input": "x", "budget": {"calls": 1}}),
        &[],
    );
    assert_eq!(status, 400, "{bad}");
    assert!(bad.to_string().contains("unknown budget limit"), "{bad}");
}

/// The contracts chapter's examples load as written, and a bad contract is a load error at its
/// place.
#[test]
fn the_readme_contract_example_loads_and_mistakes_are_load_errors() {
    let doc = std::fs::read_to_string(repo().join("docs/contracts.md")).expect("docs/contracts.md");
    let blocks: Vec<&str> = doc
        .split("```rhai\n")
        .skip(1)
        .filter_map(|c| c.split("```").next())
        .collect();
    assert_eq!(blocks.len(), 2, "the agent (with its tool) and the policy");
    let code = blocks.join("\n");
    assert!(
        code.contains(LOOKUP.trim_end()),
        "the agent's tool is {LOOKUP}"
    );
    let s = Scripts::new(&[("doc.rhai", &code)]);
    let out = kiln(&["check", "--no-stdlib", "--scripts", "."], s.path());
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));

    let bad = Scripts::new(&[(
        "bad.rhai",
        r#"agent("a").provider("anthropic").output(#{ n: "nummber" });
agent("b").provider("anthropic").budget(#{ calls: 3 });
agent("c").provider("anthropic").output(#{ "type": "object", properties: 5 });
agent("d").provider("anthropic").output_retries(50);
"#,
    )]);
    let out = kiln(&["check", "--no-stdlib", "--scripts", "."], bad.path());
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    for want in [
        "bad.rhai:1:34: agent \"a\": output: param \"n\": unknown param type \"nummber\"",
        "bad.rhai:2:34: agent \"b\": unknown budget limit \"calls\"",
        "bad.rhai:3:34: agent \"c\": invalid output schema",
        "bad.rhai:4:34: agent \"d\": output_retries must be between 0 and 10, not 50",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
}

/// An agent listing `agent:NAME` calls the other agent as a tool: its own run, logged as one,
/// within both agents' grants.
#[test]
fn an_agent_calls_another_as_a_tool_within_both_grants() {
    let boss_mock = Mock::start(&json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "ask_researcher", "args": {"prompt": "what is X?"}}]},
        {"text": "The researcher says X is 42."},
        {"tool_calls": [{"name": "ask_researcher", "args": {"prompt": "remember X"}}]},
        {"text": "It could not."},
    ]}));
    let researcher_mock = Mock::start(&json!({"require_auth": false, "turns": [
        {"text": "X is 42"},
        {"tool_calls": [{"name": "remember", "args": {"text": "X"}}]},
        {"text": "unreachable"},
    ]}));
    let s = Scripts::new(&[(
        "agents.rhai",
        &format!(
            r#"tool("remember").param("text", "string").requires(["store"]).handler(|a| {{ store_set("n", "k", a.text); "kept" }});
agent("researcher").description("Finds things out").provider("openai").model("m").base_url("{}/v1")
    .tools(["remember"]).capabilities(["store"]);
agent("boss").provider("openai").model("m").base_url("{}/v1").tools(["agent:researcher"]);"#,
            researcher_mock.url, boss_mock.url
        ),
    )]);
    let ask_boss = |prompt: &str| {
        let out = ask(
            &["boss", prompt, "--json", "--no-stdlib", "--scripts", "."],
            s.path(),
        );
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice::<Value>(&out.stdout).expect("json")
    };
    let report = ask_boss("go");
    assert_eq!(
        report["tool_calls"][0]["outcome"]["result"], "X is 42",
        "{report}"
    );
    let offered = &boss_mock.requests()[0]["body"]["tools"][0]["function"];
    assert_eq!(offered["name"], "ask_researcher");
    assert!(
        offered["description"]
            .as_str()
            .unwrap_or("")
            .starts_with("Finds things out")
    );
    // The boss grants nothing, so the researcher's store tool is refused inside its run.
    let report = ask_boss("again");
    let error = report["tool_calls"][0]["outcome"]["error"]["message"]
        .as_str()
        .unwrap_or("");
    assert!(error.contains("agent \"researcher\" failed"), "{report}");
    let logs = kiln(&["logs", "--json"], s.path());
    let runs: Value = serde_json::from_str(&stdout(&logs)).expect("logs");
    let agents: Vec<&str> = runs
        .as_array()
        .map(|r| r.iter().filter_map(|r| r["agent"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        agents.iter().filter(|a| **a == "researcher").count(),
        2,
        "{agents:?}"
    );
    // Each researcher run is logged as a child of the boss run that asked it.
    let runs = runs.as_array().cloned().unwrap_or_default();
    let of = |agent: &str| -> Vec<Value> {
        runs.iter()
            .filter(|r| r["agent"] == agent)
            .cloned()
            .collect()
    };
    let bosses: Vec<Value> = of("boss").iter().map(|r| r["id"].clone()).collect();
    for child in of("researcher") {
        assert!(bosses.contains(&child["parent"]), "{child}");
    }
    assert!(of("boss").iter().all(|r| r["parent"].is_null()));
    let text = stdout(&kiln(&["logs"], s.path()));
    assert!(
        text.contains("researcher (openai/m) (started by "),
        "{text}"
    );

    let bad = Scripts::new(&[(
        "bad.rhai",
        r#"agent("a").provider("anthropic").tools(["agent:a"]);
agent("b").provider("anthropic").tools(["agent:nobody"]);"#,
    )]);
    let out = kiln(&["check", "--no-stdlib", "--scripts", "."], bad.path());
    let text = stderr(&out);
    assert!(
        text.contains("agent \"a\" lists itself as a tool"),
        "{text}"
    );
    assert!(
        text.contains("lists \"agent:nobody\" but there is no agent \"nobody\""),
        "{text}"
    );
}

/// Output tokens and dollars stop a run before the model request that would pass them.
#[test]
fn output_token_and_cost_budgets_stop_the_next_model_request() {
    let round = json!({"tool_calls": [{"name": "lookup", "args": {"sku": "A"}}], "usage": {"input_tokens": 1000, "output_tokens": 50}});
    for (budget, said, requests) in [
        (
            "output_tokens=80",
            "BudgetError: budget output_tokens of 80 reached (spent 100)",
            2,
        ),
        // 1000 in at $3/M and 50 out at $15/M: $0.00375 a round.
        (
            "cost_usd=0.01",
            "BudgetError: budget cost_usd of $0.0100 reached (spent $0.0112)",
            3,
        ),
    ] {
        let mock = Mock::start(
            &json!({"require_auth": false, "turns": [round, round, round, round, {"text": "done"}]}),
        );
        let s = agent(&mock, ".price(3.0, 15.0)");
        let (code, report) = run(&s, &["--budget", budget]);
        assert_eq!(code, Some(1), "{report}");
        assert!(report.to_string().contains(said), "{budget}: {report}");
        assert_eq!(mock.requests().len(), requests, "{budget}");
    }
}

/// `.handoffs([...])`: the model hands the conversation to another agent, which answers with
/// the transcript so far, its own provider and tools; the report names the handoff.
#[test]
fn an_agent_hands_the_conversation_to_another() {
    let front = Mock::start(&json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "handoff_to_billing", "args": {"reason": "an invoice question"}}]},
    ]}));
    let billing = Mock::start(&json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "lookup", "args": {"sku": "INV-1"}}]},
        {"text": "Invoice INV-1 is 1.5."},
    ]}));
    let s = Scripts::new(&[(
        "agents.rhai",
        &format!(
            r#"{LOOKUP}agent("billing").description("Answers invoice questions").provider("openai").model("b")
    .base_url("{}/v1").system("You are billing.").tools(["lookup"]);
agent("front").provider("openai").model("f").base_url("{}/v1").handoffs(["billing"]);"#,
            billing.url, front.url
        ),
    )]);
    let report = ask_report(s.path(), "front", "what about INV-1?");
    assert_eq!(report["agent"], "billing", "{report}");
    assert_eq!(report["model"], "b");
    assert_eq!(report["handoffs"], json!(["billing"]));
    assert_eq!(report["answer"], "Invoice INV-1 is 1.5.");
    let offered = &front.requests()[0]["body"]["tools"][0]["function"];
    assert_eq!(offered["name"], "handoff_to_billing");
    let first = &billing.requests()[0]["body"];
    assert_eq!(first["messages"][0]["content"], "You are billing.");
    let carried = first["messages"].to_string();
    assert!(
        carried.contains("what about INV-1?") && carried.contains("handoff_to_billing"),
        "{carried}"
    );
    assert_eq!(first["tools"][0]["function"]["name"], "lookup");

    let bad = Scripts::new(&[(
        "bad.rhai",
        r#"agent("a").provider("anthropic").handoffs(["a"]);
agent("b").provider("anthropic").handoffs(["nobody"]);"#,
    )]);
    let text = stderr(&kiln(
        &["check", "--no-stdlib", "--scripts", "."],
        bad.path(),
    ));
    assert!(
        text.contains("agent \"a\" lists itself in .handoffs"),
        "{text}"
    );
    assert!(
        text.contains("agent \"b\" hands off to \"nobody\" but there is no such agent"),
        "{text}"
    );
}
