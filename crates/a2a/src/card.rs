//! The agent card: who an agent is, what it can do, where and how it is reached.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Where and over which binding an agent is served.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// The endpoint.
    pub url: String,
    /// `JSONRPC`, `HTTP+JSON` or `GRPC`.
    pub protocol_binding: String,
    /// The protocol version it speaks.
    pub protocol_version: String,
    /// The tenant, when the server hosts several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

/// What the agent's server supports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// `SendStreamingMessage` and `SubscribeToTask`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// Push notification configs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    /// An extended card for authenticated callers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
    /// Extensions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<Value>,
}

/// Something the agent is good at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Keywords.
    pub tags: Vec<String>,
    /// Example prompts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
}

/// The card (`/.well-known/agent-card.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// The agent's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Where it is served, the preferred interface first.
    pub supported_interfaces: Vec<AgentInterface>,
    /// Who runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<Value>,
    /// The agent's version.
    pub version: String,
    /// Its documentation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    /// What the server supports.
    pub capabilities: AgentCapabilities,
    /// How callers authenticate, by name.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub security_schemes: Map<String, Value>,
    /// Which schemes a call needs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<Value>,
    /// Media types it reads.
    pub default_input_modes: Vec<String>,
    /// Media types it writes.
    pub default_output_modes: Vec<String>,
    /// What it is good at.
    pub skills: Vec<AgentSkill>,
}

impl AgentCard {
    /// The interface of `binding`, when the card declares one.
    pub fn interface(&self, binding: &str) -> Option<&AgentInterface> {
        self.supported_interfaces
            .iter()
            .find(|i| i.protocol_binding.eq_ignore_ascii_case(binding))
    }
}
