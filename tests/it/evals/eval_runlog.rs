//! The run log's side of `kiln eval`: runs tagged with their eval run are listed by
//! `kiln logs --eval ID` (and no other run is), and `kiln logs RUN --as-case` prints a logged
//! run as one line of a cases file.

use crate::common::*;
use serde_json::{Value, json};

const CLERK: &str = r#"
tool("lookup").param("sku", "string").handler(|a| "found " + a.sku);
agent("clerk").provider("script").tools(["lookup"])
    .planner(|m, t| if m[m.len() - 1].role == "user" { #{ tool_calls: [#{ name: "lookup", args: #{ sku: "A1" } }] } } else { #{ text: "A1 is \"in stock\"\nsince May" } });
"#;

/// The runs `kiln logs --json` lists with `extra` filters, by id.
/// `kiln logs ARGS --db DB --no-stdlib --scripts .` in `dir`.
fn logs(dir: &std::path::Path, db: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["logs"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--db", db, "--no-stdlib", "--scripts", "."]);
    kiln(&all, dir)
}

fn listed(dir: &std::path::Path, db: &str, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    let out = logs(dir, db, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let runs: Value = serde_json::from_str(&stdout(&out)).expect("logs json");
    runs.as_array()
        .expect("runs")
        .iter()
        .map(|r| r["id"].as_str().expect("id").to_string())
        .collect()
}

#[test]
fn kiln_logs_eval_lists_exactly_the_runs_tagged_with_that_eval() {
    let s = Scripts::new(&[("clerk.rhai", CLERK)]);
    let db_path = s.path().join("eval.db");
    let host = kiln::Host::builder()
        .scripts(s.path())
        .workspace(s.path())
        .database(&db_path)
        .build()
        .expect("host");
    let rt = tokio::runtime::Runtime::new().expect("rt");
    let run = |eval_id: Option<&str>| {
        let opts = kiln::RunOptions {
            eval_id: eval_id.map(str::to_string),
            ..Default::default()
        };
        rt.block_on(host.run("clerk", "where is A1?", opts))
            .expect("run ok")
            .run_id
    };
    let tagged = run(Some("ev_test"));
    let untagged = run(None);
    let other = run(Some("ev_other"));
    let db = db_path.display().to_string();
    assert_eq!(
        listed(s.path(), &db, &["--eval", "ev_test"]),
        std::slice::from_ref(&tagged)
    );
    assert_eq!(listed(s.path(), &db, &["--eval", "ev_other"]), [other]);
    let all = listed(s.path(), &db, &[]);
    assert_eq!(all.len(), 3);
    assert!(all.contains(&untagged), "{all:?}");
    // Combined with the other filters as they combine.
    assert!(listed(s.path(), &db, &["--eval", "ev_test", "--agent", "nobody"]).is_empty());
    assert!(listed(s.path(), &db, &["--eval", "ev_nothing"]).is_empty());
    let json = logs(s.path(), &db, &[&tagged, "--json"]);
    let runs: Value = serde_json::from_str(&stdout(&json)).expect("logs json");
    assert_eq!(runs[0]["eval_id"], "ev_test");
    let text = stdout(&logs(s.path(), &db, &["--eval", "ev_test"]));
    assert!(text.starts_with(&format!("{tagged}  ")), "{text}");
    assert!(text.contains(", eval ev_test"), "{text}");
    assert!(!text.contains(&untagged), "{text}");
}

#[test]
fn kiln_logs_as_case_prints_a_line_of_a_cases_file() {
    let s = Scripts::new(&[("clerk.rhai", CLERK)]);
    let ask = |prompt: &str| {
        let out = kiln(
            &["ask", "clerk", prompt, "--no-stdlib", "--scripts", "."],
            s.path(),
        );
        assert!(out.status.success(), "{}", stderr(&out));
    };
    ask("where is \"A1\"?\nasked twice");
    ask("and B2?");
    let logs = kiln(
        &["logs", "--json", "--no-stdlib", "--scripts", "."],
        s.path(),
    );
    let runs: Value = serde_json::from_str(&stdout(&logs)).expect("logs json");
    let ids: Vec<&str> = runs
        .as_array()
        .expect("runs")
        .iter()
        .rev()
        .map(|r| r["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids.len(), 2);
    // As `kiln logs RUN --as-case >> cases.jsonl` appends them.
    let mut file = String::new();
    for id in &ids {
        let out = kiln(
            &["logs", id, "--as-case", "--no-stdlib", "--scripts", "."],
            s.path(),
        );
        assert!(out.status.success(), "{}", stderr(&out));
        file.push_str(&stdout(&out));
    }
    let lines: Vec<Value> = file
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert_eq!(lines.len(), 2, "{file}");
    let short = &ids[0][ids[0].len() - 8..];
    assert_eq!(
        lines[0],
        json!({
            "name": format!("clerk-{short}"),
            "input": "where is \"A1\"?\nasked twice",
            "expected": "A1 is \"in stock\"\nsince May",
            "metadata": {"run_id": ids[0], "agent": "clerk", "model": lines[0]["metadata"]["model"],
                         "tool_calls": ["lookup"]}
        })
    );
    assert_eq!(lines[1]["input"], "and B2?");
    assert_ne!(lines[0]["name"], lines[1]["name"]);

    let unknown = kiln(
        &[
            "logs",
            "run_nope",
            "--as-case",
            "--no-stdlib",
            "--scripts",
            ".",
        ],
        s.path(),
    );
    assert!(!unknown.status.success());
    assert!(
        stderr(&unknown).contains("no run \"run_nope\""),
        "{}",
        stderr(&unknown)
    );
    let alone = kiln(&["logs", "--as-case"], s.path());
    assert!(!alone.status.success(), "--as-case needs a run");
}
