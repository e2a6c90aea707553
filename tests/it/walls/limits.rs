//! No program can abort the process or exhaust its memory: values nest at most 256 levels
//! (the patched Rhai refuses deeper data when it is built) and a script holds at most its
//! memory budget (counted where memory is allocated). Every shape ends as a `limit` error,
//! in a handler (`kiln call`) and in a code-mode program (`kiln mcp --code-mode`, `kiln
//! serve`) under `ulimit -v`, and the server answers the next request.

use crate::common::*;
use crate::doors::serve::Serve;
use crate::mcp::StdioMcp;
use proptest::prelude::*;
use serde_json::{Value, json};

/// 1 GiB of address space, as an operator might give the server.
const ONE_GIB: u64 = 1 << 30;

/// Programs that nest, grow, recurse and loop; `N` is the loop's count; true when the program
/// must fail at a count of thousands (the last one frees what it allocates, so it runs).
const SHAPES: &[(&str, &str, bool)] = &[
    (
        "nest arrays",
        "let x = []; for i in 0..N { x = [x]; } x.len()",
        true,
    ),
    (
        "nest maps",
        "let m = #{}; for i in 0..N { m = #{ a: m }; } m.len()",
        true,
    ),
    (
        "nest by push",
        "let x = []; for i in 0..N { let y = []; y.push(x); x = y; } x.len()",
        true,
    ),
    (
        "nest by index",
        "let x = [0]; for i in 0..N { x[0] = x; } x.len()",
        true,
    ),
    (
        "nest a map by index",
        r#"let m = #{ a: 0 }; for i in 0..N { m["a"] = m; } m.len()"#,
        true,
    ),
    (
        "nest by take",
        "let x = []; for i in 0..N { x = [take(x)]; } x.len()",
        true,
    ),
    (
        "nest closures",
        "let g = || 1; for i in 0..N { let h = g; g = || h; } 1",
        true,
    ),
    (
        "nest curried values",
        r#"let f = Fn("abs"); for i in 0..N { f = f.curry(f); } 1"#,
        true,
    ),
    (
        "nest through a function",
        "fn wrap(v) { [[[#{ v: v }]]] } let x = (); for i in 0..N { x = wrap(x); } 1",
        true,
    ),
    (
        "grow a map with new strings",
        r#"let s = ""; s.pad(4000000, "x"); let m = #{}; for i in 0..N { m[`k${i}`] = s + i; } m.len()"#,
        true,
    ),
    (
        "grow a map with blobs",
        "let m = #{}; for i in 0..N { m[`k${i}`] = blob(150000, i); } m.len()",
        true,
    ),
    (
        "grow a map with closures holding strings",
        r#"let s = ""; s.pad(4000000, "x"); let m = #{}; for i in 0..N { let t = s + i; m[`k${i}`] = || t; } m.len()"#,
        true,
    ),
    (
        "grow an array of arrays",
        r#"let s = ""; s.pad(3000000, "y"); let a = []; for i in 0..N { let row = []; row.push(s + i); a.push(row); } a.len()"#,
        true,
    ),
    ("recurse", "fn f(n) { f(n + 1) } f(N)", true),
    ("recurse and grow", "fn f(s) { f(s + s) } f(`${N}`)", true),
    (
        "allocate and free in a loop",
        "let n = 0; for i in 0..N { let t = []; t.pad(2000, i); n += t.len(); } n",
        false,
    ),
];

/// The program of `shape` with its loop count.
fn program(shape: &str, n: u64) -> String {
    shape.replace('N', &n.to_string())
}

fn scripts() -> Scripts {
    Scripts::new(&[(
        "code.rhai",
        r#"tool("echo").description("Says it back").param("text", "string").handler(|a| a.text);"#,
    )])
}

fn run_code(mcp: &mut StdioMcp, id: u32, code: &str) -> Value {
    mcp.rpc(
        id,
        "tools/call",
        json!({"name": "run_code", "arguments": {"code": code}}),
    )
}

fn text(reply: &Value) -> String {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The server still answers: the next request gets its reply.
fn assert_alive(mcp: &mut StdioMcp, id: u32, after: &str) {
    let ping = mcp.rpc(id, "ping", json!({}));
    assert!(
        ping.get("result").is_some(),
        "{after}: the server died: {ping}"
    );
}

fn limited_mcp(scripts: &Scripts) -> StdioMcp {
    StdioMcp::start_limited(
        scripts.path(),
        &["--code-mode", "--scripts", ".", "--no-stdlib"],
        ONE_GIB,
    )
}

/// A program's leading `fn` definitions and the rest: a handler is a closure, and Rhai takes
/// functions at the top of a file only.
fn split_functions(program: &str) -> (&str, &str) {
    let mut depth = 0;
    let mut end = 0;
    for (i, c) in program.char_indices() {
        if !program.starts_with("fn ") {
            break;
        }
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    end = i + 1;
                    break;
                }
            }
            _ => {}
        }
    }
    program.split_at(end)
}

#[test]
fn every_shape_in_a_handler_ends_in_a_limit_error() {
    let mut files: Vec<(String, String)> = SHAPES
        .iter()
        .enumerate()
        .map(|(i, (_, shape, _))| {
            let (functions, body) = split_functions(shape);
            let body = program(body, 30_000);
            let tool = format!(
                "{functions}\ntool(\"shape{i}\").description(\"s\").handler(|a| {{ {body} }});"
            );
            (format!("shape{i}.rhai"), tool)
        })
        .collect();
    files.push((
        "blocks.rhai".into(),
        r#"tool("blocks").description("b").handler(|a| { let s = ""; s.pad(4000000, "z"); let m = #{}; for i in 0..30000 { m[`k${i}`] = resource("test://x", s + i, "text/plain"); } m.len() });"#.into(),
    ));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let s = Scripts::new(&refs);
    let mut names: Vec<String> = (0..SHAPES.len()).map(|i| format!("shape{i}")).collect();
    names.push("blocks".into());
    for (i, name) in names.iter().enumerate() {
        let (what, fails) = SHAPES
            .get(i)
            .map_or(("content blocks", true), |s| (s.0, s.2));
        let out = kiln(
            &["--scripts", ".", "--no-stdlib", "call", name, "{}"],
            s.path(),
        );
        let said = stdout(&out);
        assert_ne!(
            out.status.code(),
            Some(134),
            "{what}: aborted: {}",
            stderr(&out)
        );
        let report: Value = serde_json::from_str(&said).unwrap_or_else(|_| {
            panic!("{what}: no report: {said} {}", stderr(&out));
        });
        match fails {
            true => assert_eq!(report["error"]["kind"], "limit", "{what}: {report}"),
            false => assert_eq!(report["success"], true, "{what}: {report}"),
        }
    }
}

#[test]
fn kiln_mcp_code_mode_under_a_memory_limit_survives_every_shape() {
    let s = scripts();
    let mut mcp = limited_mcp(&s);
    for (i, (what, shape, fails)) in SHAPES.iter().enumerate() {
        let id = 10 + 2 * i as u32;
        let reply = run_code(&mut mcp, id, &program(shape, 30_000));
        assert_eq!(reply["result"]["isError"], *fails, "{what}: {reply}");
        let said = text(&reply);
        if *fails {
            // A limit reached, not a mistake in the program or a deadline.
            assert!(
                ["too large", "memory", "Stack overflow", "Too many"]
                    .iter()
                    .any(|w| said.contains(w)),
                "{what}: {said}"
            );
        }
        assert_alive(&mut mcp, id + 1, what);
    }
    // A program within the limits still runs.
    let reply = run_code(
        &mut mcp,
        99,
        "let x = []; for i in 0..200 { x = [x]; } echo(#{ text: \"fine\" })",
    );
    assert_eq!(text(&reply), "fine", "{reply}");
}

/// A closure stored in the variable it captures is a cycle reference counting never frees:
/// each program below would leak 30 MB, and forty of them would end a server limited to
/// 1 GiB. The variables a call's closures capture are emptied when the call ends.
#[test]
fn cycles_through_captured_variables_are_freed_when_the_program_ends() {
    let s = scripts();
    let mut mcp = limited_mcp(&s);
    let leaky = "for i in 0..300 { let f = 0; let big = blob(100000, i); f = || [f, big]; } 1";
    for i in 0..40 {
        let id = 10 + 2 * i;
        let reply = run_code(&mut mcp, id, leaky);
        assert_eq!(text(&reply), "1", "run {i}: {reply}");
        assert_alive(&mut mcp, id + 1, "a leaky program");
    }
    // What closures capture still works while the program runs, in parallel branches too.
    let reply = run_code(
        &mut mcp,
        200,
        "let total = 0; let add = |x| total += x; add.call(5); add.call(6); let k = 3; total + parallel([|| k, || k + 1]).reduce(|a, b| a + b, 0)",
    );
    assert_eq!(text(&reply), "18", "{reply}");
}

#[test]
fn kiln_serve_under_a_memory_limit_survives_code_mode_programs_and_answers_healthz() {
    let turns: Vec<Value> = SHAPES
        .iter()
        .flat_map(|(_, shape, _)| {
            [
                json!({"tool_calls": [{"name": "run_code", "args": {"code": program(shape, 30_000)}}]}),
                json!({"text": "done"}),
            ]
        })
        .collect();
    let mock = Mock::start(&json!({"require_auth": false, "turns": turns}));
    let s = Scripts::new(&[(
        "code.rhai",
        &format!(
            r#"tool("echo").description("Says it back").param("text", "string").handler(|a| a.text);
agent("coder").provider("openai").model("m").base_url("{}/v1").tools(["echo"])
    .code_mode(#{{ max_calls: 5, timeout: "20s" }});"#,
            mock.url
        ),
    )]);
    let serve = Serve::start_limited(s.path(), &s.path().join("k.db"), &["--no-stdlib"], ONE_GIB);
    for (what, _, fails) in SHAPES {
        let body = json!({"agent": "coder", "input": "go", "wait": true});
        let (status, run) = post(&format!("{}/v1/runs", serve.url), &body, &[]);
        assert!((200..300).contains(&status), "{what}: {run}");
        let outcome = &run["report"]["tool_calls"][0]["outcome"];
        match fails {
            true => assert_eq!(outcome["error"]["kind"], "limit", "{what}: {run}"),
            false => assert!(outcome.get("result").is_some(), "{what}: {run}"),
        }
        let (status, _, health) = http("GET", &format!("{}/healthz", serve.url), &[], None);
        assert_eq!(status, 200, "{what}: {health}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, failure_persistence: None, ..ProptestConfig::default() })]

    /// Programs in many shapes, sizes and wrappings, one server for all: each ends (an error
    /// for every large one) and the server answers the next request.
    #[test]
    fn any_program_ends_and_the_server_answers_the_next_request(
        picks in proptest::collection::vec((0..SHAPES.len(), 0usize..4, 0usize..4), 1..3),
    ) {
        thread_local! {
            static SERVER: std::cell::RefCell<Option<(Scripts, StdioMcp, u32)>> = const { std::cell::RefCell::new(None) };
        }
        let sizes = [3u64, 250, 3_000, 60_000];
        let body: Vec<String> = picks
            .iter()
            .map(|&(shape, size, wrap)| {
                let code = program(SHAPES[shape].1, sizes[size]);
                // `throw e` rethrows what a catch can see; the limits are not catchable.
                // Rhai takes `fn` definitions at the top of a program only.
                let wrap = if code.starts_with("fn ") { 0 } else { wrap };
                match wrap {
                    0 => code,
                    1 => format!("let run_it = || {{ {code} }}; run_it.call()"),
                    2 => format!("try {{ {code} }} catch (e) {{ throw e; }}"),
                    _ => format!("parallel([|| {{ {code} }}, || {{ {code} }}])"),
                }
            })
            .collect();
        let code = body.join(";\n");
        let must_fail = picks.iter().any(|&(shape, size, _)| size == 3 && SHAPES[shape].2);
        SERVER.with(|server| {
            let mut server = server.borrow_mut();
            let (_, mcp, id) = server.get_or_insert_with(|| {
                let s = scripts();
                let mcp = limited_mcp(&s);
                (s, mcp, 1000)
            });
            *id += 2;
            // Shown when the case fails.
            eprintln!("program {id}:\n{code}");
            let reply = run_code(mcp, *id, &code);
            prop_assert!(reply.get("result").is_some(), "{code}: {reply}");
            if must_fail {
                prop_assert_eq!(&reply["result"]["isError"], &json!(true), "{}: {}", code, reply);
            }
            let ping = mcp.rpc(*id + 1, "ping", json!({}));
            prop_assert!(ping.get("result").is_some(), "{code}: the server died: {ping}");
            Ok(())
        })?;
    }
}

/// Handlers run in the host's process: every walk over a value that refers to itself ends
/// there (vendor/rhai/patches/0004), with an error for JSON, without waiting on a lock the
/// call holds, and the process goes on.
#[test]
fn a_handler_walking_a_cycle_ends_with_an_error_not_an_abort() {
    let cycle = "let a = #{}; let f = || a; a.f = f;";
    let cases = [
        (
            "json_of_holder",
            "#{x: f}.to_json()",
            Some("refers to itself"),
        ),
        ("json_of_itself", "a.to_json()", Some("refers to itself")),
        (
            "json_nested",
            "#{x: [[#{y: f}]]}.to_json()",
            Some("refers to itself"),
        ),
        ("printed", "`${a} ${[f]}`", None),
        ("switched", "switch a { 1 => 0, _ => 2 }", None),
        ("returned", "a", Some("")),
    ];
    let files: Vec<(String, String)> = cases
        .iter()
        .map(|(name, expr, _)| {
            let tool = format!(
                "tool(\"{name}\").description(\"c\").timeout(\"5s\").handler(|a| {{ {cycle} {expr} }});"
            );
            (format!("{name}.rhai"), tool)
        })
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let s = Scripts::new(&refs);
    for (name, _, error) in cases {
        let started = std::time::Instant::now();
        let out = kiln(
            &["--scripts", ".", "--no-stdlib", "call", name, "{}"],
            s.path(),
        );
        assert_ne!(
            out.status.code(),
            Some(134),
            "{name}: aborted: {}",
            stderr(&out)
        );
        let said = stdout(&out);
        let report: Value = serde_json::from_str(&said)
            .unwrap_or_else(|_| panic!("{name}: no report: {said} {}", stderr(&out)));
        match error {
            Some(why) => {
                assert_eq!(report["success"], false, "{name}: {report}");
                let detail = report["error"]["detail"].as_str().unwrap_or_default();
                assert!(detail.contains(why), "{name}: {report}");
            }
            None => assert_eq!(report["success"], true, "{name}: {report}"),
        }
        assert!(
            started.elapsed().as_secs() < 20,
            "{name} took {:?}",
            started.elapsed()
        );
    }
}
