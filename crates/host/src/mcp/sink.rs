//! The seam between mounted servers and the host: where a server's tools go (a source of the
//! registry, like a script file), and what a server process starts in. The host implements
//! it; the supervisors hold it weakly, so a dropped host stops them.

use super::state::StateCell;
use kiln_registry::LoadedFile;
use kiln_registry::mount_spec::MountSpec;
use std::path::PathBuf;

/// What a mount may do to the host it feeds.
pub trait SourceSink: Send + Sync {
    /// Puts a server's tools into the registry (replacing the source of the same path).
    fn set_source(&self, file: LoadedFile);
    /// Takes the source `path` (a stopped server's tools) out of the registry.
    fn remove_source(&self, path: &str);
    /// The folder a server process starts in (the workspace).
    fn workspace(&self) -> PathBuf;
    /// Lists a server mounted from the command line among the host's servers.
    fn mounted(&self, spec: MountSpec, state: StateCell);
    /// Who approves what a mounted server asks kiln (a form to fill): the host's approver.
    fn approver(&self) -> super::client_asks::Approve;
}
