//! Deferred tools (`.defer_loading([...])`): an agent with many tools offers its model the
//! ones it did not defer, a `search_tools` tool, and the deferred tools its searches found so
//! far in this run, instead of every schema on every request. A tool found is called like any
//! other: under the agent's grants, validated, guarded, logged.

use kiln_core::tool::Tool;
use kiln_registry::native::NativeTool;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// The search tool's name.
pub(super) const SEARCH_TOOLS: &str = "search_tools";

/// How many tools one search finds at most.
const MAX_FOUND: usize = 5;

/// The deferred tools a run's searches found.
pub(super) type Found = Arc<Mutex<BTreeSet<String>>>;

/// Whether `name` matches a `.defer_loading` entry: a tool's name, or a prefix ending in `*`
/// (`github__*`: a mounted server's tools).
fn deferred(patterns: &[String], name: &str) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => p == name,
    })
}

/// What this round offers: the tools not deferred, the deferred ones found so far, and the
/// search tool while any deferred tool is left to find.
pub(super) fn offer(patterns: &[String], tools: Vec<Arc<Tool>>, found: &Found) -> Vec<Arc<Tool>> {
    if patterns.is_empty() {
        return tools;
    }
    let known = found.lock().map(|f| f.clone()).unwrap_or_default();
    let (later, mut now): (Vec<_>, Vec<_>) = tools
        .into_iter()
        .partition(|t| deferred(patterns, &t.name) && !known.contains(&t.name));
    if !later.is_empty() && now.iter().all(|t| t.name != SEARCH_TOOLS) {
        now.extend(search_tool(later, found.clone()));
    }
    now
}

/// How well `tool` answers `words`: its name counts most, then its description and its
/// parameters' names.
fn score(tool: &Tool, words: &[String]) -> usize {
    let name = tool.name.to_lowercase();
    let description = tool.description.to_lowercase();
    let params: Vec<String> = tool.schema["properties"]
        .as_object()
        .map(|p| p.keys().map(|k| k.to_lowercase()).collect())
        .unwrap_or_default();
    words
        .iter()
        .map(|w| {
            3 * usize::from(name.contains(w.as_str()))
                + usize::from(description.contains(w.as_str()))
                + usize::from(params.iter().any(|p| p.contains(w.as_str())))
        })
        .sum()
}

/// The search over `deferred`: up to five matching tools' definitions, which the next
/// request offers.
fn search_tool(deferred: Vec<Arc<Tool>>, found: Found) -> Option<Arc<Tool>> {
    let count = deferred.len();
    let search = NativeTool::new(SEARCH_TOOLS, move |args: Value, _ctx: &kiln_core::context::CallContext| {
        let words: Vec<String> = args["query"]
            .as_str()
            .unwrap_or_default()
            .to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 1)
            .map(str::to_string)
            .collect();
        let mut ranked: Vec<(usize, &Arc<Tool>)> = deferred
            .iter()
            .map(|t| (score(t, &words), t))
            .filter(|(s, _)| *s > 0)
            .collect();
        ranked.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
        let hits: Vec<Value> = ranked
            .iter()
            .take(MAX_FOUND)
            .map(|(_, t)| json!({"name": t.name, "description": t.description, "parameters": t.schema}))
            .collect();
        if let Ok(mut f) = found.lock() {
            f.extend(hits.iter().filter_map(|h| h["name"].as_str().map(str::to_string)));
        }
        let answer = json!({"tools": hits, "note": "the tools found can be called from your next step"});
        async move { Ok(answer) }
    })
    .description(format!(
        "Finds tools by what they do: {count} more tools are available than listed; give words from the task and call the tools found next"
    ))
    .param("query", "string", json!({"description": "words describing the tool you need"}));
    search.into_tool().ok().map(Arc::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_name_a_tool_or_a_prefix() {
        let p = vec!["github__*".to_string(), "big".to_string()];
        assert!(deferred(&p, "github__create_issue"));
        assert!(deferred(&p, "big"));
        assert!(!deferred(&p, "bigger"));
        assert!(!deferred(&p, "gitlab__x"));
    }
}
