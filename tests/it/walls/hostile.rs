//! A hostile provider on loopback: redirects, key echoes, huge and malformed lines, bare-CR
//! streams, HTML, wrong shapes, stalls and duplicate ids, each against the real `kiln ask`,
//! checking stderr, `--json` and the run log.

mod keys;
mod server;

use crate::common::*;
use serde_json::{Value, json};
use server::*;
use std::io::Write;
use std::path::Path;

const AGENTS: &str = r#"
tool("note").description("Notes a word").param("word", "string").handler(|args| `noted ${args.word}`);
for p in ["anthropic", "openai", "ollama"] {
    agent(`a_${p}`).provider(p).model("m").tools(["note"]);
    agent(`small_${p}`).provider(p).model("m").tools(["note"]).max_reply_bytes(100000).max_line_bytes(20000);
}
"#;

fn agents() -> Scripts {
    Scripts::new(&[("agents.rhai", AGENTS)])
}

/// `kiln ask AGENT hi` against `server` (`/v1` added for OpenAI), without retries.
fn ask_at(s: &Scripts, agent: &str, server: &str, extra: &[&str]) -> std::process::Output {
    let base = if agent.ends_with("openai") {
        format!("{server}/v1")
    } else {
        server.to_string()
    };
    let mut args = vec![agent, "hi", "--scripts", ".", "--base-url", &base];
    if !extra.contains(&"--retries") {
        args.extend(["--retries", "0"]);
    }
    args.extend_from_slice(extra);
    ask(&args, s.path())
}

/// `(status, error)` of every run in the log, oldest first.
fn runs(dir: &Path) -> Vec<(String, Option<String>)> {
    let db = rusqlite::Connection::open(dir.join(".kiln/kiln.db")).expect("open the run log");
    let mut q = db
        .prepare("SELECT status, error FROM runs ORDER BY rowid")
        .expect("query");
    q.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("rows")
        .map(|r| r.expect("row"))
        .collect()
}

/// Fails with `want` in stderr, in `--json`'s error and in the run log, each short.
fn assert_fails_with(s: &Scripts, out: &std::process::Output, want: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(err.contains(want), "wanted {want:?} in stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.len() < 2000,
        "stderr quotes too much: {} bytes",
        err.len()
    );
    if let Ok(v) = serde_json::from_str::<Value>(&stdout(out)) {
        let e = v["error"].to_string();
        assert!(e.contains(want), "wanted {want:?} in --json: {e}");
        assert!(e.len() < 2000, "--json quotes too much: {} bytes", e.len());
    }
    let (status, error) = runs(s.path()).pop().expect("the run was logged");
    assert_eq!(status, "error");
    let error = error.expect("runs.error");
    assert!(
        error.contains(want),
        "wanted {want:?} in runs.error: {error}"
    );
    assert!(error.len() < 2000, "runs.error quotes too much");
}

#[test]
fn redirects_to_another_origin_are_refused_and_the_key_stays_home() {
    let s = agents();
    let elsewhere = Hostile::start(|_, _, st| json_reply(st, &anthropic_text("stolen")));
    let other_port = elsewhere.port;
    for (agent, target) in [
        ("a_anthropic", "http://127.0.0.1:{other}/v1/messages"),
        ("a_openai", "http://127.0.0.1:{other}/v1/chat/completions"),
        ("a_anthropic", "https://127.0.0.1:{same}/v1/messages"),
        ("a_anthropic", "http://localhost:{same}/v1/messages"),
    ] {
        let target = target.to_string();
        let redirector = Hostile::start(move |_, _, st| {
            let port = st.local_addr().expect("addr").port();
            let to = target
                .replace("{other}", &other_port.to_string())
                .replace("{same}", &port.to_string());
            let head = format!(
                "HTTP/1.1 307 Temporary Redirect\r\nlocation: {to}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
            let _ = st.write_all(head.as_bytes());
        });
        for extra in [&["--no-stream"][..], &[]] {
            let out = ask_at(&s, agent, &redirector.url, extra);
            assert_fails_with(&s, &out, "refused to follow a redirect to another origin");
            assert!(
                stderr(&out).contains(&format!("stay on http://127.0.0.1:{}", redirector.port))
            );
        }
        assert_eq!(
            redirector.requests().len(),
            2,
            "no retry of a refused redirect"
        );
    }
    assert!(
        elsewhere.requests().is_empty(),
        "nothing (no key) reached the other origin: {:?}",
        elsewhere.requests()
    );

    // Within one origin a redirect is followed.
    let moved = Hostile::start(|req, _, st| {
        if req.path == "/v1/messages" {
            let head = "HTTP/1.1 307 X\r\nlocation: /v2/messages\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
            let _ = st.write_all(head.as_bytes());
        } else {
            json_reply(st, &anthropic_text("moved fine"));
        }
    });
    let out = ask_at(&s, "a_anthropic", &moved.url, &["--no-stream"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "moved fine");
    let paths: Vec<String> = moved.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/v1/messages", "/v2/messages"]);
}

#[test]
fn a_key_echoed_by_the_provider_is_redacted_everywhere() {
    let s = agents();
    // First a 500 that echoes the key (retried, so it is also logged), then a 401 that does.
    let echo = Hostile::start(|req, n, st| {
        let body = json!({"error": {"type": "authentication_error",
            "message": format!("Incorrect API key provided: {}", req.key())}});
        let status = if n % 2 == 0 { 500 } else { 401 };
        let head = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\nretry-after-ms: 1\r\nlocation: http://x/?k={}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            req.key(),
            body.to_string().len()
        );
        let _ = st.write_all(head.as_bytes());
        let _ = st.write_all(body.to_string().as_bytes());
    });
    for agent in ["a_anthropic", "a_openai"] {
        let out = ask_at(&s, agent, &echo.url, &["--json", "-v", "--retries", "1"]);
        assert_fails_with(&s, &out, "Incorrect API key provided: [redacted]");
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(!all.contains(TEST_KEY), "{agent}: the key leaked: {all}");
        assert!(
            stderr(&out).contains("retrying"),
            "the retry was logged: {}",
            stderr(&out)
        );
    }
    assert!(echo.requests().iter().all(|r| r.key() == TEST_KEY));

    // A reply that repeats the key in its text, split across stream chunks.
    let chatty = Hostile::start(|req, _, st| {
        let key = req.key();
        let (a, b) = key.split_at(7);
        open_stream(st, "text/event-stream");
        for part in [
            openai_delta("your key is "),
            openai_delta(a),
            openai_delta(b),
            openai_delta(", keep it safe"),
            OPENAI_END.to_string(),
        ] {
            let _ = st.write_all(part.as_bytes());
            let _ = st.flush();
        }
    });
    let out = ask_at(&s, "a_openai", &chatty.url, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "your key is [redacted], keep it safe\n");
    let out = ask_at(&s, "a_openai", &chatty.url, &["--json"]);
    assert!(!stdout(&out).contains(TEST_KEY));
    for entry in std::fs::read_dir(s.path().join(".kiln")).expect(".kiln") {
        let bytes = std::fs::read(entry.expect("entry").path()).expect("db file");
        assert!(
            !String::from_utf8_lossy(&bytes).contains(TEST_KEY),
            "no API key in the database files"
        );
    }
}

#[test]
fn an_empty_401_names_the_key_variable_to_check() {
    let s = agents();
    let refuse = Hostile::start(|_, _, st| reply(st, 401, "text/plain", b""));
    let out = ask_at(&s, "a_anthropic", &refuse.url, &[]);
    assert_fails_with(
        &s,
        &out,
        "anthropic: HTTP 401: (empty body) (check the API key in ANTHROPIC_API_KEY)",
    );
    let out = ask_at(&s, "a_openai", &refuse.url, &["--no-stream"]);
    assert_fails_with(
        &s,
        &out,
        "openai: HTTP 401: (empty body) (check the API key in OPENAI_API_KEY)",
    );
}

#[test]
fn huge_replies_and_lines_are_refused_and_bad_lines_quoted_briefly() {
    let s = agents();
    let big_text = "x".repeat(3 << 20);
    // A whole reply over --max-reply-bytes.
    let whole = Hostile::start(move |_, _, st| json_reply(st, &openai_text(&big_text)));
    let out = ask_at(
        &s,
        "a_openai",
        &whole.url,
        &["--no-stream", "--max-reply-bytes", "1M"],
    );
    assert_fails_with(&s, &out, "openai: the reply is larger than 1048576 bytes");
    // The agent's .max_reply_bytes(100000) applies without a flag.
    let out = ask_at(&s, "small_openai", &whole.url, &["--no-stream"]);
    assert_fails_with(&s, &out, "openai: the reply is larger than 100000 bytes");

    // One stream line over --max-line-bytes (and over the agent's .max_line_bytes).
    let long_line = Hostile::start(|_, _, st| {
        open_stream(st, "text/event-stream");
        let _ = st.write_all(openai_delta(&"y".repeat(1 << 20)).as_bytes());
        let _ = st.write_all(OPENAI_END.as_bytes());
    });
    let out = ask_at(&s, "a_openai", &long_line.url, &["--max-line-bytes", "64K"]);
    assert_fails_with(
        &s,
        &out,
        "openai: one stream line is larger than 65536 bytes",
    );
    assert!(stderr(&out).contains("it starts: data: {\"choices\""));
    let out = ask_at(&s, "small_openai", &long_line.url, &[]);
    assert_fails_with(&s, &out, "one stream line is larger than 20000 bytes");

    // Many small events adding up to more than the reply limit.
    let many = Hostile::start(|_, _, st| {
        open_stream(st, "text/event-stream");
        for _ in 0..20_000 {
            if st.write_all(openai_delta("zzzzzzzz").as_bytes()).is_err() {
                return;
            }
        }
        let _ = st.write_all(OPENAI_END.as_bytes());
    });
    let out = ask_at(&s, "small_openai", &many.url, &[]);
    assert_fails_with(&s, &out, "openai: the reply is larger than 100000 bytes");

    // An NDJSON line over the limit.
    let ndjson = Hostile::start(|_, _, st| {
        open_stream(st, "application/x-ndjson");
        let line = json!({"message": {"role": "assistant", "content": "w".repeat(1 << 20)}, "done": false});
        let _ = st.write_all(format!("{line}\n").as_bytes());
    });
    let out = ask_at(&s, "small_ollama", &ndjson.url, &[]);
    assert_fails_with(
        &s,
        &out,
        "ollama: one stream line is larger than 20000 bytes",
    );

    // A malformed line under the limits is quoted by its start only.
    let malformed = Hostile::start(|_, _, st| {
        open_stream(st, "text/event-stream");
        let _ =
            st.write_all(format!("data: {{\"choices\": [{}\n\n", "1,".repeat(1 << 20)).as_bytes());
    });
    let out = ask_at(&s, "a_openai", &malformed.url, &["--json"]);
    assert_fails_with(&s, &out, "openai: malformed reply: bad stream chunk");
    assert!(stderr(&out).contains("bytes in all)"), "{}", stderr(&out));
}

#[test]
fn a_healthy_stream_outlasts_the_request_timeout() {
    let s = agents();
    let slow = Hostile::start(|_, _, st| {
        open_stream(st, "text/event-stream");
        for i in 0..12 {
            std::thread::sleep(std::time::Duration::from_millis(100));
            let _ = st.write_all(openai_delta(&format!("{i} ")).as_bytes());
            let _ = st.flush();
        }
        let _ = st.write_all(OPENAI_END.as_bytes());
    });
    let out = ask_at(&s, "a_openai", &slow.url, &["--request-timeout", "0.5"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "0 1 2 3 4 5 6 7 8 9 10 11 \n");
}

#[test]
fn a_stalled_or_endless_stream_ends_at_its_timeouts() {
    let s = agents();
    let stall = Hostile::start(|_, _, st| {
        open_stream(st, "text/event-stream");
        let _ = st.write_all(openai_delta("one ").as_bytes());
        let _ = st.flush();
        until_closed(st);
    });
    let out = ask_at(&s, "a_openai", &stall.url, &["--idle-timeout", "0.5"]);
    assert_fails_with(
        &s,
        &out,
        "openai: request failed: the stream sent nothing for 0.5 s (--idle-timeout)",
    );

    let endless = Hostile::start(|_, _, st| {
        open_stream(st, "text/event-stream");
        while st.write_all(openai_delta("more ").as_bytes()).is_ok() && st.flush().is_ok() {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    });
    let out = ask_at(
        &s,
        "a_openai",
        &endless.url,
        &["--stream-timeout", "1", "--idle-timeout", "5"],
    );
    assert_fails_with(
        &s,
        &out,
        "openai: request failed: the stream took longer than 1.0 s (--stream-timeout)",
    );
}

#[test]
fn bare_cr_streams_decode_like_lf_ones() {
    let s = agents();
    for (agent, ending) in [
        ("a_anthropic", "\r"),
        ("a_openai", "\r"),
        ("a_anthropic", "\r\n"),
        ("a_openai", "\r\n"),
    ] {
        let cr = Hostile::start(move |req, _, st| {
            let body = if req.path.ends_with("/messages") {
                anthropic_stream("carriage returns")
            } else {
                [
                    openai_delta("carriage "),
                    openai_delta("returns"),
                    OPENAI_END.into(),
                ]
                .concat()
            };
            open_stream(st, "text/event-stream; charset=utf-8");
            // One byte at a time, so a CR and the LF after it arrive in different chunks.
            for b in body.replace('\n', ending).bytes() {
                let _ = st.write_all(&[b]);
                let _ = st.flush();
            }
        });
        let out = ask_at(&s, agent, &cr.url, &[]);
        assert!(out.status.success(), "{agent} {ending:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "carriage returns\n", "{agent} {ending:?}");
    }
}

#[test]
fn wrong_shape_replies_fail_alike_streamed_or_not() {
    let s = agents();
    let cases: [(&str, &str, &str); 7] = [
        (
            "a_openai",
            "{\"foo\":1}",
            "stream chunk without a `choices` array",
        ),
        ("a_openai", "{\"choices\":[]}", "no choices in the stream"),
        (
            "a_openai",
            "{\"choices\":[{\"index\":0,\"delta\":null,\"finish_reason\":\"stop\"}]}",
            "stream choice without a `delta` object",
        ),
        (
            "a_anthropic",
            "{\"foo\":1}",
            "stream event without a `type`",
        ),
        (
            "a_anthropic",
            "{\"type\":\"message_start\",\"message\":null}",
            "message_start event without a `message` object",
        ),
        (
            "a_anthropic",
            "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":null}",
            "content_block_delta event without a `delta` object",
        ),
        (
            "a_anthropic",
            "{\"type\":\"ping\"}",
            "the stream has no message_start",
        ),
    ];
    for (agent, event, want) in cases {
        let server = Hostile::start(move |_, _, st| {
            open_stream(st, "text/event-stream");
            let end = if agent == "a_openai" {
                "data: [DONE]\n\n"
            } else {
                "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
            };
            let _ = st.write_all(format!("data: {event}\n\n{end}").as_bytes());
        });
        let out = ask_at(&s, agent, &server.url, &["--json"]);
        assert_fails_with(&s, &out, want);
        assert!(stderr(&out).contains("malformed reply"), "{}", stderr(&out));
    }
    for (agent, body, want) in [
        ("a_openai", json!({"foo": 1}), "no choices in the reply"),
        (
            "a_openai",
            json!({"choices": []}),
            "no choices in the reply",
        ),
        (
            "a_openai",
            json!({"choices": [{"message": null, "finish_reason": "stop"}]}),
            "choice 0 has no `message` object",
        ),
        ("a_anthropic", json!({"foo": 1}), "no `content` array"),
        (
            "a_anthropic",
            json!({"type": "message", "content": null}),
            "no `content` array",
        ),
    ] {
        let server = Hostile::start(move |_, _, st| json_reply(st, &body));
        let out = ask_at(&s, agent, &server.url, &["--no-stream"]);
        assert_fails_with(&s, &out, want);
        assert!(stderr(&out).contains("malformed reply"), "{}", stderr(&out));
    }
}

#[test]
fn html_to_a_streamed_request_is_reported_with_its_type_and_start() {
    let s = agents();
    let page = Hostile::start(|_, _, st| {
        reply(
            st,
            200,
            "text/html; charset=utf-8",
            b"<!doctype html><html><body>Sign in to the corporate proxy</body></html>",
        )
    });
    for (agent, expected) in [
        ("a_anthropic", "text/event-stream"),
        ("a_openai", "text/event-stream"),
        ("a_ollama", "application/x-ndjson or application/json"),
    ] {
        let out = ask_at(&s, agent, &page.url, &[]);
        assert_fails_with(
            &s,
            &out,
            &format!(
                "expected a {expected} reply to a streamed request, got text/html; it starts: <!doctype html><html><body>Sign in"
            ),
        );
    }
    let out = ask_at(&s, "a_openai", &page.url, &["--no-stream"]);
    assert_fails_with(&s, &out, "content-type text/html): <!doctype html>");
}

/// `(assistant call ids, answered ids)` of the second request of a run.
fn ids_in_second_request(provider: &str, body: &Value) -> (Vec<String>, Vec<String>) {
    let msgs = body["messages"].as_array().expect("messages");
    let strings = |it: Vec<&Value>| -> Vec<String> {
        it.into_iter()
            .map(|v| v.as_str().expect("id").to_string())
            .collect()
    };
    if provider == "openai" {
        let calls = msgs
            .iter()
            .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
            .map(|c| &c["id"])
            .collect();
        let answers = msgs
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| &m["tool_call_id"])
            .collect();
        (strings(calls), strings(answers))
    } else {
        let blocks: Vec<&Value> = msgs
            .iter()
            .flat_map(|m| m["content"].as_array().into_iter().flatten())
            .collect();
        let of = |ty: &str, field: &str| {
            blocks
                .iter()
                .filter(|b| b["type"] == ty)
                .map(|b| &b[field])
                .collect()
        };
        (
            strings(of("tool_use", "id")),
            strings(of("tool_result", "tool_use_id")),
        )
    }
}

#[test]
fn duplicate_tool_call_ids_are_made_unique_and_answered_consistently() {
    let s = agents();
    for (agent, streamed) in [
        ("a_openai", false),
        ("a_openai", true),
        ("a_anthropic", false),
        ("a_anthropic", true),
    ] {
        let server = Hostile::start(move |req, n, st| {
            let openai = req.path.ends_with("/completions");
            if n > 0 {
                return match (openai, streamed) {
                    (true, false) => json_reply(st, &openai_text("done")),
                    (false, false) => json_reply(st, &anthropic_text("done")),
                    (true, true) => {
                        open_stream(st, "text/event-stream");
                        let _ = st
                            .write_all(format!("{}{OPENAI_END}", openai_delta("done")).as_bytes());
                    }
                    (false, true) => {
                        open_stream(st, "text/event-stream");
                        let _ = st.write_all(anthropic_stream("done").as_bytes());
                    }
                };
            }
            let words = ["a", "b", "c"];
            if openai && !streamed {
                let calls: Vec<Value> = words.iter().map(|w| json!({"id": "call_1", "type": "function", "function": {"name": "note", "arguments": json!({"word": w}).to_string()}})).collect();
                json_reply(
                    st,
                    &json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": calls}, "finish_reason": "tool_calls"}]}),
                );
            } else if openai {
                open_stream(st, "text/event-stream");
                for (i, w) in words.iter().enumerate() {
                    let chunk = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": "call_1", "type": "function", "function": {"name": "note", "arguments": json!({"word": w}).to_string()}}]}, "finish_reason": null}]});
                    let _ = st.write_all(format!("data: {chunk}\n\n").as_bytes());
                }
                let _ = st.write_all(b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
            } else if !streamed {
                let blocks: Vec<Value> = words.iter().map(|w| json!({"type": "tool_use", "id": "toolu_1", "name": "note", "input": {"word": w}})).collect();
                json_reply(
                    st,
                    &json!({"type": "message", "content": blocks, "stop_reason": "tool_use", "usage": {}}),
                );
            } else {
                open_stream(st, "text/event-stream");
                let mut events = vec![json!({"type": "message_start", "message": {"usage": {}}})];
                for (i, w) in words.iter().enumerate() {
                    events.push(json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "note", "input": {}}}));
                    events.push(json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": json!({"word": w}).to_string()}}));
                    events.push(json!({"type": "content_block_stop", "index": i}));
                }
                events.push(json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}}));
                events.push(json!({"type": "message_stop"}));
                for e in events {
                    let _ = st.write_all(format!("data: {e}\n\n").as_bytes());
                }
            }
        });
        let mut extra = vec!["--json"];
        if !streamed {
            extra.push("--no-stream");
        }
        let out = ask_at(&s, agent, &server.url, &extra);
        assert!(out.status.success(), "{agent} {streamed}: {}", stderr(&out));
        let provider = agent.trim_start_matches("a_");
        let reqs = server.requests();
        assert_eq!(reqs.len(), 2);
        let (calls, answers) = ids_in_second_request(provider, &reqs[1].body);
        let base = if provider == "openai" {
            "call_1"
        } else {
            "toolu_1"
        };
        let want: Vec<String> = vec![base.into(), format!("{base}_2"), format!("{base}_3")];
        assert_eq!(calls, want, "{agent} {streamed}: unique ids in the history");
        assert_eq!(
            answers, want,
            "{agent} {streamed}: each result answers its own call"
        );
        let v: Value = serde_json::from_str(&stdout(&out)).expect("--json");
        let recorded: Vec<&str> = v["tool_calls"]
            .as_array()
            .expect("tool calls")
            .iter()
            .filter_map(|c| c["id"].as_str())
            .collect();
        assert_eq!(
            recorded, want,
            "the transcript shows the ids that were answered"
        );
    }
}

#[test]
fn logs_written_to_a_pipe_carry_no_colour_codes() {
    let s = agents();
    // Nothing listens on port 1: the transport error is logged as a retry on stderr (a pipe).
    let out = ask_command(
        &[
            "a_openai",
            "hi",
            "--scripts",
            ".",
            "--base-url",
            "http://127.0.0.1:1/v1",
            "--retries",
            "1",
        ],
        s.path(),
    )
    .env_remove("NO_COLOR")
    .output()
    .expect("run kiln ask");
    let err = stderr(&out);
    assert!(err.contains("retrying"), "the retry is logged: {err}");
    assert!(
        !err.contains('\u{1b}'),
        "no colour codes on a pipe: {err:?}"
    );
}
