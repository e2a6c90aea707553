//! The sandbox: deadlines, limits, imports, eval, print, gated host functions.

use crate::common::*;
use serde_json::json;
use std::time::{Duration, Instant};

const BOMBS: &str = r#"
tool("spin").timeout("300ms").handler(|args| { loop { } });
tool("sleepy").timeout("200ms").handler(|args| { sleep(30); 1 });
tool("recurse").timeout("10m").handler(|args| down(0));
fn down(n) { down(n + 1) }
tool("strings").timeout("10m").handler(|args| { let s = "x"; loop { s += s; } });
tool("arrays").timeout("10m").handler(|args| { let a = [1]; loop { a += a; } });
tool("maps").timeout("10m").handler(|args| { let m = #{}; let i = 0; loop { m[`k${i}`] = i; i += 1; } });
tool("ok").handler(|args| "still here");
tool("printer").handler(|args| { for i in 0..1000 { print(`spam ${i}`); debug(i); } "printed" });
tool("sneaky_store").handler(|args| store_get("x", "y"));
tool("scoped_store").param("ns", "string").requires("store").handler(|args| store_get(args.ns, "k"));
tool("importer").handler(|args| { import "../outside" as o; o::x });
"#;

#[test]
fn an_infinite_loop_stops_at_its_deadline_and_the_host_keeps_serving() {
    // No operations limit, so only the deadline can stop the loop.
    let s = Scripts::new(&[("t.rhai", BOMBS)]);
    let host = s.host_with_limits(kiln::tool::Limits {
        max_operations: 0,
        ..Default::default()
    });
    let started = Instant::now();
    let o = call(&host, "spin", json!({}), &[]);
    assert_eq!(
        failure(&o),
        ("deadline".into(), "Tool failed (deadline)".into())
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stopped near its 300 ms deadline"
    );
    let o = call(&host, "sleepy", json!({}), &[]);
    assert_eq!(failure(&o).0, "deadline", "sleep honours the deadline");
    assert_eq!(
        call(&host, "ok", json!({}), &[]).result.ok(),
        Some(json!("still here"))
    );
}

#[test]
fn recursion_and_growth_bombs_stop_at_their_limits() {
    let (_s, host) = host_with(BOMBS);
    for tool in ["recurse", "strings", "arrays", "maps"] {
        let o = call(&host, tool, json!({}), &[]);
        let (kind, msg) = failure(&o);
        assert_eq!(kind, "limit", "{tool}: {:?}", o.to_json(true));
        assert_eq!(msg, "Tool failed (limit)");
    }
    assert!(call(&host, "ok", json!({}), &[]).is_ok());
}

#[test]
fn concurrent_bombs_do_not_stop_other_calls() {
    let s = Scripts::new(&[("t.rhai", BOMBS)]);
    let host = s.host_with_limits(kiln::tool::Limits {
        max_operations: 0,
        ..Default::default()
    });
    let host = std::sync::Arc::new(host);
    let spinners: Vec<_> = (0..3)
        .map(|_| {
            let h = host.clone();
            std::thread::spawn(move || call(&h, "spin", json!({}), &[]))
        })
        .collect();
    for _ in 0..20 {
        assert!(call(&host, "ok", json!({}), &[]).is_ok());
    }
    for s in spinners {
        assert_eq!(failure(&s.join().expect("thread")).0, "deadline");
    }
}

#[test]
fn imports_outside_the_scripts_folder_and_eval_fail() {
    let (_s, host) = host_with(BOMBS);
    let o = call(&host, "importer", json!({}), &[]);
    let j = o.to_json(true);
    assert!(
        j["error"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("outside the scripts folders")),
        "{j}"
    );
    let (s, host) = host_with("tool(\"e\").handler(|a| eval(\"1 + 1\"));");
    let errs = s.errors(&host);
    assert!(
        errs.iter()
            .any(|e| e.starts_with("DIR/t.rhai:1:") && e.contains("eval")),
        "{errs:?}"
    );
    let (s, host) = host_with("import \"/etc/passwd\" as p;\ntool(\"x\").handler(|a| 1);");
    assert!(
        s.errors(&host)
            .iter()
            .any(|e| e.contains("outside the scripts folders")),
        "{:?}",
        s.errors(&host)
    );
}

#[test]
fn imports_inside_the_scripts_folder_work() {
    let s = Scripts::new(&[
        ("helpers.rhai", "fn double(x) { x * 2 }"),
        (
            "main.rhai",
            "tool(\"dbl\").param(\"n\", \"integer\").handler(|a| { import \"helpers\" as h; h::double(a.n) });",
        ),
    ]);
    let host = s.host();
    assert_eq!(
        call(&host, "dbl", json!({"n": 21}), &[]).result.ok(),
        Some(json!(42))
    );
}

#[test]
fn gated_host_functions_need_declaration_grant_and_scope() {
    let (_s, host) = host_with(BOMBS);
    let o = call(&host, "sneaky_store", json!({}), &["store"]);
    let (kind, msg) = failure(&o);
    assert_eq!(kind, "denied");
    assert!(
        msg.contains(
            "store_get(\"x\") refused: tool \"sneaky_store\" does not declare capability \"store\""
        ),
        "{msg}"
    );
    let (kind, msg) = failure(&call(
        &host,
        "scoped_store",
        json!({"ns": "cache"}),
        &["store:other"],
    ));
    assert_eq!(kind, "denied");
    assert!(
        msg.contains("was not granted \"store\" covering \"cache\""),
        "{msg}"
    );
    assert!(
        call(
            &host,
            "scoped_store",
            json!({"ns": "cache"}),
            &["store:cache"]
        )
        .is_ok()
    );
    assert!(call(&host, "scoped_store", json!({"ns": "cache"}), &["store"]).is_ok());
}

#[test]
fn print_does_not_reach_stdout() {
    let s = Scripts::new(&[("p.rhai", BOMBS)]);
    let out = kiln(
        &[
            "call",
            "printer",
            "--scripts",
            &s.path().display().to_string(),
        ],
        s.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        !text.contains("spam"),
        "stdout must hold only the result: {text}"
    );
    let v: serde_json::Value = serde_json::from_str(&text).expect("stdout is JSON");
    assert_eq!(v["result"], json!("printed"));
}
