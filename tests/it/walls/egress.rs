//! Egress (issue 10): what `net` reaches, end to end on loopback. No test here sends a packet
//! outside 127.0.0.0/8: names map to loopback through the resolver override, refusals happen
//! before any connection, and the listeners prove it (a connection would sit in their backlog).

use crate::common::*;
use kiln::egress::{Egress, Lookup, NameResolver};
use kiln::{CallOptions, Grants, Host, ToolOutcome};
use serde_json::{Value, json};
use std::net::{IpAddr, TcpListener};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TOOLS: &str = r#"
tool("fetch").param("u", "string").requires("net").handler(|a| {
    let r = http_get(a.u);
    #{ status: r.status, body: r.body }
});
tool("slow").param("u", "string").requires("net").timeout("400ms")
    .handler(|a| http_get(a.u, #{ timeout_ms: 600000 }).status);
tool("wait").param("u", "string").param("t", "string").requires("net").timeout("1m")
    .handler(|a| http_get(a.u, #{ timeout: a.t }).status);
tool("wait_n").param("u", "string").requires("net").timeout("1m")
    .handler(|a| http_get(a.u, #{ timeout: "300ms" }).status);
tool("wait_ms").param("u", "string").requires("net").timeout("1m")
    .handler(|a| http_get(a.u, #{ timeout_ms: 300 }).status);
tool("w").param("text", "string").requires("fs.write")
    .handler(|a| { write_file("out.txt", a.text); "ok" });
"#;

/// A listener nobody accepts on: any connection made to it stays in its backlog.
struct Untouched {
    listener: TcpListener,
    port: u16,
}

impl Untouched {
    fn bind(ip: &str) -> Untouched {
        let listener = TcpListener::bind((ip, 0)).expect("bind loopback");
        let port = listener.local_addr().expect("addr").port();
        Untouched { listener, port }
    }

    fn assert_untouched(&self) {
        self.listener.set_nonblocking(true).expect("nonblocking");
        match self.listener.accept() {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            other => panic!("a connection reached the listener: {other:?}"),
        }
    }
}

/// Answers each lookup with the next answer of a list (the last one repeats) and counts them.
struct Sequence {
    answers: Vec<IpAddr>,
    asked: AtomicUsize,
}

impl NameResolver for Sequence {
    fn lookup(&self, _name: &str) -> Lookup {
        let n = self.asked.fetch_add(1, Ordering::SeqCst);
        let ip = self.answers[n.min(self.answers.len() - 1)];
        Box::pin(async move { Ok(vec![ip]) })
    }
}

fn resolving(s: &Scripts, egress: Egress) -> Arc<Host> {
    Host::builder()
        .scripts(s.path())
        .workspace(s.path())
        .egress(egress)
        .build()
        .expect("host")
}

/// Names looked up by `resolver` alone.
fn only(resolver: Arc<dyn NameResolver>) -> Egress {
    Egress::default().resolver(resolver)
}

/// Test names (`NAME:ADDR`) mapped to loopback, everything else from the system (only
/// `localhost` is asked).
fn overrides(entries: &[&str]) -> Egress {
    entries.iter().fold(Egress::default(), |egress, e| {
        let (name, addr) = e.split_once(':').expect("NAME:ADDR");
        egress.resolve(name, addr.parse().expect("ip"))
    })
}

fn fetch(host: &Host, url: &str, caps: &[&str]) -> ToolOutcome {
    call(host, "fetch", json!({ "u": url }), caps)
}

fn refused(o: &ToolOutcome) -> String {
    let (kind, msg) = failure(o);
    assert_eq!(kind, "denied", "{msg}");
    msg
}

/// A server answering `/to/HOST:PORT` with a redirect there and anything else with `hello`.
fn redirecting_server() -> TestServer {
    TestServer::start(|path| match path.strip_prefix("/to/") {
        Some(to) => (
            302,
            vec![("location".into(), format!("http://{to}"))],
            vec![],
        ),
        None => (200, vec![], b"hello".to_vec()),
    })
}

#[test]
fn unscoped_net_refuses_loopback_in_every_form() {
    let s = Scripts::new(&[("t.rhai", TOOLS)]);
    let host = resolving(&s, overrides(&["loopback.test:127.0.0.1"]));
    let target = Untouched::bind("127.0.0.1");
    let p = target.port;
    let forms = [
        format!("http://127.0.0.1:{p}/"),
        format!("http://localhost:{p}/"),
        format!("http://[::1]:{p}/"),
        format!("http://2130706433:{p}/"),
        format!("http://0x7f000001:{p}/"),
        format!("http://127.1:{p}/"),
        format!("http://0177.0.0.1:{p}/"),
        format!("http://loopback.test:{p}/"),
    ];
    for url in &forms {
        let msg = refused(&fetch(&host, url, &["net"]));
        assert!(
            msg.contains(&format!("http_get(\"{url}\") refused")),
            "{msg}"
        );
        assert!(
            msg.contains("a loopback address outside the grant"),
            "{msg}"
        );
        assert!(msg.contains("or net:private"), "{msg}");
    }
    let msg = refused(&fetch(&host, &forms[0], &["net"]));
    assert!(
        msg.contains(&format!("127.0.0.1 is a loopback address outside the grant; it needs a grant of net:127.0.0.1:{p} or net:private")),
        "{msg}"
    );
    target.assert_untouched();
}

#[test]
fn a_grant_naming_the_server_allows_exactly_it_and_no_redirect_elsewhere() {
    let s = Scripts::new(&[("t.rhai", TOOLS)]);
    let host = s.host();
    let server = redirecting_server();
    let other = Untouched::bind("127.0.0.1");
    let grant = format!("net:{}", server.addr);
    let ok = fetch(&host, &format!("http://{}/", server.addr), &[&grant]);
    assert_eq!(
        ok.result.ok(),
        Some(json!({"status": 200, "body": "hello"}))
    );
    let msg = refused(&fetch(
        &host,
        &format!("http://127.0.0.1:{}/", other.port),
        &[&grant],
    ));
    assert!(msg.contains("was not granted \"net\""), "{msg}");
    let hop = format!("http://{}/to/127.0.0.1:{}/", server.addr, other.port);
    let msg = refused(&fetch(&host, &hop, &[&grant]));
    assert!(
        msg.contains(&format!(
            "http_get(\"{hop}\") refused: it redirected outside the net grant"
        )),
        "{msg}"
    );
    other.assert_untouched();
}

#[test]
fn a_name_that_rebinds_to_loopback_is_refused_at_connect_time() {
    let s = Scripts::new(&[("t.rhai", TOOLS)]);
    let listener = Untouched::bind("127.0.0.1");
    let url = format!("http://rebind.test:{}/", listener.port);
    // First with a loopback address the grant allows, so even code that looked the name up only
    // once would dial loopback: the lookups must be two, the second refused.
    let safe = Arc::new(Sequence {
        answers: vec![
            "127.0.0.2".parse().expect("ip"),
            "127.0.0.1".parse().expect("ip"),
        ],
        asked: AtomicUsize::new(0),
    });
    let host = resolving(&s, only(safe.clone()));
    let msg = refused(&fetch(&host, &url, &["net:127.0.0.2/32"]));
    assert_eq!(
        safe.asked.load(Ordering::SeqCst),
        2,
        "checked, then resolved again to connect"
    );
    assert!(msg.contains(&format!("http_get(\"{url}\") refused at connect time: rebind.test:{} resolved to 127.0.0.1, a loopback address", listener.port)), "{msg}");
    listener.assert_untouched();
    // Then the classic attack: public at check time, loopback at connect time.
    let attack = Arc::new(Sequence {
        answers: vec![
            "93.184.216.34".parse().expect("ip"),
            "127.0.0.1".parse().expect("ip"),
        ],
        asked: AtomicUsize::new(0),
    });
    let host = resolving(&s, only(attack.clone()));
    let msg = refused(&fetch(&host, &url, &["net"]));
    assert_eq!(attack.asked.load(Ordering::SeqCst), 2);
    assert!(msg.contains("refused at connect time"), "{msg}");
    assert!(msg.contains("127.0.0.1, a loopback address"), "{msg}");
    listener.assert_untouched();
}

#[test]
fn private_and_cidr_grants_allow_what_they_name_and_nothing_else() {
    let s = Scripts::new(&[("t.rhai", TOOLS)]);
    let host = resolving(
        &s,
        overrides(&[
            "db.test:127.0.0.1",
            "meta.test:169.254.169.254",
            "web.test:8.8.8.8",
        ]),
    );
    let server = redirecting_server();
    let port = server.addr.rsplit(':').next().expect("port");
    let by_ip = format!("http://{}/", server.addr);
    let by_name = format!("http://db.test:{port}/");
    for grant in ["net:private", "net:127.0.0.0/8", "net:127.0.0.1/32"] {
        for url in [&by_ip, &by_name] {
            let o = fetch(&host, url, &[grant]);
            assert!(o.is_ok(), "{grant} {url}: {}", o.to_json(true));
        }
    }
    let second = Untouched::bind("127.0.0.2");
    let msg = refused(&fetch(
        &host,
        &format!("http://127.0.0.2:{}/", second.port),
        &["net:127.0.0.1/32"],
    ));
    assert!(msg.contains("127.0.0.2 is a loopback address"), "{msg}");
    second.assert_untouched();
    // Refused before any connection is tried: metadata and public addresses are not private.
    let msg = refused(&fetch(&host, "http://meta.test/", &["net:private"]));
    assert!(
        msg.contains("169.254.169.254, a link-local address"),
        "{msg}"
    );
    assert!(msg.contains("need an explicit IP grant"), "{msg}");
    let msg = refused(&fetch(&host, "http://web.test/", &["net:private"]));
    assert!(msg.contains("8.8.8.8, a public address"), "{msg}");
}

#[test]
fn a_tools_own_scope_holds_on_every_redirect_hop() {
    let server = redirecting_server();
    let other = Untouched::bind("127.0.0.1");
    let script = format!(
        "tool(\"pinned\").param(\"u\", \"string\").requires(\"net:{}\").handler(|a| http_get(a.u).status);",
        server.addr
    );
    let s = Scripts::new(&[("t.rhai", &script)]);
    let host = s.host();
    let direct = call(
        &host,
        "pinned",
        json!({"u": format!("http://{}/", server.addr)}),
        &["net:127.0.0.0/8"],
    );
    assert_eq!(direct.result.ok(), Some(json!(200)));
    let hop = format!("http://{}/to/127.0.0.1:{}/", server.addr, other.port);
    let msg = refused(&call(
        &host,
        "pinned",
        json!({ "u": hop }),
        &["net:127.0.0.0/8"],
    ));
    assert!(msg.contains("it redirected outside the net grant"), "{msg}");
    assert!(msg.contains("does not declare capability \"net\""), "{msg}");
    other.assert_untouched();
    // The declaration holds at connect time too, when a name changes its answer.
    let s = Scripts::new(&[(
        "t.rhai",
        "tool(\"pinned\").param(\"u\", \"string\").requires(\"net:127.0.0.2/32\").handler(|a| http_get(a.u).status);",
    )]);
    let host = resolving(
        &s,
        only(Arc::new(Sequence {
            answers: vec![
                "127.0.0.2".parse().expect("ip"),
                "127.0.0.1".parse().expect("ip"),
            ],
            asked: AtomicUsize::new(0),
        })),
    );
    let url = format!("http://moving.test:{}/", other.port);
    let msg = refused(&call(
        &host,
        "pinned",
        json!({ "u": url }),
        &["net:127.0.0.0/8"],
    ));
    assert!(msg.contains("refused at connect time"), "{msg}");
    assert!(
        msg.contains("the tool declares only net:127.0.0.2/32"),
        "{msg}"
    );
    other.assert_untouched();
}

#[test]
fn a_fetchs_timeout_is_a_duration_or_milliseconds_and_timeout_ms_still_reads() {
    let s = Scripts::new(&[("t.rhai", TOOLS)]);
    let host = s.host();
    let silent = Untouched::bind("127.0.0.1");
    let url = format!("http://127.0.0.1:{}/", silent.port);
    for (tool, t) in [
        ("wait", json!("300ms")),
        ("wait_n", Value::Null),
        ("wait", json!("0.3s")),
        ("wait_ms", Value::Null),
    ] {
        let started = Instant::now();
        let args = match tool {
            "wait" => json!({ "u": url, "t": t }),
            _ => json!({ "u": url }),
        };
        let o = call(&host, tool, args, &["net:127.0.0.1"]);
        let (kind, msg) = failure(&o);
        assert_ne!(kind, "deadline", "{tool} {t}: {msg}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{tool} {t}: the fetch's own timeout was not kept (the default is 10 s)"
        );
    }
    let o = call(
        &host,
        "wait",
        json!({ "u": url, "t": "soon" }),
        &["net:127.0.0.1"],
    );
    let detail = (o.result.as_ref().err())
        .and_then(|f| f.detail.clone())
        .unwrap_or_default();
    assert!(detail.contains("http_get: timeout"), "{}", o.to_json(true));
}

#[test]
fn a_fetch_stops_at_the_tools_deadline_and_on_cancel() {
    let s = Scripts::new(&[("t.rhai", TOOLS)]);
    let host = s.host();
    let silent = Untouched::bind("127.0.0.1");
    let url = format!("http://127.0.0.1:{}/", silent.port);
    let started = Instant::now();
    let o = call(&host, "slow", json!({ "u": url }), &["net:127.0.0.1"]);
    assert_eq!(failure(&o).0, "deadline", "{}", o.to_json(true));
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "timeout_ms outlived the deadline"
    );

    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let cancel = kiln::CancellationToken::new();
    let opts = CallOptions {
        grants: Some(Grants::parse(&["net:127.0.0.1"]).expect("caps")),
        cancel: Some(cancel.clone()),
        ..CallOptions::default()
    };
    let args = json!({ "u": url });
    let caller = host.clone();
    let running = rt.spawn(async move { caller.call("fetch", args, opts).await });
    // Cancel once the request is on the wire: the server has it and will never answer.
    let (_held, _) = silent.listener.accept().expect("the fetch connects");
    cancel.cancel();
    let o = rt
        .block_on(running)
        .expect("call task")
        .expect("fetch exists");
    assert_eq!(failure(&o).0, "cancelled", "{}", o.to_json(true));
}

#[test]
fn concurrent_writes_to_one_path_do_not_clobber_each_other() {
    let s = Scripts::new(&[("t.rhai", TOOLS)]);
    let host = Arc::new(s.host());
    let start = Arc::new(std::sync::Barrier::new(2));
    let errors = Arc::new(Mutex::new(Vec::new()));
    let writers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|name| {
            let (host, start, errors) = (host.clone(), start.clone(), errors.clone());
            std::thread::spawn(move || {
                let text = name.repeat(100_000);
                start.wait();
                for _ in 0..100 {
                    let o = call(&host, "w", json!({ "text": text }), &["fs.write"]);
                    if let Err(f) = o.result {
                        errors.lock().expect("errors").push(f.message);
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("writer");
    }
    let errors = errors.lock().expect("errors");
    assert!(
        errors.is_empty(),
        "{} failed writes: {:?}",
        errors.len(),
        errors.first()
    );
    let text = std::fs::read_to_string(s.path().join("out.txt")).expect("written");
    assert!(
        text == "a".repeat(100_000) || text == "b".repeat(100_000),
        "a torn file"
    );
    let leftovers: Vec<_> = std::fs::read_dir(s.path())
        .expect("dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("kiln-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn the_binary_refuses_a_resolved_name_and_ignores_proxies_from_the_environment() {
    let s = Scripts::new(&[("t.rhai", TOOLS)]);
    let server = redirecting_server();
    let port = server.addr.rsplit(':').next().expect("port").to_string();
    let proxy = Untouched::bind("127.0.0.1");
    let run = |caps: &str| {
        std::process::Command::new(kiln_bin())
            .args([
                "call",
                "fetch",
                &json!({"u": format!("http://app.test:{port}/")}).to_string(),
            ])
            .args([
                "--caps",
                caps,
                "--resolve",
                "app.test:127.0.0.1",
                "--scripts",
                ".",
            ])
            .current_dir(s.path())
            .env("NO_COLOR", "1")
            .env("HTTP_PROXY", format!("http://127.0.0.1:{}", proxy.port))
            .env("http_proxy", format!("http://127.0.0.1:{}", proxy.port))
            .env_remove("NO_PROXY")
            .env_remove("no_proxy")
            .env_remove("KILN_NET_PROXY")
            .output()
            .expect("run kiln")
    };
    let out = run("net");
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("json");
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains(&format!(
            "app.test:{port} resolved to 127.0.0.1, a loopback address"
        )),
        "{v}"
    );
    let out = run("net:app.test");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let v: Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(v["result"]["body"], "hello", "{v}");
    proxy.assert_untouched();
}

#[test]
fn kiln_check_warns_about_a_net_private_grant() {
    let s = Scripts::new(&[(
        "a.rhai",
        "tool(\"t\").requires(\"net\").handler(|a| 1);\nagent(\"wide\").provider(\"script\").tools([\"t\"]).capabilities([\"net:private\"]).planner(|m, t| #{ text: \"hi\" });",
    )]);
    let out = kiln(&["check", "--scripts", "."], s.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("a.rhai:2:"), "{err}");
    assert!(err.contains("agent \"wide\" grants net:private"), "{err}");
    let out = kiln(
        &["call", "t", "--caps", "net:10.0.0.0/99", "--scripts", "."],
        s.path(),
    );
    assert!(
        stderr(&out).contains("`/99` is not a prefix length"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_store_follows_a_moved_workspace() {
    let root = tempfile::tempdir().expect("tempdir");
    let first = root.path().join("first");
    std::fs::create_dir_all(&first).expect("mkdir");
    std::fs::write(
        first.join("s.rhai"),
        "tool(\"put\").requires(\"store\").handler(|a| { store_set(\"ns\", \"k\", \"kept\"); 1 });\ntool(\"get\").requires(\"store\").handler(|a| store_get(\"ns\", \"k\"));",
    )
    .expect("script");
    let out = kiln(
        &["call", "put", "--caps", "store", "--scripts", "."],
        &first,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = std::fs::read_to_string(first.join(".kiln/workspace-id")).expect("id created");
    let moved = root.path().join("moved");
    std::fs::rename(&first, &moved).expect("move");
    let out = kiln(
        &["call", "get", "--caps", "store", "--scripts", "."],
        &moved,
    );
    let v: Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(v["result"], "kept", "{v}");
    assert_eq!(
        std::fs::read_to_string(moved.join(".kiln/workspace-id")).expect("id"),
        id,
        "created once"
    );
}

#[test]
fn approvals_ask_on_the_terminal_when_the_prompt_comes_on_stdin() {
    let s = Scripts::new(&[(
        "a.rhai",
        r#"tool("w").requires("fs.write").handler(|a| { write_file("approved.txt", "x"); "written" });
agent("writer").provider("script").tools(["w"]).capabilities(["fs.write"]).ask(["fs.write"])
    .planner(|m, t| if m[m.len() - 1].role == "user" { #{ tool_calls: [#{ name: "w", args: #{} }] } } else { #{ text: `done: ${m[m.len() - 1].content}` } });
"#,
    )]);
    let mut cmd = std::process::Command::new("sh");
    cmd.args([
        "-c",
        &format!(
            "printf 'write it' | '{}' ask writer - --scripts .",
            kiln_bin().display()
        ),
    ])
    .current_dir(s.path())
    .env("NO_COLOR", "1");
    let mut p = rexpect::session::spawn_command(cmd, Some(20_000)).expect("spawn");
    p.exp_string("tool \"w\" may use fs.write only when a person approves")
        .expect("the question reaches the terminal");
    p.exp_string("allow? [y]es / [n]o / [a]lways for this run:")
        .expect("prompt");
    p.send_line("y").expect("answer");
    p.exp_string("done: ").expect("the run goes on");
    p.exp_eof().expect("exits");
    assert!(s.path().join("approved.txt").exists());
}

#[test]
fn a_host_no_grant_names_is_not_even_looked_up() {
    let s = Scripts::new(&[("t.rhai", TOOLS)]);
    let resolver = Arc::new(Sequence {
        answers: vec!["127.0.0.1".parse().expect("ip")],
        asked: AtomicUsize::new(0),
    });
    let host = resolving(&s, only(resolver.clone()));
    let msg = refused(&fetch(
        &host,
        "http://secret-data.other.test/",
        &["net:allowed.test"],
    ));
    assert!(msg.contains("was not granted \"net\""), "{msg}");
    assert_eq!(
        resolver.asked.load(Ordering::SeqCst),
        0,
        "a lookup would leak the name"
    );
}

#[test]
fn headers_the_script_set_do_not_follow_a_redirect_to_another_origin() {
    use std::io::{Read, Write};
    let s = Scripts::new(&[(
        "t.rhai",
        "tool(\"keyed\").param(\"u\", \"string\").requires(\"net\").handler(|a| http_get(a.u, #{ headers: #{ \"x-api-key\": \"k-SECRET\" } }).body);",
    )]);
    let host = s.host();
    let echo = TcpListener::bind("127.0.0.1:0").expect("bind");
    let echo_port = echo.local_addr().expect("addr").port();
    let echoing = std::thread::spawn(move || {
        let (mut conn, _) = echo.accept().expect("the redirect arrives");
        let mut buf = [0u8; 8192];
        let n = conn.read(&mut buf).expect("request");
        let body = buf[..n].to_vec();
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        conn.write_all(head.as_bytes()).expect("head");
        conn.write_all(&body).expect("body");
    });
    let server = redirecting_server();
    let url = format!("http://{}/to/127.0.0.1:{echo_port}/", server.addr);
    let o = call(&host, "keyed", json!({ "u": url }), &["net:127.0.0.0/8"]);
    echoing.join().expect("echo server");
    let seen = o.result.expect("the redirect is followed");
    let seen = seen.as_str().unwrap_or_default().to_ascii_lowercase();
    assert!(seen.starts_with("get / http/1.1"), "{seen}");
    assert!(!seen.contains("k-secret"), "{seen}");
}

#[test]
fn a_library_host_checks_every_address_it_fixes_for_a_name() {
    let s = Scripts::new(&[("t.rhai", TOOLS)]);
    let listener = Untouched::bind("127.0.0.1");
    // Two answers for one name, as `--resolve` collects them: both are checked.
    let egress = Egress::default()
        .resolve("Two.test", "127.0.0.2".parse().expect("ip"))
        .resolve("two.test", "127.0.0.1".parse().expect("ip"));
    let host = resolving(&s, egress);
    let url = format!("http://two.test:{}/", listener.port);
    let msg = refused(&fetch(&host, &url, &["net:127.0.0.1/32"]));
    assert!(
        msg.contains("resolved to 127.0.0.2, a loopback address outside the grant"),
        "{msg}"
    );
    listener.assert_untouched();
}
