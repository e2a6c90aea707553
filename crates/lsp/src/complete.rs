//! Completion: what may come at the cursor, read from where it is (`scan::context`).

use crate::catalog::{CAPABILITIES, Catalog, Entry, providers};
use crate::scan::{self, Context};
use crate::skills;
use kiln_core::schema::{PARAM_KEYS, PARAM_TYPES};
use kiln_registry::Registry;
use lsp_types::{
    CompletionItem, CompletionItemKind, CompletionItemTag, CompletionTextEdit, Documentation,
    MarkupContent, MarkupKind, TextEdit,
};
use std::path::Path;

/// The calls whose string arguments name capabilities.
const CAPABILITY_CALLS: &[&str] = &[
    "requires",
    "capabilities",
    "needs_approval",
    "ask",
    "grants",
];

/// Completion items at byte offset `at` of `text`, a script in folder `dir` (where its
/// `.skills([...])` folders are).
pub fn items(
    text: &str,
    at: usize,
    cat: &Catalog,
    regs: &[&Registry],
    dir: Option<&Path>,
) -> Vec<CompletionItem> {
    let cx = scan::context(text, at);
    if cx.comment {
        return Vec::new();
    }
    if let Some((_, start)) = &cx.string {
        if skills::names_a_skill(text, *start) {
            return skill_names(regs, dir);
        }
        if cx.call() == Some(("skills", 0)) {
            let Some(dir) = dir else {
                return Vec::new();
            };
            let replace = crate::position::range(text, *start..at);
            return skill_folders(dir, replace);
        }
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
        ("provider", 0) => words(&providers(), CompletionItemKind::ENUM_MEMBER, "provider"),
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

/// The folders `.skills([...])` may name, each replacing the string typed so far
/// (`replace`): a skill's folder, or a folder of skills.
fn skill_folders(dir: &Path, replace: lsp_types::Range) -> Vec<CompletionItem> {
    skills::folders(dir)
        .into_iter()
        .map(|f| {
            let (detail, doc) = match f.is_skill {
                true => ("skill".to_string(), describe(&f.skills[..1])),
                false => (
                    format!("folder of {} skills", f.skills.len()),
                    describe(&f.skills),
                ),
            };
            let mut it = item(&f.path, CompletionItemKind::FOLDER, &detail, &doc);
            it.text_edit = Some(CompletionTextEdit::Edit(TextEdit::new(
                replace,
                f.path.clone(),
            )));
            it
        })
        .collect()
}

/// Skills as a Markdown list: `- **name**: description`.
fn describe(skills: &[skills::Skill]) -> String {
    let lines: Vec<String> = skills
        .iter()
        .map(|s| format!("- **{}**: {}", s.name, s.description))
        .collect();
    lines.join("\n")
}

/// The names a scripted `load_skill` call may give, each with its description.
fn skill_names(regs: &[&Registry], dir: Option<&Path>) -> Vec<CompletionItem> {
    skills::known(regs, dir)
        .into_iter()
        .map(|s| item(&s.name, CompletionItemKind::MODULE, "skill", &s.description))
        .collect()
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
        items(text, text.len(), &cat, &[&reg], None)
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
        assert_eq!(labels("agent(\"a\").provider(\"o"), providers());
        assert!(providers().contains(&"ollama"));
        assert_eq!(labels("let x = ht"), ["http_get"]);
        assert!(labels("// tool(\"t\").").is_empty());
    }
}
