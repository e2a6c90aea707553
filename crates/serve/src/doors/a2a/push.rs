//! Push notifications: a task's changes POSTed to the webhooks its client configured. A webhook
//! goes through kiln's egress policy as a script's `net` request does: its URL must be named by
//! one of the server's `--a2a-push` scopes when it is configured, and each address it resolves
//! to (`--resolve` included) is checked when it is called; redirects are not followed.

use crate::state::AppState;
use crate::table::tasks::{A2aTask, PushTarget};
use kiln_a2a::{A2aError, PushConfig, StreamResponse};
use kiln_egress::resolver::CheckedResolver;
use kiln_egress::{NetRule, Target};
use std::sync::Arc;
use std::time::Duration;

/// How long one delivery may take.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(10);

/// Checks `config`'s URL against the server's push scopes; the error says which flag opens it.
pub(crate) fn check(
    state: &AppState,
    config: &PushConfig,
    path: &str,
) -> Result<PushTarget, A2aError> {
    let at = format!("{path}.url");
    let url = reqwest::Url::parse(&config.url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .ok_or_else(|| {
            A2aError::invalid_params(&at, format!("{at} must be an http or https URL"))
        })?;
    let target = Target::of_url(&url)
        .ok_or_else(|| A2aError::invalid_params(&at, format!("{at} has no host")))?;
    let scopes = &state.options.a2a.push;
    let scope = scopes
        .iter()
        .find(|s| kiln_egress::scope_names(s.as_deref(), &target))
        .ok_or_else(|| {
            A2aError::invalid_params(
                &at,
                format!(
                    "{at}: {target} is outside this server's egress policy for webhooks (kiln serve --a2a-push net:{target} lets them reach it)"
                ),
            )
        })?;
    Ok(PushTarget {
        url,
        target,
        scope: scope.clone(),
    })
}

/// Delivers `event` to every webhook of `task`, each at most [`DELIVERY_TIMEOUT`]; failures
/// are logged (without the config's token or credentials), never returned.
pub(crate) async fn deliver(state: &AppState, task: &A2aTask, event: &StreamResponse) {
    let configs = task.push_configs();
    if configs.is_empty() {
        return;
    }
    let body = serde_json::to_vec(event).unwrap_or_default();
    let sends = configs.into_iter().map(|(config, target)| {
        let body = body.clone();
        async move {
            let sent = send(state, &config, &target, body).await;
            if let Err(e) = sent {
                tracing::warn!(task = %task.id, url = %target.target, error = %e, "push notification not delivered");
            }
        }
    });
    futures_util::future::join_all(sends).await;
}

async fn send(
    state: &AppState,
    config: &PushConfig,
    target: &PushTarget,
    body: Vec<u8>,
) -> Result<(), String> {
    let tls = match target.url.scheme() {
        "http" => kiln_egress::tls::plain_client_builder(),
        _ => kiln_egress::tls::client_builder(),
    };
    let resolver = CheckedResolver {
        target: target.target.clone(),
        rule: NetRule {
            declared: vec![None],
            granted: vec![target.scope.clone()],
        },
        resolver: state.host.services().egress.resolver.clone(),
    };
    let client = tls
        .redirect(reqwest::redirect::Policy::none())
        .timeout(DELIVERY_TIMEOUT)
        .dns_resolver(Arc::new(resolver))
        .no_proxy()
        .build()
        .map_err(|e| e.to_string())?;
    let mut req = client
        .post(target.url.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body);
    if let Some(token) = &config.token {
        req = req.header("X-A2A-Notification-Token", token);
    }
    if let Some(auth) = &config.authentication {
        let value = match &auth.credentials {
            Some(c) => format!("{} {c}", auth.scheme),
            None => auth.scheme.clone(),
        };
        req = req.header(reqwest::header::AUTHORIZATION, value);
    }
    let resp = req
        .send()
        .await
        .map_err(|e| kiln_egress::describe(&e, target.url.as_str()))?;
    match resp.status().is_success() {
        true => Ok(()),
        false => Err(format!("the webhook answered {}", resp.status())),
    }
}

/// Forwards each change of `task` to its webhooks until the task ends (started when its first
/// config is added).
pub(crate) fn forward(state: Arc<AppState>, task: Arc<A2aTask>) {
    let mut events = task.subscribe();
    tokio::spawn(async move {
        loop {
            let ev = match events.recv().await {
                Ok(ev) => ev,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(_) => return,
            };
            let end = ev.state().is_some_and(|s| s.is_terminal());
            // A streamed piece of the answer is not pushed: the whole answer is, at the end.
            if matches!(&ev, StreamResponse::ArtifactUpdate(u) if !u.last_chunk) {
                continue;
            }
            deliver(&state, &task, &ev).await;
            if end {
                return;
            }
        }
    });
}
