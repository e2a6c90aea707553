//! The web console's pages, served by kiln itself at `/ui`: a few static files compiled into
//! the binary (no CDN, no network: it works on an air-gapped machine), each with a strict
//! Content-Security-Policy (scripts and styles from this server only, no inline script, no
//! framing). The pages hold no data and no secret: they call the same `/v1/*` API as any
//! client, with the bearer token the person types (kept in the tab's session storage, never
//! in a cookie, so no request carries ambient authority and a cross-site form can do nothing).

use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The console's Content-Security-Policy.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// One file of the console: its name under `/ui/`, its media type and its text.
struct Asset {
    name: &'static str,
    media_type: &'static str,
    text: &'static str,
}

macro_rules! asset {
    ($name:literal, $media:expr) => {
        Asset {
            name: $name,
            media_type: $media,
            text: include_str!(concat!("../../ui/", $name)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the console, in the binary.
const ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("console.css", "text/css; charset=utf-8"),
    asset!("app.js", JS),
    asset!("api.js", JS),
    asset!("runs.js", JS),
    asset!("approvals.js", JS),
    asset!("tools.js", JS),
    asset!("form.js", JS),
    asset!("chat.js", JS),
    asset!("scripts.js", JS),
    asset!("apps.js", JS),
];

/// The response for `asset`, with the console's security headers.
fn serve(asset: &Asset) -> Response {
    serve_with(asset, HeaderValue::from_static(CSP))
}

/// [`serve`] under `csp`.
fn serve_with(asset: &Asset, csp: HeaderValue) -> Response {
    let mut resp = asset.text.into_response();
    let headers = resp.headers_mut();
    let fixed = |v: &'static str| HeaderValue::from_static(v);
    headers.insert(header::CONTENT_TYPE, fixed(asset.media_type));
    headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, fixed("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, fixed("DENY"));
    headers.insert(header::REFERRER_POLICY, fixed("no-referrer"));
    headers.insert(
        header::HeaderName::from_static("cross-origin-opener-policy"),
        fixed("same-origin"),
    );
    headers.insert(
        header::HeaderName::from_static("cross-origin-resource-policy"),
        fixed("same-origin"),
    );
    headers.insert(header::CACHE_CONTROL, fixed("no-cache"));
    resp
}

/// `GET /ui` and `GET /ui/`: the console's page, which may frame the apps' sandbox origin
/// (the host name it was reached by, the sandbox's port) and nothing else.
pub async fn index(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(|h| {
            h.rsplit_once(':')
                .filter(|(_, p)| p.parse::<u16>().is_ok())
                .map_or(h, |(n, _)| n)
        })
        .filter(|h| {
            h.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-.[]:".contains(c))
        });
    let csp = match (host, state.sandbox_port()) {
        (Some(host), Some(port)) => {
            HeaderValue::from_str(&format!("{CSP}; frame-src http://{host}:{port}")).ok()
        }
        _ => None,
    };
    serve_with(&ASSETS[0], csp.unwrap_or(HeaderValue::from_static(CSP)))
}

/// `GET /ui/{file}`: one of the console's files, or 404.
pub async fn file(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|a| a.name == name) {
        Some(asset) => serve(asset),
        None => crate::error::ApiError::not_found("unknown_url", "no such file of the console")
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_asset_loads_anything_from_elsewhere_or_runs_inline_script() {
        for asset in ASSETS {
            // No address of another server (the SVG namespace names no server), and no code
            // made from text at run time.
            let text = asset.text.replace("'http://www.w3.org/2000/svg'", "");
            for banned in ["http://", "https://", "eval(", "new Function"] {
                assert!(!text.contains(banned), "{} holds {banned}", asset.name);
            }
        }
        let page = ASSETS[0].text;
        for tag in page.split("<script").skip(1) {
            let open = tag.split('>').next().unwrap_or_default();
            assert!(
                open.contains("src="),
                "inline script in index.html: <script{open}>"
            );
        }
        let attributes = page.split('<').flat_map(|t| t.split_whitespace().skip(1));
        for attribute in attributes {
            assert!(
                !(attribute.starts_with("style=")
                    || attribute.starts_with("on") && attribute.contains('=')),
                "inline handler or style in index.html: {attribute}"
            );
        }
    }

    #[test]
    fn every_asset_is_served_with_the_policy_and_an_unknown_one_is_not() {
        for asset in ASSETS {
            let resp = serve(asset);
            assert_eq!(resp.headers()[header::CONTENT_SECURITY_POLICY], CSP);
            assert_eq!(resp.headers()[header::CONTENT_TYPE], asset.media_type);
        }
        let missing = futures_util::FutureExt::now_or_never(file(Path("../Cargo.toml".into())));
        assert_eq!(missing.map(|r| r.status().as_u16()), Some(404));
    }
}
