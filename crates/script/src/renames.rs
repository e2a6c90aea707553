//! The DSL's renamed names: each name one meaning, each meaning one name. An old spelling
//! keeps working as a deprecated alias; [`deprecations`] finds where a script still uses one
//! (from the script's syntax tree, so strings and comments are never taken for calls) and
//! [`fix`] rewrites those calls, and nothing else, to the new names. A renamed key of a host
//! function's options map ([`KEY_RENAMES`]: `http_get`'s `timeout_ms`) is found and rewritten
//! the same way where the map is written out as the call's options argument. A bare number of
//! milliseconds where a duration goes (`.timeout(5000)`, `within_duration(2000)`, a `timeout`
//! option) is found as well and rewritten as a duration with its unit (`"5s"`): a duration
//! says its unit, and a bare number is to mean seconds everywhere, as on the command line.

use kiln_core::error::{LoadError, SourceLoc};
use rhai::{ASTNode, Engine, Expr, FnCallExpr, OptimizationLevel, Stmt};
use std::collections::BTreeSet;

/// One renamed DSL name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rename {
    /// The receiver's type as Rhai names it (`"ToolBuilder"`), or `""` for a function.
    pub on: &'static str,
    /// The deprecated spelling.
    pub old: &'static str,
    /// The spelling to write instead.
    pub new: &'static str,
}

/// Every renamed name. `resource` and `resource_blob` are deprecated only in their
/// three-argument form (a content block): `resource(uri)` still declares an MCP resource and
/// `resource_blob(data, mime)` still builds a served resource's bytes.
pub const RENAMES: &[Rename] = &[
    // A content block, apart from the MCP resource a script serves.
    Rename {
        on: "",
        old: "resource",
        new: "resource_block",
    },
    Rename {
        on: "",
        old: "resource_blob",
        new: "resource_blob_block",
    },
    // The variables an MCP server is passed, apart from the host function that reads one.
    Rename {
        on: "McpServerBuilder",
        old: "env",
        new: "pass_env",
    },
    // Approvals are named as approvals; "ask" is left to questions for an MCP client.
    Rename {
        on: "AgentBuilder",
        old: "ask",
        new: "needs_approval",
    },
    Rename {
        on: "",
        old: "ask",
        new: "require_approval",
    },
    // A policy's verdict, apart from an agent's grants that need approval.
    Rename {
        on: "",
        old: "needs_approval",
        new: "require_approval",
    },
    // One word for an output schema, as agents say it.
    Rename {
        on: "ToolBuilder",
        old: "returns",
        new: "output",
    },
    // One name for the iteration limit, as `RunOptions` and `--max-iterations` say it.
    Rename {
        on: "AgentBuilder",
        old: "max_tool_iterations",
        new: "max_iterations",
    },
    // Pairs with `elicit`, as `sample_request` with `sample`.
    Rename {
        on: "",
        old: "form_request",
        new: "elicit_request",
    },
    // The step a pipeline returns, apart from the output schema of a tool or agent.
    Rename {
        on: "PipelineBuilder",
        old: "output",
        new: "result",
    },
];

/// Names renamed in test files (`*.test.rhai`) only: there `call_tool` returned a record
/// (`#{ success, result | error }`) where a script's `call_tool` returns the value, so the
/// test files' function has a name of its own.
pub const TEST_RENAMES: &[Rename] = &[Rename {
    on: "",
    old: "call_tool",
    new: "try_call_tool",
}];

/// A renamed key of the options map a host function takes as its last argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRename {
    /// The functions taking such options, each with how many arguments a call passes with
    /// them (the options the last).
    pub functions: &'static [(&'static str, usize)],
    /// The deprecated key.
    pub old: &'static str,
    /// The key to write instead.
    pub new: &'static str,
    /// What the warning says after "write ".
    pub advice: &'static str,
}

/// Every renamed options key. `timeout` reads a bare number as milliseconds, as `timeout_ms`
/// did, so a positive number keeps its meaning when the key is renamed.
pub const KEY_RENAMES: &[KeyRename] = &[KeyRename {
    functions: &[("http_get", 2), ("http_post", 3)],
    old: "timeout_ms",
    new: "timeout",
    advice: "`timeout` (a duration with its unit: \"5s\")",
}];

/// How many arguments (the receiver not counted) a call of `r`'s old spelling has when it
/// means what was renamed.
fn arguments(r: &Rename) -> &'static [usize] {
    match (r.on, r.old) {
        ("", "resource" | "resource_blob") => &[3],
        ("", "form_request") => &[2],
        ("", "call_tool") => &[2, 3],
        ("ToolBuilder", "returns") => &[1, 2],
        ("PipelineBuilder", "output") => &[1],
        _ => &[1],
    }
}

/// One use of a deprecated spelling in a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deprecation {
    /// Line of the name, from 1.
    pub line: usize,
    /// Column of the name's first character, from 1.
    pub column: usize,
    /// What was renamed (for an options key: `on` empty, `old` and `new` the keys).
    pub rename: Rename,
    /// For a renamed options key, the function whose options hold it.
    pub option_of: Option<&'static str>,
    /// Whether [`fix`] rewrites it: an options key is left when the map also holds the new key,
    /// or when its value is a literal the new key reads otherwise (a string, zero...).
    pub fixable: bool,
    /// For a bare number of milliseconds where a duration goes: the number as written and the
    /// duration to write instead (`rename` is then empty).
    pub millis: Option<BareMillis>,
}

/// A bare number of milliseconds written where a duration goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BareMillis {
    /// Whose option it is (`http_get(...)`), for a `timeout` option.
    pub option_of: Option<String>,
    /// What is written before the number (`.timeout(`, `within_duration(`, `timeout: `).
    pub before: &'static str,
    /// What is written after it (`)`, or nothing for an option).
    pub after: &'static str,
    /// The number as the script writes it (`5000`, `5_000`).
    pub written: String,
    /// The same duration with its unit (`5s`, `1500ms`).
    pub duration: String,
}

/// `ms` milliseconds as a duration with its unit, in the largest unit that says it exactly.
pub fn with_unit(ms: i64) -> String {
    match ms {
        ms if ms % 60_000 == 0 => format!("{}m", ms / 60_000),
        ms if ms % 1_000 == 0 => format!("{}s", ms / 1_000),
        ms => format!("{ms}ms"),
    }
}

/// What every deprecation's message says between the old spelling and the new.
const DEPRECATED: &str = "` is deprecated: write `";

impl Deprecation {
    /// What `kiln check` and the language server say about it.
    pub fn message(&self) -> String {
        if let Some(m) = &self.millis {
            let whose =
                (m.option_of.as_deref()).map_or_else(String::new, |f| format!("`{f}`'s option "));
            let (before, after) = (m.before, m.after);
            return format!(
                "{whose}`{before}{}{after}{DEPRECATED}{before}\"{}\"{after}`: a bare number here is milliseconds; a duration says its unit, and a bare number is to mean seconds, as on the command line (`kiln check --fix` rewrites it)",
                m.written, m.duration
            );
        }
        let Rename { on, old, new } = self.rename;
        let dot = if on.is_empty() { "" } else { "." };
        let fixed = match self.fixable {
            true => " (`kiln check --fix` rewrites it)",
            false => "",
        };
        match self.option_of {
            Some(func) => {
                let advice = (KEY_RENAMES.iter())
                    .find(|k| k.old == old && k.functions.iter().any(|(f, _)| *f == func))
                    .map_or_else(|| format!("`{new}`"), |k| k.advice.to_string());
                format!(
                    "`{func}(...)`'s option `{old}{DEPRECATED}{}{fixed}",
                    &advice[1..]
                )
            }
            None => format!("`{dot}{old}(...){DEPRECATED}{dot}{new}(...)`{fixed}"),
        }
    }

    /// The deprecation as a warning located in `path`.
    pub fn warning(&self, path: &str) -> LoadError {
        LoadError::at(SourceLoc::new(path, self.line, self.column), self.message())
    }
}

/// Whether `warning` is one of [`Deprecation::warning`]'s (the language server tags those).
pub fn is_deprecation(warning: &LoadError) -> bool {
    warning.message.contains(DEPRECATED)
}

/// The engine that reads scripts for their calls: no functions, no optimisation (a call is
/// never folded away), nesting bounded as kiln's own engine bounds it.
fn reader() -> Engine {
    let mut engine = Engine::new_raw();
    let (depth, in_functions) = crate::sandbox::Limits::default().max_expr_depth;
    engine.set_max_expr_depths(depth, in_functions);
    engine.set_optimization_level(OptimizationLevel::None);
    engine
}

/// The rename a call means, if it uses a deprecated spelling. `in_pipeline`: the call is a
/// method in a chain that starts at `pipeline(...)`. A rename on a receiver whose methods other
/// builders share (`PipelineBuilder`'s `output`, a tool's or agent's output schema) is found
/// only there: a warning missed is better than one given wrongly.
fn renamed(call: &FnCallExpr, method: bool, in_pipeline: bool, test_file: bool) -> Option<Rename> {
    if call.is_qualified() {
        return None;
    }
    let tests: &[Rename] = if test_file { TEST_RENAMES } else { &[] };
    RENAMES
        .iter()
        .chain(tests)
        .find(|r| {
            r.old == call.name.as_str()
                && r.on.is_empty() != method
                && (r.on != "PipelineBuilder" || in_pipeline)
                && arguments(r).contains(&call.args.len())
        })
        .copied()
}

/// Whether the method call at the end of `path` is in a chain whose root is a call of
/// `pipeline(...)` (`pipeline("p").input(...).output("x")`), the script not defining a
/// `pipeline` of its own. Rhai nests a chain's dots to the right, so the root is the left side
/// of the outermost of the dots directly above the call (or, nested to the left, its leftmost).
fn in_pipeline_chain(path: &[ASTNode], own: &BTreeSet<String>) -> bool {
    let above = path.len().saturating_sub(1);
    let mut root = path[..above]
        .iter()
        .rev()
        .map_while(|node| match node {
            ASTNode::Expr(Expr::Dot(x, ..)) => Some(&x.lhs),
            _ => None,
        })
        .last();
    while let Some(Expr::Dot(x, ..)) = root {
        root = Some(&x.lhs);
    }
    matches!(root, Some(Expr::FnCall(call, _))
        if call.name.as_str() == "pipeline" && !call.is_qualified() && !own.contains("pipeline"))
}

/// The renamed keys in the options map a call of a host function writes out as its last
/// argument (`http_get(url, #{ timeout_ms: 500 })`).
fn renamed_keys(call: &FnCallExpr, method: bool) -> Vec<Deprecation> {
    let passed = call.args.len() + usize::from(method);
    let Some(Expr::Map(map, _)) = call.args.last() else {
        return Vec::new();
    };
    let name = call.name.as_str();
    let mut out = Vec::new();
    for k in KEY_RENAMES {
        let Some((func, _)) = (k.functions.iter()).find(|(f, n)| *f == name && *n == passed) else {
            continue;
        };
        if call.is_qualified() {
            continue;
        }
        let has_new = map.0.iter().any(|(key, _)| key.name == k.new);
        for (key, value) in map.0.iter().filter(|(key, _)| key.name == k.old) {
            let keeps_meaning = match value {
                Expr::IntegerConstant(n, _) => *n > 0,
                Expr::FloatConstant(..)
                | Expr::StringConstant(..)
                | Expr::InterpolatedString(..)
                | Expr::BoolConstant(..)
                | Expr::CharConstant(..)
                | Expr::Unit(..)
                | Expr::Array(..)
                | Expr::Map(..)
                | Expr::DynamicConstant(..) => false,
                _ => true,
            };
            if let (Some(line), Some(column)) = (key.pos.line(), key.pos.position()) {
                out.push(Deprecation {
                    line,
                    column,
                    rename: Rename {
                        on: "",
                        old: k.old,
                        new: k.new,
                    },
                    option_of: Some(func),
                    fixable: keeps_meaning && !has_new,
                    millis: None,
                });
            }
        }
    }
    out
}

/// Where a call writes a bare number of milliseconds for a duration: `.timeout(n)` (a tool's,
/// a pipeline's, a resource's or a prompt's deadline), `within_duration(n)`, and the `timeout`
/// of `http_get`'s and `http_post`'s options and of `.code_mode(#{...})`. Only a positive
/// integer written as such is found: a name or an expression may hold anything.
fn bare_millis(source: &str, call: &FnCallExpr, method: bool) -> Vec<Deprecation> {
    if call.is_qualified() {
        return Vec::new();
    }
    let name = call.name.as_str();
    let passed = call.args.len() + usize::from(method);
    let mut numbers: Vec<(Option<String>, &'static str, &'static str, &Expr)> = Vec::new();
    match (name, method, call.args.len()) {
        ("timeout", true, 1) => numbers.push((None, ".timeout(", ")", &call.args[0])),
        ("within_duration", false, 1) => {
            numbers.push((None, "within_duration(", ")", &call.args[0]))
        }
        _ => {}
    }
    let takes_options = matches!(
        (name, method, passed),
        ("http_get", false, 2) | ("http_post", false, 3) | ("code_mode", true, 2)
    );
    if takes_options && let Some(Expr::Map(map, _)) = call.args.last() {
        let shown = if method {
            format!(".{name}(...)")
        } else {
            format!("{name}(...)")
        };
        for (_, value) in map.0.iter().filter(|(key, _)| key.name == "timeout") {
            numbers.push((Some(shown.clone()), "timeout: ", "", value));
        }
    }
    numbers
        .into_iter()
        .filter_map(|(option_of, before, after, value)| {
            let Expr::IntegerConstant(ms, pos) = value else {
                return None;
            };
            let (line, column) = (pos.line()?, pos.position()?);
            let at = offset(source, line, column)?;
            let written: String = source[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            (*ms > 0).then(|| Deprecation {
                line,
                column,
                rename: Rename {
                    on: "",
                    old: "",
                    new: "",
                },
                option_of: None,
                fixable: true,
                millis: Some(BareMillis {
                    option_of,
                    before,
                    after,
                    written,
                    duration: with_unit(*ms),
                }),
            })
        })
        .collect()
}

/// Every use of a deprecated spelling in `source`, in the order they appear. A script that
/// does not parse has none (its parse error is reported as such); a name the script defines
/// as a function of its own is its own, not the DSL's.
pub fn deprecations(source: &str) -> Vec<Deprecation> {
    deprecations_in(source, false)
}

/// [`deprecations`] of a test file (`*.test.rhai`): [`TEST_RENAMES`] too.
pub fn test_deprecations(source: &str) -> Vec<Deprecation> {
    deprecations_in(source, true)
}

/// The deprecations of `source`, a test file's when `test_file`.
fn deprecations_in(source: &str, test_file: bool) -> Vec<Deprecation> {
    let Ok(ast) = reader().compile(source) else {
        return Vec::new();
    };
    let own: BTreeSet<String> = ast.iter_functions().map(|f| f.name.to_string()).collect();
    let mut found: Vec<Deprecation> = Vec::new();
    ast.walk(&mut |path: &[ASTNode]| {
        let call = match path.last() {
            Some(ASTNode::Expr(Expr::FnCall(call, pos))) => Some((call, false, *pos)),
            Some(ASTNode::Expr(Expr::MethodCall(call, pos))) => Some((call, true, *pos)),
            Some(ASTNode::Stmt(Stmt::FnCall(call, pos))) => Some((call, false, *pos)),
            _ => None,
        };
        if let Some((call, method, pos)) = call
            && !own.contains(call.name.as_str())
            && let Some(rename) = renamed(
                call,
                method,
                method && in_pipeline_chain(path, &own),
                test_file,
            )
            && let (Some(line), Some(column)) = (pos.line(), pos.position())
        {
            found.push(Deprecation {
                line,
                column,
                rename,
                option_of: None,
                fixable: true,
                millis: None,
            });
        }
        if let Some((call, method, _)) = call
            && !own.contains(call.name.as_str())
        {
            found.extend(renamed_keys(call, method));
            found.extend(bare_millis(source, call, method));
        }
        true
    });
    found.sort_by_key(|d| (d.line, d.column));
    found.dedup();
    found
}

/// [`deprecations`] as warnings located in `path` (a test file's, [`test_deprecations`], when
/// `path` is a `*.test.rhai`).
pub fn warnings(path: &str, source: &str) -> Vec<LoadError> {
    (deprecations_in(source, crate::is_test_file(std::path::Path::new(path))).iter())
        .map(|d| d.warning(path))
        .collect()
}

/// The byte offset of a Rhai position (line and column counted in characters from 1).
fn offset(source: &str, line: usize, column: usize) -> Option<usize> {
    let start = if line == 1 {
        0
    } else {
        source.match_indices('\n').nth(line - 2)?.0 + 1
    };
    let text = &source[start..];
    let within = match text.char_indices().nth(column.checked_sub(1)?) {
        Some((i, _)) => i,
        None => return None,
    };
    Some(start + within)
}

/// `source` with every deprecated spelling replaced by its new name, and what was replaced.
/// Only the names (and bare numbers of milliseconds) change: every other byte of the file stays
/// as it was. A rewrite that brings out another (`timeout_ms: 500` becomes `timeout: 500`,
/// then `timeout: "500ms"`) is made in the same call.
pub fn fix(source: &str) -> (String, Vec<Deprecation>) {
    fix_in(source, false)
}

/// [`fix`] of a test file (`*.test.rhai`): [`TEST_RENAMES`] too.
pub fn fix_test(source: &str) -> (String, Vec<Deprecation>) {
    fix_in(source, true)
}

/// [`fix`], a test file's when `test_file`.
fn fix_in(source: &str, test_file: bool) -> (String, Vec<Deprecation>) {
    let mut text = source.to_string();
    let mut all = Vec::new();
    for _ in 0..3 {
        let (next, done) = fix_once(&text, test_file);
        if done.is_empty() {
            break;
        }
        text = next;
        all.extend(done);
    }
    (text, all)
}

/// One pass of [`fix`].
fn fix_once(source: &str, test_file: bool) -> (String, Vec<Deprecation>) {
    let mut out = source.to_string();
    let mut done = Vec::new();
    // From the end, so each offset still holds when it is reached.
    for d in deprecations_in(source, test_file)
        .into_iter()
        .rev()
        .filter(|d| d.fixable)
    {
        let Some(mut at) = offset(source, d.line, d.column) else {
            continue;
        };
        if let Some(m) = &d.millis {
            let end = at + m.written.len();
            if source.get(at..end) == Some(m.written.as_str()) {
                out.replace_range(at..end, &format!("\"{}\"", m.duration));
                done.push(d);
            }
            continue;
        }
        // A key may be written quoted: `#{ "timeout_ms": 500 }`.
        if d.option_of.is_some() && source[at..].starts_with('"') {
            at += 1;
        }
        let end = at + d.rename.old.len();
        if source.get(at..end) != Some(d.rename.old) {
            continue;
        }
        out.replace_range(at..end, d.rename.new);
        done.push(d);
    }
    done.reverse();
    (out, done)
}

/// Rewrites the file at `path` with [`fix`] (only when something changes) and returns what
/// was replaced.
pub fn fix_file(path: &std::path::Path) -> std::io::Result<Vec<Deprecation>> {
    let source = std::fs::read_to_string(path)?;
    let (fixed, done) = fix_in(&source, crate::is_test_file(path));
    if !done.is_empty() {
        std::fs::write(path, fixed)?;
    }
    Ok(done)
}

#[cfg(test)]
mod tests;
