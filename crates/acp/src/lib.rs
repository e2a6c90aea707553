//! `kiln acp AGENT`: a kiln agent as an [Agent Client Protocol](https://agentclientprotocol.com)
//! (ACP, version 1) agent over stdio, so editors (Zed, JetBrains, Neovim) run it. Sessions are
//! kiln's (kept in its database, loaded back with their conversation replayed); a prompt's run
//! streams as `session/update`s; kiln's approvals become `session/request_permission`;
//! `session/cancel` cancels the run; the client's files and terminal, where it lends them, are
//! what the tools' `read_file`/`write_file` and `run_in_terminal` reach (under their grants).

mod content;
pub mod error;
mod lent;
mod methods;
mod params;
mod permission;
mod prompt;
mod serve;
mod session;
mod state;
mod updates;
mod wire;

pub use error::{AcpError, RpcError};
pub use methods::PROTOCOL_VERSION;
pub use serve::{MAX_LINE, serve, serve_stdio};
pub use state::Options;
