//! Which attachments each wire takes, the refusals naming the wire, and the Anthropic and
//! Ollama renders (the other wires' are in their own tests).

use super::*;
use crate::{Endpoint, Limits, ModelRequest, Provider, anthropic, chain, ollama};
use std::time::Duration;

/// A PNG in the message (the bytes are a PNG's signature).
pub(crate) fn png() -> Attachment {
    let mut a = Attachment::from_data_url("data:image/png;base64,iVBORw0KGgo=").expect("data URL");
    a.filename = Some("pic.png".into());
    a
}

/// A PDF in the message.
pub(crate) fn pdf() -> Attachment {
    let mut a =
        Attachment::from_data_url("data:application/pdf;base64,JVBERi0=").expect("data URL");
    a.filename = Some("report v2.pdf".into());
    a
}

/// `a` fetched from a URL instead.
pub(crate) fn by_url(mut a: Attachment, url: &str) -> Attachment {
    a.source = Source::Url { url: url.into() };
    a
}

/// A user message saying `text` with `attachments`.
pub(crate) fn user(text: &str, attachments: Vec<Attachment>) -> Message {
    Message::User {
        content: text.into(),
        attachments,
    }
}

/// A request of `messages` with no system prompt and no tools.
pub(crate) fn plain(messages: &[Message]) -> ModelRequest<'_> {
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

fn endpoint() -> Endpoint {
    Endpoint {
        base_url: "http://127.0.0.1:1".into(),
        api_key: None,
        key_var: None,
        timeout: Duration::from_secs(1),
        max_retries: 0,
        limits: Limits::default(),
    }
}

fn ollama() -> Provider {
    Provider::Ollama(ollama::Ollama {
        endpoint: endpoint(),
        rendered: Default::default(),
    })
}

fn anthropic() -> Provider {
    Provider::Anthropic(anthropic::Anthropic {
        endpoint: endpoint(),
        rendered: Default::default(),
    })
}

#[test]
fn each_wire_takes_what_its_api_does_and_refuses_the_rest_by_name() {
    let url = "https://example.com/x";
    let cases = [
        (Takes::OPENAI, [true, true, true, false]),
        (Takes::RESPONSES, [true, true, true, true]),
        (Takes::ANTHROPIC, [true, true, true, true]),
        (Takes::GEMINI, [true, true, true, true]),
        (Takes::BEDROCK, [true, false, true, false]),
        (Takes::OLLAMA, [true, false, false, false]),
    ];
    for (takes, want) in cases {
        let all = [png(), by_url(png(), url), pdf(), by_url(pdf(), url)];
        for (a, ok) in all.iter().zip(want) {
            let refusal = takes.refusal(a);
            assert_eq!(refusal.is_none(), ok, "{}: {a:?}: {refusal:?}", takes.wire);
            if let Some(why) = refusal {
                assert!(why.starts_with(takes.wire), "{why}");
            }
        }
    }
    let mut tiff = png();
    tiff.media_type = "image/tiff".into();
    let why = Takes::GEMINI
        .refusal(&tiff)
        .expect("not an image type the wires take");
    assert!(why.contains("image/png, image/jpeg"), "{why}");
}

#[test]
fn a_provider_refuses_with_a_typed_error_naming_it_the_file_and_why() {
    let e = ollama()
        .accepts(&pdf())
        .expect_err("Ollama takes images only");
    let text = e.to_string();
    assert!(
        matches!(
            e,
            ProviderError::Unsupported {
                provider: "ollama",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        text.contains("\"report v2.pdf\" (application/pdf)"),
        "{text}"
    );
    assert!(
        text.contains("takes images only; nothing was sent"),
        "{text}"
    );
    assert!(!e.falls_back());
    ollama().accepts(&png()).expect("Ollama takes a PNG");
    let convo = [
        user("a", vec![png()]),
        Message::user("b"),
        user("c", vec![pdf()]),
    ];
    assert!(ollama().accepts_all(&convo).is_err());
    anthropic()
        .accepts_all(&convo)
        .expect("Anthropic takes both");
}

#[test]
fn a_chain_takes_what_every_member_takes() {
    let member = |provider| chain::Member {
        provider,
        model: "m".into(),
    };
    let chain = Provider::Chain(chain::Chain::new(
        member(anthropic()),
        vec![member(ollama())],
    ));
    chain.accepts(&png()).expect("both take a PNG");
    let e = chain
        .accepts(&pdf())
        .expect_err("the fallback cannot take it");
    assert!(
        e.to_string().starts_with("ollama: cannot take a file"),
        "{e}"
    );
}

#[test]
fn anthropic_renders_image_and_document_blocks_after_the_text() {
    let convo = [user(
        "look",
        vec![png(), by_url(pdf(), "https://e.com/r.pdf")],
    )];
    let body = anthropic::request_body(&plain(&convo));
    let content = &body["messages"][0]["content"];
    assert_eq!(content[0], json!({"type": "text", "text": "look"}));
    assert_eq!(
        content[1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}})
    );
    assert_eq!(
        content[2],
        json!({"type": "document", "source": {"type": "url", "url": "https://e.com/r.pdf"}})
    );
    let plain_text = anthropic::request_body(&plain(&[user("look", vec![])]));
    assert_eq!(
        plain_text["messages"][0]["content"], "look",
        "no attachments: as before"
    );
}

#[test]
fn ollama_sends_images_as_base64_beside_the_text() {
    let convo = [user("look", vec![png()])];
    let body = ollama::request_body(&plain(&convo));
    assert_eq!(
        body["messages"][0],
        json!({"role": "user", "content": "look", "images": ["iVBORw0KGgo="]})
    );
    let plain_text = ollama::request_body(&plain(&[Message::user("look")]));
    assert_eq!(
        plain_text["messages"][0],
        json!({"role": "user", "content": "look"})
    );
}
