//! The images and files of user messages, checked on each wire as its API checks them: the
//! part types it knows, the fields each needs, media types it takes, and base64 that decodes
//! (in data URLs too). What passes is recorded with the request like everything else.

use super::errors::Refusal;
use super::errors::{Rejection, openai_error};
use base64::Engine;
use serde_json::{Value, json};

/// The image types every wire takes.
const IMAGES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// Whether `data` is standard, padded base64.
fn base64_ok(data: &str) -> bool {
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .is_ok()
}

/// The media type of `data:<type>;base64,<data>` whose data decodes.
fn data_url(url: &str) -> Option<&str> {
    let (head, data) = url.strip_prefix("data:")?.split_once(',')?;
    let media = head.strip_suffix(";base64")?.split(';').next()?;
    (media.contains('/') && base64_ok(data)).then_some(media)
}

fn is_http(url: &str) -> bool {
    url.starts_with("https://") || url.starts_with("http://")
}

/// OpenAI's error for a bad value at `param`.
fn openai_bad(param: &str, message: String, code: &str) -> Rejection {
    openai_error(400, message, Some(param), Some(code))
}

/// Chat Completions: the content of user message `i` (a string, or text, `image_url` and
/// `file` parts).
pub fn openai(i: usize, content: &Value) -> Result<(), Rejection> {
    for (j, p) in content.as_array().into_iter().flatten().enumerate() {
        let at = format!("messages[{i}].content[{j}]");
        match p["type"].as_str().unwrap_or("") {
            "text" => {}
            "image_url" => {
                let url = p["image_url"]["url"].as_str().unwrap_or("");
                let ok = is_http(url) || data_url(url).is_some_and(|m| IMAGES.contains(&m));
                if !ok {
                    let message = format!(
                        "Invalid image URL: '{at}.image_url.url'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got {}.",
                        quote(url)
                    );
                    return Err(openai_bad(
                        &format!("{at}.image_url.url"),
                        message,
                        "invalid_value",
                    ));
                }
            }
            "file" => {
                let f = &p["file"];
                let data = f["file_data"].as_str();
                if data.is_none() && !f["file_id"].is_string() {
                    let message = format!("Missing required parameter: '{at}.file.file_data'.");
                    return Err(openai_bad(
                        &format!("{at}.file.file_data"),
                        message,
                        "missing_required_parameter",
                    ));
                }
                if let Some(d) = data.filter(|d| data_url(d).is_none()) {
                    let message = format!(
                        "Invalid file data: '{at}.file.file_data'. Expected a base64-encoded data URL, but got {}.",
                        quote(d)
                    );
                    return Err(openai_bad(
                        &format!("{at}.file.file_data"),
                        message,
                        "invalid_value",
                    ));
                }
            }
            other => {
                let message = format!(
                    "Invalid value: '{other}'. Supported values are: 'text', 'image_url', 'input_audio', 'refusal', 'audio', and 'file'."
                );
                return Err(openai_bad(&format!("{at}.type"), message, "invalid_value"));
            }
        }
    }
    Ok(())
}

/// Responses: the content of the message item at `input[i]` (a string, or `input_text`,
/// `input_image` and `input_file` parts; an assistant's `output_text` too).
pub fn responses(i: usize, content: &Value) -> Result<(), Rejection> {
    for (j, p) in content.as_array().into_iter().flatten().enumerate() {
        let at = format!("input[{i}].content[{j}]");
        match p["type"].as_str().unwrap_or("") {
            "input_text" | "output_text" | "refusal" => {}
            "input_image" => {
                let url = p["image_url"].as_str();
                if url.is_none() && !p["file_id"].is_string() {
                    let message = format!("Missing required parameter: '{at}.image_url'.");
                    return Err(openai_bad(
                        &format!("{at}.image_url"),
                        message,
                        "missing_required_parameter",
                    ));
                }
                if let Some(u) =
                    url.filter(|u| !is_http(u) && !data_url(u).is_some_and(|m| IMAGES.contains(&m)))
                {
                    let message = format!(
                        "Invalid image URL: '{at}.image_url'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got {}.",
                        quote(u)
                    );
                    return Err(openai_bad(
                        &format!("{at}.image_url"),
                        message,
                        "invalid_value",
                    ));
                }
                if let Some(d) = p["detail"]
                    .as_str()
                    .filter(|d| !matches!(*d, "low" | "high" | "auto"))
                {
                    let message = format!(
                        "Invalid value: '{d}'. Supported values are: 'low', 'high', and 'auto'."
                    );
                    return Err(openai_bad(
                        &format!("{at}.detail"),
                        message,
                        "invalid_value",
                    ));
                }
            }
            "input_file" => {
                let data = p["file_data"].as_str();
                let url = p["file_url"].as_str();
                if data.is_none() && url.is_none() && !p["file_id"].is_string() {
                    let message = format!("Missing required parameter: '{at}.file_data'.");
                    return Err(openai_bad(
                        &format!("{at}.file_data"),
                        message,
                        "missing_required_parameter",
                    ));
                }
                if let Some(d) = data.filter(|d| data_url(d).is_none()) {
                    let message = format!(
                        "Invalid file data: '{at}.file_data'. Expected a base64-encoded data URL, but got {}.",
                        quote(d)
                    );
                    return Err(openai_bad(
                        &format!("{at}.file_data"),
                        message,
                        "invalid_value",
                    ));
                }
                if let Some(u) = url.filter(|u| !is_http(u)) {
                    let message = format!("Invalid URL: '{at}.file_url': {}.", quote(u));
                    return Err(openai_bad(
                        &format!("{at}.file_url"),
                        message,
                        "invalid_value",
                    ));
                }
            }
            other => {
                let message = format!(
                    "Invalid value: '{other}'. Supported values are: 'input_text', 'input_image', 'output_text', 'refusal', 'input_file', 'computer_screenshot', and 'summary_text'."
                );
                return Err(openai_bad(&format!("{at}.type"), message, "invalid_value"));
            }
        }
    }
    Ok(())
}

/// Anthropic: what is wrong with user message `i`'s `image` and `document` blocks (the
/// others are the checker's).
pub fn anthropic(i: usize, blocks: &[Value]) -> Option<String> {
    for (j, b) in blocks.iter().enumerate() {
        let kind = b["type"].as_str().unwrap_or("");
        if !matches!(kind, "image" | "document") {
            continue;
        }
        let s = &b["source"];
        let at = format!("messages.{i}.content.{j}.{kind}.source");
        let media = s["media_type"].as_str().unwrap_or("");
        let problem = match (kind, s["type"].as_str().unwrap_or("")) {
            (_, "url") if !s["url"].as_str().is_some_and(is_http) => {
                Some(format!("{at}.url.url: Field required"))
            }
            (_, "url") => None,
            ("image", "base64") if !IMAGES.contains(&media) => Some(format!(
                "{at}.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"
            )),
            ("document", "base64") if media != "application/pdf" => Some(format!(
                "{at}.base64.media_type: Input should be 'application/pdf'"
            )),
            (_, "base64") if !s["data"].as_str().is_some_and(base64_ok) => {
                Some(format!("{at}.base64.data: invalid base64 data"))
            }
            (_, "base64") => None,
            ("document", "text") if media == "text/plain" && s["data"].is_string() => None,
            ("document", "content") if s["content"].is_array() || s["content"].is_string() => None,
            (_, "file") if s["file_id"].is_string() => None,
            (_, other) => Some(format!(
                "{at}: Input tag '{other}' found using 'type' does not match any of the expected tags: 'base64', 'url', 'file' (and for documents 'text', 'content')"
            )),
        };
        if problem.is_some() {
            return problem;
        }
    }
    None
}

/// Gemini: what is wrong with part `j` of content `i`: its `inlineData` or `fileData`
/// (either spelling).
pub fn gemini(i: usize, j: usize, part: &Value) -> Option<String> {
    use super::errors::field;
    let at = format!("contents[{i}].parts[{j}]");
    let inline = field(part, "inlineData");
    if !inline.is_null() {
        if !field(inline, "mimeType").is_string() {
            return Some(format!(
                "* GenerateContentRequest.{at}.inline_data.mime_type: mime_type is required"
            ));
        }
        let data = field(inline, "data").as_str().unwrap_or("");
        if !base64_ok(data) {
            return Some(format!(
                "Invalid value at '{at}.inline_data.data' (TYPE_BYTES), Base64 decoding failed for {}",
                quote(data)
            ));
        }
    }
    let file = field(part, "fileData");
    if !file.is_null() && !field(file, "fileUri").is_string() {
        return Some(format!(
            "* GenerateContentRequest.{at}.file_data.file_uri: file_uri is required"
        ));
    }
    None
}

/// Bedrock Converse: block `j` of message `i` if it is an `image` or a `document`.
pub fn bedrock(i: usize, j: usize, b: &Value) -> Option<Result<(), Refusal>> {
    let (kind, formats): (&str, &[&str]) = if b.get("image").is_some() {
        ("image", &["png", "jpeg", "gif", "webp"])
    } else if b.get("document").is_some() {
        (
            "document",
            &[
                "pdf", "csv", "doc", "docx", "xls", "xlsx", "html", "txt", "md",
            ],
        )
    } else {
        return None;
    };
    let v = &b[kind];
    let at = format!("messages.{i}.member.content.{j}.member.{kind}");
    let invalid = |m: String| {
        Some(Err((
            400,
            "ValidationException",
            format!("1 validation error detected: {m}"),
        )))
    };
    let format = v["format"].as_str().unwrap_or("");
    if !formats.contains(&format) {
        return invalid(format!(
            "Value '{format}' at '{at}.format' failed to satisfy constraint: Member must satisfy enum value set: [{}]",
            formats.join(", ")
        ));
    }
    if !v["source"]["bytes"].as_str().is_some_and(base64_ok) {
        return invalid(format!(
            "Value at '{at}.source' failed to satisfy constraint: Member must have bytes as base64"
        ));
    }
    if kind == "document" && !v["name"].as_str().is_some_and(document_name) {
        return invalid(format!(
            "Value at '{at}.name' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9\\s\\-\\(\\)\\[\\]]+ with no consecutive whitespace"
        ));
    }
    Some(Ok(()))
}

/// A Converse document name: letters, digits, single whitespace, hyphens, parentheses and
/// brackets.
fn document_name(n: &str) -> bool {
    !n.is_empty()
        && !n.contains("  ")
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || " -()[]".contains(c))
}

/// Ollama: a message's `images`, each base64 (Go's error for one that is not).
pub fn ollama(m: &Value) -> Result<(), Rejection> {
    let images = &m["images"];
    if images.is_null() {
        return Ok(());
    }
    let all_ok = images
        .as_array()
        .is_some_and(|a| a.iter().all(|i| i.as_str().is_some_and(base64_ok)));
    match all_ok {
        true => Ok(()),
        false => Err((400, json!({"error": "illegal base64 data in images"}))),
    }
}

/// The start of a value quoted in an error.
fn quote(s: &str) -> String {
    let head: String = s.chars().take(40).collect();
    format!("'{head}{}'", if head.len() < s.len() { "..." } else { "" })
}

#[cfg(test)]
mod tests;
