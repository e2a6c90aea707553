//! An agent's draft checked into its spec: its name, provider, mode and capabilities, its
//! `.text_tool_calls(...)` and contract. Every problem becomes an error at the call that made
//! it, and all of them are reported at once.

use crate::ScriptUnit;
use crate::dsl::{AgentDraft, AgentSettings, ContractDraft};
use crate::handler::ScriptAgent;
use kiln_core::capability::{Capability, GrantMode, Grants};
use kiln_core::error::{LoadError, SourceLoc};
use kiln_core::tool::valid_tool_name;
use kiln_registry::agent_spec::TextCallFormat;
use kiln_registry::agent_spec::{self, AgentMode, AgentSpec, Contract, ProviderKind};
use rhai::Position;
use std::sync::Arc;

/// Checks one agent's draft: its spec, or every error found in it.
pub(crate) fn finish_agent(
    mut d: AgentDraft,
    unit: &Arc<ScriptUnit>,
) -> Result<AgentSpec, Vec<LoadError>> {
    let at = |pos: Position| crate::loc(&unit.path, pos);
    let settings = std::mem::take(&mut d.settings);
    let contract = std::mem::take(&mut d.contract);
    let mut errors = AgentErrors {
        agent: &d.name,
        at: &at,
        list: Vec::new(),
    };
    for (p, m) in &d.errors {
        errors.push(*p, format!("agent \"{}\": {m}", d.name));
    }
    if !valid_tool_name(&d.name) {
        errors.push(
            d.pos,
            format!(
                "invalid agent name \"{}\": names must match ^[a-zA-Z0-9_-]{{1,64}}$",
                d.name
            ),
        );
    }
    let provider = provider(&d, &settings, &mut errors);
    let mode = mode(&d, &settings, &mut errors);
    if provider == ProviderKind::Script && d.planner.is_none() {
        errors.push(
            d.pos,
            format!(
                "agent \"{}\": the script provider needs a .planner(|messages, tools| ...)",
                d.name
            ),
        );
    }
    let checked = Checked {
        provider,
        mode,
        grants: grants(&d, &mut errors),
        text_tool_calls: text_tool_calls(&settings, &mut errors),
        contract: agent_contract(contract, &mut errors),
    };
    if !errors.list.is_empty() {
        return Err(errors.list);
    }
    let loc = at(d.pos);
    Ok(agent_spec(d, settings, checked, loc, unit))
}

/// Where an agent's errors go: the list they join, each at its call's place in the file. The
/// name is the agent's, for the helpers whose drafts do not carry it.
struct AgentErrors<'a> {
    agent: &'a str,
    at: &'a dyn Fn(Position) -> SourceLoc,
    list: Vec<LoadError>,
}

impl AgentErrors<'_> {
    /// Adds an error at `pos`.
    fn push(&mut self, pos: Position, message: String) {
        self.list.push(LoadError::at((self.at)(pos), message));
    }
}

/// What checking an agent's draft made of the settings that needed it.
struct Checked {
    provider: ProviderKind,
    mode: AgentMode,
    grants: Grants,
    text_tool_calls: TextCallFormat,
    contract: Contract,
}

/// `.provider(...)`: a known provider; without one, the script provider if the agent has a
/// planner, else Anthropic.
fn provider(d: &AgentDraft, settings: &AgentSettings, errors: &mut AgentErrors) -> ProviderKind {
    let default_provider = if d.planner.is_some() {
        ProviderKind::Script
    } else {
        ProviderKind::Anthropic
    };
    let Some(name) = settings.provider.clone() else {
        return default_provider;
    };
    ProviderKind::parse(&name).unwrap_or_else(|| {
        errors.push(
            d.pos,
            format!(
                "agent \"{}\": unknown provider \"{name}\"{} (expected one of: {})",
                d.name,
                kiln_core::error::suggest::hint(&name, ProviderKind::names().split(", ")),
                ProviderKind::names()
            ),
        );
        default_provider
    })
}

/// `.mode(...)`: a known mode, or the default.
fn mode(d: &AgentDraft, settings: &AgentSettings, errors: &mut AgentErrors) -> AgentMode {
    let Some(name) = settings.mode.clone() else {
        return AgentMode::default();
    };
    AgentMode::parse(&name).unwrap_or_else(|| {
        errors.push(
            d.pos,
            format!(
                "agent \"{}\": unknown mode \"{name}\" (expected one of: {})",
                d.name,
                AgentMode::ALL.map(AgentMode::name).join(", ")
            ),
        );
        AgentMode::default()
    })
}

/// `.capabilities([...])` allowed and `.needs_approval([...])` asked for (one also allowed is
/// marked as asked); each that does not parse is an error.
fn grants(d: &AgentDraft, errors: &mut AgentErrors) -> Grants {
    let mut grants = Grants::default();
    for c in &d.capabilities {
        match Capability::parse(c) {
            Ok(cap) => grants.add(cap, GrantMode::Allow),
            Err(e) => errors.push(d.caps_pos, format!("agent \"{}\": {e}", d.name)),
        }
    }
    for a in &d.needs_approval {
        match Capability::parse(a) {
            Ok(cap) if !grants.covers(&cap) => grants.add(cap, GrantMode::NeedsApproval),
            Ok(_) => grants.mark_ask(std::slice::from_ref(a)),
            Err(e) => errors.push(d.pos, format!("agent \"{}\": {e}", d.name)),
        }
    }
    grants
}

/// `.text_tool_calls(...)`: a known format, or an error at the call naming the nearest.
fn text_tool_calls(settings: &AgentSettings, errors: &mut AgentErrors) -> TextCallFormat {
    let Some((name, pos)) = &settings.text_tool_calls else {
        return TextCallFormat::default();
    };
    TextCallFormat::parse(name).unwrap_or_else(|| {
        let agent = errors.agent;
        errors.push(
            *pos,
            format!(
                "agent \"{agent}\": unknown text_tool_calls \"{name}\"{} (expected one of: {})",
                kiln_core::error::suggest::hint(name, TextCallFormat::names().split(", ")),
                TextCallFormat::names()
            ),
        );
        TextCallFormat::default()
    })
}

/// The agent's contract: its output schema compiled (an error at `.output(...)` if it does not).
fn agent_contract(d: ContractDraft, errors: &mut AgentErrors) -> Contract {
    let retries = d
        .retries
        .unwrap_or(kiln_registry::contract::DEFAULT_OUTPUT_RETRIES);
    let output = d.output.and_then(|(schema, pos)| {
        kiln_registry::contract::OutputContract::new(schema, retries)
            .map_err(|e| {
                let agent = errors.agent;
                errors.push(pos, format!("agent \"{agent}\": {e}"));
            })
            .ok()
    });
    Contract {
        output,
        budget: d.budget,
        price: d.price,
    }
}

/// The spec of an agent whose draft checked clean: the checked values, the settings' numbers
/// (each out of range taken as unset, so its default applies) and the script's functions.
fn agent_spec(
    d: AgentDraft,
    settings: AgentSettings,
    checked: Checked,
    loc: SourceLoc,
    unit: &Arc<ScriptUnit>,
) -> AgentSpec {
    let as_u32 = |v: Option<i64>| v.and_then(|n| u32::try_from(n).ok());
    let as_usize = |v: Option<i64>| v.and_then(|n| usize::try_from(n).ok());
    let max_parallel = as_u32(settings.max_parallel).unwrap_or(4) as usize;
    AgentSpec {
        description: settings.description.unwrap_or_default(),
        provider: checked.provider,
        model: settings.model,
        system: settings.system,
        tools: d.tools,
        grants: checked.grants,
        max_iterations: as_u32(settings.max_iterations)
            .unwrap_or(agent_spec::DEFAULT_MAX_ITERATIONS),
        temperature: settings.temperature,
        max_tokens: as_u32(settings.max_tokens),
        base_url: settings.base_url,
        api_key_env: settings.api_key_env,
        max_reply_bytes: as_usize(settings.max_reply_bytes),
        max_line_bytes: as_usize(settings.max_line_bytes),
        max_parallel,
        mode: checked.mode,
        max_steps: as_u32(settings.max_steps).unwrap_or(agent_spec::DEFAULT_MAX_STEPS),
        loc,
        name: d.name,
        contract: checked.contract,
        handoffs: d.handoffs,
        fallback: d.fallback,
        text_tool_calls: checked.text_tool_calls,
        compaction: d.compaction,
        defer_loading: d.defer_loading,
        defer_with_kiln: d.defer_with_kiln,
        // The loader reads the skills' folders (`loader::skills`).
        skills: Vec::new(),
        // A program's parallel([...]) is bounded like the agent's concurrent calls.
        code_mode: d.code_mode.map(|mode| agent_spec::CodeMode {
            max_parallel,
            ..mode
        }),
        script: Some(Arc::new(ScriptAgent {
            planner: d.planner,
            validator: d.validator,
            unit: unit.clone(),
        })),
    }
}
