//! `kiln eval` end to end: the real binary against the real `kiln mock`, over two models with
//! repeats, with the report's numbers checked against what the scenario implies; baselines,
//! re-scoring without a model, judges, the run log's tags and the report formats.

use crate::common::{Mock, TEST_KEY, kiln_bin, stderr, stdout};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Output};

/// Ten cases; the agent answers "The answer is ANSWER-N".
pub(crate) const CASES: usize = 10;

pub(crate) fn agent_script(system: &str) -> String {
    format!(
        r#"
agent("support")
    .description("Answers support questions")
    .provider("openai")
    .model("good")
    .system("{system}")
    .price(1.0, 2.0);
"#
    )
}

pub(crate) fn eval_script(extra: &str) -> String {
    let cases: Vec<String> = (1..=CASES)
        .map(|n| format!("    .add_case(#{{ name: \"q{n}\", input: \"Case #{n}: what is it?\", expected: \"ANSWER-{n}\" }})"))
        .collect();
    format!(
        "evaluation(\"answers\")\n    .agent(\"support\")\n{}\n    .evaluator(answer_contains())\n{extra};\n",
        cases.join("\n")
    )
}

/// Every case answered right, except what `weak` gets wrong and what the `v2` prompt breaks.
pub(crate) fn scenario(weak_fails: &[usize], v2_fails: &[usize]) -> Value {
    let mut turns = Vec::new();
    for n in weak_fails {
        turns.push(
            json!({"model": "weak", "user": format!("Case #{n}:"), "text": "I do not know.",
            "usage": {"input_tokens": 20, "output_tokens": 5}}),
        );
    }
    for n in v2_fails {
        turns.push(
            json!({"system": "v2", "user": format!("Case #{n}:"), "text": "Please ask again.",
            "usage": {"input_tokens": 20, "output_tokens": 5}}),
        );
    }
    for n in 1..=CASES {
        turns.push(
            json!({"user": format!("Case #{n}:"), "text": format!("The answer is ANSWER-{n}."),
            "usage": {"input_tokens": 10, "output_tokens": 4}}),
        );
    }
    json!({"by_round": true, "require_auth": false, "turns": turns})
}

pub(crate) fn write_scripts(dir: &Path, system: &str, extra: &str) {
    std::fs::write(dir.join("agent.rhai"), agent_script(system)).expect("agent");
    std::fs::write(dir.join("evals.rhai"), eval_script(extra)).expect("evals");
}

fn eval(dir: &Path, mock: &Mock, args: &[&str]) -> Output {
    Command::new(kiln_bin())
        .arg("eval")
        .args(args)
        .args(["--scripts", ".", "--no-stdlib", "--base-url"])
        .arg(format!("{}/v1", mock.url))
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("OPENAI_API_KEY", TEST_KEY)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("KILN_LOG")
        .output()
        .expect("run kiln eval")
}

fn report(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "kiln eval: {}\n{}",
        stderr(out),
        stdout(out)
    );
    serde_json::from_str(&stdout(out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

/// The runs `kiln logs --eval ID --json` lists.
fn logged_runs(dir: &Path, id: &str) -> Vec<Value> {
    let logs = crate::common::kiln(&["logs", "--eval", id, "--json", "--count", "1000"], dir);
    assert!(logs.status.success(), "{}", stderr(&logs));
    let listed: Value = serde_json::from_str(&stdout(&logs)).expect("logs json");
    listed.as_array().cloned().unwrap_or_default()
}

fn row<'a>(report: &'a Value, model: &str) -> &'a Value {
    (report["summary"].as_array().expect("summary"))
        .iter()
        .find(|r| r["model"] == model)
        .unwrap_or_else(|| panic!("no row for {model}: {report}"))
}

fn close(a: &Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() < 1e-9)
}

#[test]
fn two_models_ten_cases_three_repeats_report_what_the_scenario_implies() {
    let dir = tempfile::tempdir().expect("dir");
    write_scripts(dir.path(), "Be helpful.", "");
    let mock = Mock::start(&scenario(&[3, 7], &[]));
    let out = eval(
        dir.path(),
        &mock,
        &[
            "answers",
            "--model",
            "openai:good,openai:weak",
            "--repeat",
            "3",
            "--json",
        ],
    );
    let r = report(&out);
    assert_eq!(r["results"].as_array().map(Vec::len), Some(60));
    assert_eq!(mock.requests().len(), 60, "one request per run");
    let good = row(&r, "openai:good");
    assert_eq!(
        (good["runs"].as_u64(), good["passed"].as_u64()),
        (Some(30), Some(30))
    );
    assert!(close(&good["pass_rate"], 1.0) && close(&good["pass_at_k"], 1.0));
    assert_eq!(good["usage"]["input_tokens"], 300);
    assert_eq!(good["usage"]["output_tokens"], 120);
    // $1 per million input tokens, $2 per million output tokens.
    assert!(close(&good["usage"]["cost_usd"], 300e-6 + 240e-6), "{good}");
    let weak = row(&r, "openai:weak");
    assert_eq!(
        (weak["runs"].as_u64(), weak["passed"].as_u64()),
        (Some(30), Some(24))
    );
    assert!(close(&weak["pass_rate"], 0.8));
    assert!(close(&weak["pass_at_k"], 0.8) && close(&weak["pass_all_k"], 0.8));
    assert_eq!(weak["usage"]["input_tokens"], 24 * 10 + 6 * 20);
    assert_eq!(weak["usage"]["output_tokens"], 24 * 4 + 6 * 5);
    let failed: Vec<(&str, &str)> = (r["results"].as_array().expect("results"))
        .iter()
        .filter(|x| x["passed"] == false)
        .map(|x| {
            (
                x["model"].as_str().unwrap_or(""),
                x["case"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(failed.len(), 6);
    let per_case = r["per_case"].as_array().expect("per_case");
    assert_eq!(per_case.len(), 20, "a row per case and model");
    let q3 = (per_case.iter())
        .find(|c| c["case"] == "q3" && c["model"] == "openai:weak")
        .expect("q3 on weak");
    assert_eq!(
        (q3["runs"].as_u64(), q3["passed"].as_u64()),
        (Some(3), Some(0))
    );
    assert!(close(&q3["pass_at_k"], 0.0) && close(&q3["pass_all_k"], 0.0));
    assert!(
        failed
            .iter()
            .all(|(m, c)| *m == "openai:weak" && (*c == "q3" || *c == "q7"))
    );
    let reason = &r["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|x| x["passed"] == false)
        .expect("a failure")["verdicts"][0]["reason"];
    assert!(
        reason
            .as_str()
            .is_some_and(|s| s.contains("ANSWER-3") || s.contains("ANSWER-7")),
        "{reason}"
    );
    // The run log holds the 60 runs under the eval run's id.
    let id = r["id"].as_str().expect("id");
    assert_eq!(logged_runs(dir.path(), id).len(), 60);
}

#[test]
fn the_table_shows_each_model_and_the_failing_cases_with_their_reasons() {
    let dir = tempfile::tempdir().expect("dir");
    write_scripts(dir.path(), "Be helpful.", "");
    let mock = Mock::start(&scenario(&[3], &[]));
    let out = eval(
        dir.path(),
        &mock,
        &["--model", "openai:good,openai:weak", "--quiet"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let line = |m: &str| {
        text.lines()
            .find(|l| l.starts_with(m))
            .unwrap_or_default()
            .to_string()
    };
    assert!(line("openai:good").contains("100.0%"), "{text}");
    assert!(line("openai:weak").contains("90.0%"), "{text}");
    assert!(text.contains("q3 · openai:weak"), "{text}");
    assert!(text.contains("answer_contains"), "{text}");
    assert!(stderr(&out).contains("eval run ev_"), "{}", stderr(&out));
}

#[test]
fn a_worse_system_prompt_is_two_regressions_and_rescoring_asks_no_model() {
    let dir = tempfile::tempdir().expect("dir");
    write_scripts(dir.path(), "Be helpful. v1", "");
    let mock = Mock::start(&scenario(&[], &[2, 5]));
    let base = report(&eval(
        dir.path(),
        &mock,
        &["--repeat", "2", "--save", "main", "--json"],
    ));
    assert!(close(&row(&base, "default")["pass_rate"], 1.0));
    // The new prompt: the mock answers two cases worse.
    write_scripts(dir.path(), "Be helpful. v2", "");
    let out = eval(
        dir.path(),
        &mock,
        &["--repeat", "2", "--baseline", "main", "--json"],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "a regression fails: {}",
        stderr(&out)
    );
    let now: Value = serde_json::from_str(&stdout(&out)).expect("json");
    let cmp = &now["comparison"];
    assert_eq!(
        (cmp["regressions"].as_u64(), cmp["fixes"].as_u64()),
        (Some(2), Some(0)),
        "{cmp}"
    );
    let regressed: Vec<&str> = (cmp["cases"].as_array().expect("cases"))
        .iter()
        .filter(|c| c["change"] == "regression")
        .map(|c| c["case"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(regressed, ["q2", "q5"]);
    // Within a tolerance of the whole drop, it is no regression.
    let out = eval(
        dir.path(),
        &mock,
        &[
            "--repeat",
            "2",
            "--baseline",
            "main",
            "--tolerance",
            "1",
            "--quiet",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // An evaluator edit, re-scored from the recorded runs: no model request.
    let asked = mock.requests().len();
    write_scripts(
        dir.path(),
        "Be helpful. v2",
        "    .evaluator(\"polite\", |c, run| !run.answer.contains(\"again\"))",
    );
    let id = now["id"].as_str().expect("id");
    let again = report(&eval(dir.path(), &mock, &["--rescore", id, "--json"]));
    assert_eq!(mock.requests().len(), asked, "re-scoring asked a model");
    assert_eq!(again["rescored_from"], id);
    assert_eq!(again["evaluators"], json!(["answer_contains", "polite"]));
    let polite_fails = (again["results"].as_array().expect("results"))
        .iter()
        .filter(|x| x["verdicts"][1]["passed"] == false)
        .count();
    assert_eq!(polite_fails, 4, "q2 and q5, twice each");
}

#[test]
fn a_cached_eval_replays_unchanged_cases_and_asks_only_for_changed_ones() {
    let dir = tempfile::tempdir().expect("dir");
    write_scripts(dir.path(), "Be helpful.", "");
    let mock = Mock::start(&scenario(&[], &[]));
    report(&eval(dir.path(), &mock, &["--json"]));
    assert_eq!(mock.requests().len(), CASES);
    let cached = report(&eval(dir.path(), &mock, &["--cache", "--json"]));
    assert_eq!(mock.requests().len(), CASES, "every case replayed");
    assert!(
        cached["results"]
            .as_array()
            .expect("results")
            .iter()
            .all(|x| x["cached"] == true && x["passed"] == true)
    );
    // An edited case misses before anything runs: one request, no replay left in the run log.
    let edited = eval_script("").replace("Case #1: what is it?", "Case #1: what is it, really?");
    std::fs::write(dir.path().join("evals.rhai"), edited).expect("edit a case");
    let one = report(&eval(dir.path(), &mock, &["--cache", "--json"]));
    assert_eq!(
        mock.requests().len(),
        CASES + 1,
        "only the edited case asked"
    );
    let missed: Vec<&str> = (one["results"].as_array().expect("results").iter())
        .filter(|x| x["cached"] == false)
        .filter_map(|x| x["case"].as_str())
        .collect();
    assert_eq!(missed, ["q1"]);
    let id = one["id"].as_str().expect("id");
    assert_eq!(logged_runs(dir.path(), id).len(), CASES);
    // A changed prompt changes every request: nothing replays.
    write_scripts(dir.path(), "Be brief.", "");
    let fresh = report(&eval(dir.path(), &mock, &["--cache", "--json"]));
    assert_eq!(mock.requests().len(), 2 * CASES + 1);
    assert!(
        fresh["results"]
            .as_array()
            .expect("results")
            .iter()
            .all(|x| x["cached"] == false)
    );
}

#[test]
fn a_judge_that_answers_malformed_is_repaired_and_its_usage_counted() {
    let dir = tempfile::tempdir().expect("dir");
    let mock = Mock::start(&json!({"require_auth": false, "turns": [
        {"model": "good", "text": "The answer is ANSWER-1.", "usage": {"input_tokens": 10, "output_tokens": 4}},
        {"model": "judge", "text": "Looks fine to me.", "usage": {"input_tokens": 100, "output_tokens": 20}},
        {"model": "judge", "text": "{\"pass\": false, \"score\": 0.25, \"reason\": \"too curt\"}", "usage": {"input_tokens": 150, "output_tokens": 30}}
    ]}));
    let judge = format!(
        "    .evaluator(judge(#{{ rubric: \"Polite and complete\", model: \"openai:judge\", base_url: \"{}/v1\", price: [2.0, 10.0] }}))",
        mock.url
    );
    std::fs::write(dir.path().join("agent.rhai"), agent_script("Be helpful.")).expect("agent");
    let one = "evaluation(\"answers\")\n    .agent(\"support\")\n    .add_case(#{ name: \"q1\", input: \"Case #1: what is it?\", expected: \"ANSWER-1\" })\n    .evaluator(answer_contains())\n";
    std::fs::write(dir.path().join("evals.rhai"), format!("{one}{judge};\n")).expect("evals");
    let r = report(&eval(dir.path(), &mock, &["--json"]));
    let run = &r["results"][0];
    assert_eq!(run["verdicts"][1]["evaluator"], "judge");
    assert_eq!(run["verdicts"][1]["passed"], false);
    assert!(close(&run["verdicts"][1]["score"], 0.25));
    assert_eq!(run["verdicts"][1]["reason"], "too curt");
    assert_eq!(run["passed"], false);
    assert_eq!(run["judge_usage"]["input_tokens"], 250);
    assert_eq!(run["judge_usage"]["output_tokens"], 50);
    // $2 per million input tokens, $10 per million output tokens.
    assert!(
        close(&run["judge_usage"]["cost_usd"], 250.0 * 2e-6 + 50.0 * 10e-6),
        "{run}"
    );
    assert_eq!(row(&r, "default")["judge_usage"]["input_tokens"], 250);
    assert_eq!(mock.requests().len(), 3);
}

#[test]
fn mistakes_in_an_evaluation_are_load_errors_at_their_place() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("agent.rhai"), agent_script("x")).expect("agent");
    std::fs::write(
        dir.path().join("cases.jsonl"),
        "{\"input\": \"ok\"}\n{\"input\": \"x\", \"expect\": 1}\n",
    )
    .expect("cases");
    std::fs::write(
        dir.path().join("evals.rhai"),
        "evaluation(\"e\")\n    .agent(\"support\")\n    .cases(\"cases.jsonl\")\n    .evaluator(answer_matches(\"(\"));\n",
    )
    .expect("evals");
    let out = crate::common::kiln(&["check", "--scripts", ".", "--no-stdlib"], dir.path());
    let err = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("evals.rhai:3:6") && err.contains("cases.jsonl:2:"),
        "{err}"
    );
    assert!(err.contains("unknown field `expect`"), "{err}");
    assert!(
        err.contains("evals.rhai:4:6") && err.contains("not a regular expression"),
        "{err}"
    );
}

#[cfg(unix)]
#[test]
fn a_cases_file_linking_out_of_the_scripts_folder_is_refused_naming_it() {
    let outside = tempfile::tempdir().expect("outside");
    let secret = outside.path().join("secret.jsonl");
    std::fs::write(&secret, "{\"input\": \"the secret\"}\n").expect("secret");
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("agent.rhai"), agent_script("x")).expect("agent");
    std::os::unix::fs::symlink(&secret, dir.path().join("cases.jsonl")).expect("symlink");
    std::fs::write(
        dir.path().join("evals.rhai"),
        "evaluation(\"e\")\n    .agent(\"support\")\n    .cases(\"cases.jsonl\")\n    .evaluator(answer_contains());\n",
    )
    .expect("evals");
    let mock = Mock::start(&scenario(&[], &[]));
    for out in [
        crate::common::kiln(&["check", "--scripts", ".", "--no-stdlib"], dir.path()),
        eval(dir.path(), &mock, &["e"]),
    ] {
        let err = format!("{}{}", stdout(&out), stderr(&out));
        assert!(!out.status.success(), "{err}");
        assert!(
            err.contains("evals.rhai:3:6")
                && err
                    .contains("cases file \"cases.jsonl\" is a symlink out of the script's folder"),
            "{err}"
        );
        assert!(!err.contains("the secret"), "{err}");
    }
    assert!(
        mock.requests().is_empty(),
        "no case of the linked file was run"
    );
}

#[test]
fn a_token_budget_stops_the_eval_cleanly_with_what_finished() {
    let dir = tempfile::tempdir().expect("dir");
    write_scripts(dir.path(), "Be helpful.", "");
    let mock = Mock::start(&scenario(&[], &[]));
    // Each run spends 14 tokens; one at a time, the fourth reaches 50.
    let r = report(&eval(
        dir.path(),
        &mock,
        &["--max-tokens", "50", "-j", "1", "--json"],
    ));
    assert_eq!(r["results"].as_array().map(Vec::len), Some(4), "{r}");
    assert_eq!(mock.requests().len(), 4);
    let stopped = r["stopped"].as_str().unwrap_or_default();
    assert!(
        stopped.contains("--max-tokens 50") && stopped.contains("56 tokens"),
        "{stopped}"
    );
    assert_eq!(row(&r, "default")["runs"], 4);
}

#[test]
fn tools_and_pipelines_are_evaluated_on_their_arguments() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(
        dir.path().join("t.rhai"),
        r#"
tool("add").description("Adds").param("a", "number").param("b", "number").handler(|args| args.a + args.b);
pipeline("summed").description("Adds through a pipeline").input("a", "number").input("b", "number")
    .compute("sum", ["a", "b"], "add").result("sum");
evaluation("adding").tool("add")
    .add_case(#{ name: "right", input: #{ a: 1, b: 2 }, expected: 3 })
    .add_case(#{ name: "wrong", input: #{ a: 2, b: 2 }, expected: 5 })
    .evaluator(output_equals());
evaluation("piping").pipeline("summed")
    .add_case(#{ input: #{ a: 1, b: 2 } })
    .evaluator(answer_contains("3"));
"#,
    )
    .expect("script");
    let run = |name: &str| {
        let out = crate::common::kiln(
            &["eval", name, "--scripts", ".", "--no-stdlib", "--json"],
            dir.path(),
        );
        report(&out)
    };
    let adding = run("adding");
    assert_eq!(adding["target"], json!({"kind": "tool", "name": "add"}));
    let passed: Vec<bool> = (adding["results"].as_array().expect("results"))
        .iter()
        .map(|r| r["passed"] == true)
        .collect();
    assert_eq!(passed, [true, false]);
    assert!(
        adding["results"][1]["verdicts"][0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("expected output 5, found 4"))
    );
    let piping = run("piping");
    assert_eq!(piping["results"][0]["passed"], true, "{piping}");
    assert_eq!(piping["results"][0]["case"], "case 1");
}

#[test]
fn evaluators_keep_their_order_a_built_in_may_be_named_and_two_of_one_name_are_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let script = |evaluators: &str| {
        format!(
            "tool(\"echo\").description(\"Echoes\").param(\"text\", \"string\").handler(|args| args.text);\n\
             evaluation(\"e\").tool(\"echo\").add_case(#{{ input: #{{ text: \"hello world\" }}, expected: \"hello\" }})\n{evaluators};\n"
        )
    };
    let write = |evaluators: &str| {
        std::fs::write(dir.path().join("e.rhai"), script(evaluators)).expect("script")
    };
    write(
        "    .evaluator(\"short\", |c, run| run.answer.len() < 20)\n    .evaluator(answer_contains())\n    .evaluator(\"says world\", answer_contains(\"world\"))",
    );
    let r = report(&crate::common::kiln(
        &["eval", "--scripts", ".", "--no-stdlib", "--json"],
        dir.path(),
    ));
    assert_eq!(
        r["evaluators"],
        json!(["short", "answer_contains", "says world"])
    );
    assert_eq!(r["results"][0]["passed"], true, "{r}");
    write("    .evaluator(answer_contains())\n    .evaluator(answer_contains(\"world\"))");
    let out = crate::common::kiln(&["check", "--scripts", ".", "--no-stdlib"], dir.path());
    let err = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("e.rhai:4:6") && err.contains("two evaluators are named \"answer_contains\""),
        "{err}"
    );
}

#[test]
fn a_run_the_evaluated_agent_starts_is_tagged_with_the_eval_run_too() {
    let dir = tempfile::tempdir().expect("dir");
    let mock = Mock::start(&json!({"by_round": true, "require_auth": false, "turns": [
        {"model": "good", "tool_calls": [{"name": "ask_helper", "args": {"prompt": "what is case 1?"}}]},
        {"model": "helper", "text": "It is ANSWER-1."},
        {"model": "good", "text": "The answer is ANSWER-1."}
    ]}));
    // --base-url reaches the evaluated agent only: the helper names the mock itself.
    std::fs::write(
        dir.path().join("agents.rhai"),
        format!(
            "agent(\"helper\").description(\"Helps\").provider(\"openai\").model(\"helper\").base_url(\"{}/v1\");\n\
             agent(\"lead\").description(\"Leads\").provider(\"openai\").model(\"good\").tools([\"agent:helper\"]);\n\
             evaluation(\"e\").agent(\"lead\").add_case(#{{ input: \"Case #1: what is it?\", expected: \"ANSWER-1\" }})\n\
                 .evaluator(called(\"ask_helper\")).evaluator(no_tool_error()).evaluator(answer_contains());\n",
            mock.url
        ),
    )
    .expect("script");
    let r = report(&eval(dir.path(), &mock, &["--json"]));
    assert_eq!(r["results"][0]["passed"], true, "{r}");
    let id = r["id"].as_str().expect("id");
    let listed = logged_runs(dir.path(), id);
    let mut agents: Vec<&str> = (listed.iter())
        .filter_map(|run| run["agent"].as_str())
        .collect();
    agents.sort();
    assert_eq!(agents, ["helper", "lead"], "{listed:?}");
    assert_eq!(
        mock.requests().len(),
        3,
        "the helper asked the mock, nothing else"
    );
}
