//! The providers' own tool search through `kiln ask` against `kiln mock`: on the Anthropic and
//! OpenAI Responses wires an agent's deferred tools (`.defer_loading`) all go to the service,
//! flagged `defer_loading`, with the service's search tool instead of kiln's `search_tools`;
//! the service searches (the mock's `tool_search` turns answer with its server blocks or
//! items), what it sent comes back verbatim in the next requests, and a task needing two of
//! the 122 tools completes. The first request's bytes in both modes are printed.

use super::defer::{DEFERRED, TOOLS};
use crate::common::{Mock, Scripts};
use serde_json::{Value, json};

/// The wires that search themselves: (agent prefix, provider, base URL suffix).
const WIRES: [(&str, &str, &str); 2] = [("a", "anthropic", ""), ("r", "openai-responses", "/v1")];

/// [`DEFERRED`] with kiln's own search on every wire.
const DEFERRED_KILN: &str = r#".defer_loading(["inventory_tool_*", "weather_lookup", "unit_convert"], #{ search: "kiln" })"#;

fn project(mock: &Mock) -> Scripts {
    let mut agents = String::new();
    for (w, provider, base) in WIRES {
        let url = format!("{}{base}", mock.url);
        agents.push_str(&format!(
            r#"agent("{w}_full").provider("{provider}").model("{w}-full").base_url("{url}").tools(names);
agent("{w}_lean").provider("{provider}").model("{w}-lean").base_url("{url}").tools(names){DEFERRED};
"#
        ));
    }
    Scripts::new(&[("many.rhai", &format!("{TOOLS}{agents}"))])
}

fn scenario() -> Value {
    let call = |name: &str, args: Value| json!([{"name": name, "args": args}]);
    let (weather, convert) = (
        call("weather_lookup", json!({"city": "Paris"})),
        call("unit_convert", json!({"celsius": 21})),
    );
    let mut turns = Vec::new();
    for (w, _, _) in WIRES {
        let (full, lean) = (format!("{w}-full"), format!("{w}-lean"));
        turns.extend([
            json!({"model": full, "tool_calls": weather}),
            json!({"model": full, "tool_calls": convert}),
            json!({"model": full, "text": "Paris is 69.8 F."}),
            json!({"model": lean, "tool_search": "weather of a city", "tool_calls": weather}),
            json!({"model": lean, "tool_search": "convert temperature fahrenheit", "tool_calls": convert}),
            json!({"model": lean, "text": "Paris is 69.8 F."}),
        ]);
    }
    json!({"by_round": true, "turns": turns})
}

/// The function tools a request offers (either wire's shape), and whether each is deferred.
fn functions(request: &Value) -> Vec<(String, bool)> {
    let tools = request["body"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    (tools.iter())
        .filter(|t| t.get("input_schema").is_some() || t["type"] == "function")
        .map(|t| {
            let name = t["name"].as_str().unwrap_or_default().to_string();
            (name, t["defer_loading"] == true)
        })
        .collect()
}

/// The search tools a request offers: Anthropic's typed tool, Responses' `tool_search`.
fn search_tools(request: &Value) -> Vec<Value> {
    let tools = request["body"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    (tools.into_iter())
        .filter(|t| {
            t["type"]
                .as_str()
                .is_some_and(|k| k.starts_with("tool_search"))
        })
        .collect()
}

/// What the service's searches left in a later request: Anthropic's server blocks of the
/// assistant turns, Responses' search items; as (kind, what was searched or found).
fn searches_sent_back(request: &Value) -> Vec<(String, String)> {
    let body = &request["body"];
    let mut found = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        for b in m["content"].as_array().into_iter().flatten() {
            match b["type"].as_str() {
                Some("server_tool_use") => {
                    found.push(("server_tool_use".into(), b["input"]["query"].to_string()))
                }
                Some("tool_search_tool_result") => {
                    let refs = &b["content"]["tool_references"];
                    found.push((
                        "tool_search_tool_result".into(),
                        refs[0]["tool_name"].to_string(),
                    ));
                }
                _ => {}
            }
        }
    }
    for item in body["input"].as_array().into_iter().flatten() {
        match item["type"].as_str() {
            Some("tool_search_call") => found.push((
                "tool_search_call".into(),
                item["arguments"]["paths"][0].to_string(),
            )),
            Some("tool_search_output") => found.push((
                "tool_search_output".into(),
                item["tools"][0]["name"].to_string(),
            )),
            _ => {}
        }
    }
    found
}

#[test]
fn the_providers_own_search_finds_the_deferred_tools_and_the_task_completes() {
    let mock = Mock::start(&scenario());
    let scripts = project(&mock);
    for (w, _, _) in WIRES {
        for mode in ["full", "lean"] {
            let agent = format!("{w}_{mode}");
            let said = super::ask_ok(scripts.path(), &agent, "How warm is Paris in F?", &[]);
            assert!(said.contains("69.8"), "{agent}: {said}");
        }
    }
    let requests = mock.requests();
    for (w, provider, _) in WIRES {
        let of = |model: String| -> Vec<&Value> {
            (requests.iter())
                .filter(|r| r["body"]["model"] == model.as_str())
                .collect()
        };
        let (full, lean) = (of(format!("{w}-full")), of(format!("{w}-lean")));
        assert_eq!((full.len(), lean.len()), (3, 3), "{provider}");
        // Every tool goes to the service: undeferred in full, flagged in lean, with its search.
        assert_eq!(functions(full[0]).len(), 122, "{provider}");
        assert!(functions(full[0]).iter().all(|(_, d)| !d) && search_tools(full[0]).is_empty());
        let flagged = functions(lean[0]);
        assert_eq!(flagged.len(), 122, "{provider}");
        assert!(
            flagged.iter().all(|(_, deferred)| *deferred),
            "{provider}: {flagged:?}"
        );
        assert!(
            !flagged.iter().any(|(n, _)| n == "search_tools"),
            "no kiln search"
        );
        let search = search_tools(lean[0]);
        let expected = match provider {
            "anthropic" => {
                json!([{"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}])
            }
            _ => json!([{"type": "tool_search"}]),
        };
        assert_eq!(Value::Array(search), expected, "{provider}");
        // The service's searches come back, each in the requests after it.
        let back = |r: &Value| searches_sent_back(r);
        assert!(back(lean[0]).is_empty());
        let (first, second) = match provider {
            "anthropic" => (
                vec![
                    (
                        "server_tool_use".to_string(),
                        "\"weather of a city\"".to_string(),
                    ),
                    (
                        "tool_search_tool_result".into(),
                        "\"weather_lookup\"".into(),
                    ),
                ],
                vec![
                    (
                        "server_tool_use".to_string(),
                        "\"convert temperature fahrenheit\"".to_string(),
                    ),
                    ("tool_search_tool_result".into(), "\"unit_convert\"".into()),
                ],
            ),
            _ => (
                vec![
                    (
                        "tool_search_call".to_string(),
                        "\"weather_lookup\"".to_string(),
                    ),
                    ("tool_search_output".into(), "\"weather_lookup\"".into()),
                ],
                vec![
                    (
                        "tool_search_call".to_string(),
                        "\"unit_convert\"".to_string(),
                    ),
                    ("tool_search_output".into(), "\"unit_convert\"".into()),
                ],
            ),
        };
        assert_eq!(back(lean[1]), first, "{provider}");
        assert_eq!(
            back(lean[2]),
            [first.clone(), second].concat(),
            "{provider}"
        );
        // The tools' results reached the model.
        assert!(lean[2]["body"].to_string().contains("69.8"), "{provider}");
        let size = |r: &Value| r["body"].to_string().len();
        println!(
            "{provider}: first request bytes: undeferred {} / deferred to the provider's search {}",
            size(full[0]),
            size(lean[0])
        );
    }
}

/// The first request of an agent on each wire in each mode (undeferred, kiln's own search,
/// the provider's search): its bytes, the input tokens `kiln mock` counts (`count_usage`: the
/// prompt the model reads at four bytes a token, deferred tools not yet found left out) and
/// the same prompt's tokens by OpenAI's documented tokenizer, o200k_base. On the wires that
/// search themselves, `#{ search: "kiln" }` makes the agent use kiln's `search_tools` instead.
#[test]
fn tokens_per_request_with_122_tools_on_each_wire_and_mode() {
    // (agent, provider, base URL suffix, model, mode)
    let cases = [
        ("anthropic", "", "undeferred"),
        ("anthropic", "", "kiln search"),
        ("anthropic", "", "native search"),
        ("openai-responses", "/v1", "undeferred"),
        ("openai-responses", "/v1", "kiln search"),
        ("openai-responses", "/v1", "native search"),
        ("openai", "/v1", "undeferred"),
        ("openai", "/v1", "kiln search"),
    ];
    let model = |i: usize| format!("model-{i}");
    let turns: Vec<Value> = (0..cases.len())
        .map(|i| json!({"model": model(i), "text": "done"}))
        .collect();
    let mock = Mock::start(&json!({"by_round": true, "count_usage": true, "turns": turns}));
    let mut agents = String::new();
    for (i, (provider, base, mode)) in cases.iter().enumerate() {
        let url = format!("{}{base}", mock.url);
        let (deferred, fallback) = match *mode {
            "undeferred" => ("", ""),
            "kiln search" if *provider != "openai" => (DEFERRED_KILN, ""),
            _ => (DEFERRED, ""),
        };
        let m = model(i);
        agents.push_str(&format!(
            r#"agent("agent_{i}").provider("{provider}").model("{m}").base_url("{url}").tools(names){deferred}{fallback};
"#
        ));
    }
    let scripts = Scripts::new(&[("many.rhai", &format!("{TOOLS}{agents}"))]);
    for i in 0..cases.len() {
        let agent = format!("agent_{i}");
        super::ask_ok(scripts.path(), &agent, "hi", &[]);
    }
    let requests = mock.requests();
    let o200k = tiktoken_rs::o200k_base().expect("o200k_base is built in");
    let mut rows = Vec::new();
    for (i, (provider, _, mode)) in cases.iter().enumerate() {
        let first = (requests.iter())
            .find(|r| r["body"]["model"] == model(i).as_str())
            .expect("the agent's request");
        let body = &first["body"];
        let kiln_search = body.to_string().contains("\"search_tools\"");
        assert_eq!(kiln_search, *mode == "kiln search", "{provider} {mode}");
        let counted = first["input_tokens"].as_u64().expect("the mock's count");
        let prompt = kiln_mock::render::count::prompt_text(body);
        let tokens = o200k.encode_with_special_tokens(&prompt).len();
        rows.push((*provider, *mode, body.to_string().len(), counted, tokens));
    }
    println!("| wire | mode | bytes | kiln mock tokens | o200k_base tokens |");
    println!("|---|---|---:|---:|---:|");
    for (wire, mode, bytes, counted, tokens) in &rows {
        println!("| {wire} | {mode} | {bytes} | {counted} | {tokens} |");
    }
    // Deferring cuts what the model reads to under a third, by either search, on every wire
    // (Responses' search still shows the model each deferred tool's name and description).
    for wire in ["anthropic", "openai-responses", "openai"] {
        let of = |mode: &str| {
            let row = rows.iter().find(|r| r.0 == wire && r.1 == mode);
            row.map(|r| (r.3, r.4))
        };
        let full = of("undeferred").expect("undeferred");
        for mode in ["kiln search", "native search"] {
            if let Some((counted, tokens)) = of(mode) {
                assert!(
                    counted * 3 < full.0 && tokens * 3 < full.1,
                    "{wire} {mode}: {rows:?}"
                );
            }
        }
    }
}

/// Anthropic pauses a long turn of its own tools (`pause_turn`): kiln sends the reply back as
/// it is, the model goes on in the next request, and the run answers instead of ending there.
#[test]
fn a_turn_the_service_paused_goes_on_in_the_next_request() {
    let call = |name: &str, args: Value| json!([{"name": name, "args": args}]);
    // In order, not by round: the continuation joins the paused assistant turn (one message).
    let mock = Mock::start(&json!({"turns": [
        {"tool_search": "weather city", "pause": true},
        {"tool_calls": call("weather_lookup", json!({"city": "Paris"}))},
        {"text": "Paris is 21 C."}
    ]}));
    let agent = format!(
        r#"agent("paused").provider("anthropic").model("m").base_url("{}").tools(names){DEFERRED};"#,
        mock.url
    );
    let scripts = Scripts::new(&[("many.rhai", &format!("{TOOLS}{agent}"))]);
    let said = super::ask_ok(scripts.path(), "paused", "How warm is Paris?", &[]);
    assert!(said.contains("Paris is 21 C."), "{said}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    // The paused reply went back as the model left it: its search blocks, in the assistant's turn.
    let messages = requests[1]["body"]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let last = messages.last().cloned().unwrap_or_default();
    assert_eq!(last["role"], "assistant", "{messages:#?}");
    assert!(
        last["content"].to_string().contains("server_tool_use"),
        "{last}"
    );
}
