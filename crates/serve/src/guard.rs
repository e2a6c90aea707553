//! The API's guard against pages in a browser (DNS rebinding, cross-site requests), as `/mcp`
//! has: an `Origin` must be this server's own (`http`, a name of this machine or the bound
//! address, and the port it listens on) or one allowed with `--allow-origin`; without tokens
//! (an open server on loopback) the `Host` must name this machine too. A page on another port
//! of this machine is another site.

use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The middleware on every `/v1/*` and `/ui` route: refuses a foreign `Origin` and, on an open
/// server, a `Host` that does not name this machine.
pub(crate) async fn same_site(
    State(state): State<Arc<AppState>>,
    req: Request,
    next: Next,
) -> Response {
    let opts = &state.options;
    // Read before any await: a borrow of the request would make this future not `Send`.
    let (origin, host) = {
        let text = |name: header::HeaderName| {
            req.headers()
                .get(name)
                .map(|v| v.to_str().unwrap_or("\u{fffd}").to_string())
        };
        (text(header::ORIGIN), text(header::HOST))
    };
    // The port this server listens on; a router served some other way goes by the `Host`.
    let port = state
        .bound_port()
        .or_else(|| host.as_deref().and_then(port_of));
    if let Some(origin) = origin {
        let own = Own {
            port,
            hosts: &opts.allowed_hosts,
        };
        if !origin_allowed(&origin, &own, &opts.allowed_origins) {
            // The operator reads how to accept it; the page reads no flag.
            tracing::info!(%origin, "refused a request from another site (--allow-origin accepts it)");
            return ApiError::forbidden(
                "",
                format!("requests from origin {origin} are not accepted: only pages of this server ({}) and the origins its operator allows may call it", own.describe()),
            )
            .into_response();
        }
    }
    if state.tokens.is_empty()
        && let Some(host) = host
        && !host_allowed(&host, &opts.allowed_hosts)
    {
        return ApiError::forbidden(
            "",
            format!("the Host header {host:?} does not name this server"),
        )
        .into_response();
    }
    next.run(req).await
}

/// `host[:port]` without the port, brackets kept off IPv6.
fn host_part(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match authority.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
        _ => authority,
    }
}

/// The port of `host[:port]`, when it names one.
fn port_of(authority: &str) -> Option<u16> {
    let rest = match authority.trim().strip_prefix('[') {
        Some(v6) => v6.split_once(']')?.1,
        None => authority.trim(),
    };
    let (_, port) = rest.rsplit_once(':')?;
    port.parse().ok()
}

fn is_loopback_name(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A `Host` header naming this machine (loopback) or one of `allowed` (the bound address).
pub(crate) fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let h = host_part(host.trim());
    is_loopback_name(h) || allowed.iter().any(|a| a.eq_ignore_ascii_case(h))
}

/// What this server's own pages look like: `http://`, a name of this machine or one of
/// `hosts` (the bound address), and `port`.
pub(crate) struct Own<'a> {
    /// The port the server listens on (`None`: unknown, so no origin is its own).
    pub port: Option<u16>,
    /// Host names besides loopback ones that name the server.
    pub hosts: &'a [String],
}

impl Own<'_> {
    /// Whether `scheme://authority` is one of this server's own origins.
    fn is(&self, scheme: &str, authority: &str) -> bool {
        let Some(port) = self.port else {
            return false;
        };
        let host = host_part(authority);
        // An origin without a port is on its scheme's default one.
        let bare = authority == host || authority == format!("[{host}]");
        let given = port_of(authority).or_else(|| bare.then_some(80));
        scheme == "http"
            && given == Some(port)
            && (is_loopback_name(host) || self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)))
    }

    /// `http://127.0.0.1:PORT`, for messages.
    fn describe(&self) -> String {
        match self.port {
            Some(port) => format!("http://127.0.0.1:{port} or http://localhost:{port}"),
            None => "none known".to_string(),
        }
    }
}

/// An `Origin` of this server's own pages (`own`), or one matching `allowed`
/// (`scheme://host[:port]`, `:*` for any port).
pub(crate) fn origin_allowed(origin: &str, own: &Own, allowed: &[String]) -> bool {
    let origin = origin.trim().trim_end_matches('/');
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    if own.is(&scheme.to_ascii_lowercase(), authority) {
        return true;
    }
    allowed
        .iter()
        .any(|pattern| match pattern.strip_suffix(":*") {
            Some(base) => {
                origin.eq_ignore_ascii_case(base) || {
                    origin.rsplit_once(':').is_some_and(|(o, port)| {
                        o.eq_ignore_ascii_case(base) && port.parse::<u16>().is_ok()
                    })
                }
            }
            None => origin.eq_ignore_ascii_case(pattern.trim_end_matches('/')),
        })
}

#[cfg(test)]
mod tests {
    use super::{Own, origin_allowed};

    #[test]
    fn only_the_servers_own_port_is_its_origin() {
        let hosts = ["127.0.0.1".to_string()];
        let own = Own {
            port: Some(8080),
            hosts: &hosts,
        };
        for ok in [
            "http://127.0.0.1:8080",
            "http://localhost:8080",
            "http://[::1]:8080",
            "HTTP://LOCALHOST:8080/",
        ] {
            assert!(origin_allowed(ok, &own, &[]), "{ok}");
        }
        for no in [
            "http://localhost:3000",
            "http://127.0.0.1",
            "https://127.0.0.1:8080",
            "http://evil.example:8080",
            "null",
            "http://127.0.0.1:8080.evil.example",
        ] {
            assert!(!origin_allowed(no, &own, &[]), "{no}");
        }
        let allowed = ["https://app.example:*".to_string()];
        assert!(origin_allowed("https://app.example:8443", &own, &allowed));
        assert!(!origin_allowed(
            "https://app.example.evil:8443",
            &own,
            &allowed
        ));
    }
}
