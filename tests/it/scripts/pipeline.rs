//! Pipelines end to end: the real binary (`kiln run`, `kiln ask`, the REPL), `kiln mock` for
//! agent nodes, real script files.

use crate::common::*;
use serde_json::{Value, json};

/// Runs `kiln run ARGS --scripts . --json` in the folder; the report and the process output.
fn run_json(s: &Scripts, args: &[&str]) -> (Value, std::process::Output) {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--scripts", ".", "--json"]);
    let out = kiln(&all, s.path());
    let report = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&out), stderr(&out)));
    (report, out)
}

fn node<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["nodes"]
        .as_array()
        .and_then(|nodes| nodes.iter().find(|n| n["name"] == name))
        .unwrap_or_else(|| panic!("no node {name} in {report}"))
}

const DIAMOND: &str = r#"
tool("count_once").param("x", "integer").requires("store")
    .handler(|args| { let n = store_get("diamond", "calls") ?? 0; store_set("diamond", "calls", n + 1); args.x });
// Each side waits until the other has started: they pass only when both run at once.
tool("meet").param("me", "string").param("other", "string").param("x", "integer").requires("store")
    .handler(|args| {
        store_set("rendezvous", args.me, true);
        for i in 0..500 { if store_get("rendezvous", args.other) == true { return `${args.me}:${args.x}`; } sleep(0.01); }
        throw tool_error(`${args.me} waited alone for ${args.other}`);
    });
tool("join").param("left", "string").param("right", "string").requires("store")
    .handler(|args| #{ both: `${args.left}+${args.right}`, top_calls: store_get("diamond", "calls") });

pipeline("diamond")
    .description("Two branches from one value, joined")
    .input("x", "integer", "A number")
    .compute("top", ["x"], "count_once")
    .compute("left", ["top"], "meet", |v| #{ me: "left", other: "right", x: v.top })
    .compute("right", ["top"], "meet", |v| #{ me: "right", other: "left", x: v.top })
    .compute("joined", ["left", "right"], "join")
    .result("joined")
    .requires("store");
"#;

#[test]
fn a_diamond_runs_its_middle_nodes_at_once_and_each_value_once() {
    let s = Scripts::new(&[("diamond.rhai", DIAMOND)]);
    let (report, out) = run_json(&s, &["diamond", "--input", "x=7", "--caps", "store"]);
    assert!(out.status.success(), "{report}");
    assert_eq!(
        report["outputs"]["joined"],
        json!({"both": "left:7+right:7", "top_calls": 1}),
        "both middle nodes met at the rendezvous and the top ran once"
    );
    for name in ["top", "left", "right", "joined"] {
        assert_eq!(node(&report, name)["status"], "ok", "{report}");
    }
    let started = |n: &str| node(&report, n)["started_ms"].as_f64().expect("started");
    assert!(started("joined") >= started("left") && started("left") >= started("top"));
}

const COMPOSED: &str = r#"
tool("double").param("n", "integer").handler(|args| args.n * 2);
tool("add").param("a", "integer").param("b", "integer").handler(|args| args.a + args.b);

pipeline("inner").input("n", "integer").compute("twice", ["n"], "double").result("twice");
pipeline("middle").input("n", "integer")
    .compute("inner_twice", ["n"], "pipeline:inner")
    .compute("sum", ["n", "inner_twice"], "add", |v| #{ a: v.n, b: v.inner_twice })
    .result("sum");
pipeline("outer").input("n", "integer")
    .compute("m", ["n"], "pipeline:middle")
    .compute("final", ["m"], "double", |v| #{ n: v.m })
    .result("final").result("m");
"#;

#[test]
fn pipelines_compose_two_levels_deep() {
    let s = Scripts::new(&[("composed.rhai", COMPOSED)]);
    let (report, out) = run_json(&s, &["outer", "--input", "n=5"]);
    assert!(out.status.success(), "{report}");
    // middle(5) = 5 + inner(5) = 5 + 10 = 15; outer doubles it.
    assert_eq!(report["outputs"], json!({"final": 30, "m": 15}));
    assert_eq!(node(&report, "m")["call"], "pipeline:middle");
    let check = stdout(&kiln(&["check", "--scripts", "."], s.path()));
    assert!(
        check.contains("3 pipelines (inner, middle, outer)"),
        "{check}"
    );
    let human = kiln(&["run", "outer", "-i", "n=5", "--scripts", "."], s.path());
    assert!(human.status.success());
    assert_eq!(stdout(&human), "final: 30\nm: 15\n");
    assert!(
        stderr(&human).contains("✓ m = pipeline:middle"),
        "{}",
        stderr(&human)
    );
}

const FAILING: &str = r#"
tool("out_of_stock").param("sku", "string").requires("store")
    .handler(|args| { store_set("f", "failed", true); throw tool_error(`no stock for ${args.sku}`); });
tool("price").param("sku", "string").handler(|args| 10);
// Finishes only after the other branch has failed: the run waits for independent work.
tool("after_failure").param("sku", "string").requires("store")
    .handler(|args| {
        for i in 0..500 { if store_get("f", "failed") == true { return `${args.sku} described`; } sleep(0.01); }
        throw tool_error("the other branch never failed");
    });

pipeline("listing").input("sku", "string")
    .compute("stock", ["sku"], "out_of_stock")
    .compute("offer", ["stock"], "price", |v| #{ sku: "x" })
    .compute("text", ["sku"], "after_failure")
    .result("offer").result("text")
    .requires("store");
"#;

#[test]
fn a_failing_node_fails_its_dependents_and_independent_branches_finish() {
    let s = Scripts::new(&[("failing.rhai", FAILING)]);
    let (report, out) = run_json(&s, &["listing", "-i", "sku=S1", "--caps", "store"]);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert_eq!(node(&report, "stock")["status"], "failed");
    assert_eq!(
        node(&report, "stock")["error"]["message"],
        "no stock for S1"
    );
    assert_eq!(node(&report, "offer")["status"], "skipped");
    assert_eq!(
        node(&report, "offer")["error"]["message"],
        "not run: the value \"stock\" it needs failed"
    );
    assert_eq!(node(&report, "text")["status"], "ok");
    assert_eq!(report["outputs"], json!({"text": "S1 described"}));
    let human = kiln(
        &[
            "run",
            "listing",
            "-i",
            "sku=S1",
            "--caps",
            "store",
            "--scripts",
            ".",
        ],
        s.path(),
    );
    assert!(
        stderr(&human).contains("node \"stock\" (out_of_stock) failed: no stock for S1"),
        "{}",
        stderr(&human)
    );
    assert_eq!(stdout(&human), "text: \"S1 described\"\n");
}

#[test]
fn load_errors_name_their_position() {
    let src = [
        "tool(\"t\").param(\"x\", \"integer\").handler(|a| a.x);",
        "tool(\"secret\").requires(\"secrets\").handler(|a| 1);",
        "pipeline(\"unknown_value\").input(\"x\", \"integer\")",
        "    .compute(\"a\", [\"y\"], \"t\").result(\"a\");",
        "pipeline(\"cyclic\").input(\"x\", \"integer\")",
        "    .compute(\"a\", [\"b\"], \"t\")",
        "    .compute(\"b\", [\"a\"], \"t\").result(\"b\");",
        "pipeline(\"no_output\").input(\"x\", \"integer\").compute(\"a\", [\"x\"], \"t\")",
        "    .result(\"z\");",
        "pipeline(\"unknown_names\").input(\"x\", \"integer\")",
        "    .compute(\"a\", [\"x\"], \"nope\")",
        "    .compute(\"b\", [\"x\"], \"agent:ghost\")",
        "    .compute(\"c\", [\"x\"], \"pipeline:ghost\").result(\"a\");",
        "pipeline(\"robot\").input(\"x\", \"integer\").compute(\"d\", [\"x\"], \"robot:x\").result(\"d\");",
        "pipeline(\"undeclared\").input(\"x\", \"integer\")",
        "    .compute(\"s\", [\"x\"], \"secret\").result(\"s\");",
        "pipeline(\"twice\").input(\"x\", \"integer\").compute(\"x\", [\"x\"], \"t\").result(\"x\");",
        "pipeline(\"loop_a\").input(\"x\", \"integer\").compute(\"a\", [\"x\"], \"pipeline:loop_b\").result(\"a\");",
        "pipeline(\"loop_b\").input(\"x\", \"integer\").compute(\"b\", [\"x\"], \"pipeline:loop_a\").result(\"b\");",
        "pipeline(\"arity\").input(\"x\", \"integer\").compute(\"a\", [\"x\"], \"t\", |p, q| 1).result(\"a\");",
    ]
    .join("\n");
    let s = Scripts::new(&[("bad.rhai", &src)]);
    let errors = s.errors(&s.host());
    let expected = [
        "DIR/bad.rhai:4:6: pipeline \"unknown_value\": \"a\" uses \"y\", which is neither an input nor a computed value (known: x, a)",
        "DIR/bad.rhai:6:6: pipeline \"cyclic\": cycle: a -> b -> a",
        "DIR/bad.rhai:9:6: pipeline \"no_output\": output \"z\" is not computed by any .compute(...)",
        "DIR/bad.rhai:14:41: pipeline \"robot\": compute \"d\": \"robot:x\": unknown kind \"robot\" (expected a tool name, agent:NAME or pipeline:NAME)",
        "DIR/bad.rhai:17:41: pipeline \"twice\": \"x\" is both an input and a computed value",
        "DIR/bad.rhai:11:6: pipeline \"unknown_names\": \"a\" calls tool \"nope\", which does not exist",
        "DIR/bad.rhai:12:6: pipeline \"unknown_names\": \"b\" calls agent \"ghost\", which does not exist",
        "DIR/bad.rhai:13:6: pipeline \"unknown_names\": \"c\" calls pipeline \"ghost\", which does not exist",
        "DIR/bad.rhai:16:6: pipeline \"undeclared\": \"s\" calls secret which requires [secrets]; the pipeline does not declare it: add .requires(\"secrets\")",
        "DIR/bad.rhai:18:1: pipeline \"loop_a\": pipelines call each other in a cycle: loop_a -> loop_b -> loop_a",
        "DIR/bad.rhai:19:1: pipeline \"loop_b\": pipelines call each other in a cycle: loop_b -> loop_a -> loop_b",
        "DIR/bad.rhai:20:41: pipeline \"arity\": compute \"a\": the closure takes 2 parameters; expected |values|",
    ];
    for e in expected {
        assert!(
            errors.contains(&e.to_string()),
            "missing {e}\nin {errors:#?}"
        );
    }
    let check = kiln(&["check", "--scripts", "."], s.path());
    assert_eq!(check.status.code(), Some(1));
    assert!(
        stderr(&check).contains("bad.rhai:6:6: pipeline \"cyclic\": cycle"),
        "{}",
        stderr(&check)
    );
}

const PRICE_TOOLS: &str = r#"
tool("database_lookup").description("Look up a product by SKU").param("sku", "string")
    .requires("database_read")
    .handler(|args| if args.sku == "SKU-1" { #{ name: "Widget Pro", price: 29.99 } } else { throw tool_error(`no product ${args.sku}`) });
tool("discount_calculator").param("price", "number").param("percent", "number", #{ "default": 15 })
    .handler(|args| #{ percent: 15, final_price: (args.price * 85.0).round() / 100.0 });
pipeline("price_report")
    .description("Price report for one product")
    .input("sku", "string", "Product SKU")
    .compute("product", ["sku"], "database_lookup")
    .compute("discount", ["product"], "discount_calculator", |v| #{ price: v.product.price })
    .result("discount")
    .requires("database_read");
"#;

#[test]
fn an_agent_calls_a_pipeline_as_a_tool() {
    let agent = r#"agent("shop").provider("anthropic").model("mock-model")
        .tools(["price_report"]).capabilities(["database_read"]);"#;
    let s = Scripts::new(&[("price.rhai", PRICE_TOOLS), ("shop.rhai", agent)]);
    let mock = Mock::start(&json!({"turns": [
        {"tool_calls": [{"name": "price_report", "args": {"sku": "SKU-1"}}]},
        {"text": "Widget Pro costs 25.49 after the discount."}
    ]}));
    let out = ask(
        &[
            "shop",
            "Price of SKU-1?",
            "--scripts",
            ".",
            "--base-url",
            &mock.url,
        ],
        s.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let reqs = mock.requests();
    let offered = reqs[0]["body"]["tools"].to_string();
    assert!(
        offered.contains("\"price_report\"") && offered.contains("Product SKU"),
        "the pipeline is offered with its inputs as parameters: {offered}"
    );
    let second = reqs[1]["body"].to_string();
    assert!(
        second.contains("25.49"),
        "the model got the pipeline's output: {second}"
    );
    let logs = stdout(&kiln(&["logs"], s.path()));
    assert!(
        logs.contains("pipeline:price_report")
            && logs.contains("→ database_lookup({\"sku\":\"SKU-1\"})"),
        "the pipeline's nodes are logged as a run of their own: {logs}"
    );
    let listed = stdout(&kiln(&["tools", "--scripts", "."], s.path()));
    assert!(listed.contains("(pipeline) Price report"), "{listed}");
}

/// An agent node's agent, served by `kiln mock` at `url` (Ollama's API: no key needed).
fn writer(url: &str) -> String {
    format!(
        r#"tool("send_email").param("to", "string").requires("email_send").handler(|args| "sent");
agent("writer").provider("ollama").model("mock-model").base_url("{url}")
    .tools(["send_email"]).capabilities(["email_send", "database_read"]);
pipeline("brief").input("sku", "string")
    .compute("product", ["sku"], "database_lookup")
    .compute("summary", ["product"], "agent:writer", |v| `Write one line about ${{v.product.name}}`)
    .result("summary")
    .requires("database_read");
"#
    )
}

#[test]
fn an_agent_node_gets_its_prompt_from_the_closure() {
    let mock = Mock::start(&json!({"require_auth": false, "turns": [
        {"text": "Widget Pro: sturdy and cheap."}
    ]}));
    let s = Scripts::new(&[
        ("price.rhai", PRICE_TOOLS),
        ("brief.rhai", &writer(&mock.url)),
    ]);
    let (report, out) = run_json(&s, &["brief", "-i", "sku=SKU-1", "--caps", "database_read"]);
    assert!(out.status.success(), "{report}");
    assert_eq!(
        report["outputs"]["summary"],
        "Widget Pro: sturdy and cheap."
    );
    assert_eq!(
        node(&report, "summary")["args"],
        "Write one line about Widget Pro"
    );
    let sent = mock.requests()[0]["body"].to_string();
    assert!(sent.contains("Write one line about Widget Pro"), "{sent}");
    let logs = stdout(&kiln(&["logs"], s.path()));
    assert!(
        logs.contains("pipeline:brief") && logs.contains("writer (ollama/mock-model)"),
        "the pipeline and its agent's run are both logged: {logs}"
    );
}

#[test]
fn a_capability_the_pipeline_does_not_declare_is_refused_inside_it() {
    let mock = Mock::start(&json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "send_email", "args": {"to": "boss@example.com"}}]},
        {"text": "sent it"}
    ]}));
    let s = Scripts::new(&[
        ("price.rhai", PRICE_TOOLS),
        ("brief.rhai", &writer(&mock.url)),
    ]);
    // The caller holds email_send, but the pipeline only declares database_read: its agent
    // node runs with the pipeline's grants.
    let (report, out) = run_json(
        &s,
        &[
            "brief",
            "-i",
            "sku=SKU-1",
            "--caps",
            "database_read,email_send",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert_eq!(node(&report, "product")["status"], "ok");
    let summary = node(&report, "summary");
    assert_eq!(summary["status"], "failed");
    assert_eq!(summary["error"]["kind"], "capability");
    assert_eq!(
        summary["error"]["message"],
        "Tool \"send_email\" requires capabilities [email_send] but agent \"writer\" only has [database_read]"
    );
    assert_eq!(
        mock.requests().len(),
        1,
        "the refusal stops the agent's run"
    );
    // Without the pipeline's own capability the run is refused before any node runs.
    let (refused, out) = run_json(&s, &["brief", "-i", "sku=SKU-1"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(refused["refused"]["kind"], "capability");
    assert_eq!(refused["nodes"], json!([]));
}

#[test]
fn pipelines_reload_with_their_file_and_a_broken_edit_keeps_the_last_good_one() {
    let v1 = "tool(\"double\").param(\"n\", \"integer\").handler(|a| a.n * 2);\npipeline(\"p\").input(\"n\", \"integer\").compute(\"out\", [\"n\"], \"double\").result(\"out\");\n";
    let s = Scripts::new(&[("p.rhai", v1)]);
    let host = s.host();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut watch = host.watch().expect("watch");
    let mut edit = |src: String| {
        std::fs::write(s.path().join("p.rhai"), src).expect("write");
        let next = futures_util::StreamExt::next(&mut watch);
        rt.block_on(async { tokio::time::timeout(std::time::Duration::from_secs(10), next).await })
            .expect("a reload report")
            .expect("watching")
    };
    let run = || {
        rt.block_on(host.run_pipeline("p", json!({"n": 4}), kiln::CallOptions::default()))
            .expect("pipeline p")
            .result()
            .expect("p runs")
    };
    assert_eq!(run(), json!(8));
    let report = edit(v1.replace("a.n * 2", "a.n * 3"));
    assert!(report.errors.is_empty(), "{report}");
    assert_eq!(run(), json!(12), "the node calls the reloaded tool");
    let report = edit(v1.replace("[\"n\"], \"double\"", "[\"out\"], \"double\""));
    assert!(report.to_string().contains("cycle: out -> out"), "{report}");
    assert_eq!(run(), json!(12), "the last good version stays live");
    let report = edit(v1.replace("\"double\").result", "\"triple\").result"));
    assert!(
        report
            .to_string()
            .contains("\"out\" calls tool \"triple\", which does not exist"),
        "{report}"
    );
    assert_eq!(
        run(),
        json!(12),
        "a pipeline calling a missing tool is not swapped in"
    );
}

#[test]
fn the_repl_lists_and_runs_pipelines() {
    use rexpect::session::spawn_command;
    let s = Scripts::new(&[("composed.rhai", COMPOSED)]);
    let mut cmd = std::process::Command::new(kiln_bin());
    cmd.args(["repl", "--scripts", "."])
        .current_dir(s.path())
        .env("NO_COLOR", "1")
        .env("KILN_HISTORY", s.path().join("history"))
        .env("TERM", "xterm");
    let mut p = spawn_command(cmd, Some(15_000)).expect("spawn repl");
    let ready = |p: &mut rexpect::session::PtySession| {
        p.exp_string("kiln> ").expect("prompt");
        // Type-ahead is discarded when the terminal switches to raw mode.
        std::thread::sleep(std::time::Duration::from_millis(150));
    };
    ready(&mut p);
    p.send_line(":pipelines").expect("send");
    p.exp_string("outer(n) -> final, m").expect("listed");
    ready(&mut p);
    p.send_line(":run outer n=5").expect("send");
    p.exp_string(" m = pipeline:middle ").expect("node line");
    p.exp_string("final: 30").expect("outputs");
    ready(&mut p);
    p.send_line(":run outer n=five").expect("send");
    p.exp_string("Invalid arguments for tool \"outer\"")
        .expect("validation");
    ready(&mut p);
    p.send_control('d').expect("ctrl-d");
    p.exp_eof().expect("exits");
}

#[test]
fn the_price_report_example_runs_offline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let catalog = repo().join("examples/catalog").display().to_string();
    let pipelines = repo().join("examples/pipelines").display().to_string();
    let out = kiln(
        &[
            "run",
            "price_report",
            "--scripts",
            &catalog,
            "--scripts",
            &pipelines,
            "-i",
            "sku=SKU-1",
            "--caps",
            "database_read",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "Kiln brick costs 4.5; with 15% off it is 3.83.\n"
    );
    let err = stderr(&out);
    for line in [
        "product = database_lookup",
        "discount = discount_calculator",
        "report = agent:writer",
    ] {
        assert!(err.contains(line), "{err}");
    }
    let bad = kiln(
        &[
            "run",
            "price_report",
            "--scripts",
            &catalog,
            "--scripts",
            &pipelines,
            "-i",
            "sku=nope",
            "--caps",
            "database_read",
        ],
        dir.path(),
    );
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        stderr(&bad).contains("Invalid arguments for tool \"price_report\""),
        "{}",
        stderr(&bad)
    );
}
