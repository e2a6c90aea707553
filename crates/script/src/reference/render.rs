//! The table written out: `docs/reference.md`, and the doc comments of `kiln definitions`.

use super::entry::Entry;
use super::signature;
use super::table::{BUILDERS, FUNCTION_PARTS, entries, is_builder};

/// The path of the reference inside the repository.
pub const REFERENCE_PATH: &str = "docs/reference.md";

/// `docs/reference.md`: every function and builder method, grouped by receiver, with its
/// signature, the capability it needs and its line of doc.
pub fn markdown() -> String {
    let mut out = String::from(
        "# DSL reference\n\n\
        <!-- Generated from the table in crates/script/src/reference/ (kiln-script): do not edit\n\
        by hand. After changing the table, regenerate this file with\n\
        `KILN_BLESS=1 cargo test -p kiln-script reference`; the same test fails while it is stale. -->\n\n\
        Every function and builder method a kiln script can call, as the engine registers it.\n\
        A parameter in brackets may be left out; `a | b` takes either. A function that needs a\n\
        capability is refused unless the tool declares it with `.requires(...)` and the caller\n\
        grants it (see [security](security.md)).\n\n\
        ## Functions\n",
    );
    for (title, part) in FUNCTION_PARTS {
        out.push_str(&format!("\n### {title}\n\n"));
        for e in part.iter() {
            out.push_str(&line(e));
        }
    }
    for (ty, written) in BUILDERS {
        out.push_str(&format!("\n## `{written}`\n\nMethods of `{ty}`.\n\n"));
        for e in entries().filter(|e| e.on == *ty) {
            out.push_str(&line(e));
        }
    }
    out
}

/// One entry as a list item.
fn line(e: &Entry) -> String {
    let dot = if e.on.is_empty() { "" } else { "." };
    let mut item = format!("- `{dot}{}`", e.signature);
    if let Some(cap) = e.capability {
        item.push_str(&format!(" (needs `{cap}`)"));
    }
    if let Some(new) = e.replaced_by {
        item.push_str(&format!(" (deprecated: use `{new}`)"));
    }
    item.push_str(&format!(": {}\n", e.doc.replace('*', "\\*")));
    item
}

/// The doc comment of a table entry in a `.d.rhai` file.
fn doc_comment(e: &Entry) -> String {
    let dot = if e.on.is_empty() { "" } else { "." };
    let mut out = format!("/// `{dot}{}`\n/// {}\n", e.signature, e.doc);
    if let Some(cap) = e.capability {
        out.push_str(&format!("/// Needs capability \"{cap}\".\n"));
    }
    if let Some(new) = e.replaced_by {
        out.push_str(&format!("/// Deprecated: use {new}.\n"));
    }
    out
}

/// The table entry a `.d.rhai` line `fn name(_: Receiver, ...) -> T;` stands for: the one of its
/// receiver and name taking as many arguments.
pub fn entry_of_definition(line: &str) -> Option<&'static Entry> {
    let sig = line.strip_prefix("fn ")?;
    let (name, rest) = sig.split_once('(')?;
    let params = rest.split_once(')').map_or(rest, |(p, _)| p).trim();
    let types: Vec<&str> = match params {
        "" => Vec::new(),
        p => p
            .split(", ")
            .map(|p| p.rsplit(':').next().unwrap_or_default().trim())
            .collect(),
    };
    let (on, arity) = match types.first() {
        Some(ty) if is_builder(ty) => (*ty, types.len() - 1),
        _ => ("", types.len()),
    };
    entries().find(|e| {
        e.on == on
            && e.name == name.trim()
            && signature::expansions(e.signature)
                .iter()
                .any(|x| x.len() == arity)
    })
}

/// Rhai's definitions of an engine (`fn ...;` lines) with the table's signature, doc and
/// capability as the doc comment of each function the table describes, in place of any comment
/// it was registered with.
pub fn annotate_definitions(defs: &str) -> String {
    let mut out = String::with_capacity(defs.len() * 2);
    let mut comments = String::new();
    for line in defs.lines() {
        if line.starts_with("///") {
            comments.push_str(line);
            comments.push('\n');
            continue;
        }
        match entry_of_definition(line) {
            Some(e) => out.push_str(&doc_comment(e)),
            None => out.push_str(&comments),
        }
        comments.clear();
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&comments);
    out
}

/// The definitions of an engine's own functions (no standard packages), each the table
/// describes with its doc comment from the table.
pub fn definitions(engine: &rhai::Engine) -> String {
    // Functions returning Result<T, Box<EvalAltResult>> lose their type name in the
    // metadata; `?` is what Rhai's definitions use for "any".
    let defs = engine
        .definitions()
        .include_standard_packages(false)
        .single_file()
        .replace("EvalAltResult>>", "?");
    annotate_definitions(&defs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_carry_the_table_instead_of_registered_comments() {
        let defs = "module static;\n\n/// Old words.\nfn sample(prompt: string) -> string;\n\n/// Kept.\nfn app_fn(_: string) -> ?;\nfn param(_: ToolBuilder, _: string, _: string) -> ToolBuilder;\n";
        let out = annotate_definitions(defs);
        assert!(!out.contains("Old words"), "{out}");
        assert!(out.contains("/// Kept.\nfn app_fn(_: string)"), "{out}");
        assert!(
            out.contains("fn param(_: ToolBuilder, _: string, _: string) -> ToolBuilder;"),
            "{out}"
        );
        assert!(
            out.contains("/// `sample(prompt: string[, options: map])`\n"),
            "{out}"
        );
        assert!(out.contains("/// Needs capability \"sampling\".\nfn sample("));
        assert!(
            out.contains("/// `.param(name: string, type: string[, options: string | map])`\n")
        );
        let blob = "fn resource_blob(_: string, _: string) -> map;";
        assert_eq!(
            entry_of_definition(blob).map(|e| e.signature),
            Some("resource_blob(data: string, mime: string)")
        );
    }

    #[test]
    fn the_reference_lists_every_entry_under_its_receiver() {
        let md = markdown();
        assert!(md.contains("- `read_file(path: string)` (needs `fs.read`): "));
        assert!(md.contains("## `mcp_server(...)`"));
        assert!(md.contains("- `.oauth([options: map])`: "));
        assert_eq!(
            md.lines().filter(|l| l.starts_with("- `")).count(),
            entries().count()
        );
    }
}
