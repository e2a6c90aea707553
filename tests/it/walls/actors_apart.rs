//! Actors stay apart (issue 56, item 6): an OAuth client acting for itself (`client_id: "ann"`,
//! no `sub`) is not the user `ann` (`oauth:ann`) and sees none of that user's runs; a static
//! token cannot name itself into a namespace kiln gives out (`oauth:`, `oauth-client:`,
//! `mcp:`); an actor name of invisible characters is refused, in a tokens file and in an
//! access token. The real binary on 127.0.0.1, against a fake authorization server.

use crate::common::*;
use crate::doors::serve::Serve;
use crate::doors::serve_tokens::{AUDIENCE, FakeIssuer};
use serde_json::{Value, json};
use std::process::Command;
use std::time::Duration;

const STATIC_ANN: &str = "ann-static-token-0123456789";

fn scripts() -> Scripts {
    Scripts::new(&[(
        "a.rhai",
        r#"agent("quick").provider("script").planner(|m, t| #{ text: "hi" });"#,
    )])
}

/// The ids of the runs `token` sees in `GET /v1/runs`.
fn listed(serve: &Serve, token: &str) -> Vec<String> {
    let (status, runs) = with_token("GET", &format!("{}/v1/runs", serve.url), token, None);
    assert_eq!(status, 200, "{runs}");
    runs["runs"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|r| r["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Runs `quick` as `token`: the run's id and actor.
fn run_as(serve: &Serve, token: &str) -> (String, Value) {
    let body = json!({"agent": "quick", "input": "hi"});
    let (status, done) = with_token(
        "POST",
        &format!("{}/v1/runs", serve.url),
        token,
        Some(&body),
    );
    assert_eq!(status, 200, "{done}");
    let id = done["id"].as_str().unwrap_or("").to_string();
    (id, done["report"]["actor"].clone())
}

#[test]
fn a_client_named_like_a_user_is_another_actor() {
    let issuer = FakeIssuer::start(Duration::ZERO);
    let s = scripts();
    let tokens = json!([{"token": STATIC_ANN, "actor": "ann"}]).to_string();
    let serve = Serve::start(
        s.path(),
        &s.path().join("k.db"),
        &[
            "--no-stdlib",
            "--auth-issuer",
            &issuer.url,
            "--auth-audience",
            AUDIENCE,
        ],
        &[("KILN_TOKENS", &tokens)],
    );
    let user = issuer.token(json!({"sub": "ann"}));
    let client = issuer.token(json!({"client_id": "ann"}));
    let (users_run, actor) = run_as(&serve, &user);
    assert_eq!(actor, "oauth:ann");
    let (clients_run, actor) = run_as(&serve, &client);
    assert_eq!(actor, "oauth-client:ann");
    let (static_run, actor) = run_as(&serve, STATIC_ANN);
    assert_eq!(actor, "ann");

    // Each sees its own run only, in the list and by id.
    assert_eq!(listed(&serve, &user), [users_run.as_str()]);
    assert_eq!(listed(&serve, &client), [clients_run.as_str()]);
    assert_eq!(listed(&serve, STATIC_ANN), [static_run.as_str()]);
    let runs = format!("{}/v1/runs", serve.url);
    for (token, other) in [
        (&client, &users_run),
        (&user, &clients_run),
        (&client, &static_run),
    ] {
        let (status, body) = with_token("GET", &format!("{runs}/{other}"), token, None);
        assert_eq!(status, 404, "{body}");
    }

    // A subject or client of invisible characters names nobody.
    for claims in [
        json!({"sub": "\u{200b}"}),
        json!({"client_id": "ann\u{2060}"}),
    ] {
        let token = issuer.token(claims.clone());
        let (status, body) = with_token("GET", &runs, &token, None);
        assert_eq!(status, 401, "{claims}: {body}");
        assert!(
            body.to_string().contains("invisible character"),
            "{claims}: {body}"
        );
    }
}

/// `kiln serve` with `tokens` in KILN_TOKENS: it must refuse to start; its stderr.
fn refused_tokens(s: &Scripts, tokens: &Value) -> String {
    let out = Command::new(kiln_bin())
        .args(["serve", "--bind", "127.0.0.1:0", "--no-stdlib", "--scripts"])
        .arg(s.path())
        .arg("--db")
        .arg(s.path().join("k.db"))
        .current_dir(s.path())
        .env("KILN_TOKENS", tokens.to_string())
        .env("NO_COLOR", "1")
        .output()
        .expect("kiln serve");
    assert!(!out.status.success(), "started with {tokens}");
    stderr(&out)
}

#[test]
fn a_static_token_cannot_name_an_oauth_actor_or_an_invisible_one() {
    let s = scripts();
    for (actor, why) in [
        ("oauth:ann", "namespace oauth:"),
        ("OAuth:ann", "namespace oauth:"),
        ("oauth-client:ann", "namespace oauth-client:"),
        ("mcp:claude", "namespace mcp:"),
        ("\u{200b}", "invisible character (U+200B)"),
        ("ann\u{feff}", "invisible character (U+FEFF)"),
        ("\u{3164}", "invisible character (U+3164)"),
        (" ", "only spaces"),
    ] {
        let tokens = json!([{"token": STATIC_ANN, "actor": actor}]);
        let said = refused_tokens(&s, &tokens);
        assert!(
            said.contains("[0].actor") && said.contains(why),
            "{actor:?}: {said}"
        );
    }
}
