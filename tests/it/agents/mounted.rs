//! 122 tools of a mounted MCP server (`kiln mcp` over stdio, mounted with `mcp_server`),
//! deferred and not, on each of the six wires through `kiln ask` against `kiln mock`: a task
//! needing two of them completes in both modes (kiln's `search_tools` on Chat Completions,
//! Gemini, Ollama and Bedrock; the provider's own search on Anthropic and OpenAI Responses),
//! and the first request's size — its bytes, `kiln mock`'s token count and OpenAI's tokenizer
//! o200k_base — is printed as a table and held to its aim.

use super::defer::TOOLS;
use crate::common::{Mock, Scripts, ask_command, kiln_bin};
use serde_json::{Value, json};

/// (agent prefix, provider, base URL suffix, whether the provider searches itself).
const WIRES: [(&str, &str, &str, bool); 6] = [
    ("chat", "openai", "/v1", false),
    ("gemini", "gemini", "", false),
    ("ollama", "ollama", "", false),
    ("bedrock", "bedrock", "", false),
    ("anthropic", "anthropic", "", true),
    ("responses", "openai-responses", "/v1", true),
];

fn project(mock: &Mock, server: &Scripts) -> Scripts {
    let mut src = format!(
        "mcp_server(\"inv\").command({:?}, [\"mcp\", \"--no-stdlib\", \"--scripts\", {:?}]);\n",
        kiln_bin().display().to_string(),
        server.path().display().to_string()
    );
    for (w, provider, base, _) in WIRES {
        let url = format!("{}{base}", mock.url);
        for (mode, deferred) in [("full", ""), ("lean", r#".defer_loading(["inv__*"])"#)] {
            src.push_str(&format!(
                r#"agent("{w}_{mode}").provider("{provider}").model("{w}-{mode}").base_url("{url}")
  .tools(["inv__*"]).capabilities(["mcp:inv"]){deferred};
"#
            ));
        }
    }
    Scripts::new(&[("agents.rhai", &src)])
}

fn scenario() -> Value {
    let call = |name: &str, args: Value| json!({"name": name, "args": args});
    let weather = call("inv__weather_lookup", json!({"city": "Paris"}));
    let convert = call("inv__unit_convert", json!({"celsius": 21}));
    let search = |q: &str| call("search_tools", json!({"query": q}));
    let answer = "Paris is 69.8 F.";
    let mut turns = Vec::new();
    for (w, _, _, native) in WIRES {
        let (full, lean) = (format!("{w}-full"), format!("{w}-lean"));
        turns.extend([
            json!({"model": full, "tool_calls": [weather]}),
            json!({"model": full, "tool_calls": [convert]}),
            json!({"model": full, "text": answer}),
        ]);
        if native {
            turns.extend([
                json!({"model": lean, "tool_search": "weather city", "tool_calls": [weather]}),
                json!({"model": lean, "tool_search": "convert fahrenheit", "tool_calls": [convert]}),
                json!({"model": lean, "text": answer}),
            ]);
        } else {
            turns.extend([
                json!({"model": lean, "tool_calls": [search("weather of a city")]}),
                json!({"model": lean, "tool_calls": [weather, search("convert temperature fahrenheit")]}),
                json!({"model": lean, "tool_calls": [convert]}),
                json!({"model": lean, "text": answer}),
            ]);
        }
    }
    json!({"by_round": true, "count_usage": true, "turns": turns})
}

/// The requests the mock received for `model` (named in the body or the URL), in order.
fn of<'a>(requests: &'a [Value], model: &str) -> Vec<&'a Value> {
    requests
        .iter()
        .filter(|r| {
            r["body"]["model"] == model || r["path"].as_str().is_some_and(|p| p.contains(model))
        })
        .collect()
}

#[test]
fn a_task_with_122_mounted_tools_completes_deferred_and_not_on_every_wire() {
    let server = Scripts::new(&[("tools.rhai", TOOLS)]);
    let mock = Mock::start(&scenario());
    let scripts = project(&mock, &server);
    for (w, _, _, _) in WIRES {
        for mode in ["full", "lean"] {
            let agent = format!("{w}_{mode}");
            let out = ask_command(
                &[
                    &agent,
                    "How warm is Paris in F?",
                    "--no-stdlib",
                    "--scripts",
                    ".",
                ],
                scripts.path(),
            )
            .env("GEMINI_API_KEY", "test-key")
            .env("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
            .env(
                "AWS_SECRET_ACCESS_KEY",
                "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            )
            .env("AWS_REGION", "us-west-2")
            .env_remove("AWS_BEARER_TOKEN_BEDROCK")
            .env_remove("GOOGLE_GEMINI_BASE_URL")
            .output()
            .expect("kiln ask");
            let said = String::from_utf8_lossy(&out.stdout);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{agent}: {said}{err}");
            assert!(said.contains("69.8"), "{agent}: {said}{err}");
        }
    }
    let requests = mock.requests();
    let o200k = tiktoken_rs::o200k_base().expect("o200k_base is built in");
    println!(
        "| wire | mode | requests | first request bytes | kiln mock tokens | o200k_base tokens |"
    );
    println!("|---|---|---:|---:|---:|---:|");
    for (w, provider, _, native) in WIRES {
        let mut sizes = Vec::new();
        for mode in ["full", "lean"] {
            let sent = of(&requests, &format!("{w}-{mode}"));
            let first = sent.first().copied().expect("a request");
            let bytes = first["body"].to_string().len();
            let counted = first["input_tokens"].as_u64().expect("the mock's count");
            let prompt = kiln_mock::render::count::prompt_text(&first["body"]);
            let tokens = o200k.encode_with_special_tokens(&prompt).len();
            let how = match (mode, native) {
                ("full", _) => "every schema",
                (_, true) => "the provider's search",
                _ => "kiln's search",
            };
            println!(
                "| {provider} | {how} | {} | {bytes} | {counted} | {tokens} |",
                sent.len()
            );
            sizes.push((bytes, counted));
        }
        let ((full_bytes, full_tokens), (lean_bytes, lean_tokens)) = (sizes[0], sizes[1]);
        // The aim: a tenth of the undeferred request. kiln's search sends a tenth of the bytes;
        // the provider's search sends every definition, the model reads a fraction of them
        // (OpenAI Responses shows its model each deferred tool's name and description).
        if native {
            assert!(
                lean_tokens * 3 < full_tokens,
                "{provider}: {lean_tokens} vs {full_tokens}"
            );
        } else {
            assert!(
                lean_bytes * 10 <= full_bytes,
                "{provider}: {lean_bytes} vs {full_bytes}"
            );
            assert!(
                lean_tokens * 10 <= full_tokens,
                "{provider}: {lean_tokens} vs {full_tokens}"
            );
        }
    }
}
