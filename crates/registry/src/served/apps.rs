//! MCP Apps (the `io.modelcontextprotocol/ui` extension): a tool's page. A tool links a `ui://`
//! resource in its `_meta.ui` (`resourceUri`, and `visibility`: who may call it, the model,
//! the page or both); the page is a resource of the extension's HTML type whose `_meta.ui`
//! holds the CSP and permissions its host grants it.

use kiln_core::error::LoadError;
use kiln_core::tool::Tool;
use serde_json::Value;
use std::sync::Arc;

/// The extension's identifier, as clients and servers declare it.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The media type of an app's page.
pub const MIME: &str = "text/html;profile=mcp-app";

/// The largest page kiln serves (a page is code, not data: a bigger one is a mistake).
pub const MAX_PAGE_BYTES: usize = 4 << 20;

/// The `ui://` page `tool` shows its results in, if any (`_meta.ui.resourceUri`, or the
/// flat `ui/resourceUri` older servers send).
pub fn page_of(tool: &Tool) -> Option<&str> {
    let extra = &tool.meta.extra;
    extra
        .get("ui")
        .and_then(|ui| ui.get("resourceUri"))
        .or_else(|| extra.get("ui/resourceUri"))
        .and_then(Value::as_str)
}

/// Whether `who` ("model" or "app") may call `tool`: a tool names who in
/// `_meta.ui.visibility`, and without it both may.
pub fn visible_to(tool: &Tool, who: &str) -> bool {
    match tool
        .meta
        .extra
        .get("ui")
        .and_then(|ui| ui.get("visibility"))
    {
        Some(Value::Array(list)) => list.iter().any(|v| v.as_str() == Some(who)),
        _ => true,
    }
}

/// Whether the model may see `tool` (a tool only its page may call is kept from it).
pub fn visible_to_model(tool: &Tool) -> bool {
    visible_to(tool, "model")
}

/// An error for each script tool linking a page nothing serves (a mounted server's tools may
/// link pages it does not list, as the extension allows).
pub fn unserved_pages(tools: &[Arc<Tool>], served: &super::Served) -> Vec<LoadError> {
    let unserved = |t: &&Arc<Tool>| page_of(t).is_some_and(|uri| served.find(uri).is_none());
    tools
        .iter()
        .filter(unserved)
        .map(|t| {
            let uri = page_of(t).unwrap_or_default();
            LoadError::of(
                kiln_core::error::LoadErrorKind::Registry,
                t.loc.clone(),
                format!(
                    "tool \"{}\" shows page {uri}, which no tool gives: give it once with .ui(\"{uri}\", #{{ file: \"page.html\" }})",
                    t.name
                ),
            )
        })
        .collect()
}

/// Whether `text` is an origin a CSP may name: `http(s)://` or `ws(s)://`, a host (its first
/// label may be `*`), an optional port, nothing else (no path, no space, no quote).
pub fn is_origin(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once("://") else {
        return false;
    };
    let (host, port) = rest.rsplit_once(':').unwrap_or((rest, ""));
    let host = host.strip_prefix("*.").unwrap_or(host);
    ["http", "https", "ws", "wss"].contains(&scheme)
        && !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
        && port.chars().all(|c| c.is_ascii_digit())
        && port.is_empty() != rest.contains(':')
}

/// The Content-Security-Policy a page runs under, from its `_meta.ui.csp` as MCP Apps asks of a
/// host: nothing beyond what it declares (an entry that is not an origin is dropped), no
/// connection at all when it declares none, and `frame_ancestors` the only page that may embed
/// it.
pub fn page_csp(declared: &Value, frame_ancestors: &str) -> String {
    let list = |key: &str| -> Vec<&str> {
        declared[key]
            .as_array()
            .map(|l| {
                l.iter()
                    .filter_map(Value::as_str)
                    .filter(|o| is_origin(o))
                    .collect()
            })
            .unwrap_or_default()
    };
    let or = |key: &str, none: &str| match list(key) {
        l if l.is_empty() => none.to_string(),
        l => l.join(" "),
    };
    let res = list("resourceDomains").join(" ");
    let with = |base: &str| format!("{base} {res}").trim_end().to_string();
    [
        "default-src 'none'".to_string(),
        with("script-src 'self' 'unsafe-inline'"),
        with("style-src 'self' 'unsafe-inline'"),
        with("img-src 'self' data:"),
        with("font-src 'self'"),
        with("media-src 'self' data:"),
        format!("connect-src {}", or("connectDomains", "'none'")),
        format!("frame-src {}", or("frameDomains", "'none'")),
        "object-src 'none'".to_string(),
        format!("base-uri {}", or("baseUriDomains", "'self'")),
        "form-action 'none'".to_string(),
        format!("frame-ancestors {frame_ancestors}"),
    ]
    .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn origins_are_told_from_anything_else() {
        for ok in [
            "https://api.example.com",
            "https://*.example.com",
            "http://127.0.0.1:8080",
            "wss://live.example.com",
        ] {
            assert!(is_origin(ok), "{ok}");
        }
        for bad in [
            "api.example.com",
            "https://example.com/path",
            "https://a.com; script-src *",
            "'unsafe-eval'",
            "javascript://x",
            "https://",
            "https://a.com:",
            "https://a.com:80x",
        ] {
            assert!(!is_origin(bad), "{bad}");
        }
    }

    #[test]
    fn a_page_runs_under_what_it_declares_and_nothing_more() {
        let none = page_csp(&Value::Null, "http://127.0.0.1:8080");
        assert!(none.contains("connect-src 'none'"), "{none}");
        assert!(none.contains("frame-src 'none'"), "{none}");
        assert!(
            none.contains("script-src 'self' 'unsafe-inline';"),
            "{none}"
        );
        assert!(
            none.ends_with("frame-ancestors http://127.0.0.1:8080"),
            "{none}"
        );
        let declared = json!({
            "connectDomains": ["https://api.example.com", "https://x.com; script-src *"],
            "resourceDomains": ["https://cdn.example.com"],
        });
        let csp = page_csp(&declared, "http://h:1");
        assert!(
            csp.contains("connect-src https://api.example.com;"),
            "{csp}"
        );
        assert!(
            csp.contains("img-src 'self' data: https://cdn.example.com;"),
            "{csp}"
        );
        assert!(!csp.contains("x.com"), "{csp}");
    }
}
