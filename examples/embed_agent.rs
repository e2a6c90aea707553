//! An application embedding kiln: load the demo scripts and run their agent offline.
//!
//! The demo agent's "model" is a Rhai planner (provider `script`), so this needs no network
//! and no API key: `cargo run --example embed_agent`.

use kiln::{Host, RunOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let host = Host::builder()
        .scripts(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/demo"))
        .build()?;
    for e in host.load_errors() {
        eprintln!("{e}");
    }
    let report = host
        .run(
            "demo",
            "What is 17% of 240, in upper case words?",
            RunOptions::default(),
        )
        .await?;
    println!("{}", report.answer);
    for call in &report.tool_calls {
        println!(
            "  {}({}) -> {}",
            call.name,
            call.args,
            call.outcome.result().unwrap_or(&serde_json::Value::Null)
        );
    }
    Ok(())
}
