//! What `kiln.toml` holds: every key optional, so a key left out falls back to the flag's
//! default, and a key written is told apart from a default. Unknown keys are errors.

use crate::checked;
use crate::seconds::Seconds;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Scripts folders loaded together (`--scripts`).
    pub scripts: Option<Vec<PathBuf>>,
    /// The folder file host functions are rooted at (`--workspace`).
    pub workspace: Option<PathBuf>,
    /// Whether the built-in stdlib tools load (`--no-stdlib` is `stdlib = false`).
    pub stdlib: Option<bool>,
    /// The database: run log, sessions, store (`--db`, `KILN_DB`): an SQLite file, or a
    /// `postgres://` URL (without its password).
    pub db: Option<PathBuf>,
    /// Capabilities granted, and those needing approval.
    #[serde(default)]
    pub grants: GrantSettings,
    /// How scripts reach the network (`--resolve`, `--net-proxy`).
    #[serde(default)]
    pub network: NetworkSettings,
    /// MCP servers mounted as `NAME__TOOL`: `NAME = "SERVER"` as `--mcp NAME=SERVER` takes it.
    #[serde(default)]
    pub mounts: BTreeMap<String, String>,
    /// Where each provider is reached, and which variable holds its key.
    #[serde(default)]
    pub providers: Providers,
    /// `kiln serve`'s options.
    #[serde(default)]
    pub serve: ServeSettings,
    /// `kiln mcp`'s options.
    #[serde(default)]
    pub mcp: McpSettings,
    /// The worker processes code-mode programs run in.
    #[serde(default)]
    pub programs: ProgramSettings,
}

/// `[programs]`: `--max-programs` and `--program-memory`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramSettings {
    /// Programs running at once, each in a worker process.
    pub max: Option<u16>,
    /// Memory (address space) of each program's worker, in MiB.
    pub memory_mib: Option<u64>,
}

/// `[grants]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantSettings {
    /// Capabilities granted where a command's `--caps` is not given (`call`, `run`, `repl`,
    /// `mcp`; the ceiling of `serve` and of an agent's own grants in `ask`).
    #[serde(default, deserialize_with = "checked::capabilities")]
    pub caps: Option<Vec<String>>,
    /// Granted capabilities that need a person's approval (`--needs-approval`).
    #[serde(default, deserialize_with = "checked::capabilities")]
    pub needs_approval: Option<Vec<String>>,
}

/// `[network]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSettings {
    /// `NAME:ADDR` pairs http_get/http_post resolve NAME to (`--resolve`).
    #[serde(default, deserialize_with = "checked::resolve")]
    pub resolve: Option<Vec<String>>,
    /// Let http_get/http_post use HTTP_PROXY and friends (`--net-proxy`, `KILN_NET_PROXY`).
    pub proxy: Option<bool>,
    /// Speak HTTP/1.1 only, never HTTP/2 (`--http1`).
    pub http1: Option<bool>,
}

/// `[providers.NAME]` for each provider kiln reaches over HTTP.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Providers {
    /// Anthropic.
    pub anthropic: Option<ProviderSettings>,
    /// OpenAI and compatible servers.
    pub openai: Option<ProviderSettings>,
    /// Ollama.
    pub ollama: Option<ProviderSettings>,
    /// OpenAI's Responses API.
    #[serde(rename = "openai-responses")]
    pub openai_responses: Option<ProviderSettings>,
    /// Azure OpenAI, Chat Completions.
    pub azure: Option<ProviderSettings>,
    /// Azure OpenAI, Responses.
    #[serde(rename = "azure-responses")]
    pub azure_responses: Option<ProviderSettings>,
    /// Google Gemini.
    pub gemini: Option<ProviderSettings>,
    /// Amazon Bedrock's Converse API (`api_key_env` names the bearer-key variable).
    pub bedrock: Option<ProviderSettings>,
}

impl Providers {
    /// Each provider set, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &ProviderSettings)> {
        [
            ("anthropic", &self.anthropic),
            ("openai", &self.openai),
            ("ollama", &self.ollama),
            ("openai-responses", &self.openai_responses),
            ("azure", &self.azure),
            ("azure-responses", &self.azure_responses),
            ("gemini", &self.gemini),
            ("bedrock", &self.bedrock),
        ]
        .into_iter()
        .filter_map(|(name, s)| s.as_ref().map(|s| (name, s)))
    }
}

/// One provider's settings: never a key itself, only the variable that holds it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSettings {
    /// Where requests go (an agent's `.base_url` and `--base-url` come first).
    pub base_url: Option<String>,
    /// The environment variable holding the API key (an agent's `.api_key_env` comes first).
    pub api_key_env: Option<String>,
}

/// How `kiln serve` writes its log lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// `[serve]`: `kiln serve`'s flags of the same names (`kiln serve --help` says more).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeSettings {
    /// Address to listen on.
    pub bind: Option<SocketAddr>,
    /// Bearer tokens file (JSON).
    pub tokens: Option<PathBuf>,
    /// OAuth authorization server whose access tokens are taken too.
    pub auth_issuer: Option<String>,
    /// The audience those tokens must name.
    pub auth_audience: Option<String>,
    /// Runs at once.
    pub max_runs: Option<usize>,
    /// Runs waiting for a slot before 429.
    pub queue: Option<usize>,
    /// Retry-After seconds sent with 429.
    pub retry_after: Option<u64>,
    /// Largest request body in bytes.
    pub max_body: Option<usize>,
    /// Deadline of each run (0: none).
    pub run_timeout: Option<Seconds>,
    /// How long a call waits for approval before it is denied.
    pub approval_timeout: Option<Seconds>,
    /// How long one model request may take.
    pub request_timeout: Option<Seconds>,
    /// How long running requests get to finish after SIGTERM.
    pub grace: Option<Seconds>,
    /// Forget runs that ended longer ago than this.
    pub log_retention: Option<Seconds>,
    /// How long a request may wait in the queue before 503.
    pub queue_timeout: Option<Seconds>,
    /// How long a client may take to send a request's headers.
    pub header_timeout: Option<Seconds>,
    /// How long a client may take to send a request's body.
    pub body_timeout: Option<Seconds>,
    /// Origins whose pages may also call the API.
    pub allow_origins: Option<Vec<String>>,
    /// Open connections at most.
    pub max_connections: Option<usize>,
    /// Log lines as text or JSON.
    pub log_format: Option<LogFormat>,
}

/// `[mcp]`: `kiln mcp`'s flags of the same names (`kiln mcp --help` says more).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSettings {
    /// Serve streamable HTTP at this address instead of stdio.
    pub http: Option<String>,
    /// The variable holding the bearer token HTTP clients must send.
    pub token_env: Option<String>,
    /// OAuth authorization server whose access tokens are taken too.
    pub auth_issuer: Option<String>,
    /// The audience those tokens must name.
    pub auth_audience: Option<String>,
    /// Also offer each agent as a tool ask_AGENT.
    pub agents: Option<bool>,
    /// Offer run_code and search_tools instead of every tool.
    pub code_mode: Option<bool>,
    /// Tools (names, or prefixes ending in `*`) listed only once a session's search_tools
    /// finds them.
    pub defer: Option<Vec<String>>,
    /// Origins whose pages may also call the API.
    pub allow_origins: Option<Vec<String>>,
    /// How long a client may take to send a request's headers.
    pub header_timeout: Option<Seconds>,
    /// How long a client may take to send a request's body.
    pub body_timeout: Option<Seconds>,
    /// MCP sessions open at once at most.
    pub max_sessions: Option<usize>,
    /// How long a session may go without a request before it is closed.
    pub session_idle: Option<Seconds>,
    /// Open connections at most.
    pub max_connections: Option<usize>,
}

impl Settings {
    /// Makes the file's relative paths relative to `root`, the file's folder.
    pub(crate) fn anchor(&mut self, root: &Path) {
        let at = |p: &mut PathBuf| {
            // A URL (`db = "postgres://…"`) is no path.
            if p.is_relative() && !p.to_str().is_some_and(|t| t.contains("://")) {
                *p = root.join(&*p);
            }
        };
        self.scripts.iter_mut().flatten().for_each(at);
        self.workspace.iter_mut().for_each(at);
        self.db.iter_mut().for_each(at);
        self.serve.tokens.iter_mut().for_each(at);
    }
}
