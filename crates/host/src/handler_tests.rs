//! The `ctx` a script handler sees, and the snapshot's filtering by grants and `available_if`
//! (internals the public API does not expose: a context shared by several calls of one run).

use crate::Host;
use kiln_core::capability::Grants;
use serde_json::json;
use std::sync::Arc;

const TOOLS: &str = r#"
tool("ctx_echo").handler(|args, ctx| #{ actor: ctx.actor_id, tenant: ctx.context.tenant, agent: ctx.agent, run: ctx.run_id, caps: ctx.capabilities, args: args });
tool("counter").handler(|args, ctx| { ctx.state.n = (ctx.state.n ?? 0) + 1; ctx.state.n });
tool("a").handler(|x| 1);
tool("b").requires("db").handler(|x| 1);
tool("c").available_if(|ctx| ctx.context.admin == true).handler(|x| 1);
"#;

fn host() -> (tempfile::TempDir, Arc<Host>) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("t.rhai"), TOOLS).expect("write");
    let host = Host::builder()
        .scripts(dir.path())
        .stdlib(false)
        .build()
        .expect("host");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    (dir, host)
}

#[test]
fn ctx_is_kept_apart_from_args() {
    let (_dir, host) = host();
    let t = host.tool("ctx_echo").expect("tool");
    let mut ctx = host.context(Grants::parse(&["db"]).expect("caps"));
    ctx.who.actor_id = Some("user-7".into());
    ctx.run.context.insert("tenant".into(), json!("acme"));
    ctx.who.caller = kiln_core::context::Caller::Agent("support".into());
    let out = t.execute(&json!({}), &ctx).result.expect("ok");
    assert_eq!(out["actor"], json!("user-7"));
    assert_eq!(out["tenant"], json!("acme"));
    assert_eq!(out["agent"], json!("support"));
    assert_eq!(out["caps"], json!(["db"]));
    assert_eq!(out["args"], json!({}));
    assert!(out["run"].as_str().is_some_and(|r| r.starts_with("run_")));
}

#[test]
fn ctx_state_persists_across_calls_of_one_run() {
    let (_dir, host) = host();
    let t = host.tool("counter").expect("tool");
    let ctx = host.context(Default::default());
    for want in 1..=3 {
        assert_eq!(t.execute(&json!({}), &ctx).result.expect("ok"), json!(want));
    }
    let other = host.context(Default::default());
    assert_eq!(
        t.execute(&json!({}), &other).result.expect("ok"),
        json!(1),
        "a new run starts fresh"
    );
}

#[test]
fn registry_filters_by_capability_and_available_if() {
    let (_dir, host) = host();
    let reg = host.registry();
    let names = |ts: Vec<Arc<kiln_core::tool::Tool>>| {
        ts.iter()
            .map(|t| t.name.clone())
            .filter(|n| n.len() == 1)
            .collect::<Vec<_>>()
    };
    let none = Grants::default();
    assert_eq!(names(reg.tools_for(&none)), vec!["a", "c"]);
    let db = Grants::parse(&["db"]).expect("caps");
    assert_eq!(names(reg.tools_for(&db)), vec!["a", "b", "c"]);
    let mut ctx = host.context(db);
    assert_eq!(names(reg.available(None, &ctx)), vec!["a", "b"]);
    ctx.run.context.insert("admin".into(), json!(true));
    assert_eq!(names(reg.available(None, &ctx)), vec!["a", "b", "c"]);
}
