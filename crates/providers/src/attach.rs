//! Attachments on the wires: which images and files each wire takes ([`Takes`], checked by
//! `Provider::accepts` before anything is sent) and the content part each renders.

use kiln_core::model::{Attachment, Message, ProviderError};
use kiln_core::model::{AttachmentKind as Kind, AttachmentSource as Source};
use serde_json::{Value, json};

/// Image types every wire takes.
pub const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// What one wire takes: images of [`IMAGE_TYPES`] always, and these.
#[derive(Debug, Clone, Copy)]
pub struct Takes {
    /// The wire, as its refusals name it.
    pub wire: &'static str,
    /// PDF files (in the message).
    pub files: bool,
    /// Images by URL.
    pub image_urls: bool,
    /// Files by URL.
    pub file_urls: bool,
}

impl Takes {
    /// OpenAI Chat Completions: `image_url` parts (data or http URLs), `file` parts (data).
    pub const OPENAI: Takes = Takes::new("OpenAI Chat Completions", true, true, false);
    /// OpenAI Responses: `input_image`, `input_file` (data or URL).
    pub const RESPONSES: Takes = Takes::new("OpenAI Responses", true, true, true);
    /// Anthropic Messages: `image` and `document` blocks (base64 or URL).
    pub const ANTHROPIC: Takes = Takes::new("Anthropic Messages", true, true, true);
    /// Gemini: `inlineData`, `fileData` by URI.
    pub const GEMINI: Takes = Takes::new("Gemini", true, true, true);
    /// Bedrock Converse: `image` and `document` blocks of bytes (no URLs).
    pub const BEDROCK: Takes = Takes::new("Bedrock Converse", true, false, false);
    /// Ollama's `/api/chat`: `images` of base64 only.
    pub const OLLAMA: Takes = Takes::new("Ollama's /api/chat", false, false, false);

    const fn new(wire: &'static str, files: bool, image_urls: bool, file_urls: bool) -> Takes {
        Takes {
            wire,
            files,
            image_urls,
            file_urls,
        }
    }

    /// Why this wire cannot take `a`, if it cannot.
    pub fn refusal(&self, a: &Attachment) -> Option<String> {
        let by_url = matches!(a.source, Source::Url { .. });
        let wire = self.wire;
        let mt = a.media_type.as_str();
        match a.kind {
            Kind::Image if !IMAGE_TYPES.contains(&mt) => {
                Some(format!("{wire} takes images of {}", IMAGE_TYPES.join(", ")))
            }
            Kind::Image if by_url && !self.image_urls => Some(format!(
                "{wire} takes images only in the message, not by URL"
            )),
            Kind::File if !self.files => Some(format!("{wire} takes images only")),
            Kind::File if mt != "application/pdf" => Some(format!("{wire} takes PDF files only")),
            Kind::File if by_url && !self.file_urls => Some(format!(
                "{wire} takes files only in the message, not by URL"
            )),
            _ => None,
        }
    }
}

/// The error naming what `provider` cannot take and why.
pub fn refuse(provider: &'static str, a: &Attachment, why: &str) -> ProviderError {
    let kind = match a.kind {
        Kind::Image => "an image",
        Kind::File => "a file",
    };
    let how = match a.source {
        Source::Url { .. } => " by URL",
        Source::Base64 { .. } => "",
    };
    let name = a
        .filename
        .as_deref()
        .map(|n| format!(" {n:?}"))
        .unwrap_or_default();
    ProviderError::Unsupported {
        provider,
        what: format!("{kind}{name} ({}){how}: {why}", a.media_type),
    }
}

/// The attachments of every user message in `messages`.
pub fn attachments(messages: &[Message]) -> impl Iterator<Item = &Attachment> {
    messages.iter().flat_map(|m| match m {
        Message::User { attachments, .. } => attachments.as_slice(),
        _ => &[],
    })
}

/// The attachments of a user message a wire takes, in order.
pub fn taken(takes: Takes, atts: &[Attachment]) -> impl Iterator<Item = &Attachment> {
    atts.iter().filter(move |a| takes.refusal(a).is_none())
}

/// A user message's text part (`{type: kind, text}`), none when blank, then `parts`.
fn with_text(kind: &str, text: &str, parts: impl Iterator<Item = Value>) -> Value {
    let text = (!text.is_empty()).then(|| json!({"type": kind, "text": text}));
    Value::Array(text.into_iter().chain(parts).collect())
}

/// Chat Completions' user content with attachments: a text part, then theirs.
pub fn openai_content(text: &str, atts: &[Attachment]) -> Value {
    with_text("text", text, taken(Takes::OPENAI, atts).map(openai_part))
}

/// Responses' user content with attachments: an `input_text` part, then theirs.
pub fn responses_content(text: &str, atts: &[Attachment]) -> Value {
    with_text(
        "input_text",
        text,
        taken(Takes::RESPONSES, atts).map(responses_part),
    )
}

/// Anthropic's user blocks with attachments: a text block, then theirs.
pub fn anthropic_blocks(text: &str, atts: &[Attachment]) -> Vec<Value> {
    let parts = taken(Takes::ANTHROPIC, atts).map(anthropic_block);
    match with_text("text", text, parts) {
        Value::Array(blocks) => blocks,
        _ => Vec::new(),
    }
}

/// Chat Completions' content part: `image_url` or `file`.
pub fn openai_part(a: &Attachment) -> Value {
    match a.kind {
        Kind::Image => json!({"type": "image_url", "image_url": {"url": a.url()}}),
        Kind::File => {
            json!({"type": "file", "file": {"file_data": a.url(), "filename": filename(a)}})
        }
    }
}

/// Responses' content part: `input_image` or `input_file`.
pub fn responses_part(a: &Attachment) -> Value {
    match (a.kind, &a.source) {
        (Kind::Image, _) => json!({"type": "input_image", "image_url": a.url(), "detail": "auto"}),
        (Kind::File, Source::Url { url }) => json!({"type": "input_file", "file_url": url}),
        (Kind::File, Source::Base64 { .. }) => {
            json!({"type": "input_file", "file_data": a.url(), "filename": filename(a)})
        }
    }
}

/// Anthropic's `image` or `document` block.
pub fn anthropic_block(a: &Attachment) -> Value {
    let source = match &a.source {
        Source::Base64 { data } => {
            json!({"type": "base64", "media_type": a.media_type, "data": data})
        }
        Source::Url { url } => json!({"type": "url", "url": url}),
    };
    match a.kind {
        Kind::Image => json!({"type": "image", "source": source}),
        Kind::File => json!({"type": "document", "source": source}),
    }
}

/// Gemini's `inlineData` or `fileData` part.
pub fn gemini_part(a: &Attachment) -> Value {
    match &a.source {
        Source::Base64 { data } => json!({"inlineData": {"mimeType": a.media_type, "data": data}}),
        Source::Url { url } => json!({"fileData": {"mimeType": a.media_type, "fileUri": url}}),
    }
}

/// Bedrock's `image` or `document` block (bytes only: [`Takes::BEDROCK`] refuses URLs).
pub fn bedrock_block(a: &Attachment) -> Option<Value> {
    let Source::Base64 { data } = &a.source else {
        return None;
    };
    let format = a.media_type.rsplit('/').next().unwrap_or_default();
    Some(match a.kind {
        Kind::Image => json!({"image": {"format": format, "source": {"bytes": data}}}),
        Kind::File => json!({"document": {
            "format": format, "name": bedrock_name(a), "source": {"bytes": data}
        }}),
    })
}

/// Ollama's `images` entry: the base64 of an image ([`Takes::OLLAMA`] refuses the rest).
pub fn ollama_image(a: &Attachment) -> Option<&str> {
    match (&a.kind, &a.source) {
        (Kind::Image, Source::Base64 { data }) => Some(data),
        _ => None,
    }
}

fn filename(a: &Attachment) -> String {
    let ext = a.media_type.rsplit('/').next().unwrap_or("bin");
    a.filename
        .clone()
        .unwrap_or_else(|| format!("attachment.{ext}"))
}

/// A document's name as Converse takes it: letters, digits, single spaces, `-()[]`; the
/// extension dropped.
fn bedrock_name(a: &Attachment) -> String {
    let name = a.filename.as_deref().unwrap_or("attachment");
    let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
    let cleaned: String = stem
        .chars()
        .map(|c| match c.is_ascii_alphanumeric() || "-()[]".contains(c) {
            true => c,
            false => ' ',
        })
        .collect();
    let words: Vec<&str> = cleaned.split_whitespace().collect();
    match words.is_empty() {
        true => "attachment".into(),
        false => words.join(" "),
    }
}

#[cfg(test)]
pub(crate) mod tests;
