//! Completion: what may come at the cursor, read from where it is (`scan::context`).

use crate::catalog::{CAPABILITIES, Catalog, Entry, PROVIDERS};
use crate::scan::{self, Context};
use kiln_core::schema::{PARAM_KEYS, PARAM_TYPES};
use kiln_registry::Registry;
use lsp_types::{
    CompletionItem, CompletionItemKind, CompletionItemTag, Documentation, MarkupContent, MarkupKind,
};

/// The calls whose string arguments name capabilities.
const CAPABILITY_CALLS: &[&str] = &[
    "requires",
    "capabilities",
    "needs_approval",
    "ask",
    "grants",
];

/// Completion items at byte offset `at` of `text`.
pub fn items(text: &str, at: usize, cat: &Catalog, regs: &[&Registry]) -> Vec<CompletionItem> {
    let cx = scan::context(text, at);
    if cx.comment {
        return Vec::new();
    }
    if cx.string.is_some() {
        return in_string(&cx, regs);
    }
    if cx.in_map_of("param", 2) {
        return words(PARAM_KEYS, CompletionItemKind::PROPERTY, "param option");
    }
    if cx.after_dot {
        return match cx.builder {
            Some(builder) => methods(cat, builder),
            None => Vec::new(),
        };
    }
    functions(cat)
}

fn in_string(cx: &Context, regs: &[&Registry]) -> Vec<CompletionItem> {
    let Some((call, arg)) = cx.call() else {
        return Vec::new();
    };
    match (call, arg) {
        ("param", 1) | ("arg", 1) | ("output", 0) | ("returns", 0) => words(
            PARAM_TYPES,
            CompletionItemKind::TYPE_PARAMETER,
            "param type",
        ),
        ("provider", 0) => words(PROVIDERS, CompletionItemKind::ENUM_MEMBER, "provider"),
        (c, _) if CAPABILITY_CALLS.contains(&c) => CAPABILITIES
            .iter()
            .map(|(name, scopes)| item(name, CompletionItemKind::CONSTANT, "capability", scopes))
            .collect(),
        ("tools", 0) | ("call_tool", 0) | ("applies_to", 0) => {
            unique(regs.iter().flat_map(|r| r.all()).map(|t| {
                item(
                    &t.name,
                    CompletionItemKind::FUNCTION,
                    "tool",
                    &t.description,
                )
            }))
        }
        ("handoffs", 0) | ("run_agent", 0) => unique(
            regs.iter()
                .flat_map(|r| r.agents())
                .map(|a| item(&a.name, CompletionItemKind::CLASS, "agent", &a.description)),
        ),
        _ => Vec::new(),
    }
}

/// The items with a label not seen before (a name in both registries is offered once).
fn unique(items: impl Iterator<Item = CompletionItem>) -> Vec<CompletionItem> {
    let mut seen = std::collections::HashSet::new();
    items.filter(|i| seen.insert(i.label.clone())).collect()
}

fn methods(cat: &Catalog, builder: &str) -> Vec<CompletionItem> {
    let Some(methods) = cat.methods.get(builder) else {
        return Vec::new();
    };
    methods
        .iter()
        .map(|(name, e)| {
            let detail =
                (e.call.as_ref()).map_or_else(|| format!("{name}(...)"), |c| format!(".{c}"));
            deprecated(item(name, CompletionItemKind::METHOD, &detail, &e.doc), e)
        })
        .collect()
}

fn functions(cat: &Catalog) -> Vec<CompletionItem> {
    cat.functions
        .iter()
        .map(|(name, e)| {
            let detail = (e.call.clone()).unwrap_or_else(|| format!("{name}(...)"));
            let doc = match cat.capabilities.get(name) {
                Some(cap) => format!("{} (needs capability {cap})", e.doc),
                None => e.doc.clone(),
            };
            deprecated(item(name, CompletionItemKind::FUNCTION, &detail, &doc), e)
        })
        .collect()
}

/// `item`, struck through when the table has its name only as a deprecated spelling.
fn deprecated(mut item: CompletionItem, e: &Entry) -> CompletionItem {
    if e.deprecated() {
        item.tags = Some(vec![CompletionItemTag::DEPRECATED]);
    }
    item
}

fn words(list: &[&str], kind: CompletionItemKind, detail: &str) -> Vec<CompletionItem> {
    list.iter().map(|w| item(w, kind, detail, "")).collect()
}

fn item(label: &str, kind: CompletionItemKind, detail: &str, doc: &str) -> CompletionItem {
    CompletionItem {
        label: label.to_string(),
        kind: Some(kind),
        detail: Some(detail.to_string()),
        documentation: (!doc.is_empty()).then(|| {
            Documentation::MarkupContent(MarkupContent {
                kind: MarkupKind::Markdown,
                value: doc.to_string(),
            })
        }),
        ..CompletionItem::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn labels(text: &str) -> Vec<String> {
        let cat = Catalog::from_definitions(
            "fn param(_: ToolBuilder, _: string, _: string) -> ToolBuilder;\nfn model(_: AgentBuilder, _: string) -> AgentBuilder;\nfn http_get(_: string) -> ?;\n",
            &BTreeMap::new(),
        );
        let reg = Registry::default();
        items(text, text.len(), &cat, &[&reg])
            .into_iter()
            .map(|i| i.label)
            .collect()
    }

    #[test]
    fn each_place_offers_what_fits_there() {
        assert_eq!(labels("tool(\"t\").param(\"x\", \""), PARAM_TYPES);
        assert!(labels("tool(\"t\").param(\"x\", \"integer\", #{ ").contains(&"min".to_string()));
        assert_eq!(labels("agent(\"a\")\n  ."), ["model"]);
        assert_eq!(labels("tool(\"a\")."), ["param"]);
        assert!(labels("tool(\"t\").requires([\"").contains(&"fs.read".to_string()));
        assert_eq!(labels("agent(\"a\").provider(\"o"), PROVIDERS);
        // Every provider an agent may name is offered.
        assert_eq!(
            PROVIDERS.join(", "),
            kiln_registry::agent_spec::ProviderKind::names()
        );
        assert_eq!(labels("let x = ht"), ["http_get"]);
        assert!(labels("// tool(\"t\").").is_empty());
    }
}
