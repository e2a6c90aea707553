//! The MCP servers a host knows: those scripts declare with `mcp_server(...)`, started and
//! stopped as the declarations change, and those mounted with `--mcp`, listed with their state.

use super::mount::{MountSpec, Mounts, Report, ServerState, StateCell};
use super::sink::SourceSink;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

/// How long loading waits for a declared server's first start, so its tools are there for
/// the command that loaded it; a slower server keeps starting in the background.
const FIRST_START_WAIT: Duration = Duration::from_secs(20);

/// One server as listings show it.
#[derive(Debug, Clone)]
pub struct ServerStatus {
    /// The server's name (its tools are `NAME__TOOL`).
    pub name: String,
    /// The command line or URL.
    pub target: String,
    /// Where it was declared (`path:line:col`), or `--mcp`.
    pub origin: String,
    /// How it is doing.
    pub state: ServerState,
}

struct Declared {
    spec: MountSpec,
    /// The registry source its tools form, fixed at start (a moved declaration keeps it).
    source: String,
    state: StateCell,
    mounts: Mounts,
}

/// The host's MCP servers (see the module doc).
#[derive(Default)]
pub struct HostServers {
    declared: Mutex<Vec<Declared>>,
    flagged: Mutex<Vec<(MountSpec, StateCell)>>,
    report: Arc<RwLock<Option<Report>>>,
}

impl HostServers {
    /// Where lines about declared servers go (restarts, list changes); `tracing` by default.
    pub fn set_report(&self, report: Report) {
        if let Ok(mut r) = self.report.write() {
            *r = Some(report);
        }
    }

    fn reporter(&self) -> Report {
        let cell = self.report.clone();
        Arc::new(move |line: String| {
            let r = cell.read().ok().and_then(|r| r.clone());
            match r {
                Some(r) => r(line),
                None => tracing::info!("{line}"),
            }
        })
    }

    /// Records a `--mcp` server's state for listings.
    pub fn add_flagged(&self, spec: MountSpec, state: StateCell) {
        if let Ok(mut f) = self.flagged.lock() {
            f.push((spec, state));
        }
    }

    /// Starts the declared servers that are new or changed and stops those no longer
    /// declared (their tools leave the registry). One line per server started or stopped.
    pub fn sync(&self, host: &Arc<dyn SourceSink>, wanted: Vec<MountSpec>) -> Vec<String> {
        let Ok(mut declared) = self.declared.lock() else {
            return Vec::new();
        };
        let mut lines = Vec::new();
        let (keep, gone): (Vec<Declared>, Vec<Declared>) = std::mem::take(&mut *declared)
            .into_iter()
            .partition(|d| wanted.iter().any(|w| w.same_server(&d.spec)));
        let mut changed = Vec::new();
        for old in gone {
            let name = old.spec.name.clone();
            // Stopped before its tools go, so a late remount cannot bring them back.
            drop(old.mounts);
            host.remove_source(&old.source);
            if wanted.iter().any(|w| w.name == name) {
                changed.push(name);
            } else {
                lines.push(format!("stopped MCP server {name} (no longer declared)"));
            }
        }
        *declared = keep;
        for spec in wanted {
            if declared.iter().any(|d| d.spec.same_server(&spec)) {
                // Same server; a moved declaration only changes where it is shown as declared.
                if let Some(d) = declared.iter_mut().find(|d| d.spec.same_server(&spec)) {
                    d.spec.declared = spec.declared;
                }
                continue;
            }
            let state: StateCell = Arc::new(RwLock::new(ServerState::Starting));
            match Mounts::launch(
                host,
                spec.clone(),
                state.clone(),
                self.reporter(),
                FIRST_START_WAIT,
            ) {
                Ok(mounts) => {
                    let now = state
                        .read()
                        .map(|s| s.clone())
                        .unwrap_or(ServerState::Starting);
                    let what = if changed.contains(&spec.name) {
                        format!(
                            "restarted MCP server {} (its declaration changed)",
                            spec.name
                        )
                    } else {
                        format!("started MCP server {}", spec.name)
                    };
                    lines.push(format!("{what}: {now}"));
                    declared.push(Declared {
                        source: spec.source_path(),
                        spec,
                        state,
                        mounts,
                    });
                }
                Err(e) => lines.push(format!("kiln: MCP server {}: {e}", spec.name)),
            }
        }
        lines
    }

    /// Every server with its state: declared ones first, in declaration order.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        let status = |spec: &MountSpec, state: &StateCell| ServerStatus {
            name: spec.name.clone(),
            target: spec.target_text(),
            origin: match &spec.declared {
                Some(at) => at.to_string(),
                None => "--mcp".into(),
            },
            state: state
                .read()
                .map(|s| s.clone())
                .unwrap_or(ServerState::Starting),
        };
        let mut out: Vec<ServerStatus> = match self.declared.lock() {
            Ok(d) => d.iter().map(|d| status(&d.spec, &d.state)).collect(),
            Err(_) => Vec::new(),
        };
        if let Ok(f) = self.flagged.lock() {
            out.extend(f.iter().map(|(spec, state)| status(spec, state)));
        }
        out
    }
}
