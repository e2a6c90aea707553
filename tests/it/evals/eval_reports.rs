//! `kiln eval`'s reports read by what reads them: the shipped JSON Schema (docs/
//! eval-report.schema.json) validates `--json`, a real JUnit consumer (junitparser, PyPI) reads
//! `--junit`, and Debian's Chromium driven by Playwright (PyPI) opens `--html` with the network
//! cut off. The example evaluation of examples/demo is the subject: it runs offline.

use crate::common::{kiln, repo, stderr, stdout};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// `kiln eval percentages` over examples/demo in `dir`, with `args`.
fn demo_eval(dir: &Path, args: &[&str]) -> std::process::Output {
    let scripts = repo().join("examples/demo");
    let scripts = scripts.display().to_string();
    let mut all = vec!["eval", "percentages", "--scripts", &scripts];
    all.extend_from_slice(args);
    kiln(&all, dir)
}

fn schema() -> Value {
    let text =
        std::fs::read_to_string(repo().join("docs/eval-report.schema.json")).expect("schema");
    serde_json::from_str(&text).expect("schema json")
}

#[test]
fn the_example_evaluation_runs_offline_and_its_json_is_valid_against_the_shipped_schema() {
    let dir = tempfile::tempdir().expect("dir");
    let out = demo_eval(dir.path(), &["--repeat", "3", "--json", "--save", "main"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).expect("json");
    let validator = jsonschema::validator_for(&schema()).expect("a valid schema");
    let problems: Vec<String> = validator
        .iter_errors(&report)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
    // Eleven cases, three repeats; the one case the demo cannot read fails every time.
    let row = &report["summary"][0];
    assert_eq!(
        (row["runs"].as_u64(), row["passed"].as_u64()),
        (Some(33), Some(30))
    );
    // The same agent again, against the saved baseline: nothing moved, exit 0.
    let again = demo_eval(
        dir.path(),
        &["--repeat", "3", "--baseline", "main", "--quiet"],
    );
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stdout(&again).contains("0 regressions"),
        "{}",
        stdout(&again)
    );
}

fn python(script: &str, args: &[&str]) -> std::process::Output {
    Command::new("python3")
        .arg(repo().join("tests/peers/eval").join(script))
        .args(args)
        .output()
        .expect("run python3")
}

#[test]
#[ignore = "needs junitparser and playwright from PyPI and Debian's chromium (.ci/run installs them)"]
fn junit_and_html_reports_are_read_by_a_junit_consumer_and_a_real_browser() {
    let dir = tempfile::tempdir().expect("dir");
    let (xml, page) = (dir.path().join("r.xml"), dir.path().join("r.html"));
    let out = demo_eval(
        dir.path(),
        &[
            "--repeat", "3", "--quiet", "--junit", "r.xml", "--html", "r.html",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let read = python("junit_check.py", &[&xml.display().to_string(), "33", "3"]);
    assert!(
        read.status.success(),
        "junitparser: {}{}",
        stdout(&read),
        stderr(&read)
    );
    let shot = dir.path().join("eval-report.png");
    let seen = python(
        "html_check.py",
        &[&page.display().to_string(), &shot.display().to_string()],
    );
    assert!(
        seen.status.success(),
        "chromium: {}{}",
        stdout(&seen),
        stderr(&seen)
    );
    assert!(std::fs::metadata(&shot).is_ok_and(|m| m.len() > 10_000));
    if let Ok(to) = std::env::var("KILN_SCREENSHOT_OUT") {
        std::fs::copy(&shot, to).expect("copy the screenshot");
    }
}

#[test]
fn a_terminal_shows_a_live_progress_bar_with_the_counts_and_quiet_hides_it() {
    let dir = tempfile::tempdir().expect("dir");
    let scripts = repo().join("examples/demo").display().to_string();
    let run = |quiet: bool| {
        let mut cmd = Command::new(crate::common::kiln_bin());
        cmd.args([
            "eval",
            "percentages",
            "--scripts",
            &scripts,
            "--repeat",
            "2",
        ])
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env("TERM", "xterm");
        if quiet {
            cmd.arg("--quiet");
        }
        let mut p = rexpect::session::spawn_command(cmd, Some(30_000)).expect("spawn");
        p.exp_eof().expect("the eval ends")
    };
    let shown = run(false);
    // The last redraw: every run done, 20 passed and 2 failed (the demo's words-only case).
    // (The pseudo-terminal's reader decodes bytes as Latin-1, so the marks are compared as
    // what they decode to.)
    let last = shown
        .rsplit('\r')
        .find(|l| l.contains("22/22"))
        .unwrap_or_default();
    let words: Vec<&str> = last.split_whitespace().collect();
    assert_eq!(
        words.first(),
        Some(&"[##############################]"),
        "{last}"
    );
    assert_eq!(
        (words.get(1), words.get(3), words.get(5)),
        (Some(&"22/22"), Some(&"20"), Some(&"2")),
        "{last}"
    );
    assert!(
        shown.contains("] 1/22 "),
        "the bar is drawn as runs finish: {shown}"
    );
    let quiet = run(true);
    assert!(!quiet.contains("22/22"), "{quiet}");
    assert!(quiet.contains("failing (2)"), "{quiet}");
}

#[test]
fn a_nul_in_a_models_answer_is_escaped_in_the_html_report() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(
        dir.path().join("agent.rhai"),
        crate::evals::eval::agent_script("Be brief."),
    )
    .expect("agent");
    std::fs::write(
        dir.path().join("evals.rhai"),
        "evaluation(\"nul\").agent(\"support\")\n    \
         .add_case(#{ name: \"q\", input: \"hi\", expected: \"x\" })\n    \
         .evaluator(answer_contains());\n",
    )
    .expect("evals");
    let mock = crate::common::Mock::start(&serde_json::json!({"require_auth": false, "turns": [
        {"text": "before\u{0}after <b>"}
    ]}));
    let out = Command::new(crate::common::kiln_bin())
        .args(["eval", "nul", "--scripts", ".", "--no-stdlib", "--quiet"])
        .args(["--html", "r.html", "--base-url"])
        .arg(format!("{}/v1", mock.url))
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env("OPENAI_API_KEY", crate::common::TEST_KEY)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("KILN_LOG")
        .output()
        .expect("run kiln eval");
    // The case fails (its answer lacks "x"): the report is written all the same.
    let page = std::fs::read(dir.path().join("r.html")).expect("the HTML report");
    assert!(
        !page.contains(&0),
        "a raw NUL in the page; {}",
        stderr(&out)
    );
    let page = String::from_utf8_lossy(&page);
    assert!(
        page.contains("before\\u0000after &lt;b&gt;"),
        "no escaped answer in the page: {page}"
    );
}
