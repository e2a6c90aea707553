//! The web console: its pages (`ui`) and the API they read, each item shown only to whom may
//! see it; and the page a project serves beside it (`site`, `--static DIR`).

pub(crate) mod health;
pub(crate) mod inbox;
pub(crate) mod listing;
pub(crate) mod site;
pub(crate) mod timeline;
pub(crate) mod tools_api;
pub(crate) mod ui;
