//! `evaluation(name)`'s methods and the built-in evaluators it takes.

use super::entry::{Entry, function, method};

const E: &str = "EvalBuilder";

/// The built-in evaluators: functions making the values `.evaluator(...)` takes.
pub(super) const EVALUATORS: &[Entry] = &[
    function(
        "answer_equals([expected: any]) -> Evaluator",
        "Passes when the answer equals expected (default: the case's expected; a string compares trimmed, other values as JSON).",
    ),
    function(
        "answer_contains([text: string]) -> Evaluator",
        "Passes when the answer contains text, ignoring case (default: the case's expected; a list: every item).",
    ),
    function(
        "answer_matches(pattern: string) -> Evaluator",
        "Passes when the answer matches the regular expression.",
    ),
    function(
        "output_equals([expected: any]) -> Evaluator",
        "Passes when the typed output (.output) equals expected (default: the case's expected).",
    ),
    function(
        "output_matches(schema: map) -> Evaluator",
        "Passes when the typed output is valid against the JSON Schema.",
    ),
    function(
        "called(tool: string[, args: map]) -> Evaluator",
        "Passes when the run called the tool (code mode's nested calls included), with arguments containing args (\"*\" globs in strings).",
    ),
    function(
        "called_in_order(tools: array) -> Evaluator",
        "Passes when the run called these tools in this order (others may come between).",
    ),
    function(
        "at_most_calls([tool: string, ]max: int) -> Evaluator",
        "Passes when the run made at most max tool calls (of tool, when named).",
    ),
    function(
        "within_duration(duration: int | string) -> Evaluator",
        "Passes when the run took at most this long, a duration with its unit (\"20s\"); a bare number of milliseconds is deprecated (kiln check --fix rewrites it).",
    ),
    function(
        "within_tokens(tokens: int) -> Evaluator",
        "Passes when the run used at most this many tokens, input and output.",
    ),
    function(
        "within_cost(usd: float | int) -> Evaluator",
        "Passes when the run cost at most this many dollars (an unpriced model fails it).",
    ),
    function(
        "no_tool_error() -> Evaluator",
        "Passes when no tool call of the run failed.",
    ),
    function(
        "judge(settings: map) -> Evaluator",
        "A model grades the run: #{ rubric, model: \"provider:model\", retries, base_url, price: [in, out] }; a malformed verdict is repaired, its usage counted.",
    ),
];

/// `evaluation(...)`'s methods.
pub(super) const EVALUATION: &[Entry] = &[
    method(
        E,
        "description(text: string)",
        "What the evaluation checks, for reports.",
    ),
    method(
        E,
        "agent(name: string)",
        "Each case runs this agent, its input as the prompt.",
    ),
    method(
        E,
        "tool(name: string)",
        "Each case calls this tool, its input as the arguments.",
    ),
    method(
        E,
        "pipeline(name: string)",
        "Each case runs this pipeline, its input as the inputs.",
    ),
    method(
        E,
        "add_case(case: map)",
        "A case: #{ name, input, expected, metadata } (name defaults to \"case N\").",
    ),
    method(
        E,
        "cases(source: string | array)",
        "Cases from a JSONL, JSON, YAML or CSV file beside the script, or a list of case maps.",
    ),
    method(
        E,
        "evaluator(evaluator: Evaluator | string[, check: fn | Evaluator])",
        "Scores every run: a built-in (answer_contains()...), a name and a built-in (to tell two apart), or a name and |c, run| (the case, the run) returning true/false, a score, a label or #{ pass, score, label, reason }.",
    ),
    method(
        E,
        "models(models: array)",
        "Runs every case on each model (\"provider:model\"); --model overrides it.",
    ),
    method(
        E,
        "repeat(n: int)",
        "Runs per case and model (pass@k and pass^k over them); --repeat overrides it.",
    ),
    method(
        E,
        "concurrency(n: int)",
        "Runs at once; --concurrency overrides it.",
    ),
];
