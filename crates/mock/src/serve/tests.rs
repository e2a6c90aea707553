//! The serving loop over real sockets: HTTP/2 over TLS (ALPN) and h2c, HTTP/1.1 alone, the
//! connection each request is recorded with, and a turn's `reset_connection`.

use crate::scenario::Scenario;
use crate::{ServeOptions, bind_with};
use reqwest::{ClientBuilder, Version};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// A test CA and a leaf certificate for 127.0.0.1 it signed, written as PEM files to a folder of
/// their own (removed on drop).
struct Pems {
    dir: PathBuf,
    cert: PathBuf,
    key: PathBuf,
    /// The CA's certificate (PEM), the one root a client trusts.
    ca: String,
}

impl Drop for Pems {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn temp_dir() -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "kiln-mock-tls-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let dir = std::env::temp_dir().join(name);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn pems() -> Pems {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    (ca_params.distinguished_name).push(DnType::CommonName, "kiln mock test CA");
    let ca =
        CertifiedIssuer::self_signed(ca_params, KeyPair::generate().expect("CA key")).expect("CA");
    let leaf_key = KeyPair::generate().expect("leaf key");
    let leaf_params =
        CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .expect("leaf params");
    let leaf = leaf_params.signed_by(&leaf_key, &ca).expect("leaf");
    let dir = temp_dir();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, leaf.pem()).expect("write cert");
    std::fs::write(&key, leaf_key.serialize_pem()).expect("write key");
    Pems {
        dir,
        cert,
        key,
        ca: ca.pem(),
    }
}

/// Starts a mock serving `scenario` (JSON) on 127.0.0.1 as `options` say.
async fn start(scenario: Value, options: ServeOptions) -> SocketAddr {
    let scenario: Scenario = serde_json::from_value(scenario).expect("scenario");
    let addr = SocketAddr::from(([127, 0, 0, 1], 0));
    let (local, server) = bind_with(scenario, addr, options).await.expect("bind");
    tokio::spawn(server);
    local
}

/// A client trusting `ca` alone (none: no TLS), shaped by `shape`.
#[allow(clippy::disallowed_methods)] // the ring provider is installed first, as egress does
fn client(ca: Option<&str>, shape: impl FnOnce(ClientBuilder) -> ClientBuilder) -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(20));
    if let Some(ca) = ca {
        let root = reqwest::Certificate::from_pem(ca.as_bytes()).expect("CA certificate");
        builder = builder.tls_certs_only([root]);
    }
    shape(builder).build().expect("client")
}

/// An OpenAI Chat Completions request asking `user`.
async fn ask(
    client: &reqwest::Client,
    base: &str,
    user: &str,
) -> reqwest::Result<reqwest::Response> {
    let body = json!({"model": "mock-model", "messages": [{"role": "user", "content": user}]});
    (client.post(format!("{base}/v1/chat/completions")))
        .bearer_auth("sk-test")
        .json(&body)
        .send()
        .await
}

/// The reply's text, and the HTTP version it came over.
async fn answer(response: reqwest::Response) -> (String, Version) {
    let version = response.version();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("JSON reply");
    let text = body["choices"][0]["message"]["content"].as_str();
    (text.expect("text").to_string(), version)
}

/// The chat requests the mock recorded, as `(connection, http)`.
async fn recorded(client: &reqwest::Client, base: &str) -> Vec<(u64, String)> {
    let url = format!("{base}/_kiln/requests");
    let all: Value = client
        .get(url)
        .send()
        .await
        .expect("GET")
        .json()
        .await
        .expect("JSON");
    (all.as_array().expect("a list").iter())
        .filter(|r| r["path"] == "/v1/chat/completions")
        .map(|r| {
            let number = r["connection"].as_u64().expect("a connection number");
            (number, r["http"].as_str().expect("http").to_string())
        })
        .collect()
}

fn looping() -> Value {
    json!({"loop": true, "turns": [{"text": "hi"}]})
}

#[tokio::test]
async fn tls_serves_http2_and_concurrent_requests_share_one_connection() {
    let pems = pems();
    let options = ServeOptions {
        tls: Some((pems.cert.clone(), pems.key.clone())),
        http1_only: false,
    };
    let base = format!("https://{}", start(looping(), options).await);
    let client = client(Some(&pems.ca), |b| b);
    let (text, version) = answer(ask(&client, &base, "first").await.expect("reply")).await;
    assert_eq!((text.as_str(), version), ("hi", Version::HTTP_2));
    let users: Vec<String> = (0..20).map(|i| format!("ask {i}")).collect();
    let asks = users.iter().map(|user| ask(&client, &base, user));
    for reply in futures_util::future::join_all(asks).await {
        let (_, version) = answer(reply.expect("reply")).await;
        assert_eq!(version, Version::HTTP_2);
    }
    let records = recorded(&client, &base).await;
    assert_eq!(records.len(), 21);
    let connections: BTreeSet<u64> = records.iter().map(|(n, _)| *n).collect();
    assert_eq!(connections.len(), 1, "one connection: {records:?}");
    assert!(
        records.iter().all(|(_, http)| http == "HTTP/2.0"),
        "{records:?}"
    );
}

#[tokio::test]
async fn http1_only_over_tls_offers_http1_alone() {
    let pems = pems();
    let options = ServeOptions {
        tls: Some((pems.cert.clone(), pems.key.clone())),
        http1_only: true,
    };
    let addr = start(looping(), options).await;
    let base = format!("https://{addr}");
    // Plain HTTP to the TLS port fails its handshake; the mock goes on serving.
    let plain = client(None, |b| b);
    assert!(
        ask(&plain, &format!("http://{addr}"), "plain")
            .await
            .is_err()
    );
    let client = client(Some(&pems.ca), |b| b);
    let (text, version) = answer(ask(&client, &base, "one").await.expect("reply")).await;
    assert_eq!((text.as_str(), version), ("hi", Version::HTTP_11));
    // A client that will speak nothing but HTTP/2 finds no protocol in common.
    let h2 = client_h2(&pems.ca);
    assert!(ask(&h2, &base, "h2 only").await.is_err());
    let records = recorded(&client, &base).await;
    assert!(
        records.iter().all(|(_, http)| http == "HTTP/1.1"),
        "{records:?}"
    );
}

fn client_h2(ca: &str) -> reqwest::Client {
    client(Some(ca), |b| b.http2_prior_knowledge())
}

#[tokio::test]
async fn plain_connections_speak_h2c_with_prior_knowledge_or_http1() {
    let base = format!("http://{}", start(looping(), ServeOptions::default()).await);
    let h2c = client(None, |b| b.http2_prior_knowledge());
    let (_, version) = answer(ask(&h2c, &base, "h2c").await.expect("reply")).await;
    assert_eq!(version, Version::HTTP_2);
    let http1 = client(None, |b| b);
    let (_, version) = answer(ask(&http1, &base, "http1").await.expect("reply")).await;
    assert_eq!(version, Version::HTTP_11);
    let records = recorded(&http1, &base).await;
    assert_eq!(
        records,
        [(1, "HTTP/2.0".to_string()), (2, "HTTP/1.1".to_string())]
    );
    // Serving HTTP/1.1 alone, an h2c client is not understood.
    let options = ServeOptions {
        tls: None,
        http1_only: true,
    };
    let base = format!("http://{}", start(looping(), options).await);
    assert!(ask(&h2c, &base, "h2c").await.is_err());
    let (_, version) = answer(ask(&http1, &base, "http1").await.expect("reply")).await;
    assert_eq!(version, Version::HTTP_11);
}

#[tokio::test]
async fn reset_connection_drops_the_first_request_and_answers_the_next() {
    let scenario = json!({"turns": [{"reset_connection": true, "text": "after the reset"}]});
    let base = format!("http://{}", start(scenario, ServeOptions::default()).await);
    let client = client(None, |b| b);
    let dropped = ask(&client, &base, "first").await;
    let error = dropped.expect_err("the connection is closed before any reply");
    assert!(!error.is_status() && !error.is_timeout(), "{error}");
    // The client's place in the scenario did not move: its retry reaches the turn, now spent.
    let (text, _) = answer(ask(&client, &base, "again").await.expect("reply")).await;
    assert_eq!(text, "after the reset");
    let records = recorded(&client, &base).await;
    assert_eq!(
        records,
        [(1, "HTTP/1.1".to_string()), (2, "HTTP/1.1".to_string())]
    );
}

#[tokio::test]
async fn reset_connection_fails_every_stream_on_an_http2_connection() {
    let scenario = json!({"by_round": true, "turns": [
        {"user": "warm", "text": "warm"},
        {"user": "slow", "delay_ms": 30000, "text": "slow"},
        {"user": "reset", "reset_connection": true, "text": "after the reset"}
    ]});
    let base = format!("http://{}", start(scenario, ServeOptions::default()).await);
    let client = client(None, |b| b.http2_prior_knowledge());
    answer(ask(&client, &base, "warm").await.expect("reply")).await;
    let slow = tokio::spawn({
        let (client, base) = (client.clone(), base.clone());
        async move { ask(&client, &base, "slow").await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(ask(&client, &base, "reset").await.is_err());
    // The slow stream shared the connection: it fails now, not after its 30 s.
    let slow = tokio::time::timeout(Duration::from_secs(10), slow).await;
    let slow = slow.expect("the slow stream ends with its connection");
    assert!(slow.expect("task").is_err());
    let (text, version) = answer(ask(&client, &base, "reset").await.expect("reply")).await;
    assert_eq!(
        (text.as_str(), version),
        ("after the reset", Version::HTTP_2)
    );
    let records = recorded(&client, &base).await;
    let h2 = |n: u64| (n, "HTTP/2.0".to_string());
    assert_eq!(records, [h2(1), h2(1), h2(1), h2(2)]);
}

#[tokio::test]
async fn tls_files_that_cannot_be_read_are_named() {
    let pems = pems();
    let missing = pems.dir.join("missing.pem");
    let addr = SocketAddr::from(([127, 0, 0, 1], 0));
    for (cert, key) in [
        (missing.clone(), pems.key.clone()),
        (pems.cert.clone(), missing.clone()),
        (pems.key.clone(), pems.key.clone()),
    ] {
        let options = ServeOptions {
            tls: Some((cert.clone(), key.clone())),
            http1_only: false,
        };
        let Err(e) = bind_with(Scenario::default(), addr, options).await else {
            panic!(
                "{} and {} are not a certificate and its key",
                cert.display(),
                key.display()
            );
        };
        let named = if cert == pems.cert { &key } else { &cert };
        assert!(e.to_string().contains(&named.display().to_string()), "{e}");
    }
}
