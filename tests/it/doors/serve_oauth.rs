//! `kiln serve --auth-issuer`: kiln as an OAuth resource server, against a real, certified
//! OpenID provider (`oidc-provider` from npm, started by tests/fixtures/oidc/provider.mjs on
//! 127.0.0.1). Its JWT access tokens run agents within their scopes and are refused beyond
//! them; expired, wrong-audience, wrong-issuer and tampered tokens get a 401 that says where
//! to get a good one; no token is logged.
//!
//! `#[ignore]`d: `.ci/run` installs oidc-provider into target/oidc and Node 22, and passes
//! them as `KILN_OIDC_PROVIDER` and `KILN_NODE`.

use crate::common::*;
use crate::doors::serve::Serve;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

const AUDIENCE: &str = "http://kiln.test/";

/// A running provider; killed on drop.
pub(crate) struct Provider {
    pub(crate) issuer: String,
    child: Child,
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn provider() -> Provider {
    let node = std::env::var("KILN_NODE").expect("KILN_NODE: Node 22, installed by .ci/run");
    let dir = std::env::var("KILN_OIDC_PROVIDER")
        .expect("KILN_OIDC_PROVIDER: the folder oidc-provider is installed in, by .ci/run");
    let mut child = Command::new(node)
        .arg(repo().join("tests/fixtures/oidc/provider.mjs"))
        .env("OIDC_PROVIDER_DIR", dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start oidc-provider");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the provider prints its issuer");
    let issuer = line
        .trim()
        .strip_prefix("issuer ")
        .unwrap_or_else(|| panic!("the provider said: {line}"))
        .to_string();
    Provider { issuer, child }
}

/// An access token of `client` for `resource` with `scope` (the client_credentials grant).
fn token(p: &Provider, client: &str, secret: &str, resource: &str, scope: &str) -> String {
    let body = format!(
        "grant_type=client_credentials&resource={}&scope={}",
        resource.replace(':', "%3A").replace('/', "%2F"),
        scope.replace(' ', "+").replace(':', "%3A")
    );
    let auth = format!(
        "Basic {}",
        base64_encode(format!("{client}:{secret}").as_bytes())
    );
    let (status, _, text) = http_raw(
        "POST",
        &format!("{}/token", p.issuer),
        &[
            ("authorization", &auth),
            ("content-type", "application/x-www-form-urlencoded"),
        ],
        &body,
    );
    let reply: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    assert_eq!(status, 200, "{reply}");
    reply["access_token"]
        .as_str()
        .expect("an access token")
        .to_string()
}

fn base64_encode(bytes: &[u8]) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

const AGENT: &str = r#"
tool("remember").param("text", "string").requires(["store"])
    .handler(|args| { store_set("notes", args.text, true); `kept ${args.text}` });
agent("keeper").provider("script").tools(["remember"]).capabilities(["store"])
    .planner(|m, t| {
        let last = m[m.len() - 1];
        if last.role == "user" { #{ tool_calls: [#{ name: "remember", args: #{ text: last.content } }] } }
        else { #{ text: `tool said: ${last.content}` } }
    });
"#;

fn run(serve: &Serve, token: &str, body: Value) -> (u16, Value, Option<String>) {
    let bearer = format!("Bearer {token}");
    let (status, headers, text) = http(
        "POST",
        &format!("{}/v1/runs", serve.url),
        &[("authorization", &bearer)],
        Some(&body),
    );
    let challenge = headers
        .iter()
        .find(|(k, _)| k == "www-authenticate")
        .map(|(_, v)| v.clone());
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
        challenge,
    )
}

#[test]
#[ignore = "needs Node 22 and oidc-provider: run by .ci/run"]
fn tokens_of_a_real_authorization_server_run_agents_within_their_scopes() {
    let p = provider();
    let s = Scripts::new(&[("keeper.rhai", AGENT)]);
    let mut serve = Serve::start(
        s.path(),
        &s.path().join("k.db"),
        &["--auth-issuer", &p.issuer, "--auth-audience", AUDIENCE],
        &[],
    );
    // Where to get a token, for a client that has none.
    let (status, meta) = get(&format!(
        "{}/.well-known/oauth-protected-resource",
        serve.url
    ));
    assert_eq!(status, 200, "{meta}");
    assert_eq!(meta["authorization_servers"], json!([p.issuer]), "{meta}");
    let (status, body, challenge) = run(&serve, "", json!({"agent": "keeper", "input": "x"}));
    assert_eq!(status, 401, "{body}");
    let challenge = challenge.unwrap_or_default();
    assert!(
        challenge.contains(
            "resource_metadata=\"http://kiln.test/.well-known/oauth-protected-resource\""
        ),
        "{challenge}"
    );

    // A token whose scope grants store: the agent keeps the note, acting for the client.
    let store = token(&p, "app", "app-secret-0123456789", AUDIENCE, "kiln:store");
    let (status, done, _) = run(&serve, &store, json!({"agent": "keeper", "input": "milk"}));
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["report"]["answer"], "tool said: kept milk", "{done}");
    assert_eq!(done["report"]["actor"], "oauth-client:app", "{done}");
    // One whose scope does not: the run cannot use store, and asking for it is refused.
    let net = token(&p, "app", "app-secret-0123456789", AUDIENCE, "kiln:net");
    let (status, done, _) = run(&serve, &net, json!({"agent": "keeper", "input": "beer"}));
    assert_eq!(status, 200, "{done}");
    assert!(
        !done.to_string().contains("kept beer"),
        "beyond its scope: {done}"
    );
    let (status, body, _) = run(
        &serve,
        &net,
        json!({"agent": "keeper", "input": "beer", "caps": ["store"]}),
    );
    assert_eq!(status, 403, "{body}");
    assert!(
        body.to_string().contains("beyond what this token allows"),
        "{body}"
    );

    // The four bad tokens.
    let elsewhere = token(
        &p,
        "app",
        "app-secret-0123456789",
        "http://other.test/",
        "kiln:store",
    );
    let other = provider();
    let foreign = token(
        &other,
        "app",
        "app-secret-0123456789",
        AUDIENCE,
        "kiln:store",
    );
    let mut tampered: Vec<&str> = store.split('.').collect();
    let widened = format!("{}x", tampered[1]);
    tampered[1] = &widened;
    let tampered = tampered.join(".");
    let brief = token(
        &p,
        "brief",
        "brief-secret-0123456789",
        AUDIENCE,
        "kiln:store",
    );
    std::thread::sleep(std::time::Duration::from_millis(3500));
    for (bad, why) in [
        (&elsewhere, "it is meant for another resource"),
        (&foreign, "not valid"),
        (&tampered, "not valid"),
        (&brief, "it has expired"),
    ] {
        let (status, body, challenge) = run(&serve, bad, json!({"agent": "keeper", "input": "x"}));
        assert_eq!(status, 401, "{why}: {body}");
        assert!(body.to_string().contains(why), "{why}: {body}");
        assert!(challenge.is_some(), "{why}: no WWW-Authenticate");
    }

    // No token in the server's output or the run log.
    let _ = serve.child.kill();
    let (_, output) = serve.wait_exit(10);
    for t in [&store, &net] {
        assert!(!output.contains(t.as_str()), "a token was logged");
    }
    for entry in std::fs::read_dir(s.path()).expect("scripts").flatten() {
        let bytes = std::fs::read(entry.path()).unwrap_or_default();
        assert!(
            !bytes.windows(store.len()).any(|w| w == store.as_bytes()),
            "the token is in {}",
            entry.path().display()
        );
    }
}

/// One 2026-07-28 request to `kiln mcp --http` with `token`; the status, the answer and the
/// `WWW-Authenticate` header.
fn mcp(url: &str, token: &str, method: &str, params: Value) -> (u16, Value, Option<String>) {
    let a = crate::mcp::mcp_stateless::request(url, "oauth-test", json!({}), token, method, params);
    (a.status, a.message, a.challenge)
}

#[test]
#[ignore = "needs Node 22 and oidc-provider: run by .ci/run"]
fn kiln_mcp_takes_access_tokens_whose_scopes_narrow_each_request() {
    let p = provider();
    let s = Scripts::new(&[(
        "tools.rhai",
        r#"tool("remember").param("text", "string").requires(["store"])
    .handler(|args| { store_set("notes", args.text, true); `kept ${args.text}` });
tool("look").param("path", "string").requires(["fs.read"]).handler(|args| read_file(args.path));"#,
    )]);
    let audience = "http://kiln.test/mcp";
    let server = crate::mcp::McpHttp::start(
        s.path(),
        &[
            "--scripts",
            ".",
            "--caps",
            "store,fs.read",
            "--auth-issuer",
            &p.issuer,
            "--auth-audience",
            audience,
        ],
        &[],
    );
    let (status, _, challenge) = mcp(&server.url, "", "tools/list", json!({}));
    assert_eq!(status, 401);
    assert!(challenge.unwrap_or_default().contains(
        "resource_metadata=\"http://kiln.test/mcp/.well-known/oauth-protected-resource\""
    ),);
    let store = token(&p, "app", "app-secret-0123456789", audience, "kiln:store");
    let (status, listed, _) = mcp(&server.url, &store, "tools/list", json!({}));
    assert_eq!(status, 200, "{listed}");
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"remember") && !names.contains(&"look"),
        "{names:?}"
    );
    let call = |name: &str, args: Value| {
        mcp(
            &server.url,
            &store,
            "tools/call",
            json!({"name": name, "arguments": args}),
        )
        .1
    };
    let kept = call("remember", json!({"text": "milk"}));
    assert_eq!(kept["result"]["content"][0]["text"], "kept milk", "{kept}");
    let refused = call("look", json!({"path": "tools.rhai"}));
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let bad = format!("{store}x");
    let (status, _, _) = mcp(&server.url, &bad, "tools/list", json!({}));
    assert_eq!(status, 401);
}
