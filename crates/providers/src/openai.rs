//! OpenAI's wires: Chat Completions (`chat`, which OpenAI-compatible servers speak too), the
//! Responses API (`responses`), and Azure OpenAI (`azure`), which routes either of them.

pub mod azure;
pub mod chat;
pub mod responses;
