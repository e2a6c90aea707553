//! Load-time checks of a pipeline, each located at the call that caused it: within one
//! definition (names, dependencies, cycles, outputs) and against the loaded registry (what the
//! nodes call, the capabilities they need, composition cycles).

use crate::spec::{PipelineSpec, Target};
use kiln_core::error::{LoadError, LoadErrorKind};
use kiln_core::tool::Tool;
use std::collections::HashMap;
use std::sync::Arc;

/// What the cross checks look names up in (the registry being built).
pub trait Lookup {
    /// A tool by name (pipelines' own tools included).
    fn tool(&self, name: &str) -> Option<Arc<Tool>>;
    /// Whether an agent exists.
    fn has_agent(&self, name: &str) -> bool;
    /// A pipeline by name.
    fn pipeline(&self, name: &str) -> Option<Arc<PipelineSpec>>;
}

/// Problems within one definition.
pub fn local(p: &PipelineSpec) -> Vec<LoadError> {
    let mut errors = Vec::new();
    let err = |loc: &kiln_core::error::SourceLoc, m: String| {
        LoadError::at(loc.clone(), format!("pipeline \"{}\": {m}", p.name))
    };
    let mut seen: HashMap<&str, &kiln_core::error::SourceLoc> = HashMap::new();
    for n in &p.nodes {
        if p.is_input(&n.name) {
            errors.push(err(
                &n.loc,
                format!("\"{}\" is both an input and a computed value", n.name),
            ));
        } else if let Some(prev) = seen.insert(&n.name, &n.loc) {
            errors.push(err(
                &n.loc,
                format!("\"{}\" is computed twice (first at {prev})", n.name),
            ));
        }
    }
    let known: Vec<&str> = p
        .inputs
        .iter()
        .map(|i| i.name.as_str())
        .chain(p.nodes.iter().map(|n| n.name.as_str()))
        .collect();
    for n in &p.nodes {
        for d in &n.deps {
            if !known.contains(&d.as_str()) {
                errors.push(err(
                    &n.loc,
                    format!(
                        "\"{}\" uses \"{d}\", which is neither an input nor a computed value (known: {})",
                        n.name,
                        known.join(", ")
                    ),
                ));
            }
        }
    }
    // Only a well-named graph has meaningful cycles (an input shadowed by a node loops on itself).
    if let Some(cycle) = find_cycle(p).filter(|_| errors.is_empty()) {
        let first = p
            .node(&cycle[0])
            .map(|n| n.loc.clone())
            .unwrap_or(p.loc.clone());
        errors.push(err(&first, format!("cycle: {}", cycle.join(" -> "))));
    }
    if p.outputs.is_empty() {
        errors.push(err(&p.loc, "has no .result(...)".into()));
    }
    for o in &p.outputs {
        if p.node(&o.name).is_none() {
            errors.push(err(
                &o.loc,
                format!("output \"{}\" is not computed by any .compute(...)", o.name),
            ));
        }
    }
    errors
}

/// The first dependency cycle among the nodes, as `a, b, ..., a`.
fn find_cycle(p: &PipelineSpec) -> Option<Vec<String>> {
    fn visit<'a>(
        p: &'a PipelineSpec,
        name: &'a str,
        path: &mut Vec<&'a str>,
        finished: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|n| *n == name) {
            let mut cycle: Vec<String> = path[i..].iter().map(|s| s.to_string()).collect();
            cycle.push(name.to_string());
            return Some(cycle);
        }
        if finished.contains(&name) {
            return None;
        }
        let node = p.node(name)?;
        path.push(name);
        for d in &node.deps {
            if let Some(c) = visit(p, d, path, finished) {
                return Some(c);
            }
        }
        path.pop();
        finished.push(name);
        None
    }
    let mut finished = Vec::new();
    p.nodes
        .iter()
        .find_map(|n| visit(p, &n.name, &mut Vec::new(), &mut finished))
}

/// Problems with what the nodes call, given everything loaded.
pub fn linked(p: &PipelineSpec, lookup: &dyn Lookup) -> Vec<LoadError> {
    let mut errors = Vec::new();
    let err = |loc: &kiln_core::error::SourceLoc, m: String| {
        LoadError::of(
            LoadErrorKind::PipelineLink,
            loc.clone(),
            format!("pipeline \"{}\": {m}", p.name),
        )
    };
    for n in &p.nodes {
        let needs = match &n.target {
            Target::Tool(t) => match lookup.tool(t) {
                None => {
                    errors.push(err(
                        &n.loc,
                        format!("\"{}\" calls tool \"{t}\", which does not exist", n.name),
                    ));
                    continue;
                }
                Some(tool) => tool.requires.clone(),
            },
            Target::Agent(a) => {
                if !lookup.has_agent(a) {
                    errors.push(err(
                        &n.loc,
                        format!("\"{}\" calls agent \"{a}\", which does not exist", n.name),
                    ));
                }
                continue;
            }
            Target::Pipeline(q) => match lookup.pipeline(q) {
                None => {
                    errors.push(err(
                        &n.loc,
                        format!(
                            "\"{}\" calls pipeline \"{q}\", which does not exist",
                            n.name
                        ),
                    ));
                    continue;
                }
                Some(sub) => sub.requires.clone(),
            },
        };
        let beyond: Vec<String> = needs
            .iter()
            .filter(|r| !p.requires.iter().any(|d| d.name == r.name))
            .map(|r| r.to_string())
            .collect();
        if !beyond.is_empty() {
            errors.push(err(
                &n.loc,
                format!(
                    "\"{}\" calls {} which requires [{}]; the pipeline does not declare it: add .requires(\"{}\")",
                    n.name,
                    n.target,
                    beyond.join(", "),
                    beyond[0]
                ),
            ));
        }
    }
    if let Some(path) = composition_cycle(p, lookup, &mut vec![p.name.clone()]) {
        errors.push(err(
            &p.loc,
            format!(
                "pipelines call each other in a cycle: {}",
                path.join(" -> ")
            ),
        ));
    }
    errors
}

/// A chain of `pipeline:` nodes leading back to a pipeline already on `path`.
fn composition_cycle(
    p: &PipelineSpec,
    lookup: &dyn Lookup,
    path: &mut Vec<String>,
) -> Option<Vec<String>> {
    for n in &p.nodes {
        let Target::Pipeline(q) = &n.target else {
            continue;
        };
        if path.contains(q) {
            let mut cycle = path.clone();
            cycle.push(q.clone());
            return Some(cycle);
        }
        if let Some(sub) = lookup.pipeline(q) {
            path.push(q.clone());
            if let Some(c) = composition_cycle(&sub, lookup, path) {
                return Some(c);
            }
            path.pop();
        }
    }
    None
}
