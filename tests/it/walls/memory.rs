//! Sizes are checked before allocation: a call with the largest arguments a model may send
//! ends in a `limit` error, and the server under a memory limit stays up to answer the next.

use crate::common::*;
use crate::mcp::StdioMcp;
use serde_json::{Value, json};

/// The most a model's arguments may hold (kiln's 1 MiB cap on a call's arguments), less room
/// for the JSON around them.
const MAX_ARG: usize = 1024 * 1024 - 4096;

fn call(mcp: &mut StdioMcp, id: u32, name: &str, args: Value) -> Value {
    mcp.rpc(id, "tools/call", json!({"name": name, "arguments": args}))
}

fn text(reply: &Value) -> String {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn growing_built_ins_refuse_before_allocating_under_a_memory_limit() {
    let scripts = Scripts::new(&[(
        "grow.rhai",
        r#"
tool("grow_replace").param("text", "string").param("find", "string").param("by", "string")
    .handler(|a| { let t = a.text; t.replace(a.find, a.by); t.len() });
tool("grow_replace_char").param("text", "string").param("by", "string")
    .handler(|a| { let t = a.text; t.replace('a', a.by); t.len() });
tool("grow_pad").param("n", "integer").handler(|a| { let t = "x"; t.pad(a.n, "y"); t.len() });
tool("grow_array_pad").param("n", "integer").handler(|a| { let l = []; l.pad(a.n, "yyyyyyyy"); l.len() });
tool("grow_chars").param("text", "string").handler(|a| a.text.to_chars().len());
tool("grow_split").param("text", "string").handler(|a| a.text.split("a").len() + a.text.split('a').len());
tool("grow_json").param("text", "string").handler(|a| { let m = #{}; for i in 0..5000 { m[`k${i}`] = a.text; } json_encode(m).len() });
tool("grow_result").param("text", "string").handler(|a| { let m = #{}; for i in 0..5000 { m[`k${i}`] = a.text; } m });
tool("grow_blocks").param("text", "string").handler(|a| { let b = resource("test://x", a.text, "text/plain"); let l = []; for i in 0..5000 { l.push(b); } l });
"#,
    )]);
    // 1 GiB of address space: a 4 MiB string is fine, the hundreds of GB asked for are not.
    let mut mcp = StdioMcp::start_limited(scripts.path(), &["--scripts", "."], 1 << 30);
    let big_a = "a".repeat(MAX_ARG / 2);
    let big_b = "b".repeat(MAX_ARG / 2);
    let cases = [
        (
            "string_manipulation",
            json!({"operation": "replace", "text": big_a, "find": "a", "replace_with": big_b}),
        ),
        (
            "grow_replace",
            json!({"text": big_a, "find": "a", "by": big_b}),
        ),
        (
            "grow_replace",
            json!({"text": "a".repeat(100), "find": "", "by": big_b}),
        ),
        ("grow_replace_char", json!({"text": big_a, "by": big_b})),
        ("grow_pad", json!({"n": 1_000_000_000_000i64})),
        ("grow_array_pad", json!({"n": 1_000_000_000_000i64})),
        ("grow_chars", json!({"text": big_a})),
        ("grow_split", json!({"text": big_a})),
        ("grow_json", json!({"text": big_a})),
        ("grow_result", json!({"text": big_a})),
        ("grow_blocks", json!({"text": big_a})),
    ];
    for (i, (tool, args)) in cases.into_iter().enumerate() {
        let reply = call(&mut mcp, 10 + i as u32, tool, args);
        assert_eq!(reply["result"]["isError"], true, "{tool}: {reply}");
        let said = text(&reply);
        assert!(said.contains("limit"), "{tool}: {said}");
        // Still alive: the next request is answered.
        let ping = mcp.rpc(100 + i as u32, "ping", json!({}));
        assert!(
            ping.get("result").is_some(),
            "{tool}: the server died: {ping}"
        );
    }
}
