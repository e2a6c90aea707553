//! The commented `kiln.toml` that `kiln init` writes: every key, with its default.

use crate::defaults as d;
use crate::seconds::Seconds;

/// The text of a new project's `kiln.toml`: every key commented out at its default (or with
/// an example where there is none), so the file as written changes nothing.
pub fn template() -> String {
    let s = |t| Seconds(t);
    format!(
        r#"# kiln.toml: this project's settings. kiln finds it from the current folder upward.
# A flag overrides a key here; an environment variable a flag reads (KILN_DB, KILN_NET_PROXY,
# KILN_TOKENS, OPENAI_BASE_URL...) does too, with a note on stderr. Relative paths are
# relative to this file's folder. Durations take a unit (30s, 500ms, 2m, 7d) or are seconds.
# Each key is shown commented out at its default (`e.g.`: an example, no default).

# Scripts folders loaded together (--scripts).
# scripts = ["{scripts}"]
# The folder file host functions are rooted at (--workspace).
# workspace = "{workspace}"
# Load the built-in stdlib tools (--no-stdlib).
# stdlib = true
# The database: run log, sessions, store (--db, KILN_DB). Default: WORKSPACE/.kiln/kiln.db
# e.g. db = ".kiln/kiln.db", or PostgreSQL shared by several kiln (the password from
# KILN_DB_PASSWORD, never here): db = "postgres://kiln@db.internal:5432/kiln"

[grants]
# Capabilities granted where a command's --caps is not given (call, run, repl, mcp; the most
# serve grants, and what narrows an agent's own grants in ask), e.g. ["store", "net:api.github.com"].
# caps = []
# Granted capabilities that need a person's approval (--needs-approval).
# needs_approval = []

[network]
# Make http_get/http_post resolve NAME to ADDR (--resolve), e.g. ["api.local:127.0.0.1"].
# resolve = []
# Let http_get/http_post use HTTP_PROXY and friends (--net-proxy, KILN_NET_PROXY).
# proxy = false
# Speak HTTP/1.1 only, never HTTP/2, to the providers and every HTTPS server (--http1).
# http1 = false

[mounts]
# MCP servers whose tools mount as NAME__TOOL, needing capability mcp:NAME (--mcp NAME=SERVER):
# e.g. files = "npx -y @modelcontextprotocol/server-filesystem ."
# e.g. docs = "http://127.0.0.1:9000/mcp bearer_env=DOCS_TOKEN"

# Where a provider is reached and which variable holds its key (never the key itself); an
# agent's own .base_url / .api_key_env and --base-url come first, then the provider's own
# variable (ANTHROPIC_BASE_URL, OPENAI_BASE_URL, OLLAMA_HOST, AZURE_OPENAI_ENDPOINT,
# GOOGLE_GEMINI_BASE_URL, AWS_ENDPOINT_URL_BEDROCK_RUNTIME), then these.
# [providers.openai]   (also [providers.anthropic], [providers.ollama], [providers.openai-responses],
#                        [providers.azure], [providers.azure-responses], [providers.gemini],
#                        [providers.bedrock])
# e.g. base_url = "http://127.0.0.1:8000/v1"
# e.g. api_key_env = "OPENAI_API_KEY"

[serve]
# kiln serve's options (kiln serve --help).
# bind = "{serve_bind}"
# Bearer tokens file [{{"token": ..., "actor": ..., "caps": [...]}}] (--tokens, KILN_TOKENS).
# e.g. tokens = "tokens.json"
# e.g. auth_issuer = "https://issuer.example"
# e.g. auth_audience = "https://kiln.example"
# max_runs = {max_runs}
# queue = {queue}
# retry_after = {retry_after}
# max_body = {max_body}
# run_timeout = "{run_timeout}"
# approval_timeout = "{approval_timeout}"
# request_timeout = "{request_timeout}"
# grace = "{grace}"
# Forget runs that ended longer ago than this. Default: keep everything.
# e.g. log_retention = "30d"
# queue_timeout = "{queue_timeout}"
# header_timeout = "{header_timeout}"
# body_timeout = "{body_timeout}"
# allow_origins = []
# max_connections = {max_connections}
# log_format = "text"

[mcp]
# kiln mcp's options (kiln mcp --help). With http set, kiln mcp serves HTTP there.
# e.g. http = "{mcp_bind}"
# e.g. token_env = "KILN_MCP_TOKEN"
# e.g. auth_issuer = "https://issuer.example"
# e.g. auth_audience = "https://kiln.example/mcp"
# agents = false
# code_mode = false
# e.g. defer = ["github__*"]   (listed once search_tools finds them)
# allow_origins = []
# header_timeout = "{header_timeout}"
# body_timeout = "{body_timeout}"
# max_sessions = {max_sessions}
# session_idle = "{session_idle}"
# max_connections = {max_connections}

[programs]
# Code-mode programs: each runs in a worker process of its own (--max-programs,
# --program-memory); all of them together hold at most max x memory_mib.
# e.g. max = 4   (default: the number of cores)
# memory_mib = 512
"#,
        scripts = d::SCRIPTS_DIR,
        workspace = d::WORKSPACE,
        serve_bind = d::SERVE_BIND,
        mcp_bind = d::MCP_HTTP_BIND,
        max_runs = d::MAX_RUNS,
        queue = d::QUEUE,
        retry_after = d::RETRY_AFTER,
        max_body = d::MAX_BODY,
        run_timeout = s(d::RUN_TIMEOUT),
        approval_timeout = s(d::APPROVAL_TIMEOUT),
        request_timeout = s(d::REQUEST_TIMEOUT),
        grace = s(d::GRACE),
        queue_timeout = s(d::QUEUE_TIMEOUT),
        header_timeout = s(d::HEADER_TIMEOUT),
        body_timeout = s(d::BODY_TIMEOUT),
        max_connections = d::MAX_CONNECTIONS,
        max_sessions = d::MAX_SESSIONS,
        session_idle = s(d::SESSION_IDLE),
    )
}
