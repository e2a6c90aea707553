//! Azure OpenAI: OpenAI's two wires (Chat Completions, Responses) on an Azure resource
//! (`https://{resource}.openai.azure.com`), with the routes, `api-version` query and
//! credentials the official `openai` SDK's `AzureOpenAI` client sends: Chat Completions at
//! `/openai/deployments/{deployment}/chat/completions`, Responses at `/openai/responses`
//! (the deployment in the body's `model`); an `api-key` header, or a Microsoft Entra ID token
//! as `Authorization: Bearer`. The bodies are the OpenAI wires' own.

use crate::openai::{chat, responses};
use crate::{Endpoint, ModelRequest, ModelResponse, ProviderError, TextSink};
use reqwest::header::{HeaderMap, HeaderValue};

/// The `api-version` of Chat Completions requests when `OPENAI_API_VERSION` names none (GA).
pub const DEFAULT_CHAT_API_VERSION: &str = "2024-10-21";

/// The `api-version` of Responses requests when `OPENAI_API_VERSION` names none (the first
/// that serves `/openai/responses`).
pub const DEFAULT_RESPONSES_API_VERSION: &str = "2025-04-01-preview";

/// The environment variable of the resource's endpoint (`https://{resource}.openai.azure.com`).
pub const ENDPOINT_VAR: &str = "AZURE_OPENAI_ENDPOINT";

/// The environment variable of the API key (sent as `api-key`).
pub const KEY_VAR: &str = "AZURE_OPENAI_API_KEY";

/// The environment variable of a Microsoft Entra ID token (sent as `Authorization: Bearer`).
pub const TOKEN_VAR: &str = "AZURE_OPENAI_AD_TOKEN";

/// The environment variable of the `api-version`.
pub const VERSION_VAR: &str = "OPENAI_API_VERSION";

/// How requests prove who sends them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// The endpoint's key in an `api-key` header.
    ApiKey,
    /// The endpoint's key is an Entra ID token, in `Authorization: Bearer`.
    Bearer,
}

/// Which OpenAI wire a deployment is spoken to on, with its conversation as sent so far.
pub enum Api {
    /// Chat Completions.
    Chat(chat::Rendered),
    /// Responses.
    Responses(responses::Rendered),
}

/// An Azure OpenAI resource.
pub struct Azure {
    /// The resource's endpoint (`base_url`) and credential (`api_key`).
    pub endpoint: Endpoint,
    /// What kind of credential `endpoint.api_key` is.
    pub auth: Auth,
    /// The `api-version` query parameter.
    pub api_version: String,
    /// The deployment (the agent's model): Chat Completions name it in the route.
    pub deployment: String,
    /// The wire.
    pub api: Api,
}

impl Azure {
    /// The default `api-version` of `api`.
    pub fn default_api_version(api: &Api) -> &'static str {
        match api {
            Api::Chat(_) => DEFAULT_CHAT_API_VERSION,
            Api::Responses(_) => DEFAULT_RESPONSES_API_VERSION,
        }
    }

    /// The request body as sent (the OpenAI wire's, messages rendered once).
    pub fn request_bytes(&self, req: &ModelRequest<'_>) -> Vec<u8> {
        match &self.api {
            Api::Chat(r) => chat::request_bytes(req, true, r),
            Api::Responses(r) => responses::request_bytes(req, r),
        }
    }

    /// The URL a request goes to.
    pub fn url(&self) -> String {
        let base = self.endpoint.base_url.trim_end_matches('/');
        let base = base.strip_suffix("/openai").unwrap_or(base);
        let version = url_escape(&self.api_version);
        match &self.api {
            Api::Chat(_) => format!(
                "{base}/openai/deployments/{}/chat/completions?api-version={version}",
                url_escape(&self.deployment)
            ),
            Api::Responses(_) => format!("{base}/openai/responses?api-version={version}"),
        }
    }

    /// The credential's header.
    fn headers(&self) -> Result<HeaderMap, ProviderError> {
        let key = self.endpoint.api_key.as_deref();
        let name = self.name();
        match (self.auth, key) {
            (Auth::Bearer, key) => chat::bearer(name, key),
            (Auth::ApiKey, None) => Ok(HeaderMap::new()),
            (Auth::ApiKey, Some(key)) => {
                let mut v = HeaderValue::from_str(key).map_err(|_| ProviderError::Malformed {
                    provider: name,
                    message: "the API key holds characters a header cannot".into(),
                })?;
                v.set_sensitive(true);
                let mut headers = HeaderMap::new();
                headers.insert("api-key", v);
                Ok(headers)
            }
        }
    }

    /// The provider's name (`azure`, `azure-responses`).
    pub fn name(&self) -> &'static str {
        match self.api {
            Api::Chat(_) => "azure",
            Api::Responses(_) => "azure-responses",
        }
    }

    /// Sends a request body ([`Azure::request_bytes`]).
    pub async fn send(
        &self,
        body: bytes::Bytes,
        stream: bool,
        sink: &TextSink,
    ) -> Result<ModelResponse, ProviderError> {
        let (headers, url) = (self.headers()?, self.url());
        match &self.api {
            Api::Chat(_) => chat::exchange(&self.endpoint, &url, headers, body, stream, sink).await,
            Api::Responses(_) => {
                responses::exchange(&self.endpoint, &url, headers, body, stream, sink).await
            }
        }
    }
}

/// Percent-escapes what a path segment or query value cannot hold as is.
fn url_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
