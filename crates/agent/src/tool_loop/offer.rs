//! The tools a turn offers its agent's model: the registry snapshot pinned for the turn, the
//! agent's tools from it (none only a page may call), its skills' tools, and the agents and
//! remote A2A agents it lists, as tools.

use super::skills;
use crate::RunHost;
use kiln_core::context::CallContext;
use std::sync::Arc;

/// Pins this turn's registry snapshot in `ctx` and returns the agent's tools offered from it:
/// the schemas the model sees are the code that runs. The tools its skills' folders declare
/// come once their skill is `loaded` (`None`: every skill's).
pub(crate) fn pin_turn(
    host: &dyn RunHost,
    agent: &kiln_registry::agent_spec::AgentSpec,
    ctx: &mut CallContext,
    loaded: Option<&[String]>,
) -> Vec<Arc<kiln_core::tool::Tool>> {
    let snapshot = host.registry();
    ctx.run.registry = Some(snapshot.clone());
    let mut available = snapshot.available(Some(&agent.tools), ctx);
    // A tool only its page may call (MCP Apps' `visibility: ["app"]`) is no tool of the model's.
    available.retain(|t| kiln_registry::served::apps::visible_to_model(t));
    // Its skills' two tools and, of a skill loaded, the tools its folder declares (within
    // the run's grants), unless a tool of the same name is offered already.
    let declared = skills::declared_tools(&snapshot, &agent.skills, ctx);
    let withheld = skills::withheld(&declared, loaded);
    available.retain(|t| !withheld.contains(&t.name));
    let from_skills = declared
        .iter()
        .filter(|(_, t)| !withheld.contains(&t.name))
        .map(|(_, t)| t.clone());
    for tool in skills::tools(&agent.skills, &declared)
        .into_iter()
        .chain(from_skills)
    {
        if available.iter().all(|t| t.name != tool.name) {
            available.push(tool);
        }
    }
    // Other agents it lists (`agent:NAME`) as tools that run them.
    available.extend(
        agent
            .tools
            .iter()
            .filter_map(|t| kiln_registry::agent_tool::named_agent(t))
            .filter_map(|name| snapshot.agent(name))
            .filter_map(|other| {
                let reaches = snapshot.agent_reach_hints(&other.name);
                kiln_registry::agent_tool::agent_tool(&other, reaches)
            }),
    );
    // Remote A2A agents it lists (`a2a:NAME`) as tools that ask them.
    available.extend(
        agent
            .tools
            .iter()
            .filter_map(|t| kiln_registry::a2a_agent::named(t))
            .filter_map(|name| snapshot.a2a_agent(name))
            .filter_map(kiln_registry::a2a_agent::a2a_tool),
    );
    // The agents it may hand the conversation to.
    available.extend(
        agent
            .handoffs
            .iter()
            .filter_map(|name| snapshot.agent(name))
            .filter_map(|other| kiln_registry::agent_tool::handoff_tool(&other)),
    );
    match (&agent.code_mode, &agent.script) {
        (Some(mode), Some(script)) => {
            // The program calls the tools; those kept out stay ordinary tool calls.
            let (kept, functions): (Vec<_>, Vec<_>) = available
                .into_iter()
                .partition(|t| mode.except.contains(&t.name));
            let mut offered = script.code_tools(&functions, mode);
            offered.extend(kept);
            offered
        }
        _ => available,
    }
}
