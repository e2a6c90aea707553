//! What a server's last real start listed, kept in the workspace (`.kiln/mcp-tools/NAME.json`)
//! so commands that only read the project, which start no server, can still show its tools.

use kiln_registry::mount_spec::MountSpec;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where the record lives: the folder under the workspace's state directory.
const RECORDS: &str = "mcp-tools";

#[derive(Serialize, Deserialize)]
struct Record {
    /// The server as it was started; a record of another command or URL is not shown.
    target: String,
    tools: Vec<rmcp::model::Tool>,
}

/// Where a server's record is (server names are letters, digits, `-` and `_`).
fn path(workspace: &Path, spec: &MountSpec) -> PathBuf {
    workspace
        .join(kiln_core::defaults::STATE_DIR)
        .join(RECORDS)
        .join(format!("{}.json", spec.name))
}

fn target(spec: &MountSpec) -> String {
    format!("{:?}", spec.target)
}

/// Keeps what a started server listed; a record that cannot be written only loses the
/// listing of later reading commands (said in the log).
pub(super) fn save(workspace: &Path, spec: &MountSpec, tools: &[rmcp::model::Tool]) {
    let record = Record {
        target: target(spec),
        tools: tools.to_vec(),
    };
    let file = path(workspace, spec);
    let written = serde_json::to_vec(&record)
        .map_err(|e| e.to_string())
        .and_then(|bytes| {
            let dir = file.parent().unwrap_or(workspace);
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
            std::fs::write(&file, bytes).map_err(|e| e.to_string())
        });
    if let Err(e) = written {
        tracing::warn!(server = %spec.name, "cannot record its tools in {}: {e}", file.display());
    }
}

/// The tools the server listed when it last started as `spec` says, if that is recorded.
pub(super) fn load(workspace: &Path, spec: &MountSpec) -> Option<Vec<rmcp::model::Tool>> {
    let bytes = std::fs::read(path(workspace, spec)).ok()?;
    let record: Record = serde_json::from_slice(&bytes).ok()?;
    (record.target == target(spec)).then_some(record.tools)
}
