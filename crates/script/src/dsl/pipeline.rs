//! `pipeline(name)` and its builder methods, the closures of `.compute(...)` as
//! [`NodeMapper`]s, and turning a file's pipeline drafts into checked [`Pipeline`]s.

use crate::convert::timeout_ms;
use crate::dsl::{collect_draft, lock, push_param, strings, to_json};
use crate::{ScriptUnit, sandbox};
use kiln_core::capability::Capability;
use kiln_core::error::LoadError;
use kiln_core::schema::Param;
use kiln_core::tool::{FailureKind, ToolFailure};
use kiln_pipeline::spec::{DEFAULT_MAX_PARALLEL, DEFAULT_PIPELINE_TIMEOUT};
use kiln_pipeline::{Node, NodeMapper, Output, Pipeline, PipelineSpec, check};
use rhai::{Array, Dynamic, Engine, EvalAltResult, FnPtr, INT, Map, NativeCallContext, Position};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One `.compute(...)` as written.
#[derive(Debug)]
pub struct NodeDraft {
    name: String,
    deps: Vec<String>,
    target: String,
    mapper: Option<FnPtr>,
    pos: Position,
}

/// What a script said about one pipeline.
#[derive(Debug, Default)]
pub struct PipelineDraft {
    name: String,
    pos: Position,
    description: String,
    inputs: Vec<Param>,
    nodes: Vec<NodeDraft>,
    outputs: Vec<(String, Position)>,
    requires: Vec<(String, Position)>,
    timeout_ms: Option<u64>,
    max_parallel: Option<usize>,
    errors: Vec<(Position, String)>,
}

/// Handle to a pipeline draft, returned by every pipeline builder method.
#[derive(Clone)]
pub struct PipelineBuilder(Arc<Mutex<PipelineDraft>>);

impl PipelineBuilder {
    fn with(&mut self, f: impl FnOnce(&mut PipelineDraft)) -> PipelineBuilder {
        f(&mut lock(&self.0));
        self.clone()
    }

    fn input(&mut self, pos: Position, name: &str, ty: &str, opts: Result<Value, String>) -> Self {
        self.with(|d| push_param(&mut d.inputs, &mut d.errors, pos, name, ty, opts))
    }

    fn compute(
        &mut self,
        pos: Position,
        name: &str,
        deps: Array,
        target: &str,
        mapper: Option<FnPtr>,
    ) -> Self {
        self.with(|d| match strings(&deps) {
            Ok(deps) => d.nodes.push(NodeDraft {
                name: name.to_string(),
                deps,
                target: target.to_string(),
                mapper,
                pos,
            }),
            Err(e) => d.errors.push((pos, format!("compute \"{name}\": {e}"))),
        })
    }
}

fn new_pipeline(ctx: NativeCallContext, name: &str) -> Result<PipelineBuilder, Box<EvalAltResult>> {
    let draft = Arc::new(Mutex::new(PipelineDraft {
        name: name.to_string(),
        pos: ctx.call_position(),
        ..PipelineDraft::default()
    }));
    collect_draft(&draft, "pipeline", ctx.call_position())?;
    Ok(PipelineBuilder(draft))
}

fn with_desc(desc: &str, opts: Map) -> Result<Value, String> {
    let mut v = to_json(&Dynamic::from_map(opts))?;
    if let Some(m) = v.as_object_mut() {
        m.entry("desc")
            .or_insert_with(|| Value::String(desc.to_string()));
    }
    Ok(v)
}

/// Registers `pipeline(...)` and its builder methods.
pub(crate) fn register(engine: &mut Engine) {
    type B = PipelineBuilder;
    engine.register_type_with_name::<PipelineBuilder>("PipelineBuilder");
    engine.register_fn("pipeline", new_pipeline);
    engine.register_fn("description", |b: &mut B, text: &str| {
        b.with(|d| d.description = text.to_string())
    });
    engine.register_fn(
        "input",
        |c: NativeCallContext, b: &mut B, n: &str, t: &str| {
            b.input(c.call_position(), n, t, Ok(Value::Null))
        },
    );
    engine.register_fn(
        "input",
        |c: NativeCallContext, b: &mut B, n: &str, t: &str, desc: &str| {
            b.input(
                c.call_position(),
                n,
                t,
                Ok(serde_json::json!({ "desc": desc })),
            )
        },
    );
    engine.register_fn(
        "input",
        |c: NativeCallContext, b: &mut B, n: &str, t: &str, opts: Map| {
            b.input(c.call_position(), n, t, to_json(&Dynamic::from_map(opts)))
        },
    );
    engine.register_fn(
        "input",
        |c: NativeCallContext, b: &mut B, n: &str, t: &str, desc: &str, opts: Map| {
            b.input(c.call_position(), n, t, with_desc(desc, opts))
        },
    );
    engine.register_fn(
        "compute",
        |c: NativeCallContext, b: &mut B, n: &str, deps: Array, target: &str| {
            b.compute(c.call_position(), n, deps, target, None)
        },
    );
    engine.register_fn(
        "compute",
        |c: NativeCallContext, b: &mut B, n: &str, deps: Array, target: &str, f: FnPtr| {
            b.compute(c.call_position(), n, deps, target, Some(f))
        },
    );
    // `output` is the deprecated spelling (renames.rs): on a tool or agent it is a schema.
    for name in ["result", "output"] {
        engine.register_fn(name, |c: NativeCallContext, b: &mut B, n: &str| {
            let pos = c.call_position();
            b.with(|d| d.outputs.push((n.to_string(), pos)))
        });
    }
    engine.register_fn("requires", |c: NativeCallContext, b: &mut B, cap: &str| {
        let pos = c.call_position();
        b.with(|d| d.requires.push((cap.to_string(), pos)))
    });
    engine.register_fn(
        "requires",
        |c: NativeCallContext, b: &mut B, caps: Array| {
            let pos = c.call_position();
            b.with(|d| match strings(&caps) {
                Ok(list) => d.requires.extend(list.into_iter().map(|c| (c, pos))),
                Err(e) => d.errors.push((pos, format!("requires: {e}"))),
            })
        },
    );
    engine.register_fn("timeout", |c: NativeCallContext, b: &mut B, ms: INT| {
        let pos = c.call_position();
        b.with(|d| match timeout_ms(&Dynamic::from_int(ms)) {
            Ok(ms) => d.timeout_ms = Some(ms),
            Err(e) => d.errors.push((pos, e)),
        })
    });
    engine.register_fn("timeout", |c: NativeCallContext, b: &mut B, text: &str| {
        let pos = c.call_position();
        b.with(|d| match timeout_ms(&Dynamic::from(text.to_string())) {
            Ok(ms) => d.timeout_ms = Some(ms),
            Err(e) => d.errors.push((pos, e)),
        })
    });
    engine.register_fn("max_parallel", |c: NativeCallContext, b: &mut B, n: INT| {
        let pos = c.call_position();
        b.with(|d| match usize::try_from(n) {
            Ok(n) if n > 0 => d.max_parallel = Some(n),
            _ => d
                .errors
                .push((pos, format!("max_parallel must be positive, not {n}"))),
        })
    });
}

/// A `.compute` closure: `|values| ...` over the values the node names.
struct ScriptMapper {
    f: FnPtr,
    unit: Arc<ScriptUnit>,
}

impl NodeMapper for ScriptMapper {
    fn map(&self, values: &Value, deadline: Instant) -> Result<Value, ToolFailure> {
        let arg = rhai::serde::to_dynamic(values)
            .map_err(|e| ToolFailure::sanitized(FailureKind::Runtime, format!("values: {e}")))?;
        let unit = &self.unit;
        let out = sandbox::with_watch(Some(deadline), None, || {
            self.f.call::<Dynamic>(&unit.engine, &unit.ast, (arg,))
        });
        match out {
            Ok(v) => crate::convert::to_json(&v).map_err(|e| {
                ToolFailure::sanitized(
                    FailureKind::Runtime,
                    format!("closure result is not JSON: {e}"),
                )
            }),
            Err(e) => Err(crate::failure::classify(&e, &unit.path)),
        }
    }
}

/// Checks a draft and builds its pipeline, or every problem found, located.
pub(crate) fn finish(d: PipelineDraft, unit: &Arc<ScriptUnit>) -> Result<Pipeline, Vec<LoadError>> {
    let at = |pos: Position| crate::loc(&unit.path, pos);
    let named = |m: String| format!("pipeline \"{}\": {m}", d.name);
    let mut errors: Vec<LoadError> = d
        .errors
        .iter()
        .map(|(p, m)| LoadError::at(at(*p), named(m.clone())))
        .collect();
    if !kiln_core::tool::valid_tool_name(&d.name) {
        errors.push(LoadError::at(
            at(d.pos),
            format!(
                "invalid pipeline name \"{}\": names must match ^[a-zA-Z0-9_-]{{1,64}}$",
                d.name
            ),
        ));
    }
    let mut requires = Vec::new();
    for (cap, pos) in &d.requires {
        match Capability::parse(cap) {
            Ok(c) => requires.push(c),
            Err(e) => errors.push(LoadError::at(at(*pos), named(e.to_string()))),
        }
    }
    let mut nodes = Vec::new();
    for n in d.nodes {
        // A node with a bad target or closure still defines its value, so the graph checks
        // do not report it missing as well.
        let target = match kiln_pipeline::Target::parse(&n.target) {
            Ok(t) => t,
            Err(e) => {
                errors.push(LoadError::at(
                    at(n.pos),
                    named(format!("compute \"{}\": {e}", n.name)),
                ));
                kiln_pipeline::Target::Tool(n.target.clone())
            }
        };
        let mapper = match n.mapper {
            None => None,
            Some(f) => match crate::handler_arity(&unit.ast, &f) {
                Some(1) => Some(Arc::new(ScriptMapper {
                    f,
                    unit: unit.clone(),
                }) as Arc<dyn NodeMapper>),
                other => {
                    let why = match other {
                        Some(k) => format!("takes {k} parameters; expected |values|"),
                        None => format!("function \"{}\" is not defined in this file", f.fn_name()),
                    };
                    errors.push(LoadError::at(
                        at(n.pos),
                        named(format!("compute \"{}\": the closure {why}", n.name)),
                    ));
                    None
                }
            },
        };
        nodes.push(Node {
            name: n.name,
            deps: n.deps,
            target,
            mapper,
            loc: at(n.pos),
        });
    }
    let spec = PipelineSpec {
        name: d.name,
        description: d.description,
        inputs: d.inputs,
        nodes,
        outputs: d
            .outputs
            .into_iter()
            .map(|(name, pos)| Output { name, loc: at(pos) })
            .collect(),
        requires,
        timeout: d
            .timeout_ms
            .map_or(DEFAULT_PIPELINE_TIMEOUT, Duration::from_millis),
        max_parallel: d.max_parallel.unwrap_or(DEFAULT_MAX_PARALLEL),
        loc: at(d.pos),
    };
    errors.extend(check::local(&spec));
    if !errors.is_empty() {
        return Err(errors);
    }
    let pos = spec.loc.clone();
    Pipeline::new(spec).map_err(|e| vec![LoadError::at(pos, e)])
}
