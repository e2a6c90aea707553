//! The doors: one module per API a client speaks, each turning its requests into runs through
//! `launch` and the walls every door shares (`crate::walls`).

pub(crate) mod a2a;
pub(crate) mod ag_ui;
pub(crate) mod chat;
pub(crate) mod live;
pub(crate) mod mcp_tasks;
pub(crate) mod responses;
pub(crate) mod runs;
pub(crate) mod ui_chat;
