//! What a tool can reach, transitively. A pipeline reaches its nodes (tools, agents, other
//! pipelines); an agent called as a tool reaches every tool it lists (those `available_if` may
//! hide from a turn included) and the agents it lists. Their behaviour hints are the union of
//! everything reached: read-only only when all of it is, destructive or open-world when any of
//! it is, idempotent only when read-only and all of it is. `run_code` takes its hints from the
//! tools it calls, so it gets the union through them.

use crate::agent_spec::named_agent;
use crate::registry::Registry;
use kiln_core::tool::{Hints, ResolvedHints};
use kiln_pipeline::spec::Target;
use std::collections::HashSet;

/// Something a call may reach.
#[derive(Clone, Copy)]
enum Reached<'a> {
    Tool(&'a str),
    Agent(&'a str),
    Pipeline(&'a str),
}

/// Reaching nothing: a pure computation.
const NOTHING: ResolvedHints = ResolvedHints {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};

/// Both `a` and `b` reached.
fn union(a: ResolvedHints, b: ResolvedHints) -> ResolvedHints {
    let read_only = a.read_only && b.read_only;
    ResolvedHints {
        read_only,
        destructive: a.destructive || b.destructive,
        idempotent: read_only && a.idempotent && b.idempotent,
        open_world: a.open_world || b.open_world,
    }
}

/// Resolved hints as hints set explicitly (so a tool built with them reports them as they are).
pub fn explicit(h: ResolvedHints) -> Hints {
    Hints {
        read_only: Some(h.read_only),
        destructive: Some(h.destructive),
        idempotent: Some(h.idempotent),
        open_world: Some(h.open_world),
    }
}

impl Registry {
    /// The hints of the tool or pipeline `name` with everything it reaches.
    pub fn reach_hints(&self, name: &str) -> ResolvedHints {
        self.walk(Reached::Tool(name), &mut HashSet::new())
    }

    /// The hints of running the agent `name` as a tool: the union of what its tools reach.
    pub fn agent_reach_hints(&self, name: &str) -> ResolvedHints {
        self.walk(Reached::Agent(name), &mut HashSet::new())
    }

    fn walk(&self, reached: Reached<'_>, seen: &mut HashSet<String>) -> ResolvedHints {
        // A pipeline is a tool too: reached by its tool's name, it is walked as a pipeline.
        let reached = match reached {
            Reached::Tool(n) if self.pipeline_spec(n).is_some() => Reached::Pipeline(n),
            other => other,
        };
        let key = match reached {
            Reached::Tool(n) => format!("tool:{n}"),
            Reached::Agent(n) => format!("agent:{n}"),
            Reached::Pipeline(n) => format!("pipeline:{n}"),
        };
        if !seen.insert(key) {
            return NOTHING;
        }
        match reached {
            Reached::Tool(n) => self.find(n).map_or(NOTHING, |t| t.hints()),
            Reached::Agent(n) => {
                let Some(agent) = self.agent(n) else {
                    return NOTHING;
                };
                let mut hints = NOTHING;
                for entry in &agent.tools {
                    hints = union(
                        hints,
                        match named_agent(entry) {
                            Some(other) => self.walk(Reached::Agent(other), seen),
                            None => (self.named(entry).iter())
                                .map(|t| self.walk(Reached::Tool(&t.name), seen))
                                .fold(NOTHING, union),
                        },
                    );
                }
                hints
            }
            Reached::Pipeline(n) => {
                let Some(spec) = self.pipeline_spec(n) else {
                    return NOTHING;
                };
                // What it declares counts too (a capability it needs for its own sake).
                let own = kiln_core::tool::Tool::hints_of_requires(&spec.requires);
                (spec.nodes.iter())
                    .map(|node| match &node.target {
                        Target::Tool(t) => self.walk(Reached::Tool(t), seen),
                        Target::Agent(a) => self.walk(Reached::Agent(a), seen),
                        Target::Pipeline(p) => self.walk(Reached::Pipeline(p), seen),
                    })
                    .fold(own, union)
            }
        }
    }

    /// Offers each pipeline with the hints of what it reaches (once everything is linked).
    pub(crate) fn settle_pipeline_hints(&mut self) {
        let names: Vec<String> = self.pipeline_names();
        for name in names {
            let hints = explicit(self.reach_hints(&name));
            self.replace_pipeline_tool(&name, hints);
        }
    }
}
