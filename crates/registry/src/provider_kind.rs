//! The providers an agent may name, with each one's defaults (model, key and base URL
//! variables).

/// The providers an agent may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// Anthropic's Messages API.
    Anthropic,
    /// OpenAI's Chat Completions (and compatible servers).
    OpenAi,
    /// Ollama's `/api/chat`.
    Ollama,
    /// Google Gemini's `generateContent`.
    Gemini,
    /// The agent's Rhai planner, offline.
    Script,
    /// OpenAI's Responses API.
    OpenAiResponses,
    /// Azure OpenAI, Chat Completions.
    Azure,
    /// Azure OpenAI, Responses.
    AzureResponses,
    /// AWS Bedrock's Converse API (SigV4 or a Bedrock API key).
    Bedrock,
}

impl ProviderKind {
    /// Every provider, in the order messages list them.
    pub const ALL: [ProviderKind; 9] = [
        ProviderKind::Anthropic,
        ProviderKind::OpenAi,
        ProviderKind::OpenAiResponses,
        ProviderKind::Azure,
        ProviderKind::AzureResponses,
        ProviderKind::Gemini,
        ProviderKind::Bedrock,
        ProviderKind::Ollama,
        ProviderKind::Script,
    ];

    /// The provider named `name` (`anthropic`, `openai`, `ollama`, `script`).
    pub fn parse(name: &str) -> Option<ProviderKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The name scripts and flags use.
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::OpenAi => "openai",
            ProviderKind::Ollama => "ollama",
            ProviderKind::Gemini => "gemini",
            ProviderKind::Script => "script",
            ProviderKind::OpenAiResponses => "openai-responses",
            ProviderKind::Azure => "azure",
            ProviderKind::AzureResponses => "azure-responses",
            ProviderKind::Bedrock => "bedrock",
        }
    }

    /// Every name, for messages (`anthropic, openai, ollama, script`).
    pub fn names() -> String {
        Self::ALL.map(ProviderKind::name).join(", ")
    }

    /// The model used when an agent names none.
    pub fn default_model(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "claude-haiku-4-5",
            ProviderKind::OpenAi => "gpt-4o-mini",
            ProviderKind::Ollama => "llama3.2",
            ProviderKind::Gemini => "gemini-2.5-flash",
            ProviderKind::Script => "script",
            ProviderKind::OpenAiResponses => "gpt-5-mini",
            // Azure's model is the deployment's name, which its owner chose.
            ProviderKind::Azure | ProviderKind::AzureResponses => "gpt-5-mini",
            ProviderKind::Bedrock => "anthropic.claude-haiku-4-5-20251001-v1:0",
        }
    }

    /// The environment variable holding the API key, for providers that take one.
    pub fn key_var(self) -> Option<&'static str> {
        match self {
            ProviderKind::Anthropic => Some("ANTHROPIC_API_KEY"),
            ProviderKind::OpenAi => Some("OPENAI_API_KEY"),
            ProviderKind::Gemini => Some("GEMINI_API_KEY"),
            ProviderKind::Ollama | ProviderKind::Script => None,
            ProviderKind::OpenAiResponses => Some("OPENAI_API_KEY"),
            // Else a Microsoft Entra ID token in AZURE_OPENAI_AD_TOKEN.
            ProviderKind::Azure | ProviderKind::AzureResponses => Some("AZURE_OPENAI_API_KEY"),
            // A Bedrock API key; else the AWS key pair (`AWS_ACCESS_KEY_ID`...).
            ProviderKind::Bedrock => Some("AWS_BEARER_TOKEN_BEDROCK"),
        }
    }

    /// The environment variable that moves the provider's base URL.
    pub fn base_url_var(self) -> Option<&'static str> {
        match self {
            ProviderKind::Anthropic => Some("ANTHROPIC_BASE_URL"),
            ProviderKind::OpenAi => Some("OPENAI_BASE_URL"),
            ProviderKind::Ollama => Some("OLLAMA_HOST"),
            ProviderKind::Gemini => Some("GOOGLE_GEMINI_BASE_URL"),
            ProviderKind::Script => None,
            ProviderKind::OpenAiResponses => Some("OPENAI_BASE_URL"),
            ProviderKind::Azure | ProviderKind::AzureResponses => Some("AZURE_OPENAI_ENDPOINT"),
            ProviderKind::Bedrock => Some("AWS_ENDPOINT_URL_BEDROCK_RUNTIME"),
        }
    }
}

/// Compares with a provider's name (`kind == "openai"`).
impl PartialEq<&str> for ProviderKind {
    fn eq(&self, name: &&str) -> bool {
        self.name() == *name
    }
}

impl std::fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
