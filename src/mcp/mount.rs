//! Outside MCP servers inside kiln: each server's tools join the registry as `SERVER__TOOL`,
//! require the capability `mcp:SERVER`, are validated against the server's `inputSchema`
//! before they are forwarded, and follow the server's `list_changed` like a script reload.
//!
//! Mounts speak the 2025-11-25 handshake (what nearly every server in the field speaks) and
//! run on their own small runtime, so any caller (a CLI command, a test) can mount
//! synchronously and keep using the host from its own runtime.

use super::McpError;
use super::convert::result_from_mcp;
use crate::Host;
use crate::error::SourceLoc;
use crate::native::{NativeTool, native_source};
use crate::tool::{FailureKind, ToolFailure};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Separates the server's name from its tool's in the registry (`fs__read_file`).
pub const SEPARATOR: &str = "__";

/// Where a mounted server lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A program kiln starts and talks to over stdio.
    Command {
        /// The program.
        program: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// A streamable HTTP endpoint, with the environment variable holding its bearer token.
    Url {
        /// The endpoint.
        url: String,
        /// `bearer_env=VAR`: send `Authorization: Bearer $VAR`.
        bearer_env: Option<String>,
    },
}

/// One server to mount: `NAME=COMMAND [ARGS...]` or `NAME=http://HOST:PORT/mcp [bearer_env=VAR]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountSpec {
    /// The server's name: tools become `NAME__TOOL`, needing `mcp:NAME`.
    pub name: String,
    /// Where it lives.
    pub target: Target,
}

impl MountSpec {
    /// Parses `NAME=COMMAND ARGS...` (split on whitespace) or `NAME=URL [bearer_env=VAR]`.
    pub fn parse(spec: &str) -> Result<Self, McpError> {
        let bad = |reason: &str| McpError::BadSpec {
            spec: spec.to_string(),
            reason: reason.to_string(),
        };
        let (name, rest) = spec
            .split_once('=')
            .ok_or_else(|| bad("expected NAME=COMMAND or NAME=URL"))?;
        let name_ok = !name.is_empty()
            && !name.contains(SEPARATOR)
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !name_ok {
            return Err(bad(
                "the name must be letters, digits, - or _ (and not contain __)",
            ));
        }
        let rest = rest.trim();
        let target = if rest.starts_with("http://") || rest.starts_with("https://") {
            let mut words = rest.split_whitespace();
            let url = words.next().unwrap_or_default().to_string();
            let bearer_env = match (words.next(), words.next()) {
                (None, _) => None,
                (Some(w), None) => match w.strip_prefix("bearer_env=") {
                    Some(var) if !var.is_empty() => Some(var.to_string()),
                    _ => return Err(bad("after the URL only bearer_env=VAR may follow")),
                },
                _ => return Err(bad("after the URL only bearer_env=VAR may follow")),
            };
            Target::Url { url, bearer_env }
        } else {
            let mut words = rest.split_whitespace().map(str::to_string);
            let program = words.next().ok_or_else(|| bad("no command given"))?;
            Target::Command {
                program,
                args: words.collect(),
            }
        };
        Ok(MountSpec {
            name: name.to_string(),
            target,
        })
    }

    /// The capability a caller needs to use this server's tools.
    pub fn capability(&self) -> String {
        format!("mcp:{}", self.name)
    }

    fn source_path(&self) -> String {
        format!("<mcp:{}>", self.name)
    }
}

/// Hears a server's `list_changed` and asks for a remount of its tools.
struct Listener {
    server: usize,
    changed: mpsc::UnboundedSender<usize>,
}

impl ClientHandler for Listener {
    async fn on_tool_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        let _ = self.changed.send(self.server);
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

/// The mounted servers; their tools leave the registry's view only with the host, and the
/// servers are stopped when this is dropped.
pub struct Mounts {
    runtime: Option<tokio::runtime::Runtime>,
    clients: Vec<Arc<Client>>,
}

impl Mounts {
    /// Connects to every server, adds its tools to `host`'s registry and keeps them current
    /// as servers announce changes (each reload is reported through `report`).
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
        let (changed, mut changes) = mpsc::unbounded_channel();
        // A thread of its own: the caller may itself be inside a runtime, where block_on panics.
        let connecting = async {
            let mut clients = Vec::new();
            for (i, spec) in specs.iter().enumerate() {
                let listener = Listener {
                    server: i,
                    changed: changed.clone(),
                };
                let client = Arc::new(connect(spec, listener).await?);
                install(host, spec, &client).await?;
                clients.push(client);
            }
            Ok::<_, McpError>(clients)
        };
        let clients = std::thread::scope(|s| {
            s.spawn(|| runtime.block_on(connecting))
                .join()
                .unwrap_or_else(|_| Err(McpError::Session("mounting panicked".into())))
        })?;
        let (weak, watched) = (Arc::downgrade(host), clients.clone());
        runtime.spawn(async move {
            while let Some(i) = changes.recv().await {
                let (Some(host), Some(client), Some(spec)) =
                    (weak.upgrade(), watched.get(i), specs.get(i))
                else {
                    return;
                };
                match install(&host, spec, client).await {
                    Ok(n) => report(format!(
                        "reloaded MCP server {}: {n} tools (the server's list changed)",
                        spec.name
                    )),
                    Err(e) => report(format!("kiln: {e}")),
                }
            }
        });
        Ok(Mounts {
            runtime: Some(runtime),
            clients,
        })
    }
}

impl Drop for Mounts {
    fn drop(&mut self) {
        let clients = std::mem::take(&mut self.clients);
        if let Some(rt) = self.runtime.take() {
            // Closing stdin lets each child exit; again a thread of its own (see `start`).
            std::thread::scope(|s| {
                s.spawn(|| {
                    rt.block_on(async {
                        for c in clients {
                            if let Ok(c) = Arc::try_unwrap(c) {
                                let _ = c.cancel().await;
                            }
                        }
                    })
                });
            });
            rt.shutdown_background();
        }
    }
}

async fn connect(spec: &MountSpec, listener: Listener) -> Result<Client, McpError> {
    let failed = |m: String| McpError::Server {
        server: spec.name.clone(),
        message: m,
    };
    match &spec.target {
        Target::Command { program, args } => {
            let command = tokio::process::Command::new(program).configure(|c| {
                c.args(args);
            });
            let transport = TokioChildProcess::new(command)
                .map_err(|e| failed(format!("cannot start `{program}`: {e}")))?;
            listener
                .serve(transport)
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
            let transport = StreamableHttpClientTransport::from_config(config);
            listener
                .serve(transport)
                .await
                .map_err(|e| failed(format!("handshake with {url} failed: {e}")))
        }
    }
}

/// Lists the server's tools and swaps them into the host's registry; how many there are.
async fn install(host: &Host, spec: &MountSpec, client: &Client) -> Result<usize, McpError> {
    let tools = client
        .list_all_tools()
        .await
        .map_err(|e| McpError::Server {
            server: spec.name.clone(),
            message: format!("tools/list failed: {e}"),
        })?;
    let peer = client.peer().clone();
    let natives: Vec<NativeTool> = tools.iter().map(|t| proxy(spec, &peer, t)).collect();
    let count = natives.len();
    let mut file = native_source(natives);
    file.path = spec.source_path();
    host.set_source(file);
    Ok(count)
}

/// A registry tool forwarding validated arguments to the server's tool.
fn proxy(spec: &MountSpec, peer: &Peer<RoleClient>, tool: &rmcp::model::Tool) -> NativeTool {
    let remote = tool.name.to_string();
    let (server, peer) = (spec.name.clone(), peer.clone());
    let forward = remote.clone();
    NativeTool::new(
        format!("{}{SEPARATOR}{remote}", spec.name),
        move |args, _ctx| {
            let (peer, server, remote) = (peer.clone(), server.clone(), forward.clone());
            async move {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_commands_and_urls_and_refuse_bad_names() {
        let s = MountSpec::parse("py=python3 server.py --quiet").expect("command");
        assert_eq!(s.name, "py");
        assert_eq!(
            s.target,
            Target::Command {
                program: "python3".into(),
                args: vec!["server.py".into(), "--quiet".into()]
            }
        );
        assert_eq!(s.capability(), "mcp:py");
        let u = MountSpec::parse("gh=http://127.0.0.1:3000/mcp bearer_env=GH").expect("url");
        assert_eq!(
            u.target,
            Target::Url {
                url: "http://127.0.0.1:3000/mcp".into(),
                bearer_env: Some("GH".into())
            }
        );
        for bad in [
            "noequals",
            "=cmd",
            "a__b=cmd",
            "a b=cmd",
            "x=",
            "x=http://127.0.0.1/mcp token",
        ] {
            let e = MountSpec::parse(bad).expect_err(bad).to_string();
            assert!(e.contains(bad), "{e}");
        }
    }
}
