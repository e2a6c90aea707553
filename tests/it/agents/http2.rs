//! HTTP/2 to the providers, through the real binary: `kiln serve` runs against `kiln mock`
//! serving TLS with a test certificate (trusted through `SSL_CERT_FILE`), the connections
//! counted at the mock, a connection dropped while requests are in flight, a provider that
//! refuses HTTP/2, and `--http1`.

use crate::common::*;
use crate::doors::serve::Serve;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::Path;

#[path = "../../../benches/support/certs.rs"]
mod certs;
use certs::TestCertificates;

/// A TLS mock's certificates and the folder holding them.
fn certificates() -> (tempfile::TempDir, TestCertificates) {
    let dir = tempfile::tempdir().expect("temp dir");
    let certs = TestCertificates::new(dir.path());
    (dir, certs)
}

/// Every request a TLS mock received, fetched over TLS trusting the test CA.
fn requests_over_tls(mock_url: &str, ca: &Path) -> Vec<Value> {
    kiln::egress::ensure_tls_provider();
    let pem = std::fs::read(ca).expect("CA file");
    let root = reqwest::Certificate::from_pem(&pem).expect("CA certificate");
    #[allow(clippy::disallowed_methods)] // the ring provider was installed just above
    let client = reqwest::Client::builder()
        .tls_certs_only([root])
        .build()
        .expect("client");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let url = format!("{mock_url}/_kiln/requests");
        let reply = client.get(url).send().await.expect("GET /_kiln/requests");
        let list: Value = reply.json().await.expect("requests JSON");
        list.as_array().cloned().unwrap_or_default()
    })
}

/// The connection numbers and HTTP versions the mock recorded for the model requests.
fn connections_and_versions(requests: &[Value]) -> (BTreeSet<u64>, BTreeSet<String>) {
    let model = requests
        .iter()
        .filter(|r| r["path"] == "/v1/chat/completions");
    let (mut connections, mut versions) = (BTreeSet::new(), BTreeSet::new());
    for r in model {
        connections.insert(r["connection"].as_u64().expect("connection number"));
        versions.insert(r["http"].as_str().expect("http version").to_string());
    }
    (connections, versions)
}

/// An agent `shop` whose provider is the mock at `url` (over TLS).
fn scripts_for(url: &str) -> Scripts {
    Scripts::new(&[(
        "shop.rhai",
        &format!(
            r#"tool("lookup").description("Price of a SKU").param("sku", "string").handler(|a| #{{ sku: a.sku, price: 4.5 }});
agent("shop").provider("openai").model("mock-model").base_url("{url}/v1").tools(["lookup"]);"#
        ),
    )])
}

/// `runs` chat completions sent to `serve` at once; each answer's text.
fn run_at_once(serve: &Serve, runs: usize) -> Vec<String> {
    let url = format!("{}/v1/chat/completions", serve.url);
    let threads: Vec<_> = (0..runs)
        .map(|i| {
            let url = url.clone();
            std::thread::spawn(move || {
                let body = json!({"model": "shop", "messages": [{"role": "user", "content": format!("price {i}")}]});
                let (status, reply) = post(&url, &body, &[]);
                assert_eq!(status, 200, "{reply}");
                reply["choices"][0]["message"]["content"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
        })
        .collect();
    threads
        .into_iter()
        .map(|t| t.join().expect("client thread"))
        .collect()
}

/// A lookup round the mock answers after `delay_ms` (so the runs' requests overlap), then the
/// answer.
fn slow_scenario(delay_ms: u64) -> Value {
    json!({"by_round": true, "loop": true, "turns": [
        {"tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}], "delay_ms": delay_ms},
        {"text": "SKU-1 costs 4.50."}
    ]})
}

fn serve_for(mock: &Mock, certs: &TestCertificates, args: &[&str]) -> (Scripts, Serve) {
    let scripts = scripts_for(&mock.url);
    let db = scripts.path().join("kiln.db");
    let mut all = vec!["--max-runs", "400", "--queue", "400"];
    all.extend_from_slice(args);
    let ca = certs.ca.display().to_string();
    let serve = Serve::start(scripts.path(), &db, &all, &[("SSL_CERT_FILE", &ca)]);
    (scripts, serve)
}

#[test]
fn runs_to_a_provider_over_tls_share_http2_connections_of_at_most_100_streams() {
    let (_dir, certs) = certificates();
    let mock = Mock::start_with(&slow_scenario(800), &strs(&certs.mock_args()));
    assert!(mock.url.starts_with("https://127.0.0.1:"), "{}", mock.url);
    let (_scripts, serve) = serve_for(&mock, &certs, &[]);

    // One run first: requests sent at once before any connection is up cannot know it will be
    // HTTP/2 (that is learnt in the TLS handshake), so each may open one.
    assert_eq!(run_at_once(&serve, 1), ["SKU-1 costs 4.50."]);
    let answers = run_at_once(&serve, 40);
    assert!(
        answers.iter().all(|a| a == "SKU-1 costs 4.50."),
        "{answers:?}"
    );
    let requests = requests_over_tls(&mock.url, &certs.ca);
    assert_eq!(requests.len(), 82);
    let (connections, versions) = connections_and_versions(&requests);
    assert_eq!(versions, BTreeSet::from(["HTTP/2.0".to_string()]));
    assert_eq!(
        connections.len(),
        1,
        "41 runs of two requests each, on one connection: {connections:?}"
    );

    // 150 runs waiting at once: no more than 100 streams on a connection, so a second one.
    // The first such burst warms the second (its requests, sent before its connection is up,
    // may each open one, closed as they end); the second burst finds both up.
    assert_eq!(run_at_once(&serve, 150).len(), 150);
    assert_eq!(run_at_once(&serve, 150).len(), 150);
    let requests = requests_over_tls(&mock.url, &certs.ca);
    assert_eq!(requests.len(), 82 + 600);
    let (connections, _) = connections_and_versions(&requests[82 + 300..]);
    assert!(
        (2..=3).contains(&connections.len()),
        "150 runs at once take 2 connections (at most 100 streams each), not {connections:?}"
    );
}

#[test]
fn with_http1_each_run_waiting_holds_a_connection_of_its_own() {
    let (_dir, certs) = certificates();
    let mock = Mock::start_with(&slow_scenario(800), &strs(&certs.mock_args()));
    let (_scripts, serve) = serve_for(&mock, &certs, &["--http1"]);
    let answers = run_at_once(&serve, 20);
    assert!(
        answers.iter().all(|a| a == "SKU-1 costs 4.50."),
        "{answers:?}"
    );
    let (connections, versions) =
        connections_and_versions(&requests_over_tls(&mock.url, &certs.ca));
    assert_eq!(versions, BTreeSet::from(["HTTP/1.1".to_string()]));
    assert!(
        connections.len() >= 20,
        "20 requests at once over HTTP/1.1 need 20 connections: {connections:?}"
    );
}

#[test]
fn a_provider_that_refuses_http2_is_spoken_to_over_http1() {
    let (_dir, certs) = certificates();
    let mut args = certs.mock_args();
    args.push("--http1".into());
    let mock = Mock::start_with(&slow_scenario(0), &strs(&args));
    let (_scripts, serve) = serve_for(&mock, &certs, &[]);
    let answers = run_at_once(&serve, 5);
    assert!(
        answers.iter().all(|a| a == "SKU-1 costs 4.50."),
        "{answers:?}"
    );
    let (_, versions) = connections_and_versions(&requests_over_tls(&mock.url, &certs.ca));
    assert_eq!(versions, BTreeSet::from(["HTTP/1.1".to_string()]));
}

#[test]
fn a_connection_dropped_with_streams_in_flight_is_retried_and_every_run_completes() {
    let (_dir, certs) = certificates();
    // The first request to reach the answer drops the connection after 500 ms, with the other
    // runs' requests for it still on it, waiting out the same delay before any byte of their
    // replies (a reply already under way when its connection drops fails its run, as over
    // HTTP/1.1: only a request that got no reply is sent again).
    let scenario = json!({"by_round": true, "loop": true, "turns": [
        {"tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}]},
        {"text": "SKU-1 costs 4.50.", "reset_connection": true, "delay_ms": 500}
    ]});
    let mock = Mock::start_with(&scenario, &strs(&certs.mock_args()));
    let (_scripts, serve) = serve_for(&mock, &certs, &[]);
    let answers = run_at_once(&serve, 10);
    assert!(
        answers.iter().all(|a| a == "SKU-1 costs 4.50."),
        "{answers:?}"
    );
    let requests = requests_over_tls(&mock.url, &certs.ca);
    let (connections, versions) = connections_and_versions(&requests);
    assert_eq!(versions, BTreeSet::from(["HTTP/2.0".to_string()]));
    assert!(
        connections.len() >= 2,
        "the runs went on over a new connection: {connections:?}"
    );
    let (status, runs) = get(&format!("{}/v1/runs?limit=100", serve.url));
    assert_eq!(status, 200, "{runs}");
    let data = runs["runs"].as_array().cloned().unwrap_or_default();
    assert_eq!(data.len(), 10, "{runs}");
    assert!(
        data.iter().all(|r| r["status"] == "completed"),
        "every run completed: {runs}"
    );
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}
