//! Images and files a user message carries ([`Attachment`]), and reading one from a data URL.

use base64::Engine;
use serde::{Deserialize, Serialize};

/// An image or a file attached to a user message; each wire renders it its own way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// An image or another file.
    pub kind: AttachmentKind,
    /// Its media type (`image/png`, `application/pdf`).
    pub media_type: String,
    /// Its bytes, or where the model's service fetches them.
    pub source: AttachmentSource,
    /// The file's name, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
}

/// What an attachment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttachmentKind {
    /// A picture.
    Image,
    /// Any other file (a PDF...).
    File,
}

/// Where an attachment's bytes are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AttachmentSource {
    /// In the message, base64 (standard alphabet, padded).
    Base64 {
        /// The base64 text.
        data: String,
    },
    /// At a URL the model's service fetches.
    Url {
        /// The URL.
        url: String,
    },
}

/// Why a data URL is not an attachment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttachmentError {
    /// Not `data:<media type>;base64,<data>`.
    #[error("not a base64 data URL (data:<media type>;base64,<data>): {0}")]
    NotDataUrl(String),
    /// The data is not valid base64.
    #[error("the data URL's data is not valid base64: {0}")]
    BadBase64(String),
}

impl Attachment {
    /// Reads `data:<media type>;base64,<data>`: an image for `image/*`, else a file.
    pub fn from_data_url(url: &str) -> Result<Attachment, AttachmentError> {
        let bad = || AttachmentError::NotDataUrl(crate::model::error::quote(url));
        let rest = url.strip_prefix("data:").ok_or_else(bad)?;
        let (head, data) = rest.split_once(',').ok_or_else(bad)?;
        let media_type = head.strip_suffix(";base64").ok_or_else(bad)?;
        let media_type = media_type.split(';').next().unwrap_or_default().trim();
        if !media_type.contains('/') {
            return Err(bad());
        }
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| AttachmentError::BadBase64(e.to_string()))?;
        Ok(Attachment::base64(media_type, data.into()))
    }

    /// A file the model's service fetches from `url` (`http(s)://`), typed by its extension
    /// ([`media_type_of`]); `None` for another URL or extension.
    pub fn from_url(url: &str) -> Option<Attachment> {
        let path = url.split(['?', '#']).next().unwrap_or_default();
        let http = url.starts_with("https://") || url.starts_with("http://");
        let mut a = Attachment::base64(media_type_of(path).filter(|_| http)?, String::new());
        a.source = AttachmentSource::Url { url: url.into() };
        Some(a)
    }

    /// `bytes` of `media_type` in the message: an image for `image/*`, else a file.
    pub fn from_bytes(media_type: &str, bytes: &[u8]) -> Attachment {
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        Attachment::base64(media_type, data)
    }

    fn base64(media_type: &str, data: String) -> Attachment {
        let media_type = media_type.to_ascii_lowercase();
        let kind = match media_type.starts_with("image/") {
            true => AttachmentKind::Image,
            false => AttachmentKind::File,
        };
        Attachment {
            kind,
            media_type,
            source: AttachmentSource::Base64 { data },
            filename: None,
        }
    }

    /// Its bytes as a data URL, or its URL.
    pub fn url(&self) -> String {
        match &self.source {
            AttachmentSource::Base64 { data } => format!("data:{};base64,{data}", self.media_type),
            AttachmentSource::Url { url } => url.clone(),
        }
    }
}

/// The media type of a file kiln attaches, by its name's extension: png, jpg/jpeg, gif, webp,
/// pdf.
pub fn media_type_of(name: &str) -> Option<&'static str> {
    let (_, ext) = name.rsplit_once('.')?;
    Some(match ext.to_ascii_lowercase().as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        _ => return None,
    })
}
