//! The defaults that crates below kiln-project need too, stated once: kiln-project's
//! `defaults` re-states them for the flags and `kiln.toml`, and the providers, the agent loop,
//! the Restate worker and storage read them from here.

use std::time::Duration;

/// How long one model request may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// Retries of a failed model request (429, 5xx, timeouts).
pub const MAX_RETRIES: u32 = 3;
/// How long a streamed model reply may go without sending anything.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long one streamed model reply may take in all.
pub const STREAM_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// The folder in the workspace holding kiln's own state (the database, the workspace's id,
/// MCP servers' OAuth tokens).
pub const STATE_DIR: &str = ".kiln";
