//! AWS credentials for Bedrock and the SigV4 signature of a request, computed by the
//! `aws-sigv4` crate (kiln signs nothing by hand). The credentials are secrets: their `Debug`
//! shows none of them, and [`AwsAuth::secrets`] lists every one for redaction.

use crate::ProviderError;
use crate::error::quote;
use crate::redact::Secrets;
use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use std::time::SystemTime;

/// The service name requests to Bedrock Runtime are signed for.
pub const SIGNING_NAME: &str = "bedrock";
/// The access key id's variable.
pub const ACCESS_KEY_VAR: &str = "AWS_ACCESS_KEY_ID";
/// The secret access key's variable.
pub const SECRET_KEY_VAR: &str = "AWS_SECRET_ACCESS_KEY";
/// The session token's variable.
pub const SESSION_TOKEN_VAR: &str = "AWS_SESSION_TOKEN";
/// The Bedrock API key's variable (sent as a bearer token, not signed).
pub const BEARER_VAR: &str = "AWS_BEARER_TOKEN_BEDROCK";

/// How requests to Bedrock are authorized.
#[derive(Clone)]
pub enum AwsAuth {
    /// SigV4 with an access key pair (and a session token for temporary credentials).
    Keys {
        /// `AWS_ACCESS_KEY_ID`.
        access_key_id: String,
        /// `AWS_SECRET_ACCESS_KEY`: never sent, only signs.
        secret_access_key: String,
        /// `AWS_SESSION_TOKEN`, sent as `x-amz-security-token`.
        session_token: Option<String>,
    },
    /// A Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK`), sent as `Authorization: Bearer`.
    Bearer(String),
}

impl std::fmt::Debug for AwsAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AwsAuth::Keys { session_token, .. } => write!(
                f,
                "AwsAuth::Keys(access key, secret key{})",
                if session_token.is_some() {
                    ", session token"
                } else {
                    ""
                }
            ),
            AwsAuth::Bearer(_) => f.write_str("AwsAuth::Bearer(..)"),
        }
    }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

impl AwsAuth {
    /// The credentials of the standard environment: `AWS_BEARER_TOKEN_BEDROCK` if set, else
    /// `AWS_ACCESS_KEY_ID` with `AWS_SECRET_ACCESS_KEY` (and `AWS_SESSION_TOKEN`); the error
    /// names what to set.
    pub fn from_env() -> Result<AwsAuth, ProviderError> {
        if let Some(token) = var(BEARER_VAR) {
            return Ok(AwsAuth::Bearer(token));
        }
        let missing = |var: &str| ProviderError::MissingKey {
            provider: crate::bedrock::reply::NAME,
            var: var.to_string(),
        };
        match (var(ACCESS_KEY_VAR), var(SECRET_KEY_VAR)) {
            (Some(access_key_id), Some(secret_access_key)) => Ok(AwsAuth::Keys {
                access_key_id,
                secret_access_key,
                session_token: var(SESSION_TOKEN_VAR),
            }),
            (Some(_), None) => Err(missing(SECRET_KEY_VAR)),
            (None, _) => Err(missing(&format!(
                "{ACCESS_KEY_VAR} and {SECRET_KEY_VAR} (or {BEARER_VAR})"
            ))),
        }
    }

    /// Every secret of these credentials (the secret key, the session token, the bearer
    /// key), for redaction. The access key id is an identifier, not a secret.
    pub fn secrets(&self) -> Secrets {
        match self {
            AwsAuth::Keys {
                secret_access_key,
                session_token,
                ..
            } => Secrets::new(
                std::iter::once(secret_access_key.clone()).chain(session_token.iter().cloned()),
            ),
            AwsAuth::Bearer(token) => Secrets::new([token.clone()]),
        }
    }

    /// The secret that travels with each request (the session token or the bearer key), if
    /// any: what a service could echo back.
    pub fn sent_secret(&self) -> Option<String> {
        match self {
            AwsAuth::Keys { session_token, .. } => session_token.clone(),
            AwsAuth::Bearer(token) => Some(token.clone()),
        }
    }

    /// The variables to check when the service refuses these credentials.
    pub fn vars(&self) -> &'static str {
        match self {
            AwsAuth::Keys {
                session_token: Some(_),
                ..
            } => "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN",
            AwsAuth::Keys { .. } => "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
            AwsAuth::Bearer(_) => BEARER_VAR,
        }
    }

    /// The headers that authorize a POST of `body` (JSON) to `url` in `region` now.
    pub fn headers(
        &self,
        url: &str,
        region: &str,
        body: &[u8],
    ) -> Result<HeaderMap, ProviderError> {
        self.headers_at(url, region, body, SystemTime::now())
    }

    /// [`AwsAuth::headers`] at time `time` (tests sign at a fixed time).
    pub fn headers_at(
        &self,
        url: &str,
        region: &str,
        body: &[u8],
        time: SystemTime,
    ) -> Result<HeaderMap, ProviderError> {
        let mut headers = HeaderMap::new();
        let (access_key_id, secret_access_key, session_token) = match self {
            AwsAuth::Bearer(token) => {
                headers.insert(AUTHORIZATION, sensitive(&format!("Bearer {token}"))?);
                return Ok(headers);
            }
            AwsAuth::Keys {
                access_key_id,
                secret_access_key,
                session_token,
            } => (access_key_id, secret_access_key, session_token),
        };
        let identity: Identity = Credentials::new(
            access_key_id,
            secret_access_key,
            session_token.clone(),
            None,
            "environment",
        )
        .into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(region)
            .name(SIGNING_NAME)
            .time(time)
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| signing_error(e.to_string()))?
            .into();
        let signed = [("content-type", "application/json")];
        let request =
            SignableRequest::new("POST", url, signed.into_iter(), SignableBody::Bytes(body))
                .map_err(|e| signing_error(e.to_string()))?;
        let (instructions, _) = sign(request, &params)
            .map_err(|e| signing_error(e.to_string()))?
            .into_parts();
        let (signing_headers, _) = instructions.into_parts();
        for h in signing_headers {
            let name = HeaderName::from_static(h.name());
            let mut value = HeaderValue::from_str(h.value())
                .map_err(|_| signing_error(format!("the {} header is not valid", h.name())))?;
            value.set_sensitive(h.sensitive() || name == AUTHORIZATION);
            headers.insert(name, value);
        }
        Ok(headers)
    }
}

fn sensitive(text: &str) -> Result<HeaderValue, ProviderError> {
    let mut v = HeaderValue::from_str(text)
        .map_err(|_| signing_error("the credentials hold characters a header cannot".into()))?;
    v.set_sensitive(true);
    Ok(v)
}

fn signing_error(message: String) -> ProviderError {
    // The crate's messages name what was wrong with the request, never a credential's value.
    ProviderError::Malformed {
        provider: crate::bedrock::reply::NAME,
        message: format!("cannot sign the request (SigV4): {}", quote(&message)),
    }
}
