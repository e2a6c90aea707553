//! Agents as their users shape them: skills they load when a task needs them, runs a
//! person steers while they run, and many tools deferred to a search (kiln's own, or the
//! provider's).

pub(crate) mod compact;
pub(crate) mod compact_now;
pub(crate) mod defer;
pub(crate) mod mounted;
pub(crate) mod native_search;
pub(crate) mod skills;
pub(crate) mod steer;
