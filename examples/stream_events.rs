//! Streaming a run's events (text, model requests, tool calls, the final report), as an SSE
//! endpoint would forward them: `cargo run --example stream_events`.

use futures_util::StreamExt;
use kiln::{Event, Host, RunOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let host = Host::builder()
        .scripts(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/demo"))
        .build()?;
    let mut events = host.run_stream(
        "demo",
        "What is 12.5% of 80, in upper case words?",
        RunOptions::default(),
    );
    while let Some(event) = events.next().await {
        match event {
            Event::ModelRequest { round } => println!("[model request {round}]"),
            Event::ModelReply { round } => println!("[model reply {round}]"),
            Event::Text(text) => println!("text: {}", text.trim_end()),
            Event::ToolStarted { name, args, .. } => println!("tool {name}({args}) ..."),
            Event::ToolFinished(call) => println!("tool {} -> {}", call.name, call.outcome),
            Event::Finished(result) => match *result {
                Ok(report) => println!("answer: {}", report.answer),
                Err(e) => println!("failed: {e}"),
            },
            _ => {}
        }
    }
    Ok(())
}
