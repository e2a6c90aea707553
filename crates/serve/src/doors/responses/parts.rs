//! A Responses message's content parts: its text, and a user's images (`input_image`) and files
//! (`input_file`) as attachments the agent's model is sent. What cannot be read is refused at
//! its part's path; what the agent's model cannot take is refused when the run starts. And a
//! `compaction` item's content (`POST /v1/responses/compact`): kiln encrypts nothing, its
//! `encrypted_content` is the summary, base64url-encoded behind a version prefix, so any kiln
//! server reads it back (it is a user message to the model, so a client writing its own gains
//! nothing it could not send as text).

use crate::error::ApiError;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use kiln_providers::{Attachment, AttachmentKind, Message};
use serde_json::{Value, json};

/// A message's content: its text and attachments.
#[derive(Debug, Default)]
pub(crate) struct Content {
    /// The text parts, joined.
    pub text: String,
    /// Images and files, in order.
    pub attachments: Vec<Attachment>,
}

/// Reads `content`: a string, or an array of parts.
pub(crate) fn content(v: &Value, at: &str) -> Result<Content, ApiError> {
    let parts = match v {
        Value::String(s) => {
            return Ok(Content {
                text: s.clone(),
                attachments: Vec::new(),
            });
        }
        Value::Array(parts) => parts,
        _ => {
            return Err(ApiError::bad_request(
                at,
                "content must be a string or an array of parts",
            ));
        }
    };
    let mut out = Content::default();
    for (j, p) in parts.iter().enumerate() {
        let at = format!("{at}[{j}]");
        match p["type"].as_str() {
            Some("input_text" | "output_text" | "text" | "summary_text") => {
                let text = p["text"].as_str().ok_or_else(|| {
                    ApiError::bad_request(&format!("{at}.text"), "text is required")
                })?;
                out.text.push_str(text);
            }
            Some("refusal") => out.text.push_str(p["refusal"].as_str().unwrap_or_default()),
            Some("input_image") => out.attachments.push(image(p, &at)?),
            Some("input_file") => out.attachments.push(file(p, &at)?),
            Some(kind) => {
                return Err(ApiError::bad_request(
                    &format!("{at}.type"),
                    format!(
                        "content parts of type \"{kind}\" are not supported (input_text, input_image, input_file, output_text, refusal)"
                    ),
                ));
            }
            None => {
                return Err(ApiError::bad_request(
                    &format!("{at}.type"),
                    "type is required",
                ));
            }
        }
    }
    Ok(out)
}

fn no_file_ids(p: &Value, at: &str) -> Result<(), ApiError> {
    if p["file_id"].is_string() {
        return Err(ApiError::bad_request(
            &format!("{at}.file_id"),
            "kiln keeps no uploaded files: send the bytes (a data URL) or a URL",
        ));
    }
    Ok(())
}

/// `input_image`: `image_url` as a data URL, or an http(s) URL of a png, jpeg, gif or webp.
fn image(p: &Value, at: &str) -> Result<Attachment, ApiError> {
    no_file_ids(p, at)?;
    let field = format!("{at}.image_url");
    let url = p["image_url"]
        .as_str()
        .ok_or_else(|| ApiError::bad_request(&field, "image_url is required"))?;
    let a = read_url(url, &field)?;
    if a.kind != AttachmentKind::Image {
        return Err(ApiError::bad_request(
            &field,
            format!("{} is not an image", a.media_type),
        ));
    }
    Ok(a)
}

/// `input_file`: `file_data` (a data URL, or base64 typed by `filename`) or `file_url`.
fn file(p: &Value, at: &str) -> Result<Attachment, ApiError> {
    no_file_ids(p, at)?;
    let filename = p["filename"].as_str().map(str::to_string);
    let mut a = match (p["file_data"].as_str(), p["file_url"].as_str()) {
        (Some(data), _) if data.starts_with("data:") => read_url(data, &format!("{at}.file_data"))?,
        (Some(data), _) => {
            let field = format!("{at}.file_data");
            let media_type = filename
                .as_deref()
                .and_then(kiln_core::model::attachment::media_type_of)
                .ok_or_else(|| {
                    ApiError::bad_request(
                        &field,
                        "file_data without a data: prefix needs a filename ending in .pdf, .png, .jpg, .gif or .webp",
                    )
                })?;
            read_url(&format!("data:{media_type};base64,{data}"), &field)?
        }
        (None, Some(url)) => read_url(url, &format!("{at}.file_url"))?,
        (None, None) => {
            return Err(ApiError::bad_request(
                at,
                "an input_file has file_data or file_url",
            ));
        }
    };
    a.filename = filename;
    Ok(a)
}

/// A data URL, or an http(s) URL typed by its extension.
fn read_url(url: &str, field: &str) -> Result<Attachment, ApiError> {
    if url.starts_with("data:") {
        return Attachment::from_data_url(url)
            .map_err(|e| ApiError::bad_request(field, e.to_string()));
    }
    Attachment::from_url(url).ok_or_else(|| {
        ApiError::bad_request(
            field,
            "a URL must be http(s) and end in .png, .jpg, .jpeg, .gif, .webp or .pdf (or send a data URL)",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn images_and_files_become_attachments_and_bad_ones_are_refused_by_path() {
        let png = "data:image/png;base64,iVBORw0KGgo=";
        let c = content(
            &json!([
                {"type": "input_text", "text": "What is this?"},
                {"type": "input_image", "image_url": png},
                {"type": "input_file", "filename": "a.pdf", "file_data": "JVBERi0xLjEK"},
                {"type": "input_file", "file_url": "https://example.test/r.pdf"},
            ]),
            "input[0].content",
        )
        .unwrap();
        assert_eq!(c.text, "What is this?");
        assert_eq!(c.attachments.len(), 3);
        assert_eq!(c.attachments[0].kind, AttachmentKind::Image);
        assert_eq!(c.attachments[1].media_type, "application/pdf");
        assert_eq!(c.attachments[1].filename.as_deref(), Some("a.pdf"));
        let bad = [
            (
                json!({"type": "input_image", "image_url": "data:image/png;base64,***"}),
                "input[0].content[0].image_url",
            ),
            (
                json!({"type": "input_image", "file_id": "file-1"}),
                "input[0].content[0].file_id",
            ),
            (
                json!({"type": "input_image", "image_url": "https://example.test/cat"}),
                "input[0].content[0].image_url",
            ),
            (
                json!({"type": "input_file", "file_data": "JVBERi0xLjEK"}),
                "input[0].content[0].file_data",
            ),
            (
                json!({"type": "input_image", "image_url": "data:application/pdf;base64,JVBERi0xLjEK"}),
                "input[0].content[0].image_url",
            ),
        ];
        for (part, param) in bad {
            let e = content(&json!([part]), "input[0].content").unwrap_err();
            assert_eq!(e.body()["error"]["param"], param, "{part}");
        }
    }
}

/// What `encrypted_content` begins with.
const PREFIX: &str = "kiln-summary-v1.";

/// The largest summary a `compaction` item may carry back (the spec's own bound is 20 MiB;
/// kiln's summaries are a few KiB).
const MAX_SUMMARY_BYTES: usize = 1 << 20;

/// The `compaction` item standing for a summary message.
pub(crate) fn compaction_item(id: &str, summary_message: &str) -> Value {
    json!({
        "type": "compaction",
        "id": id,
        "encrypted_content": format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(summary_message)),
        "created_by": "kiln",
    })
}

/// A `compaction` input item's summary message, or why it cannot be read.
pub(crate) fn summary_of(item: &Value, at: &str) -> Result<Message, ApiError> {
    let field = format!("{at}.encrypted_content");
    let bad = |why: &str| ApiError::bad_request(&field, why.to_string());
    let text = item["encrypted_content"]
        .as_str()
        .ok_or_else(|| bad("encrypted_content is required"))?;
    let encoded = text.strip_prefix(PREFIX).ok_or_else(|| {
        bad("not a compaction kiln made (POST /v1/responses/compact on a kiln server makes them)")
    })?;
    if encoded.len() > MAX_SUMMARY_BYTES * 4 / 3 + 4 {
        return Err(bad("the compaction is larger than kiln makes"));
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(encoded)
        .map_err(|_| bad("the compaction's content is damaged (not base64url)"))?;
    let summary =
        String::from_utf8(bytes).map_err(|_| bad("the compaction's content is not UTF-8 text"))?;
    Ok(Message::user(summary))
}

#[cfg(test)]
mod compaction_tests {
    use crate::doors::responses::parts::{compaction_item, summary_of};
    use kiln_providers::Message;

    #[test]
    fn a_compaction_item_reads_back_as_its_summary_message() {
        let item = compaction_item("cmp_1", "Summary: the order is 42.");
        let back = summary_of(&item, "input[0]").expect("reads back");
        assert_eq!(back, Message::user("Summary: the order is 42."));
        let foreign =
            serde_json::json!({"type": "compaction", "encrypted_content": "gAAAAABpM0Yj"});
        let e = summary_of(&foreign, "input[0]").expect_err("not kiln's");
        assert!(
            format!("{e:?}").contains("input[0].encrypted_content"),
            "{e:?}"
        );
        let damaged = serde_json::json!({"encrypted_content": "kiln-summary-v1.***"});
        assert!(summary_of(&damaged, "input[1]").is_err());
    }
}
