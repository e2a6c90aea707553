//! A Responses message's content parts: its text, and a user's images (`input_image`) and files
//! (`input_file`) as attachments the agent's model is sent. What cannot be read is refused at
//! its part's path; what the agent's model cannot take is refused when the run starts.

use crate::error::ApiError;
use kiln_providers::{Attachment, AttachmentKind};
use serde_json::Value;

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
