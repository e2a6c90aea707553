//! OAuth 2.1 for mounted servers, as the MCP authorization spec orders it (rmcp's auth client
//! does discovery, registration, PKCE, the `resource` parameter and refresh): `kiln auth login
//! NAME` authorizes once (a person in a browser, or `--headless` where the authorization server
//! answers without one) and keeps the tokens in `.kiln/oauth/NAME.json` (mode 0600); a mount
//! then sends them, refreshing them as they expire, and only to its server.

use super::McpError;
use kiln_registry::mount_spec::{MountSpec, OAuth, Target};
use rmcp::transport::auth::{
    AuthError, AuthorizationCallback, AuthorizationManager, AuthorizationRequest, CredentialStore,
    OAuthState, StoredCredentials,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long `kiln auth login` waits for the person to come back from the browser.
const LOGIN_WAIT: Duration = Duration::from_secs(300);

/// Where the tokens of server `name` are kept, under the workspace.
pub fn token_path(workspace: &Path, name: &str) -> PathBuf {
    workspace
        .join(kiln_core::defaults::STATE_DIR)
        .join("oauth")
        .join(format!("{name}.json"))
}

/// The tokens of one server in a file only its owner can read.
pub struct FileCredentialStore {
    path: PathBuf,
}

impl FileCredentialStore {
    /// The store at `path`.
    pub fn new(path: PathBuf) -> Self {
        FileCredentialStore { path }
    }
}

fn store_error(path: &Path, e: impl std::fmt::Display) -> AuthError {
    AuthError::InternalError(format!("{}: {e}", path.display()))
}

#[async_trait::async_trait]
impl CredentialStore for FileCredentialStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| store_error(&self.path, e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(store_error(&self.path, e)),
        }
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let text =
            serde_json::to_vec_pretty(&credentials).map_err(|e| store_error(&self.path, e))?;
        write_private(&self.path, &text).map_err(|e| store_error(&self.path, e))
    }

    async fn clear(&self) -> Result<(), AuthError> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(store_error(&self.path, e)),
        }
    }
}

/// Writes `bytes` to `path` readable by its owner only (0600), atomically.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("no folder"))?;
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{}.tmp", kiln_core::services::fresh_id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// The server's URL and OAuth settings, or why it has none.
pub fn oauth_of(spec: &MountSpec) -> Result<(&str, &OAuth), McpError> {
    match &spec.target {
        Target::Url {
            url,
            oauth: Some(oauth),
            ..
        } => Ok((url, oauth)),
        _ => Err(McpError::Server {
            server: spec.name.clone(),
            message: "it is not mounted with OAuth (mount its URL with `oauth`, or `.oauth(...)` in a script)".into(),
        }),
    }
}

fn failed(spec: &MountSpec, what: &str, e: impl std::fmt::Display) -> McpError {
    McpError::Server {
        server: spec.name.clone(),
        message: format!("{what}: {e}"),
    }
}

/// The authorization manager of a mount with its stored tokens; `Err` names the login to do.
pub async fn authorized(
    spec: &MountSpec,
    workspace: &Path,
) -> Result<AuthorizationManager, McpError> {
    let (url, _) = oauth_of(spec)?;
    kiln_egress::tls::ensure_provider();
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|e| failed(spec, "OAuth", e))?;
    manager.set_credential_store(FileCredentialStore::new(token_path(workspace, &spec.name)));
    // Without tokens the requests go out without one: the server's 401 says what it wants.
    manager
        .initialize_from_store()
        .await
        .map_err(|e| failed(spec, "OAuth discovery", e))?;
    Ok(manager)
}

/// Where the last challenge of server `name` is kept for the next `kiln auth login`.
fn challenge_path(workspace: &Path, name: &str) -> PathBuf {
    workspace
        .join(kiln_core::defaults::STATE_DIR)
        .join("oauth")
        .join(format!("{name}.challenge"))
}

/// What to tell a person whose mount got `challenge` (a 401 or 403 `WWW-Authenticate`): the
/// scope the server wants and the login that gets it. The challenge is kept for that login
/// (it names the scopes and the resource metadata).
pub fn challenged_in(spec: &MountSpec, workspace: &Path, challenge: &str) -> McpError {
    if oauth_of(spec).is_ok()
        && let Err(e) = write_private(&challenge_path(workspace, &spec.name), challenge.as_bytes())
    {
        tracing::warn!(server = %spec.name, "the server's challenge was not kept: {e}");
    }
    challenged(spec, challenge)
}

/// What to tell a person whose mount got `challenge` (a 401 or 403 `WWW-Authenticate`): the
/// scope the server wants and the login that gets it.
pub fn challenged(spec: &MountSpec, challenge: &str) -> McpError {
    let field = |name: &str| {
        let start = challenge.find(&format!("{name}=\""))? + name.len() + 2;
        let len = challenge[start..].find('"')?;
        Some(challenge[start..start + len].to_string())
    };
    let name = &spec.name;
    let message = match (field("error").as_deref(), field("scope")) {
        (Some("insufficient_scope"), Some(scope)) => format!(
            "it wants scope {scope} for this: run `kiln auth login {name} --scope {}` and try again",
            scope
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" --scope ")
        ),
        _ if let Target::Url {
            bearer_env: Some(var),
            ..
        } = &spec.target =>
        {
            format!("it refused the bearer token in {var} (HTTP 401): check the token")
        }
        _ if oauth_of(spec).is_ok() => format!(
            "it refused kiln's authorization (none, expired or revoked): run `kiln auth login {name}` and try again"
        ),
        _ => format!(
            "it asks for authorization: mount it with OAuth (`--mcp \"{name}=URL oauth\"` or .oauth(...)), then run `kiln auth login {name}`"
        ),
    };
    McpError::Unauthorized {
        server: spec.name.clone(),
        message,
    }
}

/// A machine's token for the mount (`grant=client_credentials`): asked of the authorization
/// server with the client's own id and secret (HTTP Basic where the server takes it, else in
/// the body), for the server as its `resource`. Nothing is stored: each mount asks again.
pub async fn machine_token(spec: &MountSpec) -> Result<String, McpError> {
    let (url, oauth) = oauth_of(spec)?;
    let (Some(id), Some(var)) = (&oauth.client_id, &oauth.client_secret_env) else {
        return Err(failed(
            spec,
            "grant=client_credentials",
            "it needs client_id and client_secret_env",
        ));
    };
    let secret = std::env::var(var)
        .ok()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| failed(spec, "client_secret_env", format!("{var} is not set")))?;
    kiln_egress::tls::ensure_provider();
    let found = challenge(url).await;
    let manager = AuthorizationManager::new(url)
        .await
        .map_err(|e| failed(spec, "OAuth", e))?;
    let metadata = manager
        .resolve_metadata_from_challenge(found.as_deref())
        .await
        .map_err(|e| failed(spec, "OAuth discovery", e))?
        .metadata;
    let methods: Vec<String> = metadata
        .additional_fields
        .get("token_endpoint_auth_methods_supported")
        .and_then(|m| serde_json::from_value(m.clone()).ok())
        .unwrap_or_default();
    let basic = methods.is_empty() || methods.iter().any(|m| m == "client_secret_basic");
    let mut form = vec![
        ("grant_type", "client_credentials".to_string()),
        ("resource", url.to_string()),
    ];
    if !oauth.scopes.is_empty() {
        form.push(("scope", oauth.scopes.join(" ")));
    }
    if !basic {
        form.push(("client_id", id.clone()));
        form.push(("client_secret", secret.clone()));
    }
    let http = kiln_egress::tls::client_builder()
        .build()
        .map_err(|e| failed(spec, "an HTTP client", e))?;
    let body = form
        .iter()
        .map(|(k, v)| format!("{k}={}", form_encode(v)))
        .collect::<Vec<_>>()
        .join("&");
    let mut request = http
        .post(
            oauth
                .token_url
                .as_deref()
                .unwrap_or(&metadata.token_endpoint),
        )
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body);
    if basic {
        request = request.basic_auth(id, Some(&secret));
    }
    let reply = request
        .send()
        .await
        .map_err(|e| failed(spec, "the token request", e))?;
    let status = reply.status().as_u16();
    let body: serde_json::Value = reply
        .json()
        .await
        .map_err(|e| failed(spec, "the token response", e))?;
    match body["access_token"].as_str() {
        Some(token) if status == 200 => Ok(token.to_string()),
        _ => Err(failed(
            spec,
            "the token request",
            format!(
                "HTTP {status}: {}",
                body["error_description"]
                    .as_str()
                    .or(body["error"].as_str())
                    .unwrap_or("no access token")
            ),
        )),
    }
}

/// `text` as an `application/x-www-form-urlencoded` value.
fn form_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// How `kiln auth login` reaches the person (or does without one).
pub struct Login<'a> {
    /// Fetch the authorization page itself and follow it to kiln's redirect (an authorization
    /// server that decides without a person, such as a test's or a machine's).
    pub headless: bool,
    /// Scopes to ask for beyond the mount's own.
    pub scopes: Vec<String>,
    /// Where the URL to open goes (the terminal).
    pub say: &'a (dyn Fn(&str) + Send + Sync),
}

/// Authorizes kiln for the mounted server `spec` and stores its tokens; the scopes granted.
///
/// The steps keep this order: the challenge is read before the old tokens go (their scopes are
/// asked for again), and the redirect's port is bound before the request that names it is made.
pub async fn login(
    spec: &MountSpec,
    workspace: &Path,
    how: Login<'_>,
) -> Result<Vec<String>, McpError> {
    let (url, oauth) = oauth_of(spec)?;
    kiln_egress::tls::ensure_provider();
    let challenge = last_challenge(spec, workspace, url).await;
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|e| failed(spec, "OAuth", e))?;
    let kept = fresh_store(spec, workspace, &mut manager).await?;
    let (listener, redirect) = redirect_listener(spec).await?;
    let scopes = scopes_to_ask(oauth, &how.scopes, &kept);
    let request = authorization_request(spec, oauth, &redirect, scopes, challenge)?;
    let mut state = OAuthState::Unauthorized(manager);
    state
        .start_authorization(request)
        .await
        .map_err(|e| failed(spec, "OAuth authorization", e))?;
    let page = state
        .get_authorization_url()
        .await
        .map_err(|e| failed(spec, "OAuth authorization", e))?;
    let back = authorize(spec, &how, &page, listener).await?;
    let callback = AuthorizationCallback::from_redirect_url(&back)
        .map_err(|e| failed(spec, "the authorization's redirect", e))?;
    state
        .handle_callback_with_issuer(
            &callback.code,
            &callback.csrf_token,
            callback.issuer.as_deref(),
        )
        .await
        .map_err(|e| failed(spec, "the token exchange", e))?;
    let manager = state
        .into_authorization_manager()
        .ok_or_else(|| failed(spec, "OAuth", "the authorization did not complete"))?;
    Ok(manager.get_current_scopes().await)
}

/// The challenge the server gave the mount last (kept once, then removed), else the one a bare
/// request gets now: it names the resource metadata and the scopes to ask for.
async fn last_challenge(spec: &MountSpec, workspace: &Path, url: &str) -> Option<String> {
    let kept = challenge_path(workspace, &spec.name);
    let challenge = match std::fs::read_to_string(&kept) {
        Ok(c) if !c.trim().is_empty() => Some(c.trim().to_string()),
        _ => challenge(url).await,
    };
    let _ = std::fs::remove_file(&kept);
    challenge
}

/// Gives `manager` the mount's token store, emptied: a new login registers again (the
/// authorization server may have changed). The scopes the last login was granted, to ask for
/// again.
async fn fresh_store(
    spec: &MountSpec,
    workspace: &Path,
    manager: &mut AuthorizationManager,
) -> Result<Vec<String>, McpError> {
    let store = FileCredentialStore::new(token_path(workspace, &spec.name));
    let kept = match store.load().await {
        Ok(Some(previous)) => previous.granted_scopes,
        _ => Vec::new(),
    };
    store
        .clear()
        .await
        .map_err(|e| failed(spec, "the old tokens", e))?;
    manager.set_credential_store(store);
    Ok(kept)
}

/// The loopback listener the redirect comes back to, and the redirect URL naming its port.
async fn redirect_listener(
    spec: &MountSpec,
) -> Result<(tokio::net::TcpListener, String), McpError> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| failed(spec, "a loopback port for the redirect", e))?;
    let port = listener
        .local_addr()
        .map_err(|e| failed(spec, "a loopback port for the redirect", e))?
        .port();
    Ok((listener, format!("http://127.0.0.1:{port}/callback")))
}

/// The scopes to ask for, each once: the mount's and the login's; when the login names
/// scopes of its own, those the last login was granted (`kept`) come first.
fn scopes_to_ask(oauth: &OAuth, extra: &[String], kept: &[String]) -> Vec<String> {
    let mut scopes: Vec<String> = Vec::new();
    let asked = oauth.scopes.iter().chain(extra);
    let wanted = if extra.is_empty() {
        asked.collect::<Vec<_>>()
    } else {
        kept.iter().chain(asked).collect()
    };
    for scope in wanted {
        if !scopes.contains(scope) {
            scopes.push(scope.clone());
        }
    }
    scopes
}

/// The authorization request: kiln's redirect and name, the scopes, the mount's client (a
/// preregistered id and its secret from the environment, or a metadata document) and the
/// server's challenge.
fn authorization_request(
    spec: &MountSpec,
    oauth: &OAuth,
    redirect: &str,
    scopes: Vec<String>,
    challenge: Option<String>,
) -> Result<AuthorizationRequest, McpError> {
    let mut request = AuthorizationRequest::new(redirect).with_client_name("kiln");
    if !scopes.is_empty() {
        request = request.with_scopes(scopes);
    }
    if let Some(id) = &oauth.client_id {
        request = request.with_preregistered_client(id);
        if let Some(var) = &oauth.client_secret_env {
            let secret = std::env::var(var)
                .ok()
                .filter(|s| !s.is_empty())
                .ok_or_else(|| failed(spec, "client_secret_env", format!("{var} is not set")))?;
            request = request.with_client_secret(secret);
        }
    }
    if let Some(doc) = &oauth.client_metadata_url {
        request = request.with_client_metadata_url(doc);
    }
    if let Some(c) = challenge {
        request = request.with_challenge(c);
    }
    Ok(request)
}

/// Takes the authorization page to its decision: followed by kiln itself when headless, else
/// shown to the person (and opened in a browser) while `listener` waits for the redirect. The
/// redirect URL the authorization server sent back.
async fn authorize(
    spec: &MountSpec,
    how: &Login<'_>,
    page: &str,
    listener: tokio::net::TcpListener,
) -> Result<String, McpError> {
    if how.headless {
        follow(page)
            .await
            .map_err(|e| failed(spec, "headless authorization", e))
    } else {
        (how.say)(&format!(
            "Open this page to authorize kiln for MCP server \"{}\":\n\n  {page}\n",
            spec.name
        ));
        open_browser(page);
        wait_for_redirect(listener)
            .await
            .map_err(|e| failed(spec, "the authorization's redirect", e))
    }
}

/// The `WWW-Authenticate` challenge an unauthenticated request to `url` gets, if any: it names
/// the resource metadata and the scopes the server wants.
async fn challenge(url: &str) -> Option<String> {
    let client = kiln_egress::tls::client_builder().build().ok()?;
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "kiln", "version": env!("CARGO_PKG_VERSION")}}});
    let reply = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .ok()?;
    (reply.status().as_u16() == 401)
        .then(|| {
            reply
                .headers()
                .get("www-authenticate")?
                .to_str()
                .ok()
                .map(str::to_string)
        })
        .flatten()
}

/// Fetches the authorization page and follows its redirects to kiln's loopback redirect; the
/// URL it was sent to.
async fn follow(page: &str) -> Result<String, String> {
    let client = kiln_egress::tls::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    let mut at = page.to_string();
    for _ in 0..10 {
        let reply = client.get(&at).send().await.map_err(|e| e.to_string())?;
        let Some(next) = reply
            .headers()
            .get("location")
            .and_then(|l| l.to_str().ok())
        else {
            return Err(format!(
                "{} answered HTTP {} without sending kiln back: it wants a person (run `kiln auth login` without --headless)",
                at,
                reply.status().as_u16()
            ));
        };
        let next = reqwest::Url::parse(&at)
            .and_then(|base| base.join(next))
            .map_err(|e| e.to_string())?;
        if next.query_pairs().any(|(k, _)| k == "code" || k == "error")
            && next.host_str() == Some("127.0.0.1")
        {
            return Ok(next.to_string());
        }
        at = next.to_string();
    }
    Err("too many redirects".into())
}

/// Opens `url` in the person's browser where there is one (a desktop session).
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        Some("open")
    } else if std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some()
    {
        Some("xdg-open")
    } else {
        None
    };
    if let Some(program) = opener {
        let _ = std::process::Command::new(program)
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
}

/// Waits for the browser to come back to the loopback redirect; the full URL it asked for.
async fn wait_for_redirect(listener: tokio::net::TcpListener) -> Result<String, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let accept = async {
        loop {
            let (mut conn, _) = listener.accept().await.map_err(|e| e.to_string())?;
            let mut buf = vec![0u8; 8192];
            let n = conn.read(&mut buf).await.map_err(|e| e.to_string())?;
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            let target = head.split_whitespace().nth(1).unwrap_or("/").to_string();
            if !target.starts_with("/callback") {
                let _ = conn
                    .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                    .await;
                continue;
            }
            let page = "kiln is authorized; you can close this tab.";
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                page.len()
            );
            let _ = conn.write_all(reply.as_bytes()).await;
            return Ok(format!("http://127.0.0.1:{port}{target}"));
        }
    };
    tokio::time::timeout(LOGIN_WAIT, accept)
        .await
        .map_err(|_| format!("nobody came back within {} s", LOGIN_WAIT.as_secs()))?
}
