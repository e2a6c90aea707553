//! The renamed DSL names: a script written with an old spelling still loads and behaves as one
//! written with the new; `kiln check` warns at the old name's `file:line:col` naming the new;
//! `kiln check --fix` rewrites exactly those names and the result loads with no warning. And
//! durations with their unit where a script takes a timeout.

use crate::common::*;
use kiln::Host;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// The old words in a comment and a string: `--fix` must leave both alone.
const DECOY: &str = "// old words: returns ask env resource resource_blob form_request max_tool_iterations output timeout_ms\n\
let decoy = \"x.returns(1) ask([]) .env([]) form_request(a, b) max_tool_iterations(2) .output(\\\"y\\\") http_get(u, #{ timeout_ms: 1 })\";\n";

/// One rename: a script with the old spelling, the text to replace to get the new one, where
/// the warning points, and how to see that both behave the same.
struct Case {
    script: &'static str,
    old: &'static str,
    new: &'static str,
    /// Line and column of the old name in `script` (after [`DECOY`]'s two lines).
    at: (usize, usize),
    /// The spelling the warning names, as `kiln check` writes it.
    says: &'static str,
    same: fn(&Host, &Host),
}

fn host(dir: &std::path::Path) -> Arc<Host> {
    Host::builder()
        .scripts(dir)
        .workspace(dir)
        .stdlib(false)
        .mount_declared(false)
        .build()
        .expect("host")
}

/// Both hosts' policies hold tool `t` for a person with the same reason ("it matters").
fn same_verdict(a: &Host, b: &Host) {
    assert!(
        outcome(a, "t").contains("it matters"),
        "{}",
        outcome(a, "t")
    );
    assert_eq!(outcome(a, "t"), outcome(b, "t"));
}

fn outcome(h: &Host, tool: &str) -> String {
    format!("{:?}", call(h, tool, json!({}), &["elicitation"]).result)
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            script: "tool(\"t\").returns(#{ sum: \"integer\" }).handler(|a| #{ sum: \"many\" });\n",
            old: ".returns(",
            new: ".output(",
            at: (3, 11),
            says: "`.returns(...)` is deprecated: write `.output(...)`",
            same: |a, b| {
                assert_eq!(
                    a.schemas(kiln::model::Format::Intermediate),
                    b.schemas(kiln::model::Format::Intermediate)
                );
                assert!(
                    outcome(a, "t").contains("invalid_output"),
                    "{}",
                    outcome(a, "t")
                );
                assert_eq!(outcome(a, "t"), outcome(b, "t"));
            },
        },
        Case {
            script: "agent(\"a\").provider(\"script\").planner(|m, t| \"hi\").max_tool_iterations(3);\n",
            old: "max_tool_iterations",
            new: "max_iterations",
            at: (3, 52),
            says: "`.max_tool_iterations(...)` is deprecated: write `.max_iterations(...)`",
            same: |a, b| {
                let limit = |h: &Host| h.registry().agent("a").expect("a").max_iterations;
                assert_eq!(limit(a), 3);
                assert_eq!(limit(a), limit(b));
            },
        },
        Case {
            script: "agent(\"a\").provider(\"script\").planner(|m, t| \"hi\")\n    .capabilities([\"net\"]).ask([\"net\"]);\n",
            old: ".ask(",
            new: ".needs_approval(",
            at: (4, 28),
            says: "`.ask(...)` is deprecated: write `.needs_approval(...)`",
            same: |a, b| {
                let grants = |h: &Host| format!("{:?}", h.registry().agent("a").expect("a").grants);
                assert!(grants(a).contains("NeedsApproval"), "{}", grants(a));
                assert_eq!(grants(a), grants(b));
            },
        },
        Case {
            script: "tool(\"t\").handler(|a| 1);\npolicy(\"p\").applies_to([\"t\"]).check(|c, ctx| ask(\"it matters\"));\n",
            old: "ask(\"it",
            new: "require_approval(\"it",
            at: (4, 46),
            says: "`ask(...)` is deprecated: write `require_approval(...)`",
            same: same_verdict,
        },
        // The policy verdict, apart from an agent's `.needs_approval([...])`.
        Case {
            script: "tool(\"t\").handler(|a| 1);\npolicy(\"p\").applies_to([\"t\"]).check(|c, ctx| needs_approval(\"it matters\"));\n",
            old: "needs_approval(\"it",
            new: "require_approval(\"it",
            at: (4, 46),
            says: "`needs_approval(...)` is deprecated: write `require_approval(...)`",
            same: same_verdict,
        },
        Case {
            script: "tool(\"t\").handler(|a| resource(\"notes://a\", \"hello\", \"text/plain\"));\n",
            old: "resource(",
            new: "resource_block(",
            at: (3, 23),
            says: "`resource(...)` is deprecated: write `resource_block(...)`",
            same: |a, b| {
                assert!(outcome(a, "t").contains("hello"), "{}", outcome(a, "t"));
                assert_eq!(outcome(a, "t"), outcome(b, "t"));
            },
        },
        Case {
            script: "tool(\"t\").handler(|a| resource_blob(\"notes://b\", \"AAEC\", \"application/x\"));\n",
            old: "resource_blob(",
            new: "resource_blob_block(",
            at: (3, 23),
            says: "`resource_blob(...)` is deprecated: write `resource_blob_block(...)`",
            same: |a, b| {
                assert!(outcome(a, "t").contains("AAEC"), "{}", outcome(a, "t"));
                assert_eq!(outcome(a, "t"), outcome(b, "t"));
            },
        },
        Case {
            script: "mcp_server(\"m\").command(\"true\").env([\"KILN_RENAME_VAR\"]);\n",
            old: ".env(",
            new: ".pass_env(",
            at: (3, 33),
            says: "`.env(...)` is deprecated: write `.pass_env(...)`",
            same: |a, b| {
                let env = |h: &Host| {
                    let reg = h.registry();
                    reg.mcp_servers().map(|s| s.env.clone()).collect::<Vec<_>>()
                };
                assert_eq!(env(a), vec![vec!["KILN_RENAME_VAR".to_string()]]);
                assert_eq!(env(a), env(b));
            },
        },
        Case {
            script: "tool(\"t\").handler(|a| form_request(\"Your name?\", #{ name: \"string\" }));\n",
            old: "form_request(",
            new: "elicit_request(",
            at: (3, 23),
            says: "`form_request(...)` is deprecated: write `elicit_request(...)`",
            same: |a, b| {
                assert!(
                    outcome(a, "t").contains("Your name?"),
                    "{}",
                    outcome(a, "t")
                );
                assert_eq!(outcome(a, "t"), outcome(b, "t"));
            },
        },
        // A tool's `.output(...)` (a schema) in the same file is never taken for the pipeline's.
        Case {
            script: "tool(\"t\").param(\"x\", \"string\").output(\"string\").handler(|a| a.x);\n\
pipeline(\"p\").input(\"x\", \"string\").compute(\"y\", [\"x\"], \"t\").output(\"y\");\n",
            old: ".output(\"y\")",
            new: ".result(\"y\")",
            at: (4, 61),
            says: "`.output(...)` is deprecated: write `.result(...)`",
            same: |a, b| {
                let outputs = |h: &Host| {
                    let p = h.registry().pipeline("p").expect("p");
                    (p.spec.outputs.iter())
                        .map(|o| o.name.clone())
                        .collect::<Vec<_>>()
                };
                assert_eq!(outputs(a), vec!["y".to_string()]);
                assert_eq!(outputs(a), outputs(b));
            },
        },
        // An options key: `timeout` reads a bare number as milliseconds, as `timeout_ms` did.
        Case {
            script: "tool(\"t\").param(\"u\", \"string\").requires(\"net\").timeout(\"60s\").handler(|a| http_get(a.u, #{ timeout_ms: 300 }).status);\n",
            old: "timeout_ms: 300",
            new: "timeout: \"300ms\"",
            at: (3, 92),
            says: "`http_get(...)`'s option `timeout_ms` is deprecated: write `timeout` (a duration with its unit: \"5s\")",
            same: |a, b| {
                // A listener nobody accepts on: each fetch ends at its own 300 ms timeout.
                let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
                let url = format!(
                    "http://127.0.0.1:{}/",
                    silent.local_addr().expect("addr").port()
                );
                for h in [a, b] {
                    let started = std::time::Instant::now();
                    let o = call(h, "t", json!({ "u": url }), &["net:127.0.0.1"]);
                    let (kind, msg) = failure(&o);
                    assert_ne!(kind, "deadline", "{msg}");
                    assert!(started.elapsed() < Duration::from_secs(5), "{msg}");
                }
            },
        },
    ]
}

#[test]
fn each_old_spelling_loads_behaves_the_same_and_kiln_check_warns_with_the_new_one() {
    for case in cases() {
        let old = format!("{DECOY}{}", case.script);
        let new = format!("{DECOY}{}", case.script.replacen(case.old, case.new, 1));
        let (a, b) = (
            Scripts::new(&[("t.rhai", &old)]),
            Scripts::new(&[("t.rhai", &new)]),
        );
        let (ha, hb) = (host(a.path()), host(b.path()));
        assert!(a.errors(&ha).is_empty(), "{:?}", a.errors(&ha));
        assert!(b.errors(&hb).is_empty(), "{:?}", b.errors(&hb));
        (case.same)(&ha, &hb);

        let check = kiln(&["check", "--no-stdlib", "--scripts", "."], a.path());
        assert!(check.status.success(), "{}", stderr(&check));
        let (line, col) = case.at;
        let warned = format!("t.rhai:{line}:{col}: {}", case.says);
        assert!(
            stderr(&check).contains(&warned),
            "{warned}\n{}",
            stderr(&check)
        );
        assert_eq!(stderr(&check).matches("deprecated").count(), 1);
        let clean = kiln(&["check", "--no-stdlib", "--scripts", "."], b.path());
        assert!(!stderr(&clean).contains("warning"), "{}", stderr(&clean));
    }
}

#[test]
fn kiln_check_fix_rewrites_only_the_old_names_and_the_result_loads_with_no_warning() {
    for case in cases() {
        let old = format!("{DECOY}{}", case.script);
        let s = Scripts::new(&[("t.rhai", &old)]);
        let fixed = kiln(
            &["check", "--fix", "--no-stdlib", "--scripts", "."],
            s.path(),
        );
        assert!(fixed.status.success(), "{}", stderr(&fixed));
        let (line, col) = case.at;
        assert!(
            stdout(&fixed).contains(&format!("t.rhai:{line}:{col}: ")),
            "{}",
            stdout(&fixed)
        );
        assert!(!stderr(&fixed).contains("warning"), "{}", stderr(&fixed));
        let text = std::fs::read_to_string(s.path().join("t.rhai")).expect("the script");
        let new = format!("{DECOY}{}", case.script.replacen(case.old, case.new, 1));
        assert_eq!(text, new);
        let again = kiln(&["check", "--no-stdlib", "--scripts", "."], s.path());
        assert!(again.status.success(), "{}", stderr(&again));
        assert!(!stderr(&again).contains("warning"), "{}", stderr(&again));
    }
}

#[test]
fn every_example_and_the_stdlib_use_the_new_names() {
    let roots = [
        "examples",
        "crates/script/stdlib",
        "src/cli/authoring/init",
        "scripts",
    ];
    for root in roots {
        let scripts = rhai_files(&repo().join(root));
        assert!(!scripts.is_empty(), "no .rhai file under {root}");
        for path in scripts {
            let text = std::fs::read_to_string(&path).expect("a script");
            let shown = path.to_string_lossy();
            let found = kiln_script::renames::warnings(&shown, &text);
            assert!(found.is_empty(), "{found:?}");
        }
    }
}

/// Every `.rhai` file under `dir`, in nested folders too.
fn rhai_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).expect("a folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "rhai") {
                out.push(path);
            }
        }
    }
    out
}

#[test]
fn the_script_walk_reaches_nested_folders() {
    let dir = tempfile::tempdir().expect("tempdir");
    let deep = dir.path().join("a/b");
    std::fs::create_dir_all(&deep).expect("mkdir");
    std::fs::write(deep.join("x.rhai"), "").expect("write");
    std::fs::write(dir.path().join("y.txt"), "").expect("write");
    assert_eq!(rhai_files(dir.path()), vec![deep.join("x.rhai")]);
}

#[test]
fn a_timeout_is_milliseconds_or_a_duration_with_its_unit() {
    let (s, h) = host_with(
        r#"tool("bare").timeout(1500).handler(|a| 1);
tool("secs").timeout("2s").handler(|a| 1);
tool("millis").timeout("250ms").handler(|a| 1);
tool("mins").timeout("2m").handler(|a| 1);
agent("a").provider("script").planner(|m, t| "hi").code_mode(#{ timeout: "5s" });
pipeline("p").input("x", "string").compute("y", ["x"], "bare").result("y").timeout("3m");
"#,
    );
    assert!(s.errors(&h).is_empty(), "{:?}", s.errors(&h));
    let reg = h.registry();
    let timeout = |name: &str| reg.find(name).expect(name).timeout;
    assert_eq!(timeout("bare"), Duration::from_millis(1500));
    assert_eq!(timeout("secs"), Duration::from_secs(2));
    assert_eq!(timeout("millis"), Duration::from_millis(250));
    assert_eq!(timeout("mins"), Duration::from_secs(120));
    let agent = reg.agent("a").expect("a");
    let mode = agent.code_mode.as_ref().expect("code mode");
    assert_eq!(mode.timeout, Duration::from_secs(5));
    let p = reg.pipelines().find(|p| p.name == "p").expect("p");
    assert_eq!(p.timeout, Duration::from_secs(180));
}

#[test]
fn a_timeout_that_is_not_a_duration_is_a_load_error_at_its_call() {
    let (s, h) = host_with(
        "tool(\"a\").timeout(\"30 parsecs\").handler(|a| 1);\ntool(\"b\").timeout(0).handler(|a| 1);\n",
    );
    let errors = s.errors(&h);
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("DIR/t.rhai:1:11: ") && e.contains("unknown unit")),
        "{errors:?}"
    );
    assert!(
        errors.iter().any(|e| e.starts_with("DIR/t.rhai:2:11: ")
            && e.contains("timeout must be a duration with its unit")),
        "{errors:?}"
    );
}

#[test]
fn a_rate_limit_period_and_a_sleep_take_a_duration_with_its_unit() {
    let (s, h) = host_with(
        r#"tool("secs").rate_limit(2, 60).handler(|a| 1);
tool("text").rate_limit(2, "1m").handler(|a| 1);
tool("waits").rate_limit(2, "1m", #{ wait: true }).handler(|a| 1);
tool("nap").handler(|a| { sleep("20ms"); "rested" });
tool("bad_nap").handler(|a| { sleep("20 winks"); "rested" });
mcp_server("m").command("true").rate_limit(5, "10s");
"#,
    );
    assert!(s.errors(&h).is_empty(), "{:?}", s.errors(&h));
    let reg = h.registry();
    let limit = |name: &str| format!("{:?}", reg.find(name).expect(name).rate_limit);
    assert_eq!(limit("secs"), limit("text"));
    assert_ne!(limit("text"), limit("waits"));
    let server = reg.mcp_servers().next().expect("m");
    let ten = kiln::tool::RateLimit::new(5, Duration::from_secs(10));
    assert_eq!(
        format!("{:?}", server.rate_limit),
        format!("{:?}", Some(ten))
    );
    assert_eq!(
        call(&h, "nap", json!({}), &[]).result.expect("rested"),
        "rested"
    );
    let bad = call(&h, "bad_nap", json!({}), &[])
        .result
        .expect_err("a bad duration");
    let detail = bad.detail.unwrap_or_default();
    assert!(detail.contains("unknown unit"), "{detail}");
}

/// A script in the spellings of the release before (bare milliseconds where a duration goes):
/// `kiln check` warns at each number, `kiln check --fix` writes each with its unit, and the
/// fixed script loads with the same deadlines and no warning.
#[test]
fn bare_milliseconds_are_warned_and_written_with_their_unit_by_kiln_check_fix() {
    let today = r#"tool("slow").param("u", "string").requires("net").timeout(5000)
    .handler(|a| http_get(a.u, #{ timeout: 1500 }).status);
tool("quick").timeout(250).handler(|a| 1);
agent("coder").provider("script").planner(|m, t| "hi").tools(["quick"]).code_mode(#{ timeout: 120000 });
pipeline("p").input("x", "string").compute("y", ["x"], "quick").result("y").timeout(90000);
"#;
    let s = Scripts::new(&[("t.rhai", today)]);
    let before = host(s.path());
    assert!(s.errors(&before).is_empty(), "{:?}", s.errors(&before));
    let check = kiln(&["check", "--no-stdlib", "--scripts", "."], s.path());
    assert!(check.status.success(), "{}", stderr(&check));
    for (at, says) in [
        (
            "t.rhai:1:59: ",
            "`.timeout(5000)` is deprecated: write `.timeout(\"5s\")`",
        ),
        (
            "t.rhai:2:44: ",
            "`http_get(...)`'s option `timeout: 1500` is deprecated: write `timeout: \"1500ms\"`",
        ),
        (
            "t.rhai:3:23: ",
            "`.timeout(250)` is deprecated: write `.timeout(\"250ms\")`",
        ),
        (
            "t.rhai:4:95: ",
            "`.code_mode(...)`'s option `timeout: 120000` is deprecated: write `timeout: \"2m\"`",
        ),
        (
            "t.rhai:5:85: ",
            "`.timeout(90000)` is deprecated: write `.timeout(\"90s\")`",
        ),
    ] {
        let line = format!("{at}{says}");
        let err = stderr(&check);
        assert!(
            err.lines().any(|l| l.contains(at) && l.contains(says)),
            "{line}\n{err}"
        );
    }
    let fixed = kiln(
        &["check", "--fix", "--no-stdlib", "--scripts", "."],
        s.path(),
    );
    assert!(fixed.status.success(), "{}", stderr(&fixed));
    // Each rewrite is told with the number as written and the duration written for it.
    assert!(
        stdout(&fixed).contains("t.rhai:1:59: 5000 -> \"5s\""),
        "{}",
        stdout(&fixed)
    );
    let text = std::fs::read_to_string(s.path().join("t.rhai")).expect("the script");
    let want = today
        .replacen(".timeout(5000)", ".timeout(\"5s\")", 1)
        .replacen("timeout: 1500", "timeout: \"1500ms\"", 1)
        .replacen(".timeout(250)", ".timeout(\"250ms\")", 1)
        .replacen("timeout: 120000", "timeout: \"2m\"", 1)
        .replacen(".timeout(90000)", ".timeout(\"90s\")", 1);
    assert_eq!(text, want);
    let again = kiln(&["check", "--no-stdlib", "--scripts", "."], s.path());
    assert!(!stderr(&again).contains("warning"), "{}", stderr(&again));
    // The same deadlines, read from the unit now written.
    let after = host(s.path());
    let (old, new) = (before.registry(), after.registry());
    for tool in ["slow", "quick"] {
        let t = |r: &kiln::tool::Registry| r.find(tool).expect(tool).timeout;
        assert_eq!(t(&old), t(&new), "{tool}");
    }
    assert_eq!(
        new.find("quick").expect("quick").timeout,
        Duration::from_millis(250)
    );
    let mode = |r: &kiln::tool::Registry| r.agent("coder").expect("coder").code_mode.clone();
    assert_eq!(
        mode(&new).expect("code mode").timeout,
        Duration::from_secs(120)
    );
    let pipeline = new.pipelines().find(|p| p.name == "p").expect("p").timeout;
    assert_eq!(pipeline, Duration::from_secs(90));
}

/// A test file's `call_tool` (which returns `#{ success, result | error }`) is warned by
/// `kiln check` and rewritten to `try_call_tool` by `kiln check --fix`; a script's `call_tool`
/// (which returns the value) is left alone; `kiln test` passes before and after.
#[test]
fn a_test_files_call_tool_is_warned_and_fixed_to_try_call_tool() {
    let tool = "tool(\"add\").param(\"a\", \"int\").handler(|x| x.a + 1);\n\
                tool(\"twice\").param(\"a\", \"int\").handler(|x| call_tool(\"add\", #{ a: x.a }) * 2);\n";
    let test = "test(\"add\", || {\n    let r = call_tool(\"add\", #{ a: 1 });\n    assert_eq(r.result, 2);\n    assert_eq(try_call_tool(\"twice\", #{ a: 1 }).result, 4);\n});\n";
    let s = Scripts::new(&[("t.rhai", tool), ("t.test.rhai", test)]);
    let before = kiln(&["test", "--no-stdlib", "--scripts", ".", "."], s.path());
    assert!(
        before.status.success(),
        "{}{}",
        stdout(&before),
        stderr(&before)
    );
    let check = kiln(&["check", "--no-stdlib", "--scripts", "."], s.path());
    let err = stderr(&check);
    assert!(
        err.contains(
            "t.test.rhai:2:13: `call_tool(...)` is deprecated: write `try_call_tool(...)`"
        ),
        "{err}"
    );
    assert_eq!(
        err.matches("deprecated").count(),
        1,
        "the script's call_tool is its own: {err}"
    );
    let fixed = kiln(
        &["check", "--fix", "--no-stdlib", "--scripts", "."],
        s.path(),
    );
    assert!(fixed.status.success(), "{}", stderr(&fixed));
    let text = std::fs::read_to_string(s.path().join("t.test.rhai")).expect("the test file");
    assert_eq!(
        text,
        test.replacen("call_tool(\"add\"", "try_call_tool(\"add\"", 1)
    );
    let script = std::fs::read_to_string(s.path().join("t.rhai")).expect("the script");
    assert_eq!(script, tool);
    let after = kiln(&["test", "--no-stdlib", "--scripts", ".", "."], s.path());
    assert!(
        after.status.success(),
        "{}{}",
        stdout(&after),
        stderr(&after)
    );
    let again = kiln(&["check", "--no-stdlib", "--scripts", "."], s.path());
    assert!(!stderr(&again).contains("warning"), "{}", stderr(&again));
}
