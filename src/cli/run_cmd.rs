//! `kiln run PIPELINE --input k=v ...`: runs a pipeline, shows each node on stderr and the
//! outputs on stdout (the whole report, values and timings, with `--json`).

use super::output;
use super::tools_cmd::{parse_context, report_load_problems};
use super::{CliResult, ContextArgs, Global, parse_caps};
use clap::Args;
use kiln::CallOptions;
use kiln::pipeline::PipelineReport;
use std::io::Write;
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

/// `kiln run`.
pub fn run(g: &Global, a: RunArgs) -> CliResult<ExitCode> {
    let (host, _db) = g.host_with_db()?;
    report_load_problems(&host.registry());
    let spec = host.pipeline(&a.pipeline)?.spec;
    let inputs = spec
        .inputs_from_pairs(&a.inputs)
        .map_err(|e| format!("--input: {e}"))?;
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
        output::outln!("{}", output::json(&serde_json::to_value(&report)?))?;
    } else {
        show(&report)?;
    }
    Ok(if report.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// One line per node on stderr, then the outputs on stdout and the failures.
fn show(report: &PipelineReport) -> CliResult<()> {
    for line in report.node_lines() {
        let _ = writeln!(std::io::stderr(), "  {line}");
    }
    if !report.outputs.is_empty() {
        output::outln!("{}", report.outputs_text())?;
    }
    for f in report.failures() {
        output::error(&f);
    }
    Ok(())
}
