//! What a code-mode program that fails is told: where (line, column, the line as written),
//! what, the Rhai form of the JavaScript or Python habit behind it, and which failures are
//! limits (the program cannot catch those either).

use crate::sandbox;
use kiln_core::tool::{FailureKind, ToolFailure};
use rhai::{EvalAltResult, Position};

/// The usual habits of JavaScript and Python in a program, each with the Rhai form to use.
const HABITS: &[(&str, &str)] = &[
    (
        "=>",
        "closures are |x| x + 1 (or |acc, x| acc + x), not (x) => ...",
    ),
    ("function ", "functions are fn name(a, b) { ... }"),
    ("console.log", "print(...) writes a line"),
    ("===", "compare with == and !="),
    ("!==", "compare with == and !="),
    ("++", "add with x += 1"),
    ("--", "subtract with x -= 1"),
    (
        "undefined",
        "there is no undefined or null: the empty value is ()",
    ),
    (
        "null",
        "there is no undefined or null: the empty value is ()",
    ),
    (".length", "the length is .len()"),
    (
        "Math.",
        "there is no Math object: use floor(x), round(x), abs(x), sqrt(x), max(a, b)",
    ),
    (
        "JSON.",
        "there is no JSON object: the values are maps and arrays already",
    ),
    (
        "var ",
        "variables are let (or const for one that never changes)",
    ),
    (
        "async ",
        "tool calls return their result directly: no async or await",
    ),
    (
        "await ",
        "tool calls return their result directly: no async or await",
    ),
    (".forEach(", "loop with for item in list { ... }"),
    (
        "new ",
        "there are no classes: build object maps #{ key: value }",
    ),
    (
        "for (",
        "loops are for i in 0..n { ... } or for item in list { ... }",
    ),
    (
        "({",
        "object maps are written #{ key: value }: a bare { } is a block",
    ),
    (
        "= {",
        "object maps are written #{ key: value }: a bare { } is a block",
    ),
    (
        "'",
        "strings use double quotes or backticks; 'x' is a single character",
    ),
    ("def ", "functions are fn name(a, b) { ... }"),
    ("None", "there is no None: the empty value is ()"),
    ("True", "the booleans are true and false"),
    ("False", "the booleans are true and false"),
    ("elif ", "write else if"),
    ("let {", "no destructuring: read each field, let a = m.a;"),
    (
        "let [",
        "no destructuring: read each item, let a = list[0];",
    ),
];

/// Hints for the habits a failing program shows, at most three.
fn habits(code: &str) -> Vec<&'static str> {
    let mut hints: Vec<&str> = Vec::new();
    for (habit, hint) in HABITS {
        if code.contains(habit) && !hints.contains(hint) {
            hints.push(hint);
        }
    }
    hints.truncate(3);
    hints
}

/// An error the model can fix: where, what, the line as it wrote it, and the Rhai form of the
/// habits the program shows.
pub(crate) fn program_error(code: &str, pos: Position, what: &str) -> ToolFailure {
    let mut failure = located_error(code, pos, what);
    let mut hints = habits(code);
    if what.contains("Cannot assign to constant") {
        hints.insert(
            0,
            "a const never changes: declare a value that changes with let",
        );
    }
    for hint in hints {
        failure.message.push_str(&format!("\nhint: {hint}"));
    }
    failure
}

fn located_error(code: &str, pos: Position, what: &str) -> ToolFailure {
    let message = match pos.line() {
        Some(line) => {
            let text = code
                .lines()
                .nth(line.saturating_sub(1))
                .unwrap_or("")
                .trim_end();
            format!(
                "line {line}, column {}: {what}\n  {line} | {text}",
                pos.position().unwrap_or(0)
            )
        }
        None => what.to_string(),
    };
    ToolFailure::visible(FailureKind::ToolError, message)
}

pub(crate) fn runtime_error(code: &str, e: &EvalAltResult) -> ToolFailure {
    if let EvalAltResult::ErrorTerminated(token, _) = e {
        let why = token.to_string();
        if why == sandbox::MEMORY_TOKEN {
            let said = format!(
                "the program held more memory than its limit ({} MiB) allows",
                sandbox::max_memory() / (1024 * 1024)
            );
            return ToolFailure::visible(FailureKind::Limit, said);
        }
        let (kind, said) = if why.contains("cancel") {
            (FailureKind::Cancelled, "the program was cancelled")
        } else {
            (FailureKind::Deadline, "the program passed its deadline")
        };
        return ToolFailure::visible(kind, said);
    }
    let innermost = match e {
        EvalAltResult::ErrorInFunctionCall(_, _, inner, _) => inner.as_ref(),
        other => other,
    };
    let what = match e {
        EvalAltResult::ErrorRuntime(v, _) => v.to_string(),
        _ => innermost.to_string(),
    };
    let mut failure = program_error(code, e.position(), &what);
    // A limit stays a limit (the program cannot catch it either), told where it was reached.
    if matches!(
        innermost,
        EvalAltResult::ErrorDataTooLarge(..)
            | EvalAltResult::ErrorTooManyOperations(_)
            | EvalAltResult::ErrorStackOverflow(_)
            | EvalAltResult::ErrorTooManyVariables(_)
    ) {
        failure.kind = FailureKind::Limit;
    }
    failure
}
