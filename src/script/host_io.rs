//! Host functions that reach the network, the files of the workspace and the environment.
//! Each is gated at every call (see `host_fns::gate`): declared by the running tool, granted to
//! the caller, and the call's host, path or name inside the grant's scope.

use super::host_fns::{denied, gate};
use crate::convert;
use rhai::{Array, Dynamic, Engine, EvalAltResult, Map};
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// Default and hard limits of `http_get` / `http_post`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_MAX_BYTES: usize = 1024 * 1024;
const HARD_MAX_BYTES: usize = 8 * 1024 * 1024;
/// Largest file `read_file` returns.
const MAX_READ_BYTES: u64 = 4 * 1024 * 1024;

/// Environment variables holding provider keys: readable only through a grant naming them.
pub const SECRET_VARS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "OLLAMA_API_KEY",
];

type RhaiResult<T> = Result<T, Box<EvalAltResult>>;

fn fail(msg: String) -> Box<EvalAltResult> {
    msg.into()
}

/// A runtime of its own for host I/O, so scripts (on blocking threads) can wait on async I/O
/// without touching the caller's runtime workers.
fn io_runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("kiln-host-io")
            .enable_all()
            .build()
            .expect("the host I/O runtime starts")
    })
}

fn wait<T: Send + 'static>(
    fut: impl std::future::Future<Output = Result<T, String>> + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    io_runtime().spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv()
        .unwrap_or_else(|_| Err("the host I/O task stopped".into()))
}

// ---------- network ----------

fn host_of(url: &reqwest::Url) -> String {
    let host = url.host_str().unwrap_or("").to_string();
    match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host,
    }
}

fn net_scope_allows(scope: &str, url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or("");
    scope == host
        || scope == host_of(url)
        || scope
            .strip_prefix("*.")
            .is_some_and(|d| host == d || host.ends_with(&format!(".{d}")))
}

fn parse_url(func: &str, text: &str) -> RhaiResult<reqwest::Url> {
    let url = reqwest::Url::parse(text)
        .map_err(|e| fail(format!("{func}(\"{text}\"): not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(denied(format!(
            "{func}(\"{text}\") refused: only http and https URLs are allowed"
        )));
    }
    Ok(url)
}

struct HttpOpts {
    timeout: Duration,
    max_bytes: usize,
    headers: Vec<(String, String)>,
}

fn http_opts(opts: &Map) -> HttpOpts {
    let int = |k: &str| opts.get(k).and_then(|v| v.as_int().ok()).filter(|n| *n > 0);
    let headers = opts
        .get("headers")
        .and_then(|h| {
            h.read_lock::<Map>().map(|m| {
                m.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            })
        })
        .unwrap_or_default();
    HttpOpts {
        timeout: int("timeout_ms").map_or(DEFAULT_TIMEOUT, |ms| Duration::from_millis(ms as u64)),
        max_bytes: int("max_bytes").map_or(DEFAULT_MAX_BYTES, |n| (n as usize).min(HARD_MAX_BYTES)),
        headers,
    }
}

fn http(func: &'static str, url: &str, body: Option<Dynamic>, opts: Map) -> RhaiResult<Map> {
    let parsed = parse_url(func, url)?;
    let services = gate(func, "net", &host_of(&parsed), |scope| {
        net_scope_allows(scope, &parsed)
    })?;
    if let Some(fake) = &services.http_fake {
        return faked(fake, func, url, body.as_ref());
    }
    // Redirects are re-checked against the same scopes.
    let scopes = super::host_fns::scopes_for("net");
    let policy = reqwest::redirect::Policy::custom(move |attempt| {
        let ok = attempt.previous().len() < 5
            && scopes.iter().any(|s| {
                s.as_deref()
                    .is_none_or(|s| net_scope_allows(s, attempt.url()))
            });
        if ok {
            attempt.follow()
        } else {
            let msg = format!("redirect to {} is outside the net grant", attempt.url());
            attempt.error(msg)
        }
    });
    let o = http_opts(&opts);
    let client = reqwest::Client::builder()
        .redirect(policy)
        .timeout(o.timeout)
        .build()
        .map_err(|e| fail(format!("{func}: {e}")))?;
    let mut req = match &body {
        None => client.get(parsed.clone()),
        Some(b) if b.is_string() => client.post(parsed.clone()).body(b.to_string()),
        Some(b) => client
            .post(parsed.clone())
            .json(&convert::to_json(b).map_err(fail)?),
    };
    for (k, v) in &o.headers {
        req = req.header(k, v);
    }
    let max = o.max_bytes;
    let url_text = url.to_string();
    let result = wait(async move {
        let mut resp = req.send().await.map_err(|e| {
            format!(
                "{func}(\"{url_text}\"): {}",
                crate::provider::http::describe(&e, &url_text)
            )
        })?;
        let status = resp.status().as_u16();
        let headers: Map = resp
            .headers()
            .iter()
            .filter_map(|(k, v)| {
                Some((
                    k.as_str().into(),
                    Dynamic::from(v.to_str().ok()?.to_string()),
                ))
            })
            .collect();
        let mut body = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| format!("{func}(\"{url_text}\"): {e}"))?
        {
            if body.len() + chunk.len() > max {
                return Err(format!(
                    "{func}(\"{url_text}\"): the response is larger than {max} bytes (raise opts.max_bytes, up to {HARD_MAX_BYTES})"
                ));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((status, headers, body))
    });
    let (status, headers, body) = result.map_err(fail)?;
    Ok(response_map(
        status,
        headers,
        String::from_utf8_lossy(&body).to_string(),
    ))
}

/// A request answered by the services' HTTP fake (tests) instead of the network.
fn faked(
    fake: &crate::services::HttpFake,
    func: &str,
    url: &str,
    body: Option<&Dynamic>,
) -> RhaiResult<Map> {
    let sent = body.map(convert::to_json).transpose().map_err(fail)?;
    let method = if body.is_some() { "POST" } else { "GET" };
    let r =
        fake(method, url, sent.as_ref()).map_err(|e| fail(format!("{func}(\"{url}\"): {e}")))?;
    let headers = r
        .headers
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    Ok(response_map(r.status, headers, r.body))
}

/// The map `http_get`/`http_post` return: status, headers, body, and json when it parses.
fn response_map(status: u16, headers: Map, text: String) -> Map {
    let mut out = Map::new();
    out.insert("status".into(), (status as rhai::INT).into());
    out.insert("headers".into(), headers.into());
    let json = serde_json::from_str::<serde_json::Value>(&text)
        .map(|v| convert::to_dynamic(&v))
        .unwrap_or(Dynamic::UNIT);
    out.insert("json".into(), json);
    out.insert("body".into(), text.into());
    out
}

// ---------- files ----------

/// Resolves `path` inside the workspace: relative, no `..`, and (after symlinks) still inside.
fn resolve(
    func: &str,
    workspace: &Path,
    path: &str,
    must_exist: bool,
) -> RhaiResult<(PathBuf, String)> {
    let rel = Path::new(path);
    if path.is_empty()
        || rel.is_absolute()
        || rel
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(denied(format!(
            "{func}(\"{path}\") refused: paths must be relative to the workspace, without `..`"
        )));
    }
    let root = workspace
        .canonicalize()
        .map_err(|e| fail(format!("{func}: workspace {}: {e}", workspace.display())))?;
    let joined = root.join(rel);
    let real = if must_exist || joined.exists() {
        joined
            .canonicalize()
            .map_err(|e| fail(format!("{func}(\"{path}\"): {e}")))?
    } else {
        let parent = joined
            .parent()
            .unwrap_or(&root)
            .canonicalize()
            .map_err(|e| fail(format!("{func}(\"{path}\"): folder: {e}")))?;
        parent.join(joined.file_name().unwrap_or_default())
    };
    if !real.starts_with(&root) {
        return Err(denied(format!(
            "{func}(\"{path}\") refused: it leads outside the workspace"
        )));
    }
    let inside = real
        .strip_prefix(&root)
        .map(|p| p.to_string_lossy().to_string())
        .unwrap_or_default();
    Ok((real, inside))
}

fn fs_scope_allows(scope: &str, inside: &str) -> bool {
    let scope = scope.trim_matches('/');
    scope.is_empty() || scope == "." || inside == scope || inside.starts_with(&format!("{scope}/"))
}

fn fs_gate(func: &str, cap: &str, path: &str, must_exist: bool) -> RhaiResult<PathBuf> {
    let workspace = super::host_fns::workspace().ok_or_else(|| {
        denied(format!(
            "{func}(\"{path}\") refused: host functions can only be called while a tool runs"
        ))
    })?;
    let (real, inside) = resolve(func, &workspace, path, must_exist)?;
    gate(func, cap, &inside, |scope| fs_scope_allows(scope, &inside))?;
    Ok(real)
}

fn read_file(path: &str) -> RhaiResult<String> {
    let real = fs_gate("read_file", "fs.read", path, true)?;
    let meta = std::fs::metadata(&real).map_err(|e| fail(format!("read_file(\"{path}\"): {e}")))?;
    if meta.len() > MAX_READ_BYTES {
        return Err(fail(format!(
            "read_file(\"{path}\"): the file is {} bytes; the limit is {MAX_READ_BYTES}",
            meta.len()
        )));
    }
    std::fs::read_to_string(&real).map_err(|e| fail(format!("read_file(\"{path}\"): {e}")))
}

fn list_dir(path: &str) -> RhaiResult<Array> {
    let real = fs_gate("list_dir", "fs.read", path, true)?;
    let mut out = Array::new();
    let entries =
        std::fs::read_dir(&real).map_err(|e| fail(format!("list_dir(\"{path}\"): {e}")))?;
    let mut rows: Vec<(String, bool, u64)> = entries
        .flatten()
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((
                e.file_name().to_string_lossy().to_string(),
                m.is_dir(),
                m.len(),
            ))
        })
        .collect();
    rows.sort();
    for (name, dir, size) in rows {
        let mut m = Map::new();
        m.insert("name".into(), name.into());
        m.insert("kind".into(), (if dir { "dir" } else { "file" }).into());
        m.insert("size".into(), (size as rhai::INT).into());
        out.push(m.into());
    }
    Ok(out)
}

fn write_file(path: &str, text: &str) -> RhaiResult<()> {
    let real = fs_gate("write_file", "fs.write", path, false)?;
    let dir = real
        .parent()
        .ok_or_else(|| fail(format!("write_file(\"{path}\"): no folder")))?;
    // Atomic: a temp file in the same folder, then a rename over the target.
    let tmp = dir.join(format!(
        ".{}.kiln-tmp-{}",
        real.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    std::fs::write(&tmp, text).map_err(|e| fail(format!("write_file(\"{path}\"): {e}")))?;
    std::fs::rename(&tmp, &real).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(format!("write_file(\"{path}\"): {e}"))
    })
}

// ---------- environment ----------

fn env(name: &str) -> RhaiResult<Dynamic> {
    let secret =
        SECRET_VARS.contains(&name) || name.ends_with("_API_KEY") || name.ends_with("_TOKEN");
    // A secret is readable only through a grant that names it; an unscoped grant does not do.
    let named = super::host_fns::scopes_for("env")
        .iter()
        .any(|s| s.as_deref() == Some(name));
    if secret && !named {
        return Err(denied(format!(
            "env(\"{name}\") refused: secrets are readable only through a grant naming them (env:{name})"
        )));
    }
    gate("env", "env", name, |scope| scope == name)?;
    Ok(std::env::var(name)
        .map(Dynamic::from)
        .unwrap_or(Dynamic::UNIT))
}

/// Registers the network, file and environment functions.
pub fn register(engine: &mut Engine) {
    engine.register_fn("http_get", |url: &str| {
        http("http_get", url, None, Map::new())
    });
    engine.register_fn("http_get", |url: &str, opts: Map| {
        http("http_get", url, None, opts)
    });
    engine.register_fn("http_post", |url: &str, body: Dynamic| {
        http("http_post", url, Some(body), Map::new())
    });
    engine.register_fn("http_post", |url: &str, body: Dynamic, opts: Map| {
        http("http_post", url, Some(body), opts)
    });
    engine.register_fn("read_file", read_file);
    engine.register_fn("list_dir", list_dir);
    engine.register_fn("write_file", write_file);
    engine.register_fn("env", env);
}
