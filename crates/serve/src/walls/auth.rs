//! Bearer tokens: each names the actor it acts for and the capabilities it may use at most (its
//! ceiling). A request can narrow the grants it runs with, never widen them.

use crate::error::ApiError;
use axum::http::HeaderMap;
use kiln_core::capability::Grants;
use serde::Deserialize;
use std::path::Path;

/// A token problem found when the server starts.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The tokens file could not be read.
    #[error("{path}: {message}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// The tokens text is not the expected JSON.
    #[error("{source_name}: {message}")]
    Parse {
        /// The file or variable the text came from.
        source_name: String,
        /// What is wrong, with the entry's position.
        message: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenEntry {
    token: String,
    actor: String,
    #[serde(default)]
    caps: Vec<String>,
}

struct Token {
    secret: String,
    actor: String,
    ceiling: Grants,
}

/// The configured tokens (none: the server is open on loopback), and the authorization server
/// whose access tokens are taken too (`--auth-issuer`).
#[derive(Default)]
pub struct Tokens {
    tokens: Vec<Token>,
    issuer: Option<std::sync::Arc<kiln_mcp::issuer::Issuer>>,
}

impl Tokens {
    /// Parses `[{"token": "...", "actor": "alice", "caps": ["store", "net:api.example.com"]}]`;
    /// `source_name` (a file or variable) prefixes errors.
    pub fn parse(text: &str, source_name: &str) -> Result<Tokens, TokenError> {
        let parse_err = |message: String| TokenError::Parse {
            source_name: source_name.to_string(),
            message,
        };
        let entries: Vec<TokenEntry> = serde_json::from_str(text).map_err(|e| {
            parse_err(format!(
                "line {} column {}: {e} (expected [{{\"token\": ..., \"actor\": ..., \"caps\": [...]}}])",
                e.line(),
                e.column()
            ))
        })?;
        let mut tokens = Vec::new();
        for (i, e) in entries.into_iter().enumerate() {
            if e.token.len() < 16 {
                return Err(parse_err(format!(
                    "[{i}].token: tokens must be at least 16 characters"
                )));
            }
            check_actor(&e.actor).map_err(|why| parse_err(format!("[{i}].actor: {why}")))?;
            let ceiling =
                Grants::parse(&e.caps).map_err(|err| parse_err(format!("[{i}].caps: {err}")))?;
            tokens.push(Token {
                secret: e.token,
                actor: e.actor,
                ceiling,
            });
        }
        Ok(Tokens {
            tokens,
            issuer: None,
        })
    }

    /// Also takes the access tokens `issuer` issues for this server.
    pub fn with_issuer(mut self, issuer: kiln_mcp::issuer::Issuer) -> Self {
        self.issuer = Some(std::sync::Arc::new(issuer));
        self
    }

    /// The authorization server whose tokens are taken, if any.
    pub fn issuer(&self) -> Option<&kiln_mcp::issuer::Issuer> {
        self.issuer.as_deref()
    }

    /// Reads tokens from a file.
    pub fn from_file(path: &Path) -> Result<Tokens, TokenError> {
        let text = std::fs::read_to_string(path).map_err(|e| TokenError::Read {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// True when no token is configured (and no authorization server).
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty() && self.issuer.is_none()
    }

    /// How many tokens are configured.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Who a request acts for: the token's actor and ceiling (a static token's, or an access
    /// token of the authorization server); anyone when no token is configured.
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, ApiError> {
        if self.is_empty() {
            return Ok(Principal::default());
        }
        // Every 401 says how to authenticate (RFC 6750 §3): where to get a token when an
        // authorization server issues them, else kiln's own bearer tokens.
        let challenge = |e: ApiError| match &self.issuer {
            Some(issuer) => e.with_challenge(issuer.challenge()),
            None => e.with_challenge(STATIC_CHALLENGE.into()),
        };
        let presented = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(kiln_mcp::http::bearer_credentials)
            .ok_or_else(|| {
                challenge(ApiError::unauthorized(
                    "missing bearer token (Authorization: Bearer TOKEN)",
                ))
            })?;
        let presented = presented.trim();
        if let Some(t) = self
            .tokens
            .iter()
            .find(|t| same_secret(t.secret.as_bytes(), presented.as_bytes()))
        {
            return Ok(Principal {
                actor: Some(t.actor.clone()),
                ceiling: Some(t.ceiling.clone()),
                every_run: false,
            });
        }
        match &self.issuer {
            Some(issuer) => issuer
                .verify(presented)
                .await
                .map(|v| Principal {
                    actor: Some(v.actor),
                    ceiling: Some(v.ceiling),
                    every_run: false,
                })
                .map_err(|e| {
                    challenge(match e {
                        kiln_mcp::issuer::TokenRefused::Unreachable => {
                            ApiError::unavailable(e.to_string())
                        }
                        _ => ApiError::unauthorized(e.to_string()),
                    })
                }),
            None => Err(ApiError::unauthorized("the bearer token is not valid")
                .with_challenge(format!("{STATIC_CHALLENGE}, error=\"invalid_token\""))),
        }
    }
}

/// A static token's actor: visible text (see [`kiln_mcp::actor::check_name`]), outside the
/// namespaces kiln gives out (`oauth:` users, `oauth-client:` clients, `mcp:` clients), so no
/// token file can make itself another door's actor.
fn check_actor(actor: &str) -> Result<(), String> {
    use kiln_mcp::actor;
    actor::check_name(actor).map_err(|why| format!("{actor:?} {why}"))?;
    match actor::reserved_prefix(actor) {
        Some(prefix) => Err(format!(
            "{actor:?} is in the namespace {prefix} that kiln gives out ({} OAuth users, {} OAuth clients, {} MCP clients); name a static token's actor without it",
            actor::USER,
            actor::CLIENT,
            actor::MCP_CLIENT
        )),
        None => Ok(()),
    }
}

/// Compares without stopping at the first difference, so timing says nothing about the secret.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The token capability that lets its holder decide the approvals of every run.
pub const APPROVE: &str = "approve";

/// The `WWW-Authenticate` of a 401 on a server taking only its own bearer tokens.
const STATIC_CHALLENGE: &str = "Bearer realm=\"kiln\"";

/// Who a request acts for. A token always names its actor: no actor is the open server's one
/// implicit caller (no tokens configured), never "every actor".
#[derive(Debug, Clone, Default)]
pub struct Principal {
    /// The token's actor (`ctx.actor_id`); `None` only without tokens.
    pub actor: Option<String>,
    /// What the token may use at most; `None` only without tokens.
    pub ceiling: Option<Grants>,
    /// Reaches every actor's runs: set for a token granted `approve` while it decides an
    /// approval, and by nothing else.
    pub every_run: bool,
}

impl Principal {
    /// The open server's one implicit caller (no tokens configured, loopback only).
    pub fn is_open(&self) -> bool {
        self.actor.is_none() && self.ceiling.is_none()
    }

    /// Whether this caller's token is granted `approve`: it may decide the approvals of every
    /// actor's runs (and see exactly those approvals, nothing else of the runs).
    pub fn may_decide_all(&self) -> bool {
        self.ceiling.as_ref().is_some_and(|c| {
            kiln_core::capability::Capability::parse(APPROVE).is_ok_and(|cap| c.covers(&cap))
        })
    }

    /// Whether this caller may see a run `owner` started: its own (the open server's runs are
    /// all its one caller's), or any when it decides as an approver.
    pub fn sees(&self, owner: Option<&str>) -> bool {
        self.every_run || self.actor.as_deref() == owner
    }

    /// Whether this caller may see the durable run or session keyed `key` (keys are scoped by
    /// the actor's escaped name, see `front::scoped`): its own, any unscoped one on an open
    /// server, or any when it decides as an approver.
    pub fn sees_key(&self, key: &str) -> bool {
        if self.every_run {
            return true;
        }
        match &self.actor {
            Some(actor) => key.starts_with(&format!("{}/", kiln_restate::key_segment(actor))),
            None => self.is_open(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grants(caps: &[&str]) -> Grants {
        Grants::parse(caps).expect("caps")
    }

    #[test]
    fn narrowing_keeps_what_the_ceiling_allows_and_scopes_the_rest() {
        let ceiling = grants(&["store", "net:api.example.com"]);
        let narrowed =
            Grants::effective(&[Some(&grants(&["store", "net", "fs.write"])), Some(&ceiling)]);
        assert_eq!(narrowed.list(), "[store, net:api.example.com within net]");
    }

    #[test]
    fn no_actor_is_the_open_servers_one_caller_never_every_actor() {
        let open = Principal::default();
        assert!(open.sees(None) && !open.sees(Some("alice")));
        assert!(open.sees_key("run-key"));
        let bob = Principal {
            actor: Some("bob".into()),
            ceiling: Some(grants(&["store"])),
            every_run: false,
        };
        assert!(bob.sees(Some("bob")) && !bob.sees(Some("alice")) && !bob.sees(None));
        assert!(bob.sees_key("bob/k") && !bob.sees_key("alice/k") && !bob.sees_key("k"));
        // A token whose actor went missing sees nothing: no actor is no wildcard.
        let nobody = Principal {
            actor: None,
            ..bob.clone()
        };
        assert!(!nobody.sees(Some("alice")) && !nobody.sees_key("alice/k"));
        let approver = Principal {
            every_run: true,
            ..bob
        };
        assert!(approver.sees(Some("alice")) && approver.sees_key("alice/k"));
    }

    #[test]
    fn tokens_need_length_and_an_actor() {
        let e = Tokens::parse(r#"[{"token": "short", "actor": "a"}]"#, "KILN_TOKENS")
            .err()
            .expect("short token refused");
        assert_eq!(
            e.to_string(),
            "KILN_TOKENS: [0].token: tokens must be at least 16 characters"
        );
        let e = Tokens::parse(
            r#"[{"token": "0123456789abcdef", "actor": "a", "caps": ["net:"]}]"#,
            "f.json",
        )
        .err()
        .expect("bad cap refused");
        assert!(e.to_string().starts_with("f.json: [0].caps: "), "{e}");
    }
}
