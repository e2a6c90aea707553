//! The console's pages on the real `kiln serve`: each carries its Content-Security-Policy and
//! sets no cookie, a form on another site changes nothing, an open server (no tokens,
//! loopback) needs no sign-in but refuses a Host that does not name it, and `--no-console`
//! serves no page.

use crate::common::*;
use crate::console::api::{ALICE, tool_scripts, tool_server};
use crate::doors::serve::Serve;
use serde_json::json;

#[test]
fn the_pages_carry_their_policy_and_a_cross_site_form_changes_nothing() {
    let (s, serve) = tool_server();
    for (path, media) in [
        ("/ui", "text/html"),
        ("/ui/", "text/html"),
        ("/ui/app.js", "text/javascript"),
        ("/ui/console.css", "text/css"),
    ] {
        let (status, headers, _) = http("GET", &format!("{}{path}", serve.url), &[], None);
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
                .unwrap_or("")
        };
        assert_eq!(status, 200, "{path}");
        assert!(
            header("content-type").starts_with(media),
            "{path}: {headers:?}"
        );
        let csp = header("content-security-policy");
        for part in [
            "default-src 'none'",
            "script-src 'self'",
            "frame-ancestors 'none'",
            "connect-src 'self'",
        ] {
            assert!(csp.contains(part), "{path}: {csp}");
        }
        assert!(
            !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
            "{csp}"
        );
        assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
        assert!(
            headers.iter().all(|(k, _)| k != "set-cookie"),
            "{path} sets a cookie"
        );
    }
    let (status, _, _) = http(
        "GET",
        &format!("{}/ui/..%2FCargo.toml", serve.url),
        &[],
        None,
    );
    assert_eq!(status, 404);

    // A form on another site posts to the API: no token rides along (there is no cookie),
    // and its Origin is refused before the body is read.
    let form = "agent=notes&input=go";
    let runs = format!("{}/v1/runs", serve.url);
    let form_type = ("content-type", "application/x-www-form-urlencoded");
    let (status, _, body) = http_raw(
        "POST",
        &runs,
        &[form_type, ("origin", "http://evil.test")],
        form,
    );
    assert_eq!(status, 403, "{body}");
    let (status, _, body) = http_raw("POST", &runs, &[form_type], form);
    assert_eq!(status, 401, "{body}");
    let plain = ("content-type", "text/plain");
    let (status, _, body) = http_raw(
        "POST",
        &format!("{}/v1/tools/order", serve.url),
        &[plain, ("origin", "http://evil.test")],
        r#"{"arguments": {"items": [{"qty": 1}]}}"#,
    );
    assert_eq!(status, 403, "{body}");
    let (_, runs) = with_token("GET", &format!("{}/v1/runs", serve.url), ALICE, None);
    assert_eq!(runs, json!({"runs": []}), "nothing ran");

    let quiet = Serve::start(
        s.path(),
        &s.path().join("q.db"),
        &["--no-stdlib", "--no-console"],
        &[],
    );
    let (status, _, _) = http("GET", &format!("{}/ui", quiet.url), &[], None);
    assert_eq!(status, 404, "--no-console serves no page");
}

#[test]
fn an_open_server_needs_no_sign_in_and_answers_only_to_its_own_name() {
    let s = tool_scripts();
    let serve = Serve::start(s.path(), &s.path().join("k.db"), &["--no-stdlib"], &[]);
    let (status, me) = get(&format!("{}/v1/me", serve.url));
    assert_eq!(status, 200, "{me}");
    assert_eq!(
        (&me["open"], &me["actor"]),
        (&json!(true), &json!(null)),
        "{me}"
    );
    let (status, runs) = get(&format!("{}/v1/runs", serve.url));
    assert_eq!((status, runs), (200, json!({"runs": []})));
    // A page of another name (DNS rebinding) gets neither the pages nor the API.
    for path in ["/ui", "/v1/me", "/v1/approvals"] {
        let reply = as_host(&serve.url, path, "evil.test:80");
        assert!(reply.starts_with("HTTP/1.1 403"), "{path}: {reply}");
    }
    let (status, _, _) = http("GET", &format!("{}/ui", serve.url), &[], None);
    assert_eq!(status, 200);
}

/// A GET of `path` whose `Host` header is `host` (not the address connected to); the reply.
fn as_host(url: &str, path: &str, host: &str) -> String {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    reply
}

#[test]
fn a_trace_url_without_a_place_for_the_trace_id_is_refused_by_name() {
    for bad in [
        "javascript:alert(1)//{trace_id}",
        "http://127.0.0.1:6006/traces",
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = kiln(
            &["serve", "--bind", "127.0.0.1:0", "--trace-url", bad],
            dir.path(),
        );
        assert!(!out.status.success(), "{bad} was taken");
        let err = stderr(&out);
        assert!(
            err.contains("--trace-url") && err.contains("{trace_id}"),
            "{err}"
        );
    }
}
