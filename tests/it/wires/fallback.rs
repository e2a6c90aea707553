//! Fallback chains end to end: the real binary against one `kiln mock` serving both wires
//! (Anthropic first, OpenAI as the fallback), the run log and the chat span read back.

use crate::common::*;
use serde_json::{Value, json};

const SCRIPT: &str = r#"
agent("fb").provider("anthropic").model("claude-first").system("Be brief.")
    .fallback(["openai:gpt-second", "ollama"]);
agent("plain").provider("anthropic").model("claude-first");
"#;

/// `kiln ask AGENT hi --json` with the first member at the mock and the fallbacks' own
/// environment pointing there too; traces to `otlp` when given.
fn ask_fb(s: &Scripts, mock: &Mock, agent: &str, extra: &[&str], otlp: Option<&str>) -> Output {
    ask_two(s, mock, mock, agent, extra, otlp)
}

/// [`ask_fb`] with the fallbacks at a mock of their own (the mock walks a scenario per API
/// key; Ollama sends none, so it would start the scenario again on a shared mock).
fn ask_two(
    s: &Scripts,
    first: &Mock,
    rest: &Mock,
    agent: &str,
    extra: &[&str],
    otlp: Option<&str>,
) -> Output {
    let mut args = vec![agent, "hi", "--json", "--scripts", ".", "--no-stdlib"];
    args.extend_from_slice(&["--base-url", &first.url]);
    if !extra.contains(&"--retries") {
        args.extend_from_slice(&["--retries", "2"]);
    }
    args.extend_from_slice(extra);
    let mut cmd = ask_command(&args, s.path());
    cmd.env("OPENAI_BASE_URL", format!("{}/v1", rest.url))
        .env("OLLAMA_HOST", &rest.url);
    if let Some(url) = otlp {
        cmd.env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", url);
    }
    cmd.output().expect("run kiln ask")
}

type Output = std::process::Output;

fn report(out: &Output) -> Value {
    assert!(out.status.success(), "{}", stderr(out));
    serde_json::from_slice(&out.stdout).expect("the report as JSON")
}

fn busy() -> Value {
    json!({"fault": {"status": 429, "retry_after": 0, "message": "slow down"}})
}

#[test]
fn a_busy_first_model_falls_back_and_the_log_and_span_say_which_answered() {
    let s = Scripts::new(&[("fb.rhai", SCRIPT)]);
    let mock =
        Mock::start(&json!({"turns": [busy(), busy(), busy(), {"text": "from the fallback"}]}));
    let collector = Collector::start();
    let out = ask_fb(&s, &mock, "fb", &[], Some(&collector.url));
    let report = report(&out);
    assert_eq!(report["answer"], "from the fallback");
    assert_eq!(
        report["answered_by"],
        json!([{"provider": "openai", "model": "gpt-second"}])
    );
    let paths: Vec<String> = mock
        .requests()
        .iter()
        .map(|r| r["path"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        paths,
        [
            "/v1/messages",
            "/v1/messages",
            "/v1/messages",
            "/v1/chat/completions"
        ],
        "three tries on the first model (its retries), then the second"
    );
    assert_eq!(
        mock.requests()[3]["body"]["model"],
        "gpt-second",
        "the fallback asks its own model"
    );
    // The run log: who answered the round, in `kiln logs RUN` and its JSON.
    let run_id = report["run_id"].as_str().expect("run id");
    let text = stdout(&kiln(&["logs", run_id], s.path()));
    assert!(
        text.contains("round 1: openai/gpt-second (fallback)"),
        "{text}"
    );
    let logs: Value =
        serde_json::from_str(&stdout(&kiln(&["logs", run_id, "--json"], s.path()))).expect("json");
    let call = &logs[0]["model_calls"][0];
    assert_eq!(
        (&call["provider"], &call["model"]),
        (&json!("openai"), &json!("gpt-second"))
    );
    // The chat span: the request asked the first model, the second answered.
    let spans = collector.bodies();
    assert!(
        attribute_is(&spans, "gen_ai.response.model", "gpt-second"),
        "no chat span says gpt-second answered"
    );
    assert!(attribute_is(&spans, "gen_ai.provider.name", "openai"));
    assert!(attribute_is(&spans, "gen_ai.request.model", "claude-first"));
}

#[test]
fn an_error_the_request_caused_does_not_fall_back() {
    let s = Scripts::new(&[("fb.rhai", SCRIPT)]);
    let mock = Mock::start(&json!({"turns": [
        {"fault": {"status": 400, "message": "prompt is too long"}},
        {"text": "never"}
    ]}));
    let out = ask_fb(&s, &mock, "fb", &[], None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("anthropic: HTTP 400") && stderr(&out).contains("prompt is too long"),
        "{}",
        stderr(&out)
    );
    assert_eq!(mock.requests().len(), 1, "no retry, no fallback");
}

#[test]
fn every_member_busy_ends_in_the_last_error_and_the_flag_replaces_the_agents_chain() {
    let s = Scripts::new(&[("fb.rhai", SCRIPT)]);
    // The flag's chain on an agent without one: anthropic, then ollama's default model.
    let first = Mock::start(&json!({"loop": true, "turns": [busy()]}));
    let local = Mock::start(&json!({"turns": [{"text": "local"}]}));
    let out = ask_two(&s, &first, &local, "plain", &["--fallback", "ollama"], None);
    let report = report(&out);
    assert_eq!(report["answer"], "local");
    assert_eq!(
        report["answered_by"],
        json!([{"provider": "ollama", "model": "llama3.2"}])
    );
    assert_eq!(first.requests().len(), 3);
    assert_eq!(local.requests()[0]["path"], "/api/chat");
    // Every member busy: the last one's error is the run's.
    let mock = Mock::start(&json!({"loop": true, "turns": [
        {"fault": {"status": 503, "retry_after": 0, "message": "busy"}}
    ]}));
    let out = ask_fb(&s, &mock, "fb", &["--retries", "0"], None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("ollama: HTTP 503"),
        "{}",
        stderr(&out)
    );
    assert_eq!(mock.requests().len(), 3, "one try on each of the three");
    // An unknown provider in the flag is refused before any request.
    let out = ask_fb(&s, &mock, "plain", &["--fallback", "opnai:x"], None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("did you mean \"openai\""),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_unknown_fallback_provider_is_a_load_error_with_the_nearest_name() {
    let s = Scripts::new(&[(
        "bad.rhai",
        "agent(\"a\").provider(\"anthropic\")\n    .fallback([\"opnai:gpt-5-mini\"]);\n",
    )]);
    let out = kiln(&["check", "--no-stdlib", "--scripts", "."], s.path());
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("bad.rhai:2:6: agent \"a\": fallback: unknown provider \"opnai\""),
        "{text}"
    );
    assert!(text.contains("did you mean \"openai\""), "{text}");
}

#[test]
fn a_call_id_one_wire_wrote_reaches_the_next_wire_as_an_id_it_takes() {
    // OpenAI first, writing a call id Anthropic's API refuses (`^[a-zA-Z0-9_-]+$`); then busy,
    // so the next round falls back to Anthropic with the call and its result in the transcript.
    let s = Scripts::new(&[(
        "fb.rhai",
        r#"
tool("look").description("Looks").param("q", "string").handler(|args| "seen " + args.q);
agent("fb").provider("openai").model("gpt-first").tools(["look"])
    .fallback(["anthropic:claude-second"]);
"#,
    )]);
    let weird = "weird id/../\u{0}";
    let mock = Mock::start(&json!({"turns": [
        {"tool_calls": [{"name": "look", "args": {"q": "x"}, "id": weird}]},
        busy(),
        {"text": "done"}
    ]}));
    let mut cmd = ask_command(
        &[
            "fb",
            "hi",
            "--json",
            "--scripts",
            ".",
            "--no-stdlib",
            "--retries",
            "0",
        ],
        s.path(),
    );
    cmd.env("OPENAI_BASE_URL", format!("{}/v1", mock.url))
        .env("ANTHROPIC_BASE_URL", &mock.url);
    let out = cmd.output().expect("run kiln ask");
    let report = report(&out);
    assert_eq!(report["answer"], "done");
    assert_eq!(
        report["answered_by"],
        json!([{"provider": "openai", "model": "gpt-first"},
               {"provider": "anthropic", "model": "claude-second"}])
    );
    let requests = mock.requests();
    let anthropic = requests
        .iter()
        .find(|r| r["path"] == "/v1/messages")
        .expect("a request on the Anthropic wire");
    let messages = &anthropic["body"]["messages"];
    let (call, result) = (
        &messages[1]["content"][0]["id"],
        &messages[2]["content"][0]["tool_use_id"],
    );
    let id = call.as_str().expect("the call's id");
    assert!(
        !id.is_empty()
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
        "{id:?} is not ^[a-zA-Z0-9_-]+$"
    );
    assert_eq!(call, result, "the result answers the call by the same id");
    // The transcript and the tool saw the original id: the run log keeps it as written.
    let run_id = report["run_id"].as_str().expect("run id");
    let logs = stdout(&kiln(&["logs", run_id, "--json"], s.path()));
    assert!(logs.contains("weird id/../\\u0000"), "{logs}");
}

/// Whether an exported span holds attribute `key` with string value `value`. OTLP/HTTP sends
/// protobuf: a `KeyValue` is the key's bytes, then the `AnyValue` with the string's bytes a
/// few framing bytes later.
fn attribute_is(bodies: &[Vec<u8>], key: &str, value: &str) -> bool {
    let (key, value) = (key.as_bytes(), value.as_bytes());
    bodies.iter().any(|b| {
        b.windows(key.len())
            .enumerate()
            .filter(|(_, w)| *w == key)
            .any(|(at, _)| {
                let after = &b[at + key.len()..b.len().min(at + key.len() + 8 + value.len())];
                after.windows(value.len()).any(|w| w == value)
            })
    })
}
