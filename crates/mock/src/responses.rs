//! OpenAI's Responses API as the mock serves it: each request checked as the service would
//! (`check`), and the scenario's turns rendered as Response objects or their event stream
//! (`render`); `conformance` holds them to the recorded exchanges.

pub mod check;
#[cfg(test)]
mod conformance;
pub mod render;
