//! A machine's OAuth token for a remote agent (`.oauth(#{ grant: "client_credentials",
//! client_id, client_secret_env, scopes })`): the token URL is the card's (an OAuth 2 scheme's
//! client-credentials flow), else found the way MCP clients find it: the agent's protected
//! resource metadata (RFC 9728, which also names the `resource` the token is for), then its
//! authorization server's metadata (RFC 8414, or OpenID discovery). The client authenticates
//! with HTTP Basic unless the server takes only the body. The token is kept until shortly
//! before it expires; the secret comes from the environment and is never shown. Found that way,
//! the place the secret goes is what the remote agent names, as MCP clients trust a server's
//! metadata; `token_url` pins it instead.

use super::remote::{Reach, Remote, checked_client, failed, json_of};
use crate::mount_spec::OAuth;
use kiln_core::failure::ToolFailure;
use kiln_egress::resolver::NameResolver;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A token is asked again this long before it expires.
const EARLY: Duration = Duration::from_secs(30);

/// Where to ask and for what: the token endpoint, whether it takes Basic, the resource.
struct Endpoint {
    token_url: String,
    basic: bool,
    resource: String,
}

impl Remote {
    /// A bearer token from the OAuth client: the kept one, or a new one.
    pub(super) async fn oauth_token(
        &self,
        oauth: &OAuth,
        resolver: &Arc<dyn NameResolver>,
    ) -> Result<String, ToolFailure> {
        if let Ok(kept) = self.kept.lock()
            && let Some((token, until)) = kept.as_ref()
            && Instant::now() < *until
        {
            return Ok(token.clone());
        }
        let name = &self.spec.name;
        let bad = |m: &str| failed(format!("a2a agent \"{name}\": OAuth: {m}"));
        let (Some(id), Some(var)) = (&oauth.client_id, &oauth.client_secret_env) else {
            return Err(bad(
                "grant client_credentials needs client_id and client_secret_env",
            ));
        };
        let secret = std::env::var(var)
            .ok()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| bad(&format!("set {var} to the client's secret")))?;
        let at = self.endpoint(resolver, oauth.token_url.as_deref()).await?;
        let mut form = vec![("grant_type", "client_credentials".to_string())];
        form.push(("resource", at.resource.clone()));
        if !oauth.scopes.is_empty() {
            form.push(("scope", oauth.scopes.join(" ")));
        }
        if !at.basic {
            form.push(("client_id", id.clone()));
            form.push(("client_secret", secret.clone()));
        }
        let (client, url) = checked_client(name, &at.token_url, resolver)?;
        let mut req = client
            .post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form_encoded(&form));
        if at.basic {
            req = req.basic_auth(id, Some(&secret));
        }
        let (status, body) = json_of(name, "the token request", req).await?;
        let token = match body["access_token"].as_str() {
            Some(t) if status == 200 => t.to_string(),
            _ => {
                let why = body["error_description"]
                    .as_str()
                    .or(body["error"].as_str());
                return Err(bad(&format!(
                    "the token request answered HTTP {status}: {}",
                    why.unwrap_or("no access token")
                )));
            }
        };
        let lasts = body["expires_in"]
            .as_u64()
            .map_or(Duration::from_secs(300), Duration::from_secs);
        let until = Instant::now() + lasts.saturating_sub(EARLY);
        if let Ok(mut kept) = self.kept.lock() {
            *kept = Some((token.clone(), until));
        }
        Ok(token)
    }

    /// The first of `urls` answering 200 with a JSON object holding `key` (else `null`).
    async fn first_with(
        &self,
        resolver: &Arc<dyn NameResolver>,
        urls: [String; 2],
        key: &str,
    ) -> Result<Value, ToolFailure> {
        let name = &self.spec.name;
        for url in urls {
            let (client, parsed) = checked_client(name, &url, resolver)?;
            if let (200, found) = json_of(name, "OAuth discovery", client.get(parsed)).await?
                && !found[key].is_null()
            {
                return Ok(found);
            }
        }
        Ok(Value::Null)
    }

    /// Where the token is asked for: `pinned`, else the card's token URL, else the
    /// authorization server the agent's protected resource metadata names; the resource is the
    /// one that metadata names (the audience the agent takes), else the agent's URL.
    async fn endpoint(
        &self,
        resolver: &Arc<dyn NameResolver>,
        pinned: Option<&str>,
    ) -> Result<Endpoint, ToolFailure> {
        let name = &self.spec.name;
        let agent = reqwest::Url::parse(&self.spec.url)
            .map_err(|e| failed(format!("a2a agent \"{name}\": {e}")))?;
        let origin = agent.origin().ascii_serialization();
        let path = agent.path().trim_end_matches('/');
        let resource_urls = [
            format!("{origin}/.well-known/oauth-protected-resource{path}"),
            format!("{origin}/.well-known/oauth-protected-resource"),
        ];
        let metadata = self.first_with(resolver, resource_urls, "resource").await?;
        let resource = metadata["resource"]
            .as_str()
            .unwrap_or(&self.spec.url)
            .to_string();
        let reach = Reach {
            resolver,
            token: None,
        };
        let named = match pinned {
            Some(url) => Some(url.to_string()),
            None => self.card(&reach).await?.token_url,
        };
        if let Some(token_url) = named {
            return Ok(Endpoint {
                token_url,
                basic: true,
                resource,
            });
        }
        let Some(server) = metadata["authorization_servers"][0].as_str() else {
            return Err(failed(format!(
                "a2a agent \"{name}\": OAuth: neither its card nor {origin}/.well-known/oauth-protected-resource names an authorization server"
            )));
        };
        let server = server.trim_end_matches('/');
        let server_urls = [
            format!("{server}/.well-known/oauth-authorization-server"),
            format!("{server}/.well-known/openid-configuration"),
        ];
        let found = self
            .first_with(resolver, server_urls, "token_endpoint")
            .await?;
        let token_url = found["token_endpoint"].as_str().ok_or_else(|| {
            failed(format!(
                "a2a agent \"{name}\": OAuth: {server} publishes no token endpoint"
            ))
        })?;
        let methods: Vec<&str> = found["token_endpoint_auth_methods_supported"]
            .as_array()
            .map(|m| m.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        Ok(Endpoint {
            token_url: token_url.to_string(),
            basic: methods.is_empty() || methods.contains(&"client_secret_basic"),
            resource,
        })
    }
}

/// `pairs` as an `application/x-www-form-urlencoded` body.
fn form_encoded(pairs: &[(&str, String)]) -> String {
    let mut url = reqwest::Url::parse("http://form.invalid/").expect("a constant URL");
    url.query_pairs_mut()
        .extend_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())));
    url.query().unwrap_or_default().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_request_is_form_encoded() {
        let body = form_encoded(&[
            ("grant_type", "client_credentials".into()),
            ("resource", "http://kiln.test/".into()),
            ("scope", "kiln:store kiln:net".into()),
        ]);
        assert_eq!(
            body,
            "grant_type=client_credentials&resource=http%3A%2F%2Fkiln.test%2F&scope=kiln%3Astore+kiln%3Anet"
        );
    }
}
