//! An immutable snapshot of the loaded tools and agents, with lookups, capability filtering and
//! schema export. A new snapshot is built on every (re)load and swapped in whole.

use crate::agent::AgentSpec;
use crate::capability::{self, Grants};
use crate::context::CallContext;
use crate::error::{LoadError, SourceLoc};
use crate::schema::{self, Format};
use crate::tool::Tool;
use indexmap::IndexMap;
use serde_json::Value;
use std::sync::Arc;

/// What one source (a script file, or the application's native tools) defined, and what was
/// wrong with it.
#[derive(Default)]
pub(crate) struct LoadedFile {
    /// Path as shown in messages.
    pub path: String,
    /// Tools in definition order.
    pub tools: Vec<Arc<Tool>>,
    /// Agents in definition order, each with where its tool list is (checked by the registry).
    pub agents: Vec<(Arc<AgentSpec>, SourceLoc)>,
    /// Problems; a file with any is "broken" for hot reload.
    pub errors: Vec<LoadError>,
    /// Advice that does not stop loading.
    pub warnings: Vec<LoadError>,
}

/// Tools and agents of one load, plus everything that went wrong.
#[derive(Default)]
pub struct Registry {
    tools: IndexMap<String, Arc<Tool>>,
    agents: IndexMap<String, Arc<AgentSpec>>,
    /// Load errors across all files.
    pub errors: Vec<LoadError>,
    /// Load warnings across all files.
    pub warnings: Vec<LoadError>,
}

fn is_stdlib(loc: &SourceLoc) -> bool {
    loc.path.starts_with("stdlib/")
}

impl Registry {
    /// Builds a snapshot from loaded files (stdlib first). A user tool may replace a stdlib
    /// tool of the same name; any other duplicate is an error naming both places.
    pub(crate) fn build<'a>(files: impl IntoIterator<Item = &'a LoadedFile>) -> Registry {
        let mut reg = Registry::default();
        let mut pending_agents = Vec::new();
        for file in files {
            reg.errors.extend(file.errors.iter().cloned());
            reg.warnings.extend(file.warnings.iter().cloned());
            for tool in &file.tools {
                match reg.tools.get(&tool.name) {
                    Some(prev) if !is_stdlib(&prev.loc) || is_stdlib(&tool.loc) => {
                        reg.errors.push(LoadError::at(
                            tool.loc.clone(),
                            format!(
                                "duplicate tool \"{}\": already defined at {}",
                                tool.name, prev.loc
                            ),
                        ));
                    }
                    _ => {
                        reg.tools.insert(tool.name.clone(), tool.clone());
                    }
                }
            }
            pending_agents.extend(file.agents.iter().cloned());
        }
        for (agent, at) in pending_agents {
            if let Some(prev) = reg.agents.get(&agent.name) {
                reg.errors.push(LoadError::at(
                    agent.loc.clone(),
                    format!(
                        "duplicate agent \"{}\": already defined at {}",
                        agent.name, prev.loc
                    ),
                ));
                continue;
            }
            let problems = reg.agent_problems(&agent);
            if problems.is_empty() {
                reg.agents.insert(agent.name.clone(), agent);
            } else {
                reg.errors
                    .extend(problems.into_iter().map(|m| LoadError::at(at.clone(), m)));
            }
        }
        reg
    }

    fn agent_problems(&self, agent: &AgentSpec) -> Vec<String> {
        let mut out = Vec::new();
        for name in &agent.tools {
            match self.tools.get(name) {
                None => out.push(format!(
                    "agent \"{}\" lists tool \"{name}\" which does not exist (loaded: {})",
                    agent.name,
                    self.tool_names().join(", ")
                )),
                Some(tool) => {
                    let missing = agent.grants.missing(&tool.requires);
                    if !missing.is_empty() {
                        let missing: Vec<_> = missing.into_iter().cloned().collect();
                        out.push(format!(
                            "agent \"{}\" lists tool \"{name}\" which requires {} but the agent grants only {}",
                            agent.name,
                            capability::list(&missing),
                            agent.grants.list()
                        ));
                    }
                }
            }
        }
        out
    }

    /// Every tool in load order.
    pub fn all(&self) -> impl Iterator<Item = &Arc<Tool>> {
        self.tools.values()
    }

    /// Tool names in load order.
    pub fn tool_names(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }

    /// A tool by name.
    pub fn find(&self, name: &str) -> Option<Arc<Tool>> {
        self.tools.get(name).cloned()
    }

    /// Every agent in load order.
    pub fn agents(&self) -> impl Iterator<Item = &Arc<AgentSpec>> {
        self.agents.values()
    }

    /// An agent by name.
    pub fn agent(&self, name: &str) -> Option<Arc<AgentSpec>> {
        self.agents.get(name).cloned()
    }

    /// Tools whose requirements these grants cover.
    pub fn tools_for(&self, grants: &Grants) -> Vec<Arc<Tool>> {
        self.tools
            .values()
            .filter(|t| grants.missing(&t.requires).is_empty())
            .cloned()
            .collect()
    }

    /// Tools offered in a context: covered by its grants and `available_if` true.
    pub(crate) fn available(&self, names: Option<&[String]>, ctx: &CallContext) -> Vec<Arc<Tool>> {
        let picked: Vec<Arc<Tool>> = match names {
            Some(list) => list.iter().filter_map(|n| self.find(n)).collect(),
            None => self.tools_for(&ctx.grants),
        };
        picked.into_iter().filter(|t| t.is_available(ctx)).collect()
    }

    /// Definitions of `tools` in a format, with warnings about anything dropped.
    pub fn schemas(tools: &[Arc<Tool>], format: Format) -> (Vec<Value>, Vec<String>) {
        let mut defs = Vec::new();
        let mut warnings = Vec::new();
        for t in tools {
            let (d, w) = schema::export(&t.name, &t.description, &t.schema, format);
            defs.push(d);
            warnings.extend(w);
        }
        (defs, warnings)
    }
}
