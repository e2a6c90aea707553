//! The remote agent over HTTP: its card (read once: the JSON-RPC endpoint, and whether it
//! streams), JSON-RPC calls, and `SendStreamingMessage` read as Server-Sent Events. Every
//! connection goes through the host's resolver checked against the URL's host, without
//! redirects; every answer is bounded.

use crate::agent_spec::A2aAgentSpec;
use kiln_core::failure::{FailureKind, ToolFailure};
use kiln_egress::resolver::{CheckedResolver, NameResolver};
use kiln_egress::{NetRule, Target};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The tool's failure, seen by the model.
pub(super) fn failed(message: String) -> ToolFailure {
    ToolFailure::visible(FailureKind::ToolError, message)
}

/// The largest answer (or one streamed event) read from the remote agent.
const MAX_REPLY: usize = 4 << 20;
/// The most a whole stream may carry.
const MAX_STREAM: usize = 4 * MAX_REPLY;
/// How long one request may take (a stream: the whole of it).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// What the card said: where to call, and whether the agent streams.
#[derive(Debug, Clone)]
pub(super) struct Card {
    pub(super) endpoint: String,
    pub(super) streaming: bool,
    /// The token URL of an OAuth 2 scheme's client-credentials flow, when the card names one.
    pub(super) token_url: Option<String>,
}

/// A declared remote agent and, once read, its card.
pub(super) struct Remote {
    pub(super) spec: A2aAgentSpec,
    pub(super) card: OnceLock<Card>,
    /// The OAuth client's token and until when it is used (`oauth`).
    pub(super) kept: Mutex<Option<(String, Instant)>>,
}

/// One request's reach: the resolver and the bearer token.
pub(super) struct Reach<'a> {
    pub(super) resolver: &'a Arc<dyn NameResolver>,
    pub(super) token: Option<&'a str>,
}

impl Remote {
    /// Its card: read once.
    pub(super) async fn card(&self, reach: &Reach<'_>) -> Result<Card, ToolFailure> {
        if let Some(c) = self.card.get() {
            return Ok(c.clone());
        }
        let url = format!(
            "{}/.well-known/agent-card.json",
            self.spec.url.trim_end_matches('/')
        );
        let mut resp = self.send(&url, None, reach).await?;
        let card: Value = self.json(&url, &mut resp).await?;
        let read = Card {
            endpoint: jsonrpc_url(&card).unwrap_or_else(|| self.spec.url.clone()),
            streaming: card["capabilities"]["streaming"] == true,
            token_url: client_credentials_url(&card),
        };
        Ok(self.card.get_or_init(|| read).clone())
    }

    /// Forgets the kept OAuth token (the agent refused it).
    fn forget_token(&self) {
        if let Ok(mut kept) = self.kept.lock() {
            *kept = None;
        }
    }

    /// A JSON-RPC call's result, or the remote error as the tool's.
    pub(super) async fn rpc(
        &self,
        method: &str,
        params: Value,
        reach: &Reach<'_>,
    ) -> Result<Value, ToolFailure> {
        let endpoint = self.card(reach).await?.endpoint;
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut resp = self.send(&endpoint, Some(&body), reach).await?;
        let reply = self.json(&endpoint, &mut resp).await?;
        self.result(method, reply)
    }

    /// `SendStreamingMessage`: each event's result handed to `each` as it comes (`false` from
    /// it stops reading).
    pub(super) async fn stream(
        &self,
        params: Value,
        reach: &Reach<'_>,
        mut each: impl FnMut(Value) -> bool,
    ) -> Result<(), ToolFailure> {
        let name = &self.spec.name;
        let endpoint = self.card(reach).await?.endpoint;
        let body =
            json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": params});
        let mut resp = self.send(&endpoint, Some(&body), reach).await?;
        let (mut pending, mut total) = (Vec::<u8>::new(), 0usize);
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| failed(format!("a2a agent \"{name}\": {e}")))?
        {
            total += chunk.len();
            if total > MAX_STREAM || pending.len() + chunk.len() > MAX_REPLY {
                return Err(failed(format!(
                    "a2a agent \"{name}\": its stream is over {} bytes",
                    if total > MAX_STREAM {
                        MAX_STREAM
                    } else {
                        MAX_REPLY
                    }
                )));
            }
            pending.extend_from_slice(&chunk);
            while let Some(end) = event_end(&pending) {
                let event: Vec<u8> = pending.drain(..end.1).take(end.0).collect();
                let Some(data) = event_data(&event) else {
                    continue;
                };
                let reply: Value = serde_json::from_str(&data).map_err(|e| {
                    failed(format!("a2a agent \"{name}\": an event is not JSON: {e}"))
                })?;
                if !each(self.result("SendStreamingMessage", reply)?) {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    fn result(&self, method: &str, reply: Value) -> Result<Value, ToolFailure> {
        if let Some(e) = reply.get("error") {
            return Err(failed(format!(
                "a2a agent \"{}\" refused {method}: {} ({})",
                self.spec.name,
                e["message"].as_str().unwrap_or("no message"),
                e["code"]
            )));
        }
        Ok(reply["result"].clone())
    }

    /// GET (no body) or POST `url`, through the host's resolver checked against the URL's
    /// host; a status other than success is the tool's error.
    async fn send(
        &self,
        url: &str,
        body: Option<&Value>,
        reach: &Reach<'_>,
    ) -> Result<reqwest::Response, ToolFailure> {
        let name = &self.spec.name;
        let (client, parsed) = checked_client(name, url, reach.resolver)?;
        let mut req = match body {
            Some(b) => client.post(parsed).json(b),
            None => client.get(parsed),
        }
        .header("A2A-Version", "1.0");
        if let Some(t) = reach.token {
            req = req.bearer_auth(t);
        }
        let mut resp = req.send().await.map_err(|e| {
            failed(format!(
                "a2a agent \"{name}\": {}",
                kiln_egress::describe(&e, url)
            ))
        })?;
        let status = resp.status();
        if status == reqwest::StatusCode::UNAUTHORIZED {
            // A kept OAuth token the agent no longer takes: the next call asks for a new one.
            self.forget_token();
        }
        if !status.is_success() {
            let bytes = self.bytes(&mut resp).await.unwrap_or_default();
            let text = String::from_utf8_lossy(&bytes);
            let short: String = text.chars().take(300).collect();
            return Err(failed(format!(
                "a2a agent \"{name}\": {url} answered {status}: {short}"
            )));
        }
        Ok(resp)
    }

    async fn bytes(&self, resp: &mut reqwest::Response) -> Result<Vec<u8>, ToolFailure> {
        read_bounded(&self.spec.name, "its answer", resp).await
    }

    async fn json(&self, url: &str, resp: &mut reqwest::Response) -> Result<Value, ToolFailure> {
        let bytes = self.bytes(resp).await?;
        serde_json::from_slice(&bytes).map_err(|e| {
            failed(format!(
                "a2a agent \"{}\": {url} did not answer JSON: {e}",
                self.spec.name
            ))
        })
    }
}

/// A client for `url` alone: through the host's resolver checked against the URL's host
/// (never a link-local or metadata address), without redirects or proxies, bounded in time.
pub(super) fn checked_client(
    name: &str,
    url: &str,
    resolver: &Arc<dyn NameResolver>,
) -> Result<(reqwest::Client, reqwest::Url), ToolFailure> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| failed(format!("a2a agent \"{name}\": {url} is not a URL: {e}")))?;
    let target = Target::of_url(&parsed)
        .ok_or_else(|| failed(format!("a2a agent \"{name}\": {url} has no host")))?;
    let scope = match &target.host {
        kiln_egress::NetHost::Name(n) => n.clone(),
        kiln_egress::NetHost::Ip(ip) => ip.to_string(),
    };
    let checked = CheckedResolver {
        target,
        rule: NetRule {
            declared: vec![None],
            granted: vec![Some(scope)],
        },
        resolver: resolver.clone(),
    };
    let tls = match parsed.scheme() {
        "http" => kiln_egress::tls::plain_client_builder(),
        _ => kiln_egress::tls::client_builder(),
    };
    let client = tls
        .redirect(reqwest::redirect::Policy::none())
        .timeout(REQUEST_TIMEOUT)
        .dns_resolver(Arc::new(checked))
        .no_proxy()
        .build()
        .map_err(|e| failed(format!("a2a agent \"{name}\": {e}")))?;
    Ok((client, parsed))
}

/// A bounded JSON answer of `req` (its status beside it), for the OAuth requests.
pub(super) async fn json_of(
    name: &str,
    what: &str,
    req: reqwest::RequestBuilder,
) -> Result<(u16, Value), ToolFailure> {
    let mut resp = req
        .send()
        .await
        .map_err(|e| failed(format!("a2a agent \"{name}\": {what}: {e}")))?;
    let status = resp.status().as_u16();
    let bytes = read_bounded(name, what, &mut resp).await?;
    Ok((
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    ))
}

/// The body of `resp`, refused past [`MAX_REPLY`] bytes.
async fn read_bounded(
    name: &str,
    what: &str,
    resp: &mut reqwest::Response,
) -> Result<Vec<u8>, ToolFailure> {
    let mut bytes = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| failed(format!("a2a agent \"{name}\": {what}: {e}")))?
    {
        if bytes.len() + chunk.len() > MAX_REPLY {
            return Err(failed(format!(
                "a2a agent \"{name}\": {what} is over {MAX_REPLY} bytes"
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// Where the first event in `buf` ends: its length, and where the next begins (after the
/// blank line).
fn event_end(buf: &[u8]) -> Option<(usize, usize)> {
    let lf = buf
        .windows(2)
        .position(|w| w == b"\n\n")
        .map(|i| (i, i + 2));
    let crlf = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, i + 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 < b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// An event's `data:` lines joined (none: a comment or keep-alive).
fn event_data(event: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(event);
    let lines: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// The token URL of the card's first OAuth 2 scheme with a client-credentials flow.
fn client_credentials_url(card: &Value) -> Option<String> {
    card["securitySchemes"]
        .as_object()?
        .values()
        .find_map(|s| s["oauth2SecurityScheme"]["flows"]["clientCredentials"]["tokenUrl"].as_str())
        .map(str::to_string)
}

/// The JSON-RPC interface's URL on a card.
fn jsonrpc_url(card: &Value) -> Option<String> {
    card["supportedInterfaces"]
        .as_array()?
        .iter()
        .find(|i| {
            i["protocolBinding"]
                .as_str()
                .is_some_and(|b| b.eq_ignore_ascii_case("JSONRPC"))
        })
        .and_then(|i| i["url"].as_str())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_on_blank_lines_and_join_their_data_lines() {
        let buf = b": keep-alive\n\ndata: {\"a\":\ndata: 1}\r\n\r\nrest";
        let first = event_end(buf).expect("an event");
        assert_eq!(event_data(&buf[..first.0]), None, "a comment");
        let rest = &buf[first.1..];
        let second = event_end(rest).expect("an event");
        assert_eq!(
            event_data(&rest[..second.0]).as_deref(),
            Some("{\"a\":\n1}")
        );
        assert_eq!(event_end(&rest[second.1..]), None);
        let card = json!({"supportedInterfaces": [{"protocolBinding": "HTTP+JSON", "url": "r"},
            {"protocolBinding": "JSONRPC", "url": "j"}]});
        assert_eq!(jsonrpc_url(&card).as_deref(), Some("j"));
    }
}
