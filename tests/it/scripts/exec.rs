//! Validation, execution, results, failures, retries and the capability guard.

use crate::common::*;
use serde_json::json;

const TOOLS: &str = r#"
tool("v")
    .param("to", "string", #{ format: "email" })
    .param("site", "string", #{ format: "uri", optional: true })
    .param("day", "string", #{ format: "date", optional: true })
    .param("sku", "string", #{ pattern: "^SKU-[0-9]+$", optional: true })
    .param("size", "string", #{ "enum": ["S", "L"], optional: true })
    .param("n", "integer", #{ min: 1, max: 10, optional: true })
    .param("prefs", "object", #{ optional: true, properties: #{ size: #{ type: "string", "enum": ["S", "L"] } } })
    .param("lines", "array", #{ optional: true, items: #{ type: "object", properties: #{ sku: #{ type: "string" }, qty: #{ type: "integer", min: 1 } } } })
    .param("Content-Type", "string", #{ optional: true })
    .handler(|args| if args["Content-Type"] != () { args["Content-Type"] } else { "ok" });

tool("boom").handler(|args| { let x = [1]; x[5] });
tool("visible").handler(|args| throw tool_error("no product SKU-9"));
tool("thrown_string").handler(|args| throw "secret detail");
tool("ctx_echo").handler(|args, ctx| #{ actor: ctx.actor_id, tenant: ctx.context.tenant, agent: ctx.agent, run: ctx.run_id, caps: ctx.capabilities, args: args });
tool("counter").handler(|args, ctx| { ctx.state.n = (ctx.state.n ?? 0) + 1; ctx.state.n });
tool("flaky").retries(2).handler(|args| {
    let n = (store_get("t", "tries") ?? 0) + 1;
    store_set("t", "tries", n);
    if n < 3 { throw "transient"; }
    n
}).requires("store");
tool("send_email").requires("email_send").handler(|args| #{ sent: true });
tool("named").handler("named_handler");
fn named_handler(args, ctx) { "named" }
"#;

#[test]
fn valid_arguments_pass_and_reach_the_handler() {
    let (_s, host) = host_with(TOOLS);
    let o = call(
        &host,
        "v",
        json!({"to": "a@b.co", "site": "https://x.org/a", "day": "2026-11-29", "sku": "SKU-12", "size": "S", "n": 10,
        "prefs": {"size": "L"}, "lines": [{"sku": "SKU-1", "qty": 2}], "Content-Type": "text/plain"}),
        &[],
    );
    assert_eq!(o.result.as_ref().ok(), Some(&json!("text/plain")));
    let j = o.to_json(false);
    assert_eq!(j["success"], json!(true));
    assert!(j["duration_ms"].is_number());
}

#[test]
fn each_violation_is_listed_with_its_argument_path() {
    let (_s, host) = host_with(TOOLS);
    let cases = [
        (
            json!({"to": "invalid-email"}),
            "/to: \"invalid-email\" is not a \"email\"",
        ),
        (json!({"to": "a@b.co", "site": "not a uri"}), "/site:"),
        (json!({"to": "a@b.co", "day": "2026-13-45"}), "/day:"),
        (
            json!({"to": "a@b.co", "sku": "SKU-x"}),
            "/sku: \"SKU-x\" does not match \"^SKU-[0-9]+$\"",
        ),
        (json!({"to": "a@b.co", "size": "XL"}), "/size:"),
        (
            json!({"to": "a@b.co", "n": 11}),
            "/n: 11 is greater than the maximum of 10",
        ),
        (
            json!({"to": "a@b.co", "n": 0}),
            "/n: 0 is less than the minimum of 1",
        ),
        (
            json!({"to": "a@b.co", "n": "3"}),
            "/n: \"3\" is not of type \"integer\"",
        ),
        (
            json!({"to": "a@b.co", "prefs": {"size": "M"}}),
            "/prefs/size:",
        ),
        (
            json!({"to": "a@b.co", "prefs": {}}),
            "/prefs: \"size\" is a required property",
        ),
        (
            json!({"to": "a@b.co", "lines": [{"sku": "a", "qty": 0}]}),
            "/lines/0/qty:",
        ),
        (
            json!({"to": "a@b.co", "extra": 1}),
            "/: Additional properties are not allowed ('extra' was unexpected)",
        ),
        (json!({}), "/: \"to\" is a required property"),
        (json!([1, 2]), "/: [1,2] is not of type \"object\""),
    ];
    for (args, want) in cases {
        let o = call(&host, "v", args.clone(), &[]);
        let (kind, msg) = failure(&o);
        assert_eq!(kind, "invalid_arguments");
        assert!(
            msg.contains(want),
            "args {args}: wanted {want:?} in {msg:?}"
        );
    }
    let (_, msg) = failure(&call(&host, "v", json!({"to": "bad", "n": 99}), &[]));
    assert!(
        msg.contains("/to:") && msg.contains("/n:"),
        "every violation listed: {msg}"
    );
}

#[test]
fn tool_error_is_visible_and_other_failures_are_sanitized() {
    let (_s, host) = host_with(TOOLS);
    let o = call(&host, "visible", json!({}), &[]);
    assert_eq!(
        failure(&o),
        ("tool_error".into(), "no product SKU-9".into())
    );
    for tool in ["boom", "thrown_string"] {
        let o = call(&host, tool, json!({}), &[]);
        assert_eq!(
            failure(&o),
            ("runtime".into(), "Tool failed (runtime)".into())
        );
        let j = o.to_json(true);
        assert!(
            j["error"]["detail"]
                .as_str()
                .is_some_and(|d| d.contains("t.rhai")),
            "detail for the CLI: {j}"
        );
        assert!(o.to_json(false)["error"].get("detail").is_none());
        assert!(!o.model_text().contains("secret"));
    }
}

#[test]
fn retries_rerun_a_failed_handler() {
    let (_s, host) = host_with(TOOLS);
    let o = call(&host, "flaky", json!({}), &["store"]);
    assert_eq!(o.result.as_ref().ok(), Some(&json!(3)));
    assert_eq!(o.attempts, 3);
}

#[test]
fn capability_guard_runs_before_the_handler() {
    let (_s, host) = host_with(TOOLS);
    let o = call(&host, "send_email", json!({}), &[]);
    assert_eq!(
        failure(&o),
        (
            "capability".into(),
            "Tool \"send_email\" requires capabilities [email_send] but the caller only has []"
                .into()
        )
    );
    assert_eq!(o.attempts, 0);
    assert!(call(&host, "send_email", json!({}), &["email_send"]).is_ok());
}

#[test]
fn handler_may_be_a_named_function() {
    let (_s, host) = host_with(TOOLS);
    assert_eq!(
        call(&host, "named", json!({}), &[]).result.ok(),
        Some(json!("named"))
    );
}

#[test]
fn stdlib_tools_work() {
    let (_s, host) = host_with("");
    let ok = |tool: &str, args| call(&host, tool, args, &["store"]).result.expect("ok");
    assert_eq!(
        ok("calculator", json!({"operation": "add", "a": 2, "b": 3})),
        json!(5.0)
    );
    assert_eq!(
        ok("calculator", json!({"expression": "2 * (3 + 4) ^ 2"})),
        json!(98.0)
    );
    let o = call(
        &host,
        "calculator",
        json!({"operation": "divide", "a": 1, "b": 0}),
        &[],
    );
    assert_eq!(
        failure(&o),
        ("tool_error".into(), "division by zero".into())
    );
    let o = call(
        &host,
        "calculator",
        json!({"expression": "4 / (2 - 2)"}),
        &[],
    );
    assert_eq!(
        failure(&o),
        ("tool_error".into(), "division by zero".into())
    );
    assert_eq!(
        ok(
            "string_manipulation",
            json!({"operation": "uppercase", "text": "abc"})
        ),
        json!("ABC")
    );
    assert_eq!(
        ok(
            "string_manipulation",
            json!({"operation": "reverse", "text": "abc"})
        ),
        json!("cba")
    );
    assert_eq!(
        ok(
            "string_manipulation",
            json!({"operation": "length", "text": "héllo"})
        ),
        json!(5)
    );
    assert_eq!(
        ok(
            "string_manipulation",
            json!({"operation": "trim", "text": "  a "})
        ),
        json!("a")
    );
    assert_eq!(
        ok(
            "string_manipulation",
            json!({"operation": "replace", "text": "a-b-c", "find": "-", "replace_with": "+"})
        ),
        json!("a+b+c")
    );
    ok(
        "storage",
        json!({"operation": "set", "key": "k", "value": "v"}),
    );
    assert_eq!(
        ok("storage", json!({"operation": "get", "key": "k"})),
        json!("v")
    );
    assert_eq!(ok("storage", json!({"operation": "list"})), json!(["k"]));
    assert_eq!(
        ok("storage", json!({"operation": "delete", "key": "k"})),
        json!({"deleted": true})
    );
    assert!(
        ok("current_time", json!({}))["utc"]
            .as_str()
            .is_some_and(|s| s.ends_with('Z'))
    );
    let o = call(&host, "storage", json!({"operation": "list"}), &[]);
    assert_eq!(failure(&o).0, "capability");
}

/// Tools with `.retries(3)` that each count their runs in the store, then fail one way.
const RETRIED: &str = r#"
fn runs(name) { let n = (store_get("runs", name) ?? 0) + 1; store_set("runs", name, n); n }
fn deep(n) { deep(n + 1) }
tool("runtime").retries(3).requires("store").handler(|a| { runs("runtime"); throw "transient"; });
tool("recovers").retries(3).requires("store").handler(|a| { if runs("recovers") < 3 { throw "transient"; } "ok" });
tool("tool_error").retries(3).requires("store").handler(|a| { runs("tool_error"); throw tool_error("no such order"); });
tool("denied").retries(3).requires("store").handler(|a| { runs("denied"); env("KILN_UNDECLARED") });
tool("approval").retries(3).requires("store").requires("fs.write").handler(|a| { runs("approval"); write_file("x.txt", "x"); "written" });
tool("deadline").retries(3).timeout("50ms").requires("store").handler(|a| { runs("deadline"); loop {} });
tool("limit").retries(3).requires("store").handler(|a| { runs("limit"); deep(0) });
tool("invalid").retries(3).param("n", "integer").requires("store").handler(|a| { runs("invalid"); a.n });
tool("cancelled").retries(3).requires("store").handler(|a| { runs("cancelled"); loop {} });
tool("count").requires("store").param("name", "string").handler(|a| store_get("runs", a.name) ?? 0);
"#;

#[test]
fn retries_rerun_only_failures_that_can_pass_on_a_second_try() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    let s = Scripts::new(&[("retried.rhai", RETRIED)]);
    let asked = Arc::new(AtomicU32::new(0));
    let host = {
        let asked = asked.clone();
        kiln::Host::builder()
            .scripts(s.path())
            .workspace(s.path())
            .approver(move |_, _| {
                asked.fetch_add(1, Ordering::SeqCst);
                false
            })
            .build()
            .expect("host")
    };
    assert!(s.errors(&host).is_empty(), "{:?}", s.errors(&host));
    let mut grants = kiln::Grants::parse(&["store", "fs.write"]).expect("caps");
    grants.mark_ask(&["fs.write"]);
    let opts = kiln::CallOptions {
        grants: Some(grants),
        ..kiln::CallOptions::default()
    };
    let run = |tool: &str, args: serde_json::Value, opts: &kiln::CallOptions| {
        host.call_blocking(tool, args, opts.clone()).expect("tool")
    };
    let runs = |name: &str| {
        run("count", json!({"name": name}), &opts)
            .result
            .expect("count runs")
    };
    // (tool, failure kind or None for success, handler runs, attempts)
    let table = [
        ("runtime", Some("runtime"), 4, 4),
        ("recovers", None, 3, 3),
        ("tool_error", Some("tool_error"), 1, 1),
        ("denied", Some("denied"), 1, 1),
        // Asked before the handler runs (its `ask` grant), so a refusal runs nothing.
        ("approval", Some("denied"), 0, 0),
        ("deadline", Some("deadline"), 1, 1),
        ("limit", Some("limit"), 1, 1),
        ("invalid", Some("invalid_arguments"), 0, 0),
    ];
    for (tool, kind, ran, attempts) in table {
        let o = run(tool, json!({}), &opts);
        match kind {
            Some(k) => assert_eq!(failure(&o).0, k, "{tool}: {}", o.to_json(true)),
            None => assert!(o.is_ok(), "{tool}: {:?}", o.to_json(true)),
        }
        assert_eq!(runs(tool), json!(ran), "{tool}: handler runs");
        assert_eq!(o.attempts, attempts, "{tool}: attempts");
    }
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "a refused approval is asked once"
    );

    let cancel = kiln::CancellationToken::new();
    cancel.cancel();
    let cancelled = kiln::CallOptions {
        cancel: Some(cancel),
        ..opts.clone()
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let o = rt
        .block_on(host.call("cancelled", json!({}), cancelled))
        .expect("tool");
    assert_eq!(failure(&o).0, "cancelled");
    assert_eq!(o.attempts, 1, "a cancelled call is not retried");
}
