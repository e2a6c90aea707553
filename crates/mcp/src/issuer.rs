//! kiln as an OAuth resource server (`--auth-issuer URL`, on `kiln serve` and `kiln mcp
//! --http`): access tokens an organisation's
//! authorization server issues are JWTs checked here against the issuer's published keys
//! (JWKS), its name, kiln's own resource URL as the audience and their expiry. Their scopes
//! are capability ceilings (`kiln:fs.read:docs` is the ceiling `fs.read:docs`, through the same
//! grants intersection as a static token's caps) and their subject is the actor. Clients learn
//! where to get a token from the protected resource metadata (RFC 9728) and the 401's
//! `WWW-Authenticate` header.

pub(crate) mod jwks;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jwks::{KeyCache, KeyError};
use kiln_core::capability::Grants;
use serde_json::{Value, json};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The prefix a scope has when it names a capability.
pub const SCOPE_PREFIX: &str = "kiln:";
/// Clock skew allowed on `exp` and `nbf`.
const LEEWAY: u64 = 2;

/// Who a good access token acts for, and what it may use at most.
#[derive(Debug, Clone)]
pub struct Verified {
    /// `oauth:SUB` (or `oauth-client:CLIENT_ID` without a subject): always named, a token
    /// naming neither is refused.
    pub actor: String,
    /// Its scopes as capabilities.
    pub ceiling: Grants,
}

/// The authorization server whose tokens kiln accepts.
pub struct Issuer {
    issuer: String,
    audience: String,
    http: reqwest::Client,
    keys: KeyCache,
}

/// Why a token was not taken: a client's mistake (401), or the authorization server out of
/// reach (503).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TokenRefused {
    /// The token is not good.
    #[error("the access token is not valid: {0}")]
    Invalid(String),
    /// Its keys could not be fetched.
    #[error("the authorization server's keys could not be fetched")]
    Unreachable,
}

fn refused(why: &str) -> TokenRefused {
    TokenRefused::Invalid(why.to_string())
}

impl std::fmt::Debug for Issuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issuer")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .finish()
    }
}

impl Issuer {
    /// Tokens of `issuer` (its exact `iss`) meant for `audience` (kiln's resource URL).
    pub fn new(issuer: &str, audience: &str) -> Result<Self, String> {
        let parsed =
            reqwest::Url::parse(issuer).map_err(|e| format!("--auth-issuer {issuer}: {e}"))?;
        if !matches!(parsed.scheme(), "https" | "http") {
            return Err(format!("--auth-issuer {issuer}: expected an http(s) URL"));
        }
        let http = kiln_egress::tls::client_builder()
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| format!("an HTTP client: {e}"))?;
        Ok(Issuer {
            issuer: issuer.to_string(),
            audience: audience.trim_end_matches('/').to_string(),
            http,
            keys: KeyCache::default(),
        })
    }

    /// The protected resource metadata kiln publishes (RFC 9728).
    pub fn metadata(&self) -> Value {
        json!({
            "resource": self.audience,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "kiln",
        })
    }

    /// The `WWW-Authenticate` value of a 401: where the metadata is.
    pub fn challenge(&self) -> String {
        format!(
            "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource\"",
            self.audience
        )
    }

    /// Who a JWT access token acts for, and what it may use at most.
    pub async fn verify(&self, token: &str) -> Result<Verified, TokenRefused> {
        let mut parts = token.split('.');
        let (Some(head), Some(body), Some(sig), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(refused("not a JWT"));
        };
        let decode = |part: &str| {
            URL_SAFE_NO_PAD
                .decode(part)
                .map_err(|_| refused("not a JWT"))
        };
        let header: Value =
            serde_json::from_slice(&decode(head)?).map_err(|_| refused("not a JWT"))?;
        let claims: Value =
            serde_json::from_slice(&decode(body)?).map_err(|_| refused("not a JWT"))?;
        let signature = decode(sig)?;
        let signed = &token[..head.len() + 1 + body.len()];
        let key = self.key(header["kid"].as_str()).await?;
        check_signature(&header, &key, signed.as_bytes(), &signature)?;
        self.check_claims(&claims)?;
        Ok(Verified {
            actor: actor(&claims)?,
            ceiling: ceiling(claims["scope"].as_str().unwrap_or_default())?,
        })
    }

    fn check_claims(&self, claims: &Value) -> Result<(), TokenRefused> {
        if claims["iss"].as_str() != Some(self.issuer.as_str()) {
            return Err(refused("it was issued by another authorization server"));
        }
        let audience =
            |a: &Value| a.as_str().map(|a| a.trim_end_matches('/')) == Some(&self.audience);
        let for_kiln = match &claims["aud"] {
            Value::Array(all) => all.iter().any(audience),
            one => audience(one),
        };
        if !for_kiln {
            return Err(refused(
                "it is meant for another resource (its audience is not this server)",
            ));
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        match claims["exp"].as_u64() {
            Some(exp) if exp + LEEWAY > now => {}
            Some(_) => return Err(refused("it has expired")),
            None => return Err(refused("it has no expiry")),
        }
        if claims["nbf"].as_u64().is_some_and(|nbf| nbf > now + LEEWAY) {
            return Err(refused("it is not valid yet"));
        }
        Ok(())
    }

    /// The issuer's key `kid` (or its only key), fetching the keys when they are stale or the
    /// id is new to them (see [`crate::issuer::jwks`]).
    async fn key(&self, kid: Option<&str>) -> Result<Value, TokenRefused> {
        let fetch = || async {
            self.fetch_keys().await.inspect_err(|e| {
                tracing::warn!(issuer = %self.issuer, "the issuer's keys could not be fetched: {e}");
            })
        };
        self.keys.key(kid, fetch).await.map_err(|e| match e {
            KeyError::Unreachable => TokenRefused::Unreachable,
            KeyError::Unknown => {
                refused("it is signed with a key the authorization server does not publish")
            }
        })
    }

    async fn fetch_keys(&self) -> Result<Vec<Value>, String> {
        let base = self.issuer.trim_end_matches('/');
        let mut jwks_uri = None;
        for path in [
            "/.well-known/oauth-authorization-server",
            "/.well-known/openid-configuration",
        ] {
            let Ok(reply) = self.http.get(format!("{base}{path}")).send().await else {
                continue;
            };
            if reply.status().is_success()
                && let Ok(meta) = reply.json::<Value>().await
                && let Some(uri) = meta["jwks_uri"].as_str()
            {
                jwks_uri = Some(uri.to_string());
                break;
            }
        }
        let uri = jwks_uri.ok_or("the issuer's metadata names no jwks_uri")?;
        let keys: Value = self
            .http
            .get(&uri)
            .send()
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())?;
        Ok(keys["keys"].as_array().cloned().unwrap_or_default())
    }
}

/// Who a token's claims name: the user `oauth:SUB`, else the client acting for itself
/// `oauth-client:CLIENT_ID` (apart, so a client named `ann` is not the user `ann`). A token
/// whose `sub` is its `client_id` is the client's own (RFC 9068 §2.2: a client-credentials
/// token's subject identifies the client), so it is the client, not a user. A token naming
/// neither as visible text is refused: an actor nobody is named would be nobody's and
/// everybody's at once.
fn actor(claims: &Value) -> Result<String, TokenRefused> {
    let named = |claim: &str| match &claims[claim] {
        Value::Null => Ok(None),
        Value::String(s) if !s.trim().is_empty() => match crate::actor::check_name(s) {
            Ok(()) => Ok(Some(s.clone())),
            Err(why) => Err(refused(&format!("its {claim} claim {why}"))),
        },
        _ => Err(refused(&format!(
            "its {claim} claim is not a non-empty string without control characters"
        ))),
    };
    match (named("sub")?, named("client_id")?) {
        (Some(user), Some(client)) if user == client => {
            Ok(format!("{}{client}", crate::actor::CLIENT))
        }
        (Some(user), _) => Ok(format!("{}{user}", crate::actor::USER)),
        (None, Some(client)) => Ok(format!("{}{client}", crate::actor::CLIENT)),
        (None, None) => Err(refused(
            "it names no subject (neither a sub nor a client_id claim), so it acts for nobody",
        )),
    }
}

/// The ceiling a token's scopes give: each `kiln:CAP[:SCOPE]` scope is a capability; others
/// (the OpenID ones, another service's) give nothing.
pub fn ceiling(scopes: &str) -> Result<Grants, TokenRefused> {
    let caps: Vec<&str> = scopes
        .split_whitespace()
        .filter_map(|s| s.strip_prefix(SCOPE_PREFIX))
        .collect();
    Grants::parse(&caps)
        .map_err(|e| refused(&format!("its scope names no capability kiln knows ({e})")))
}

fn check_signature(
    header: &Value,
    key: &Value,
    signed: &[u8],
    signature: &[u8],
) -> Result<(), TokenRefused> {
    use ring::signature as sig;
    let field = |k: &Value, name: &str| {
        k[name]
            .as_str()
            .and_then(|v| URL_SAFE_NO_PAD.decode(v).ok())
            .ok_or_else(|| refused("the authorization server's key is malformed"))
    };
    let ok = match (header["alg"].as_str(), key["kty"].as_str()) {
        (Some("RS256"), Some("RSA")) => sig::RsaPublicKeyComponents {
            n: field(key, "n")?,
            e: field(key, "e")?,
        }
        .verify(&sig::RSA_PKCS1_2048_8192_SHA256, signed, signature)
        .is_ok(),
        (Some("ES256"), Some("EC")) => {
            let mut point = vec![4u8];
            point.extend(field(key, "x")?);
            point.extend(field(key, "y")?);
            sig::UnparsedPublicKey::new(&sig::ECDSA_P256_SHA256_FIXED, point)
                .verify(signed, signature)
                .is_ok()
        }
        (alg, _) => {
            return Err(refused(&format!(
                "it is signed with {} (kiln takes RS256 and ES256)",
                alg.unwrap_or("no algorithm")
            )));
        }
    };
    if ok {
        Ok(())
    } else {
        Err(refused("its signature does not match"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_must_name_who_it_acts_for() {
        let actor = |claims: Value| super::actor(&claims);
        assert_eq!(actor(json!({"sub": "ann"})), Ok("oauth:ann".into()));
        assert_eq!(
            actor(json!({"client_id": "app"})),
            Ok("oauth-client:app".into())
        );
        assert_eq!(
            actor(json!({"sub": "ann", "client_id": "app"})),
            Ok("oauth:ann".into())
        );
        // A client-credentials token: its subject is the client.
        assert_eq!(
            actor(json!({"sub": "app", "client_id": "app"})),
            Ok("oauth-client:app".into())
        );
        for nobody in [
            json!({}),
            json!({"sub": 42}),
            json!({"sub": ""}),
            json!({"sub": null, "client_id": " "}),
            json!({"client_id": ["app"]}),
            json!({"sub": "a\u{0}b"}),
            json!({"sub": "\u{200b}"}),
            json!({"client_id": "ann\u{200b}"}),
        ] {
            assert!(actor(nobody.clone()).is_err(), "{nobody}");
        }
    }

    #[test]
    fn scopes_become_capabilities_and_others_give_nothing() {
        let g = ceiling("openid kiln:store kiln:fs.read:docs other:thing").expect("scopes");
        assert_eq!(g.list(), "[store, fs.read:docs]");
        assert!(ceiling("kiln:net:").is_err());
    }
}
