//! A realistic report for the renderers' and the schema's tests: two models (one priced, one
//! not), two cases, two repeats, a failed run with an error and nested tool calls, judge
//! usage, a baseline comparison and a budget stop.

use crate::report::{
    CallRecord, CaseDelta, CaseRun, Change, Comparison, NamedVerdict, Report, RunRecord,
    SCHEMA_VERSION, Usage,
};
use kiln_registry::eval_spec::{Case, EvalTarget, Verdict};
use serde_json::json;

fn case(name: &str, input: serde_json::Value, expected: Option<serde_json::Value>) -> Case {
    Case {
        name: name.into(),
        input,
        expected,
        metadata: json!({"tags": ["smoke"]}),
        loc: Default::default(),
    }
}

fn verdict(evaluator: &str, passed: bool, reason: &str) -> NamedVerdict {
    NamedVerdict {
        evaluator: evaluator.into(),
        verdict: Verdict::of(passed, reason),
    }
}

fn calls(failed: bool) -> Vec<CallRecord> {
    vec![CallRecord {
        name: "run_program".into(),
        args: json!({"code": "lookup(\"order\") < 3"}),
        is_error: failed,
        result: if failed {
            json!("boom: <lookup> failed")
        } else {
            json!({"ok": true})
        },
        nested: vec![CallRecord {
            name: "lookup".into(),
            args: json!({"id": "A&B"}),
            is_error: failed,
            result: json!("order A&B"),
            nested: Vec::new(),
        }],
    }]
}

fn run(model: &str, case: &str, repeat: u32, passed: bool, ms: f64, priced: bool) -> CaseRun {
    let answer = if passed {
        "Our refund policy: 30 days.".to_string()
    } else {
        "<script>alert(1)</script>".to_string()
    };
    let mut judge = verdict("judge", passed, "grounded in the policy");
    judge.verdict.label = Some(if passed { "good" } else { "bad" }.into());
    CaseRun {
        case: case.into(),
        model: model.into(),
        repeat,
        passed,
        score: if passed { 1.0 } else { 0.0 },
        run: RunRecord {
            run_id: Some(format!("run_{model}_{case}_{repeat}")),
            answer,
            output: Some(json!({"answer": "x"})),
            tool_calls: calls(!passed),
            rounds: 2,
            usage: Usage {
                input_tokens: 100,
                output_tokens: 20,
                cost_usd: priced.then_some(0.01),
            },
            duration_ms: ms,
            error: None,
            trace_id: None,
            agent_version: None,
        },
        verdicts: vec![
            verdict(
                "mentions_policy",
                passed,
                if passed {
                    "found \"policy\""
                } else {
                    "answer lacks \"policy\""
                },
            ),
            judge,
        ],
        judge_usage: if priced {
            Usage {
                input_tokens: 5,
                output_tokens: 2,
                cost_usd: Some(0.00075),
            }
        } else {
            Usage::default()
        },
        cached: false,
    }
}

/// The sample report (its summary computed by `stats::summarize`).
pub(crate) fn sample_report() -> Report {
    let models = vec!["openai:gpt-x".to_string(), "mock:free".to_string()];
    let (g, m) = ("openai:gpt-x", "mock:free");
    let mut results = vec![
        run(g, "refund", 0, true, 80.0, true),
        run(g, "refund", 1, false, 120.0, true),
        run(g, "greet", 0, true, 400.0, true),
        run(g, "greet", 1, true, 130.0, true),
        run(m, "refund", 0, true, 100.0, false),
        run(m, "refund", 1, true, 100.0, false),
        run(m, "greet", 0, false, 100.0, false),
        run(m, "greet", 1, false, 100.0, false),
    ];
    results[1].run.error = Some("timeout: no answer in 30s".into());
    results[1].run.trace_id = Some("0af7651916cd43dd8448eb211c80319c".into());
    results[7].cached = true;
    Report {
        schema_version: SCHEMA_VERSION,
        id: "ev_1".into(),
        eval: "support".into(),
        target: Some(EvalTarget::Agent("helpdesk".into())),
        started_at: "2026-12-04T10:00:00Z".into(),
        finished_at: "2026-12-04T10:01:00Z".into(),
        summary: crate::stats::summarize(&models, 2, &results),
        per_case: crate::stats::per_case(&models, &results),
        models,
        repeat: 2,
        evaluators: vec!["mentions_policy".into(), "judge".into()],
        cases: vec![
            case("refund", json!("I want a refund"), Some(json!("policy"))),
            case("greet", json!({"text": "hi \u{1}"}), None),
        ],
        results,
        stopped: Some("budget of $1.00 reached".into()),
        rescored_from: None,
        comparison: Some(Comparison {
            baseline: "main".into(),
            baseline_id: "ev_0".into(),
            tolerance: 0.1,
            cases: vec![
                delta("refund", g, 1.0, 0.5, Some(0.005), Change::Regression),
                delta("refund", m, 0.0, 1.0, None, Change::Fix),
            ],
            regressions: 1,
            fixes: 1,
        }),
    }
}

fn delta(case: &str, model: &str, b: f64, a: f64, cost: Option<f64>, change: Change) -> CaseDelta {
    CaseDelta {
        case: case.into(),
        model: model.into(),
        before_pass_rate: b,
        after_pass_rate: a,
        score_delta: a - b,
        cost_delta: cost,
        change,
    }
}
