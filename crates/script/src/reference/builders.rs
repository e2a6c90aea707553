//! The methods of the other builders: `pipeline(name)`, `mcp_server(name)`, `a2a_agent(name)`,
//! `resource(uri)` and
//! `resource_template(uri_template)`, `prompt(name)` and `policy(name)`.

use super::entry::{Entry, method, replaced};

const P: &str = "PipelineBuilder";
const M: &str = "McpServerBuilder";
const A: &str = "A2aAgentBuilder";
const R: &str = "ResourceBuilder";
const Q: &str = "PromptBuilder";

/// `pipeline(...)`'s methods.
pub(super) const PIPELINE: &[Entry] = &[
    method(P, "description(text: string)", "What the pipeline does."),
    method(
        P,
        "input(name: string, type: string[, desc: string][, options: map])",
        "An input of the pipeline, declared as a tool's param (type, description, options).",
    ),
    method(
        P,
        "compute(name: string, inputs: array, target: string[, mapper: fn])",
        "A value computed by calling target (a tool, or \"agent:NAME\") with the named values, mapped by |v| #{...} if given.",
    ),
    method(
        P,
        "result(name: string)",
        "A step or input whose value the pipeline returns.",
    ),
    replaced(
        method(
            P,
            "output(name: string)",
            "A step or input whose value the pipeline returns; the old spelling of result.",
        ),
        "result",
    ),
    method(
        P,
        "requires(capabilities: string | array)",
        "Capabilities the pipeline's caller must grant.",
    ),
    method(
        P,
        "timeout(duration: int | string)",
        "The whole run's deadline, a duration with its unit (\"5m\"); a bare number of milliseconds is deprecated (kiln check --fix rewrites it).",
    ),
    method(P, "max_parallel(n: int)", "How many steps run at once."),
];

/// `mcp_server(...)`'s methods.
pub(super) const MCP_SERVER: &[Entry] = &[
    method(
        M,
        "command(program: string[, args: array])",
        "Starts the server as a program speaking MCP over stdio, in the workspace.",
    ),
    method(
        M,
        "url(url: string)",
        "Reaches the server over MCP's streamable HTTP at this address.",
    ),
    method(
        M,
        "bearer_env(name: string)",
        "The environment variable holding a bearer token sent to the server.",
    ),
    method(
        M,
        "oauth([options: map])",
        "Logs in to the server with OAuth (#{ grant, client_id, scopes, ... }) instead of a bearer token.",
    ),
    method(
        M,
        "pass_env(names: array)",
        "Environment variables passed to the server program that kiln would otherwise withhold.",
    ),
    replaced(
        method(
            M,
            "env(names: array)",
            "Variables passed to the server program; the old spelling of pass_env.",
        ),
        "pass_env",
    ),
    method(
        M,
        "rate_limit(calls: int, per: number | string[, options: map])",
        "At most so many calls per period (seconds, or a duration with its unit) to each of its tools; #{ wait: true } waits.",
    ),
];

/// `a2a_agent(...)`'s methods.
pub(super) const A2A_AGENT: &[Entry] = &[
    method(
        A,
        "url(url: string)",
        "Where the remote agent is: its agent card is at URL/.well-known/agent-card.json.",
    ),
    method(
        A,
        "bearer_env(name: string)",
        "The environment variable holding a bearer token sent to the agent.",
    ),
    method(
        A,
        "oauth(options: map)",
        "A machine's OAuth client instead of a bearer token: #{ grant: \"client_credentials\", client_id, client_secret_env, scopes, token_url }; the token URL pinned, else from the agent's card or its authorization server's metadata.",
    ),
    method(
        A,
        "description(text: string)",
        "What the model is told the agent is for (default: a line naming it).",
    ),
];

/// The methods `resource(...)` and `prompt(...)` share, for builder `on`.
const fn common(on: &'static str) -> [Entry; 5] {
    [
        method(
            on,
            "title(text: string)",
            "A human-readable name (MCP's title).",
        ),
        method(
            on,
            "description(text: string)",
            "What it offers, for the MCP client.",
        ),
        method(
            on,
            "requires(capabilities: string | array)",
            "Capabilities the client's grants must hold to read it.",
        ),
        method(
            on,
            "timeout(duration: int | string)",
            "The handler's deadline, a duration with its unit (\"2s\"); a bare number of milliseconds is deprecated (kiln check --fix rewrites it).",
        ),
        method(
            on,
            "complete(arg: string, function: fn)",
            "|prefix| [values]: completions of an argument (a template's variable, a prompt's arg).",
        ),
    ]
}

const R_COMMON: [Entry; 5] = common(R);
const Q_COMMON: [Entry; 5] = common(Q);

/// `resource(...)` and `resource_template(...)`'s methods.
pub(super) const RESOURCE: &[Entry] = &[
    method(
        R,
        "name(text: string)",
        "The name MCP clients list it under.",
    ),
    method(
        R,
        "mime(type: string)",
        "Its media type (\"text/markdown\").",
    ),
    method(R, "size(bytes: int)", "Its size in bytes, for listings."),
    method(
        R,
        "handler(function: fn)",
        "|args|: the text (a template's variables in args), or resource_blob(data, mime) for bytes.",
    ),
    R_COMMON[0],
    R_COMMON[1],
    R_COMMON[2],
    R_COMMON[3],
    R_COMMON[4],
];

/// `prompt(...)`'s methods.
pub(super) const PROMPT: &[Entry] = &[
    method(
        Q,
        "arg(name: string, desc: string[, options: map])",
        "An argument of the prompt; #{ required: false } makes it optional.",
    ),
    method(
        Q,
        "handler(function: fn)",
        "|args|: the prompt's text, or a list of messages and content blocks.",
    ),
    Q_COMMON[0],
    Q_COMMON[1],
    Q_COMMON[2],
    Q_COMMON[3],
    Q_COMMON[4],
];

/// `policy(...)`'s methods.
pub(super) const POLICY: &[Entry] = &[
    method(
        "PolicyBuilder",
        "applies_to(tools: array)",
        "The tools it checks, by name or glob ([\"db_*\"]).",
    ),
    method(
        "PolicyBuilder",
        "check(function: fn)",
        "|call, ctx| verdict: allow(), deny(reason), require_approval(reason), or a map of rewritten arguments.",
    ),
];
