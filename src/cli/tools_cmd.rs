//! `kiln check`, `tools`, `schema`, `call`, `agents`.

use super::output::{self, outln};
use super::{CliResult, Global, parse_caps};
use clap::Args;
use kiln::HostError;
use kiln::model::Format;
use kiln::tool::Registry;
use serde_json::{Value, json};
use std::io::Read;
use std::process::ExitCode;

/// `kiln tools` options.
#[derive(Args, Debug)]
pub struct ToolsArgs {
    /// Print definitions in this format (intermediate, anthropic, openai, openai-strict, ollama).
    #[arg(long, short = 'f', value_name = "FORMAT")]
    pub format: Option<String>,
    /// Only tools these capabilities cover (comma-separated, repeatable).
    #[arg(long, value_name = "CAPS")]
    pub caps: Vec<String>,
    /// Print JSON (intermediate format unless --format is given).
    #[arg(long)]
    pub json: bool,
}

/// `kiln check` options.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Rewrite deprecated spellings in the scripts folders to their new names, in place.
    #[arg(long)]
    pub fix: bool,
}

/// `kiln schema` options.
#[derive(Args, Debug)]
pub struct SchemaArgs {
    /// The tool.
    pub tool: String,
    /// Output format.
    #[arg(
        long,
        short = 'f',
        value_name = "FORMAT",
        default_value = "intermediate"
    )]
    pub format: String,
}

/// `kiln call` options.
#[derive(Args, Debug)]
pub struct CallArgs {
    /// The tool to call.
    pub tool: String,
    /// Arguments as a JSON object; `-` reads them from stdin. Default: {}
    pub args: Option<String>,
    /// Grants (instead of the agent's own, for `ask`), context and actor.
    #[command(flatten)]
    pub run: super::ContextArgs,
}

fn format(name: &str) -> Result<Format, HostError> {
    Format::parse(name).ok_or_else(|| HostError::UnknownFormat(name.into()))
}

pub(super) fn report_load_problems(reg: &Registry) {
    for e in &reg.errors {
        output::error(&e.to_string());
    }
    for w in &reg.warnings {
        output::warning(&w.to_string());
    }
}

/// `kiln check`.
pub fn check(g: &Global, a: CheckArgs) -> CliResult<ExitCode> {
    let scripts = (g.config().scripts.iter())
        .map(|dir| kiln::renames::script_files(dir))
        .collect::<Result<Vec<_>, _>>()?;
    let mut scripts: Vec<std::path::PathBuf> = scripts.into_iter().flatten().collect();
    // Test files too: their renames (`call_tool` -> `try_call_tool`) are warned and fixed here.
    for dir in &g.config().scripts {
        scripts.extend(kiln::renames::test_files(dir)?);
    }
    if a.fix {
        for path in &scripts {
            let shown = path.to_string_lossy();
            let done =
                kiln::renames::fix_file(path).map_err(|e| format!("cannot fix {shown}: {e}"))?;
            for d in done {
                let (old, new) = match &d.millis {
                    Some(m) => (m.written.clone(), format!("\"{}\"", m.duration)),
                    None => (d.rename.old.to_string(), d.rename.new.to_string()),
                };
                outln!("fixed {shown}:{}:{}: {old} -> {new}", d.line, d.column)?;
            }
        }
    }
    let host = g.reading_host("kiln check")?;
    let reg = host.registry();
    for e in &reg.errors {
        output::error(&e.to_string());
    }
    for w in reg.advice() {
        output::warning(&w.to_string());
    }
    for path in &scripts {
        let source = std::fs::read_to_string(path).unwrap_or_default();
        for w in kiln::renames::warnings(&path.to_string_lossy(), &source) {
            output::warning(&w.to_string());
        }
    }
    let tools = reg.all().count();
    let agents = reg.agents().count();
    let pipelines = match reg.pipelines().map(|p| p.name.as_str()).collect::<Vec<_>>() {
        names if names.is_empty() => String::new(),
        names => format!(", {} pipelines ({})", names.len(), names.join(", ")),
    };
    let pipelines = match reg.served().summary() {
        Some(served) => format!("{pipelines}, {served}"),
        None => pipelines,
    };
    print_mcp_servers(&host)?;
    if reg.errors.is_empty() {
        outln!("ok: {tools} tools, {agents} agents{pipelines}")?;
        Ok(ExitCode::SUCCESS)
    } else {
        outln!(
            "{} error(s); {tools} tools, {agents} agents{pipelines} loaded",
            reg.errors.len()
        )?;
        Ok(ExitCode::from(1))
    }
}

/// `kiln tools`.
pub fn tools(g: &Global, a: ToolsArgs) -> CliResult<ExitCode> {
    let host = g.reading_host("kiln tools")?;
    let reg = host.registry();
    report_load_problems(&reg);
    let list = if a.caps.is_empty() {
        reg.all().cloned().collect()
    } else {
        reg.tools_for(&parse_caps(&a.caps)?)
    };
    if a.json || a.format.is_some() {
        let fmt = format(a.format.as_deref().unwrap_or("intermediate"))?;
        let (defs, warnings) = Registry::schemas(&list, fmt);
        warnings.iter().for_each(|w| output::warning(w));
        outln!("{}", output::json(&Value::Array(defs)))?;
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<[String; 4]> = list
        .iter()
        .map(|t| {
            let params = t.schema["properties"]
                .as_object()
                .map(|p| p.keys().cloned().collect::<Vec<_>>().join(", "))
                .unwrap_or_default();
            let req = t
                .requires
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            let description = match (reg.pipeline(&t.name).is_some(), mcp_server_of(t)) {
                (true, _) => format!("(pipeline) {}", t.description),
                (false, Some(server)) => format!("(MCP server {server}) {}", t.description),
                _ => t.description.clone(),
            };
            [
                t.name.clone(),
                params,
                req,
                output::truncate(&description, 60),
            ]
        })
        .collect();
    print_table(&["TOOL", "PARAMS", "REQUIRES", "DESCRIPTION"], &rows)?;
    print_mcp_servers(&host)?;
    Ok(ExitCode::SUCCESS)
}

/// The MCP server a mounted tool forwards to: its `SERVER__` prefix, when it requires
/// `mcp:SERVER`.
fn mcp_server_of(t: &kiln::tool::Tool) -> Option<&str> {
    let (server, _) = t.name.split_once(kiln::mcp::SEPARATOR)?;
    t.requires
        .iter()
        .any(|c| kiln::tool::HostCap::Mcp.is(&c.name) && c.scope.as_deref() == Some(server))
        .then_some(server)
}

/// One line per MCP server: name, how it is reached, where it is declared, its state.
pub(super) fn print_mcp_servers(host: &kiln::Host) -> CliResult<()> {
    let servers = host.mcp_servers();
    if servers.is_empty() {
        return Ok(());
    }
    outln!()?;
    let rows: Vec<[String; 4]> = servers
        .into_iter()
        .map(|s| [s.name, s.target, s.origin, s.state.to_string()])
        .collect();
    print_table(&["MCP SERVER", "TARGET", "DECLARED", "STATE"], &rows)
}

fn print_table<const N: usize>(header: &[&str; N], rows: &[[String; N]]) -> CliResult<()> {
    let mut widths = header.map(|h| h.chars().count());
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count()).min(40);
        }
    }
    let line = |cells: Vec<String>| {
        let padded: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i + 1 == N {
                    c.clone()
                } else {
                    format!("{:w$}", output::truncate(c, 40), w = widths[i])
                }
            })
            .collect();
        outln!("{}", padded.join("  ").trim_end())
    };
    line(header.iter().map(|h| h.to_string()).collect())?;
    for r in rows {
        line(r.to_vec())?;
    }
    Ok(())
}

/// `kiln schema`.
pub fn schema(g: &Global, a: SchemaArgs) -> CliResult<ExitCode> {
    let host = g.reading_host("kiln schema")?;
    let tool = host.tool(&a.tool)?;
    let (defs, warnings) = Registry::schemas(&[tool], format(&a.format)?);
    warnings.iter().for_each(|w| output::warning(w));
    outln!("{}", output::json(&defs[0]))?;
    Ok(ExitCode::SUCCESS)
}

/// Parses `KEY=VALUE` pairs; a VALUE that is valid JSON is taken as JSON.
pub fn parse_context(pairs: &[String]) -> CliResult<serde_json::Map<String, Value>> {
    let mut m = serde_json::Map::new();
    for p in pairs {
        let (k, v) = p
            .split_once('=')
            .ok_or_else(|| format!("--context {p:?}: expected KEY=VALUE"))?;
        let value = serde_json::from_str(v).unwrap_or_else(|_| json!(v));
        m.insert(k.to_string(), value);
    }
    Ok(m)
}

/// Reads the JSON arguments of `kiln call`.
pub fn parse_args_json(text: Option<&str>) -> CliResult<Value> {
    let text = match text {
        None => return Ok(json!({})),
        Some("-") => {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s)?;
            s
        }
        Some(t) => t.to_string(),
    };
    serde_json::from_str(&text).map_err(|e| format!("arguments are not valid JSON: {e}").into())
}

/// `kiln call`.
pub fn call(g: &Global, a: CallArgs) -> CliResult<ExitCode> {
    let args = parse_args_json(a.args.as_deref())?;
    let (host, _db) = g.host_with_db()?;
    report_load_problems(&host.registry());
    let bars = super::output::tool_bars::ToolBars::on_terminal();
    let observer = bars.clone().map(|bars| {
        let tool = a.tool.clone();
        std::sync::Arc::new(super::output::tool_bars::OneCall { bars, tool })
            as std::sync::Arc<dyn kiln::CallObserver>
    });
    let opts = kiln::CallOptions {
        grants: Some(g.mark_ask(parse_caps(&a.run.caps)?)),
        context: parse_context(&a.run.context)?,
        actor_id: a.run.actor,
        observer,
        ..kiln::CallOptions::default()
    };
    let runtime = super::one_thread_runtime()?;
    // Through the host, as every door calls: validated, guarded and logged.
    let outcome = runtime.block_on(host.call(&a.tool, args, opts))?;
    if let Some(bars) = bars {
        bars.finish("call");
    }
    outln!("{}", output::json(&outcome.to_json(true)))?;
    Ok(if outcome.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `kiln agents`.
pub fn agents(g: &Global) -> CliResult<ExitCode> {
    let host = g.reading_host("kiln agents")?;
    let reg = host.registry();
    report_load_problems(&reg);
    let rows: Vec<[String; 4]> = reg
        .agents()
        .map(|a| {
            [
                a.name.clone(),
                a.provider.to_string(),
                a.tools.join(", "),
                output::truncate(&a.description, 50),
            ]
        })
        .collect();
    print_table(&["AGENT", "PROVIDER", "TOOLS", "DESCRIPTION"], &rows)?;
    Ok(ExitCode::SUCCESS)
}
