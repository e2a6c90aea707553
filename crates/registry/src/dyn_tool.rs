//! Tools an application writes as Rust types rather than closures: [`DynTool`] (in the
//! manner of rig's `ToolDyn`: name, description, parameters as a JSON Schema, an async call)
//! and [`NativeTool::typed`] (arguments deserialized into the handler's own type). Both become
//! a [`NativeTool`], so they take the same schema check, validation, guard, deadline and log.

use crate::native::{HandlerFuture, NativeTool};
use kiln_core::context::CallContext;
use kiln_core::failure::{FailureKind, ToolFailure};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;

/// A tool implemented as a type; give it to the host with `NativeTool::from_dyn`.
pub trait DynTool: Send + Sync + 'static {
    /// The tool's name (`^[a-zA-Z0-9_-]{1,64}$`).
    fn name(&self) -> String;
    /// What the model is told it does.
    fn description(&self) -> String;
    /// The JSON Schema of its arguments: an object schema.
    fn parameters(&self) -> Value;
    /// The capabilities it needs from its caller (`NAME[:SCOPE]`).
    fn requires(&self) -> Vec<String> {
        Vec::new()
    }
    /// Runs one call with arguments already validated against [`DynTool::parameters`].
    fn call(&self, args: Value, ctx: &CallContext) -> HandlerFuture;
}

impl NativeTool {
    /// The native tool a [`DynTool`] is.
    #[track_caller]
    pub fn from_dyn(tool: Arc<dyn DynTool>) -> NativeTool {
        let (name, description, parameters) = (tool.name(), tool.description(), tool.parameters());
        let requires = tool.requires();
        let mut native = NativeTool::new(name, move |args: Value, ctx: &CallContext| {
            tool.call(args, ctx)
        })
        .description(description)
        .input_schema(parameters);
        for cap in requires {
            native = native.requires(&cap);
        }
        native
    }

    /// A tool whose handler takes its arguments as its own type `A` (any `Deserialize`),
    /// deserialized after they were validated against the schema the builder declares
    /// (`.param(...)` or `.input_schema(...)`). Arguments the schema admits but `A` cannot
    /// hold end as invalid arguments, told to the model.
    #[track_caller]
    pub fn typed<A, F, Fut>(name: impl Into<String>, handler: F) -> NativeTool
    where
        A: DeserializeOwned + Send + 'static,
        F: Fn(A, &CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolFailure>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        NativeTool::new(name, move |args: Value, ctx: &CallContext| {
            let typed = serde_json::from_value::<A>(args);
            let run = typed.map(|a| handler(a, ctx));
            async move {
                match run {
                    Ok(future) => future.await,
                    Err(e) => Err(ToolFailure::visible(
                        FailureKind::InvalidArguments,
                        format!("invalid arguments: {e}"),
                    )),
                }
            }
        })
    }
}
