//! `kiln eval` live: `--watch` (an edit of the evaluation re-scores without asking the model,
//! an edit of the agent re-runs, a broken file keeps the last good version), the `eval` span
//! above each `invoke_agent` as exported over OTLP, and choosing an evaluation by name.

use crate::common::{Mock, TEST_KEY, kiln_bin, stderr, stdout};
use serde_json::{Map, Value, json};
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Ten cases; the agent answers "The answer is ANSWER-N".
use crate::evals::eval::{CASES, agent_script, eval_script, write_scripts};

/// Every case answered right by `good`; `weak` does not know case 3; the `v2` prompt answers
/// case 2 with "Please ask again.".
fn scenario() -> Value {
    crate::evals::eval::scenario(&[3], &[2])
}

/// `kiln eval ARGS` in `dir` against `mock` (when given), not yet run.
fn eval_command(dir: &Path, mock: Option<&Mock>, args: &[&str]) -> Command {
    let mut cmd = Command::new(kiln_bin());
    cmd.arg("eval")
        .args(args)
        .args(["--scripts", ".", "--no-stdlib"])
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("OPENAI_API_KEY", TEST_KEY)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("KILN_LOG");
    if let Some(mock) = mock {
        cmd.arg("--base-url").arg(format!("{}/v1", mock.url));
    }
    cmd
}

/// A `kiln eval --watch` child whose output reader threads collect; killed on drop.
struct Watching {
    child: Mutex<Child>,
    out: Arc<Mutex<String>>,
    err: Arc<Mutex<String>>,
}

impl Watching {
    fn start(mut cmd: Command) -> Watching {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start kiln eval --watch");
        let collect = |mut from: Box<dyn Read + Send>| {
            let into = Arc::new(Mutex::new(String::new()));
            let kept = into.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = from.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                    kept.lock().expect("output").push_str(&text);
                }
            });
            into
        };
        let out = collect(Box::new(child.stdout.take().expect("stdout")));
        let err = collect(Box::new(child.stderr.take().expect("stderr")));
        Watching {
            child: Mutex::new(child),
            out,
            err,
        }
    }

    fn stderr(&self) -> String {
        self.err.lock().expect("stderr").clone()
    }

    /// The JSON reports printed so far (a report still being written is left out).
    fn reports(&self) -> Vec<Value> {
        let out = self.out.lock().expect("stdout").clone();
        serde_json::Deserializer::from_str(&out)
            .into_iter::<Value>()
            .map_while(Result::ok)
            .collect()
    }

    /// Waits (up to 60 s) until report number `n` (from 1) is printed, and returns it.
    fn report(&self, n: usize) -> Value {
        self.wait(&format!("report {n}"), |w| w.reports().len() >= n);
        let reports = self.reports();
        assert_eq!(reports.len(), n, "one report per change");
        reports[n - 1].clone()
    }

    /// Waits (up to 60 s) until `done` holds; panics with the output otherwise.
    fn wait(&self, what: &str, done: impl Fn(&Watching) -> bool) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(60) {
            if done(self) {
                return;
            }
            if let Ok(Some(status)) = self.child.lock().expect("child").try_wait() {
                panic!(
                    "kiln eval --watch exited ({status}) before {what}: {}",
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = self.out.lock().expect("stdout").clone();
        panic!(
            "no {what} within 60 s\nstdout: {out}\nstderr: {}",
            self.stderr()
        );
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        if let Ok(child) = self.child.get_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The names of the evaluators that scored the runs of a report, in order.
fn evaluators(report: &Value) -> Vec<String> {
    report["results"][0]["verdicts"]
        .as_array()
        .map(|v| {
            v.iter()
                .filter_map(|x| x["evaluator"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The cases that failed, sorted.
fn failed_cases(report: &Value) -> Vec<String> {
    let mut failed: Vec<String> = (report["results"].as_array().expect("results"))
        .iter()
        .filter(|r| r["passed"] == false)
        .filter_map(|r| r["case"].as_str().map(str::to_string))
        .collect();
    failed.sort();
    failed
}

/// Whether `text` holds `file:LINE:COL` with numbers.
fn has_location(text: &str, file: &str) -> bool {
    text.match_indices(file).any(|(at, _)| {
        let rest = &text[at + file.len()..];
        let mut parts = rest.splitn(3, ':');
        let (empty, line, col) = (parts.next(), parts.next(), parts.next());
        let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
        empty == Some("")
            && line.is_some_and(digits)
            && col.is_some_and(|c| {
                digits(
                    &c.chars()
                        .take_while(char::is_ascii_digit)
                        .collect::<String>(),
                )
            })
    })
}

#[test]
fn watch_rescores_an_evaluation_edit_reruns_an_agent_edit_and_keeps_a_broken_file_out() {
    let dir = tempfile::tempdir().expect("dir");
    write_scripts(dir.path(), "Be helpful.", "");
    let mock = Mock::start(&scenario());
    let w = Watching::start(eval_command(
        dir.path(),
        Some(&mock),
        &["answers", "--watch", "--json", "--quiet"],
    ));
    let first = w.report(1);
    assert_eq!(first["results"].as_array().map(Vec::len), Some(CASES));
    assert_eq!(evaluators(&first), ["answer_contains"], "{first}");
    assert_eq!(failed_cases(&first), Vec::<String>::new());
    w.wait("the watcher", |w| {
        w.stderr().contains("watching the scripts")
    });
    assert_eq!(mock.requests().len(), CASES, "one request per case");

    // (a) A new evaluator in the evaluation's own file: re-scored, the model is not asked.
    let polite = "    .evaluator(\"polite\", |c, run| !run.answer.contains(\"again\"))";
    std::fs::write(dir.path().join("evals.rhai"), eval_script(polite)).expect("edit evals");
    let rescored = w.report(2);
    assert_eq!(
        evaluators(&rescored),
        ["answer_contains", "polite"],
        "{rescored}"
    );
    assert_eq!(rescored["results"].as_array().map(Vec::len), Some(CASES));
    assert_eq!(failed_cases(&rescored), Vec::<String>::new());
    assert_eq!(mock.requests().len(), CASES, "a re-score asks no model");

    // (b) A new system prompt: re-run, every case asks the model again.
    std::fs::write(
        dir.path().join("agent.rhai"),
        agent_script("Be helpful. v2"),
    )
    .expect("edit");
    let rerun = w.report(3);
    assert_eq!(mock.requests().len(), 2 * CASES, "a re-run asks again");
    assert_eq!(evaluators(&rerun), ["answer_contains", "polite"]);
    assert_eq!(failed_cases(&rerun), ["q2"], "the v2 prompt breaks case 2");
    let q2 = (rerun["results"].as_array().expect("results"))
        .iter()
        .find(|r| r["case"] == "q2")
        .expect("q2");
    let verdicts: Vec<(&Value, &Value)> = (q2["verdicts"].as_array().expect("verdicts"))
        .iter()
        .map(|v| (&v["evaluator"], &v["passed"]))
        .collect();
    assert_eq!(
        verdicts,
        [
            (&json!("answer_contains"), &json!(false)),
            (&json!("polite"), &json!(false))
        ],
        "{q2}"
    );

    // (c) A syntax error: reported where it is, the last good version kept, no report.
    let broken = eval_script(polite).replace(".agent(\"support\")", ".agent(\"support\"");
    std::fs::write(dir.path().join("evals.rhai"), broken).expect("break evals");
    w.wait("the load error", |w| {
        w.stderr().contains("kept the last good version")
    });
    let err = w.stderr();
    assert!(has_location(&err, "evals.rhai"), "{err}");
    assert_eq!(w.reports().len(), 3, "a broken file makes no report");
    std::fs::write(dir.path().join("evals.rhai"), eval_script(polite)).expect("fix evals");
    let fixed = w.report(4);
    assert_eq!(fixed["results"].as_array().map(Vec::len), Some(CASES));
    assert_eq!(failed_cases(&fixed), ["q2"]);
    assert_eq!(mock.requests().len(), 2 * CASES, "the fix re-scores");
}

// --- Traces -------------------------------------------------------------------------------

/// One protobuf field: a varint, a length-delimited run of bytes, or a fixed-width number.
enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed(u64),
}

fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// The fields of one protobuf message (stops at the first malformed one).
fn fields(b: &[u8]) -> Vec<(u64, Field<'_>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < b.len() {
        let Some(key) = varint(b, &mut at) else { break };
        let field = match key & 7 {
            0 => varint(b, &mut at).map(Field::Varint),
            1 | 5 => {
                let width = if key & 7 == 1 { 8 } else { 4 };
                let bytes = b.get(at..at + width);
                at += width;
                bytes.map(|x| {
                    Field::Fixed(x.iter().rev().fold(0, |acc, d| (acc << 8) | u64::from(*d)))
                })
            }
            2 => varint(b, &mut at).and_then(|len| {
                let bytes = b.get(at..at + len as usize);
                at += len as usize;
                bytes.map(Field::Bytes)
            }),
            _ => None,
        };
        match field {
            Some(f) => out.push((key >> 3, f)),
            None => break,
        }
    }
    out
}

fn sub(b: &[u8], number: u64) -> Vec<&[u8]> {
    fields(b)
        .into_iter()
        .filter_map(|(n, f)| match f {
            Field::Bytes(x) if n == number => Some(x),
            _ => None,
        })
        .collect()
}

/// An exported span: its id, its parent's id, its name and attributes.
struct Span {
    id: Vec<u8>,
    parent: Vec<u8>,
    name: String,
    attrs: Map<String, Value>,
}

/// An OTLP `AnyValue` as JSON (strings, booleans, integers).
fn any_value(b: &[u8]) -> Value {
    match fields(b).into_iter().next() {
        Some((1, Field::Bytes(s))) => Value::String(String::from_utf8_lossy(s).into_owned()),
        Some((2, Field::Varint(v))) => Value::Bool(v != 0),
        Some((3, Field::Varint(v))) => json!(v as i64),
        Some((4, Field::Fixed(v))) => json!(f64::from_bits(v)),
        _ => Value::Null,
    }
}

/// The spans of ExportTraceServiceRequest bodies: resource_spans(1) > scope_spans(2) > spans(2).
fn spans(bodies: &[Vec<u8>]) -> Vec<Span> {
    let mut out = Vec::new();
    for body in bodies {
        for rs in sub(body, 1) {
            for ss in sub(rs, 2) {
                for span in sub(ss, 2) {
                    let text = |n| {
                        sub(span, n)
                            .first()
                            .map(|b| String::from_utf8_lossy(b).into_owned())
                    };
                    let bytes = |n| sub(span, n).first().map(|b| b.to_vec()).unwrap_or_default();
                    let mut attrs = Map::new();
                    for kv in sub(span, 9) {
                        let key = sub(kv, 1)
                            .first()
                            .map(|k| String::from_utf8_lossy(k).into_owned());
                        let value = sub(kv, 2)
                            .first()
                            .map(|v| any_value(v))
                            .unwrap_or(Value::Null);
                        if let Some(key) = key {
                            attrs.insert(key, value);
                        }
                    }
                    out.push(Span {
                        id: bytes(2),
                        parent: bytes(4),
                        name: text(5).unwrap_or_default(),
                        attrs,
                    });
                }
            }
        }
    }
    out
}

#[test]
fn each_invoke_agent_span_sits_under_an_eval_span_naming_the_run() {
    let dir = tempfile::tempdir().expect("dir");
    write_scripts(dir.path(), "Be helpful.", "");
    let mock = Mock::start(&scenario());
    let collector = crate::common::Collector::start();
    let url = collector.url.clone();
    let out = eval_command(
        dir.path(),
        Some(&mock),
        &[
            "answers",
            "--model",
            "openai:good,openai:weak",
            "--repeat",
            "2",
            "--json",
            "--quiet",
        ],
    )
    .env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &url)
    .output()
    .expect("kiln eval");
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).expect("the report");
    let id = report["id"].as_str().expect("id");
    let results = report["results"].as_array().expect("results");
    assert_eq!(results.len(), 2 * 2 * CASES);

    let spans = spans(&collector.bodies());
    let runs: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("invoke_agent"))
        .collect();
    assert_eq!(
        runs.len(),
        results.len(),
        "one invoke_agent span per run ({} spans exported: {:?})",
        spans.len(),
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let mut seen = Vec::new();
    for run in &runs {
        let parent = spans
            .iter()
            .find(|s| !run.parent.is_empty() && s.id == run.parent)
            .unwrap_or_else(|| panic!("{} has no exported parent", run.name));
        assert_eq!(parent.name, "eval");
        let a = &parent.attrs;
        assert_eq!(a.get("eval.name"), Some(&json!("answers")), "{a:?}");
        assert_eq!(a.get("eval.id"), Some(&json!(id)), "{a:?}");
        seen.push((
            a.get("eval.case").cloned().unwrap_or_default(),
            a.get("eval.model").cloned().unwrap_or_default(),
            // tracing-opentelemetry exports an unsigned field as text; either form will do.
            a.get("eval.repeat").and_then(|v| {
                v.as_i64()
                    .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            }),
        ));
    }
    let mut expected: Vec<(Value, Value, Option<i64>)> = results
        .iter()
        .map(|r| (r["case"].clone(), r["model"].clone(), r["repeat"].as_i64()))
        .collect();
    let key = |t: &(Value, Value, Option<i64>)| format!("{} {} {:?}", t.0, t.1, t.2);
    seen.sort_by_key(key);
    expected.sort_by_key(key);
    assert_eq!(seen, expected, "an eval span per case, model and repeat");
}

// --- Choosing an evaluation -----------------------------------------------------------------

const OTHER: &str = "evaluation(\"other\")\n    .description(\"Checks the greeting\")\n    .agent(\"support\")\n    .add_case(#{ input: \"hi\", expected: \"hello\" })\n    .evaluator(answer_contains());\n";

fn run(dir: &Path, args: &[&str]) -> Output {
    eval_command(dir, None, args).output().expect("kiln eval")
}

#[test]
fn list_names_the_evaluations_and_a_missing_name_is_refused_naming_them() {
    let dir = tempfile::tempdir().expect("dir");
    write_scripts(dir.path(), "Be helpful.", "");
    std::fs::write(dir.path().join("other.rhai"), OTHER).expect("other");

    let out = run(dir.path(), &["--list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut lines: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "answers\tagent support\t10 cases\t",
            "other\tagent support\t1 cases\tChecks the greeting"
        ],
        "{}",
        stdout(&out)
    );

    let out = run(dir.path(), &[]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("name the evaluation to run:")
            && err.contains("answers")
            && err.contains("other"),
        "{err}"
    );

    let out = run(dir.path(), &["nope"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("no evaluation \"nope\""), "{err}");
    assert!(
        err.contains("the scripts declare: answers, other")
            || err.contains("the scripts declare: other, answers"),
        "{err}"
    );

    let out = run(dir.path(), &["--help"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let help = stdout(&out);
    for flag in ["--baseline", "--rescore", "--cache", "--watch", "--list"] {
        assert!(help.contains(flag), "{flag} in: {help}");
    }
}

#[test]
fn watch_reruns_only_the_cases_a_cases_file_edit_affects() {
    let dir = tempfile::tempdir().expect("dir");
    write_scripts(dir.path(), "Be helpful.", "");
    let line = |n: usize| {
        format!(
            "{{\"name\": \"f{n}\", \"input\": \"Case #{n}: what is it?\", \"expected\": \"ANSWER-{n}\"}}\n"
        )
    };
    std::fs::write(dir.path().join("cases.jsonl"), [line(1), line(2)].concat()).expect("cases");
    std::fs::write(
        dir.path().join("evals.rhai"),
        "evaluation(\"filed\").agent(\"support\").cases(\"cases.jsonl\").evaluator(answer_contains());\n",
    )
    .expect("evals");
    let mock = Mock::start(&scenario());
    let w = Watching::start(eval_command(
        dir.path(),
        Some(&mock),
        &["filed", "--watch", "--json", "--quiet"],
    ));
    assert_eq!(w.report(1)["results"].as_array().map(Vec::len), Some(2));
    w.wait("the watcher", |w| {
        w.stderr().contains("watching the scripts")
    });
    assert_eq!(mock.requests().len(), 2);
    // A third case: only it asks the model; the two unchanged replay their recordings.
    std::fs::write(
        dir.path().join("cases.jsonl"),
        [line(1), line(2), line(3)].concat(),
    )
    .expect("cases");
    let second = w.report(2);
    let results = second["results"].as_array().expect("results");
    assert_eq!(results.len(), 3);
    let cached: Vec<bool> = results.iter().map(|r| r["cached"] == true).collect();
    assert_eq!(cached, [true, true, false], "{second}");
    assert_eq!(
        mock.requests().len(),
        3,
        "one new request, for the new case"
    );
    assert!(w.stderr().contains("cases.jsonl changed"), "{}", w.stderr());
    // A broken cases file: the load error at its line, the last good version kept.
    std::fs::write(
        dir.path().join("cases.jsonl"),
        line(1) + "{\"input\": 1, \"nope\": 2}\n",
    )
    .expect("cases");
    w.wait("the load error", |w| {
        w.stderr().contains("kept the last good version")
    });
    assert!(has_location(&w.stderr(), "cases.jsonl"), "{}", w.stderr());
}
