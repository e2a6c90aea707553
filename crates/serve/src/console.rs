//! The web console: its pages (`ui`) and the API they read, each item shown only to whom may
//! see it.

pub(crate) mod health;
pub(crate) mod inbox;
pub(crate) mod listing;
pub(crate) mod timeline;
pub(crate) mod tools_api;
pub(crate) mod ui;
