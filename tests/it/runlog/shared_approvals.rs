//! Approvals across two `kiln serve` on one PostgreSQL database, without Restate (issue 62):
//! an approval asked on one server is listed and decided through the other, the waiting run
//! hears it at once (LISTEN/NOTIFY, seen in the server's log), and of two racing decisions
//! sent to both servers exactly one takes effect, the other getting 409 with the winner's.
//! The real binary, a real PostgreSQL server (`KILN_POSTGRES`, `#[ignore]`d without it);
//! and B's web console in Chromium hearing A's run live and approving it.

use crate::common::*;
use crate::doors::serve::{Serve, shop_scripts};
use kiln_db::scratch::Scratch;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

const ARGS: &[&str] = &["--caps", "store", "--needs-approval", "store"];

pub(crate) fn putter(scripts: &Scripts) {
    std::fs::write(
        scripts.path().join("putter.rhai"),
        r#"tool("put").requires("store").param("v", "string").handler(|a| { store_set("ns", "k", a.v); "kept" });
agent("putter").provider("script").tools(["put"]).capabilities(["store"]).planner(|m, t| {
    if m[m.len() - 1].role == "user" { #{ tool_calls: [#{ name: "put", args: #{ v: "x" } }] } } else { #{ text: "done" } }
});"#,
    )
    .expect("write");
}

/// Starts a run on `serve` that waits for an approval; its id.
fn waiting_run(serve: &Serve) -> String {
    let body = json!({"agent": "putter", "input": "go", "wait": false});
    let (status, run) = post(&format!("{}/v1/runs", serve.url), &body, &[]);
    assert_eq!(status, 202, "{run}");
    run["id"].as_str().expect("id").to_string()
}

/// The approval of run `id` as `serve`'s inbox lists it, once it does.
fn listed(serve: &Serve, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, inbox) = get(&format!("{}/v1/approvals", serve.url));
        assert_eq!(status, 200, "{inbox}");
        let found = inbox["approvals"]
            .as_array()
            .and_then(|all| all.iter().find(|a| a["run"] == id).cloned());
        if let Some(found) = found {
            return found;
        }
        assert!(Instant::now() < deadline, "{id} never listed: {inbox}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn decide(serve: &Serve, run: &str, approval: &str, decision: &Value) -> (u16, Value) {
    let url = format!("{}/v1/runs/{run}/approvals/{approval}", serve.url);
    post(&url, decision, &[])
}

fn ended(serve: &Serve, id: &str) -> Value {
    let (status, run) = get(&format!("{}/v1/runs/{id}?wait=true", serve.url));
    assert_eq!(status, 200, "{run}");
    run
}

#[test]
#[ignore = "needs PostgreSQL: KILN_POSTGRES (.ci/postgres start)"]
fn postgres_an_approval_asked_on_one_server_is_decided_through_the_other_once() {
    let scratch = Scratch::new().expect("a PostgreSQL database");
    let mock = Mock::start(&json!({"loop": true, "turns": [{"text": "Noted."}]}));
    let scripts = shop_scripts(&mock);
    putter(&scripts);
    let start = || Serve::start(scripts.path(), Path::new(scratch.url()), ARGS, &[]);
    let (mut a, b) = (start(), start());

    // Asked on A, listed and shown as waiting on B, decided through B.
    let id = waiting_run(&a);
    let asked = listed(&b, &id);
    assert_eq!(
        (&asked["capability"], &asked["tool"], &asked["args"]),
        (&json!("store"), &json!("put"), &json!({"v": "x"})),
        "{asked}"
    );
    let (status, seen) = get(&format!("{}/v1/runs/{id}", b.url));
    assert_eq!(
        (status, &seen["status"]),
        (200, &json!("awaiting_approval")),
        "{seen}"
    );
    let approval = asked["id"].as_str().expect("approval id");
    let approve = json!({"decision": "approve"});
    let (status, out) = decide(&b, &id, approval, &approve);
    assert_eq!(status, 200, "{out}");
    let run = ended(&a, &id);
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(
        run["report"]["tool_calls"][0]["outcome"]["result"], "kept",
        "{run}"
    );
    // A later decision, through either server, is refused with the one that took effect.
    for serve in [&a, &b] {
        let deny = json!({"decision": "deny", "reason": "late"});
        let (status, out) = decide(serve, &id, approval, &deny);
        assert_eq!(
            (status, &out["error"]["decision"]),
            (409, &approve),
            "{out}"
        );
    }

    // Two decisions racing on the two servers: one wins, the other reads the winner's.
    for round in 0..3 {
        let id = waiting_run(&a);
        let approval = listed(&a, &id)["id"].as_str().expect("id").to_string();
        let deny = json!({"decision": "deny", "reason": format!("race {round}")});
        let (on_a, on_b) = std::thread::scope(|s| {
            let on_a = s.spawn(|| decide(&a, &id, &approval, &deny));
            let on_b = s.spawn(|| decide(&b, &id, &approval, &approve));
            (on_a.join().expect("a"), on_b.join().expect("b"))
        });
        let mut statuses = [on_a.0, on_b.0];
        statuses.sort_unstable();
        assert_eq!(statuses, [200, 409], "{on_a:?} {on_b:?}");
        let (winner, loser) = if on_a.0 == 200 {
            (&deny, &on_b.1)
        } else {
            (&approve, &on_a.1)
        };
        assert_eq!(&loser["error"]["decision"], winner, "{loser}");
        let run = ended(&b, &id);
        let call = &run["report"]["tool_calls"][0];
        match winner == &approve {
            true => assert_eq!(call["outcome"]["result"], "kept", "{run}"),
            false => assert_eq!(call["is_error"], true, "{run}"),
        }
    }

    // A heard B's decisions through PostgreSQL's notices, not by reading the table again.
    let _ = a.child.kill();
    let (_, log) = a.wait_exit(20);
    assert!(
        log.contains("approval decided through another server"),
        "{log}"
    );
}

#[test]
#[ignore = "needs PostgreSQL (KILN_POSTGRES), playwright (PyPI) and Debian's chromium; .ci/run has them"]
fn console_two_servers_one_database_hears_and_approves_the_other_servers_run() {
    let scratch = Scratch::new().expect("a PostgreSQL database");
    let mock = Mock::start(&json!({"loop": true, "turns": [{"text": "Noted."}]}));
    let scripts = shop_scripts(&mock);
    putter(&scripts);
    let start = || Serve::start(scripts.path(), Path::new(scratch.url()), ARGS, &[]);
    let (a, b) = (start(), start());
    let out = std::process::Command::new("python3")
        .arg(repo().join("tests/peers/console/two_servers_check.py"))
        .env("KILN_A", &a.url)
        .env("KILN_B", &b.url)
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "the two-server console check failed:\n{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stdout(&out).ends_with("0 problem(s)\n"), "{}", stdout(&out));
}

#[test]
#[ignore = "needs PostgreSQL: KILN_POSTGRES (.ci/postgres start)"]
fn postgres_another_servers_approvals_keep_their_walls_an_actor_sees_and_decides_only_its_own() {
    const ALICE: &str = "alice-token-0123456789abcdef";
    const BOB: &str = "bob-token-0123456789abcdef0";
    const CAROL: &str = "carol-token-0123456789abcde";
    let scratch = Scratch::new().expect("a PostgreSQL database");
    let mock = Mock::start(&json!({"loop": true, "turns": [{"text": "Noted."}]}));
    let scripts = shop_scripts(&mock);
    putter(&scripts);
    let tokens = scripts.path().join("tokens.json");
    let list = json!([
        {"token": ALICE, "actor": "alice", "caps": ["store"]},
        {"token": BOB, "actor": "bob", "caps": ["store"]},
        {"token": CAROL, "actor": "carol", "caps": ["approve"]},
    ]);
    std::fs::write(&tokens, list.to_string()).expect("tokens");
    let tokens = tokens.display().to_string();
    let args = [ARGS, &["--tokens", &tokens]].concat();
    let start = || Serve::start(scripts.path(), Path::new(scratch.url()), &args, &[]);
    let (a, b) = (start(), start());
    let id = start_run_as(
        &a.url,
        ALICE,
        &json!({"agent": "putter", "input": "go", "wait": false}),
    );
    let inbox = |token: &str| {
        let (status, inbox) = with_token("GET", &format!("{}/v1/approvals", b.url), token, None);
        assert_eq!(status, 200, "{inbox}");
        inbox["approvals"].as_array().cloned().unwrap_or_default()
    };
    // Alice's own inbox on B lists it; the approver's too; Bob's never.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !inbox(ALICE).iter().any(|a| a["run"] == id.as_str()) {
        assert!(
            Instant::now() < deadline,
            "alice's approval never listed on B"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let approval = inbox(ALICE)[0]["id"].as_str().expect("id").to_string();
    assert!(inbox(CAROL).iter().any(|a| a["run"] == id.as_str()));
    assert!(inbox(BOB).is_empty(), "{:?}", inbox(BOB));
    // Bob deciding through B learns nothing: the same 404 as a run that does not exist.
    let url = format!("{}/v1/runs/{id}/approvals/{approval}", b.url);
    let approve = json!({"decision": "approve"});
    let (status, out) = with_token("POST", &url, BOB, Some(&approve));
    assert_eq!(status, 404, "{out}");
    let (_, none) = with_token(
        "POST",
        &format!("{}/v1/runs/run_none/approvals/{approval}", b.url),
        BOB,
        Some(&approve),
    );
    assert_eq!(
        out["error"]["code"], none["error"]["code"],
        "{out} vs {none}"
    );
    // The approver decides it through B, and Alice's run on A goes on.
    let (status, out) = with_token("POST", &url, CAROL, Some(&approve));
    assert_eq!(status, 200, "{out}");
    let (_, run) = with_token(
        "GET",
        &format!("{}/v1/runs/{id}?wait=true", a.url),
        ALICE,
        None,
    );
    assert_eq!(run["status"], "completed", "{run}");
}
