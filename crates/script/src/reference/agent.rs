//! The methods of `agent(name)`.

use super::entry::{Entry, method, replaced};

const A: &str = "AgentBuilder";

/// `agent(...)`'s methods.
pub(super) const AGENT: &[Entry] = &[
    method(
        A,
        "description(text: string)",
        "What the agent does (for callers and handoffs).",
    ),
    method(
        A,
        "provider(name: string)",
        "anthropic, openai, openai-responses, azure, azure-responses, gemini, bedrock, ollama or script.",
    ),
    method(A, "model(name: string)", "The model the provider runs."),
    method(
        A,
        "fallback(models: array)",
        "Models tried in order when its own is busy or unreachable (429, overload, 5xx, timeout): [\"openai:gpt-5-mini\", \"ollama\"].",
    ),
    method(
        A,
        "text_tool_calls(format: string)",
        "Recover tool calls a model writes as text: \"off\" (default), \"auto\", \"hermes\", \"qwen\", \"mistral\", \"llama\", \"deepseek\", \"gemma\" or \"json\".",
    ),
    method(A, "system(text: string)", "The system prompt."),
    method(
        A,
        "tools(names: array)",
        "The tools it may call ([\"calculator\", \"SERVER__*\"]).",
    ),
    method(
        A,
        "capabilities(grants: array)",
        "What its tools may reach ([\"net:api.example.com\", \"store:notes\"]).",
    ),
    method(
        A,
        "needs_approval(grants: array)",
        "Grants that need a person's approval at each use.",
    ),
    replaced(
        method(
            A,
            "ask(grants: array)",
            "Grants that need approval; the old spelling of needs_approval.",
        ),
        "needs_approval",
    ),
    method(
        A,
        "defer_loading(tools: array)",
        "Tools (names, or prefixes ending in *) the model gets only once a search found them, instead of every schema on every request: the provider's own tool search where it has one (Anthropic, OpenAI Responses), else kiln's search_tools.",
    ),
    method(
        A,
        "defer_loading(tools: array, options: map)",
        "The same, with #{ search: \"provider\" | \"kiln\" }: \"kiln\" uses kiln's search_tools on every wire (a model too old for its provider's tool search).",
    ),
    method(
        A,
        "compact(options: map)",
        "Keeps a long transcript within a budget: #{ at: tokens (100000), keep_last: messages (8), how: \"summary\" | \"trim\", model: \"PROVIDER:MODEL\" (the summary's; default the agent's) }.",
    ),
    method(
        A,
        "skills(folders: array)",
        "Agent Skills (folders with a SKILL.md, or folders of them) listed to the model by name and description and loaded on demand with load_skill and read_skill_file.",
    ),
    method(
        A,
        "handoffs(agents: array)",
        "Agents it may hand the conversation to.",
    ),
    method(
        A,
        "max_iterations(n: int)",
        "The most model rounds with tool calls in one run.",
    ),
    replaced(
        method(
            A,
            "max_tool_iterations(n: int)",
            "The most model rounds with tool calls; the old spelling of max_iterations.",
        ),
        "max_iterations",
    ),
    method(A, "temperature(t: number)", "Sampling temperature."),
    method(A, "max_tokens(n: int)", "The most tokens in one reply."),
    method(
        A,
        "max_parallel(n: int)",
        "How many tool calls of one round run at once.",
    ),
    method(
        A,
        "max_reply_bytes(n: int)",
        "The most bytes of one model reply.",
    ),
    method(
        A,
        "max_line_bytes(n: int)",
        "The most bytes of one line of a streamed reply.",
    ),
    method(
        A,
        "base_url(url: string)",
        "The provider's address (an OpenAI-compatible server, Ollama).",
    ),
    method(
        A,
        "api_key_env(name: string)",
        "The environment variable holding the API key.",
    ),
    method(
        A,
        "planner(function: fn)",
        "|messages, tools| ... for the offline script provider.",
    ),
    method(
        A,
        "mode(mode: string)",
        "\"json_planner\" for models without native tool calling.",
    ),
    method(A, "max_steps(n: int)", "Planner mode's step budget."),
    method(
        A,
        "validator(function: fn)",
        "|tool, args| args: checks or fixes planned arguments after the schema (planner mode).",
    ),
    method(
        A,
        "output(schema: string | map)",
        "A typed answer: the final reply must match this type name, map of fields or JSON Schema.",
    ),
    method(
        A,
        "output_retries(n: int)",
        "How many times (0 to 10) a reply that misses the output schema is sent back to be fixed.",
    ),
    method(
        A,
        "budget(limits: map)",
        "Limits of one run: #{ input_tokens, output_tokens, tool_calls, cost_usd }.",
    ),
    method(
        A,
        "price(input: number, output: number)",
        "Dollars per million input and output tokens, for the run's cost.",
    ),
    method(
        A,
        "code_mode([options: map])",
        "The model writes one Rhai program calling the tools instead of tool calls; #{ except, max_calls, timeout: \"30s\" }.",
    ),
];
