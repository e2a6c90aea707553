//! The table against the engine: every function and builder method kiln's sandboxed engine
//! registers (Rhai's standard packages left out) has an entry taking the same arguments, every
//! entry names something registered (but the functions of `kiln test` files, which
//! kiln-testing registers and checks), and `docs/reference.md` is the table written out.

use super::entry::Entry;
use super::signature;
use super::table::{entries, is_builder, is_test_function};

/// Functions kiln registers that are not part of its DSL: Rhai's conversions for printing kiln's
/// values, and size-checked versions of Rhai's own string functions (`bounded.rs`).
const NOT_THE_DSL: &[&str] = &["to_string", "to_debug", "replace", "split", "to_chars"];

/// One registered function: receiver (`""` for a function), name, and its parameters' types
/// after the receiver.
#[derive(Debug)]
struct Registered {
    on: String,
    name: String,
    types: Vec<String>,
}

/// A metadata type (`&mut ToolBuilder`, `types::dynamic::Dynamic`) as a short name; `any` when
/// there is none.
fn short(ty: &str) -> String {
    let ty = ty
        .trim()
        .trim_start_matches("&mut ")
        .trim_start_matches('&');
    match ty.rsplit("::").next().unwrap_or(ty) {
        "" | "?" | "Dynamic" => "any".to_string(),
        t => t.to_string(),
    }
}

fn registered() -> Vec<Registered> {
    let engine = crate::engine(&crate::sandbox::Limits::default(), Vec::new(), None);
    engine
        .gen_fn_signatures(false)
        .iter()
        .filter_map(|sig| {
            let (name, rest) = sig.split_once('(')?;
            let params = rest.split_once(')').map_or(rest, |(p, _)| p).trim();
            let mut types: Vec<String> = match params {
                "" => Vec::new(),
                p => p
                    .split(", ")
                    .map(|p| short(p.split_once(':').map_or("", |(_, t)| t)))
                    .collect(),
            };
            let on = match types.first() {
                Some(t) if is_builder(t) => types.remove(0),
                _ => String::new(),
            };
            Some(Registered {
                on,
                name: name.trim().to_string(),
                types,
            })
        })
        .filter(|r| !NOT_THE_DSL.contains(&r.name.as_str()))
        .collect()
}

/// Whether `e` describes the registered function `r`: same receiver and name, and one of its
/// argument lists takes `r`'s arguments.
fn describes(e: &Entry, r: &Registered) -> bool {
    e.on == r.on
        && e.name == r.name
        && signature::expansions(e.signature).iter().any(|x| {
            x.len() == r.types.len()
                && x.iter()
                    .zip(&r.types)
                    .all(|(p, t)| signature::accepts(&p.ty, t))
        })
}

#[test]
fn every_registered_function_has_an_entry() {
    let missing: Vec<String> = registered()
        .iter()
        .filter(|r| !entries().any(|e| describes(e, r)))
        .map(|r| {
            format!(
                "{}{}{}({})",
                r.on,
                if r.on.is_empty() { "" } else { "." },
                r.name,
                r.types.join(", ")
            )
        })
        .collect();
    assert!(
        missing.is_empty(),
        "registered but not described by crates/script/src/reference/: {missing:#?}"
    );
}

#[test]
fn every_entry_names_what_is_registered() {
    let all = registered();
    let mut stale = Vec::new();
    // kiln-testing registers the functions of test files on its own engine (its tests check
    // them).
    for e in entries().filter(|e| !is_test_function(e)) {
        for x in signature::expansions(e.signature) {
            if !all.iter().any(|r| {
                r.on == e.on && r.name == e.name && r.types.len() == x.len() && describes(e, r)
            }) {
                stale.push(format!("{} with {} argument(s)", e.signature, x.len()));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "in the table but not registered: {stale:#?}"
    );
}

#[test]
fn the_reference_is_the_table_written_out() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(super::REFERENCE_PATH);
    let want = super::markdown();
    if std::env::var_os("KILN_BLESS").is_some() {
        std::fs::write(&path, &want).expect("write docs/reference.md");
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} is stale: regenerate it with `KILN_BLESS=1 cargo test -p kiln-script reference`",
        super::REFERENCE_PATH
    );
}

#[test]
fn a_missing_entry_and_a_stale_one_are_both_caught() {
    let all = registered();
    // A registered method no entry of another name describes.
    let oauth = all
        .iter()
        .find(|r| r.on == "McpServerBuilder" && r.name == "oauth")
        .expect("oauth is registered");
    let wrong = super::entry::method("McpServerBuilder", "oath([options: map])", "x");
    assert!(!describes(&wrong, oauth));
    // An entry whose parameters do not match what is registered.
    let typed = super::entry::method("ToolBuilder", "timeout(ms: map)", "x");
    let timeout = all
        .iter()
        .find(|r| r.on == "ToolBuilder" && r.name == "timeout")
        .expect("timeout is registered");
    assert!(!describes(&typed, timeout));
}

/// A value of the table's type `ty` for parameter `name`, as Rhai source.
fn sample_argument(name: &str, ty: &str) -> &'static str {
    match (name, ty.split('|').next().unwrap_or_default().trim()) {
        ("url", _) => "\"https://example.com/\"",
        (_, "int" | "number") => "1",
        (_, "float") => "1.5",
        (_, "bool") => "true",
        (_, "map") => "#{}",
        (_, "array") => "[]",
        (_, "fn") => "|x| x",
        _ => "\"notes.txt\"",
    }
}

/// The refusal a call's error carries, if it is one.
fn refusal(err: &rhai::EvalAltResult) -> Option<String> {
    match err {
        rhai::EvalAltResult::ErrorRuntime(value, _) => value
            .clone()
            .try_cast::<crate::host::DeniedValue>()
            .map(|d| d.0),
        rhai::EvalAltResult::ErrorInFunctionCall(_, _, inner, _) => refusal(inner),
        _ => None,
    }
}

#[test]
fn each_gated_function_is_refused_for_the_capability_the_table_names() {
    let engine = crate::engine(&crate::sandbox::Limits::default(), Vec::new(), None);
    let services = std::sync::Arc::new(kiln_core::services::Services::new(std::env::temp_dir()));
    let ctx =
        kiln_core::context::CallContext::new(kiln_core::capability::Grants::default(), services);
    let gated: Vec<&Entry> = entries().filter(|e| e.capability.is_some()).collect();
    assert!(
        gated.len() >= 10,
        "the gated host functions are in the table"
    );
    for e in gated {
        let shortest = signature::expansions(e.signature).remove(0);
        let args: Vec<&str> = (shortest.iter())
            .map(|p| sample_argument(&p.name, &p.ty))
            .collect();
        let call = format!("{}({})", e.name, args.join(", "));
        let err = crate::host::with_grants(&ctx, || engine.run(&call))
            .expect_err(&format!("{call} runs with no grant"));
        let told = refusal(&err).unwrap_or_else(|| panic!("{call}: not a refusal: {err}"));
        let cap = e.capability.unwrap_or_default();
        assert!(
            told.contains(&format!("does not declare capability \"{cap}\"")),
            "{call}: the table says {cap}, the gate says: {told}"
        );
    }
}

/// The type name Rhai gives a value of the table's return type `ty`.
fn rhai_type_name(ty: &str) -> &str {
    match ty {
        "string" => "string",
        "int" => "i64",
        "float" => "f64",
        other => other,
    }
}

#[test]
fn a_return_type_in_the_table_is_what_a_call_returns() {
    let engine = crate::engine(&crate::sandbox::Limits::default(), Vec::new(), None);
    // Rhai's definitions name what a plain function returns (not what one returning a
    // `Result` does): where both say, they agree.
    let defs = super::definitions(&engine);
    for line in defs.lines().filter(|l| l.starts_with("fn ")) {
        let said = line
            .rsplit_once("-> ")
            .map(|(_, t)| t.trim_end_matches(';'));
        if let (Some(e), Some(said)) = (super::entry_of_definition(line), said)
            && let Some(ty) = e.returns()
        {
            assert_eq!(ty, said, "{line}: the table says {}", e.signature);
        }
    }
    // Those Rhai cannot name, called: every ungated function the table gives a return type.
    let calls = [
        "image(\"iVBORw0KGgo=\", \"image/png\")",
        "audio(\"UklGRg==\", \"audio/wav\")",
        "resource_block(\"file:///a\", \"text\", \"text/plain\")",
        "resource(\"file:///a\", \"text\", \"text/plain\")",
        "resource_blob_block(\"file:///a\", \"AA==\", \"a/b\")",
        "resource_blob(\"file:///a\", \"AA==\", \"a/b\")",
        "progress(1)",
        "progress(1, 2)",
        "progress(1, 2, \"x\")",
        "emit(\"x\", 1)",
        "log(\"info\", \"x\")",
        "log(\"info\", 1)",
        "elicit_request(\"m\", #{})",
        "form_request(\"m\", #{})",
        "sample_request(\"p\")",
        "sample_request(\"p\", #{})",
        "roots_request()",
        "answer_equals()",
        "answer_equals(\"x\")",
        "answer_contains()",
        "answer_contains(\"x\")",
        "answer_matches(\"x+\")",
        "output_equals()",
        "output_equals(#{})",
        "output_matches(#{ type: \"object\" })",
        "called(\"t\")",
        "called(\"t\", #{})",
        "called_in_order([\"a\"])",
        "at_most_calls(2)",
        "at_most_calls(\"t\", 2)",
        "within_duration(\"2s\")",
        "within_tokens(100)",
        "within_cost(0.5)",
        "no_tool_error()",
        "judge(#{ rubric: \"r\" })",
    ];
    let mut called = std::collections::BTreeSet::new();
    for call in calls {
        let value: rhai::Dynamic = engine.eval(call).unwrap_or_else(|e| panic!("{call}: {e}"));
        let name = &call[..call.find('(').unwrap_or_default()];
        let arity = call.matches(',').count() + usize::from(!call.contains("()"));
        let e = (super::find_all("", name))
            .find(|e| {
                signature::expansions(e.signature)
                    .iter()
                    .any(|x| x.len() == arity)
            })
            .unwrap_or_else(|| panic!("{call}: not in the table"));
        let ty = e
            .returns()
            .unwrap_or_else(|| panic!("{}: no return type", e.signature));
        assert_eq!(
            engine.map_type_name(value.type_name()),
            rhai_type_name(ty),
            "{call}"
        );
        called.insert(e.signature);
    }
    for e in entries().filter(|e| e.on.is_empty() && e.capability.is_none()) {
        if e.returns().is_some() && e.name != "ask_client" {
            assert!(
                called.contains(e.signature),
                "{}: its return type is not checked here",
                e.signature
            );
        }
    }
}
