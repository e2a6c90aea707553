//! Outside MCP servers inside kiln: each server's tools join the registry as `SERVER__TOOL`,
//! require the capability `mcp:SERVER`, are validated against the server's `inputSchema`
//! before they are forwarded, and follow the server's `list_changed` like a script reload.
//!
//! Mounts speak the 2026-07-28 revision with servers that do (`server/discover`, then
//! `subscriptions/listen` for list changes) and the 2025-11-25 handshake with the rest, and run
//! on their own small runtime, so any caller (a CLI command, a test) can mount synchronously and
//! keep using the host from its own runtime.

use super::McpError;
use super::proxy::{Slot, install};
use super::sink::SourceSink;
use super::state::set_state;
pub use super::state::{ServerState, StateCell};
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProtocolVersion, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient};
use std::sync::{Arc, RwLock, Weak};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

pub use kiln_registry::mount_spec::{MountSpec, SEPARATOR, Target};

/// Hears a server's `list_changed` (of tools, resources or prompts) and asks its supervisor
/// for a remount of what it offers.
#[derive(Clone)]
struct Listener {
    changed: mpsc::UnboundedSender<()>,
    server: String,
    approve: super::client_asks::Approve,
}

impl ClientHandler for Listener {
    async fn on_tool_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        let _ = self.changed.send(());
    }

    async fn on_resource_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        let _ = self.changed.send(());
    }

    async fn on_prompt_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        let _ = self.changed.send(());
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _cx: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        Ok(super::client_asks::form(
            &self.server,
            &request,
            &self.approve,
        ))
    }

    fn get_info(&self) -> ClientConfig {
        // Forms: kiln fills them with their defaults when a person approves.
        let mut caps = ClientCapabilities::default();
        caps.elicitation = Some(rmcp::model::ElicitationCapability::default());
        // MCP Apps: a server may offer its pages (kiln's console shows them) and its page-only
        // tools (kiln's agents keep those from the model).
        let apps = kiln_registry::served::apps::EXTENSION.to_string();
        let mime = serde_json::json!({ "mimeTypes": [kiln_registry::served::apps::MIME] });
        let settings = serde_json::from_value(mime).unwrap_or_default();
        caps.extensions = Some([(apps, settings)].into_iter().collect());
        ClientConfig::new(caps, Implementation::new("kiln", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

type Client = RunningService<RoleClient, Listener>;

/// A line for the operator (reloads, restarts).
pub type Report = Arc<dyn Fn(String) + Send + Sync>;

/// The variable a started server gets, naming the mount it serves: a kiln started so does not
/// mount its project file's `[mounts]` again.
pub const MOUNTED_AS_VAR: &str = "KILN_MOUNTED_AS";

/// Environment variables a started server does not inherit.
const PROVIDER_KEYS: [&str; 4] = [
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
];

/// The first wait before restarting a server that stopped; doubled up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long a server may take to answer the handshake before the attempt counts as failed.
const HANDSHAKE: Duration = Duration::from_secs(60);
/// A server that ran this long before stopping is restarted after [`FIRST_BACKOFF`] again.
const STABLE: Duration = Duration::from_secs(10);

/// The mounted servers, each watched by a supervisor that remounts its tools on
/// `list_changed` and restarts it (with backoff) when it stops. Dropping this stops them.
pub struct Mounts {
    runtime: Option<tokio::runtime::Runtime>,
    stop: CancellationToken,
    supervisors: Vec<tokio::task::JoinHandle<()>>,
}

fn mount_runtime() -> Result<tokio::runtime::Runtime, McpError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("kiln-mcp-mounts")
        .enable_all()
        .build()
        .map_err(|e| McpError::Session(e.to_string()))
}

impl Mounts {
    /// Starts one server a script declared, without failing: a server that cannot start is
    /// shown as failed and tried again with backoff. Waits up to `wait` for the first attempt
    /// so its tools are there for the caller.
    pub fn launch(
        host: &Arc<dyn SourceSink>,
        spec: MountSpec,
        state: StateCell,
        report: Report,
        wait: Duration,
    ) -> Result<Mounts, McpError> {
        let runtime = mount_runtime()?;
        let stop = CancellationToken::new();
        let (first, started) = oneshot::channel();
        let server = Server::new(spec, state);
        let watch = Watch {
            host: Arc::downgrade(host),
            report,
            stop: stop.clone(),
        };
        let task = runtime.spawn(supervise(server, None, watch, Some(first)));
        // Waited for on a thread of its own: the caller may be inside a runtime.
        std::thread::scope(|s| {
            s.spawn(|| {
                runtime.block_on(async {
                    let _ = tokio::time::timeout(wait, started).await;
                })
            });
        });
        Ok(Mounts {
            runtime: Some(runtime),
            stop,
            supervisors: vec![task],
        })
    }

    /// Connects to every server and adds its tools to `host`'s registry; a server that cannot
    /// be started is an error. Reloads and restarts are reported through `report`.
    pub fn start(
        host: &Arc<dyn SourceSink>,
        specs: Vec<MountSpec>,
        report: impl Fn(String) + Send + Sync + 'static,
    ) -> Result<Mounts, McpError> {
        let runtime = mount_runtime()?;
        let connecting = async {
            let mut started = Vec::new();
            for spec in specs {
                let state = StateCell::new(RwLock::new(ServerState::Starting));
                let server = Server::new(spec, state);
                let client = start_server(host.as_ref(), &server).await?;
                started.push((server, client));
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
            .map(|(server, client)| {
                host.mounted(server.spec.clone(), server.state.clone());
                let watch = Watch {
                    host: Arc::downgrade(host),
                    report: report.clone(),
                    stop: stop.clone(),
                };
                runtime.spawn(supervise(server, Some(client), watch, None))
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
    state: StateCell,
}

impl Server {
    /// A server not connected yet, its state kept in `state`.
    fn new(spec: MountSpec, state: StateCell) -> Server {
        let (changed, changes) = mpsc::unbounded_channel();
        Server {
            spec,
            slot: Slot::default(),
            changed,
            changes,
            state,
        }
    }
}

/// What every supervisor shares.
struct Watch {
    host: Weak<dyn SourceSink>,
    report: Report,
    stop: CancellationToken,
}

/// Connects, fills the slot and mounts the server's tools.
async fn start_server(host: &dyn SourceSink, server: &Server) -> Result<Client, McpError> {
    let listener = Listener {
        changed: server.changed.clone(),
        server: server.spec.name.clone(),
        approve: host.approver(),
    };
    let client = tokio::time::timeout(HANDSHAKE, connect(host, &server.spec, listener))
        .await
        .map_err(|_| McpError::Server {
            server: server.spec.name.clone(),
            message: format!(
                "no answer to the handshake within {} s",
                HANDSHAKE.as_secs()
            ),
        })??;
    // A server that offers no list changes still mounts; one that offers them but cannot
    // be subscribed to mounts too, without live updates (said in the log).
    let subscribe = client.peer_info().is_some_and(|i| {
        let caps = &i.capabilities;
        let changes = [
            caps.tools.as_ref().and_then(|t| t.list_changed),
            caps.resources.as_ref().and_then(|r| r.list_changed),
            caps.prompts.as_ref().and_then(|p| p.list_changed),
        ];
        !i.protocol_version.has_initialize() && changes.iter().any(|c| c.unwrap_or(false))
    });
    if subscribe
        && let Err(e) = listen_for_changes(&server.spec, &client, server.changed.clone()).await
    {
        tracing::warn!(server = %server.spec.name, "{e}; its tool list is not watched");
    }
    if let Ok(mut s) = server.slot.write() {
        *s = Some(client.peer().clone());
    }
    match install(host, &server.spec, &server.slot, client.peer()).await {
        Ok(tools) => {
            set_state(&server.state, ServerState::Running { tools });
            Ok(client)
        }
        Err(e) => {
            // The connection is dropped with the error: calls must not use it.
            if let Ok(mut s) = server.slot.write() {
                *s = None;
            }
            Err(e)
        }
    }
}

/// Waits `backoff` unless the mounts are dropped first (false then).
async fn pause(stop: &CancellationToken, backoff: Duration) -> bool {
    tokio::select! {
        () = stop.cancelled() => false,
        () = tokio::time::sleep(backoff) => true,
    }
}

/// Serves one server for as long as the mounts live: connects when it is not connected,
/// remounts on `list_changed`, restarts with backoff when it stops or cannot start (its tools
/// stay listed; calls meanwhile get a clear error). `first` hears the first attempt's end.
async fn supervise(
    mut server: Server,
    mut client: Option<Client>,
    watch: Watch,
    mut first: Option<oneshot::Sender<()>>,
) {
    let mut backoff = FIRST_BACKOFF;
    let mut restarting = false;
    loop {
        let running = match client.take() {
            Some(c) => c,
            None => match attempt(&server, &watch, &mut first).await {
                None => return,
                Some(Ok(c)) => {
                    if restarting {
                        (watch.report)(format!("restarted MCP server {}", server.spec.name));
                    }
                    c
                }
                Some(Err(e)) => {
                    (watch.report)(format!(
                        "kiln: {e}; trying again in {} ms",
                        backoff.as_millis()
                    ));
                    if !pause(&watch.stop, backoff).await {
                        return;
                    }
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    restarting = true;
                    continue;
                }
            },
        };
        let since = Instant::now();
        let ct = running.cancellation_token();
        let mut waiting = std::pin::pin!(running.waiting());
        let reason = loop {
            tokio::select! {
                () = watch.stop.cancelled() => {
                    ct.cancel();
                    let _ = waiting.await;
                    return;
                }
                Some(()) = server.changes.recv() => match remount(&server, &watch).await {
                    Remount::Done => {}
                    Remount::HostGone => return,
                    Remount::Stopping => {
                        ct.cancel();
                        let _ = waiting.await;
                        return;
                    }
                },
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
        set_state(
            &server.state,
            ServerState::Restarting {
                reason: why.clone(),
            },
        );
        (watch.report)(format!(
            "kiln: MCP server {} stopped ({why}); restarting in {} ms",
            server.spec.name,
            backoff.as_millis()
        ));
        if !pause(&watch.stop, backoff).await {
            return;
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
        restarting = true;
    }
}

/// One start of the server; `None` when the host is gone or kiln is stopping. The state is
/// settled (failed) before the first attempt is announced as over.
async fn attempt(
    server: &Server,
    watch: &Watch,
    first: &mut Option<oneshot::Sender<()>>,
) -> Option<Result<Client, McpError>> {
    let host = watch.host.upgrade()?;
    let attempt = tokio::select! {
        () = watch.stop.cancelled() => return None,
        r = start_server(host.as_ref(), server) => r,
    };
    drop(host);
    if let Err(e) = &attempt {
        let reason = e.to_string();
        set_state(&server.state, ServerState::Failed { reason });
    }
    if let Some(f) = first.take() {
        let _ = f.send(());
    }
    Some(attempt)
}

/// How a remount after `list_changed` ended.
enum Remount {
    /// Remounted, or reported why not.
    Done,
    /// The host was dropped: supervising ends.
    HostGone,
    /// kiln is stopping the server.
    Stopping,
}

/// Lists the server's tools again and puts them in the registry.
async fn remount(server: &Server, watch: &Watch) -> Remount {
    let Some(host) = watch.host.upgrade() else {
        return Remount::HostGone;
    };
    let peer = server.slot.read().ok().and_then(|p| p.clone());
    let Some(peer) = peer else {
        return Remount::Done;
    };
    // A remount that is still listing when the server is stopped must not put the tools of a
    // server that is gone back into the registry.
    let remount = install(host.as_ref(), &server.spec, &server.slot, &peer);
    let installed = tokio::select! {
        biased;
        () = watch.stop.cancelled() => return Remount::Stopping,
        r = remount => r,
    };
    match installed {
        Ok(n) => {
            set_state(&server.state, ServerState::Running { tools: n });
            (watch.report)(format!(
                "reloaded MCP server {}: {n} tools (the server's lists changed)",
                server.spec.name
            ))
        }
        Err(e) => (watch.report)(format!("kiln: {e}")),
    }
    Remount::Done
}

/// A 2026-07-28 server sends list changes only on a subscription: forward them to the
/// supervisor until the connection ends.
async fn listen_for_changes(
    spec: &MountSpec,
    client: &Client,
    changed: mpsc::UnboundedSender<()>,
) -> Result<(), McpError> {
    let filter = SubscriptionFilter::builder()
        .tools_list_changed()
        .resources_list_changed()
        .prompts_list_changed()
        .build();
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
async fn connect(
    host: &dyn SourceSink,
    spec: &MountSpec,
    listener: Listener,
) -> Result<Client, McpError> {
    let auto = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    };
    match connect_with(host, spec, listener.clone(), auto).await {
        Ok(client) => Ok(client),
        // The server answered, and wants authorization: another handshake would not help.
        Err(e @ McpError::Unauthorized { .. }) => Err(e),
        Err(_) => connect_with(host, spec, listener, ClientLifecycleMode::Initialize).await,
    }
}

/// Starts or reaches the server. A started one runs in the workspace when a script declared
/// it, without the provider keys unless the declaration names them.
async fn connect_with(
    host: &dyn SourceSink,
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
                // kiln's own model keys are not the server's business, unless named.
                for key in PROVIDER_KEYS {
                    if !spec.env.iter().any(|k| k == key) {
                        c.env_remove(key);
                    }
                }
                if spec.declared.is_some() {
                    c.current_dir(host.workspace());
                }
                // A kiln started as a mount does not mount its project file's `[mounts]`
                // again: it would start itself over and over.
                c.env(MOUNTED_AS_VAR, &spec.name);
            });
            let transport = TokioChildProcess::new(command)
                .map_err(|e| failed(format!("cannot start `{program}`: {e}")))?;
            listener
                .serve_with_lifecycle(transport, lifecycle)
                .await
                .map_err(|e| failed(format!("handshake failed: {e}")))
        }
        Target::Url {
            url,
            bearer_env,
            oauth,
        } => {
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.clone());
            // rmcp builds its reqwest client inside; the TLS provider must be in place first.
            kiln_egress::tls::ensure_provider();
            let done = match oauth {
                Some(o) if o.client_credentials => {
                    let token = super::oauth::machine_token(spec).await?;
                    let transport =
                        StreamableHttpClientTransport::from_config(config.auth_header(token));
                    listener.serve_with_lifecycle(transport, lifecycle).await
                }
                Some(_) => {
                    let manager = super::oauth::authorized(spec, &host.workspace()).await?;
                    let http = kiln_egress::tls::client_builder()
                        .build()
                        .map_err(|e| failed(format!("an HTTP client: {e}")))?;
                    let client = rmcp::transport::AuthClient::new(http, manager);
                    let transport = StreamableHttpClientTransport::with_client(client, config);
                    listener.serve_with_lifecycle(transport, lifecycle).await
                }
                None => {
                    if let Some(var) = bearer_env {
                        let token = std::env::var(var)
                            .ok()
                            .filter(|t| !t.is_empty())
                            .ok_or_else(|| {
                                failed(format!("bearer_env={var}: the variable is not set"))
                            })?;
                        config = config.auth_header(token);
                    }
                    let transport = StreamableHttpClientTransport::from_config(config);
                    listener.serve_with_lifecycle(transport, lifecycle).await
                }
            };
            done.map_err(|e| match e.auth_challenge() {
                Some(challenge) => super::oauth::challenged_in(spec, &host.workspace(), challenge),
                None => failed(format!("handshake with {url} failed: {e}")),
            })
        }
    }
}
