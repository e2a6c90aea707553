//! An agent's fallback models (`.fallback(["openai:gpt-5-mini", "ollama"])`, `--fallback`):
//! each entry `PROVIDER` or `PROVIDER:MODEL`, checked where it is written.

use crate::provider_kind::ProviderKind;

/// One model a run falls back to when the ones before it are busy or unreachable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FallbackModel {
    /// Its provider.
    pub provider: ProviderKind,
    /// Its model; `None`: the provider's default.
    pub model: Option<String>,
}

impl FallbackModel {
    /// `PROVIDER` or `PROVIDER:MODEL` (the model may hold colons: `ollama:qwen2.5:7b`); an
    /// unknown provider is an error naming the nearest one.
    pub fn parse(entry: &str) -> Result<FallbackModel, String> {
        let (name, model) = match entry.trim().split_once(':') {
            Some((name, model)) => (name.trim(), Some(model.trim())),
            None => (entry.trim(), None),
        };
        let provider = ProviderKind::parse(name).ok_or_else(|| {
            format!(
                "unknown provider \"{name}\" in fallback \"{entry}\"{} (expected one of: {})",
                kiln_core::error::suggest::hint(name, ProviderKind::names().split(", ")),
                ProviderKind::names()
            )
        })?;
        let model = match model {
            Some("") => return Err(format!("fallback \"{entry}\" names no model after \":\"")),
            other => other.map(str::to_string),
        };
        Ok(FallbackModel { provider, model })
    }

    /// A comma-separated list of entries (`--fallback openai:gpt-5-mini,ollama`).
    pub fn parse_list(text: &str) -> Result<Vec<FallbackModel>, String> {
        text.split(',')
            .filter(|e| !e.trim().is_empty())
            .map(FallbackModel::parse)
            .collect()
    }

    /// Its model, or its provider's default.
    pub fn model_or_default(&self) -> &str {
        self.model
            .as_deref()
            .unwrap_or_else(|| self.provider.default_model())
    }
}

impl std::fmt::Display for FallbackModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.provider, self.model_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::FallbackModel;
    use crate::provider_kind::ProviderKind;

    #[test]
    fn entries_name_a_provider_and_maybe_a_model() {
        let m = FallbackModel::parse("openai:gpt-5-mini").expect("parses");
        assert_eq!(m.provider, ProviderKind::OpenAi);
        assert_eq!(m.model.as_deref(), Some("gpt-5-mini"));
        let m = FallbackModel::parse("ollama").expect("parses");
        assert_eq!(m.model_or_default(), ProviderKind::Ollama.default_model());
        let m = FallbackModel::parse("ollama:qwen2.5:7b").expect("parses");
        assert_eq!(m.model.as_deref(), Some("qwen2.5:7b"));
        assert_eq!(m.to_string(), "ollama:qwen2.5:7b");
        let list = FallbackModel::parse_list("openai:a, anthropic").expect("parses");
        assert_eq!(list.len(), 2);
    }

    #[test]
    fn an_unknown_provider_names_the_nearest() {
        let e = FallbackModel::parse("opnai:gpt-5-mini").expect_err("unknown");
        assert!(e.contains("unknown provider \"opnai\""), "{e}");
        assert!(e.contains("did you mean \"openai\""), "{e}");
        assert!(FallbackModel::parse("openai:").is_err());
    }
}
