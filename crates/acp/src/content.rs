//! A prompt's content blocks as kiln's prompt: text, embedded resources and resource links as
//! text, images (and embedded image or PDF blobs) as attachments. Audio is refused: the
//! agent's `promptCapabilities.audio` is false.

use crate::error::RpcError;
use crate::params;
use kiln_core::model::Attachment;
use serde_json::{Map, Value};

/// A prompt read: its text and its attachments.
#[derive(Debug, Default)]
pub struct Prompt {
    /// The text, the blocks' in order.
    pub text: String,
    /// Images and files.
    pub attachments: Vec<Attachment>,
}

/// Reads `prompt` (the request's `prompt` array).
pub fn read(blocks: &[Value]) -> Result<Prompt, RpcError> {
    let mut parts: Vec<String> = Vec::new();
    let mut attachments = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        let path = format!("prompt[{i}]");
        let b = params::item(block, "prompt", i)?;
        match params::string(b, &path, "type")? {
            "text" => parts.push(params::string(b, &path, "text")?.to_string()),
            "image" => attachments.push(attachment(b, &path, "data", "mimeType")?),
            "resource_link" => {
                let uri = params::string(b, &path, "uri")?;
                let name = params::opt_string(b, &path, "name")?.unwrap_or(uri);
                parts.push(format!("[{name}]({uri})"));
            }
            "resource" => {
                let rpath = format!("{path}.resource");
                let r = b
                    .get("resource")
                    .and_then(Value::as_object)
                    .ok_or_else(|| RpcError::invalid_params(&rpath, "required (an object)"))?;
                let uri = params::string(r, &rpath, "uri")?;
                match params::opt_string(r, &rpath, "text")? {
                    Some(text) => {
                        parts.push(format!("<context uri=\"{uri}\">\n{text}\n</context>"))
                    }
                    None => attachments.push(attachment(r, &rpath, "blob", "mimeType")?),
                }
            }
            "audio" => {
                return Err(RpcError::invalid_params(
                    &format!("{path}.type"),
                    "audio is not taken (promptCapabilities.audio is false)",
                ));
            }
            other => {
                return Err(RpcError::invalid_params(
                    &format!("{path}.type"),
                    &format!("unknown content type \"{other}\""),
                ));
            }
        }
    }
    Ok(Prompt {
        text: parts.join("\n"),
        attachments,
    })
}

/// base64 `data` of type `mime` (fields of `b` at `path`) as an attachment.
fn attachment(
    b: &Map<String, Value>,
    path: &str,
    data: &str,
    mime: &str,
) -> Result<Attachment, RpcError> {
    let bytes = params::string(b, path, data)?;
    let media_type = params::string(b, path, mime)?;
    Attachment::from_data_url(&format!("data:{media_type};base64,{bytes}"))
        .map_err(|e| RpcError::invalid_params(&params::join(path, data), &e.to_string()))
}
