//! The neutral model types every layer speaks ([`message`]), the [`LocalModel`] seam for a model
//! run in this process, attachments and provider errors; wire formats convert them per API.

pub mod attachment;
pub mod content;
pub mod error;
pub mod local;
pub mod message;

pub use attachment::{Attachment, AttachmentError, AttachmentKind, AttachmentSource};
pub use error::ProviderError;
pub use local::{LocalModel, LocalReply};
pub use message::*;
