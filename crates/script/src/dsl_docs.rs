//! The DSL's calls as a person writes them (`param(name, type[, options])`), with one line on
//! each: what `kiln lsp` shows in completion and hover, and what an unknown method's error
//! suggests. Rhai's own metadata knows only the parameters' types.

/// One documented call.
#[derive(Debug, Clone, Copy)]
pub struct CallDoc {
    /// The builder it is a method of (`ToolBuilder`...), or `""` for a function.
    pub on: &'static str,
    /// Its name.
    pub name: &'static str,
    /// How it is called, parameters named: `param(name, type[, options])`.
    pub call: &'static str,
    /// What it is for, in one line.
    pub doc: &'static str,
}

const fn d(on: &'static str, call: &'static str, doc: &'static str) -> CallDoc {
    // The name is the call up to its parenthesis.
    let bytes = call.as_bytes();
    let mut end = 0;
    while end < bytes.len() && bytes[end] != b'(' {
        end += 1;
    }
    let (name, _) = call.split_at(end);
    CallDoc {
        on,
        name,
        call,
        doc,
    }
}

const T: &str = "ToolBuilder";
const A: &str = "AgentBuilder";
const P: &str = "PipelineBuilder";

/// The documented calls.
pub const CALLS: &[CallDoc] = &[
    d(
        "",
        "tool(name)",
        "Declares a tool the model (or a caller) can call.",
    ),
    d(
        "",
        "agent(name)",
        "Declares an agent: a model, its tools and its grants.",
    ),
    d(
        "",
        "pipeline(name)",
        "Declares a pipeline of agent and tool steps.",
    ),
    d(
        "",
        "mcp_server(name)",
        "Declares an MCP server whose tools become kiln tools.",
    ),
    d(
        "",
        "policy(name)",
        "Declares a call policy: allow, deny or ask before a tool runs.",
    ),
    d("", "prompt(name)", "Declares an MCP prompt."),
    d(
        "",
        "resource(uri, text, mime)",
        "An embedded text resource content block (or, at top level, an MCP resource).",
    ),
    d(T, "description(text)", "What the tool does, for the model."),
    d(
        T,
        "param(name, type[, options])",
        "A parameter: type is string, integer, number, boolean, array or object; options a description or a map (desc, default, enum, items, min, max, pattern, optional...).",
    ),
    d(
        T,
        "input_schema(schema)",
        "The whole JSON Schema of the arguments instead of params.",
    ),
    d(
        T,
        "requires(capabilities)",
        "Capabilities the caller must grant (\"net:api.example.com\", [\"fs.read:docs\"]).",
    ),
    d(
        T,
        "handler(function)",
        "The code: |args| or |args, ctx| (or a script function's name).",
    ),
    d(
        T,
        "returns(type)",
        "The result's schema, checked on every result (MCP outputSchema).",
    ),
    d(T, "title(text)", "A human-readable name (MCP's title)."),
    d(
        T,
        "annotations(hints)",
        "Behaviour hints: #{ read_only, destructive, idempotent, open_world }.",
    ),
    d(
        T,
        "exclusive()",
        "Never runs alongside another call of the same round.",
    ),
    d(T, "timeout(ms)", "The call's deadline."),
    d(
        T,
        "retries(n)",
        "Re-runs a handler up to n more times when a second try can pass.",
    ),
    d(
        T,
        "available_if(predicate)",
        "|ctx| bool: whether the tool is offered in this call context.",
    ),
    d(
        T,
        "rate_limit(calls, per_seconds[, options])",
        "At most so many calls per period; #{ wait: true } waits instead of refusing.",
    ),
    d(
        T,
        "task(mode[, options])",
        "MCP tasks: \"optional\" or \"required\"; #{ start: \"background\" }.",
    ),
    d(
        A,
        "description(text)",
        "What the agent does (for callers and handoffs).",
    ),
    d(A, "provider(name)", "anthropic, openai, ollama or script."),
    d(A, "model(name)", "The model the provider runs."),
    d(A, "system(text)", "The system prompt."),
    d(
        A,
        "tools(names)",
        "The tools it may call ([\"calculator\", \"SERVER__*\"]).",
    ),
    d(
        A,
        "capabilities(grants)",
        "What its tools may reach ([\"net:api.example.com\", \"store:notes\"]).",
    ),
    d(
        A,
        "ask(grants)",
        "Grants that need a person's approval at each use.",
    ),
    d(
        A,
        "max_tool_iterations(n)",
        "The most model rounds with tool calls in one run.",
    ),
    d(A, "temperature(t)", "Sampling temperature."),
    d(A, "max_tokens(n)", "The most tokens in one reply."),
    d(
        A,
        "base_url(url)",
        "The provider's address (an OpenAI-compatible server, Ollama).",
    ),
    d(
        A,
        "api_key_env(name)",
        "The environment variable holding the API key.",
    ),
    d(
        A,
        "max_parallel(n)",
        "How many tool calls of one round run at once.",
    ),
    d(
        A,
        "planner(function)",
        "|messages, tools| ... for the offline script provider.",
    ),
    d(
        A,
        "mode(mode)",
        "\"json_planner\" for models without native tool calling.",
    ),
    d(A, "max_steps(n)", "Planner mode's step budget."),
    d(
        A,
        "output(type)",
        "A typed answer: the final reply must match this schema.",
    ),
    d(
        A,
        "budget(limits)",
        "Limits of one run: #{ input_tokens, output_tokens, tool_calls, cost_usd }.",
    ),
    d(
        A,
        "handoffs(agents)",
        "Agents it may hand the conversation to.",
    ),
    d(
        A,
        "code_mode(options)",
        "The model writes one Rhai program calling the tools instead of tool calls.",
    ),
    d(
        A,
        "price(input, output)",
        "Dollars per million input and output tokens, for the run's cost.",
    ),
    d(P, "description(text)", "What the pipeline does."),
    d(
        P,
        "requires(capabilities)",
        "Capabilities the pipeline's caller must grant.",
    ),
    d(
        "",
        "http_get(url[, options])",
        "GET a URL (needs capability net, scoped to the host).",
    ),
    d(
        "",
        "http_post(url, body[, options])",
        "POST to a URL (needs capability net).",
    ),
    d(
        "",
        "read_file(path)",
        "A workspace file's text (needs fs.read).",
    ),
    d(
        "",
        "list_dir(path)",
        "A workspace folder's entries (needs fs.read).",
    ),
    d(
        "",
        "write_file(path, text)",
        "Writes a workspace file atomically (needs fs.write).",
    ),
    d(
        "",
        "env(name)",
        "An environment variable (needs env; secrets only through a grant naming them).",
    ),
    d(
        "",
        "store_get(ns, key)",
        "A value of the persistent store (needs store).",
    ),
    d(
        "",
        "store_set(ns, key, value)",
        "Sets a value of the persistent store (needs store).",
    ),
    d(
        "",
        "store_delete(ns, key)",
        "Deletes a value of the persistent store (needs store).",
    ),
    d(
        "",
        "store_list(ns)",
        "The keys of a store namespace (needs store).",
    ),
    d(
        "",
        "call_tool(name, args)",
        "Calls another tool, within the caller's grants.",
    ),
    d(
        "",
        "run_agent(name, prompt[, options])",
        "Runs another agent and returns its answer.",
    ),
    d(
        "",
        "tool_error(message)",
        "throw tool_error(\"...\"): a failure the model reads.",
    ),
    d(
        "",
        "sample(prompt[, options])",
        "Asks the MCP client's model (needs sampling).",
    ),
    d(
        "",
        "elicit(message, fields)",
        "Asks the MCP client's user for a form (needs elicitation).",
    ),
    d("", "roots()", "The MCP client's roots (needs roots)."),
    d(
        "",
        "progress(done[, total[, message]])",
        "Progress of the call, for MCP clients.",
    ),
    d(
        "",
        "log(level, message)",
        "A log line (stderr, and the MCP client).",
    ),
    d(
        "",
        "image(data, mime)",
        "An image content block (data base64).",
    ),
    d(
        "",
        "audio(data, mime)",
        "An audio content block (data base64).",
    ),
    d("", "json_encode(value)", "A value as JSON text."),
    d("", "json_decode(text)", "JSON text as a value."),
    d(
        "",
        "math_eval(expression)",
        "Evaluates an arithmetic expression (parsed by the host, never eval).",
    ),
];

/// The documented call `name` of builder `on` (`""` for a function).
pub fn find(on: &str, name: &str) -> Option<&'static CallDoc> {
    CALLS.iter().find(|c| c.on == on && c.name == name)
}

/// What the DSL calls each builder type in messages.
pub const BUILDERS: &[(&str, &str)] = &[
    ("ToolBuilder", "tool(...)"),
    ("AgentBuilder", "agent(...)"),
    ("PipelineBuilder", "pipeline(...)"),
    ("McpServerBuilder", "mcp_server(...)"),
    ("ResourceBuilder", "resource(...)"),
    ("PromptBuilder", "prompt(...)"),
    ("PolicyBuilder", "policy(...)"),
];

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_the_calls_up_to_their_parenthesis() {
        let param = super::find("ToolBuilder", "param").expect("param is documented");
        assert_eq!(param.call, "param(name, type[, options])");
        assert!(super::find("", "exclusive").is_none());
        assert!(
            super::CALLS
                .iter()
                .all(|c| !c.name.is_empty() && !c.name.contains('('))
        );
    }
}
