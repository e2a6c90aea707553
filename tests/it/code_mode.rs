//! Code mode: the model answers with one Rhai program that calls the tools; every wall holds
//! inside it. The "model" here is a planner that sends the prompt as the program.

use kiln::{Host, RunOptions};
use std::sync::Arc;

const SCRIPTS: &str = r#"
tool("lookup").description("Price of a SKU").param("sku", "string")
    .handler(|a| #{ sku: a.sku, price: 1.5 });
tool("secret").description("Reads HOME").param("q", "string").requires("env")
    .handler(|a| env("HOME"));
tool("hidden").description("Not offered to the agent").handler(|a| "hidden");

agent("coder").provider("script").tools(["lookup", "secret"]).ask(["env"])
    .code_mode(#{ max_calls: 25, timeout: 1500 })
    .planner(|messages, tools| {
        let last = messages[messages.len() - 1];
        if last.role == "user" {
            if last.content == "tools?" {
                return #{ text: tools.map(|t| t.name).reduce(|a, b| a + "," + b, "") };
            }
            return #{ tool_calls: [#{ name: "run_code", args: #{ code: last.content } }] };
        }
        #{ text: `${last.is_error}: ${last.content}` }
    });
"#;

fn host() -> (tempfile::TempDir, Arc<Host>) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("code.rhai"), SCRIPTS).expect("write");
    let host = Host::builder()
        .scripts(dir.path())
        .workspace(dir.path())
        .stdlib(false)
        .build()
        .expect("host");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    (dir, host)
}

fn ask(host: &Host, program: &str) -> kiln::RunReport {
    tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(host.run("coder", program, RunOptions::default()))
        .expect("the run ends normally")
}

#[test]
fn the_model_is_offered_one_program_tool_listing_the_functions() {
    let (_dir, host) = host();
    assert_eq!(ask(&host, "tools?").answer, ",run_code");
    let reg = host.registry();
    let agent = host.agent("coder").expect("agent");
    assert_eq!(agent.code_mode.as_ref().map(|m| m.max_calls), Some(25));
    drop(reg);
}

#[test]
fn twenty_lookups_and_a_total_take_two_model_rounds() {
    let (_dir, host) = host();
    let program = r#"
        let total = 0.0;
        for i in 1..=20 {
            let p = lookup(#{ sku: `SKU-${i}` });
            total += p.price;
        }
        total
    "#;
    let report = ask(&host, program);
    assert_eq!(
        report.rounds, 2,
        "one round for the program, one for the answer"
    );
    assert_eq!(report.answer, "false: 30.0");
    assert_eq!(report.tool_calls.len(), 1);
    assert_eq!(report.tool_calls[0].name, "run_code");
}

#[test]
fn an_ask_call_without_anyone_to_ask_is_refused_and_the_program_can_catch_it() {
    let (_dir, host) = host();
    let program = r#"
        let said = "";
        try { said = secret(#{ q: "x" }); } catch (e) { said = `caught: ${e}`; }
        said
    "#;
    let report = ask(&host, program);
    assert!(
        report.answer.starts_with("false: caught: "),
        "{}",
        report.answer
    );
    assert!(
        report.answer.contains("needs approval"),
        "{}",
        report.answer
    );
}

#[test]
fn a_tool_the_agent_was_not_offered_is_not_a_function_of_the_program() {
    let (_dir, host) = host();
    let report = ask(&host, "hidden()");
    assert!(report.answer.starts_with("true: "), "{}", report.answer);
    assert!(report.answer.contains("hidden"), "{}", report.answer);
}

#[test]
fn an_endless_loop_ends_at_the_program_deadline_and_the_run_goes_on() {
    let (_dir, host) = host();
    let report = ask(&host, "loop { sleep(0.05); }");
    assert!(report.answer.starts_with("true: "), "{}", report.answer);
    assert!(report.answer.contains("deadline"), "{}", report.answer);
    // A busy loop meets the operation limit first: an error result all the same.
    let report = ask(&host, "loop { }");
    assert!(report.answer.starts_with("true: "), "{}", report.answer);
    assert!(
        report.answer.contains("Too many operations"),
        "{}",
        report.answer
    );
}

#[test]
fn a_program_over_its_call_budget_stops_with_a_clear_error() {
    let (_dir, host) = host();
    let report = ask(&host, r#"for i in 0..30 { lookup(#{ sku: "a" }); } 1"#);
    assert!(report.answer.starts_with("true: "), "{}", report.answer);
    assert!(
        report.answer.contains("budget of 25 tool calls"),
        "{}",
        report.answer
    );
}

#[test]
fn a_program_that_does_not_parse_says_where_and_shows_the_line() {
    let (_dir, host) = host();
    let report = ask(&host, "let a = 1;\nlet b = ;");
    assert!(
        report.answer.contains("line 2, column"),
        "{}",
        report.answer
    );
    assert!(report.answer.contains("2 | let b = ;"), "{}", report.answer);
}

#[test]
fn finish_returns_a_value_and_printed_lines_come_back_with_it() {
    let (_dir, host) = host();
    let report = ask(
        &host,
        r#"print("looking"); finish(lookup(#{ sku: "Z" }).price); 99"#,
    );
    assert!(report.answer.contains("1.5"), "{}", report.answer);
    assert!(report.answer.contains("looking"), "{}", report.answer);
    assert!(!report.answer.contains("99"), "{}", report.answer);
}

#[test]
fn a_program_reaches_no_host_function_and_imports_nothing() {
    let (_dir, host) = host();
    for program in [
        r#"read_file("code.rhai")"#,
        r#"env("HOME")"#,
        r#"import "code" as c; 1"#,
    ] {
        let report = ask(&host, program);
        assert!(
            report.answer.starts_with("true: "),
            "{program}: {}",
            report.answer
        );
    }
}
