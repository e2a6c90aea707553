//! Loads one script file: compile, run its top level collecting DSL drafts, then check and
//! compile each tool and agent. Every problem becomes a `path:line:col: message` error and the
//! rest of the file still loads.

pub(crate) mod agent;
mod skills;
mod ui;

use super::dsl::{self, ToolDraft};
use super::handler::ScriptHandler;
use super::{ScriptUnit, sandbox};
use kiln_core::error::LoadError;
use kiln_core::schema;
use kiln_core::tool::parts::{Part, ToolParts};
use kiln_core::tool::{DEFAULT_TIMEOUT, Handler, Tool};
use rhai::{Engine, Position, Scope};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a file's top level may run.
const TOP_LEVEL_DEADLINE: Duration = Duration::from_secs(5);

pub use kiln_registry::LoadedFile;

pub use kiln_core::tool::valid_tool_name;

/// Compiles and loads one file's source.
pub fn load_source(engine: &Arc<Engine>, path: &str, source: &str) -> LoadedFile {
    load_source_with(engine, path, source, &BTreeMap::new())
}

/// [`load_source`] knowing the capability of each function the application added (`app`), so
/// undeclared calls to them are warned about too.
pub fn load_source_with(
    engine: &Arc<Engine>,
    path: &str,
    source: &str,
    app: &BTreeMap<String, String>,
) -> LoadedFile {
    let mut file = LoadedFile {
        path: path.to_string(),
        atomic: true,
        ..LoadedFile::default()
    };
    let at = |pos: Position| super::loc(path, pos);
    let mut ast = match engine.compile(source) {
        Ok(ast) => ast,
        Err(e) => {
            file.errors.push(LoadError::at(
                at(e.position()),
                parse_message(&e.to_string(), source, e.position()),
            ));
            fail_closed(&mut file, source);
            return file;
        }
    };
    ast.set_source(path);
    file.imports = super::imports::imported_files(&ast, std::path::Path::new(path));
    let deadline = Some(Instant::now() + TOP_LEVEL_DEADLINE);
    let whole = !file.imports.is_empty();
    let (failed, mut collected) =
        dsl::collect(|| sandbox::with_watch(deadline, None, || run_top_level(engine, &ast, whole)));
    for e in failed {
        file.errors.push(LoadError::at(
            at(e.position()),
            top_level_message(&e, engine),
        ));
    }
    let in_place = file.imports.is_empty() && super::scan::may_run_in_place(&ast, app);
    let unit = Arc::new(ScriptUnit {
        in_place,
        ast,
        engine: engine.clone(),
        path: path.to_string(),
        version: super::source_version(source),
    });
    for mut draft in std::mem::take(&mut collected.tools) {
        let handler_name = draft.handler.as_ref().map(|(f, _)| f.fn_name().to_string());
        let page = draft.ui.take();
        match finish_tool(draft, &unit) {
            Ok(mut tool) => {
                if let Some(page) = page {
                    ui::attach(page, &mut tool, &unit, &mut file);
                }
                let handler_name = handler_name.unwrap_or_default();
                file.warnings
                    .extend(undeclared_calls(&tool, &handler_name, &unit, app));
                file.tools.push(Arc::new(tool));
            }
            Err(errs) => file.errors.extend(errs),
        }
    }
    finish_declarations(&mut collected, &unit, &mut file);
    for mut draft in collected.agents {
        let pos = draft.tools_pos;
        let folders: Vec<_> = std::mem::take(&mut draft.skills)
            .into_iter()
            .map(|(folder, at)| (folder, super::loc(path, at)))
            .collect();
        let found = skills::load(path, &folders);
        file.imports.extend(found.watched);
        file.errors.extend(found.errors);
        match agent::finish_agent(draft, &unit) {
            Ok(mut agent) => {
                agent.skills = found.skills;
                file.agents.push((Arc::new(agent), super::loc(path, pos)));
            }
            Err(errs) => file.errors.extend(errs),
        }
    }
    fail_closed(&mut file, source);
    file
}

/// A broken file that declares policies contributes one that refuses every call (a policy
/// that cannot be read must not mean no policy).
fn fail_closed(file: &mut LoadedFile, source: &str) {
    if file.errors.is_empty() || !source.contains("policy(") {
        return;
    }
    file.policies = vec![Arc::new(crate::dsl::policy::FailClosed::new(
        &file.path,
        &file.errors[0],
    ))];
}

fn parse_message(message: &str, source: &str, pos: Position) -> String {
    let line = pos
        .line()
        .and_then(|l| source.lines().nth(l.saturating_sub(1)))
        .unwrap_or("");
    if message.contains("'call' is a reserved keyword") {
        format!("{message} (name the parameter something else, such as |c, ctx|)")
    } else if line.contains("default:") || message.contains("'default'") {
        format!(
            "{message} (`default` is a reserved word in Rhai: write the key quoted, #{{ \"default\": ... }})"
        )
    } else {
        message.to_string()
    }
}

/// Runs a file's top level one statement at a time, so one mistake does not hide the others
/// (a statement that fails leaves no half-built definition behind); every error, in order.
/// A file with imports runs whole: an import lasts only for the run that made it. A runaway
/// top level (a limit, the deadline) stops the rest.
fn run_top_level(engine: &Engine, ast: &rhai::AST, whole: bool) -> Vec<rhai::EvalAltResult> {
    if whole {
        return engine
            .run_ast_with_scope(&mut Scope::new(), ast)
            .err()
            .map(|e| *e)
            .into_iter()
            .collect();
    }
    let mut scope = Scope::new();
    let mut errors = Vec::new();
    for stmt in ast.statements() {
        let mut one = rhai::AST::new([stmt.clone()], ast.shared_lib().clone());
        if let Some(source) = ast.source() {
            one.set_source(source);
        }
        let mark = dsl::mark();
        if let Err(e) = engine.run_ast_with_scope(&mut scope, &one) {
            dsl::forget_since(&mark);
            let runaway = matches!(
                *e,
                rhai::EvalAltResult::ErrorTerminated(..)
                    | rhai::EvalAltResult::ErrorTooManyOperations(_)
                    | rhai::EvalAltResult::ErrorStackOverflow(_)
            );
            errors.push(*e);
            if runaway {
                break;
            }
        }
    }
    errors
}

fn top_level_message(e: &rhai::EvalAltResult, engine: &rhai::Engine) -> String {
    if let Some(told) = crate::reference::unknown_fn::explain(e, engine) {
        return told;
    }
    let text = e.to_string();
    // Rhai appends " (line L, position C)"; the location is already in the prefix.
    match text.rfind(" (line ") {
        Some(i) if text.ends_with(')') => text[..i].to_string(),
        _ => text,
    }
}

/// The declarations other than tools and agents (pipelines, MCP servers, policies,
/// evaluations, served resources and prompts), each checked into `file` or its errors.
fn finish_declarations(
    collected: &mut dsl::Collected,
    unit: &Arc<ScriptUnit>,
    file: &mut LoadedFile,
) {
    let path = unit.path.as_str();
    for draft in collected.take::<crate::dsl::pipeline::PipelineDraft>() {
        match crate::dsl::pipeline::finish(draft, unit) {
            Ok(p) => file.pipelines.push(p),
            Err(errs) => file.errors.extend(errs),
        }
    }
    for draft in collected.take::<crate::dsl::mcp::McpServerDraft>() {
        match crate::dsl::mcp::finish(draft, path) {
            Ok(server) if file.mcp_servers.iter().any(|s| s.name == server.name) => {
                let at = server.origin();
                file.errors.push(LoadError::at(
                    at,
                    format!(
                        "duplicate MCP server \"{}\": already declared in this file",
                        server.name
                    ),
                ));
            }
            Ok(server) => file.mcp_servers.push(server),
            Err(errs) => file.errors.extend(errs),
        }
    }
    for draft in collected.take::<crate::dsl::a2a::A2aAgentDraft>() {
        match crate::dsl::a2a::finish(draft, path) {
            Ok(remote) => file.a2a_agents.push(remote),
            Err(errs) => file.errors.extend(errs),
        }
    }
    for draft in collected.take::<crate::dsl::policy::PolicyDraft>() {
        match crate::dsl::policy::finish(draft, unit) {
            Ok(p) => file.policies.push(p),
            Err(errs) => file.errors.extend(errs),
        }
    }
    for draft in collected.take::<crate::dsl::eval::EvalDraft>() {
        match crate::dsl::eval::finish(draft, unit) {
            Ok(e) => file.evals.push(Arc::new(e)),
            Err(errs) => file.errors.extend(errs),
        }
    }
    for draft in collected.take::<crate::dsl::served::ServedDraft>() {
        match crate::dsl::served::finish(draft, path, |d| finish_tool(d, unit)) {
            Ok(item) => item.add_to(&mut file.served, &mut file.errors),
            Err(errs) => file.errors.extend(errs),
        }
    }
}

pub(crate) fn finish_tool(d: ToolDraft, unit: &Arc<ScriptUnit>) -> Result<Tool, Vec<LoadError>> {
    let at = |pos: Position| super::loc(&unit.path, pos);
    let mut errors: Vec<LoadError> = d
        .errors
        .iter()
        .map(|(p, m)| LoadError::at(at(*p), format!("tool \"{}\": {m}", d.name)))
        .collect();
    if let (Some((_, pos)), Some(_)) = (&d.input_schema, d.params_pos) {
        errors.push(LoadError::at(
            at(*pos),
            format!(
                "tool \"{}\": .input_schema(...) cannot be mixed with .param(...)",
                d.name
            ),
        ));
    }
    let handler = match &d.handler {
        None => {
            errors.push(LoadError::at(
                at(d.pos),
                format!("tool \"{}\" has no .handler(...)", d.name),
            ));
            None
        }
        Some((f, pos)) => {
            match super::handler_arity(&unit.ast, f) {
                Some(n @ (1 | 2)) => Some((f.clone(), n)),
                Some(n) => {
                    errors.push(LoadError::at(at(*pos), format!("tool \"{}\": handler takes {n} parameters; expected |args| or |args, ctx|", d.name)));
                    None
                }
                None => {
                    errors.push(LoadError::at(
                        at(*pos),
                        format!(
                            "tool \"{}\": handler function \"{}\" is not defined in this file",
                            d.name,
                            f.fn_name()
                        ),
                    ));
                    None
                }
            }
        }
    };
    let (schema, schema_pos) = match &d.input_schema {
        Some((s, pos)) => (s.clone(), *pos),
        None => (
            schema::object_schema(&d.params),
            d.params_pos.unwrap_or(d.pos),
        ),
    };
    let handler: Arc<dyn Handler> = match handler {
        Some((handler, arity)) => Arc::new(ScriptHandler {
            arity,
            handler,
            available_if: d.available_if.clone(),
            unit: unit.clone(),
            first: d.first,
        }),
        // Checked all the same, so every error of the file is reported at once.
        None => Arc::new(NoHandler),
    };
    let output_pos = d.output.as_ref().map_or(d.pos, |(_, pos)| *pos);
    let parts = ToolParts {
        name: d.name.clone(),
        description: d.description,
        requires: d.requires.iter().map(|(c, _)| c.clone()).collect(),
        schema,
        output_schema: d.output.map(|(schema, _)| schema),
        exclusive: d.exclusive,
        timeout: d.timeout_ms.map_or(DEFAULT_TIMEOUT, Duration::from_millis),
        retries: d.retries,
        rate_limit: d.rate_limit,
        loc: at(d.pos),
        title: d.title,
        hints: d.hints,
        task: d.task,
        handler,
    };
    match parts.build() {
        Ok(tool) if errors.is_empty() => Ok(tool),
        Ok(_) => Err(errors),
        Err(problems) => {
            let name = &d.name;
            errors.extend(problems.into_iter().map(|(part, m)| match part {
                Part::Name => LoadError::at(at(d.pos), m),
                Part::Requires(i) => LoadError::at(
                    at(d.requires.get(i).map_or(d.pos, |(_, pos)| *pos)),
                    format!("tool \"{name}\": {m}"),
                ),
                Part::Schema => LoadError::at(at(schema_pos), format!("tool \"{name}\": {m}")),
                Part::Output => LoadError::at(at(output_pos), format!("tool \"{name}\": {m}")),
            }));
            Err(errors)
        }
    }
}

/// Stands in for a handler that is missing or wrong, so the rest of a tool is still checked;
/// a tool with it never loads (its file has an error).
struct NoHandler;

impl Handler for NoHandler {
    fn call(
        &self,
        tool: &Tool,
        _args: &Value,
        _ctx: &kiln_core::context::CallContext,
        _deadline: Instant,
    ) -> Result<Value, kiln_core::tool::ToolFailure> {
        Err(kiln_core::tool::ToolFailure::visible(
            kiln_core::tool::FailureKind::Runtime,
            format!("tool \"{}\" has no handler", tool.name),
        ))
    }
}

/// Warnings for gated host functions a handler may call without declaring their capability.
fn undeclared_calls(
    tool: &Tool,
    handler: &str,
    unit: &ScriptUnit,
    app: &BTreeMap<String, String>,
) -> Vec<LoadError> {
    super::scan::gated_calls(&unit.ast, handler, app)
        .into_iter()
        .filter(|(_, cap)| !tool.requires.iter().any(|r| r.name == *cap))
        .map(|(func, cap)| {
            LoadError::at(
                tool.loc.clone(),
                format!("tool \"{}\" calls {func}(), which needs capability \"{cap}\", but does not declare it: add .requires(\"{cap}\")", tool.name),
            )
        })
        .collect()
}
