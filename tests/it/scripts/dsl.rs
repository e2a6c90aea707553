//! The DSL: every option's schema (golden files) and every load error with line and column.

use crate::common::*;
use kiln::model::Format;
use serde_json::Value;

const ALL_OPTIONS: &str = r#"
tool("every_option")
    .description("Exercises every param option")
    .param("plain", "string")
    .param("described", "integer", "A described integer")
    .param("sku", "string", #{ desc: "SKU", pattern: "^SKU-[0-9]+$", min_length: 5, max_length: 12 })
    .param("count", "integer", #{ "default": 5, min: 1, max: 10 })
    .param("ratio", "float", #{ optional: true, nullable: true })
    .param("when", "string", #{ format: "date", optional: true })
    .param("size", "string", #{ "enum": ["S", "M", "L"] })
    .param("tags", "array", #{ items: "string", min_items: 1, max_items: 3, optional: true })
    .param("prefs", "object", #{ optional: true, properties: #{ size: #{ type: "string", "enum": ["S", "L"] }, note: #{ type: "string", optional: true } } })
    .param("lines", "array", #{ items: #{ type: "object", properties: #{ sku: #{ type: "string" }, qty: #{ type: "integer", min: 1 } } } })
    .param("Content-Type", "string", #{ optional: true })
    .param("flag", "boolean", #{ optional: true })
    .requires(["database_read", "store"])
    .exclusive()
    .timeout("1500ms")
    .retries(2)
    .handler(|args, ctx| args);

tool("explicit")
    .description("Explicit input schema")
    .input_schema(#{ type: "object", properties: #{ q: #{ type: "string" } }, required: ["q"] })
    .handler(handle);

fn handle(args) { args.q }
"#;

fn golden(name: &str, actual: &Value) {
    let path = repo().join("tests/golden").join(name);
    let pretty = serde_json::to_string_pretty(actual).expect("json") + "\n";
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &pretty).expect("write golden");
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing golden {name}; run with UPDATE_GOLDEN=1"));
    assert_eq!(pretty, expected, "golden {name} differs");
}

#[test]
fn every_option_compiles_to_the_golden_schema_in_each_format() {
    let (s, host) = host_with(ALL_OPTIONS);
    assert!(s.errors(&host).is_empty(), "{:?}", s.errors(&host));
    let reg = host.registry();
    let tools = vec![
        host.tool("every_option").expect("tool"),
        host.tool("explicit").expect("tool"),
    ];
    for (fmt, name) in [
        (Format::Intermediate, "intermediate"),
        (Format::Anthropic, "anthropic"),
        (Format::OpenAi, "openai"),
        (Format::OpenAiStrict, "openai-strict"),
        (Format::Ollama, "ollama"),
    ] {
        let (defs, _) = kiln::tool::Registry::schemas(&tools, fmt);
        golden(&format!("every_option.{name}.json"), &Value::Array(defs));
    }
    let t = reg.find("every_option").expect("tool");
    let keys: Vec<&String> = t.schema["properties"]
        .as_object()
        .expect("props")
        .keys()
        .collect();
    assert_eq!(
        keys.first().map(|s| s.as_str()),
        Some("plain"),
        "param order is kept"
    );
    assert_eq!(keys.last().map(|s| s.as_str()), Some("flag"));
    assert!(t.exclusive);
    assert_eq!(t.retries, 2);
    assert_eq!(t.timeout.as_millis(), 1500);
    assert_eq!(t.requires.len(), 2);
}

#[test]
fn strict_export_warns_about_dropped_keywords() {
    let (_s, host) = host_with(ALL_OPTIONS);
    let t = host.tool("every_option").expect("tool");
    let (_, warnings) = kiln::tool::Registry::schemas(&[t], Format::OpenAiStrict);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("dropped `pattern` at /sku")),
        "{warnings:?}"
    );
}

fn errors_of(src: &str) -> Vec<String> {
    let (s, host) = host_with(src);
    s.errors(&host)
}

#[test]
fn each_load_error_names_file_line_and_column() {
    let cases: &[(&str, &str)] = &[
        (
            "tool(\"a\")\n  .handler(|args| 1)\n  let x = ;",
            "DIR/t.rhai:3:",
        ),
        (
            "tool(\"a\")\n    .param(\"x\", \"strng\")\n    .handler(|args| 1);",
            "DIR/t.rhai:2:6: tool \"a\": param \"x\": unknown param type \"strng\"",
        ),
        (
            "tool(\"a\")\n    .param(\"x\", \"string\", #{ colour: 1 })\n    .handler(|args| 1);",
            "DIR/t.rhai:2:6: tool \"a\": param \"x\": unknown option key `colour`",
        ),
        (
            "tool(\"bad name!\").handler(|args| 1);",
            "DIR/t.rhai:1:1: invalid tool name \"bad name!\"",
        ),
        (
            "\n\ntool(\"nohandler\").description(\"x\");",
            "DIR/t.rhai:3:1: tool \"nohandler\" has no .handler(...)",
        ),
        (
            "tool(\"mixed\")\n .param(\"x\", \"string\")\n .input_schema(#{ type: \"object\" })\n .handler(|args| 1);",
            "DIR/t.rhai:3:3: tool \"mixed\": .input_schema(...) cannot be mixed with .param(...)",
        ),
        (
            "tool(\"h\").handler(\"missing_fn\");",
            "DIR/t.rhai:1:11: tool \"h\": handler function \"missing_fn\" is not defined in this file",
        ),
        (
            "tool(\"p\").param(\"x\", \"string\", #{ pattern: \"(\" }).handler(|a| 1);",
            "not a valid regex",
        ),
        (
            "agent(\"a\").provider(\"vertex\");",
            "DIR/t.rhai:1:1: agent \"a\": unknown provider \"vertex\"",
        ),
        (
            "agent(\"a\").provider(\"openai\")\n  .tools([\"nope\"]);",
            "DIR/t.rhai:2:4: agent \"a\" lists tool \"nope\" which does not exist",
        ),
        (
            "tool(\"mail\").requires(\"email_send\").handler(|a| 1);\nagent(\"a\").provider(\"openai\")\n  .tools([\"mail\"]);",
            "DIR/t.rhai:3:4: agent \"a\" lists tool \"mail\" which requires [email_send] but the agent grants only []",
        ),
        ("let x = 1 / 0;", "DIR/t.rhai:1:11: Division by zero"),
    ];
    for (src, want) in cases {
        let errs = errors_of(src);
        assert!(
            errs.iter().any(|e| e.contains(want)),
            "source:\n{src}\nwanted: {want}\ngot: {errs:?}"
        );
    }
}

#[test]
fn unquoted_default_gets_a_hint() {
    let errs =
        errors_of("tool(\"a\")\n  .param(\"n\", \"integer\", #{ default: 5 })\n  .handler(|a| 1);");
    assert!(
        errs.iter()
            .any(|e| e.starts_with("DIR/t.rhai:2:") && e.contains("write the key quoted")),
        "{errs:?}"
    );
}

#[test]
fn duplicate_tools_name_both_locations_and_the_rest_still_loads() {
    let s = Scripts::new(&[
        (
            "a.rhai",
            "tool(\"dup\").handler(|a| 1);\ntool(\"ok_a\").handler(|a| 1);",
        ),
        ("b.rhai", "\ntool(\"dup\").handler(|a| 2);\nlet broken = ;"),
        ("c.rhai", "tool(\"ok_c\").handler(|a| 3);"),
    ]);
    let host = s.host();
    let errs = s.errors(&host);
    assert!(
        errs.iter().any(|e| e.contains("b.rhai:3:")),
        "syntax error in b: {errs:?}"
    );
    let reg = host.registry();
    assert!(reg.find("ok_a").is_some() && reg.find("ok_c").is_some());
    let s2 = Scripts::new(&[
        ("a.rhai", "tool(\"dup\").handler(|a| 1);"),
        ("b.rhai", "\ntool(\"dup\").handler(|a| 2);"),
    ]);
    let host2 = s2.host();
    let errs = s2.errors(&host2);
    assert!(
        errs.iter()
            .any(|e| e
                == "DIR/b.rhai:2:1: duplicate tool \"dup\": already defined at DIR/a.rhai:1:1"),
        "{errs:?}"
    );
}

#[test]
fn user_tool_may_replace_a_stdlib_tool() {
    let (s, host) = host_with("tool(\"calculator\").description(\"mine\").handler(|a| 42);");
    assert!(s.errors(&host).is_empty());
    assert_eq!(host.tool("calculator").expect("tool").description, "mine");
}

#[test]
fn agent_dsl_is_parsed() {
    let (s, host) = host_with(
        r#"tool("lookup").requires("database_read").handler(|a| 1);
agent("support").description("helps").provider("openai").model("gpt-4o-mini").system("be brief")
  .tools(["lookup", "calculator"]).capabilities(["database_read", "net:api.github.com"]).ask(["net"])
  .max_tool_iterations(3).temperature(0.2).max_tokens(512).base_url("http://127.0.0.1:1/v1");"#,
    );
    assert!(s.errors(&host).is_empty(), "{:?}", s.errors(&host));
    let a = host.agent("support").expect("agent");
    assert_eq!(a.provider, "openai");
    assert_eq!(a.model.as_deref(), Some("gpt-4o-mini"));
    assert_eq!(a.max_iterations, 3);
    assert_eq!(a.temperature, Some(0.2));
    assert_eq!(a.max_tokens, Some(512));
    assert_eq!(a.tools, vec!["lookup", "calculator"]);
    assert_eq!(a.grants.list(), "[database_read, net:api.github.com]");
    assert!(
        a.grants
            .iter()
            .any(|g| g.mode == kiln::tool::GrantMode::NeedsApproval)
    );
}

#[test]
fn examples_load_cleanly() {
    for dir in ["examples/catalog", "examples/seeds"] {
        let out = kiln(&["check", "--scripts", dir], &repo());
        assert!(
            out.status.success(),
            "{dir}: {}{}",
            stdout(&out),
            stderr(&out)
        );
    }
}

#[test]
fn check_warns_about_gated_calls_a_tool_did_not_declare() {
    let s = Scripts::new(&[(
        "w.rhai",
        "tool(\"sneaky\").handler(|a| { let f = |x| read_file(x); f.call(\"a\") });\ntool(\"helper_user\").handler(|a| helper());\nfn helper() { store_get(\"x\", \"y\") }\ntool(\"fine\").requires(\"net\").handler(|a| http_get(\"http://x\"));",
    )]);
    let out = kiln(&["check", "--scripts", "."], s.path());
    assert_eq!(out.status.code(), Some(0), "warnings do not fail the check");
    let err = stderr(&out);
    assert!(err.contains("warning: ./w.rhai:1:1: tool \"sneaky\" calls read_file(), which needs capability \"fs.read\", but does not declare it"), "{err}");
    assert!(
        err.contains("warning: ./w.rhai:2:1: tool \"helper_user\" calls store_get()"),
        "{err}"
    );
    assert!(!err.contains("\"fine\""), "{err}");
    let clean = kiln(&["check"], &repo());
    assert!(
        !stderr(&clean).contains("warning"),
        "the stdlib declares what it uses: {}",
        stderr(&clean)
    );
}

/// A model's `null` for an optional parameter counts as not given (the handler does not see
/// the key); for a required one, or one declared nullable, it stays and is validated.
#[test]
fn an_optional_parameter_sent_as_null_counts_as_not_given() {
    let (_s, host) = host_with(
        r#"tool("greet").param("name", "string").param("title", "string", #{ optional: true })
    .param("note", "string", #{ optional: true, nullable: true })
    .handler(|args| `${args.name}: title given=${"title" in args}, note=${args.note}`);"#,
    );
    let said = |args: Value| call(&host, "greet", args, &[]).result;
    assert_eq!(
        said(serde_json::json!({"name": "Ada", "title": null, "note": null})).ok(),
        Some(serde_json::json!("Ada: title given=false, note="))
    );
    let refused = said(serde_json::json!({"name": null}));
    assert!(
        refused
            .as_ref()
            .is_err_and(|f| f.message.contains("null is not of type \"string\"")),
        "{refused:?}"
    );
}

/// A file with three different mistakes reports all three at once, each with the known name
/// nearest the wrong one, and nothing of Rhai's internal signatures.
#[test]
fn three_mistakes_in_a_file_are_told_at_once_with_what_was_meant() {
    let s = Scripts::new(&[(
        "mistakes.rhai",
        r#"tool("weather").description("Weather").parm("city", "string").handler(|args| "sunny");
agent("a").provider("opneai");
tool("x").param("n", "integer", #{ mni: 1 }).handler(|args| 1);
tool("ok").description("Loads").handler(|args| 1);
"#,
    )]);
    let out = kiln(&["check", "--no-stdlib", "--scripts", "."], s.path());
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    for want in [
        "mistakes.rhai:1:40: tool(...): no method .parm(...); did you mean .param(name, type[, options])?",
        "mistakes.rhai:2:1: agent \"a\": unknown provider \"opneai\"; did you mean \"openai\"?",
        "mistakes.rhai:3:11: tool \"x\": param \"n\": unknown option key `mni`; did you mean \"min\"?",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    assert!(!text.contains("ImmutableString"), "{text}");
    assert!(
        !text.contains("has no .handler"),
        "no echo of the failed line: {text}"
    );
    assert!(
        stdout(&out).contains("3 error(s)") || text.contains("3 error(s)"),
        "{text}"
    );
}

#[test]
fn an_agent_listing_a_misspelt_tool_is_told_the_tool_it_meant() {
    let s = Scripts::new(&[(
        "agents.rhai",
        r#"tool("weather").description("Weather").handler(|args| "sunny");
agent("a").provider("script").planner(|m, t| #{ text: "hi" }).tools(["wether"]);"#,
    )]);
    let out = kiln(&["check", "--no-stdlib", "--scripts", "."], s.path());
    let text = stderr(&out);
    assert!(
        text.contains(
            "agent \"a\" lists tool \"wether\" which does not exist; did you mean \"weather\"?"
        ),
        "{text}"
    );
}
