//! Errors as a door shows them to its caller: the failure kind and the message meant for them,
//! without what only the operator should see — absolute paths of scripts, the URLs kiln talks
//! to, Rust type paths, and tool failures' `detail`. Those stay in the server's log.

use regex::Regex;
use serde_json::Value;
use std::sync::OnceLock;

fn patterns() -> &'static [(Regex, &'static str); 3] {
    static P: OnceLock<[(Regex, &'static str); 3]> = OnceLock::new();
    P.get_or_init(|| {
        let re = |p: &str| Regex::new(p).unwrap_or_else(|e| panic!("built-in pattern {p}: {e}"));
        [
            // A URL (a provider's endpoint, an MCP server's).
            (re(r#"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>)\]]+"#), "<url>"),
            // An absolute path: only its file name is kept (`/srv/app/scripts/a.rhai:3:5`).
            (re(r#"(?:/[^/\s:"'()]+)+/([^/\s:"'()]+)"#), "$1"),
            // A Rust type path such as `kiln::script::host_fns::DeniedValue`.
            (
                re(r"\b[a-z_][a-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)+"),
                "<internal>",
            ),
        ]
    })
}

/// `text` with URLs, absolute paths and type paths taken out.
pub fn scrub(text: &str) -> String {
    let mut out = text.to_string();
    for (re, with) in patterns() {
        out = re.replace_all(&out, *with).into_owned();
    }
    out
}

/// A serialized run report as a caller may see it: every tool failure's `detail` dropped and
/// the run's `error` scrubbed (its tool results are what the model saw, already safe).
pub fn report(mut report: Value) -> Value {
    if let Some(calls) = report["tool_calls"].as_array_mut() {
        for call in calls {
            if let Some(err) = call["outcome"]["error"].as_object_mut() {
                err.remove("detail");
            }
        }
    }
    if let Some(e) = report["error"].as_str() {
        report["error"] = Value::String(scrub(e));
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_urls_and_type_paths_are_taken_out() {
        let said = scrub(
            "planner failed: /home/op/app/scripts/agent.rhai:3:5: Runtime error: kiln::script::host_fns::DeniedValue; error sending request for url (http://10.0.0.5:11434/api/chat)",
        );
        assert_eq!(
            said,
            "planner failed: agent.rhai:3:5: Runtime error: <internal>; error sending request for url (<url>)"
        );
        assert_eq!(
            scrub("tool \"x\": 5 is not of type string"),
            "tool \"x\": 5 is not of type string"
        );
        let r = report(json!({"error": "at /a/b/c.rhai:1:1", "tool_calls": [
            {"outcome": {"success": false, "error": {"kind": "runtime", "message": "Tool failed (runtime)", "detail": "/a/b/c.rhai:1:1: boom"}}}
        ]}));
        assert_eq!(r["error"], "at c.rhai:1:1");
        assert!(
            r["tool_calls"][0]["outcome"]["error"]
                .get("detail")
                .is_none()
        );
    }
}
