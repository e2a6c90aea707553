//! Tool calls a model wrote as text: which of the shapes local chat templates write an agent's
//! replies are searched for (`.text_tool_calls(...)`, `kiln ask --text-tool-calls`). The
//! parser is kiln-agent's `text_calls`.

/// Which text shapes an agent's replies are searched for calls (`.text_tool_calls(...)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TextCallFormat {
    /// Never: text is text (the default).
    #[default]
    Off,
    /// Every format below.
    Auto,
    /// `<tool_call>...</tool_call>` (and `<tools>`, `<function=NAME>`): Hermes, Qwen 2.5 and 3,
    /// Qwen3-Coder's `<parameter=...>` form.
    Hermes,
    /// What Qwen models write: `hermes` and `json`.
    Qwen,
    /// `[TOOL_CALLS] [...]` and `[TOOL_CALLS]name[ARGS]{...}` (Mistral).
    Mistral,
    /// `<|python_tag|>{...}`, a bare JSON function object or a `[name(arg=value)]` list that
    /// is the whole reply (Llama 3.1 to 4).
    Llama,
    /// `<｜tool▁calls▁begin｜>...` (DeepSeek V3, R1, V3.1).
    DeepSeek,
    /// `tool_code` fences, `[name(arg=value)]` lists and JSON function objects
    /// (Gemma 3), `<|tool_call>call:name{...}` (Gemma 4, FunctionGemma).
    Gemma,
    /// A JSON call object naming an offered tool: the whole reply, in a `json` (or
    /// unnamed) fence, or on lines of its own (one call per line).
    Json,
}

impl TextCallFormat {
    /// Every setting, in the order messages list them.
    pub const ALL: [TextCallFormat; 9] = [
        TextCallFormat::Off,
        TextCallFormat::Auto,
        TextCallFormat::Hermes,
        TextCallFormat::Qwen,
        TextCallFormat::Mistral,
        TextCallFormat::Llama,
        TextCallFormat::DeepSeek,
        TextCallFormat::Gemma,
        TextCallFormat::Json,
    ];

    /// The setting named `name` (`off`, `auto`, `hermes`, `qwen`, ...).
    pub fn parse(name: &str) -> Option<TextCallFormat> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The name scripts and flags use.
    pub fn name(self) -> &'static str {
        match self {
            TextCallFormat::Off => "off",
            TextCallFormat::Auto => "auto",
            TextCallFormat::Hermes => "hermes",
            TextCallFormat::Qwen => "qwen",
            TextCallFormat::Mistral => "mistral",
            TextCallFormat::Llama => "llama",
            TextCallFormat::DeepSeek => "deepseek",
            TextCallFormat::Gemma => "gemma",
            TextCallFormat::Json => "json",
        }
    }

    /// Every name, for messages (`off, auto, hermes, qwen, ...`).
    pub fn names() -> String {
        Self::ALL.map(TextCallFormat::name).join(", ")
    }

    /// Whether this setting searches replies for `format`'s shapes.
    pub fn covers(self, format: TextCallFormat) -> bool {
        match self {
            TextCallFormat::Off => false,
            TextCallFormat::Auto => true,
            TextCallFormat::Qwen => matches!(
                format,
                TextCallFormat::Qwen | TextCallFormat::Hermes | TextCallFormat::Json
            ),
            own => own == format,
        }
    }
}
