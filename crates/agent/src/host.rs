//! What the loop needs from the host it runs in, and nothing more: the snapshot a turn pins, an
//! agent by name, and a fresh call context. The host implements it; tests give a fake.

use kiln_core::agent_spec::AgentSpec;
use kiln_core::capability::Grants;
use kiln_core::context::CallContext;
use kiln_core::error::HostError;
use kiln_core::registry::Registry;
use std::sync::Arc;

/// The host as an agent run sees it.
pub trait RunHost: Send + Sync {
    /// The current registry snapshot (each turn pins one).
    fn registry(&self) -> Arc<Registry>;
    /// The agent `name`, or an error naming the agents there are.
    fn agent(&self, name: &str) -> Result<Arc<AgentSpec>, HostError>;
    /// A call context with these grants, the host's services and the current snapshot.
    fn context(&self, grants: Grants) -> CallContext;
    /// Where providers are reached when neither a run nor its agent says (none by default).
    fn provider_defaults(&self) -> crate::connect::ProviderDefaults {
        crate::connect::ProviderDefaults::default()
    }
}
