use super::{apply, args_match, flatten_calls};
use crate::report::{CallRecord, RunRecord, Usage};
use kiln_registry::eval_spec::{Case, CaseCheck, Check, JudgeSpec, Verdict};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

fn case(expected: Option<Value>) -> Case {
    Case {
        name: "refund".into(),
        input: json!("Can I get a refund?"),
        expected,
        metadata: Value::Null,
        loc: Default::default(),
    }
}

fn answer(text: &str) -> RunRecord {
    RunRecord {
        answer: text.into(),
        ..RunRecord::default()
    }
}

fn call(name: &str, args: Value) -> CallRecord {
    CallRecord {
        name: name.into(),
        args,
        ..CallRecord::default()
    }
}

/// search, then run_code whose program called lookup and refund, then email.
fn with_calls() -> RunRecord {
    let mut program = call("run_code", json!({"code": "..."}));
    program.nested = vec![
        call("lookup", json!({"order": "A-17", "deep": {"x": 1, "y": 2}})),
        call("refund", json!({"order": "A-17", "amount": 20})),
    ];
    RunRecord {
        tool_calls: vec![call("search", json!({"q": "refund policy"})), program, {
            call("email", json!({"to": "ada@example.com"}))
        }],
        ..RunRecord::default()
    }
}

fn check(c: &Check, case_: &Case, run: &RunRecord) -> (bool, String) {
    let v = apply(c, case_, run);
    (v.passed, v.reason)
}

#[test]
fn answer_equals_compares_trimmed_text_or_json() {
    let c = Check::AnswerEquals(None);
    assert!(check(&c, &case(Some(json!("Paris"))), &answer("  Paris\n")).0);
    let (ok, reason) = check(&c, &case(Some(json!("Paris"))), &answer("Lyon"));
    assert!(!ok);
    assert_eq!(reason, r#"expected "Paris", the answer is "Lyon""#);
    let num = case(Some(json!({"n": 4})));
    assert!(check(&c, &num, &answer(r#"{ "n": 4 }"#)).0);
    assert!(!check(&c, &num, &answer(r#"{"n": 5}"#)).0);
    let (ok, reason) = check(&c, &num, &answer("four"));
    assert!(!ok);
    assert!(reason.contains("not JSON"), "{reason}");
    assert!(!check(&c, &case(None), &answer("x")).0);
    let own = Check::AnswerEquals(Some(json!(42)));
    assert!(check(&own, &case(Some(json!("ignored"))), &answer("42")).0);
}

#[test]
fn long_answers_are_cut_in_reasons() {
    let long = "a".repeat(1000);
    let (_, reason) = check(
        &Check::AnswerEquals(Some(json!("b"))),
        &case(None),
        &answer(&long),
    );
    assert!(reason.len() < 260, "{}", reason.len());
    assert!(reason.ends_with("..."), "{reason}");
}

#[test]
fn answer_contains_ignores_case_and_needs_every_item_of_a_list() {
    let c = Check::AnswerContains(None);
    assert!(check(&c, &case(Some(json!("REFUND"))), &answer("A refund is due")).0);
    let list = case(Some(json!(["refund", "30 days"])));
    assert!(check(&c, &list, &answer("Refund within 30 DAYS")).0);
    let (ok, reason) = check(&c, &list, &answer("Refund soon"));
    assert!(!ok);
    assert_eq!(
        reason,
        r#"expected the answer to contain "30 days"; the answer is "Refund soon""#
    );
    let own = Check::AnswerContains(Some("soon".into()));
    assert!(check(&own, &list, &answer("Refund SOON")).0);
    assert!(!check(&c, &case(None), &answer("x")).0);
}

#[test]
fn answer_matches_a_regex_and_a_bad_regex_fails() {
    let c = Check::AnswerMatches(r"^\d{3}-\d{4}$".into());
    assert!(check(&c, &case(None), &answer("555-1234")).0);
    let (ok, reason) = check(&c, &case(None), &answer("call me"));
    assert!(!ok);
    assert!(reason.contains("does not match"), "{reason}");
    let (ok, reason) = check(&Check::AnswerMatches("(".into()), &case(None), &answer("x"));
    assert!(!ok);
    assert!(reason.starts_with("invalid regex /(/:"), "{reason}");
}

#[test]
fn output_equals_compares_json() {
    let c = Check::OutputEquals(None);
    let mut run = answer("");
    run.output = Some(json!({"a": [1, 2]}));
    assert!(check(&c, &case(Some(json!({"a": [1, 2]}))), &run).0);
    let (ok, reason) = check(&c, &case(Some(json!({"a": [2, 1]}))), &run);
    assert!(!ok);
    assert_eq!(reason, r#"expected output {"a":[2,1]}, found {"a":[1,2]}"#);
    assert!(!check(&c, &case(Some(json!(1))), &answer("1")).0);
}

#[test]
fn output_matches_lists_violations_with_paths() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}}, "required": ["n"]});
    let c = Check::OutputMatches(schema);
    let mut run = answer("");
    run.output = Some(json!({"n": 3}));
    assert!(check(&c, &case(None), &run).0);
    run.output = Some(json!({"n": "x", "s": 1}));
    let (ok, reason) = check(&c, &case(None), &run);
    assert!(!ok);
    assert!(reason.contains("/n:") && reason.contains("/s:"), "{reason}");
    assert!(!check(&c, &case(None), &answer("")).0);
}

#[test]
fn calls_are_flattened_depth_first() {
    let run = with_calls();
    let names: Vec<&str> = flatten_calls(&run)
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["search", "run_code", "lookup", "refund", "email"]);
}

#[test]
fn called_finds_nested_calls_and_matches_argument_subsets() {
    let run = with_calls();
    let c = |tool: &str, args: Option<Value>| Check::Called {
        tool: tool.into(),
        args,
    };
    assert!(check(&c("refund", None), &case(None), &run).0);
    assert!(
        check(
            &c("lookup", Some(json!({"deep": {"y": 2}}))),
            &case(None),
            &run
        )
        .0
    );
    assert!(
        check(
            &c("email", Some(json!({"to": "*@example.com"}))),
            &case(None),
            &run
        )
        .0
    );
    let (ok, reason) = check(&c("refund", Some(json!({"amount": 30}))), &case(None), &run);
    assert!(!ok);
    assert_eq!(
        reason,
        r#"expected "refund" to be called with arguments containing {"amount":30}; it was called with {"order":"A-17","amount":20}"#
    );
    let (ok, reason) = check(&c("delete", None), &case(None), &run);
    assert!(!ok);
    assert!(reason.ends_with(r#"the calls were: "search, run_code, lookup, refund, email""#));
}

#[test]
fn argument_patterns() {
    assert!(args_match(&json!({}), &json!({"a": 1})));
    assert!(!args_match(&json!({"a": 1}), &json!({})));
    assert!(args_match(&json!({"a": "x*z"}), &json!({"a": "xyyz"})));
    assert!(!args_match(&json!({"a": "x*z"}), &json!({"a": "xy"})));
    assert!(!args_match(&json!({"a": "x*"}), &json!({"a": 5})));
    assert!(args_match(&json!({"l": [1, 2]}), &json!({"l": [1, 2]})));
    assert!(!args_match(&json!({"l": [1]}), &json!({"l": [1, 2]})));
}

#[test]
fn called_in_order_is_a_subsequence() {
    let run = with_calls();
    let order = |t: &[&str]| Check::CalledInOrder(t.iter().map(|s| s.to_string()).collect());
    assert!(check(&order(&["search", "refund", "email"]), &case(None), &run).0);
    let (ok, reason) = check(&order(&["refund", "search"]), &case(None), &run);
    assert!(!ok);
    assert!(reason.contains(r#""search" did not follow"#), "{reason}");
}

#[test]
fn at_most_calls_counts_nested_calls() {
    let run = with_calls();
    let all = Check::AtMostCalls { tool: None, max: 5 };
    assert!(check(&all, &case(None), &run).0);
    let (ok, reason) = check(
        &Check::AtMostCalls { tool: None, max: 4 },
        &case(None),
        &run,
    );
    assert!(!ok);
    assert_eq!(reason, "5 tool calls (at most 4 allowed)");
    let one = Check::AtMostCalls {
        tool: Some("refund".into()),
        max: 0,
    };
    assert_eq!(
        check(&one, &case(None), &run),
        (false, r#"1 calls of "refund" (at most 0 allowed)"#.into())
    );
}

#[test]
fn duration_tokens_and_cost_limits() {
    let mut run = answer("");
    run.duration_ms = 1500.0;
    run.usage = Usage {
        input_tokens: 100,
        output_tokens: 50,
        cost_usd: None,
    };
    let d = |ms| Check::WithinDuration(Duration::from_millis(ms));
    assert!(check(&d(1500), &case(None), &run).0);
    assert_eq!(
        check(&d(1000), &case(None), &run),
        (false, "took 1500 ms (at most 1000 ms allowed)".into())
    );
    assert!(check(&Check::WithinTokens(150), &case(None), &run).0);
    assert!(!check(&Check::WithinTokens(149), &case(None), &run).0);
    assert_eq!(
        check(&Check::WithinCost(1.0), &case(None), &run),
        (false, "the model has no prices".into())
    );
    run.usage.cost_usd = Some(0.02);
    assert!(check(&Check::WithinCost(0.05), &case(None), &run).0);
    assert!(!check(&Check::WithinCost(0.01), &case(None), &run).0);
}

#[test]
fn no_tool_error_names_the_failed_tool() {
    let mut run = with_calls();
    assert!(check(&Check::NoToolError, &case(None), &run).0);
    run.tool_calls[1].nested[1].is_error = true;
    run.tool_calls[1].nested[1].result = json!("order is closed");
    assert_eq!(
        check(&Check::NoToolError, &case(None), &run),
        (false, r#""refund" failed: "order is closed""#.into())
    );
}

#[derive(Debug)]
struct LongerThan(usize);

impl CaseCheck for LongerThan {
    fn check(&self, case: &Value, run: &Value) -> Result<Verdict, String> {
        let answer = run["answer"].as_str().ok_or("no answer")?;
        if case["name"] != "refund" {
            return Err("wrong case".into());
        }
        Ok(Verdict::of(
            answer.len() > self.0,
            format!("{} chars", answer.len()),
        ))
    }
}

#[derive(Debug)]
struct Throws;

impl CaseCheck for Throws {
    fn check(&self, _: &Value, _: &Value) -> Result<Verdict, String> {
        Err("boom".into())
    }
}

#[test]
fn custom_checks_see_the_case_and_run_as_json() {
    let c = Check::Custom(Arc::new(LongerThan(3)));
    assert_eq!(
        check(&c, &case(None), &answer("hello")),
        (true, "5 chars".into())
    );
    assert_eq!(
        check(&c, &case(None), &answer("hi")),
        (false, "2 chars".into())
    );
    assert_eq!(
        check(&Check::Custom(Arc::new(Throws)), &case(None), &answer("")),
        (false, "the evaluator failed: boom".into())
    );
}

#[test]
fn a_judge_is_not_scored_here() {
    let j = Check::Judge(JudgeSpec {
        rubric: "r".into(),
        model: "openai:gpt-5-mini".into(),
        retries: 1,
        base_url: None,
        price: None,
    });
    assert_eq!(
        check(&j, &case(None), &answer("")),
        (false, "judge evaluators are scored by judge::grade".into())
    );
}
