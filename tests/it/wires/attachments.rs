//! `kiln ask --attach`: an image or a PDF reaches the model on every wire in that wire's own
//! shape (the real binary against `kiln mock`, which checks the parts as each API does and
//! records them), and a wire that cannot take one refuses the run before sending anything.

use crate::common::*;
use crate::wires::bedrock::{ACCESS_KEY, SECRET_KEY, SESSION_TOKEN, signing_mock};
use serde_json::{Value, json};

/// An agent per provider.
const AGENTS: &str = r#"
for p in ["openai", "anthropic", "openai-responses", "gemini", "ollama"] {
    agent(`eye_${p}`).provider(p).model("gemini-2.5-flash").system("You look at pictures.");
}
agent("eye_planner").mode("json_planner").provider("openai").model("small").max_steps(2);
agent("eye_bedrock").provider("bedrock").model("anthropic.claude-haiku-4-5-20251001-v1:0");
"#;

/// A real 1x1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];
/// The PNG's base64.
const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==";

fn scripts() -> Scripts {
    let s = Scripts::new(&[("eye.rhai", AGENTS)]);
    std::fs::write(s.path().join("pic.png"), PNG).expect("write the PNG");
    std::fs::write(s.path().join("report.pdf"), b"%PDF-1.4\n%%EOF\n").expect("write the PDF");
    std::fs::write(s.path().join("notes.txt"), b"text").expect("write the text file");
    s
}

/// `kiln ask eye_PROVIDER "What is this?" --attach ...` against `mock`.
fn ask_eye(s: &Scripts, mock: &Mock, provider: &str, attach: &[&str]) -> std::process::Output {
    let agent = format!("eye_{provider}");
    let base = match provider {
        "openai" | "openai-responses" | "planner" => format!("{}/v1", mock.url),
        _ => mock.url.clone(),
    };
    let mut args = vec![
        agent.as_str(),
        "What is this?",
        "--scripts",
        ".",
        "--no-stdlib",
    ];
    args.extend(["--base-url", &base, "--retries", "0"]);
    for a in attach {
        args.extend(["--attach", a]);
    }
    ask_command(&args, s.path())
        .env("GEMINI_API_KEY", TEST_KEY)
        .env_remove("GOOGLE_API_KEY")
        .env_remove("GOOGLE_GEMINI_BASE_URL")
        .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        .env("AWS_SESSION_TOKEN", SESSION_TOKEN)
        .env("AWS_REGION", "us-west-2")
        .env_remove("AWS_BEARER_TOKEN_BEDROCK")
        .env_remove("AWS_ENDPOINT_URL_BEDROCK_RUNTIME")
        .output()
        .expect("run kiln ask")
}

/// The one user message (or content) of a recorded request, in its wire's shape.
fn user_content(provider: &str, request: &Value) -> Value {
    let list = match provider {
        "openai-responses" => "input",
        "gemini" => "contents",
        _ => "messages",
    };
    let items = request["body"][list]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let users: Vec<Value> = items.into_iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(users.len(), 1, "{provider}: {request}");
    users[0].clone()
}

/// What each wire must have sent for the prompt with pic.png attached.
fn expected(provider: &str) -> Value {
    let data_url = format!("data:image/png;base64,{PNG_B64}");
    match provider {
        "openai" => json!({"role": "user", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": data_url}}]}),
        "anthropic" => json!({"role": "user", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}}]}),
        "openai-responses" => json!({"role": "user", "content": [
            {"type": "input_text", "text": "What is this?"},
            {"type": "input_image", "image_url": data_url, "detail": "auto"}]}),
        "gemini" => json!({"role": "user", "parts": [
            {"text": "What is this?"},
            {"inlineData": {"mimeType": "image/png", "data": PNG_B64}}]}),
        "ollama" => json!({"role": "user", "content": "What is this?", "images": [PNG_B64]}),
        "bedrock" => json!({"role": "user", "content": [
            {"text": "What is this?"},
            {"image": {"format": "png", "source": {"bytes": PNG_B64}}}]}),
        _ => Value::Null,
    }
}

#[test]
fn an_attached_image_reaches_the_model_in_each_wires_shape() {
    let s = scripts();
    let answer = json!({"turns": [{"text": "A single pixel."}]});
    for provider in [
        "openai",
        "anthropic",
        "openai-responses",
        "gemini",
        "ollama",
        "bedrock",
    ] {
        let mock = match provider {
            "bedrock" => signing_mock(&answer),
            _ => Mock::start(&answer),
        };
        let out = ask_eye(&s, &mock, provider, &["pic.png"]);
        assert!(out.status.success(), "{provider}: {}", stderr(&out));
        assert_eq!(stdout(&out).trim(), "A single pixel.", "{provider}");
        let requests = mock.requests();
        assert_eq!(requests.len(), 1, "{provider}");
        assert_eq!(
            user_content(provider, &requests[0]),
            expected(provider),
            "{provider}"
        );
    }
}

#[test]
fn an_attached_pdf_is_a_file_part_with_its_name() {
    let s = scripts();
    let mock = Mock::start(&json!({"turns": [{"text": "A report."}]}));
    let out = ask_eye(&s, &mock, "openai-responses", &["pic.png", "report.pdf"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let content = &user_content("openai-responses", &mock.requests()[0])["content"];
    assert_eq!(content[1]["type"], "input_image");
    assert_eq!(content[2]["type"], "input_file");
    assert_eq!(content[2]["filename"], "report.pdf");
    let data = content[2]["file_data"].as_str().unwrap_or_default();
    assert_eq!(data, "data:application/pdf;base64,JVBERi0xLjQKJSVFT0YK");
}

#[test]
fn a_wire_that_cannot_take_the_file_refuses_the_run_before_sending() {
    let s = scripts();
    let mock = Mock::start(&json!({"turns": [{"text": "never"}]}));
    let out = ask_eye(&s, &mock, "ollama", &["report.pdf"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("ollama: cannot take a file \"report.pdf\" (application/pdf): Ollama's /api/chat takes images only; nothing was sent"),
        "{err}"
    );
    assert!(mock.requests().is_empty(), "a request reached the mock");
}

#[test]
fn a_file_of_another_type_or_missing_is_an_error_naming_its_path() {
    let s = scripts();
    let mock = Mock::start(&json!({"turns": [{"text": "never"}]}));
    let out = ask_eye(&s, &mock, "openai", &["notes.txt"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(
            "--attach notes.txt: not a file kiln attaches (png, jpg, jpeg, gif, webp, pdf"
        ),
        "{err}"
    );
    let out = ask_eye(&s, &mock, "openai", &["missing.png"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("--attach missing.png: "), "{err}");
    assert!(mock.requests().is_empty(), "a request reached the mock");
}

#[test]
fn a_planner_agent_refuses_attachments_its_steps_cannot_carry() {
    let s = scripts();
    let mock = Mock::start(&json!({"turns": [{"text": "never"}]}));
    let out = ask_eye(&s, &mock, "planner", &["pic.png"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "openai: cannot take an image \"pic.png\" (image/png): a planner's steps are text"
        ),
        "{err}"
    );
    assert!(mock.requests().is_empty(), "a request reached the mock");
}
