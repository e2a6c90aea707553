//! Content blocks a tool may return instead of one value: text, images, audio and embedded
//! resources, in MCP's shapes. A result made of them is the JSON object `{"$content": [...]}`
//! (every door passes that value on unchanged); kiln checks it when the tool returns, MCP
//! serves the blocks as they are, and a model reads them as text ([`render_text`]).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The one key of a content result.
pub const CONTENT_KEY: &str = "$content";

/// One content block (MCP's `ContentBlock` minus links and annotations).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
#[non_exhaustive]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// The bytes, base64 (standard alphabet, padded).
        data: String,
        /// `image/...`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// Audio, base64-encoded.
    Audio {
        /// The bytes, base64 (standard alphabet, padded).
        data: String,
        /// `audio/...`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A resource embedded whole: its text or its bytes.
    Resource {
        /// The resource.
        resource: Resource,
    },
}

/// An embedded resource: a URI with exactly one of `text` or `blob`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resource {
    /// Where the resource lives (`scheme:...`).
    pub uri: String,
    /// Its media type.
    #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its text, for a text resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Its bytes, base64, for a binary resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// MCP's `_meta` of the contents (MCP Apps' `ui`: a page's CSP and permissions).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

impl Content {
    /// About how many bytes the block is as JSON (its strings; the keys around them), to
    /// bound a result before its blocks are copied.
    pub fn approx_len(&self) -> usize {
        let fields: usize = match self {
            Content::Text { text } => text.len(),
            Content::Image { data, mime_type } | Content::Audio { data, mime_type } => {
                data.len() + mime_type.len()
            }
            Content::Resource { resource } => {
                let opt = |s: &Option<String>| s.as_ref().map_or(0, String::len);
                resource.uri.len()
                    + opt(&resource.mime_type)
                    + opt(&resource.text)
                    + opt(&resource.blob)
            }
        };
        fields + 32
    }

    /// A text block.
    pub fn text(text: impl Into<String>) -> Content {
        Content::Text { text: text.into() }
    }

    /// An image block (`data` base64, `mime_type` `image/...`).
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Content {
        Content::Image {
            data: data.into(),
            mime_type: mime_type.into(),
        }
    }

    /// An audio block (`data` base64, `mime_type` `audio/...`).
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Content {
        Content::Audio {
            data: data.into(),
            mime_type: mime_type.into(),
        }
    }

    /// An embedded text resource.
    pub fn resource_text(uri: impl Into<String>, text: impl Into<String>, mime: &str) -> Content {
        Content::Resource {
            resource: Resource {
                uri: uri.into(),
                mime_type: Some(mime.to_string()),
                text: Some(text.into()),
                blob: None,
                meta: None,
            },
        }
    }

    /// An embedded binary resource (`blob` base64).
    pub fn resource_blob(uri: impl Into<String>, blob: impl Into<String>, mime: &str) -> Content {
        Content::Resource {
            resource: Resource {
                uri: uri.into(),
                mime_type: Some(mime.to_string()),
                text: None,
                blob: Some(blob.into()),
                meta: None,
            },
        }
    }

    /// The block's type as MCP names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Content::Text { .. } => "text",
            Content::Image { .. } => "image",
            Content::Audio { .. } => "audio",
            Content::Resource { .. } => "resource",
        }
    }

    /// What is wrong with the block, if anything: base64 that does not decode, a media type
    /// of the wrong family, a resource without a URI scheme or with not exactly one body.
    pub fn check(&self) -> Result<(), String> {
        match self {
            Content::Text { .. } => Ok(()),
            Content::Image { data, mime_type } => {
                check_mime(mime_type, Some("image"))?;
                check_base64("data", data)
            }
            Content::Audio { data, mime_type } => {
                check_mime(mime_type, Some("audio"))?;
                check_base64("data", data)
            }
            Content::Resource { resource: r } => {
                if !has_scheme(&r.uri) {
                    return Err(format!(
                        "resource uri \"{}\" is not a URI (it needs a scheme, as in \"file:///a.txt\")",
                        r.uri
                    ));
                }
                if let Some(mime) = &r.mime_type {
                    check_mime(mime, None)?;
                }
                match (&r.text, &r.blob) {
                    (Some(_), None) => Ok(()),
                    (None, Some(blob)) => check_base64("blob", blob),
                    _ => Err("a resource has exactly one of text or blob".into()),
                }
            }
        }
    }
}

/// The JSON value of a result made of `blocks`.
pub fn to_result(blocks: &[Content]) -> Value {
    json!({ CONTENT_KEY: blocks })
}

/// The blocks of a content result: `None` for any other value, `Err` naming what is wrong with
/// a value that claims to be one (`$content[1]: ...`).
pub fn from_result(value: &Value) -> Option<Result<Vec<Content>, String>> {
    let map = value.as_object()?;
    let blocks = map.get(CONTENT_KEY)?;
    Some(parse(map.len(), blocks))
}

fn parse(keys: usize, blocks: &Value) -> Result<Vec<Content>, String> {
    if keys != 1 {
        return Err(format!(
            "a content result has only the key \"{CONTENT_KEY}\""
        ));
    }
    let Some(items) = blocks.as_array() else {
        return Err(format!(
            "{CONTENT_KEY}: a list of content blocks is required"
        ));
    };
    if items.is_empty() {
        return Err(format!(
            "{CONTENT_KEY}: at least one content block is required"
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let block: Content = serde_json::from_value(item.clone())
                .map_err(|e| format!("{CONTENT_KEY}[{i}]: {e}"))?;
            block
                .check()
                .map_err(|e| format!("{CONTENT_KEY}[{i}] ({}): {e}", block.kind()))?;
            Ok(block)
        })
        .collect()
}

/// The blocks as text for a model that takes tool results as text: text as is, media and
/// binary resources as a one-line note, text resources with their text.
pub fn render_text(blocks: &[Content]) -> String {
    let lines: Vec<String> = blocks
        .iter()
        .map(|b| match b {
            Content::Text { text } => text.clone(),
            Content::Image { data, mime_type } | Content::Audio { data, mime_type } => {
                format!("[{} {mime_type}, {} bytes]", b.kind(), decoded_len(data))
            }
            Content::Resource { resource: r } => {
                let mime = r.mime_type.as_deref().unwrap_or("unknown type");
                match (&r.text, &r.blob) {
                    (Some(text), _) => format!("[resource {} ({mime})]\n{text}", r.uri),
                    (None, Some(blob)) => {
                        format!("[resource {} ({mime}), {} bytes]", r.uri, decoded_len(blob))
                    }
                    (None, None) => format!("[resource {} ({mime})]", r.uri),
                }
            }
        })
        .collect();
    lines.join("\n")
}

fn has_scheme(uri: &str) -> bool {
    let Some((scheme, _)) = uri.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// A media type `type/subtype` (of `family` when given).
fn check_mime(mime: &str, family: Option<&str>) -> Result<(), String> {
    let essence = mime.split(';').next().unwrap_or("").trim();
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    let valid = essence
        .split_once('/')
        .is_some_and(|(t, s)| token(t) && token(s));
    if !valid {
        return Err(format!(
            "mime type \"{mime}\" is not a media type such as \"{}/png\"",
            family.unwrap_or("image")
        ));
    }
    match family {
        Some(f) if !essence.to_ascii_lowercase().starts_with(&format!("{f}/")) => Err(format!(
            "mime type \"{mime}\" is not an {f} type (\"{f}/...\")"
        )),
        _ => Ok(()),
    }
}

/// Standard base64 with padding (what MCP carries), checked without decoding.
fn check_base64(field: &str, data: &str) -> Result<(), String> {
    let bytes = data.as_bytes();
    let body = bytes.len() - bytes.iter().rev().take_while(|&&b| b == b'=').count();
    let alphabet = |b: &u8| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/';
    if let Some(at) = bytes[..body].iter().position(|b| !alphabet(b)) {
        return Err(format!(
            "{field} is not base64: byte {at} is {:?}",
            char::from(bytes[at])
        ));
    }
    if !bytes.len().is_multiple_of(4) || bytes.len() - body > 2 {
        return Err(format!(
            "{field} is not base64: {} characters with {} padding (a padded multiple of 4 is required)",
            bytes.len(),
            bytes.len() - body
        ));
    }
    Ok(())
}

fn decoded_len(data: &str) -> usize {
    let pad = data.bytes().rev().take_while(|&b| b == b'=').count();
    (data.len() / 4 * 3).saturating_sub(pad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_round_trips_and_renders_as_text() {
        let blocks = vec![
            Content::text("chart:"),
            Content::image("iVBORw0KGgo=", "image/png"),
            Content::resource_text("test://r", "{\"a\":1}", "application/json"),
        ];
        let value = to_result(&blocks);
        assert_eq!(value["$content"][1]["mimeType"], "image/png");
        assert_eq!(from_result(&value), Some(Ok(blocks.clone())));
        assert_eq!(
            render_text(&blocks),
            "chart:\n[image image/png, 8 bytes]\n[resource test://r (application/json)]\n{\"a\":1}"
        );
        assert_eq!(from_result(&json!({"content": []})), None);
    }

    #[test]
    fn bad_blocks_say_where_and_what() {
        let bad = |v: Value| from_result(&v).expect("a content result").unwrap_err();
        let img = |data: &str, mime: &str| json!({"$content": [{"type": "image", "data": data, "mimeType": mime}]});
        assert!(
            bad(img("AAAA", "audio/wav"))
                .contains("$content[0] (image): mime type \"audio/wav\" is not an image type")
        );
        assert!(bad(img("AA*A", "image/png")).contains("data is not base64: byte 2"));
        assert!(bad(img("AAA", "image/png")).contains("padded multiple of 4"));
        assert!(bad(img("AAAA", "png")).contains("is not a media type"));
        assert!(
            bad(json!({"$content": [{"type": "video"}]}))
                .contains("$content[0]: unknown variant `video`")
        );
        assert!(bad(json!({"$content": [{"type": "text"}]})).contains("missing field `text`"));
        assert!(bad(json!({"$content": [], })).contains("at least one"));
        assert!(bad(json!({"$content": "x", "more": 1})).contains("only the key"));
        let res = |r: Value| json!({"$content": [{"type": "resource", "resource": r}]});
        assert!(bad(res(json!({"uri": "nowhere", "text": "x"}))).contains("needs a scheme"));
        assert!(
            bad(res(json!({"uri": "a:b", "text": "x", "blob": "AAAA"}))).contains("exactly one")
        );
        assert!(bad(res(json!({"uri": "a:b"}))).contains("exactly one"));
    }
}
