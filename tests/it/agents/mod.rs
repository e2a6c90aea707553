//! Agents as their users shape them: skills they load when a task needs them, and runs a
//! person steers while they run.

pub(crate) mod compact;
pub(crate) mod defer;
pub(crate) mod skills;
pub(crate) mod steer;
