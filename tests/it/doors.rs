//! kiln serve's doors, each with every wall: chat completions, the Responses API, /v1/runs, the console, tokens and OAuth, the Open Responses suite, traces.

pub(crate) mod door_errors;
pub(crate) mod http_doors;
pub(crate) mod openresponses;
pub(crate) mod responses_deleted;
pub(crate) mod restart_runs;
pub(crate) mod run_table_bytes;
pub(crate) mod same_site;
pub(crate) mod serve;
pub(crate) mod serve_oauth;
pub(crate) mod serve_ops;
pub(crate) mod serve_refusals;
pub(crate) mod serve_responses;
pub(crate) mod serve_responses_schema;
pub(crate) mod serve_tokens;
pub(crate) mod transcript_cap;
