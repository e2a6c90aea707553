//! What a script can call, from the host's own engine (so an application's functions are
//! there too): each builder's methods and each function, with their signatures, and what the
//! DSL's table (`kiln_script::reference`) says of them: the call with its parameters named and
//! typed, a line of doc and the capability a gated one needs. An application's function, which
//! the table does not know, keeps its doc comment.

use kiln_script::reference;
use std::collections::BTreeMap;

/// One callable name.
#[derive(Debug, Clone, Default)]
pub struct Entry {
    /// Its signatures as `kiln definitions` prints them (`param(_: ToolBuilder, ...)`).
    pub signatures: Vec<String>,
    /// The table's line on it, or its doc comment when the table does not describe it.
    pub doc: String,
    /// How it is called, parameters named, when the table describes it.
    pub call: Option<String>,
    /// The table's entries for it (several when one name takes unrelated parameter lists).
    pub table: Vec<&'static reference::Entry>,
}

impl Entry {
    /// Whether the table has it only as a deprecated spelling of another name.
    pub fn deprecated(&self) -> bool {
        !self.table.is_empty() && self.table.iter().all(|e| e.replaced_by.is_some())
    }
}

/// Everything scripts can call.
#[derive(Debug, Default)]
pub struct Catalog {
    /// Methods by builder type (`ToolBuilder`), then by name.
    pub methods: BTreeMap<String, BTreeMap<String, Entry>>,
    /// Functions by name.
    pub functions: BTreeMap<String, Entry>,
    /// The capability each gated function needs.
    pub capabilities: BTreeMap<String, String>,
}

/// The capability names a tool can require, with an example scope for each.
pub const CAPABILITIES: &[(&str, &str)] = &[
    (
        "net",
        "net:api.example.com, net:*.example.com, net:localhost:8080, net:10.0.0.0/8, net:private",
    ),
    ("fs.read", "fs.read:docs (a folder of the workspace)"),
    ("fs.write", "fs.write:out"),
    ("env", "env:HOME; secrets only through a grant naming them"),
    ("store", "store:cache"),
    ("sampling", "asks the MCP client's model"),
    ("elicitation", "asks the MCP client's user"),
    ("roots", "reads the MCP client's roots"),
    ("mcp", "mcp:SERVER: the tools of a mounted MCP server"),
];

/// The providers an agent can name.
pub const PROVIDERS: &[&str] = &["anthropic", "openai", "ollama", "script", "bedrock"];

impl Catalog {
    /// Reads the `.d.rhai` text of an engine (`kiln_host::api::engine_definitions`) and the
    /// gated functions' capabilities.
    pub fn from_definitions(defs: &str, app_caps: &BTreeMap<String, String>) -> Catalog {
        let mut cat = Catalog::default();
        let mut doc = Vec::new();
        for line in defs.lines() {
            if let Some(d) = line.strip_prefix("///") {
                doc.push(d.trim().to_string());
                continue;
            }
            let Some(sig) = line.strip_prefix("fn ") else {
                doc.clear();
                continue;
            };
            let sig = sig.trim_end_matches(';').to_string();
            let Some((name, rest)) = sig.split_once('(') else {
                continue;
            };
            let first = rest.split([',', ')']).next().unwrap_or_default();
            let ty = first.rsplit(':').next().unwrap_or_default().trim();
            let on = if reference::is_builder(ty) { ty } else { "" };
            let entry = match on {
                "" => cat.functions.entry(name.to_string()).or_default(),
                _ => (cat.methods.entry(on.to_string()).or_default())
                    .entry(name.to_string())
                    .or_default(),
            };
            entry.signatures.push(sig.clone());
            if entry.table.is_empty() {
                entry.table = reference::find_all(on, name).collect();
                entry.call = entry.table.first().map(|e| e.call());
                if !entry.table.is_empty() {
                    entry.doc = (entry.table.iter().map(|e| e.doc))
                        .collect::<Vec<_>>()
                        .join(" Or: ");
                }
            }
            if entry.doc.is_empty() && !doc.is_empty() {
                entry.doc = doc.join(" ");
            }
            doc.clear();
        }
        for name in cat.functions.keys() {
            if let Some(cap) = kiln_script::scan::capability_of(name) {
                cat.capabilities.insert(name.clone(), cap.to_string());
            }
        }
        cat.capabilities.extend(app_caps.clone());
        cat
    }

    /// A function's or method's description in Markdown.
    pub fn describe(&self, on: &str, name: &str) -> Option<String> {
        let entry = match on {
            "" => self.functions.get(name)?,
            _ => self.methods.get(on)?.get(name)?,
        };
        let mut out = String::from("```rhai\n");
        let dot = if on.is_empty() { "" } else { "." };
        for e in &entry.table {
            out.push_str(&format!("{dot}{}\n", e.call()));
        }
        for sig in &entry.signatures {
            out.push_str(&format!("fn {sig}\n"));
        }
        out.push_str("```\n");
        for e in &entry.table {
            let params: Vec<String> = (e.params().iter())
                .map(|p| match p.optional {
                    true => format!("`{}` {} (optional)", p.name, p.ty),
                    false => format!("`{}` {}", p.name, p.ty),
                })
                .collect();
            if !params.is_empty() {
                out.push_str(&format!("\n{dot}{}: {}\n", e.name, params.join(", ")));
            }
        }
        if !entry.doc.is_empty() {
            out.push_str(&format!("\n{}\n", entry.doc));
        }
        for new in entry.table.iter().filter_map(|e| e.replaced_by) {
            out.push_str(&format!("\nDeprecated: write `{dot}{new}(...)` instead.\n"));
        }
        if let Some(cap) = self.capabilities.get(name).filter(|_| on.is_empty()) {
            out.push_str(&format!(
                "\nNeeds capability `{cap}`: the tool declares it with `.requires(\"{cap}\")` and the caller grants it."
            ));
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFS: &str = "module static;\n\nfn param(_: ToolBuilder, _: string, _: string) -> ToolBuilder;\n\nfn param(_: ToolBuilder, _: string, _: string, _: map) -> ToolBuilder;\n\n/// Asks the client.\nfn crm_lookup(prompt: string) -> string;\n\n/// Registered words.\nfn sample(prompt: string) -> string;\n\nfn read_file(_: string) -> ?;\n\nfn oauth(_: McpServerBuilder) -> McpServerBuilder;\n";

    #[test]
    fn methods_are_filed_under_their_builder_and_functions_carry_their_capability() {
        let cat = Catalog::from_definitions(DEFS, &BTreeMap::new());
        let param = &cat.methods["ToolBuilder"]["param"];
        assert_eq!(param.signatures.len(), 2);
        assert_eq!(param.call.as_deref(), Some("param(name, type[, options])"));
        // An application's function keeps its doc comment; the table's line wins for the DSL.
        assert_eq!(cat.functions["crm_lookup"].doc, "Asks the client.");
        let sample = &cat.functions["sample"].doc;
        assert_eq!(
            sample,
            reference::find("", "sample").expect("in the table").doc
        );
        let read = cat.describe("", "read_file").expect("documented");
        assert!(
            read.contains("read_file(path)") && read.contains("`fs.read`"),
            "{read}"
        );
    }

    #[test]
    fn a_deprecated_spelling_says_what_replaces_it() {
        static OLD: reference::Entry = reference::Entry {
            on: "ToolBuilder",
            name: "retrys",
            signature: "retrys(n: int)",
            capability: None,
            doc: "Re-runs.",
            replaced_by: Some("retries"),
        };
        let mut cat = Catalog::default();
        let entry = Entry {
            table: vec![&OLD],
            ..Entry::default()
        };
        assert!(entry.deprecated() && !Entry::default().deprecated());
        (cat.methods.entry("ToolBuilder".into()).or_default()).insert("retrys".into(), entry);
        let told = cat.describe("ToolBuilder", "retrys").expect("described");
        assert!(
            told.contains("Deprecated: write `.retries(...)` instead."),
            "{told}"
        );
    }

    #[test]
    fn hover_shows_a_method_the_hand_written_list_missed_with_its_parameters() {
        let cat = Catalog::from_definitions(DEFS, &BTreeMap::new());
        let oauth = cat
            .describe("McpServerBuilder", "oauth")
            .expect("in the table");
        assert!(oauth.contains(".oauth([options])"), "{oauth}");
        assert!(oauth.contains("`options` map (optional)"), "{oauth}");
        assert!(oauth.contains("OAuth"), "{oauth}");
        let param = cat.describe("ToolBuilder", "param").expect("in the table");
        assert!(
            param.contains("`options` string | map (optional)"),
            "{param}"
        );
    }
}
