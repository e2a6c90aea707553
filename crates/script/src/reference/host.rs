//! The host functions that reach outside the script, each gated by a capability, and those
//! that ask the MCP client.

use super::entry::{Entry, function, gated, replaced};

/// Functions gated by a capability the tool declares and the caller grants.
pub(super) const GATED: &[Entry] = &[
    gated(
        "http_get(url: string[, options: map])",
        "net",
        "GET a URL, scoped to its host; #{ headers, timeout: \"5s\", max_bytes } (a timeout in bare milliseconds, or timeout_ms, is deprecated: kiln check --fix rewrites it).",
    ),
    gated(
        "http_post(url: string, body: any[, options: map])",
        "net",
        "POST a body (text, or a map sent as JSON) to a URL, scoped to its host; options as http_get's.",
    ),
    gated(
        "read_file(path: string)",
        "fs.read",
        "A workspace file's text.",
    ),
    gated(
        "list_dir(path: string)",
        "fs.read",
        "A workspace folder's entries.",
    ),
    gated(
        "write_file(path: string, text: string)",
        "fs.write",
        "Writes a workspace file atomically.",
    ),
    gated(
        "run_in_terminal(command: string, args: array) -> map",
        "terminal",
        "Runs a command in the terminal the caller lends (an editor over kiln acp), scoped by the command's name (terminal:cargo); kiln runs none itself. #{ output, exit_code, signal, truncated }.",
    ),
    gated(
        "env(name: string)",
        "env",
        "An environment variable; secrets only through a grant naming them.",
    ),
    gated(
        "store_get(ns: string, key: string)",
        "store",
        "A value of the persistent store, () when there is none.",
    ),
    gated(
        "store_set(ns: string, key: string, value: any)",
        "store",
        "Sets a value of the persistent store.",
    ),
    gated(
        "store_delete(ns: string, key: string)",
        "store",
        "Deletes a value of the persistent store; whether there was one.",
    ),
    gated(
        "store_list(ns: string)",
        "store",
        "The keys of a store namespace.",
    ),
    gated(
        "sample(prompt: string[, options: map]) -> string",
        "sampling",
        "Asks the MCP client's model and returns its text; #{ system, max_tokens }.",
    ),
    gated(
        "elicit(message: string, fields: map) -> map",
        "elicitation",
        "Shows the MCP client's user a form; returns #{ action, content }.",
    ),
    gated(
        "roots() -> array",
        "roots",
        "The MCP client's roots as [#{ uri, name }].",
    ),
];

/// Questions to the MCP client asked together, and the tasks extension.
pub(super) const CLIENT: &[Entry] = &[
    function(
        "ask_client(requests: map) -> map",
        "Asks the MCP client several questions at once (#{ key: elicit_request(...) }); each needs its own capability.",
    ),
    function(
        "elicit_request(message: string, fields: map) -> map",
        "A form for ask_client, as elicit asks it.",
    ),
    replaced(
        function(
            "form_request(message: string, fields: map) -> map",
            "A form for ask_client; the old spelling of elicit_request.",
        ),
        "elicit_request",
    ),
    function(
        "sample_request(prompt: string[, options: map]) -> map",
        "A question to the client's model for ask_client, as sample asks it.",
    ),
    function(
        "roots_request() -> map",
        "A request of the client's roots for ask_client.",
    ),
    function(
        "background()",
        "Goes on as an MCP task where the caller can poll one (a tool declared .task(..., #{ start: \"background\" })); false otherwise.",
    ),
];
