//! `kiln serve --auth-issuer` (and `kiln mcp --http --auth-issuer`) against a fake
//! authorization server on 127.0.0.1 whose JWTs the test signs itself (ES256, with `ring`), so
//! it can mint what a real provider would not: a token that names no subject, one whose `sub`
//! is a number, one naming a key the issuer does not publish. The fake counts how often kiln
//! fetches its metadata and keys, answers after a set latency, and can hold a key fetch until
//! the test lets it go.

use crate::common::*;
use crate::doors::serve::Serve;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

pub(crate) const AUDIENCE: &str = "http://kiln.test/";
const KID: &str = "key-1";

/// Base64url without padding, as JWTs use it.
fn b64url(bytes: &[u8]) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..=chunk.len() {
            out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

/// What the fake issuer's threads share with the test.
#[derive(Default)]
struct Seen {
    metadata: AtomicUsize,
    jwks: AtomicUsize,
    /// Once set, key fetches after the first are answered; until then they wait (20 s at most).
    open: Mutex<bool>,
    opened: Condvar,
}

/// A fake authorization server on 127.0.0.1; its threads end with the test process.
pub(crate) struct FakeIssuer {
    pub(crate) url: String,
    key: EcdsaKeyPair,
    rng: SystemRandom,
    seen: Arc<Seen>,
}

impl FakeIssuer {
    /// Serves metadata and JWKS, each answer `latency` late.
    pub(crate) fn start(latency: Duration) -> FakeIssuer {
        let rng = SystemRandom::new();
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("key");
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .expect("key pair");
        let point = key.public_key().as_ref().to_vec();
        let jwks = json!({"keys": [{
            "kty": "EC", "crv": "P-256", "kid": KID, "alg": "ES256", "use": "sig",
            "x": b64url(&point[1..33]), "y": b64url(&point[33..65]),
        }]});
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let seen = Arc::new(Seen::default());
        let metadata = json!({"issuer": url, "jwks_uri": format!("{url}/jwks")});
        let shared = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (seen, metadata, jwks) = (shared.clone(), metadata.clone(), jwks.clone());
                std::thread::spawn(move || answer(stream, latency, &seen, &metadata, &jwks));
            }
        });
        FakeIssuer {
            url,
            key,
            rng,
            seen,
        }
    }

    /// A JWT signed with `kid` whose claims are a good token's for kiln plus `claims`.
    fn token_with_kid(&self, kid: &str, claims: Value) -> String {
        let exp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs()
            + 600;
        let mut all = json!({"iss": self.url, "aud": AUDIENCE, "exp": exp});
        for (k, v) in claims.as_object().into_iter().flatten() {
            all[k] = v.clone();
        }
        let head = json!({"alg": "ES256", "typ": "JWT", "kid": kid});
        let signed = format!(
            "{}.{}",
            b64url(head.to_string().as_bytes()),
            b64url(all.to_string().as_bytes())
        );
        let sig = self.key.sign(&self.rng, signed.as_bytes()).expect("sign");
        format!("{signed}.{}", b64url(sig.as_ref()))
    }

    pub(crate) fn token(&self, claims: Value) -> String {
        self.token_with_kid(KID, claims)
    }

    fn jwks_fetches(&self) -> usize {
        self.seen.jwks.load(Ordering::SeqCst)
    }

    fn metadata_fetches(&self) -> usize {
        self.seen.metadata.load(Ordering::SeqCst)
    }

    /// Lets held key fetches (and later ones) through.
    fn open(&self) {
        *self.seen.open.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.seen.opened.notify_all();
    }
}

impl Drop for FakeIssuer {
    fn drop(&mut self) {
        self.open();
    }
}

/// Answers one request of kiln's: metadata, or the keys (the second fetch on held until the
/// test opens the gate).
fn answer(
    mut stream: std::net::TcpStream,
    latency: Duration,
    seen: &Seen,
    metadata: &Value,
    jwks: &Value,
) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_string();
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    std::thread::sleep(latency);
    let (status, body) = match path.as_str() {
        "/.well-known/oauth-authorization-server" => {
            seen.metadata.fetch_add(1, Ordering::SeqCst);
            (200, metadata.to_string())
        }
        "/jwks" => {
            if seen.jwks.fetch_add(1, Ordering::SeqCst) > 0 {
                let open = seen.open.lock().unwrap_or_else(|e| e.into_inner());
                let _ = seen
                    .opened
                    .wait_timeout_while(open, Duration::from_secs(20), |open| !*open);
            }
            (200, jwks.to_string())
        }
        _ => (404, "{}".to_string()),
    };
    let reply = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(reply.as_bytes());
}

/// `METHOD URL` with `token` (and a JSON body): the status and the parsed answer.
fn scripts(mock: &Mock) -> Scripts {
    Scripts::new(&[(
        "a.rhai",
        &format!(
            r#"tool("remember").description("Keeps a note").param("text", "string").requires(["store"])
    .handler(|a| {{ store_set("notes", "last", a.text); `kept ${{a.text}}` }});
agent("notes").provider("openai").model("m").base_url("{}/v1").tools(["remember"]).ask(["store"]);"#,
            mock.url
        ),
    )])
}

const ALICE: &str = "alice-token-0123456789";

/// Polls alice's run until it waits for an approval; that approval's id.
fn pending_approval(serve: &Serve, id: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let (_, run) = with_token("GET", &format!("{}/v1/runs/{id}", serve.url), ALICE, None);
        if let Some(approval) = run["approvals"][0]["id"].as_str() {
            return approval.to_string();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("run {id} never waited for approval");
}

/// A verified token that names no subject (no `sub` nor `client_id`, or a numeric `sub`) is
/// refused with a 401 that says why, at every route; before, it became "no actor", which saw
/// every run, decided alice's approval, read her session and chatted as her. A token naming
/// another subject sees none of it either.
#[test]
fn a_token_that_names_nobody_is_refused_and_no_token_sees_another_actors_runs() {
    let issuer = FakeIssuer::start(Duration::ZERO);
    let mock = Mock::start(&json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "remember", "args": {"text": "milk"}}]},
        {"text": "kept"},
    ]}));
    let s = scripts(&mock);
    let tokens = json!([{"token": ALICE, "actor": "alice", "caps": ["store"]}]).to_string();
    let auth = ["--auth-issuer", &issuer.url, "--auth-audience", AUDIENCE];
    let mut args = vec!["--no-stdlib"];
    args.extend(auth);
    let serve = Serve::start(
        s.path(),
        &s.path().join("k.db"),
        &args,
        &[("KILN_TOKENS", &tokens)],
    );
    let start = json!({"agent": "notes", "input": "go", "session": "notes", "wait": false});
    let id = start_run_as(&serve.url, ALICE, &start);
    let approval = pending_approval(&serve, &id);

    let nobody = issuer.token(json!({"scope": "kiln:store"}));
    let numeric = issuer.token(json!({"sub": 42, "scope": "kiln:store"}));
    let mallory = issuer.token(json!({"sub": "mallory", "scope": "kiln:store"}));
    let run_url = format!("{}/v1/runs/{id}", serve.url);
    let decide_url = format!("{run_url}/approvals/{approval}");
    let approve = json!({"decision": "approve"});
    for (token, status, why) in [
        (&nobody, 401, "it names no subject"),
        (&numeric, 401, "its sub claim is not a non-empty string"),
        (&mallory, 404, "no run"),
    ] {
        let (got, body) = with_token("GET", &run_url, token, None);
        assert_eq!(
            (got, body.to_string().contains(why)),
            (status, true),
            "{body}"
        );
        let (got, body) = with_token("POST", &decide_url, token, Some(&approve));
        assert_eq!(got, status, "deciding alice's approval: {body}");
        let (got, body) = with_token("GET", &format!("{run_url}/events"), token, None);
        assert_eq!(got, status, "alice's events: {body}");
        let (got, body) = with_token("POST", &format!("{run_url}/cancel"), token, None);
        assert_eq!(got, status, "cancelling alice's run: {body}");
    }
    // Alice's run still waits for her; she approves it.
    let (status, body) = with_token("POST", &decide_url, ALICE, Some(&approve));
    assert_eq!(status, 200, "{body}");
    let (_, done) = with_token("GET", &format!("{run_url}?wait=true"), ALICE, None);
    assert_eq!(done["status"], "completed", "{done}");
    let (status, session) = with_token(
        "GET",
        &format!("{}/v1/sessions/notes", serve.url),
        ALICE,
        None,
    );
    assert_eq!(status, 200, "{session}");

    alices_session_stays_hers(&serve, [&nobody, &numeric], &mallory);
    // Only alice's run reached the model.
    assert_eq!(mock.requests().len(), 2);
}

/// Neither a token naming nobody nor another subject reads or deletes alice's session (the
/// path `alice%2Fnotes` was alice's key for the first), or chats as `"user": "alice"`.
fn alices_session_stays_hers(serve: &Serve, nobodies: [&str; 2], other: &str) {
    let hers = format!("{}/v1/sessions/alice%2Fnotes", serve.url);
    let [nobody, numeric] = nobodies;
    for (token, status) in [(nobody, 401), (numeric, 401), (other, 404)] {
        let (got, body) = with_token("GET", &hers, token, None);
        assert_eq!(got, status, "alice's session: {body}");
        let (got, body) = with_token("DELETE", &hers, token, None);
        assert_eq!(got, status, "deleting alice's session: {body}");
    }
    let chat = json!({"model": "notes", "user": "alice",
        "messages": [{"role": "user", "content": "what did I keep?"}]});
    let chat_url = format!("{}/v1/chat/completions", serve.url);
    for token in nobodies {
        let (got, body) = with_token("POST", &chat_url, token, Some(&chat));
        assert_eq!(got, 401, "chatting as alice: {body}");
    }
}

/// `kiln mcp --http --auth-issuer` refuses a token that names nobody too (before, its actor
/// was the name the client gave itself).
#[test]
fn kiln_mcp_refuses_a_token_that_names_nobody() {
    let issuer = FakeIssuer::start(Duration::ZERO);
    let s = Scripts::new(&[(
        "tools.rhai",
        r#"tool("remember").param("text", "string").requires(["store"])
    .handler(|args| `kept ${args.text}`);"#,
    )]);
    let server = crate::mcp::McpHttp::start(
        s.path(),
        &[
            "--scripts",
            ".",
            "--caps",
            "store",
            "--auth-issuer",
            &issuer.url,
            "--auth-audience",
            AUDIENCE,
        ],
        &[],
    );
    let list = |token: &str| {
        crate::mcp::mcp_stateless::request(
            &server.url,
            "alice",
            json!({}),
            token,
            "tools/list",
            json!({}),
        )
        .status
    };
    assert_eq!(list(&issuer.token(json!({"sub": "ann"}))), 200);
    assert_eq!(list(&issuer.token(json!({"scope": "kiln:store"}))), 401);
    assert_eq!(list(&issuer.token(json!({"sub": 7}))), 401);
}

/// Forged tokens naming key ids the issuer does not publish (no valid signature needed) do
/// not make kiln fetch the issuer's keys again and again, and a good token's request is not
/// held up behind them: it is answered while a key fetch (if any) is still held by the fake
/// issuer. Before, each forged token fetched metadata and keys under the lock every request
/// needs.
#[test]
fn forged_key_ids_neither_refetch_the_keys_nor_hold_up_a_good_token() {
    let issuer = FakeIssuer::start(Duration::from_millis(50));
    let s = Scripts::new(&[(
        "a.rhai",
        r#"tool("noop").param("x", "string").handler(|a| a.x);"#,
    )]);
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
        &[],
    );
    let url = format!("{}/v1/runs/run_unknown", serve.url);
    let good = issuer.token(json!({"sub": "ann"}));
    // A good token: the keys are fetched once; its run is unknown (404), so it was let in.
    assert_eq!(with_token("GET", &url, &good, None).0, 404);
    assert_eq!(issuer.jwks_fetches(), 1);

    let forged: Vec<_> = (0..40)
        .map(|i| {
            let token = issuer.token_with_kid(&format!("forged-{i}"), json!({"sub": "eve"}));
            let (url, token) = (url.clone(), token.clone());
            std::thread::spawn(move || with_token("GET", &url, &token, None))
        })
        .collect();
    // Until every forged request is answered, or one has kiln fetching the keys again (that
    // fetch is held by the fake issuer).
    let deadline = Instant::now() + Duration::from_secs(10);
    while !forged.iter().all(|f| f.is_finished()) && issuer.jwks_fetches() < 2 {
        assert!(Instant::now() < deadline, "the forged requests hang");
        std::thread::sleep(Duration::from_millis(10));
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn({
        let (url, good) = (url.clone(), good.clone());
        move || tx.send(with_token("GET", &url, &good, None).0)
    });
    let answered = rx.recv_timeout(Duration::from_secs(5));
    issuer.open();
    assert_eq!(
        answered,
        Ok(404),
        "the good token waited for the forged ones' key fetch"
    );
    for f in forged {
        let (status, body) = f.join().expect("forged request");
        assert_eq!(status, 401, "{body}");
        assert!(
            body.to_string()
                .contains("a key the authorization server does not publish"),
            "{body}"
        );
    }
    assert!(
        issuer.jwks_fetches() <= 2 && issuer.metadata_fetches() <= 2,
        "40 forged tokens fetched the keys {} times and the metadata {} times",
        issuer.jwks_fetches(),
        issuer.metadata_fetches()
    );
}
