//! What a tool tells its callers beyond its arguments: a title, the schema its results must
//! match (`.output`), and behaviour hints (`.annotations`, MCP's tool annotations).

use crate::schema::validate::{compile_schema, violations};
use serde::Serialize;
use serde_json::Value;

/// What a tool declares beyond its arguments: `.title`, `.output`, `.annotations`, `.ui`.
#[derive(Default)]
pub struct ToolMeta {
    /// `.title("...")`: a human-readable name.
    pub title: Option<String>,
    /// `.output(...)`: the schema results must match.
    pub output: Option<OutputSchema>,
    /// `.annotations(#{...})`: hints set explicitly; the rest come from the capabilities.
    pub hints: Hints,
    /// `.task(...)`: a call may run as an MCP task (the tasks extension), polled by its client.
    pub task: Option<TaskMode>,
    /// More `_meta` an MCP client sees on the tool (MCP Apps' `ui`: its page and visibility).
    pub extra: serde_json::Map<String, Value>,
}

/// How a tool runs as an MCP task, for a client that declared the tasks extension (other
/// callers, and other doors, always get the result in the answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TaskMode {
    /// A client without the tasks extension is refused (`.task("required")`) instead of
    /// answered in the call.
    pub required: bool,
    /// The call is answered in the request until its handler calls `background()`, and becomes
    /// a task from there (`#{ start: "background" }`), so it can ask its questions first;
    /// otherwise the task starts with the call.
    pub at_background: bool,
}

/// A declared output schema and its compiled validator.
pub struct OutputSchema {
    /// JSON Schema 2020-12 of the result.
    pub schema: Value,
    validator: jsonschema::Validator,
}

impl OutputSchema {
    /// Compiles an output schema.
    pub fn compile(schema: Value) -> Result<OutputSchema, String> {
        let validator = compile_schema(&schema).map_err(|e| e.to_string())?;
        Ok(OutputSchema { schema, validator })
    }

    /// Every violation of `value`, as `/path: reason`.
    pub fn violations(&self, value: &Value) -> Vec<String> {
        violations(&self.validator, value)
    }
}

/// Behaviour hints (MCP tool annotations); `None` means "derive from the capabilities".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Hints {
    /// Changes nothing in its environment.
    pub read_only: Option<bool>,
    /// May destroy or overwrite (meaningful when not read-only).
    pub destructive: Option<bool>,
    /// Repeating a call with the same arguments has no further effect.
    pub idempotent: Option<bool>,
    /// Reaches outside entities (the network, other servers).
    pub open_world: Option<bool>,
}

/// The keys `.annotations(#{...})` accepts.
pub const HINT_KEYS: &[&str] = &["read_only", "destructive", "idempotent", "open_world"];

impl Hints {
    /// Sets hint `key` (`read_only`, `destructive`, `idempotent` or `open_world`); `Err` names
    /// the known keys.
    pub fn set(&mut self, key: &str, value: bool) -> Result<(), String> {
        let slot = match key {
            "read_only" => &mut self.read_only,
            "destructive" => &mut self.destructive,
            "idempotent" => &mut self.idempotent,
            "open_world" => &mut self.open_world,
            other => {
                return Err(format!(
                    "unknown annotation \"{other}\" (known: {})",
                    HINT_KEYS.join(", ")
                ));
            }
        };
        *slot = Some(value);
        Ok(())
    }
}

/// Hints with every value decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ResolvedHints {
    /// Changes nothing.
    pub read_only: bool,
    /// May destroy or overwrite.
    pub destructive: bool,
    /// Repeating a call changes nothing more.
    pub idempotent: bool,
    /// Reaches outside entities.
    pub open_world: bool,
}
