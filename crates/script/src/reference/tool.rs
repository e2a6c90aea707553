//! The methods of `tool(name)`.

use super::entry::{Entry, method, replaced};

const T: &str = "ToolBuilder";

/// `tool(...)`'s methods.
pub(super) const TOOL: &[Entry] = &[
    method(
        T,
        "description(text: string)",
        "What the tool does, for the model.",
    ),
    method(
        T,
        "param(name: string, type: string[, options: string | map])",
        "A parameter: type is string, integer, number, boolean, array or object; options a description or a map (desc, default, enum, items, min, max, pattern, optional...).",
    ),
    method(
        T,
        "input_schema(schema: map)",
        "The whole JSON Schema of the arguments instead of params.",
    ),
    method(
        T,
        "requires(capabilities: string | array)",
        "Capabilities the caller must grant (\"net:api.example.com\", [\"fs.read:docs\"]).",
    ),
    method(
        T,
        "handler(function: fn | string)",
        "The code: |args| or |args, ctx| (or a script function's name).",
    ),
    method(
        T,
        "output(type: string | map[, options: map])",
        "The result's schema, checked on every result (MCP outputSchema): a type name (with options) or a map of fields.",
    ),
    replaced(
        method(
            T,
            "returns(type: string | map[, options: map])",
            "The result's schema; the old spelling of output.",
        ),
        "output",
    ),
    method(
        T,
        "title(text: string)",
        "A human-readable name (MCP's title).",
    ),
    method(
        T,
        "annotations(hints: map)",
        "Behaviour hints: #{ read_only, destructive, idempotent, open_world }.",
    ),
    method(
        T,
        "exclusive()",
        "Never runs alongside another call of the same round.",
    ),
    method(
        T,
        "timeout(duration: int | string)",
        "The call's deadline, a duration with its unit (\"30s\", \"500ms\", \"2m\"); a bare number of milliseconds is deprecated (kiln check --fix rewrites it).",
    ),
    method(
        T,
        "retries(n: int)",
        "Re-runs a handler up to n more times (0 to 10) when a second try can pass.",
    ),
    method(
        T,
        "available_if(predicate: fn)",
        "|ctx| bool: whether the tool is offered in this call context.",
    ),
    method(
        T,
        "rate_limit(calls: int, per: number | string[, options: map])",
        "At most so many calls per period (seconds, or a duration with its unit: \"1m\"); #{ wait: true } waits instead of refusing.",
    ),
    method(
        T,
        "task(mode: string[, options: map])",
        "MCP tasks: \"optional\" or \"required\"; #{ start: \"background\" }.",
    ),
    method(
        T,
        "ui(uri: string[, options: map])",
        "A page hosts show beside the conversation (MCP Apps): a ui:// URI and #{ file | html, visibility: [\"model\", \"app\"], csp: #{ connect_domains, resource_domains, frame_domains, base_uri_domains }, permissions, prefers_border, domain }.",
    ),
];
