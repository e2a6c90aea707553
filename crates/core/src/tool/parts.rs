//! The one way to build a [`Tool`] from its parts: native tools, script tools and pipelines
//! all fill [`ToolParts`] and call [`ToolParts::build`], so the name, the capabilities, the
//! input schema (an object schema that compiles) and the output schema are checked in one
//! place. Each caller says where a problem is in its own terms ([`Part`]).

use crate::capability::Capability;
use crate::error::SourceLoc;
use crate::ratelimit::RateLimit;
use crate::tool::{
    Handler, Hints, OutputSchema, TaskMode, Tool, ToolMeta, compile_schema, valid_tool_name,
};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Everything a tool is made of, before it is checked.
pub struct ToolParts {
    /// The name (`^[a-zA-Z0-9_-]{1,64}$`).
    pub name: String,
    /// Shown to the model.
    pub description: String,
    /// Capability strings (`NAME[:SCOPE]`), parsed here.
    pub requires: Vec<String>,
    /// The JSON Schema of the arguments: an object schema.
    pub schema: Value,
    /// The output schema (`.output`), if any.
    pub output_schema: Option<Value>,
    /// Runs alone.
    pub exclusive: bool,
    /// Per-attempt deadline.
    pub timeout: Duration,
    /// Re-runs after a retryable failure.
    pub retries: u32,
    /// Calls allowed per window.
    pub rate_limit: Option<RateLimit>,
    /// Where it was defined.
    pub loc: SourceLoc,
    /// `.title`.
    pub title: Option<String>,
    /// Behaviour hints (MCP annotations).
    pub hints: Hints,
    /// Runs as an MCP task where the client can poll one.
    pub task: Option<TaskMode>,
    /// What runs a call.
    pub handler: Arc<dyn Handler>,
}

/// Which part of a definition a problem is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The name.
    Name,
    /// The capability at this index of `requires`.
    Requires(usize),
    /// The input schema.
    Schema,
    /// The output schema.
    Output,
}

impl ToolParts {
    /// The checked tool, or every problem with the part it is in. Messages are the problem
    /// alone (`invalid JSON Schema: ...`), except the name's, which names the tool.
    pub fn build(self) -> Result<Tool, Vec<(Part, String)>> {
        let mut problems = Vec::new();
        if !valid_tool_name(&self.name) {
            problems.push((
                Part::Name,
                format!(
                    "invalid tool name \"{}\": names must match ^[a-zA-Z0-9_-]{{1,64}}$",
                    self.name
                ),
            ));
        }
        let mut requires = Vec::new();
        for (i, cap) in self.requires.iter().enumerate() {
            match Capability::parse(cap) {
                Ok(c) => requires.push(c),
                Err(e) => problems.push((Part::Requires(i), e.to_string())),
            }
        }
        if self.schema.get("type").and_then(Value::as_str) != Some("object") {
            problems.push((
                Part::Schema,
                "input_schema must be an object schema (type: \"object\")".into(),
            ));
        }
        let validator = compile_schema(&self.schema)
            .map_err(|e| problems.push((Part::Schema, format!("invalid JSON Schema: {e}"))))
            .ok();
        let output = self.output_schema.and_then(|out| {
            OutputSchema::compile(out)
                .map_err(|e| problems.push((Part::Output, format!("invalid output schema: {e}"))))
                .ok()
        });
        match validator {
            Some(validator) if problems.is_empty() => Ok(Tool {
                name: self.name,
                description: self.description,
                schema: Arc::new(self.schema),
                requires,
                exclusive: self.exclusive,
                timeout: self.timeout,
                retries: self.retries,
                rate_limit: self.rate_limit,
                loc: self.loc,
                meta: ToolMeta {
                    title: self.title,
                    output,
                    hints: self.hints,
                    task: self.task,
                    extra: Default::default(),
                },
                validator,
                handler: self.handler,
                last_call_us: std::sync::atomic::AtomicU64::new(u64::MAX),
            }),
            _ => Err(problems),
        }
    }
}
