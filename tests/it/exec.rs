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
            "Tool \"send_email\" requires capabilities [email_send] but agent only has []".into()
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
