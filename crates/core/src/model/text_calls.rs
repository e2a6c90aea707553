//! Tool calls a model wrote as text: which formats an agent's replies are searched for them
//! (`.text_tool_calls(...)`). The parser is kiln-agent's `text_parse`.

/// Which text formats an agent's replies are searched for calls (`.text_tool_calls(...)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TextCallFormat {
    /// Never: text is text (the default).
    #[default]
    Off,
    /// Every format below.
    Auto,
    /// `<tool_call>{...}</tool_call>` (Hermes, Qwen).
    Hermes,
    /// `[TOOL_CALLS] [...]` (Mistral).
    Mistral,
    /// `<|python_tag|>{...}` or a bare JSON function object (Llama 3).
    Llama,
}

impl TextCallFormat {
    /// Every setting, in the order messages list them.
    pub const ALL: [TextCallFormat; 5] = [
        TextCallFormat::Off,
        TextCallFormat::Auto,
        TextCallFormat::Hermes,
        TextCallFormat::Mistral,
        TextCallFormat::Llama,
    ];

    /// The setting named `name` (`off`, `auto`, `hermes`, `mistral`, `llama`).
    pub fn parse(name: &str) -> Option<TextCallFormat> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The name scripts and flags use.
    pub fn name(self) -> &'static str {
        match self {
            TextCallFormat::Off => "off",
            TextCallFormat::Auto => "auto",
            TextCallFormat::Hermes => "hermes",
            TextCallFormat::Mistral => "mistral",
            TextCallFormat::Llama => "llama",
        }
    }

    /// Every name, for messages (`off, auto, hermes, mistral, llama`).
    pub fn names() -> String {
        Self::ALL.map(TextCallFormat::name).join(", ")
    }

    /// Whether this setting searches replies for `format`.
    pub fn covers(self, format: TextCallFormat) -> bool {
        self == TextCallFormat::Auto || self == format
    }
}
