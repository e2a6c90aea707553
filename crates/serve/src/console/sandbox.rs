//! The console's sandbox origin for MCP Apps: a second listener (its own port, so its own
//! origin) that serves only the sandbox proxy — no API, no data, no cookie. The proxy page is
//! served under the CSP the app's page declares (`?csp=`), which its inner frame inherits, and
//! may be embedded only by the console that asked (`?host=`).

use axum::Router;
use axum::extract::Query;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use kiln_registry::served::apps::{is_origin, page_csp};
use serde::Deserialize;
use serde_json::Value;

const PROXY_SCRIPT: &str = include_str!("../../ui/sandbox.js");

const PROXY_PAGE: &str = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>kiln app sandbox</title>\n<style>html,body{margin:0;height:100%;overflow:hidden}iframe{border:0;width:100%;height:100%;display:block}</style>\n</head><body><script src=\"/sandbox.js\"></script></body></html>\n";

/// What the console asks of the sandbox: its own origin and the page's declared CSP.
#[derive(Deserialize)]
pub struct ProxyQuery {
    host: String,
    #[serde(default)]
    csp: Option<String>,
}

/// The sandbox origin's whole router.
pub fn router() -> Router {
    Router::new()
        .route("/sandbox", get(proxy_page))
        .route("/sandbox.js", get(proxy_script))
}

fn fixed(v: &'static str) -> HeaderValue {
    HeaderValue::from_static(v)
}

/// `GET /sandbox?host=ORIGIN&csp=JSON`: the proxy page under the page's CSP.
async fn proxy_page(Query(q): Query<ProxyQuery>) -> Response {
    if !is_origin(&q.host) || !q.host.starts_with("http") {
        let said = "host must be the console's origin, as http://127.0.0.1:8080";
        return (StatusCode::BAD_REQUEST, said).into_response();
    }
    let declared: Value = match q.csp.as_deref().map(serde_json::from_str).transpose() {
        Ok(v) => v.unwrap_or(Value::Null),
        Err(e) => {
            let said = format!("csp must be the page's _meta.ui.csp as JSON: {e}");
            return (StatusCode::BAD_REQUEST, said).into_response();
        }
    };
    let Ok(csp) = HeaderValue::from_str(&page_csp(&declared, &q.host)) else {
        return (
            StatusCode::BAD_REQUEST,
            "csp holds characters a header cannot",
        )
            .into_response();
    };
    let mut resp = PROXY_PAGE.into_response();
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, fixed("text/html; charset=utf-8"));
    headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, fixed("nosniff"));
    headers.insert(header::REFERRER_POLICY, fixed("no-referrer"));
    headers.insert(header::CACHE_CONTROL, fixed("no-store"));
    resp
}

/// `GET /sandbox.js`: the proxy's script.
async fn proxy_script() -> Response {
    let mut resp = PROXY_SCRIPT.into_response();
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        fixed("text/javascript; charset=utf-8"),
    );
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, fixed("nosniff"));
    headers.insert(header::CACHE_CONTROL, fixed("no-cache"));
    resp
}
