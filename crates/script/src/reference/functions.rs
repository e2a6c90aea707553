//! The functions that declare (`tool`, `agent`...) and those that build or convert values.

use super::entry::{Entry, function, replaced};

/// The declarations a script file makes at its top level, and a policy check's verdicts.
pub(super) const DECLARATIONS: &[Entry] = &[
    function(
        "tool(name: string)",
        "Declares a tool the model (or a caller) can call.",
    ),
    function(
        "agent(name: string)",
        "Declares an agent: a model, its tools and its grants.",
    ),
    function(
        "pipeline(name: string)",
        "Declares a pipeline of agent and tool steps.",
    ),
    function(
        "mcp_server(name: string)",
        "Declares an MCP server whose tools become kiln tools.",
    ),
    function(
        "a2a_agent(name: string)",
        "Declares a remote A2A agent an agent may ask as a tool (`.tools([\"a2a:NAME\"])`, capability a2a:NAME).",
    ),
    function(
        "evaluation(name: string)",
        "Declares an evaluation (`kiln eval NAME`): what it runs, its cases and evaluators (`eval` is Rhai's reserved word).",
    ),
    function(
        "policy(name: string)",
        "Declares a call policy: allow, deny or needs_approval before a tool runs.",
    ),
    function("prompt(name: string)", "Declares an MCP prompt."),
    function(
        "resource(uri: string)",
        "Declares an MCP resource read through its handler.",
    ),
    function(
        "resource_template(uri_template: string)",
        "Declares an MCP resource template (\"notes://{name}\").",
    ),
    function("allow()", "A policy check's verdict: the call goes ahead."),
    function(
        "deny(reason: string)",
        "A policy check's verdict: the call is refused with this reason.",
    ),
    function(
        "require_approval(reason: string)",
        "A policy check's verdict: a person approves the call first.",
    ),
    replaced(
        function(
            "needs_approval(reason: string)",
            "A policy check's verdict; its name before require_approval (.needs_approval(grants) is an agent's).",
        ),
        "require_approval",
    ),
    replaced(
        function(
            "ask(reason: string)",
            "A policy check's verdict; the old spelling of require_approval.",
        ),
        "require_approval",
    ),
];

/// Functions that build, convert or report values.
pub(super) const VALUES: &[Entry] = &[
    function(
        "call_tool(name: string, args: any)",
        "Calls another tool, within the caller's grants.",
    ),
    function(
        "tool_error(message: any)",
        "throw tool_error(\"...\"): a failure the model reads.",
    ),
    function(
        "image(data: string, mime: string) -> Content",
        "An image content block: data base64, mime such as \"image/png\".",
    ),
    function(
        "audio(data: string, mime: string) -> Content",
        "An audio content block: data base64, mime such as \"audio/wav\".",
    ),
    function(
        "resource_block(uri: string, text: string, mime: string) -> Content",
        "An embedded text resource content block: its URI, its text and media type.",
    ),
    replaced(
        function(
            "resource(uri: string, text: string, mime: string) -> Content",
            "An embedded text resource content block; the old spelling of resource_block.",
        ),
        "resource_block",
    ),
    function(
        "resource_blob_block(uri: string, blob: string, mime: string) -> Content",
        "An embedded binary resource content block: its URI, its bytes (base64) and media type.",
    ),
    replaced(
        function(
            "resource_blob(uri: string, blob: string, mime: string) -> Content",
            "An embedded binary resource content block; the old spelling of resource_blob_block.",
        ),
        "resource_blob_block",
    ),
    function(
        "resource_blob(data: string, mime: string)",
        "A resource handler's bytes: base64 data and their media type.",
    ),
    function(
        "progress(done: number[, total: number[, message: string]]) -> ()",
        "Reports progress to the caller, live at every door (run events, streams that ask for them, the console, MCP progress, a terminal's bar); values must increase.",
    ),
    function(
        "emit(name: string, value: any) -> ()",
        "Sends a named JSON value (at most 16 KiB) to the caller, live at every door; past 16 a second the latest of each name waits. Never waits.",
    ),
    function(
        "log(level: string, message: any) -> ()",
        "A log line (stderr, and the MCP client).",
    ),
    function("json_encode(value: any)", "A value as JSON text."),
    function("json_decode(text: string)", "JSON text as a value."),
    function(
        "math_eval(expression: string)",
        "Evaluates an arithmetic expression (parsed by the host, never eval).",
    ),
    function("now()", "Seconds since the Unix epoch, with fractions."),
    function(
        "now_iso()",
        "The current UTC time as RFC 3339 (\"2026-11-29T12:00:00Z\").",
    ),
    function(
        "sleep(seconds: number | string)",
        "Waits so many seconds (or a duration with its unit, \"50ms\"); the call's deadline and cancellation still stop it.",
    ),
];
