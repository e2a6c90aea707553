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
    .code_mode(#{ max_calls: 25, timeout: "1500ms" })
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
// The same agent with a deadline far off, so a busy loop meets the operation limit first
// however loaded the machine is.
agent("patient").provider("script").tools(["lookup"])
    .code_mode(#{ max_calls: 25, timeout: "2m" })
    .planner(|messages, tools| {
        let last = messages[messages.len() - 1];
        if last.role == "user" {
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
    ask_agent(host, "coder", program)
}

fn ask_agent(host: &Host, agent: &str, program: &str) -> kiln::RunReport {
    tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(host.run(agent, program, RunOptions::default()))
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

/// With a terminal, each call a program makes of an `ask` tool asks there, once: a yes runs
/// it, a no is an error the program catches and the run goes on.
#[test]
fn an_ask_call_asks_the_terminal_once_per_call_and_a_no_is_caught() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("code.rhai"), SCRIPTS).expect("write");
    let program = r#"let a = secret(#{ q: "1" });
let b = "";
try { b = secret(#{ q: "2" }); } catch (e) { b = "refused"; }
[a.len() > 0, b]"#;
    let mut cmd = crate::common::ask_command(&["coder", program, "--no-stdlib"], dir.path());
    cmd.arg("--scripts").arg(dir.path());
    let mut p = rexpect::session::spawn_command(cmd, Some(20_000)).expect("spawn");
    for answer in ["y", "n"] {
        p.exp_string("tool \"secret\" may use env only when a person approves")
            .expect("the question names the nested call");
        p.exp_string("allow? [y]es / [n]o / [a]lways for this run:")
            .expect("prompt");
        p.send_line(answer).expect("answer");
    }
    p.exp_string("false: [true, \"refused\"]")
        .expect("the first call ran, the second was refused and caught");
    p.exp_eof().expect("exits");
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
    let report = ask_agent(&host, "patient", "loop { }");
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

/// What small models write by habit, and the Rhai form each error must name.
const HABITS: &[(&str, &str)] = &[
    (
        r#"let p = lookup({ sku: "A" }); p.price"#,
        "#{ key: value }",
    ),
    (
        r#"let total = [1, 2].reduce((a, b) => a + b, 0); total"#,
        "|acc, x|",
    ),
    (r#"[1, 2].map(x => x * 2)"#, "|x| x + 1"),
    (r#"function f(x) { x } f(1)"#, "fn name(a, b)"),
    (r#"def f(x): return x"#, "fn name(a, b)"),
    (r#"console.log("hi"); 1"#, "print(...)"),
    (r#"let a = 1; if a === 1 { 2 } else { 3 }"#, "== and !="),
    (r#"let i = 0; i++; i"#, "x += 1"),
    (r#"let x = undefined; x"#, "the empty value is ()"),
    (r#"let x = null; x"#, "the empty value is ()"),
    (r#"let x = None; x"#, "the empty value is ()"),
    (r#"let xs = [1, 2]; xs.length"#, ".len()"),
    (r#"Math.floor(2.5)"#, "floor(x)"),
    (r#"JSON.stringify(#{ a: 1 })"#, "no JSON object"),
    (r#"var x = 1; x"#, "variables are let"),
    (
        r#"let p = await lookup(#{ sku: "A" }); p"#,
        "no async or await",
    ),
    (r#"[1, 2].forEach(|x| print(x)); 1"#, "for item in list"),
    (
        r#"for (let i = 0; i < 3; i += 1) { print(i); } 1"#,
        "for i in 0..n",
    ),
    (r#"let s = 'hello'; s"#, "double quotes or backticks"),
    (r#"const n = 1; n = 2; n"#, "let"),
    (r#"let {a, b} = #{ a: 1, b: 2 }; a"#, "no destructuring"),
    (r#"let x = True; x"#, "true and false"),
    (r#"if 1 == 2 { 1 } elif 1 == 1 { 2 } else { 3 }"#, "else if"),
    (
        r#"fn lookup(x) { #{ price: 0 } } lookup(#{ sku: "A" }).price"#,
        "lookup is a tool",
    ),
];

#[test]
fn the_usual_javascript_and_python_habits_get_the_rhai_form_in_the_error() {
    let (_dir, host) = host();
    let mut missed = Vec::new();
    for (program, fix) in HABITS {
        let report = ask(&host, program);
        if !(report.answer.starts_with("true: ") && report.answer.contains(fix)) {
            missed.push(format!("{program}\n  -> {}", report.answer));
        }
    }
    assert!(
        missed.is_empty(),
        "{} of {} missed:\n{}",
        missed.len(),
        HABITS.len(),
        missed.join("\n")
    );
}

#[test]
fn past_twenty_tools_run_code_names_them_and_search_tools_gives_their_signatures() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut src = String::new();
    for i in 1..=100 {
        src.push_str(&format!(
            "tool(\"stock_{i}\").description(\"Stock level of warehouse {i} for one SKU\").param(\"sku\", \"string\", \"the SKU\").handler(|a| {i});\n"
        ));
    }
    std::fs::write(dir.path().join("many.rhai"), src).expect("write");
    let host = Host::builder()
        .scripts(dir.path())
        .stdlib(false)
        .build()
        .expect("host");
    let tools: Vec<_> = host.registry().all().cloned().collect();
    assert_eq!(tools.len(), 100);
    let code = kiln_script::program::code_mode::code_tools(&tools, &Default::default());
    let names: Vec<&str> = code.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["run_code", "search_tools"]);
    // What a request carries: each tool's name, description and schema.
    let bytes = |ts: &[Arc<kiln::tool::Tool>]| -> usize {
        ts.iter()
            .map(|t| {
                serde_json::json!([t.name, t.description, t.schema])
                    .to_string()
                    .len()
            })
            .sum()
    };
    let (all, code_mode) = (bytes(&tools), bytes(&code));
    eprintln!("definitions of 100 tools: {all} bytes; in code mode: {code_mode} bytes");
    assert!(code_mode * 4 < all, "{code_mode} against {all}");
    let search = code
        .iter()
        .find(|t| t.name == "search_tools")
        .expect("search");
    let ctx = host.context(Default::default());
    let found = search
        .execute(&serde_json::json!({"query": "warehouse 42"}), &ctx)
        .result
        .expect("found");
    assert_eq!(
        found[0]["function"], "stock_42(#{ sku: string })",
        "{found}"
    );
}

/// `kiln ask AGENT PROMPT --json` over `scripts`: the run's report.
fn ask_json(scripts: &crate::common::Scripts, agent: &str, prompt: &str) -> serde_json::Value {
    let out = crate::common::ask_command(&[agent, prompt, "--json", "--no-stdlib"], scripts.path())
        .arg("--scripts")
        .arg(scripts.path())
        .output()
        .expect("kiln ask");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json report")
}

/// The same task (20 price lookups and a total) against `kiln mock`: plain tool calling, one
/// call a round as a sequential model makes them, against one program. Rounds and the bytes
/// sent to the model, side by side.
#[test]
fn one_program_against_twenty_rounds_of_tool_calls_on_the_wire() {
    use crate::common::{Mock, Scripts};
    use serde_json::{Value, json};
    let plain_turns: Vec<Value> = (1..=20)
        .map(|i| json!({"tool_calls": [{"name": "lookup", "args": {"sku": format!("SKU-{i}")}}]}))
        .chain([json!({"text": "The total is 30."})])
        .collect();
    let program = "let t = 0.0; for i in 1..=20 { t += lookup(#{ sku: `SKU-${i}` }).price; } t";
    let code_turns = vec![
        json!({"code": program}),
        json!({"text": "The total is 30."}),
    ];
    let mut seen = Vec::new();
    for (mode, turns) in [("", plain_turns), (".code_mode()", code_turns)] {
        let mock = Mock::start(&json!({"turns": turns}));
        let scripts = Scripts::new(&[(
            "shop.rhai",
            &format!(
                r#"tool("lookup").description("Price of a SKU").param("sku", "string").handler(|a| #{{ sku: a.sku, price: 1.5 }});
agent("shop").provider("openai").model("m").base_url("{}/v1").tools(["lookup"]).max_tool_iterations(25){mode};"#,
                mock.url
            ),
        )]);
        let report = ask_json(&scripts, "shop", "Total of SKU-1..20?");
        let sent: usize = mock
            .requests()
            .iter()
            .map(|r| r["body"].to_string().len())
            .sum();
        seen.push((
            report["rounds"].as_u64().unwrap_or(0),
            sent,
            report["answer"].clone(),
        ));
    }
    let ((plain_rounds, plain_bytes, a), (code_rounds, code_bytes, b)) =
        (seen[0].clone(), seen[1].clone());
    eprintln!(
        "20 lookups: plain {plain_rounds} rounds, {plain_bytes} bytes sent; code mode {code_rounds} rounds, {code_bytes} bytes sent"
    );
    assert_eq!((plain_rounds, code_rounds), (21, 2));
    assert_eq!(a, b);
    assert!(
        code_bytes < plain_bytes,
        "{code_bytes} against {plain_bytes}"
    );
}

/// The code-mode chapter, run as written: its tool and agent (pointed at `kiln mock`
/// instead of Anthropic) and the program it shows, sent as the model's answer.
#[test]
fn the_readme_code_mode_example_works_as_written() {
    use crate::common::{Mock, Scripts, repo};
    use serde_json::json;
    let doc = std::fs::read_to_string(repo().join("docs/code-mode.md")).expect("docs/code-mode.md");
    // Each rhai block without its info string (the program is `rhai fragment`).
    let blocks: Vec<&str> = doc
        .split("```")
        .skip(1)
        .step_by(2)
        .filter_map(|b| b.strip_prefix("rhai"))
        .filter_map(|b| b.split_once('\n').map(|(_, code)| code))
        .collect();
    assert_eq!(blocks.len(), 2, "the definitions and the program");
    let mock = Mock::start(&json!({"turns": [{"code": blocks[1]}, {"text": "30 in all"}]}));
    let scripts = Scripts::new(&[(
        "shop.rhai",
        &blocks[0].replace(
            r#".provider("anthropic")"#,
            &format!(
                r#".provider("openai").model("m").base_url("{}/v1")"#,
                mock.url
            ),
        ),
    )]);
    let report = ask_json(&scripts, "shopper", "Total?");
    assert_eq!(report["rounds"], 2);
    assert_eq!(report["answer"], "30 in all");
    let program = &report["tool_calls"][0];
    assert_eq!(program["name"], "run_code");
    assert_eq!(program["outcome"]["result"], json!(30.0), "{program}");
    // The run log keeps the program's calls under it.
    let nested = program["nested"].as_array().expect("nested calls");
    assert_eq!(nested.len(), 20);
    assert_eq!(
        nested[0]["id"],
        format!("{}/1", program["id"].as_str().unwrap_or(""))
    );
    assert_eq!(nested[19]["args"], json!({"sku": "SKU-20"}));
    let logs = crate::common::kiln(&["logs", "--scripts", "."], scripts.path());
    let shown = crate::common::stdout(&logs);
    assert_eq!(shown.matches("      → lookup(").count(), 20, "{shown}");
    assert_eq!(shown.matches("  → run_code(").count(), 1, "{shown}");
}

#[test]
fn parallel_runs_closures_and_keeps_their_order() {
    let (_dir, host) = host();
    let program = r#"
        let skus = ["A", "B", "C", "D", "E", "F"];
        let jobs = skus.map(|s| || lookup(#{ sku: s }));
        let found = parallel(jobs);
        found.map(|p| p.sku).reduce(|a, b| a + b, "")
    "#;
    assert_eq!(ask(&host, program).answer, "false: ABCDEF");
    let failing = r#"parallel([|| lookup(#{ sku: "A" }), || hidden()])"#;
    let report = ask(&host, failing);
    assert!(report.answer.starts_with("true: "), "{}", report.answer);
    assert!(report.answer.contains("hidden"), "{}", report.answer);
}
