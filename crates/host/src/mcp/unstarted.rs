//! A server listed without being started (commands that only read the project): its tools as
//! its last start recorded them (`super::recorded`), each failing if called.

use super::proxy::proxy;
use super::recorded::load;
use super::sink::SourceSink;
use super::state::{ServerState, Slot};
use kiln_registry::mount_spec::MountSpec;
use kiln_registry::native::native_source;
use std::sync::{Arc, RwLock};

/// Lists a server without starting it: its tools as its last start recorded them (calls
/// fail: it is not running), and the server as not started. How many tools were recorded.
pub fn show_unstarted(host: &dyn SourceSink, spec: MountSpec) -> Option<usize> {
    let tools = load(&host.workspace(), &spec);
    let recorded = tools.as_ref().map(Vec::len);
    if let Some(tools) = tools {
        let slot: Slot = Arc::new(RwLock::new(None));
        let natives = tools.iter().map(|t| proxy(&spec, &slot, t)).collect();
        let mut file = native_source(natives);
        file.path = spec.source_path();
        file.origin = kiln_registry::Origin::Mcp;
        host.set_source(file);
    }
    let state = Arc::new(RwLock::new(ServerState::NotStarted { recorded }));
    host.mounted(spec, state);
    recorded
}
