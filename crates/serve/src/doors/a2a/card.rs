//! An agent's A2A agent card: its name and purpose, the interfaces this server offers for it,
//! what it supports, the security schemes matching the server's tokens and OAuth issuer, and
//! its skills: the agent's purpose, and (on the extended card a token reads) each of its tools
//! that token could call. The public card lists no tool when the server takes tokens: who
//! reads it is not known.

use crate::state::AppState;
use crate::walls::auth::Principal;
use axum::http::HeaderMap;
use kiln_a2a::{AgentCapabilities, AgentCard, AgentInterface, AgentSkill};
use kiln_core::capability::Grants;
use serde_json::{Map, Value, json};

/// The media types the agent's messages and artifacts use.
pub(crate) const OUTPUT_MODES: [&str; 2] = ["text/plain", "application/json"];

/// The origin clients reached this server by (`http://localhost:8080`), from the `Host`
/// header the same-site guard already checked; the bound port on loopback otherwise.
pub(crate) fn origin(state: &AppState, headers: &HeaderMap) -> String {
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c))
        });
    match host {
        Some(h) => format!("http://{h}"),
        None => format!("http://localhost:{}", state.bound_port().unwrap_or(80)),
    }
}

/// The card of `agent` for `who` (`None`: the public card).
pub(crate) fn card(
    state: &AppState,
    spec: &kiln_registry::agent_spec::AgentSpec,
    origin: &str,
    who: Option<&Principal>,
) -> AgentCard {
    let url = format!("{origin}/a2a/{}", spec.name);
    let interface = |binding: &str| AgentInterface {
        url: url.clone(),
        protocol_binding: binding.to_string(),
        protocol_version: kiln_a2a::PROTOCOL_VERSION.to_string(),
        tenant: None,
    };
    let description = match spec.description.trim() {
        "" => format!("The {} agent", spec.name),
        d => d.to_string(),
    };
    let mut skills = vec![AgentSkill {
        id: spec.name.clone(),
        name: spec.name.clone(),
        description: description.clone(),
        tags: vec!["agent".into()],
        examples: Vec::new(),
    }];
    let open = state.tokens.is_empty();
    if let Some(who) = who.or(open.then_some(&Principal::default())) {
        skills.extend(tools(state, spec, who));
    }
    let (schemes, requirements) = security(state);
    AgentCard {
        name: spec.name.clone(),
        description,
        supported_interfaces: vec![
            interface(kiln_a2a::BINDING_JSONRPC),
            interface(kiln_a2a::BINDING_REST),
        ],
        provider: None,
        version: env!("CARGO_PKG_VERSION").to_string(),
        documentation_url: None,
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(state.front.is_none() && !state.options.a2a.push.is_empty()),
            extended_agent_card: Some(!open),
            extensions: Vec::new(),
        },
        security_schemes: schemes,
        security_requirements: requirements,
        default_input_modes: OUTPUT_MODES.map(String::from).to_vec(),
        default_output_modes: OUTPUT_MODES.map(String::from).to_vec(),
        skills,
    }
}

/// A skill for each of the agent's tools `who` could call: the meet of the agent's grants, the
/// token's ceiling and the server's covers what the tool requires.
fn tools(
    state: &AppState,
    spec: &kiln_registry::agent_spec::AgentSpec,
    who: &Principal,
) -> Vec<AgentSkill> {
    let grants = Grants::effective(&[
        Some(&spec.grants),
        who.ceiling.as_ref(),
        state.options.ceiling.as_ref(),
    ]);
    spec.tools
        .iter()
        .filter_map(|name| state.host.tool(name).ok())
        .filter(|t| grants.missing(&t.requires).is_empty())
        .map(|t| AgentSkill {
            id: format!("{}/{}", spec.name, t.name),
            name: t.name.clone(),
            description: t.description.clone(),
            tags: vec!["tool".into()],
            examples: Vec::new(),
        })
        .collect()
}

/// Bearer tokens (kiln's own, or an OAuth issuer's access tokens) as the card declares them.
fn security(state: &AppState) -> (Map<String, Value>, Vec<Value>) {
    let mut schemes = Map::new();
    if state.tokens.is_empty() {
        return (schemes, Vec::new());
    }
    schemes.insert(
        "bearer".into(),
        json!({"httpAuthSecurityScheme": {"scheme": "Bearer"}}),
    );
    let mut requirements = vec![json!({"schemes": {"bearer": {"list": []}}})];
    if let Some(issuer) = state.tokens.issuer() {
        let servers = issuer.metadata()["authorization_servers"].clone();
        if let Some(server) = servers.get(0).and_then(Value::as_str) {
            schemes.insert(
                "oauth".into(),
                json!({"oauth2SecurityScheme": {
                    "oauth2MetadataUrl": format!("{}/.well-known/oauth-authorization-server", server.trim_end_matches('/')),
                    "flows": {"authorizationCode": {}},
                }}),
            );
            requirements.push(json!({"schemes": {"oauth": {"list": []}}}));
        }
    }
    (schemes, requirements)
}
