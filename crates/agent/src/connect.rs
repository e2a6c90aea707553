//! Turns an agent's settings (plus command-line overrides and the environment) into a provider.

use kiln_providers::{
    Endpoint, Limits, Provider, ProviderError, anthropic, http, ollama, openai::chat,
};
use kiln_providers::{
    bedrock, chain, gemini,
    openai::{azure, responses},
};
use kiln_registry::agent_spec::TextCallFormat;
use kiln_registry::agent_spec::{AgentSpec, ProviderKind};
use kiln_registry::fallback::FallbackModel;
use std::collections::BTreeMap;
use std::time::Duration;

/// Where a provider is reached when neither the run nor the agent says, and below the
/// provider's own environment variables (`OPENAI_BASE_URL`...): a project's settings
/// (`kiln.toml`'s `[providers.NAME]`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderDefault {
    /// The base URL.
    pub base_url: Option<String>,
    /// The environment variable holding the API key (never the key itself).
    pub api_key_env: Option<String>,
}

/// [`ProviderDefault`]s by provider name (`anthropic`, `openai`, `ollama`).
pub type ProviderDefaults = BTreeMap<String, ProviderDefault>;

/// Overrides of an agent's provider settings (`--provider`, `--model`, `--base-url`).
#[derive(Debug, Clone, Default)]
pub struct ProviderOverrides {
    /// Provider name.
    pub provider: Option<String>,
    /// Model name.
    pub model: Option<String>,
    /// Base URL.
    pub base_url: Option<String>,
    /// Per-request timeout.
    pub timeout: Option<Duration>,
    /// Retries after the first attempt.
    pub max_retries: Option<u32>,
    /// Bytes of one reply (`--max-reply-bytes`; else the agent's `.max_reply_bytes`).
    pub max_reply_bytes: Option<usize>,
    /// Bytes of one stream line (`--max-line-bytes`; else the agent's `.max_line_bytes`).
    pub max_line_bytes: Option<usize>,
    /// Longest silence within a streamed reply.
    pub idle_timeout: Option<Duration>,
    /// Bytes of one model request, the run's transcript rendered (`--max-transcript-bytes`;
    /// default [`crate::run::DEFAULT_MAX_TRANSCRIPT_BYTES`]).
    pub max_transcript_bytes: Option<usize>,
    /// Longest streamed reply.
    pub stream_timeout: Option<Duration>,
    /// Instructions added after the agent's own system prompt (a caller's system messages).
    pub extra_system: Option<String>,
    /// Sampling temperature instead of the agent's.
    pub temperature: Option<f64>,
    /// Max output tokens per model request instead of the agent's.
    pub max_tokens: Option<u32>,
    /// Fallback models instead of the agent's (`--fallback openai:gpt-5-mini,ollama`).
    pub fallback: Option<Vec<FallbackModel>>,
    /// Which tool calls written as text are recovered, instead of the agent's setting.
    pub text_tool_calls: Option<TextCallFormat>,
    /// The tool the run's first model request asks the model to call (or not to call): what
    /// a door's request asks (`tool_choice`); later requests leave it to the model.
    pub tool_choice: Option<kiln_core::model::ToolChoice>,
    /// Whether a reply may hold several calls (`parallel_tool_calls`), on every request.
    pub parallel_tool_calls: Option<bool>,
}

impl ProviderOverrides {
    /// The system prompt of a request: the agent's, then the caller's additions.
    pub fn system(&self, agent: &AgentSpec) -> Option<String> {
        let base = match (&agent.system, &self.extra_system) {
            (Some(own), Some(extra)) => Some(format!("{own}\n\n{extra}")),
            (own, extra) => own.clone().or_else(|| extra.clone()),
        };
        // Its skills are listed by name and description; the model loads one when it needs it.
        let base = match (agent.skills.is_empty(), base) {
            (true, base) => base,
            (false, base) => {
                let listing = kiln_registry::agent_spec::skills::listing(&agent.skills);
                Some(base.map_or(listing.clone(), |b| format!("{b}\n\n{listing}")))
            }
        };
        // A typed final answer is asked for on every turn; only the answering one is checked.
        match (&agent.contract.output, base) {
            (Some(output), Some(base)) => Some(format!("{base}\n\n{}", output.instruction())),
            (Some(output), None) => Some(output.instruction()),
            (None, base) => base,
        }
    }

    /// The limits these overrides and the agent's settings make, defaults elsewhere.
    pub fn limits(&self, agent: &AgentSpec) -> Limits {
        let d = Limits::default();
        Limits {
            max_reply_bytes: self
                .max_reply_bytes
                .or(agent.max_reply_bytes)
                .unwrap_or(d.max_reply_bytes),
            max_line_bytes: self
                .max_line_bytes
                .or(agent.max_line_bytes)
                .unwrap_or(d.max_line_bytes),
            idle_timeout: self.idle_timeout.unwrap_or(d.idle_timeout),
            stream_timeout: self.stream_timeout.unwrap_or(d.stream_timeout),
        }
    }
}

fn env_nonempty(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

/// Builds the provider and resolves the model name. Precedence of the base URL: the run's
/// override, the agent's, the provider's environment variable, `defaults`, the built-in one;
/// of the key's variable: the agent's, `defaults`, the provider's usual one. With fallback
/// models (the run's `--fallback`, else the agent's `.fallback`), a [`chain::Chain`] of the
/// agent's own model and them, each connected with its provider's own key and base URL (its
/// environment variable, `defaults`, the built-in one).
pub fn connect(
    agent: &AgentSpec,
    o: &ProviderOverrides,
    defaults: &ProviderDefaults,
) -> Result<(Provider, String), ProviderError> {
    let (provider, model) = connect_one(agent, o, defaults, true)?;
    let fallback = o.fallback.as_ref().unwrap_or(&agent.fallback);
    if fallback.is_empty() {
        return Ok((provider, model));
    }
    let rest = fallback
        .iter()
        .map(|f| {
            let member = ProviderOverrides {
                provider: Some(f.provider.name().to_string()),
                model: Some(f.model_or_default().to_string()),
                base_url: None,
                ..o.clone()
            };
            let (provider, model) = connect_one(agent, &member, defaults, false)?;
            Ok(chain::Member { provider, model })
        })
        .collect::<Result<Vec<_>, ProviderError>>()?;
    let first = chain::Member {
        provider,
        model: model.clone(),
    };
    Ok((Provider::Chain(chain::Chain::new(first, rest)), model))
}

/// Model `m` for `agent` (a compaction's summarizer): connected as the agent's own when it is
/// on the agent's provider (its base URL and key), else as a fallback model is (its
/// provider's environment variable, `defaults`, the built-in address).
pub fn connect_model(
    agent: &AgentSpec,
    o: &ProviderOverrides,
    defaults: &ProviderDefaults,
    m: &kiln_registry::fallback::FallbackModel,
) -> Result<(Provider, String), ProviderError> {
    let own = m.provider == agent.provider;
    let member = ProviderOverrides {
        provider: Some(m.provider.name().to_string()),
        model: Some(m.model_or_default().to_string()),
        // The run's address override is for the agent's provider.
        base_url: o.base_url.clone().filter(|_| own),
        ..o.clone()
    };
    connect_one(agent, &member, defaults, own)
}

/// One provider; `own`: the agent's own, which its `.base_url` and `.api_key_env` are for.
fn connect_one(
    agent: &AgentSpec,
    o: &ProviderOverrides,
    defaults: &ProviderDefaults,
    own: bool,
) -> Result<(Provider, String), ProviderError> {
    let kind = match &o.provider {
        None => agent.provider,
        Some(name) => ProviderKind::parse(name).ok_or_else(|| unknown_provider(name))?,
    };
    let model = o
        .model
        .clone()
        .or_else(|| agent.model.clone())
        .unwrap_or_else(|| kind.default_model().to_string());
    let project = defaults.get(kind.name()).cloned().unwrap_or_default();
    let base = (o.base_url.clone()).or_else(|| agent.base_url.clone().filter(|_| own));
    let base = (base.or_else(|| kind.base_url_var().and_then(env_nonempty)))
        .or_else(|| project.base_url.clone());
    let key_var = (agent.api_key_env.clone().filter(|_| own))
        .or_else(|| project.api_key_env.clone())
        .or_else(|| kind.key_var().map(String::from))
        .unwrap_or_default();
    let target = Target {
        base,
        key_var,
        model,
        timeout: o.timeout.unwrap_or(kiln_core::defaults::REQUEST_TIMEOUT),
        max_retries: o.max_retries.unwrap_or(kiln_core::defaults::MAX_RETRIES),
        limits: o.limits(agent),
    };
    let provider = build(kind, agent, &target)?;
    Ok((provider, target.model))
}

/// Where one provider is reached and how: what [`connect_one`] resolved.
struct Target {
    base: Option<String>,
    key_var: String,
    model: String,
    timeout: Duration,
    max_retries: u32,
    limits: Limits,
}

impl Target {
    fn endpoint(
        &self,
        base_url: String,
        api_key: Option<String>,
        key_var: Option<String>,
    ) -> Endpoint {
        Endpoint {
            base_url,
            api_key,
            key_var,
            timeout: self.timeout,
            max_retries: self.max_retries,
            limits: self.limits,
        }
    }

    /// The base URL, else the provider's own.
    fn url(&self, default: &str) -> String {
        self.base.clone().unwrap_or_else(|| default.into())
    }

    /// The key: required at the provider's own URL; at another (a compatible local server, a
    /// gateway, `kiln mock`) often none is needed.
    fn key(&self, name: &'static str) -> Result<Option<String>, ProviderError> {
        match &self.base {
            Some(_) => Ok(env_nonempty(&self.key_var)),
            None => http::api_key(name, &self.key_var).map(Some),
        }
    }
}

/// The provider of `kind` at `t`.
fn build(kind: ProviderKind, agent: &AgentSpec, t: &Target) -> Result<Provider, ProviderError> {
    let var = Some(t.key_var.clone());
    Ok(match kind {
        ProviderKind::Anthropic => {
            let key = http::api_key("anthropic", &t.key_var)?;
            Provider::Anthropic(anthropic::Anthropic {
                rendered: Default::default(),
                endpoint: t.endpoint(t.url(anthropic::DEFAULT_BASE_URL), Some(key), var),
            })
        }
        ProviderKind::OpenAi => Provider::OpenAi(chat::OpenAi {
            rendered: Default::default(),
            endpoint: t.endpoint(t.url(chat::DEFAULT_BASE_URL), t.key("openai")?, var),
        }),
        ProviderKind::OpenAiResponses => {
            let key = t.key("openai-responses")?;
            Provider::OpenAiResponses(responses::Responses {
                rendered: Default::default(),
                endpoint: t.endpoint(t.url(responses::DEFAULT_BASE_URL), key, var),
            })
        }
        ProviderKind::Ollama => {
            let url = (t.base.as_deref())
                .map_or_else(|| ollama::DEFAULT_BASE_URL.into(), ollama::normalize_host);
            Provider::Ollama(ollama::Ollama {
                rendered: Default::default(),
                endpoint: t.endpoint(url, None, None),
            })
        }
        ProviderKind::Gemini => {
            // A gateway (or `kiln mock`) at another base URL may take no key; Google does.
            let key = match &t.base {
                Some(_) => gemini_key(&t.key_var).ok(),
                None => Some(gemini_key(&t.key_var)?),
            };
            Provider::Gemini(gemini::Gemini {
                rendered: Default::default(),
                endpoint: t.endpoint(t.url(gemini::DEFAULT_BASE_URL), key, var),
            })
        }
        ProviderKind::Script => planner_provider(agent)?,
        ProviderKind::Azure => azure_provider(azure::Api::Chat(Default::default()), t)?,
        ProviderKind::AzureResponses => {
            azure_provider(azure::Api::Responses(Default::default()), t)?
        }
        ProviderKind::Bedrock => bedrock_provider(t)?,
    })
}

/// Bedrock in the region the environment names. The secret sent with each request (session
/// token or bearer key) is the endpoint's key, so the transport redacts it too; the secret key
/// never leaves.
fn bedrock_provider(t: &Target) -> Result<Provider, ProviderError> {
    let auth = bedrock_auth(&t.key_var)?;
    let region = bedrock::region_from_env();
    let url = t
        .base
        .clone()
        .unwrap_or_else(|| bedrock::default_base_url(&region));
    let sent = auth.sent_secret();
    Ok(Provider::Bedrock(bedrock::Bedrock {
        endpoint: t.endpoint(url, sent, Some(auth.vars().to_string())),
        region,
        model: t.model.clone(),
        auth,
        rendered: Default::default(),
    }))
}

/// An Azure OpenAI resource: its endpoint (no default: each resource has its own), an API key
/// from `key_var` or else a Microsoft Entra ID token from `AZURE_OPENAI_AD_TOKEN`, the
/// `api-version` from `OPENAI_API_VERSION` or the route's default, `model` as the deployment.
fn azure_provider(api: azure::Api, t: &Target) -> Result<Provider, ProviderError> {
    let name = if matches!(api, azure::Api::Chat(_)) {
        "azure"
    } else {
        "azure-responses"
    };
    let base = t.base.clone().ok_or_else(|| ProviderError::Transport {
        provider: name,
        message: format!(
            "no endpoint: set {} (https://RESOURCE.openai.azure.com), the agent's .base_url or --base-url",
            azure::ENDPOINT_VAR
        ),
    })?;
    let key_var = &t.key_var;
    let (auth, key, var) = match (env_nonempty(key_var), env_nonempty(azure::TOKEN_VAR)) {
        (Some(key), _) => (azure::Auth::ApiKey, key, key_var.clone()),
        (None, Some(token)) => (azure::Auth::Bearer, token, azure::TOKEN_VAR.to_string()),
        (None, None) => {
            return Err(ProviderError::MissingKey {
                provider: name,
                var: format!("{key_var} (or {})", azure::TOKEN_VAR),
            });
        }
    };
    let api_version = env_nonempty(azure::VERSION_VAR)
        .unwrap_or_else(|| azure::Azure::default_api_version(&api).to_string());
    Ok(Provider::Azure(azure::Azure {
        endpoint: t.endpoint(base, Some(key), Some(var)),
        auth,
        api_version,
        deployment: t.model.clone(),
        api,
    }))
}

/// Gemini's key: from `var`; when that is the usual `GEMINI_API_KEY` and unset, from
/// `GOOGLE_API_KEY` (the other variable Google's SDKs read).
fn gemini_key(var: &str) -> Result<String, ProviderError> {
    match http::api_key("gemini", var) {
        Err(_) if var == "GEMINI_API_KEY" => {
            http::api_key("gemini", "GOOGLE_API_KEY").map_err(|_| ProviderError::MissingKey {
                provider: "gemini",
                var: "GEMINI_API_KEY (or GOOGLE_API_KEY)".into(),
            })
        }
        found => found,
    }
}

/// Bedrock's credentials: a Bedrock API key from `var` (`AWS_BEARER_TOKEN_BEDROCK` unless the
/// agent names another), else the standard AWS environment.
fn bedrock_auth(var: &str) -> Result<bedrock::AwsAuth, ProviderError> {
    match env_nonempty(var) {
        Some(token) => Ok(bedrock::AwsAuth::Bearer(token.trim().to_string())),
        None => bedrock::AwsAuth::from_env(),
    }
}

/// An agent's `.planner(...)` as its model, in this process.
fn planner_provider(agent: &AgentSpec) -> Result<Provider, ProviderError> {
    let planner = agent.script.as_ref().and_then(|s| s.planner_model());
    planner.map(Provider::Local).ok_or_else(|| {
        ProviderError::Planner(format!("agent \"{}\" has no .planner(...)", agent.name))
    })
}

fn unknown_provider(name: &str) -> ProviderError {
    ProviderError::Malformed {
        provider: "kiln",
        message: format!(
            "unknown provider \"{name}\" (expected one of {})",
            ProviderKind::names()
        ),
    }
}
