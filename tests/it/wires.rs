//! The model APIs kiln speaks, held to kiln mock and to the vendors' own SDKs, and the agent loop over them.

pub(crate) mod attachments;
pub(crate) mod bedrock;
pub(crate) mod conformance;
pub(crate) mod fallback;
pub(crate) mod gemini;
pub(crate) mod mock_filters;
pub(crate) mod peers;
pub(crate) mod peers_bedrock;
pub(crate) mod peers_gemini;
pub(crate) mod peers_responses;
pub(crate) mod peers_serve_responses;
pub(crate) mod responses;
pub(crate) mod responses_support;
pub(crate) mod text_calls;
pub(crate) mod tool_choice;
