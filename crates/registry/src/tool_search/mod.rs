//! Finding tools by what they do, for deferred tools (an agent's `.defer_loading([...])`,
//! `kiln mcp --defer`): which tools a pattern defers, and the tools that best answer a query,
//! ranked by their name first, then their description and their parameters' names.

use kiln_core::tool::Tool;
use std::sync::Arc;

/// Whether `name` matches a deferral pattern: a tool's name, or a prefix ending in `*`
/// (`github__*`: a mounted server's tools).
pub fn deferred(patterns: &[String], name: &str) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => p == name,
    })
}

/// The most words of a query that count (a longer query costs a search no more).
const MAX_WORDS: usize = 32;

/// The words of a query that count: lowercase, split at anything not a letter or a digit,
/// single letters left out, each once, the first 32 (of its first 4 KiB).
pub fn words(query: &str) -> Vec<String> {
    let mut end = query.len().min(4096);
    while !query.is_char_boundary(end) {
        end -= 1;
    }
    let mut out: Vec<String> = Vec::new();
    for w in query[..end]
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
    {
        if w.len() > 1 && out.len() < MAX_WORDS && !out.iter().any(|o| o == w) {
            out.push(w.to_string());
        }
    }
    out
}

/// How well `tool` answers `words`: each word found in its name counts 3, in its description
/// 1, in a parameter's name 1.
pub fn score(tool: &Tool, words: &[String]) -> usize {
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

/// The tools of `tools` that answer `query`, best first (ties by name), at most `most`.
pub fn rank<'a>(tools: &'a [Arc<Tool>], query: &str, most: usize) -> Vec<&'a Arc<Tool>> {
    let words = words(query);
    let mut ranked: Vec<(usize, &Arc<Tool>)> = tools
        .iter()
        .map(|t| (score(t, &words), t))
        .filter(|(s, _)| *s > 0)
        .collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
    ranked.into_iter().take(most).map(|(_, t)| t).collect()
}

#[cfg(test)]
mod tests {
    use crate::tool_search::{deferred, rank, words};
    use serde_json::json;
    use std::sync::Arc;

    fn tool(name: &str, description: &str, param: &str) -> Arc<kiln_core::tool::Tool> {
        let t = crate::native::NativeTool::new(
            name,
            |_a: serde_json::Value, _c: &kiln_core::context::CallContext| async { Ok(json!(null)) },
        )
        .description(description)
        .param(param, "string", json!({}));
        Arc::new(t.into_tool().expect("a tool"))
    }

    #[test]
    fn patterns_name_a_tool_or_a_prefix() {
        let p = vec!["github__*".to_string(), "big".to_string()];
        assert!(deferred(&p, "github__create_issue"));
        assert!(deferred(&p, "big"));
        assert!(!deferred(&p, "bigger"));
        assert!(!deferred(&p, "gitlab__x"));
    }

    #[test]
    fn names_count_most_then_descriptions_and_parameters() {
        let tools = vec![
            tool("send_mail", "Sends a message", "to"),
            tool("list_issues", "Lists the issues of a repository", "repo"),
            tool("create_issue", "Opens an issue", "title"),
            tool("weather", "Tells the weather", "city"),
        ];
        assert_eq!(words("Create an ISSUE, a!"), ["create", "an", "issue"]);
        assert_eq!(words("issue issue ISSUE"), ["issue"], "each word once");
        let long =
            "word ".repeat(200_000) + &(0..100).map(|i| format!("w{i} ")).collect::<String>();
        assert_eq!(
            words(&long),
            ["word"],
            "only the query's first 4 KiB counts"
        );
        let many: String = (0..100).map(|i| format!("w{i} ")).collect();
        assert_eq!(words(&many).len(), 32);
        let found: Vec<&str> = rank(&tools, "create issue", 5)
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(found, ["create_issue", "list_issues"]);
        let by_param: Vec<&str> = rank(&tools, "city", 5)
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(by_param, ["weather"]);
        assert_eq!(rank(&tools, "issue", 1).len(), 1);
        assert!(rank(&tools, "", 5).is_empty());
    }
}
