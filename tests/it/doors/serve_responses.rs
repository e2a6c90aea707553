//! `kiln serve`'s Responses door (`/v1/responses`): the real binary on 127.0.0.1, its agent
//! talking to `kiln mock`, driven by raw HTTP: kiln's own tools as `mcp_call` items, the
//! client's function tools handed back and resumed, `previous_response_id` per actor, the
//! stream's events, a stream whose client goes away, `store: false`, and refusals by path.

use crate::common::*;
use crate::doors::serve::Serve;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef";

fn tokens() -> String {
    json!([
        {"token": ALICE, "actor": "alice", "caps": []},
        {"token": BOB, "actor": "bob", "caps": []},
    ])
    .to_string()
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn post_as(serve: &Serve, path: &str, token: &str, body: &Value) -> (u16, Value) {
    let auth = bearer(token);
    post(
        &format!("{}{path}", serve.url),
        body,
        &[("authorization", &auth)],
    )
}

fn get_as(serve: &Serve, path: &str, token: &str) -> (u16, Value) {
    let auth = bearer(token);
    let (status, _, text) = http(
        "GET",
        &format!("{}{path}", serve.url),
        &[("authorization", &auth)],
        None,
    );
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Agent `shop` with its own `lookup` tool, on `mock`.
fn shop(mock: &Mock) -> Scripts {
    crate::doors::serve::shop_scripts(mock)
}

fn get_weather() -> Value {
    json!({"type": "function", "name": "get_weather", "description": "Weather of a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}})
}

#[test]
fn kiln_tools_show_as_mcp_calls_and_the_response_is_kept_for_its_actor_only() {
    let mock = Mock::start(&crate::doors::serve::shop_scenario());
    let scripts = shop(&mock);
    let db = scripts.path().join("kiln.db");
    let serve = Serve::start(scripts.path(), &db, &[], &[("KILN_TOKENS", &tokens())]);
    let (status, r) = post_as(
        &serve,
        "/v1/responses",
        ALICE,
        &json!({"model": "shop", "input": "What does SKU-1 cost?", "metadata": {"ticket": "T-9"}}),
    );
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["object"], "response");
    assert_eq!(r["status"], "completed");
    assert_eq!(r["model"], "shop");
    assert_eq!(r["metadata"]["ticket"], "T-9");
    let output = r["output"].as_array().expect("output");
    assert_eq!(output.len(), 2, "{r:#}");
    assert_eq!(output[0]["type"], "mcp_call");
    assert_eq!(output[0]["server_label"], "kiln");
    assert_eq!(output[0]["name"], "lookup");
    let result: Value =
        serde_json::from_str(output[0]["output"].as_str().expect("output")).unwrap();
    assert_eq!(result["price"], 4.5);
    assert_eq!(output[1]["type"], "message");
    assert_eq!(output[1]["content"][0]["text"], "SKU-1 costs 4.50.");
    assert_eq!(r["usage"]["input_tokens"], 50);
    assert_eq!(r["usage"]["output_tokens"], 11);
    assert_eq!(r["usage"]["total_tokens"], 61);
    let id = r["id"].as_str().expect("id");
    // Kept: the same object for its actor, nothing for another.
    let (status, again) = get_as(&serve, &format!("/v1/responses/{id}"), ALICE);
    assert_eq!(status, 200);
    assert_eq!(again["output"], r["output"]);
    let (status, _) = get_as(&serve, &format!("/v1/responses/{id}"), BOB);
    assert_eq!(status, 404);
    let (status, items) = get_as(&serve, &format!("/v1/responses/{id}/input_items"), ALICE);
    assert_eq!(status, 200, "{items}");
    assert_eq!(items["object"], "list");
    assert_eq!(
        items["data"][0]["content"][0]["text"],
        "What does SKU-1 cost?"
    );
    let (status, _) = get_as(&serve, &format!("/v1/responses/{id}/input_items"), BOB);
    assert_eq!(status, 404);
    // Another actor cannot continue it either.
    let (status, e) = post_as(
        &serve,
        "/v1/responses",
        BOB,
        &json!({"model": "shop", "input": "and?", "previous_response_id": id}),
    );
    assert_eq!(status, 404, "{e}");
    assert_eq!(e["error"]["code"], "previous_response_not_found");
    // The run is in the run log with the token's actor, as every door's.
    let logs = kiln(
        &["logs", "--json", "--db", &db.display().to_string()],
        scripts.path(),
    );
    let runs: Value = serde_json::from_str(&stdout(&logs)).expect("logs json");
    assert_eq!(runs[0]["actor"], "alice", "{runs:#}");
    assert_eq!(runs[0]["tool_calls"][0]["name"], "lookup");
    assert_eq!(r["kiln"]["run_id"], runs[0]["id"]);
}

/// A run that mixes kiln's tool and the client's: lookup runs in kiln, get_weather comes back
/// to the client, its output continues the run, which answers.
fn mixed_scenario() -> Value {
    json!({"by_round": true, "turns": [
        {"tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}]},
        {"tool_calls": [{"name": "get_weather", "args": {"city": "Oslo"}}]},
        {"text": "SKU-1 costs 4.50 and Oslo is sunny."}
    ]})
}

#[test]
fn a_client_function_tool_comes_back_and_its_output_continues_the_run() {
    let mock = Mock::start(&mixed_scenario());
    let scripts = shop(&mock);
    let db = scripts.path().join("kiln.db");
    let serve = Serve::start(scripts.path(), &db, &[], &[("KILN_TOKENS", &tokens())]);
    let (status, first) = post_as(
        &serve,
        "/v1/responses",
        ALICE,
        &json!({"model": "shop", "input": "Price of SKU-1 and weather in Oslo?", "tools": [get_weather()],
                "tool_choice": "required", "parallel_tool_calls": false}),
    );
    assert_eq!(status, 200, "{first}");
    let output = first["output"].as_array().expect("output");
    assert_eq!(output[0]["type"], "mcp_call", "{first:#}");
    let call = &output[1];
    assert_eq!(call["type"], "function_call");
    assert_eq!(call["name"], "get_weather");
    assert_eq!(
        serde_json::from_str::<Value>(call["arguments"].as_str().unwrap()).unwrap(),
        json!({"city": "Oslo"})
    );
    assert_eq!(first["tools"][0]["name"], "get_weather");
    // The model was offered both tools.
    let requests = mock.requests();
    let offered: Vec<&str> = requests[0]["body"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(offered, ["lookup", "get_weather"]);
    // The forced choice reached the first model request only; one call at a time on every one.
    assert_eq!(requests[0]["body"]["tool_choice"], "required");
    assert!(
        requests[1]["body"].get("tool_choice").is_none(),
        "{:#}",
        requests[1]["body"]
    );
    assert_eq!(requests[0]["body"]["parallel_tool_calls"], false);
    assert_eq!(requests[1]["body"]["parallel_tool_calls"], false);
    // Another actor cannot answer it.
    let answer = json!({"model": "shop", "previous_response_id": first["id"], "tools": [get_weather()],
        "input": [{"type": "function_call_output", "call_id": call["call_id"], "output": "sunny, 21C"}]});
    let (status, _) = post_as(&serve, "/v1/responses", BOB, &answer);
    assert_eq!(status, 404);
    let (status, second) = post_as(&serve, "/v1/responses", ALICE, &answer);
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["status"], "completed");
    assert_eq!(second["previous_response_id"], first["id"]);
    let texts: Vec<&str> = second["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "message")
        .filter_map(|i| i["content"][0]["text"].as_str())
        .collect();
    assert_eq!(texts, ["SKU-1 costs 4.50 and Oslo is sunny."]);
    // The model saw the whole conversation: kiln's result and the client's.
    let last = &mock.requests()[2]["body"]["messages"];
    let tool_texts: Vec<String> = last
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect();
    assert_eq!(tool_texts.len(), 2, "{last:#}");
    assert!(tool_texts[0].contains("4.5"), "{tool_texts:?}");
    assert!(tool_texts[1].contains("sunny, 21C"), "{tool_texts:?}");
    // An output for a call nobody made is refused by path.
    let bogus = json!({"model": "shop", "previous_response_id": second["id"],
        "input": [{"type": "function_call_output", "call_id": "nope", "output": "x"}]});
    let (status, e) = post_as(&serve, "/v1/responses", ALICE, &bogus);
    assert_eq!(status, 400, "{e}");
    assert_eq!(e["error"]["param"], "input[0].call_id");
}

#[test]
fn a_client_that_keeps_the_conversation_sends_it_whole() {
    let mock = Mock::start(&json!({"turns": [
        {"tool_calls": [{"name": "get_weather", "args": {"city": "Rome"}}]},
        {"text": "Rome is warm."}
    ]}));
    let scripts = shop(&mock);
    let db = scripts.path().join("kiln.db");
    let serve = Serve::start(scripts.path(), &db, &[], &[]);
    let url = format!("{}/v1/responses", serve.url);
    let (status, first) = post(
        &url,
        &json!({"model": "shop", "input": "Weather in Rome?", "tools": [get_weather()], "store": false}),
        &[],
    );
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["store"], false);
    let call = first["output"][0].clone();
    assert_eq!(call["type"], "function_call", "{first:#}");
    // Not kept.
    let (status, _) = get(&format!("{url}/{}", first["id"].as_str().unwrap()));
    assert_eq!(status, 404);
    let input = json!([
        {"role": "user", "content": "Weather in Rome?"},
        call,
        {"type": "function_call_output", "call_id": call["call_id"], "output": "31C"}
    ]);
    let (status, second) = post(
        &url,
        &json!({"model": "shop", "input": input, "tools": [get_weather()]}),
        &[],
    );
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["output"][0]["content"][0]["text"], "Rome is warm.");
    let messages = &mock.requests()[1]["body"]["messages"];
    assert!(messages.to_string().contains("31C"), "{messages:#}");
}

#[test]
fn bad_requests_are_refused_by_path() {
    let mock = Mock::start(&json!({"turns": []}));
    let scripts = shop(&mock);
    let serve = Serve::start(scripts.path(), &scripts.path().join("k.db"), &[], &[]);
    let url = format!("{}/v1/responses", serve.url);
    let cases = [
        (json!({"model": "nobody", "input": "hi"}), 404, Value::Null),
        (json!({"model": "shop"}), 400, json!("input")),
        (
            json!({"model": "shop", "input": [{"type": "message", "role": "user", "content": [{"type": "input_audio"}]}]}),
            400,
            json!("input[0].content[0].type"),
        ),
        (
            json!({"model": "shop", "input": "x", "tools": [{"type": "function", "name": "lookup"}]}),
            400,
            json!("tools[0].name"),
        ),
        (
            json!({"model": "shop", "input": "x", "tool_choice": "sometimes"}),
            400,
            json!("tool_choice"),
        ),
        (
            json!({"model": "shop", "input": "x", "previous_response_id": "resp_nope"}),
            404,
            json!("previous_response_id"),
        ),
    ];
    for (body, want, param) in cases {
        let (status, e) = post(&url, &body, &[]);
        assert_eq!(status, want, "{body} -> {e}");
        if !param.is_null() {
            assert_eq!(e["error"]["param"], param, "{body} -> {e}");
        }
    }
    assert!(
        mock.requests().is_empty(),
        "no refused request reached the model"
    );
}

/// A streamed response's events, read as they come.
struct EventReader {
    lines: std::io::Lines<BufReader<std::net::TcpStream>>,
    name: String,
}

impl EventReader {
    fn open(url: &str, body: &Value) -> EventReader {
        let rest = url.strip_prefix("http://").expect("http url");
        let (host, path) = rest.split_once('/').expect("path");
        let mut s = std::net::TcpStream::connect(host).expect("connect");
        let text = body.to_string();
        write!(
            s,
            "POST /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
            text.len()
        )
        .expect("send");
        EventReader {
            lines: BufReader::new(s).lines(),
            name: String::new(),
        }
    }

    /// The next event, or `None` at the end of the stream.
    fn next(&mut self) -> Option<(String, Value)> {
        for line in self.lines.by_ref() {
            let Ok(line) = line else { break };
            if let Some(n) = line.strip_prefix("event: ") {
                self.name = n.to_string();
            } else if let Some(d) = line.strip_prefix("data: ") {
                let data: Value = serde_json::from_str(d).expect("event data is JSON");
                return Some((self.name.clone(), data));
            }
        }
        None
    }
}

/// The events of a streamed response, up to `stop_after` (then the connection is dropped).
fn stream_events(url: &str, body: &Value, stop_after: Option<&str>) -> Vec<(String, Value)> {
    let mut reader = EventReader::open(url, body);
    let mut events = Vec::new();
    while let Some((name, data)) = reader.next() {
        let stop = stop_after == Some(name.as_str());
        events.push((name, data));
        if stop {
            break;
        }
    }
    events
}

/// A call under an `ask` grant waits for a person: the stream shows the approval request as
/// an `mcp_approval_request` item, the person decides through the runs API (the run id is in
/// the response's `kiln.run_id`), and the run goes on.
#[test]
fn a_response_waits_for_a_person_and_shows_what_it_waits_for() {
    let mock = Mock::start(&json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "vault_read", "args": {"key": "k"}}]}, {"text": "read it"},
    ]}));
    let s = Scripts::new(&[("vault.rhai", &crate::approvals::tool_asks::asker(&mock.url))]);
    let serve = Serve::start(s.path(), &s.path().join("k.db"), &["--no-stdlib"], &[]);
    let url = format!("{}/v1/responses", serve.url);
    let mut events = EventReader::open(
        &url,
        &json!({"model": "asker", "input": "read the secret", "stream": true}),
    );
    let (_, created) = events.next().expect("response.created");
    let run_id = created["response"]["kiln"]["run_id"]
        .as_str()
        .expect("run id")
        .to_string();
    let asked = loop {
        let (name, data) = events
            .next()
            .expect("the stream goes on until the approval");
        if name == "response.output_item.added" && data["item"]["type"] == "mcp_approval_request" {
            break data["item"].clone();
        }
    };
    assert_eq!(asked["name"], "vault");
    assert_eq!(asked["server_label"], "kiln");
    let decide = format!(
        "{}/v1/runs/{run_id}/approvals/{}",
        serve.url,
        asked["id"].as_str().unwrap()
    );
    let (status, decided) = post(&decide, &json!({"decision": "approve"}), &[]);
    assert_eq!(status, 200, "{decided}");
    let mut last = None;
    while let Some(ev) = events.next() {
        last = Some(ev);
    }
    let (name, done) = last.expect("the stream ends");
    assert_eq!(name, "response.completed", "{done:#}");
    let output = done["response"]["output"].as_array().expect("output");
    let call = output
        .iter()
        .find(|i| i["type"] == "mcp_call")
        .expect("the call");
    assert!(
        call["output"]
            .as_str()
            .unwrap_or_default()
            .contains("VAULT-SECRET"),
        "{call:#}"
    );
    assert_eq!(output.last().unwrap()["content"][0]["text"], "read it");
}

#[test]
fn a_streamed_response_sends_the_spec_events_in_order() {
    let mock = Mock::start(&crate::doors::serve::shop_scenario());
    let scripts = shop(&mock);
    let serve = Serve::start(scripts.path(), &scripts.path().join("k.db"), &[], &[]);
    let url = format!("{}/v1/responses", serve.url);
    let events = stream_events(
        &url,
        &json!({"model": "shop", "input": "SKU-1?", "stream": true}),
        None,
    );
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names[..2], ["response.created", "response.in_progress"]);
    assert_eq!(names.last(), Some(&"response.completed"), "{names:?}");
    for (i, (name, data)) in events.iter().enumerate() {
        assert_eq!(data["type"], *name);
        assert_eq!(data["sequence_number"], i, "{name}");
    }
    // kiln's call as an item, added then done.
    let mcp: Vec<&Value> = events
        .iter()
        .filter(|(n, d)| n.starts_with("response.output_item") && d["item"]["type"] == "mcp_call")
        .map(|(_, d)| d)
        .collect();
    assert_eq!(mcp.len(), 2);
    assert_eq!(mcp[0]["item"]["status"], "in_progress");
    assert_eq!(mcp[1]["item"]["status"], "completed");
    let text: String = events
        .iter()
        .filter(|(n, _)| n == "response.output_text.delta")
        .filter_map(|(_, d)| d["delta"].as_str())
        .collect();
    assert_eq!(text, "SKU-1 costs 4.50.");
    for want in [
        "response.content_part.added",
        "response.output_text.done",
        "response.content_part.done",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    let done = &events.last().unwrap().1["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["output"][1]["content"][0]["text"], "SKU-1 costs 4.50.");
    assert_eq!(done["usage"]["total_tokens"], 61);
    // What was streamed is what is kept.
    let (status, kept) = get(&format!("{url}/{}", done["id"].as_str().unwrap()));
    assert_eq!(status, 200);
    assert_eq!(kept["output"], done["output"]);
}

#[test]
fn a_client_that_goes_away_mid_stream_cancels_the_run() {
    let mock = Mock::start(&json!({"chunk_delay_ms": 300, "turns": [
        {"text": "one two three four five six seven eight nine ten eleven twelve"}
    ]}));
    let scripts = shop(&mock);
    let serve = Serve::start(scripts.path(), &scripts.path().join("k.db"), &[], &[]);
    let url = format!("{}/v1/responses", serve.url);
    let events = stream_events(
        &url,
        &json!({"model": "shop", "input": "count", "stream": true}),
        Some("response.output_text.delta"),
    );
    let id = events[0].1["response"]["id"]
        .as_str()
        .expect("id")
        .to_string();
    // The connection is closed: the run is cancelled, and the kept response says so.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (_, r) = get(&format!("{url}/{id}"));
        if r["status"] == "cancelled" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "still {r:#}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The walls of `/v1/runs` hold here: caps beyond the token's ceiling are refused by name,
/// and a full server answers `429` with `Retry-After` instead of queueing without end.
#[test]
fn the_tokens_ceiling_and_the_run_limits_hold() {
    let mock =
        Mock::start(&json!({"loop": true, "turns": [{"text": "slow answer", "delay_ms": 1500}]}));
    let scripts = shop(&mock);
    let serve = Serve::start(
        scripts.path(),
        &scripts.path().join("k.db"),
        &["--max-runs", "1", "--queue", "0", "--retry-after", "3"],
        &[("KILN_TOKENS", &tokens())],
    );
    let (status, e) = post_as(
        &serve,
        "/v1/responses",
        ALICE,
        &json!({"model": "shop", "input": "hi", "kiln": {"caps": ["net"]}}),
    );
    assert_eq!(status, 403, "{e}");
    assert_eq!(e["error"]["param"], "kiln.caps");
    let url = format!("{}/v1/responses", serve.url);
    let auth = bearer(ALICE);
    let slow = {
        let (url, auth) = (url.clone(), auth.clone());
        std::thread::spawn(move || {
            post(
                &url,
                &json!({"model": "shop", "input": "one"}),
                &[("authorization", &auth)],
            )
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(400));
    let (status, headers, text) = http(
        "POST",
        &url,
        &[("authorization", &auth)],
        Some(&json!({"model": "shop", "input": "two"})),
    );
    assert_eq!(status, 429, "{text}");
    assert!(
        headers.iter().any(|(k, v)| k == "retry-after" && v == "3"),
        "{headers:?}"
    );
    let (status, first) = slow.join().expect("first request");
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["output"][0]["content"][0]["text"], "slow answer");
}

/// A user's image and PDF reach the agent's model as that wire's parts; a file the agent's
/// model cannot take is the request's 400, and nothing reaches the model.
#[test]
fn images_and_files_reach_the_model_or_are_refused_before_it() {
    const PNG: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==";
    const PDF: &str = "data:application/pdf;base64,JVBERi0xLjQKJSVFT0YK";
    let mock = Mock::start(&json!({"loop": true, "turns": [{"text": "A red dot and a report."}]}));
    let scripts = shop(&mock);
    std::fs::write(
        scripts.path().join("local.rhai"),
        format!(
            r#"agent("local").provider("ollama").model("m").base_url("{}");"#,
            mock.url
        ),
    )
    .expect("write local.rhai");
    let serve = Serve::start(scripts.path(), &scripts.path().join("k.db"), &[], &[]);
    let url = format!("{}/v1/responses", serve.url);
    let parts = json!([
        {"type": "input_text", "text": "What is this?"},
        {"type": "input_image", "image_url": PNG},
        {"type": "input_file", "filename": "report.pdf", "file_data": PDF},
    ]);
    let input = json!([{"type": "message", "role": "user", "content": parts}]);
    let (status, r) = post(&url, &json!({"model": "shop", "input": input}), &[]);
    assert_eq!(status, 200, "{r}");
    assert_eq!(
        r["output"][0]["content"][0]["text"],
        "A red dot and a report."
    );
    let sent = &mock.requests()[0]["body"]["messages"];
    let user = sent
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .expect("user");
    let kinds: Vec<&str> = user["content"]
        .as_array()
        .expect("parts")
        .iter()
        .filter_map(|p| p["type"].as_str())
        .collect();
    assert_eq!(kinds, ["text", "image_url", "file"], "{user:#}");
    assert_eq!(user["content"][1]["image_url"]["url"], PNG);
    assert_eq!(user["content"][2]["file"]["filename"], "report.pdf");
    // Ollama takes images only: the PDF is refused before any request.
    let (status, e) = post(&url, &json!({"model": "local", "input": input}), &[]);
    assert_eq!(status, 400, "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("takes images only"),
        "{e}"
    );
    assert_eq!(mock.requests().len(), 1, "nothing more reached the model");
}
