//! The web console: its pages (`ui`) and the API they read, each item shown only to whom may
//! see it; the page a project serves beside it (`site`, `--static DIR`); and the console as
//! an MCP Apps host (`apps_api`, and `sandbox`: the origin its apps' pages run on).

pub(crate) mod apps_api;
pub(crate) mod health;
pub(crate) mod inbox;
pub(crate) mod listing;
pub mod sandbox;
pub(crate) mod site;
pub(crate) mod timeline;
pub(crate) mod tools_api;
pub(crate) mod ui;
