//! The table itself: the builders, the parts of functions and of each builder's methods, and
//! the look-ups completion, hover, the unknown-name hint and `kiln check` make in it.

use super::entry::Entry;
use super::{agent, builders, eval, functions, host, testing, tool};

/// The builders, with what the DSL calls each in messages, in the reference's order.
pub const BUILDERS: &[(&str, &str)] = &[
    ("ToolBuilder", "tool(...)"),
    ("AgentBuilder", "agent(...)"),
    ("PipelineBuilder", "pipeline(...)"),
    ("McpServerBuilder", "mcp_server(...)"),
    ("A2aAgentBuilder", "a2a_agent(...)"),
    ("ResourceBuilder", "resource(...)"),
    ("PromptBuilder", "prompt(...)"),
    ("PolicyBuilder", "policy(...)"),
    ("EvalBuilder", "evaluation(...)"),
];

/// The functions, in parts, each with its title in the reference.
pub const FUNCTION_PARTS: &[(&str, &[Entry])] = &[
    ("Declarations and policy verdicts", functions::DECLARATIONS),
    ("Values, content and reports", functions::VALUES),
    ("Gated host functions", host::GATED),
    ("Asking the MCP client", host::CLIENT),
    ("Evaluators (`kiln eval`)", eval::EVALUATORS),
    ("Test files (`kiln test`)", testing::TEST_FILES),
];

/// The functions of `kiln test` files, which kiln-testing registers on its own engine.
pub const TEST_FILES: &[Entry] = testing::TEST_FILES;

/// Whether `e` is one of the functions of `kiln test` files.
pub fn is_test_function(e: &Entry) -> bool {
    TEST_FILES.iter().any(|t| t.signature == e.signature)
}

/// Each builder's methods.
const METHOD_PARTS: &[&[Entry]] = &[
    tool::TOOL,
    agent::AGENT,
    builders::PIPELINE,
    builders::MCP_SERVER,
    builders::A2A_AGENT,
    builders::RESOURCE,
    builders::PROMPT,
    builders::POLICY,
    eval::EVALUATION,
];

/// Every entry of the table: functions first, then each builder's methods.
pub fn entries() -> impl Iterator<Item = &'static Entry> {
    (FUNCTION_PARTS.iter().map(|(_, part)| *part))
        .chain(METHOD_PARTS.iter().copied())
        .flat_map(|part| part.iter())
}

/// The entries named `name` on builder `on` (`""`: functions); several when one name takes
/// unrelated parameter lists (`resource(uri)` and `resource(uri, text, mime)`).
pub fn find_all(on: &str, name: &str) -> impl Iterator<Item = &'static Entry> {
    let (on, name) = (on.to_string(), name.to_string());
    entries().filter(move |e| e.on == on && e.name == name)
}

/// The first entry named `name` on builder `on` (`""`: functions).
pub fn find(on: &str, name: &str) -> Option<&'static Entry> {
    find_all(on, name).next()
}

/// The capability a call of function `name` needs, if any.
pub fn capability_of(name: &str) -> Option<&'static str> {
    find_all("", name).find_map(|e| e.capability)
}

/// Whether `name` on builder `on` (`""`: functions) is only a deprecated spelling of another.
pub fn is_deprecated(on: &str, name: &str) -> bool {
    let mut found = find_all(on, name).peekable();
    found.peek().is_some() && found.all(|e| e.replaced_by.is_some())
}

/// Whether `ty` is a builder's type name (`ToolBuilder`).
pub fn is_builder(ty: &str) -> bool {
    BUILDERS.iter().any(|(b, _)| *b == ty)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::signature;

    #[test]
    fn names_are_the_signatures_up_to_their_parenthesis() {
        let param = find("ToolBuilder", "param").expect("param is in the table");
        assert_eq!(param.call(), "param(name, type[, options])");
        assert!(find("", "exclusive").is_none());
        assert!(entries().all(|e| !e.name.is_empty()
            && !e.name.contains('(')
            && (e.signature.ends_with(')') || e.returns().is_some())));
        assert_eq!(capability_of("read_file"), Some("fs.read"));
        assert_eq!(capability_of("tool"), None);
        assert_eq!(find_all("", "resource").count(), 2);
    }

    #[test]
    fn every_receiver_is_a_builder_and_every_type_is_known() {
        for e in entries() {
            assert!(e.on.is_empty() || is_builder(e.on), "{}: {}", e.on, e.name);
            assert!(
                !e.doc.is_empty() && !e.doc.contains('\n'),
                "{}",
                e.signature
            );
            for p in e.params() {
                for ty in p.ty.split('|').map(str::trim) {
                    assert!(signature::TYPES.contains(&ty), "{}: type {ty}", e.signature);
                }
            }
            if let Some(ty) = e.returns() {
                assert!(
                    signature::TYPES.contains(&ty)
                        || ["()", "Content", "Evaluator"].contains(&ty)
                        || is_builder(ty),
                    "{}: returns {ty}",
                    e.signature
                );
            }
        }
    }

    #[test]
    fn a_deprecated_spelling_names_a_current_one_of_its_receiver() {
        for e in entries() {
            if let Some(new) = e.replaced_by {
                assert!(
                    find(e.on, new).is_some() && !is_deprecated(e.on, new),
                    "{} is replaced by {new}, which the table lacks",
                    e.signature
                );
            }
        }
        assert!(!is_deprecated("ToolBuilder", "param"));
        assert!(!is_deprecated("ToolBuilder", "no_such_method"));
    }

    #[test]
    fn one_signature_is_written_once() {
        let mut seen = std::collections::BTreeSet::new();
        for e in entries() {
            assert!(seen.insert((e.on, e.signature)), "{} twice", e.signature);
        }
    }
}
