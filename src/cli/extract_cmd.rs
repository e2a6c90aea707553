//! `kiln extract`: run the tool calls written in a model's free text (read from stdin).

use super::output::{self, outln};
use super::{CliResult, Global, parse_caps};
use clap::Args;
use kiln::model::extract;
use std::process::ExitCode;

/// `kiln extract` options.
#[derive(Args, Debug)]
pub struct ExtractArgs {
    /// Capabilities granted to the calls (comma-separated, repeatable).
    #[arg(long, value_name = "CAPS")]
    pub caps: Vec<String>,
    /// Print the calls and outcomes as JSON instead of the feedback block.
    #[arg(long)]
    pub json: bool,
}

/// Runs `kiln extract`: prints `Tool Results:` lines; exit 1 if no call was found or one failed.
pub fn extract(g: &Global, a: ExtractArgs) -> CliResult<ExitCode> {
    let text = std::io::read_to_string(std::io::stdin())?;
    let (host, _db) = g.host_with_db()?;
    let ctx = host.context(g.mark_ask(parse_caps(&a.caps)?));
    let registry = host.registry();
    let runtime = super::one_thread_runtime()?;
    let results = runtime.block_on(extract::execute_from_text(&registry, &text, &ctx));
    if a.json {
        outln!("{}", output::json(&serde_json::to_value(&results)?))?;
    } else if results.is_empty() {
        crate::cli::output::errln!("no tool calls found");
    } else {
        outln!("{}", extract::format_results(&results))?;
    }
    Ok(if !results.is_empty() && results.iter().all(|r| r.ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
