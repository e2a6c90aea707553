//! What a script can call, from the host's own engine (so an application's functions are
//! there too): each builder's methods and each function, with their signatures, their doc
//! comments and the capability a gated one needs.

use kiln_script::dsl_docs;
use std::collections::BTreeMap;

/// One callable name.
#[derive(Debug, Clone, Default)]
pub struct Entry {
    /// Its signatures as `kiln definitions` prints them (`param(_: ToolBuilder, ...)`).
    pub signatures: Vec<String>,
    /// Its doc comment, or the DSL's line on it.
    pub doc: String,
    /// How it is called, parameters named, when the DSL documents it.
    pub call: Option<&'static str>,
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
pub const PROVIDERS: &[&str] = &["anthropic", "openai", "ollama", "script"];

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
            let on = match dsl_docs::BUILDERS.iter().any(|(b, _)| *b == ty) {
                true => ty,
                false => "",
            };
            let entry = match on {
                "" => cat.functions.entry(name.to_string()).or_default(),
                _ => (cat.methods.entry(on.to_string()).or_default())
                    .entry(name.to_string())
                    .or_default(),
            };
            entry.signatures.push(sig.clone());
            if entry.doc.is_empty() && !doc.is_empty() {
                entry.doc = doc.join(" ");
            }
            if let Some(d) = dsl_docs::find(on, name) {
                entry.call = Some(d.call);
                if entry.doc.is_empty() {
                    entry.doc = d.doc.to_string();
                }
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
        match entry.call {
            Some(call) if on.is_empty() => out.push_str(&format!("{call}\n")),
            Some(call) => out.push_str(&format!(".{call}\n")),
            None => {}
        }
        for sig in &entry.signatures {
            out.push_str(&format!("fn {sig}\n"));
        }
        out.push_str("```\n");
        if !entry.doc.is_empty() {
            out.push_str(&format!("\n{}\n", entry.doc));
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

    const DEFS: &str = "module static;\n\nfn param(_: ToolBuilder, _: string, _: string) -> ToolBuilder;\n\nfn param(_: ToolBuilder, _: string, _: string, _: map) -> ToolBuilder;\n\n/// Asks the client.\nfn sample(prompt: string) -> string;\n\nfn read_file(_: string) -> ?;\n";

    #[test]
    fn methods_are_filed_under_their_builder_and_functions_carry_their_capability() {
        let cat = Catalog::from_definitions(DEFS, &BTreeMap::new());
        let param = &cat.methods["ToolBuilder"]["param"];
        assert_eq!(param.signatures.len(), 2);
        assert_eq!(param.call, Some("param(name, type[, options])"));
        assert_eq!(cat.functions["sample"].doc, "Asks the client.");
        let read = cat.describe("", "read_file").expect("documented");
        assert!(
            read.contains("read_file(path)") && read.contains("`fs.read`"),
            "{read}"
        );
    }
}
