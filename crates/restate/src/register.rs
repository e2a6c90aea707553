//! Registering a worker address (one per fleet: a load balancer in front of N workers) with
//! Restate's admin API, as `restate deployments register` does.

use super::DurableError;
use serde_json::{Value, json};

pub(super) fn check_url(arg: &'static str, value: &str) -> Result<String, DurableError> {
    match reqwest::Url::parse(value) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => {
            Ok(value.trim_end_matches('/').to_string())
        }
        _ => Err(DurableError::BadUrl {
            arg,
            value: value.to_string(),
        }),
    }
}

/// Registers `endpoint` with the admin API at `admin` (re-registering the same address with
/// `force`, after its handlers changed); returns Restate's answer (`id`, `services`).
pub async fn register(admin: &str, endpoint: &str, force: bool) -> Result<Value, DurableError> {
    let admin = check_url("--admin", admin)?;
    let endpoint = check_url("--endpoint", endpoint)?;
    let url = format!("{admin}/deployments");
    let unreachable = |e: reqwest::Error| DurableError::Unreachable {
        url: url.clone(),
        message: e.to_string(),
    };
    let client = kiln_egress::tls::client_builder()
        .build()
        .map_err(unreachable)?;
    let reply = client
        .post(&url)
        .json(&json!({"uri": endpoint, "force": force}))
        .send()
        .await
        .map_err(unreachable)?;
    let status = reply.status();
    let body = reply.text().await.map_err(unreachable)?;
    if !status.is_success() {
        return Err(DurableError::Refused {
            endpoint,
            status: status.as_u16(),
            body,
        });
    }
    Ok(serde_json::from_str(&body).unwrap_or(Value::String(body)))
}
