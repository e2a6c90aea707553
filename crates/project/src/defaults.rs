//! The defaults of what a project may set, stated once: `kiln.toml`, the flags and their
//! `--help`, and the libraries' own `Default`s read them from here. Those the crates below this
//! one need too are stated in `kiln_core::defaults` and re-stated here.

use std::time::Duration;

/// The scripts folder loaded when none is named (relative to the project root).
pub const SCRIPTS_DIR: &str = "scripts";
/// The folder file host functions are rooted at.
pub const WORKSPACE: &str = ".";
/// The folder in the workspace holding kiln's own state (database, workspace id, tokens).
pub const STATE_DIR: &str = kiln_core::defaults::STATE_DIR;
/// The project file's name.
pub const FILE_NAME: &str = "kiln.toml";

/// `kiln serve`'s address.
pub const SERVE_BIND: &str = "127.0.0.1:8787";
/// `kiln mcp --http`'s address.
pub const MCP_HTTP_BIND: &str = "127.0.0.1:8765";
/// Where Restate calls a worker.
pub const RESTATE_BIND: &str = "127.0.0.1:9080";

/// Runs at once (`kiln serve`).
pub const MAX_RUNS: usize = 64;
/// Runs waiting for a slot before requests get 429.
pub const QUEUE: usize = 256;
/// Retry-After seconds sent with 429.
pub const RETRY_AFTER: u64 = 1;
/// Largest request body in bytes.
pub const MAX_BODY: usize = 1 << 20;
/// Deadline of each run.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(300);
/// How long a call waits for a person to approve it.
pub const APPROVAL_TIMEOUT: Duration = Duration::from_secs(120);
/// How long one model request may take.
pub const REQUEST_TIMEOUT: Duration = kiln_core::defaults::REQUEST_TIMEOUT;
/// Retries of a failed model request (429, 5xx, timeouts).
pub const MAX_RETRIES: u32 = kiln_core::defaults::MAX_RETRIES;
/// How long running requests get to finish after SIGTERM.
pub const GRACE: Duration = Duration::from_secs(30);
/// How long a request may wait in the queue before 503.
pub const QUEUE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a client may take to send a request's headers (and idle keep-alive).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send a request's body.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Open connections at most.
pub const MAX_CONNECTIONS: usize = 1024;
/// MCP sessions open at once at most (`kiln mcp --http`).
pub const MAX_SESSIONS: usize = 256;
/// How long an MCP session may go without a request before it is closed.
pub const SESSION_IDLE: Duration = Duration::from_secs(300);
/// How long a streamed model reply may go without sending anything (`kiln ask`).
pub const IDLE_TIMEOUT: Duration = kiln_core::defaults::IDLE_TIMEOUT;
/// How long one streamed model reply may take in all (`kiln ask`).
pub const STREAM_TIMEOUT: Duration = kiln_core::defaults::STREAM_TIMEOUT;
