//! Code-mode programs run apart from the server, in worker processes: a program that
//! overflows its stack, deadlocks, allocates past its cap or is killed ends with a clear
//! error, its slot is freed, and the server (its memory too) is untouched.

use crate::approvals::finished;
use crate::common::*;
use crate::doors::serve::Serve;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The "model" sends the prompt as the program; `quick` has a 1.5 s deadline, `patient` a
/// minute; `careful` may call a tool that needs a person's approval.
const SCRIPTS: &str = r#"
tool("lookup").description("Price of a SKU").param("sku", "string")
    .handler(|a| #{ sku: a.sku, price: 1.5 });
tool("slow").description("Takes its time").handler(|a| { sleep(3); "slept" });
tool("charge").description("Charges a card").param("cents", "integer").requires("payments")
    .handler(|a| `charged ${a.cents}`);
agent("quick").provider("script").tools(["lookup"])
    .code_mode(#{ max_calls: 25, timeout: "1500ms" })
    .planner(|messages, tools| {
        let last = messages[messages.len() - 1];
        if last.role == "user" { return #{ tool_calls: [#{ name: "run_code", args: #{ code: last.content } }] }; }
        #{ text: `${last.is_error}: ${last.content}` }
    });
agent("patient").provider("script").tools(["lookup", "slow"])
    .code_mode(#{ max_calls: 25, timeout: "1m" })
    .planner(|messages, tools| {
        let last = messages[messages.len() - 1];
        if last.role == "user" { return #{ tool_calls: [#{ name: "run_code", args: #{ code: last.content } }] }; }
        #{ text: `${last.is_error}: ${last.content}` }
    });
agent("careful").provider("script").tools(["lookup", "charge"]).capabilities(["payments"])
    .needs_approval(["payments"]).code_mode(#{ max_calls: 25, timeout: "1m" })
    .planner(|messages, tools| {
        let last = messages[messages.len() - 1];
        if last.role == "user" { return #{ tool_calls: [#{ name: "run_code", args: #{ code: last.content } }] }; }
        #{ text: `${last.is_error}: ${last.content}` }
    });
"#;

pub const CYCLE_IN_JSON: &str = "let a = #{}; let f = || a; a.f = f; #{x: f}.to_json()";
pub const CYCLE_DEADLOCK: &str = "let a = #{}; let f = || a; a.f = f; a.to_json()";

fn serve(args: &[&str]) -> (Scripts, Serve) {
    let s = Scripts::new(&[("code.rhai", SCRIPTS)]);
    let mut all = vec!["--no-stdlib"];
    all.extend_from_slice(args);
    let serve = Serve::start(s.path(), &s.path().join("k.db"), &all, &[]);
    (s, serve)
}

/// Runs `program` as `agent`'s one program and waits for the run: its first call's outcome.
fn run(serve: &Serve, agent: &str, program: &str) -> Value {
    let body = json!({"agent": agent, "input": program, "wait": true});
    let (status, run) = post(&format!("{}/v1/runs", serve.url), &body, &[]);
    assert!((200..300).contains(&status), "{run}");
    run["report"]["tool_calls"][0]["outcome"].clone()
}

fn start(serve: &Serve, agent: &str, program: &str) -> String {
    let body = json!({"agent": agent, "input": program, "wait": false});
    let (status, run) = post(&format!("{}/v1/runs", serve.url), &body, &[]);
    assert!((200..300).contains(&status), "{run}");
    run["id"].as_str().expect("id").to_string()
}

fn error(outcome: &Value) -> (String, String) {
    let e = &outcome["error"];
    (
        e["kind"].as_str().unwrap_or_default().to_string(),
        e["message"].as_str().unwrap_or_default().to_string(),
    )
}

/// The server answers, and a plain program still runs.
fn assert_serving(serve: &Serve, after: &str) {
    let (status, _, body) = http("GET", &format!("{}/healthz", serve.url), &[], None);
    assert_eq!(status, 200, "{after}: {body}");
    let outcome = run(serve, "quick", r#"lookup(#{ sku: "A" }).price"#);
    assert_eq!(outcome["result"], json!(1.5), "{after}: {outcome}");
}

/// The peak resident memory of a process, in bytes.
pub fn peak_memory(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// The program workers `parent` has started and not yet reaped.
fn workers_of(parent: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // The fields after the command's closing parenthesis: state, ppid, ...
        let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
        let ppid = after
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok());
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if ppid == Some(parent) && String::from_utf8_lossy(&cmdline).contains("__program-worker") {
            found.push(pid);
        }
    }
    found
}

#[test]
fn a_cycle_given_to_to_json_ends_its_program_and_the_server_goes_on() {
    let (_s, serve) = serve(&["--max-programs", "2"]);
    let outcome = run(&serve, "quick", CYCLE_IN_JSON);
    let (kind, message) = error(&outcome);
    // Rhai's walks end on a cycle (vendor/rhai/patches/0004): an error naming it, at once.
    assert_eq!(kind, "tool_error", "{outcome}");
    assert!(message.contains("refers to itself"), "{message}");
    assert_serving(&serve, "a cycle in to_json");
}

#[test]
fn the_method_call_that_deadlocked_ends_at_once_and_holds_no_slot() {
    let (_s, serve) = serve(&["--max-programs", "1"]);
    // Three at once, one slot: `a.to_json()` took a second lock on `a` and waited forever.
    let ids: Vec<String> = (0..3)
        .map(|_| start(&serve, "quick", CYCLE_DEADLOCK))
        .collect();
    for id in &ids {
        let done = finished(&serve, id);
        let outcome = &done["report"]["tool_calls"][0]["outcome"];
        let (kind, message) = error(outcome);
        assert_eq!(kind, "tool_error", "{done}");
        assert!(message.contains("refers to itself"), "{message}");
    }
    assert_serving(&serve, "three a.to_json() on a cycle");
}

#[test]
fn a_hung_worker_is_killed_at_its_deadline_and_frees_its_slot() {
    let (_s, serve) = serve(&["--max-programs", "1"]);
    // A worker that stops answering (stopped here, as a program stuck where the interpreter
    // never checks its deadline would be): the host kills it past the program's deadline.
    let until = Instant::now() + Duration::from_secs(10);
    let mut warm = workers_of(serve.child.id());
    while warm.len() != 1 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
        warm = workers_of(serve.child.id());
    }
    let started = Instant::now();
    let id = start(&serve, "quick", "let n = 0; loop { n += 1; }");
    let pid = busy_worker(&serve, &warm);
    signal(pid, "STOP");
    let done = finished(&serve, &id);
    let outcome = &done["report"]["tool_calls"][0]["outcome"];
    let (kind, message) = error(outcome);
    assert_eq!(kind, "deadline", "{done}");
    assert!(message.contains("deadline"), "{message}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert!(
        !workers_of(serve.child.id()).contains(&pid),
        "the stopped worker is gone"
    );
    assert_serving(&serve, "a hung worker");
}

#[test]
fn memory_one_operation_or_parallel_branches_take_meets_the_workers_cap_not_the_servers() {
    let (_s, serve) = serve(&["--max-programs", "1", "--program-memory", "128"]);
    let pid = serve.child.id();
    let before = peak_memory(pid);
    // One string split into a list of its characters: a quarter of a gigabyte in one
    // operation, before any check between operations could see it.
    let split = r#"let s = ""; s.pad(4000000, "x"); let parts = s.split(""); parts.len()"#;
    // The same in parallel branches, each with a share of the budget of its own.
    let branch = r#"|| { let s = ""; s.pad(2000000, "y"); s.split("").len() }"#;
    let parallel = format!("parallel([{branch}, {branch}, {branch}, {branch}])");
    for (what, program) in [("split", split.to_string()), ("parallel", parallel)] {
        let outcome = run(&serve, "patient", &program);
        let (kind, message) = error(&outcome);
        assert_eq!(kind, "limit", "{what}: {outcome}");
        assert!(message.contains("128 MiB"), "{what}: {message}");
        // The server itself grew by far less than what the program took.
        let grew = peak_memory(pid).saturating_sub(before);
        assert!(grew < 64 << 20, "{what}: the server grew by {grew} bytes");
    }
    assert_serving(&serve, "memory past the cap");
}

#[test]
fn parallel_nested_ten_deep_ends_with_its_value() {
    let (_s, serve) = serve(&["--max-programs", "2"]);
    let program = "fn tree(d) { if d == 0 { return 1; } parallel([|| tree(d - 1), || tree(d - 1)]).reduce(|a, b| a + b, 0) } tree(10)";
    let outcome = run(&serve, "patient", program);
    assert_eq!(outcome["result"], json!(1024), "{outcome}");
    assert_serving(&serve, "nested parallel");
}

#[test]
fn a_hundred_programs_at_their_cap_at_once_under_an_address_space_limit() {
    let s = Scripts::new(&[("code.rhai", SCRIPTS)]);
    let serve = Serve::start_limited(
        s.path(),
        &s.path().join("k.db"),
        &[
            "--no-stdlib",
            "--max-programs",
            "2",
            "--program-memory",
            "128",
        ],
        // The server's own address space: its allocator's arena and a thread for each of
        // the hundred waiting runs; the programs' memory is the workers'.
        4 << 30,
    );
    let hog = r#"let s = ""; s.pad(4000000, "x"); let a = []; for i in 0..200 { a.push(s + i); } a.len()"#;
    let ids: Vec<String> = (0..100).map(|_| start(&serve, "patient", hog)).collect();
    for id in &ids {
        let done = finished(&serve, id);
        let outcome = &done["report"]["tool_calls"][0]["outcome"];
        assert_eq!(error(outcome).0, "limit", "{done}");
    }
    assert_serving(&serve, "a hundred programs at their cap");
}

/// Waits until the server has a worker busy with a program (one that is not warm).
fn busy_worker(serve: &Serve, warm: &[u32]) -> u32 {
    let until = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until {
        // The busy one is the one that was warm before the program started (it took it).
        let now = workers_of(serve.child.id());
        if let Some(pid) = warm.iter().find(|p| now.contains(p)) {
            // Give the program a moment to be inside its work.
            std::thread::sleep(Duration::from_millis(300));
            return *pid;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no worker ran the program");
}

#[test]
fn a_killed_worker_ends_its_run_with_a_clear_error_and_frees_its_slot() {
    let (_s, serve) = serve(&["--max-programs", "1"]);
    let cases = [
        ("mid-program", "patient", "let n = 0; loop { n += 1; }"),
        ("mid-call", "patient", "slow(#{}); 1"),
        ("awaiting approval", "careful", "charge(#{ cents: 500 })"),
    ];
    for (when, agent, program) in cases {
        let id = start(&serve, agent, program);
        // Once the program is inside its work, every worker is killed: the busy one among
        // them (a warm one killed too is replaced), whichever the pool gave the program.
        if agent == "careful" {
            crate::approvals::awaiting(&serve, &id);
        } else {
            std::thread::sleep(Duration::from_millis(500));
        }
        for pid in workers_of(serve.child.id()) {
            signal(pid, "KILL");
        }
        let done = finished(&serve, &id);
        let outcome = &done["report"]["tool_calls"][0]["outcome"];
        let (kind, message) = error(outcome);
        assert_eq!(kind, "limit", "{when}: {done}");
        assert!(message.contains("killed"), "{when}: {message}");
        assert_eq!(
            done["status"], "completed",
            "{when}: the run goes on to its answer: {done}"
        );
        // Nothing is left waiting for a person.
        let (_, pending) = get(&format!("{}/v1/approvals", serve.url));
        assert_eq!(pending["approvals"], json!([]), "{when}: {pending}");
        assert_serving(&serve, when);
    }
}

#[test]
fn cancelling_a_run_that_waits_for_approval_ends_the_wait_and_the_tool_never_runs() {
    let (_s, serve) = serve(&["--max-programs", "1"]);
    let id = start(&serve, "careful", "charge(#{ cents: 500 })");
    let approval = crate::approvals::awaiting(&serve, &id)["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let (status, _) = post(
        &format!("{}/v1/runs/{id}/cancel", serve.url),
        &json!({}),
        &[],
    );
    assert!((200..300).contains(&status), "cancel: {status}");
    let done = finished(&serve, &id);
    assert_eq!(done["status"], "cancelled", "{done}");
    let (_, pending) = get(&format!("{}/v1/approvals", serve.url));
    assert_eq!(pending["approvals"], json!([]), "{pending}");
    // A decision after the end is refused, saying how the approval ended.
    let url = format!("{}/v1/runs/{id}/approvals/{approval}", serve.url);
    let (status, said) = post(&url, &json!({"decision": "approve"}), &[]);
    assert_eq!(status, 409, "{said}");
    assert!(said.to_string().contains("cancelled"), "{said}");
    // And the tool never ran: no call of it succeeded.
    assert!(!done.to_string().contains("charged 500"), "{done}");
    assert_serving(&serve, "a cancelled approval");
}

/// Value-building steps a generated program is made of: nesting, growth, cycles through
/// closures (and every walk over them), `parallel`.
const STEPS: &[&str] = &[
    "x = [x, x];",
    "x = #{ a: x, b: [x] };",
    r#"let s = ""; s.pad(1000000, "z"); x = [x, s + 1, s + 2];"#,
    "let f = || x; x = #{ f: f }; x.g = f;",
    "let c = #{}; let k = || c; c.k = k; x = [x, c];",
    "x = parallel([|| x, || [x], || #{ v: x }]);",
    "x = x.to_json();",
    "x = `${x}`;",
    "x = x == x;",
    "x = x.to_string().len();",
    "let t = []; for i in 0..50 { t.push(x); } x = t;",
    "x = parallel([|| parallel([|| x, || x]), || x]);",
];

fn program_from(steps: &[usize]) -> String {
    let body: String = steps
        .iter()
        .map(|&i| STEPS[i])
        .collect::<Vec<_>>()
        .join(" ");
    format!("let x = 1; {body} x")
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, failure_persistence: None, ..Default::default() })]

    /// Every generated program ends, with a value or a clear error, and the server goes on.
    #[test]
    fn any_generated_program_ends_and_the_server_answers_the_next_request(
        steps in proptest::collection::vec(0..STEPS.len(), 1..6),
    ) {
        thread_local! {
            static SERVER: std::cell::RefCell<Option<(Scripts, Serve)>> = const { std::cell::RefCell::new(None) };
        }
        let code = program_from(&steps);
        SERVER.with(|server| {
            let mut server = server.borrow_mut();
            let (_, serve) = server.get_or_insert_with(|| {
                let s = Scripts::new(&[("code.rhai", SCRIPTS)]);
                let serve = Serve::start_limited(
                    s.path(),
                    &s.path().join("k.db"),
                    &["--no-stdlib", "--max-programs", "2", "--program-memory", "256"],
                    4 << 30,
                );
                (s, serve)
            });
            let outcome = run(serve, "quick", &code);
            let ended = outcome.get("result").is_some()
                || !error(&outcome).1.is_empty();
            proptest::prop_assert!(ended, "{code}: {outcome}");
            let (status, _, _) = http("GET", &format!("{}/healthz", serve.url), &[], None);
            proptest::prop_assert_eq!(status, 200, "{}: the server stopped answering", code);
            Ok(())
        })?;
    }
}
