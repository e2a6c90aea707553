//! What keeps code and callers in their place: the sandbox, limits, grants and egress, actors apart, hostile scripts and servers, a full disk.

pub(crate) mod actors_apart;
pub(crate) mod adversarial;
pub(crate) mod db_health;
pub(crate) mod egress;
pub(crate) mod full_disk;
pub(crate) mod grants;
pub(crate) mod hostile;
pub(crate) mod limits;
pub(crate) mod memory;
pub(crate) mod policies;
pub(crate) mod programs_apart;
pub(crate) mod project_keys;
pub(crate) mod reach_hints;
pub(crate) mod read_only_mounts;
pub(crate) mod sandbox;
