//! `http_get` / `http_post`. Every hop (the first request and each redirect) passes the gate:
//! the tool's declaration, the caller's grant and the address rules of [`kiln_egress`]. The
//! client dials only addresses its resolver checked at connect time, uses no proxy unless the
//! operator opted in, and every wait observes the call's deadline and cancel flag.

use crate::convert;
use crate::host::io::{RhaiResult, fail};
use crate::host::{Check, declared_scopes, denied, gate_with, scopes_for};
use crate::sandbox;
use kiln_core::capability::HostCap;
use kiln_core::services::Services;
use kiln_egress::resolver::CheckedResolver;
use kiln_egress::{self as egress, NetHost, NetRule, Refusal, Target};
use rhai::{Dynamic, Map};
use std::net::IpAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Default and hard limits of `http_get` / `http_post`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_MAX_BYTES: usize = 1024 * 1024;
const HARD_MAX_BYTES: usize = 8 * 1024 * 1024;
/// Redirects followed before giving up.
const MAX_REDIRECTS: usize = 5;
/// How often a wait looks at the cancel flag (it has no way to wake us).
const POLL: Duration = Duration::from_millis(10);

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

/// Runs `fut` on the I/O runtime and waits for it, giving up (and dropping the I/O) when the
/// call's deadline passes or it is cancelled.
fn wait<T: Send + 'static>(
    fut: impl std::future::Future<Output = T> + Send + 'static,
) -> RhaiResult<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    let task = io_runtime().spawn(async move {
        let _ = tx.send(fut.await);
    });
    loop {
        if let Err(stop) = sandbox::check_stop() {
            task.abort();
            return Err(stop);
        }
        let slice = sandbox::remaining().map_or(POLL, |r| r.min(POLL));
        match rx.recv_timeout(slice) {
            Ok(v) => return Ok(v),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(fail("the host I/O task stopped".into()));
            }
        }
    }
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

/// The options of a call: `timeout` (a duration such as `"5s"` or `"500ms"`, a bare number
/// being milliseconds, as `.timeout(...)` takes it; `timeout_ms`, a number of milliseconds, is
/// its former spelling, still read) never outlives the tool's own deadline.
fn http_opts(func: &str, opts: &Map) -> RhaiResult<HttpOpts> {
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
    let asked = match opts.get("timeout") {
        Some(value) => crate::convert::timeout(value).map_err(|e| fail(format!("{func}: {e}")))?,
        None => int("timeout_ms").map_or(DEFAULT_TIMEOUT, |ms| Duration::from_millis(ms as u64)),
    };
    let timeout = sandbox::remaining().map_or(asked, |left| asked.min(left));
    Ok(HttpOpts {
        timeout: timeout.max(Duration::from_millis(1)),
        max_bytes: int("max_bytes").map_or(DEFAULT_MAX_BYTES, |n| (n as usize).min(HARD_MAX_BYTES)),
        headers,
    })
}

/// A request body, kept so a 307/308 redirect can send it again.
#[derive(Clone)]
enum Body {
    Text(String),
    Json(serde_json::Value),
}

/// What one hop answered.
enum Reply {
    Done {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    Redirect {
        status: u16,
        location: String,
    },
}

/// Why one hop failed.
enum HopError {
    /// The connect-time check refused an address (a name that changed its answer).
    Refused(Refusal),
    /// Anything else: transport, size.
    Failed(String),
}

/// `http_get(url, opts)` and `http_post(url, body, opts)`.
pub(crate) fn http(
    func: &'static str,
    given: &str,
    body: Option<Dynamic>,
    opts: Map,
) -> RhaiResult<Map> {
    let o = http_opts(func, &opts)?;
    let mut url = parse_url(func, given)?;
    let mut body = match body {
        None => None,
        Some(b) if b.is_string() => Some(Body::Text(b.to_string())),
        Some(b) => Some(Body::Json(convert::to_json(&b).map_err(fail)?)),
    };
    if let Some(fake) = fake_for(func, given, &url)? {
        return faked(&fake, func, given, body.as_ref());
    }
    let mut headers = o.headers.clone();
    for hop in 0..=MAX_REDIRECTS {
        let shown = if hop == 0 {
            given.to_string()
        } else {
            url.to_string()
        };
        let (services, target, rule) = check_hop(func, &shown, &url).map_err(|e| {
            if hop == 0 {
                e
            } else {
                redirect_refusal(func, given, e)
            }
        })?;
        let client = client_for(&url, &services, target, rule, o.timeout)
            .map_err(|e| fail(format!("{func}: {e}")))?;
        let mut req = match &body {
            None => client.get(url.clone()),
            Some(Body::Text(t)) => client.post(url.clone()).body(t.clone()),
            Some(Body::Json(j)) => client.post(url.clone()).json(j),
        };
        for (k, v) in &headers {
            req = req.header(k, v);
        }
        match wait(send(req, o.max_bytes))? {
            Ok(Reply::Done {
                status,
                headers,
                body,
            }) => return Ok(reply_map(status, headers, body)),
            Ok(Reply::Redirect { status, location }) => {
                let next = url.join(&location).map_err(|e| {
                    fail(format!(
                        "{func}(\"{given}\"): bad redirect location `{location}`: {e}"
                    ))
                })?;
                let next =
                    parse_url(func, next.as_str()).map_err(|e| redirect_refusal(func, given, e))?;
                if matches!(status, 301..=303) {
                    body = None;
                }
                // Headers a script set (keys, tokens) are meant for the origin it named.
                if next.origin() != url.origin() {
                    headers.clear();
                }
                url = next;
            }
            Err(HopError::Refused(r)) => {
                return Err(denied(format!(
                    "{func}(\"{given}\") refused at connect time: {r}"
                )));
            }
            Err(HopError::Failed(msg)) => {
                // A timeout capped by the tool's deadline is the deadline.
                sandbox::check_stop()?;
                return Err(fail(format!("{func}(\"{given}\"): {msg}")));
            }
        }
    }
    Err(fail(format!(
        "{func}(\"{given}\"): more than {MAX_REDIRECTS} redirects"
    )))
}

/// The services' HTTP fake (tests), once the tool's declaration and the caller's grant name the
/// host. A faked request resolves nothing and never reaches the network.
fn fake_for(
    func: &str,
    shown: &str,
    url: &reqwest::Url,
) -> RhaiResult<Option<kiln_core::services::HttpFake>> {
    let Some(fake) = crate::host::services().and_then(|s| s.http_fake.clone()) else {
        return Ok(None);
    };
    let target = Target::of_url(url)
        .ok_or_else(|| fail(format!("{func}(\"{shown}\"): the URL has no host")))?;
    gate_with(&Check {
        func,
        cap: HostCap::Net.name(),
        target: shown,
        covers: &|scope| egress::scope_names(scope, &target),
        why_not: &String::new,
        approve: true,
    })?;
    Ok(Some(fake))
}

/// A request answered by the fake instead of the network.
fn faked(
    fake: &kiln_core::services::HttpFake,
    func: &str,
    url: &str,
    body: Option<&Body>,
) -> RhaiResult<Map> {
    let sent = body.map(|b| match b {
        Body::Text(t) => serde_json::Value::String(t.clone()),
        Body::Json(j) => j.clone(),
    });
    let method = if body.is_some() { "POST" } else { "GET" };
    let r =
        fake(method, url, sent.as_ref()).map_err(|e| fail(format!("{func}(\"{url}\"): {e}")))?;
    Ok(reply_map(r.status, r.headers, r.body.into_bytes()))
}

/// The gate for one hop: names first (a lookup itself would reveal the name), then every
/// address the host resolves to. Returns what the connect-time resolver must enforce.
fn check_hop(
    func: &str,
    shown: &str,
    url: &reqwest::Url,
) -> RhaiResult<(Arc<Services>, Target, NetRule)> {
    let target = Target::of_url(url)
        .ok_or_else(|| fail(format!("{func}(\"{shown}\"): the URL has no host")))?;
    let (services, _) = gate_with(&Check {
        func,
        cap: HostCap::Net.name(),
        target: shown,
        covers: &|scope| egress::scope_names(scope, &target),
        why_not: &String::new,
        approve: false,
    })?;
    let addrs: Vec<IpAddr> = match &target.host {
        NetHost::Ip(ip) => vec![*ip],
        NetHost::Name(name) => match wait(services.egress.resolver.lookup(name))? {
            Ok(addrs) if !addrs.is_empty() => addrs,
            Ok(_) => {
                return Err(fail(format!(
                    "{func}(\"{shown}\"): {name} has no addresses"
                )));
            }
            Err(e) => {
                return Err(fail(format!(
                    "{func}(\"{shown}\"): cannot resolve {name}: {e}"
                )));
            }
        },
    };
    let why_not = || {
        let scopes = scopes_for(HostCap::Net.name());
        addrs
            .iter()
            .find(|ip| {
                !scopes
                    .iter()
                    .any(|s| egress::scope_allows(s.as_deref(), &target, **ip))
            })
            .map(|ip| Refusal::new(&target, *ip).to_string())
            .unwrap_or_default()
    };
    let (services, granted) = gate_with(&Check {
        func,
        cap: HostCap::Net.name(),
        target: shown,
        covers: &|scope| {
            addrs
                .iter()
                .all(|ip| egress::scope_allows(scope, &target, *ip))
        },
        why_not: &why_not,
        approve: true,
    })?;
    let rule = NetRule {
        declared: declared_scopes(HostCap::Net.name()),
        granted,
    };
    Ok((services, target, rule))
}

/// A refusal of a redirect hop, said as such.
fn redirect_refusal(
    func: &str,
    given: &str,
    e: Box<rhai::EvalAltResult>,
) -> Box<rhai::EvalAltResult> {
    match &*e {
        rhai::EvalAltResult::ErrorRuntime(v, _) if v.is::<crate::host::DeniedValue>() => {
            let inner = v.clone_cast::<crate::host::DeniedValue>().0;
            denied(format!(
                "{func}(\"{given}\") refused: it redirected outside the net grant: {inner}"
            ))
        }
        _ => e,
    }
}

/// A client for one hop: no redirects (each is checked here), addresses checked at connect
/// time, and no proxy from the environment unless the operator opted in.
fn client_for(
    url: &reqwest::Url,
    services: &Services,
    target: Target,
    rule: NetRule,
    timeout: Duration,
) -> Result<reqwest::Client, reqwest::Error> {
    // A plain `http://` hop needs no trust store; an `https://` one shares the process's.
    let tls = match url.scheme() {
        "http" => kiln_egress::tls::plain_client_builder(),
        _ => kiln_egress::tls::client_builder(),
    };
    let builder = tls
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout);
    if services.egress.use_env_proxy {
        // The operator's proxy makes the connection; only the check before the call holds.
        return builder.build();
    }
    let resolver = CheckedResolver {
        target,
        rule,
        resolver: services.egress.resolver.clone(),
    };
    builder.dns_resolver(Arc::new(resolver)).no_proxy().build()
}

async fn send(req: reqwest::RequestBuilder, max: usize) -> Result<Reply, HopError> {
    let mut resp = req.send().await.map_err(hop_error)?;
    let status = resp.status().as_u16();
    let location = resp
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|l| l.to_str().ok());
    if resp.status().is_redirection()
        && let Some(location) = location
    {
        return Ok(Reply::Redirect {
            status,
            location: location.to_string(),
        });
    }
    let headers = resp
        .headers()
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
        .collect();
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(hop_error)? {
        if body.len() + chunk.len() > max {
            return Err(HopError::Failed(format!(
                "the response is larger than {max} bytes (raise opts.max_bytes, up to {HARD_MAX_BYTES})"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Reply::Done {
        status,
        headers,
        body,
    })
}

/// A connect-time refusal from our resolver, wherever the client wrapped it; else a message.
fn hop_error(e: reqwest::Error) -> HopError {
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        if let Some(r) = s.downcast_ref::<Refusal>() {
            return HopError::Refused(r.clone());
        }
        source = s.source();
    }
    let url = e.url().map(|u| u.to_string()).unwrap_or_default();
    HopError::Failed(kiln_egress::describe(&e, &url))
}

fn reply_map(status: u16, headers: Vec<(String, String)>, body: Vec<u8>) -> Map {
    let text = String::from_utf8_lossy(&body).to_string();
    let mut out = Map::new();
    out.insert("status".into(), (status as rhai::INT).into());
    let headers: Map = headers
        .into_iter()
        .map(|(k, v)| (k.into(), Dynamic::from(v)))
        .collect();
    out.insert("headers".into(), headers.into());
    let json = serde_json::from_str::<serde_json::Value>(&text)
        .map(|v| convert::to_dynamic(&v))
        .unwrap_or(Dynamic::UNIT);
    out.insert("json".into(), json);
    out.insert("body".into(), text.into());
    out
}

/// Registers `http_get` and `http_post`.
pub fn register(engine: &mut rhai::Engine) {
    engine.register_fn("http_get", |url: &str| {
        http("http_get", url, None, Map::new())
    });
    engine.register_fn("http_get", |url: &str, opts: Map| {
        http("http_get", url, None, opts)
    });
    engine.register_fn("http_post", |url: &str, body: rhai::Dynamic| {
        http("http_post", url, Some(body), Map::new())
    });
    engine.register_fn("http_post", |url: &str, body: rhai::Dynamic, opts: Map| {
        http("http_post", url, Some(body), opts)
    });
}
