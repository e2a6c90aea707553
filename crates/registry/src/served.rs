//! What a server offers besides tools, as scripts declare it: resources (`resource(uri)`),
//! resource templates (`resource_template("notes://{name}")`) and prompts (`prompt(name)`).
//!
//! Each one is read through a [`Tool`] of its own (its handler, the capabilities it requires,
//! its deadline), so a read is a call: it takes the capability guard, the sandbox and the run
//! log as a tool call does. Completions of a prompt's arguments or a template's parameters are
//! tools too, taking `{"value": prefix}`.

pub mod apps;

use indexmap::IndexMap;
use kiln_core::error::{LoadError, LoadErrorKind, SourceLoc};
use kiln_core::tool::Tool;
use serde_json::{Map, Value};
use std::sync::Arc;

/// How the reader of a resource, a template or a prompt is told apart from a tool in the run
/// log: its tool name starts with one of these.
pub const READ_PREFIX: &str = "read_";
/// See [`READ_PREFIX`].
pub const PROMPT_PREFIX: &str = "prompt_";
/// See [`READ_PREFIX`]: the completer of a prompt's or template's argument.
pub const COMPLETE_PREFIX: &str = "complete_";

/// What a resource or template says about itself.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// A short name (`.name(...)`; the URI when not set).
    pub name: String,
    /// `.title(...)`.
    pub title: Option<String>,
    /// `.description(...)`.
    pub description: String,
    /// `.mime(...)`: the content's MIME type.
    pub mime: Option<String>,
    /// `.size(n)`: its size in bytes, when known ahead.
    pub size: Option<u64>,
}

/// A resource at one URI.
#[derive(Clone)]
pub struct Resource {
    /// Its URI.
    pub uri: String,
    /// Name, title, description, MIME type and size.
    pub listing: Listing,
    /// Reads it: a tool taking no arguments.
    pub reader: Arc<Tool>,
    /// Where it was declared.
    pub loc: SourceLoc,
}

/// Resources at URIs of one pattern (`notes://{name}`), read with the parameters it holds.
#[derive(Clone)]
pub struct ResourceTemplate {
    /// The URI template (RFC 6570, level 1: `{name}` parameters).
    pub uri_template: String,
    /// Name, title, description and MIME type.
    pub listing: Listing,
    /// Reads one resource: a tool taking the parameters as strings.
    pub reader: Arc<Tool>,
    /// Completions of its parameters, by parameter.
    pub completions: Vec<(String, Arc<Tool>)>,
    /// Where it was declared.
    pub loc: SourceLoc,
}

/// One argument of a prompt.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PromptArg {
    /// Its name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// Whether the prompt needs it.
    pub required: bool,
}

/// A prompt: messages made from its arguments.
#[derive(Clone)]
pub struct Prompt {
    /// Its name.
    pub name: String,
    /// `.title(...)`.
    pub title: Option<String>,
    /// `.description(...)`.
    pub description: String,
    /// `.arg(...)` calls in order.
    pub args: Vec<PromptArg>,
    /// Makes the messages: a tool taking the arguments as strings.
    pub getter: Arc<Tool>,
    /// Completions of its arguments, by argument.
    pub completions: Vec<(String, Arc<Tool>)>,
    /// Where it was declared.
    pub loc: SourceLoc,
}

impl ResourceTemplate {
    /// The template's parameters in order.
    pub fn params(&self) -> Vec<String> {
        template_params(&self.uri_template)
    }

    /// The parameters `uri` gives the template, when it matches it (a parameter matches one
    /// or more characters up to the next literal, never a `/`).
    pub fn matches(&self, uri: &str) -> Option<Map<String, Value>> {
        match_template(&self.uri_template, uri)
    }
}

/// The parameters of a URI template, in order.
pub fn template_params(template: &str) -> Vec<String> {
    template_parts(template)
        .into_iter()
        .filter_map(|p| match p {
            Part::Param(name) => Some(name.to_string()),
            Part::Literal(_) => None,
        })
        .collect()
}

/// The parameters `uri` gives `template`, when it matches it.
fn match_template(template: &str, uri: &str) -> Option<Map<String, Value>> {
    let parts = template_parts(template);
    let mut params = Map::new();
    let mut rest = uri;
    for (i, part) in parts.iter().enumerate() {
        match part {
            Part::Literal(lit) => rest = rest.strip_prefix(lit)?,
            Part::Param(name) => {
                let end = match parts.get(i + 1) {
                    Some(Part::Literal(next)) => rest.find(next)?,
                    _ => rest.len(),
                };
                let value = &rest[..end];
                if value.is_empty() || value.contains('/') {
                    return None;
                }
                params.insert(name.to_string(), Value::String(value.to_string()));
                rest = &rest[end..];
            }
        }
    }
    rest.is_empty().then_some(params)
}

enum Part<'a> {
    Literal(&'a str),
    Param(&'a str),
}

fn template_parts(template: &str) -> Vec<Part<'_>> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        if open > 0 {
            parts.push(Part::Literal(&rest[..open]));
        }
        parts.push(Part::Param(&rest[open + 1..open + close]));
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Literal(rest));
    }
    parts
}

/// The problem with a URI template, if any: unclosed braces, an empty or repeated parameter,
/// or two parameters with nothing between them.
pub fn template_problem(template: &str) -> Option<String> {
    if template.matches('{').count() != template.matches('}').count() {
        return Some(format!("URI template \"{template}\" has unbalanced braces"));
    }
    let parts = template_parts(template);
    let mut seen = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        if let Part::Param(name) = part {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Some(format!(
                    "URI template \"{template}\": parameter \"{{{name}}}\" must be a name of letters, digits and _"
                ));
            }
            if seen.contains(name) {
                return Some(format!(
                    "URI template \"{template}\": parameter \"{name}\" appears twice"
                ));
            }
            if matches!(parts.get(i + 1), Some(Part::Param(_))) {
                return Some(format!(
                    "URI template \"{template}\": parameters need a literal between them"
                ));
            }
            seen.push(name);
        }
    }
    if seen.is_empty() {
        return Some(format!(
            "URI template \"{template}\" has no {{parameter}}: declare it with resource(uri)"
        ));
    }
    None
}

/// The tool name of a reader: `prefix` and the name with what a tool name may not hold as `_`.
pub fn reader_name(prefix: &str, name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut out = format!("{prefix}{cleaned}");
    out.truncate(64);
    out
}

/// The resources, templates and prompts of one file or of the whole load.
#[derive(Clone, Default)]
pub struct Served {
    /// Resources by URI, in load order.
    pub resources: IndexMap<String, Resource>,
    /// Templates by URI template, in load order.
    pub templates: IndexMap<String, ResourceTemplate>,
    /// Prompts by name, in load order.
    pub prompts: IndexMap<String, Prompt>,
}

impl Served {
    /// True when there is nothing in it.
    pub fn is_empty(&self) -> bool {
        self.resources.is_empty() && self.templates.is_empty() && self.prompts.is_empty()
    }

    /// `2 resources, 1 resource template, 1 prompt` (the kinds there are), or `None`.
    pub fn summary(&self) -> Option<String> {
        let count = |n: usize, one: &str| match n {
            0 => None,
            1 => Some(format!("1 {one}")),
            n => Some(format!("{n} {one}s")),
        };
        let parts: Vec<String> = [
            count(self.resources.len(), "resource"),
            count(self.templates.len(), "resource template"),
            count(self.prompts.len(), "prompt"),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }

    /// Adds another file's; a second definition of a URI, a template or a prompt name is an
    /// error naming both places.
    pub fn add(&mut self, other: &Served, errors: &mut Vec<LoadError>) {
        let dup = |what: &str, key: &str, at: &SourceLoc, prev: &SourceLoc| {
            LoadError::of(
                LoadErrorKind::Registry,
                at.clone(),
                format!("duplicate {what} \"{key}\": already defined at {prev}"),
            )
        };
        for (uri, r) in &other.resources {
            match self.resources.get(uri) {
                Some(prev) => errors.push(dup("resource", uri, &r.loc, &prev.loc)),
                None => {
                    self.resources.insert(uri.clone(), r.clone());
                }
            }
        }
        for (uri, t) in &other.templates {
            match self.templates.get(uri) {
                Some(prev) => errors.push(dup("resource template", uri, &t.loc, &prev.loc)),
                None => {
                    self.templates.insert(uri.clone(), t.clone());
                }
            }
        }
        for (name, p) in &other.prompts {
            match self.prompts.get(name) {
                Some(prev) => errors.push(dup("prompt", name, &p.loc, &prev.loc)),
                None => {
                    self.prompts.insert(name.clone(), p.clone());
                }
            }
        }
    }

    /// The resource at `uri`, or the first template it matches with its parameters.
    pub fn find(&self, uri: &str) -> Option<Found> {
        if let Some(r) = self.resources.get(uri) {
            return Some(Found {
                reader: r.reader.clone(),
                params: Map::new(),
                mime: r.listing.mime.clone(),
            });
        }
        self.templates.values().find_map(|t| {
            t.matches(uri).map(|params| Found {
                reader: t.reader.clone(),
                params,
                mime: t.listing.mime.clone(),
            })
        })
    }
}

/// What reads the resource at a URI.
pub struct Found {
    /// The reader tool.
    pub reader: Arc<Tool>,
    /// Its arguments: the template's parameters (none for a plain resource).
    pub params: Map<String, Value>,
    /// The MIME type the resource or template declares.
    pub mime: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(template: &str, uri: &str) -> Option<Value> {
        match_template(template, uri).map(Value::Object)
    }

    #[test]
    fn templates_match_their_uris_and_nothing_else() {
        let t = "test://template/{id}/data";
        assert_eq!(
            matches(t, "test://template/123/data"),
            Some(serde_json::json!({"id": "123"}))
        );
        assert_eq!(matches(t, "test://template/1/2/data"), None);
        assert_eq!(matches(t, "test://template//data"), None);
        assert_eq!(matches(t, "test://template/123/data/x"), None);
        assert_eq!(
            matches("notes://{name}", "notes://todo"),
            Some(serde_json::json!({"name": "todo"}))
        );
        assert_eq!(
            matches("x://{a}-{b}", "x://1-2"),
            Some(serde_json::json!({"a": "1", "b": "2"}))
        );
    }

    #[test]
    fn bad_templates_say_what_is_wrong() {
        assert!(template_problem("notes://{name}").is_none());
        for (t, says) in [
            ("notes://{name", "unbalanced"),
            ("notes://{}", "must be a name"),
            ("x://{a}/{a}", "appears twice"),
            ("x://{a}{b}", "literal between"),
            ("notes://all", "no {parameter}"),
        ] {
            let problem = template_problem(t).unwrap_or_default();
            assert!(problem.contains(says), "{t}: {problem}");
        }
    }

    #[test]
    fn reader_names_are_tool_names() {
        let name = reader_name(READ_PREFIX, "test://static-text");
        assert_eq!(name, "read_test___static-text");
        assert!(kiln_core::tool::valid_tool_name(&name));
        assert_eq!(reader_name(READ_PREFIX, &"x".repeat(100)).len(), 64);
    }
}
