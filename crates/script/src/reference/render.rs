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
        A parameter in brackets may be left out; `a | b` takes either; `-> T` is what a call\n\
        returns (`Content`: a content block), where the table says. A function that needs a\n\
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

/// A parameter type of the table as a `.d.rhai` line writes it: `?` for `any` or
/// alternatives, `Fn` for `fn`.
fn definition_type(ty: &str) -> &str {
    match ty {
        "fn" => "Fn",
        t if t == "any" || t.contains('|') => "?",
        t => t,
    }
}

/// A `.d.rhai` line `fn name(_: ?, _: string) -> ?;` of a function the table describes, with
/// the table's return type in place of Rhai's `?`; and, where Rhai wrote a `_: ?` placeholder,
/// every parameter after the receiver named as the table's signature of that arity names it
/// (its type the table's where Rhai's is `?`). A line no one signature of the table fits is
/// left as it is.
pub fn typed_definition(line: &str, e: &Entry) -> String {
    let (Some((head, rest)), true) = (line.split_once('('), line.starts_with("fn ")) else {
        return line.to_string();
    };
    let (params, tail) = rest.split_once(')').unwrap_or((rest, ""));
    let mut tail = tail.to_string();
    if let Some(ty) = e.returns()
        && let Some(after) = tail.trim_start().strip_prefix("-> ?")
        && (after.is_empty() || after.starts_with(';'))
    {
        tail = format!(" -> {ty}{after}");
    }
    let mut parts: Vec<(String, String)> = (params.split(", ").filter(|p| !p.trim().is_empty()))
        .map(|p| {
            let (name, ty) = p.split_once(':').unwrap_or(("_", p));
            (name.trim().to_string(), ty.trim().to_string())
        })
        .collect();
    let skip = usize::from(!e.on.is_empty()).min(parts.len());
    let args = &mut parts[skip..];
    if args.iter().any(|(name, ty)| name == "_" && ty == "?") {
        let fits: Vec<Vec<(String, String)>> = (signature::expansions(e.signature).into_iter())
            .filter(|x| x.len() == args.len())
            .filter(|x| {
                (x.iter().zip(args.iter())).all(|(p, (_, ty))| signature::accepts(&p.ty, ty))
            })
            .map(|x| x.into_iter().map(|p| (p.name, p.ty)).collect())
            .collect();
        if let Some(first) = fits.first()
            && fits.iter().all(|x| x == first)
        {
            for ((name, ty), (table_name, table_ty)) in args.iter_mut().zip(first) {
                if name == "_" {
                    name.clone_from(table_name);
                }
                if ty == "?" {
                    *ty = definition_type(table_ty).to_string();
                }
            }
        }
    }
    let params: Vec<String> = parts.iter().map(|(n, t)| format!("{n}: {t}")).collect();
    format!("{head}({}){tail}", params.join(", "))
}

/// Rhai's definitions of an engine (`fn ...;` lines) with the table's signature, doc and
/// capability as the doc comment of each function the table describes, in place of any comment
/// it was registered with, and its line typed by the table ([`typed_definition`]).
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
            Some(e) => {
                out.push_str(&doc_comment(e));
                out.push_str(&typed_definition(line, e));
            }
            None => {
                out.push_str(&comments);
                out.push_str(line);
            }
        }
        comments.clear();
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
            out.contains("/// `sample(prompt: string[, options: map]) -> string`\n"),
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
    fn definitions_take_the_tables_return_type_and_parameter_names() {
        let defs = "fn image(_: ?, _: ?) -> ?;\nfn log(_: string, _: ?) -> ?;\nfn sample(_: string, _: map) -> ?;\nfn call_tool(_: string, _: ?) -> ?;\nfn arg(_: PromptBuilder, _: string, _: string) -> PromptBuilder;\nfn app_fn(_: ?) -> ?;\n";
        let out = annotate_definitions(defs);
        for line in [
            "fn image(data: string, mime: string) -> Content;",
            "fn log(level: string, message: ?) -> ();",
            "fn sample(_: string, _: map) -> string;",
            // No return type in the table: Rhai's `?` stays.
            "fn call_tool(name: string, args: ?) -> ?;",
            "fn arg(_: PromptBuilder, _: string, _: string) -> PromptBuilder;",
            "fn app_fn(_: ?) -> ?;",
        ] {
            assert!(
                out.lines().any(|l| l == line),
                "{line} missing from:\n{out}"
            );
        }
        // A placeholder the table's types do not fit is left alone.
        let e = entry_of_definition("fn image(_: ?, _: ?) -> ?;").expect("image");
        assert_eq!(
            typed_definition("fn image(_: int, _: ?) -> ?;", e),
            "fn image(_: int, _: ?) -> Content;"
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
