//! What people watch: the web console in a real browser and its API, and the traces kiln
//! exports, read back from Phoenix.

pub(crate) mod api;
pub(crate) mod console_apps;
pub(crate) mod console_browser;
pub(crate) mod console_pages;
pub(crate) mod traces;
