//! What chat front ends see of a run: tools' progress and events live at every door, the
//! AG-UI door and the AI SDK's UI message stream door, driven by their official clients.

pub(crate) mod ag_ui;
pub(crate) mod example_page;
pub(crate) mod tool_notes;
pub(crate) mod ui_chat;
