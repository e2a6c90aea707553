//! An immutable snapshot of the loaded tools and agents, with lookups, capability filtering and
//! schema export. A new snapshot is built on every (re)load and swapped in whole.

use crate::agent_spec::AgentSpec;
use indexmap::IndexMap;
use kiln_core::capability::{self, Grants, HostCap};
use kiln_core::context::CallContext;
use kiln_core::error::{LoadError, LoadErrorKind, SourceLoc};
use kiln_core::schema::{self, Format};
use kiln_core::tool::Tool;
use serde_json::Value;
use std::sync::Arc;

/// Where a source of definitions came from; it decides the load order (stdlib, native, the
/// rest) and that a user's tool may replace a stdlib tool of the same name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Origin {
    /// The embedded stdlib.
    Stdlib,
    /// The application's native tools.
    Native,
    /// A script file of the scripts folders.
    #[default]
    Script,
    /// A mounted MCP server's tools.
    Mcp,
}

/// What one source (a script file, or the application's native tools) defined, and what was
/// wrong with it.
#[derive(Default, Clone)]
pub struct LoadedFile {
    /// Path as shown in messages.
    pub path: String,
    /// Where it came from.
    pub origin: Origin,
    /// Tools in definition order.
    pub tools: Vec<Arc<Tool>>,
    /// Agents in definition order, each with where its tool list is (checked by the registry).
    pub agents: Vec<(Arc<AgentSpec>, SourceLoc)>,
    /// Pipelines in definition order (what they call is checked by the registry).
    pub pipelines: Vec<kiln_pipeline::spec::Pipeline>,
    /// Problems; a file with any is "broken" for hot reload.
    pub errors: Vec<LoadError>,
    /// Advice that does not stop loading.
    pub warnings: Vec<LoadError>,
    /// Files this one imports by a literal path (canonical): editing one reloads this file.
    pub imports: Vec<std::path::PathBuf>,
    /// MCP servers declared with `mcp_server(...)`, in definition order.
    pub mcp_servers: Vec<crate::mount_spec::MountSpec>,
    /// Remote A2A agents declared with `a2a_agent(...)`, in definition order.
    pub a2a_agents: Vec<crate::agent_spec::A2aAgentSpec>,
    /// Resources, resource templates and prompts it declares.
    pub served: crate::served::Served,
    /// Call policies it declares, in definition order.
    pub policies: Vec<Arc<dyn kiln_core::tool::policy::Policy>>,
    /// Evals it declares, in definition order.
    pub evals: Vec<Arc<crate::eval_spec::EvalSpec>>,
    /// Whether its definitions stand or fall together: a script file does (one error and it
    /// contributes nothing); the native tools and a mounted server's tools stand one by one.
    pub atomic: bool,
}

/// Tools and agents of one load, plus everything that went wrong.
#[derive(Default)]
pub struct Registry {
    tools: IndexMap<String, Arc<Tool>>,
    agents: IndexMap<String, Arc<AgentSpec>>,
    pipelines: IndexMap<String, kiln_pipeline::spec::Pipeline>,
    mcp_servers: IndexMap<String, crate::mount_spec::MountSpec>,
    a2a_agents: IndexMap<String, crate::agent_spec::A2aAgentSpec>,
    served: crate::served::Served,
    policies: Vec<Arc<dyn kiln_core::tool::policy::Policy>>,
    evals: IndexMap<String, Arc<crate::eval_spec::EvalSpec>>,
    /// Load errors across all files.
    pub errors: Vec<LoadError>,
    /// Load warnings across all files.
    pub warnings: Vec<LoadError>,
}

/// The server of an agent's `SERVER__*` entry (every tool of that MCP server).
fn mcp_wildcard(name: &str) -> Option<&str> {
    name.strip_suffix("*")?
        .strip_suffix(crate::mount_spec::SEPARATOR)
        .filter(|s| !s.is_empty())
}

impl Registry {
    /// Everything `kiln check` warns about: the files' warnings (a handler calling a gated
    /// function its tool does not declare), then agents granting `net:private`.
    pub fn advice(&self) -> Vec<LoadError> {
        let mut advice = self.warnings.clone();
        for agent in self.agents() {
            let broad = agent
                .grants
                .iter()
                .any(|g| HostCap::Net.is(&g.cap.name) && g.cap.scope.as_deref() == Some("private"));
            if agent.provider == crate::agent_spec::ProviderKind::Gemini {
                advice.extend(self.gemini_losses(agent));
            }
            if broad {
                advice.push(LoadError::at(
                    agent.loc.clone(),
                    format!(
                        "agent \"{}\" grants net:private: its tools reach every loopback, private and shared address (this machine and its networks); name what they need instead (net:HOST[:PORT], net:10.0.0.0/8)",
                        agent.name
                    ),
                ));
            }
        }
        advice
    }

    /// The schema keywords of a Gemini agent's tools outside Gemini's documented subset
    /// ([`crate::gemini_schema`]): one warning per tool.
    fn gemini_losses(&self, agent: &AgentSpec) -> Vec<LoadError> {
        let tools = agent.tools.iter().flat_map(|name| self.named(name));
        tools
            .filter_map(|tool| {
                let lost = crate::gemini_schema::undocumented(&tool.schema);
                (!lost.is_empty()).then(|| {
                    LoadError::at(
                        agent.loc.clone(),
                        format!(
                            "agent \"{}\" is on gemini: the schema of tool \"{}\" uses keywords outside the JSON Schema subset Gemini documents, which its model may not follow: {}; kiln still validates every call against the whole schema",
                            agent.name,
                            tool.name,
                            lost.join(", ")
                        ),
                    )
                })
            })
            .collect()
    }

    /// Builds a snapshot from loaded files (stdlib first). A user tool may replace a stdlib
    /// tool of the same name; any other duplicate is an error naming both places.
    ///
    /// A file with load errors contributes nothing: a builder chain cut by an error (a typo
    /// after `.capabilities(...)` that dropped its `.ask`) must never register with the settings
    /// it lost. Its definitions are still checked against the rest, so every error of the file
    /// is reported at once.
    pub fn build<'a>(files: impl IntoIterator<Item = &'a LoadedFile>) -> Registry {
        let files: Vec<&LoadedFile> = files.into_iter().collect();
        let checked = Self::build_all(files.iter().copied());
        let broken = |f: &LoadedFile| f.atomic && !f.errors.is_empty();
        if !files.iter().any(|f| broken(f)) {
            return checked;
        }
        let emptied: Vec<LoadedFile> = files
            .iter()
            .map(|f| match broken(f) {
                false => (*f).clone(),
                // A broken file's policies (the loader's stand-in refusing every call) stay.
                true => LoadedFile {
                    path: f.path.clone(),
                    errors: f.errors.clone(),
                    warnings: f.warnings.clone(),
                    imports: f.imports.clone(),
                    policies: f.policies.clone(),
                    ..LoadedFile::default()
                },
            })
            .collect();
        let mut reg = Self::build_all(emptied.iter());
        // Errors of the whole check first, then what removing the broken files broke.
        let mut errors = checked.errors;
        for e in reg.errors.drain(..) {
            if !errors.contains(&e) {
                errors.push(e);
            }
        }
        reg.errors = errors;
        reg
    }

    fn build_all<'a>(files: impl IntoIterator<Item = &'a LoadedFile>) -> Registry {
        let mut reg = Registry::default();
        let mut pending_agents = Vec::new();
        let mut pending_pipelines = Vec::new();
        let mut from_stdlib = std::collections::HashSet::new();
        let mut pending_pages = Vec::new();
        for file in files {
            reg.errors.extend(file.errors.iter().cloned());
            reg.warnings.extend(file.warnings.iter().cloned());
            for tool in &file.tools {
                match reg.tools.get(&tool.name) {
                    Some(prev)
                        if !from_stdlib.contains(&tool.name) || file.origin == Origin::Stdlib =>
                    {
                        reg.errors.push(LoadError::of(
                            LoadErrorKind::DuplicateTool,
                            tool.loc.clone(),
                            format!(
                                "duplicate tool \"{}\": already defined at {}",
                                tool.name, prev.loc
                            ),
                        ));
                    }
                    _ => {
                        if file.origin == Origin::Stdlib {
                            from_stdlib.insert(tool.name.clone());
                        } else {
                            from_stdlib.remove(&tool.name);
                        }
                        reg.tools.insert(tool.name.clone(), tool.clone());
                    }
                }
            }
            for server in &file.mcp_servers {
                reg.add_mcp_server(server);
            }
            for remote in &file.a2a_agents {
                reg.add_a2a_agent(remote);
            }
            reg.served.add(&file.served, &mut reg.errors);
            if file.origin == Origin::Script {
                pending_pages.extend(file.tools.iter().cloned());
            }
            for p in &file.policies {
                match reg.policies.iter().find(|q| q.name() == p.name()) {
                    Some(prev) => reg.errors.push(LoadError::of(
                        LoadErrorKind::Registry,
                        p.loc().clone(),
                        format!(
                            "duplicate policy \"{}\": already defined at {}",
                            p.name(),
                            prev.loc()
                        ),
                    )),
                    None => reg.policies.push(p.clone()),
                }
            }
            reg.add_evals(&file.evals);
            pending_agents.extend(file.agents.iter().cloned());
            pending_pipelines.extend(file.pipelines.iter().cloned());
        }
        reg.add_pipelines(pending_pipelines);
        let pages = crate::served::apps::unserved_pages(&pending_pages, &reg.served);
        reg.errors.extend(pages);
        let names: Vec<String> = pending_agents.iter().map(|(a, _)| a.name.clone()).collect();
        let known_agents: Vec<&str> = names.iter().map(String::as_str).collect();
        for (agent, at) in pending_agents {
            if let Some(prev) = reg.agents.get(&agent.name) {
                reg.errors.push(LoadError::of(
                    LoadErrorKind::Registry,
                    agent.loc.clone(),
                    format!(
                        "duplicate agent \"{}\": already defined at {}",
                        agent.name, prev.loc
                    ),
                ));
                continue;
            }
            let problems = reg.agent_problems(&agent, &known_agents);
            if problems.is_empty() {
                reg.agents.insert(agent.name.clone(), agent);
            } else {
                reg.errors.extend(
                    problems
                        .into_iter()
                        .map(|m| LoadError::of(LoadErrorKind::Registry, at.clone(), m)),
                );
            }
        }
        reg.link_pipelines();
        reg.settle_pipeline_hints();
        reg
    }

    /// A declared remote A2A agent; a second one of the same name is an error naming both.
    fn add_a2a_agent(&mut self, remote: &crate::agent_spec::A2aAgentSpec) {
        match self.a2a_agents.get(&remote.name) {
            Some(prev) => self.errors.push(LoadError::of(
                LoadErrorKind::Registry,
                remote.loc.clone(),
                format!(
                    "duplicate a2a_agent \"{}\": already declared at {}",
                    remote.name, prev.loc
                ),
            )),
            None => {
                self.a2a_agents.insert(remote.name.clone(), remote.clone());
            }
        }
    }

    /// A declared MCP server; a second one of the same name is an error naming both places.
    fn add_mcp_server(&mut self, server: &crate::mount_spec::MountSpec) {
        let at = server.origin();
        match self.mcp_servers.get(&server.name) {
            Some(prev) => self.errors.push(LoadError::of(
                LoadErrorKind::Registry,
                at,
                format!(
                    "duplicate MCP server \"{}\": already declared at {}",
                    server.name,
                    prev.origin()
                ),
            )),
            None => {
                self.mcp_servers.insert(server.name.clone(), server.clone());
            }
        }
    }

    /// The resources, resource templates and prompts scripts declare.
    pub fn served(&self) -> &crate::served::Served {
        &self.served
    }

    /// The remote A2A agent `name` scripts declare.
    pub fn a2a_agent(&self, name: &str) -> Option<&crate::agent_spec::A2aAgentSpec> {
        self.a2a_agents.get(name)
    }

    /// The MCP servers scripts declare, in load order.
    pub fn mcp_servers(&self) -> impl Iterator<Item = &crate::mount_spec::MountSpec> {
        self.mcp_servers.values()
    }

    /// Pipelines join the tools (a pipeline is a tool too, so names may not clash).
    fn add_pipelines(&mut self, pipelines: Vec<kiln_pipeline::spec::Pipeline>) {
        for p in pipelines {
            if let Some(prev) = self.tools.get(&p.spec.name) {
                self.errors.push(LoadError::of(
                    LoadErrorKind::DuplicateTool,
                    p.spec.loc.clone(),
                    format!(
                        "duplicate tool \"{}\": already defined at {} (a pipeline is also a tool)",
                        p.spec.name, prev.loc
                    ),
                ));
                continue;
            }
            self.tools.insert(p.spec.name.clone(), p.tool.clone());
            self.pipelines.insert(p.spec.name.clone(), p);
        }
    }

    /// Checks what each pipeline calls against everything loaded; a pipeline with problems is
    /// dropped (and so are pipelines that call it, on the next pass).
    fn link_pipelines(&mut self) {
        loop {
            let broken: Vec<(String, Vec<LoadError>)> = self
                .pipelines
                .values()
                .map(|p| {
                    (
                        p.spec.name.clone(),
                        kiln_pipeline::check::linked(&p.spec, self),
                    )
                })
                .filter(|(_, errors)| !errors.is_empty())
                .collect();
            if broken.is_empty() {
                return;
            }
            for (name, errors) in broken {
                self.pipelines.shift_remove(&name);
                self.tools.shift_remove(&name);
                self.errors.extend(errors);
            }
        }
    }

    /// Every pipeline in load order.
    pub fn pipelines(&self) -> impl Iterator<Item = &Arc<kiln_pipeline::spec::PipelineSpec>> {
        self.pipelines.values().map(|p| &p.spec)
    }

    /// Every eval, in definition order.
    pub fn evals(&self) -> impl Iterator<Item = &Arc<crate::eval_spec::EvalSpec>> {
        self.evals.values()
    }

    /// An eval by name.
    pub fn eval(&self, name: &str) -> Option<Arc<crate::eval_spec::EvalSpec>> {
        self.evals.get(name).cloned()
    }

    /// A file's evals; a second one of a name is an error naming both places.
    fn add_evals(&mut self, evals: &[Arc<crate::eval_spec::EvalSpec>]) {
        for e in evals {
            match self.evals.get(&e.name) {
                Some(prev) => self.errors.push(LoadError::of(
                    LoadErrorKind::Registry,
                    e.loc.clone(),
                    format!(
                        "duplicate eval \"{}\": already defined at {}",
                        e.name, prev.loc
                    ),
                )),
                None => {
                    self.evals.insert(e.name.clone(), e.clone());
                }
            }
        }
    }

    /// A pipeline by name.
    pub fn pipeline(&self, name: &str) -> Option<kiln_pipeline::spec::Pipeline> {
        self.pipelines.get(name).cloned()
    }

    /// A pipeline's definition by name.
    pub(crate) fn pipeline_spec(&self, name: &str) -> Option<&kiln_pipeline::spec::PipelineSpec> {
        self.pipelines.get(name).map(|p| p.spec.as_ref())
    }

    pub(crate) fn pipeline_names(&self) -> Vec<String> {
        self.pipelines.keys().cloned().collect()
    }

    /// Offers pipeline `name` with `hints` (its tool rebuilt; the definition is the same).
    pub(crate) fn replace_pipeline_tool(&mut self, name: &str, hints: kiln_core::tool::Hints) {
        let Some(rebuilt) = self
            .pipelines
            .get(name)
            .and_then(|p| p.with_hints(hints).ok())
        else {
            return;
        };
        self.tools.insert(name.to_string(), rebuilt.tool.clone());
        self.pipelines.insert(name.to_string(), rebuilt);
    }

    fn agent_problems(&self, agent: &AgentSpec, known_agents: &[&str]) -> Vec<String> {
        let mut out = Vec::new();
        for name in &agent.handoffs {
            if name == &agent.name {
                out.push(format!("agent \"{name}\" lists itself in .handoffs"));
            } else if !known_agents.contains(&name.as_str()) {
                out.push(format!(
                    "agent \"{}\" hands off to \"{name}\" but there is no such agent{} (loaded: {})",
                    agent.name,
                    kiln_core::error::suggest::hint(name, known_agents.iter().copied()),
                    known_agents.join(", ")
                ));
            }
        }
        for name in &agent.tools {
            if let Some(server) = mcp_wildcard(name) {
                let prefix = format!("{server}{}", crate::mount_spec::SEPARATOR);
                let known = self.mcp_servers.contains_key(server)
                    || self.tools.keys().any(|t| t.starts_with(&prefix));
                let unknown =
                    (!known).then(|| format!("no MCP server \"{server}\" is declared or mounted"));
                let cap = format!("{}:{server}", HostCap::Mcp);
                out.extend(crate::agent_spec::entry_problem(agent, name, &cap, unknown));
                continue;
            }
            if let Some(remote) = crate::agent_spec::named_a2a_agent(name) {
                let unknown = (!self.a2a_agents.contains_key(remote))
                    .then(|| format!("no a2a_agent(\"{remote}\") is declared"));
                out.extend(crate::agent_spec::entry_problem(agent, name, name, unknown));
                continue;
            }
            if let Some(other) = crate::agent_spec::named_agent(name) {
                if other == agent.name {
                    out.push(format!("agent \"{other}\" lists itself as a tool"));
                } else if !known_agents.contains(&other) {
                    out.push(format!(
                        "agent \"{}\" lists \"{name}\" but there is no agent \"{other}\" (loaded: {})",
                        agent.name,
                        known_agents.join(", ")
                    ));
                }
                continue;
            }
            match self.tools.get(name) {
                None => out.push(format!(
                    "agent \"{}\" lists tool \"{name}\" which does not exist{} (loaded: {})",
                    agent.name,
                    kiln_core::error::suggest::hint(
                        name,
                        self.tool_names().iter().map(|n| n.as_ref())
                    ),
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

    /// The tool `name`, or for `SERVER__*` every tool the MCP server has now.
    pub fn named(&self, name: &str) -> Vec<Arc<Tool>> {
        match mcp_wildcard(name) {
            Some(server) => {
                let prefix = format!("{server}{}", crate::mount_spec::SEPARATOR);
                self.tools
                    .iter()
                    .filter(|(n, _)| n.starts_with(&prefix))
                    .map(|(_, t)| t.clone())
                    .collect()
            }
            None => self.find(name).into_iter().collect(),
        }
    }

    /// Tools whose requirements these grants cover.
    pub fn tools_for(&self, grants: &Grants) -> Vec<Arc<Tool>> {
        self.tools
            .values()
            .filter(|t| grants.missing(&t.requires).is_empty())
            .cloned()
            .collect()
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

impl kiln_pipeline::check::Lookup for Registry {
    fn tool(&self, name: &str) -> Option<Arc<Tool>> {
        self.find(name)
    }

    fn has_agent(&self, name: &str) -> bool {
        self.agents.contains_key(name)
    }

    fn pipeline(&self, name: &str) -> Option<Arc<kiln_pipeline::spec::PipelineSpec>> {
        self.pipelines.get(name).map(|p| p.spec.clone())
    }
}

impl Registry {
    /// Tools offered in a context: covered by its grants and `available_if` true.
    pub fn available(&self, names: Option<&[String]>, ctx: &CallContext) -> Vec<Arc<Tool>> {
        let picked: Vec<Arc<Tool>> = match names {
            Some(list) => list.iter().flat_map(|n| self.named(n)).collect(),
            None => self.tools_for(&ctx.granted.grants),
        };
        picked.into_iter().filter(|t| t.is_available(ctx)).collect()
    }
}

impl kiln_core::context::Tools for Registry {
    fn reach(&self, name: &str) -> Option<Arc<dyn kiln_core::context::Reachable>> {
        self.find(name)
            .map(|t| Arc::new(t) as Arc<dyn kiln_core::context::Reachable>)
    }

    fn policies(&self) -> Vec<Arc<dyn kiln_core::tool::policy::Policy>> {
        self.policies.clone()
    }
}
