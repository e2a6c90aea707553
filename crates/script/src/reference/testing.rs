//! The functions a `kiln test` file may call besides the DSL's: kiln-testing registers them
//! (this crate cannot see that engine), and a test there keeps this part equal to what it
//! registers.

use super::entry::{Entry, function, replaced};

/// The functions of test files (`*_test.rhai`, run by `kiln test`).
pub(super) const TEST_FILES: &[Entry] = &[
    function(
        "test(name: string, body: fn)",
        "Declares a test: its name and the closure that runs it.",
    ),
    function(
        "assert(condition: bool[, note: string])",
        "Fails the test unless condition holds.",
    ),
    function(
        "assert_eq(actual: any, expected: any[, note: string])",
        "Fails the test unless the values are equal, naming the first path where they differ.",
    ),
    function(
        "assert_match(text: any, pattern: string)",
        "Fails the test unless the text matches the regular expression.",
    ),
    function(
        "assert_err(result: any, kind: string)",
        "Fails the test unless a try_call_tool or run_agent result failed with this kind of error.",
    ),
    function(
        "try_call_tool(name: string, args: any[, options: map])",
        "Runs a tool as kiln call does, under the grants of #{ caps } only (context, actor); #{ success, result | error }.",
    ),
    replaced(
        function(
            "call_tool(name: string, args: any[, options: map])",
            "Runs a tool and returns its #{ success, result | error }; in a test file the old spelling of try_call_tool (a script's call_tool returns the value).",
        ),
        "try_call_tool",
    ),
    function(
        "run_agent(name: string, prompt: string[, options: map])",
        "Runs an agent's real loop against a scripted model (#{ model | scenario, strict, caps, context, actor, max_iterations }).",
    ),
    function(
        "fake_http(pattern: string, reply: string | map)",
        "Answers the tools' http_get/http_post for URLs matching pattern (* matches anything) with text or #{ status, json | body, headers }.",
    ),
    function(
        "http_requests()",
        "The HTTP requests the test's tools made so far, as #{ method, url, body }.",
    ),
    function(
        "workspace()",
        "The test's temporary workspace folder, where read_file and write_file are rooted.",
    ),
];
