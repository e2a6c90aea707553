//! Deferred tools (`.defer_loading([...])`): an agent with many tools offers its model the
//! ones it did not defer, a `search_tools` tool, and the deferred tools its searches found so
//! far in this run, instead of every schema on every request. A tool found is called like any
//! other: under the agent's grants, validated, guarded, logged.

use kiln_core::model::ToolDef;
use kiln_core::tool::Tool;
use kiln_registry::native::NativeTool;
use kiln_registry::tool_search::{self, deferred};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// The search tool's name.
pub(super) const SEARCH_TOOLS: &str = "search_tools";

/// How many tools one search finds at most.
const MAX_FOUND: usize = 5;

/// The deferred tools a run's searches found.
pub(super) type Found = Arc<Mutex<BTreeSet<String>>>;

/// What this round offers: the tools not deferred, the deferred ones found so far, and the
/// search tool while any deferred tool is left to find. `native`: the provider searches
/// itself ([`kiln_providers::Provider::searches_tools`]), so every tool is offered and
/// [`flag`] marks the deferred ones in the request.
pub(super) fn offer(
    patterns: &[String],
    tools: Vec<Arc<Tool>>,
    found: &Found,
    native: bool,
) -> Vec<Arc<Tool>> {
    if patterns.is_empty() || native {
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

/// Marks the request's deferred tools for a provider that searches them itself (`native`);
/// the caller's own tools are never deferred (they are added after).
/// A tool the messages call (`called`) goes loaded.
pub(super) fn flag(
    patterns: &[String],
    tools: &mut [ToolDef],
    native: bool,
    called: &std::collections::HashSet<String>,
) {
    if native {
        for t in tools.iter_mut() {
            t.deferred = deferred(patterns, &t.name) && !called.contains(&t.name);
        }
    }
}

/// The names of the tools `messages` call.
pub(super) fn called(messages: &[kiln_core::model::Message]) -> std::collections::HashSet<String> {
    let calls = messages.iter().flat_map(|m| match m {
        kiln_core::model::Message::Assistant { tool_calls, .. } => tool_calls.as_slice(),
        _ => &[],
    });
    calls.map(|c| c.name.clone()).collect()
}

/// The search over `deferred`: up to five matching tools' definitions, which the next
/// request offers.
fn search_tool(deferred: Vec<Arc<Tool>>, found: Found) -> Option<Arc<Tool>> {
    let count = deferred.len();
    let search = NativeTool::new(SEARCH_TOOLS, move |args: Value, _ctx: &kiln_core::context::CallContext| {
        let query = args["query"].as_str().unwrap_or_default();
        let ranked = tool_search::rank(&deferred, query, MAX_FOUND);
        let hits: Vec<Value> = ranked
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.schema}))
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
    fn a_provider_that_searches_gets_every_tool_with_the_deferred_flagged() {
        let def = |name: &str| ToolDef {
            name: name.into(),
            description: String::new(),
            schema: json!({"type": "object"}).into(),
            deferred: false,
        };
        let p = vec!["big_*".to_string()];
        let mut tools = vec![def("big_a"), def("small")];
        let none = Default::default();
        flag(&p, &mut tools, false, &none);
        assert!(
            tools.iter().all(|t| !t.deferred),
            "kiln's own search flags nothing"
        );
        flag(&p, &mut tools, true, &none);
        let flagged: Vec<bool> = tools.iter().map(|t| t.deferred).collect();
        assert_eq!(flagged, [true, false]);
        let called = ["big_a".to_string()].into_iter().collect();
        flag(&p, &mut tools, true, &called);
        assert!(
            tools.iter().all(|t| !t.deferred),
            "a tool the transcript calls goes loaded"
        );
    }
}
