//! Outside MCP servers inside kiln: each server's tools join the registry as `SERVER__TOOL`,
//! require the capability `mcp:SERVER`, are validated against the server's `inputSchema`
//! before they are forwarded, and follow the server's `list_changed` like a script reload.
//!
//! Mounts speak the 2026-07-28 revision with servers that do (`server/discover`, then
//! `subscriptions/listen` for list changes) and the 2025-11-25 handshake with the rest, and run
//! on their own small runtime, so any caller (a CLI command, a test) can mount synchronously and
//! keep using the host from its own runtime.

use super::McpError;
use super::convert::result_from_mcp;
use crate::Host;
use crate::error::SourceLoc;
use crate::native::{NativeTool, native_source};
use crate::tool::{FailureKind, ToolFailure};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
    SubscriptionFilter,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, Peer, RoleClient};
use serde_json::Value;
use std::sync::{Arc, RwLock, Weak};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use super::spec::{MountSpec, SEPARATOR, Target};

/// Hears a server's `list_changed` and asks its supervisor for a remount of its tools.
#[derive(Clone)]
struct Listener {
    changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for Listener {
    async fn on_tool_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        let _ = self.changed.send(());
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("kiln", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

type Client = RunningService<RoleClient, Listener>;

/// The live connection to one server, or `None` while it is being restarted.
type Slot = Arc<RwLock<Option<Peer<RoleClient>>>>;

/// A line for the operator (reloads, restarts).
type Report = Arc<dyn Fn(String) + Send + Sync>;

/// Environment variables a started server does not inherit.
const PROVIDER_KEYS: [&str; 2] = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"];

/// The first wait before restarting a server that stopped; doubled up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A server that ran this long before stopping is restarted after [`FIRST_BACKOFF`] again.
const STABLE: Duration = Duration::from_secs(10);

/// The mounted servers, each watched by a supervisor that remounts its tools on
/// `list_changed` and restarts it (with backoff) when it stops. Dropping this stops them.
pub struct Mounts {
    runtime: Option<tokio::runtime::Runtime>,
    stop: CancellationToken,
    supervisors: Vec<tokio::task::JoinHandle<()>>,
}

impl Mounts {
    /// Connects to every server and adds its tools to `host`'s registry; a server that cannot
    /// be started is an error. Reloads and restarts are reported through `report`.
    pub fn start(
        host: &Arc<Host>,
        specs: Vec<MountSpec>,
        report: impl Fn(String) + Send + Sync + 'static,
    ) -> Result<Mounts, McpError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("kiln-mcp-mounts")
            .enable_all()
            .build()
            .map_err(|e| McpError::Session(e.to_string()))?;
        let connecting = async {
            let mut started = Vec::new();
            for spec in specs {
                let slot = Slot::default();
                let (changed, changes) = mpsc::unbounded_channel();
                let client = start_server(host, &spec, &slot, changed.clone()).await?;
                started.push(Server {
                    spec,
                    slot,
                    changed,
                    changes,
                    client,
                });
            }
            Ok::<_, McpError>(started)
        };
        // A thread of its own: the caller may itself be inside a runtime, where block_on panics.
        let started = std::thread::scope(|s| {
            s.spawn(|| runtime.block_on(connecting))
                .join()
                .unwrap_or_else(|_| Err(McpError::Session("mounting panicked".into())))
        });
        let started = match started {
            Ok(started) => started,
            Err(e) => {
                // Dropping a runtime inside another one panics; this is safe anywhere.
                runtime.shutdown_background();
                return Err(e);
            }
        };
        let report: Report = Arc::new(report);
        let stop = CancellationToken::new();
        let supervisors = started
            .into_iter()
            .map(|server| {
                let watch = Watch {
                    host: Arc::downgrade(host),
                    report: report.clone(),
                    stop: stop.clone(),
                };
                runtime.spawn(supervise(server, watch))
            })
            .collect();
        Ok(Mounts {
            runtime: Some(runtime),
            stop,
            supervisors,
        })
    }
}

impl Drop for Mounts {
    fn drop(&mut self) {
        self.stop.cancel();
        let supervisors = std::mem::take(&mut self.supervisors);
        if let Some(rt) = self.runtime.take() {
            // Let each supervisor close its server (a child sees stdin close and exits); in a
            // thread of its own, as in `start`.
            std::thread::scope(|s| {
                s.spawn(|| {
                    rt.block_on(async {
                        for task in supervisors {
                            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
                        }
                    })
                });
            });
            rt.shutdown_background();
        }
    }
}

/// One mounted server as its supervisor holds it.
struct Server {
    spec: MountSpec,
    slot: Slot,
    changed: mpsc::UnboundedSender<()>,
    changes: mpsc::UnboundedReceiver<()>,
    client: Client,
}

/// What every supervisor shares.
struct Watch {
    host: Weak<Host>,
    report: Report,
    stop: CancellationToken,
}

/// Connects, fills the slot and mounts the server's tools.
async fn start_server(
    host: &Host,
    spec: &MountSpec,
    slot: &Slot,
    changed: mpsc::UnboundedSender<()>,
) -> Result<Client, McpError> {
    let client = connect(
        spec,
        Listener {
            changed: changed.clone(),
        },
    )
    .await?;
    if client
        .peer_info()
        .is_some_and(|i| !i.protocol_version.has_initialize())
    {
        listen_for_changes(spec, &client, changed).await?;
    }
    if let Ok(mut s) = slot.write() {
        *s = Some(client.peer().clone());
    }
    install(host, spec, slot, client.peer()).await?;
    Ok(client)
}

/// Serves one server for as long as the mounts live: remounts on `list_changed`, restarts
/// with backoff when it stops (its tools stay listed; calls meanwhile get a clear error).
async fn supervise(mut server: Server, watch: Watch) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        let since = Instant::now();
        let ct = server.client.cancellation_token();
        let mut waiting = std::pin::pin!(server.client.waiting());
        let reason = loop {
            tokio::select! {
                () = watch.stop.cancelled() => {
                    ct.cancel();
                    let _ = waiting.await;
                    return;
                }
                Some(()) = server.changes.recv() => {
                    let Some(host) = watch.host.upgrade() else { return };
                    let peer = server.slot.read().ok().and_then(|p| p.clone());
                    let Some(peer) = peer else { continue };
                    match install(&host, &server.spec, &server.slot, &peer).await {
                        Ok(n) => (watch.report)(format!(
                            "reloaded MCP server {}: {n} tools (the server's list changed)",
                            server.spec.name
                        )),
                        Err(e) => (watch.report)(format!("kiln: {e}")),
                    }
                }
                r = &mut waiting => break r,
            }
        };
        if let Ok(mut s) = server.slot.write() {
            *s = None;
        }
        if since.elapsed() > STABLE {
            backoff = FIRST_BACKOFF;
        }
        let why = match reason {
            Ok(r) => format!("{r:?}"),
            Err(e) => e.to_string(),
        };
        // Restart, waiting longer after each failure, until it runs or the mounts are dropped.
        server.client = loop {
            (watch.report)(format!(
                "kiln: MCP server {} stopped ({why}); restarting in {} ms",
                server.spec.name,
                backoff.as_millis()
            ));
            tokio::select! {
                () = watch.stop.cancelled() => return,
                () = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
            let Some(host) = watch.host.upgrade() else {
                return;
            };
            match start_server(&host, &server.spec, &server.slot, server.changed.clone()).await {
                Ok(client) => break client,
                Err(e) => (watch.report)(format!("kiln: {e}")),
            }
        };
        (watch.report)(format!("restarted MCP server {}", server.spec.name));
    }
}

/// A 2026-07-28 server sends list changes only on a subscription: forward them to the
/// supervisor until the connection ends.
async fn listen_for_changes(
    spec: &MountSpec,
    client: &Client,
    changed: mpsc::UnboundedSender<()>,
) -> Result<(), McpError> {
    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    let mut sub = client
        .peer()
        .listen(filter)
        .await
        .map_err(|e| McpError::Server {
            server: spec.name.clone(),
            message: format!("subscriptions/listen failed: {e}"),
        })?;
    tokio::spawn(async move {
        while let Ok(Some(_)) = sub.next().await {
            if changed.send(()).is_err() {
                break;
            }
        }
    });
    Ok(())
}

/// Connects on the 2026-07-28 revision where the server speaks it; otherwise (an error to
/// `server/discover`, or a server that does not answer it) on the 2025-11-25 handshake, over a
/// fresh connection when the probe left the first one unusable.
async fn connect(spec: &MountSpec, listener: Listener) -> Result<Client, McpError> {
    let auto = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    };
    match connect_with(spec, listener.clone(), auto).await {
        Ok(client) => Ok(client),
        Err(_) => connect_with(spec, listener, ClientLifecycleMode::Initialize).await,
    }
}

async fn connect_with(
    spec: &MountSpec,
    listener: Listener,
    lifecycle: ClientLifecycleMode,
) -> Result<Client, McpError> {
    let failed = |m: String| McpError::Server {
        server: spec.name.clone(),
        message: m,
    };
    match &spec.target {
        Target::Command { program, args } => {
            let command = tokio::process::Command::new(program).configure(|c| {
                c.args(args);
                // kiln's own model keys are not the server's business.
                for key in PROVIDER_KEYS {
                    c.env_remove(key);
                }
            });
            let transport = TokioChildProcess::new(command)
                .map_err(|e| failed(format!("cannot start `{program}`: {e}")))?;
            listener
                .serve_with_lifecycle(transport, lifecycle)
                .await
                .map_err(|e| failed(format!("handshake failed: {e}")))
        }
        Target::Url { url, bearer_env } => {
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.clone());
            if let Some(var) = bearer_env {
                let token = std::env::var(var)
                    .ok()
                    .filter(|t| !t.is_empty())
                    .ok_or_else(|| failed(format!("bearer_env={var}: the variable is not set")))?;
                config = config.auth_header(token);
            }
            // rmcp builds its reqwest client inside; the TLS provider must be in place first.
            crate::egress::tls::ensure_provider();
            let transport = StreamableHttpClientTransport::from_config(config);
            listener
                .serve_with_lifecycle(transport, lifecycle)
                .await
                .map_err(|e| failed(format!("handshake with {url} failed: {e}")))
        }
    }
}

/// Lists the server's tools and swaps them into the host's registry; how many there are.
async fn install(
    host: &Host,
    spec: &MountSpec,
    slot: &Slot,
    peer: &Peer<RoleClient>,
) -> Result<usize, McpError> {
    let tools = peer.list_all_tools().await.map_err(|e| McpError::Server {
        server: spec.name.clone(),
        message: format!("tools/list failed: {e}"),
    })?;
    let natives: Vec<NativeTool> = tools.iter().map(|t| proxy(spec, slot, t)).collect();
    let count = natives.len();
    let mut file = native_source(natives);
    file.path = spec.source_path();
    host.set_source(file);
    Ok(count)
}

/// A registry tool forwarding validated arguments to the server's tool, through whichever
/// connection is live when it is called.
fn proxy(spec: &MountSpec, slot: &Slot, tool: &rmcp::model::Tool) -> NativeTool {
    let remote = tool.name.to_string();
    let (server, slot) = (spec.name.clone(), slot.clone());
    let forward = remote.clone();
    NativeTool::new(
        format!("{}{SEPARATOR}{remote}", spec.name),
        move |args, _ctx| {
            let peer = slot.read().ok().and_then(|p| p.clone());
            let (server, remote) = (server.clone(), forward.clone());
            async move {
                let Some(peer) = peer else {
                    return Err(ToolFailure::visible(
                        FailureKind::ToolError,
                        format!("MCP server \"{server}\" is not running (kiln is restarting it); try again shortly"),
                    ));
                };
                let mut req = CallToolRequestParams::new(remote.clone());
                if let Value::Object(map) = args {
                    req = req.with_arguments(map);
                }
                match peer.call_tool(req).await {
                    Ok(result) => result_from_mcp(result),
                    Err(e) => Err(ToolFailure::visible(
                        FailureKind::ToolError,
                        format!("MCP server \"{server}\" did not answer the call of {remote}: {e}"),
                    )),
                }
            }
        },
    )
    .description(tool.description.as_deref().unwrap_or_default())
    .input_schema(Value::Object((*tool.input_schema).clone()))
    .requires(&spec.capability())
    .located(SourceLoc::new(&spec.source_path(), 0, 0))
}
