//! `kiln run PIPELINE --input k=v ...`: runs a pipeline, shows each node on stderr and the
//! outputs on stdout (the whole report, values and timings, with `--json`).

use super::output;
use super::tools_cmd::{parse_context, report_load_problems};
use super::{CliResult, ContextArgs, Global, parse_caps};
use clap::Args;
use kiln::CallOptions;
use kiln::pipeline::{NodeStatus, PipelineReport, PipelineSpec};
use serde_json::{Map, Value, json};
use std::process::ExitCode;

/// Arguments of `kiln run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The pipeline to run.
    pub pipeline: String,
    /// An input value (KEY=VALUE, repeatable); VALUE is JSON unless the input is a string.
    #[arg(long = "input", short = 'i', value_name = "KEY=VALUE")]
    pub inputs: Vec<String>,
    /// Print the whole run as JSON: every node's arguments, value or error, and timings.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub run: ContextArgs,
}

/// Parses `--input` pairs, typed by the pipeline's inputs: a string input takes VALUE as is,
/// any other reads it as JSON (falling back to the text, which validation then reports).
fn parse_inputs(spec: &PipelineSpec, pairs: &[String]) -> CliResult<Value> {
    let mut map = Map::new();
    for pair in pairs {
        let (key, text) = pair
            .split_once('=')
            .ok_or_else(|| format!("--input {pair:?}: expected KEY=VALUE"))?;
        let Some(input) = spec.inputs.iter().find(|p| p.name == key) else {
            let known: Vec<&str> = spec.inputs.iter().map(|p| p.name.as_str()).collect();
            return Err(format!(
                "--input {key}: pipeline \"{}\" has no input \"{key}\" (inputs: {})",
                spec.name,
                known.join(", ")
            )
            .into());
        };
        let value = if input.schema["type"] == "string" {
            json!(text)
        } else {
            serde_json::from_str(text).unwrap_or_else(|_| json!(text))
        };
        map.insert(key.to_string(), value);
    }
    Ok(Value::Object(map))
}

/// `kiln run`.
pub fn run(g: &Global, a: RunArgs) -> CliResult<ExitCode> {
    let (host, _db) = g.host_with_db()?;
    report_load_problems(&host.registry());
    let Some(spec) = host.pipelines().into_iter().find(|p| p.name == a.pipeline) else {
        // Let the library word the unknown-pipeline error.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(host.run_pipeline(&a.pipeline, json!({}), CallOptions::default()))?;
        return Ok(ExitCode::from(1));
    };
    let inputs = parse_inputs(&spec, &a.inputs)?;
    let opts = CallOptions {
        grants: Some(g.mark_ask(parse_caps(&a.run.caps)?)),
        context: parse_context(&a.run.context)?,
        actor_id: a.run.actor,
        ..CallOptions::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let report = runtime.block_on(host.run_pipeline(&a.pipeline, inputs, opts))?;
    if a.json {
        println!("{}", output::json(&serde_json::to_value(&report)?));
    } else {
        show(&report);
    }
    Ok(if report.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// One line per node on stderr, then the outputs on stdout.
fn show(report: &PipelineReport) {
    if let Some(f) = &report.refused {
        output::error(&format!(
            "pipeline \"{}\" refused: {}",
            report.pipeline, f.message
        ));
        return;
    }
    for n in &report.nodes {
        let why = n.error.as_ref().map(|e| match &e.detail {
            Some(d) => format!("{} ({d})", e.message),
            None => e.message.clone(),
        });
        let line = match (n.status, why) {
            (NodeStatus::Ok, _) => format!("✓ {} = {} {:.1} ms", n.name, n.call, n.duration_ms),
            (NodeStatus::Failed, w) => format!(
                "✗ {} = {} failed: {}",
                n.name,
                n.call,
                w.unwrap_or_default()
            ),
            (NodeStatus::Skipped, w) => {
                format!("- {} = {} {}", n.name, n.call, w.unwrap_or_default())
            }
        };
        eprintln!("  {line}");
    }
    for (name, value) in &report.outputs {
        match value {
            Value::String(s) if report.outputs.len() == 1 => println!("{s}"),
            v if report.outputs.len() == 1 => println!("{}", output::json(v)),
            v => println!("{name}: {}", v),
        }
    }
    for f in report.failures() {
        output::error(&f);
    }
}
