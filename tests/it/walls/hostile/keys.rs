//! A provider's error that echoes part of the key, or the key in base64 (as `Authorization:
//! Basic` carries it), reaches neither stderr, nor `--json`, nor the run log, nor the OTLP
//! spans.

use super::*;
use std::io::{BufRead, BufReader, Read};
use std::sync::{Arc, Mutex};

/// An OTLP/HTTP collector on 127.0.0.1 keeping every body it receives (protobuf: strings in it
/// are their UTF-8 bytes); its base address and what it got.
fn collector() -> (String, Arc<Mutex<Vec<u8>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let got = Arc::new(Mutex::new(Vec::new()));
    let kept = got.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut length = 0;
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                line.clear();
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_ok() {
                kept.lock().expect("lock").extend_from_slice(&body);
            }
            let ok = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
            let _ = reader.get_mut().write_all(ok.as_bytes());
        }
    });
    (url, got)
}

/// The forms of [`TEST_KEY`] a service may echo (computed outside kiln, with Python's base64).
const ECHOED: [(&str, &str); 4] = [
    // Its first 23 characters, as a service that cuts long values quotes it.
    ("a prefix", "sk-kiln-test-SECRET-012"),
    // base64 of the key (standard and URL-safe are the same for this key), unpadded.
    ("base64", "c2sta2lsbi10ZXN0LVNFQ1JFVC0wMTIzNDU2Nzg5"),
    // base64 of "user:KEY", as in `Authorization: Basic`.
    ("Basic", "dXNlcjpzay1raWxuLXRlc3QtU0VDUkVULTAxMjM0NTY3ODk="),
    // base64 of the key's first 20 characters.
    ("base64 of a prefix", "c2sta2lsbi10ZXN0LVNFQ1JFVC0="),
];

/// Pieces of the forms above that only the key makes: none may be seen anywhere.
const TELLS: [&str; 5] = [
    "kiln-test-SECRET",
    "sta2lsbi10ZXN0",
    "LVNFQ1JFVC0w",
    "raWxuLXRlc3QtU0VDUkVU",
    "MTIzNDU2Nzg5",
];

#[test]
fn a_keys_prefix_or_base64_echoed_by_the_provider_is_redacted_everywhere() {
    let s = agents();
    let echo = Hostile::start(|req, _, st| {
        assert_eq!(req.key(), TEST_KEY, "the key the fake echoes");
        let said: Vec<String> = ECHOED
            .iter()
            .map(|(what, v)| format!("{what} {v}"))
            .collect();
        let body = json!({"error": {"type": "authentication_error",
            "message": format!("Incorrect API key: {}", said.join("; "))}});
        reply(st, 401, "application/json", body.to_string().as_bytes());
    });
    let (otlp, spans) = collector();
    for agent in ["a_anthropic", "a_openai"] {
        let out = ask_at(&s, agent, &echo.url, &["--json", "-v", "--otlp", &otlp]);
        assert_fails_with(&s, &out, "Incorrect API key: a prefix [redacted]");
        let logs = kiln(&["logs", "--json"], s.path());
        assert!(logs.status.success(), "{}", stderr(&logs));
        let all = format!("{}{}{}", stdout(&out), stderr(&out), stdout(&logs));
        for tell in TELLS {
            assert!(!all.contains(tell), "{agent}: {tell} leaked: {all}");
        }
        // The model request's span carries the error (redacted) as its status.
        let exported = String::from_utf8_lossy(&spans.lock().expect("lock")).to_string();
        assert!(
            exported.contains("Incorrect API key: a prefix [redacted]"),
            "{agent}: the span with the error was exported: {exported:?}"
        );
        for tell in TELLS {
            assert!(!exported.contains(tell), "{agent}: {tell} in the spans");
        }
        for entry in std::fs::read_dir(s.path().join(".kiln")).expect(".kiln") {
            let bytes = std::fs::read(entry.expect("entry").path()).expect("db file");
            let text = String::from_utf8_lossy(&bytes);
            for tell in TELLS {
                assert!(
                    !text.contains(tell),
                    "{agent}: {tell} in the database files"
                );
            }
        }
    }
}
