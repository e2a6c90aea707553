//! Hover, go to definition and document symbols: what a name under the cursor is, and where
//! the tools, agents and pipelines of a project are declared.

use crate::catalog::Catalog;
use crate::position;
use crate::scan::{self, Declared};
use kiln_registry::Registry;
use lsp_types::{
    DocumentSymbol, Hover, HoverContents, Location, MarkupContent, MarkupKind, SymbolKind, Url,
};
use std::path::{Path, PathBuf};

/// What the name at byte offset `at` of `text` (a script in folder `dir`) is, in Markdown.
pub fn hover(
    text: &str,
    at: usize,
    cat: &Catalog,
    regs: &[&Registry],
    dir: Option<&Path>,
) -> Option<Hover> {
    let (token, range, string) = scan::token_at(text, at)?;
    let value = if string {
        match crate::skills::hover(text, range.start, &token, regs, dir) {
            Some(skills) => skills,
            None => regs.iter().find_map(|reg| describe_name(&token, reg))?,
        }
    } else {
        let cx = scan::context(text, range.start);
        let on = match (cx.after_dot, cx.builder) {
            (true, Some(builder)) => builder,
            (true, None) => return None,
            (false, _) => "",
        };
        cat.describe(on, &token)?
    };
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value,
        }),
        range: Some(position::range(text, range)),
    })
}

/// A tool's description and JSON Schema, an agent's provider, model, tools and grants.
fn describe_name(name: &str, reg: &Registry) -> Option<String> {
    if let Some(tool) = reg.find(name) {
        let schema = serde_json::to_string_pretty(&tool.schema).unwrap_or_default();
        let requires: Vec<String> = tool.requires.iter().map(|c| c.to_string()).collect();
        let needs = match requires.is_empty() {
            true => String::new(),
            false => format!("\n\nRequires: `{}`", requires.join("`, `")),
        };
        return Some(format!(
            "**tool** `{}`\n\n{}{needs}\n\n```json\n{schema}\n```",
            tool.name, tool.description
        ));
    }
    if let Some(agent) = reg.agent(name) {
        let grants: Vec<String> = agent.grants.iter().map(|g| g.to_string()).collect();
        return Some(format!(
            "**agent** `{}`{}\n\nprovider `{}`, model `{}`\n\ntools: {}\n\ngrants: {}",
            agent.name,
            match agent.description.is_empty() {
                true => String::new(),
                false => format!(": {}", agent.description),
            },
            agent.provider,
            agent.model.as_deref().unwrap_or("(the provider's default)"),
            list(&agent.tools),
            list(&grants),
        ));
    }
    let pipeline = reg.pipelines().find(|p| p.name == name)?;
    Some(format!("**pipeline** `{}`", pipeline.name))
}

fn list(items: &[String]) -> String {
    match items.is_empty() {
        true => "(none)".into(),
        false => format!("`{}`", items.join("`, `")),
    }
}

/// Where the name at byte offset `at` is declared: a tool, agent or pipeline among `files`,
/// or the module an `import` names.
pub fn definition(
    path: &Path,
    text: &str,
    at: usize,
    files: &[(PathBuf, String)],
) -> Option<Location> {
    let (token, range, string) = scan::token_at(text, at)?;
    if !string {
        return None;
    }
    let before = text[..range.start.saturating_sub(1)].trim_end();
    if before.ends_with("import") {
        let mut file = path.parent()?.join(&token);
        if file.extension().is_none() {
            file.set_extension("rhai");
        }
        let uri = Url::from_file_path(file.canonicalize().ok()?).ok()?;
        return Some(Location::new(uri, lsp_types::Range::default()));
    }
    for (file, source) in files {
        if let Some(d) = scan::declarations(source)
            .into_iter()
            .find(|d| d.name == token)
        {
            let uri = Url::from_file_path(file).ok()?;
            return Some(Location::new(uri, position::range(source, d.range)));
        }
    }
    None
}

/// The tools, agents, pipelines and other declarations of a file.
#[allow(deprecated)] // `DocumentSymbol::deprecated` must still be given.
pub fn symbols(text: &str) -> Vec<DocumentSymbol> {
    scan::declarations(text)
        .into_iter()
        .map(|Declared { kind, name, range }| {
            let r = position::range(text, range);
            DocumentSymbol {
                name,
                detail: Some(kind.to_string()),
                kind: match kind {
                    "tool" => SymbolKind::FUNCTION,
                    "agent" => SymbolKind::CLASS,
                    "pipeline" => SymbolKind::MODULE,
                    "mcp_server" => SymbolKind::NAMESPACE,
                    _ => SymbolKind::OBJECT,
                },
                tags: None,
                deprecated: None,
                range: r,
                selection_range: r,
                children: None,
            }
        })
        .collect()
}
