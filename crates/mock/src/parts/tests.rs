//! What kiln's wires render of a user message with an image and a PDF each checker accepts;
//! a part the API would refuse (bad base64, a media type it does not take, an unknown part)
//! is refused with the service's error shape.

use crate::{bedrock, check, gemini};
use axum::http::HeaderMap;
use kiln_providers::{
    Attachment, Message, ModelRequest, anthropic, ollama,
    openai::{chat, responses},
};
use serde_json::{Value, json};

fn headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("anthropic-version", "2023-06-01".parse().expect("header"));
    h.insert("authorization", "Bearer k".parse().expect("header"));
    h
}

fn attached(pdf: bool) -> Vec<Message> {
    let mut attachments =
        vec![Attachment::from_data_url("data:image/png;base64,iVBORw0KGgo=").expect("png")];
    if pdf {
        let mut doc =
            Attachment::from_data_url("data:application/pdf;base64,JVBERi0=").expect("pdf");
        doc.filename = Some("r.pdf".into());
        attachments.push(doc);
    }
    vec![Message::User {
        content: "look".into(),
        attachments,
    }]
}

fn request(messages: &[Message]) -> ModelRequest<'_> {
    ModelRequest {
        model: "m".into(),
        system: None,
        messages: messages.into(),
        tools: Vec::new(),
        temperature: None,
        max_tokens: 10,
        stream: false,
        unchanged_prefix: 0,
        output: None,
        tool_choice: Default::default(),
        parallel_tool_calls: None,
    }
}

/// What kiln's Chat Completions wire sends for `req` to OpenAI.
fn chat_body(req: &ModelRequest<'_>) -> Value {
    let provider = chat::OpenAi {
        endpoint: kiln_providers::Endpoint {
            base_url: chat::DEFAULT_BASE_URL.into(),
            api_key: None,
            key_var: None,
            timeout: std::time::Duration::from_secs(1),
            max_retries: 0,
            limits: Default::default(),
        },
        rendered: Default::default(),
    };
    serde_json::from_slice(&provider.request_bytes(req)).expect("JSON")
}

#[test]
fn what_kiln_renders_with_images_and_files_every_checker_accepts() {
    let both = attached(true);
    let req = request(&both);
    check::openai(&headers(), &chat_body(&req), true).expect("chat");
    crate::responses::check::check(&headers(), &responses::request_body(&req), true)
        .expect("responses");
    check::anthropic(&headers(), &anthropic::request_body(&req), true).expect("anthropic");
    gemini::check(
        &kiln_providers::gemini::request_body(&req),
        "gemini-2.5-flash",
    )
    .expect("gemini");
    bedrock::check(&kiln_providers::bedrock::request_body(&req)).expect("bedrock");
    let image = attached(false);
    let body = ollama::request_body(&request(&image));
    assert_eq!(body["messages"][0]["images"][0], "iVBORw0KGgo=");
    check::ollama(&body).expect("ollama");
}

/// `body` with its first message's content (part `j`) replaced by `part`.
fn with_part(mut body: Value, list: &str, j: usize, at: &[&str], part: Value) -> Value {
    let mut v = &mut body[list][0];
    for key in at {
        v = &mut v[*key];
    }
    v[j] = part;
    body
}

#[test]
fn malformed_parts_are_refused_as_each_api_refuses_them() {
    let both = attached(true);
    let req = request(&both);
    let chat = chat_body(&req);
    let bad = with_part(
        chat.clone(),
        "messages",
        1,
        &["content"],
        json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@"}}),
    );
    let (status, e) = check::openai(&headers(), &bad, true).expect_err("bad base64");
    assert_eq!(
        (status, e["error"]["param"].as_str()),
        (400, Some("messages[0].content[1].image_url.url"))
    );
    let bad = with_part(
        chat,
        "messages",
        1,
        &["content"],
        json!({"type": "picture"}),
    );
    let (_, e) = check::openai(&headers(), &bad, true).expect_err("unknown part");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("'picture'"),
        "{e}"
    );

    let resp = responses::request_body(&req);
    let bad = with_part(
        resp,
        "input",
        2,
        &["content"],
        json!({"type": "input_file", "file_data": "JVBERi0="}),
    );
    let (_, e) =
        crate::responses::check::check(&headers(), &bad, true).expect_err("not a data URL");
    assert_eq!(e["error"]["param"], "input[0].content[2].file_data");

    let anth = anthropic::request_body(&req);
    let bad = with_part(
        anth,
        "messages",
        1,
        &["content"],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/tiff", "data": "iVBORw0KGgo="}}),
    );
    let (_, e) = check::anthropic(&headers(), &bad, true).expect_err("tiff");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("messages.0.content.1.image.source.base64.media_type"),
        "{e}"
    );

    let gem = kiln_providers::gemini::request_body(&req);
    let bad = with_part(
        gem,
        "contents",
        1,
        &["parts"],
        json!({"inline_data": {"mime_type": "image/png", "data": "%%"}}),
    );
    let (_, e) = gemini::check(&bad, "gemini-2.5-flash").expect_err("bad base64");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("contents[0].parts[1].inline_data.data"),
        "{e}"
    );

    let bed = kiln_providers::bedrock::request_body(&req);
    let bad = with_part(
        bed,
        "messages",
        1,
        &["content"],
        json!({"image": {"format": "tiff", "source": {"bytes": "iVBORw0KGgo="}}}),
    );
    let (_, kind, message) = bedrock::check(&bad).expect_err("tiff");
    assert_eq!(kind, "ValidationException");
    assert!(
        message.contains("messages.0.member.content.1.member.image.format"),
        "{message}"
    );

    let image = attached(false);
    let mut body = ollama::request_body(&request(&image));
    body["messages"][0]["images"] = json!(["not base64!"]);
    let (status, _) = check::ollama(&body).expect_err("bad base64");
    assert_eq!(status, 400);
}
