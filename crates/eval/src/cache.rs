//! `--cache`: a case's run is replayed from the last eval run's recording when the agent still
//! sends the recorded requests. The recorded replies are served by an in-process `kiln mock`
//! and every request the replay makes is compared with the recording (strict replay): when
//! one differs (the agent, its tools or the case changed), the replay is dropped and the case
//! runs against the model.

use super::record;
use super::report::RunRecord;
use kiln_agent::RunOptions;
use kiln_agent::connect::ProviderOverrides;
use kiln_host::Host;
use kiln_testing::{comparable_message, request_deltas};
use serde_json::Value;
use std::collections::HashMap;
use std::time::Instant;

/// The recorded run of each (case, model, repeat) of the last eval run.
#[derive(Default)]
pub struct Replays {
    runs: HashMap<(String, String, u32), (String, String)>,
}

/// A hash of what `agent` sends besides the conversation under `overrides`: its system prompt
/// as sent, provider, model and its tools' schemas. A run recorded under another is never
/// replayed (the conversation alone would not show an edited prompt or tool).
pub fn agent_version(host: &Host, agent: &str, overrides: &ProviderOverrides) -> Option<String> {
    let spec = host.agent(agent).ok()?;
    let tools: Vec<Value> = (spec.tools.iter())
        .map(|n| host.tool(n).map_or(Value::Null, |t| (*t.schema).clone()))
        .collect();
    let what = serde_json::json!({
        "system": overrides.system(&spec),
        "provider": overrides.provider.clone().unwrap_or_else(|| spec.provider.to_string()),
        "model": overrides.model.clone().or_else(|| spec.model.clone()),
        "tools": tools,
        "tool_names": spec.tools,
    });
    Some(kiln_script::source_version(&what.to_string()))
}

impl Replays {
    /// The recordings of eval `name`'s latest kept run, if any.
    pub fn load(host: &Host, name: &str) -> Replays {
        let shelf =
            super::store::Shelf::of(&host.config().workspace, host.database().map(|db| &**db));
        let Some(last) = super::store::latest(shelf, name) else {
            return Replays::default();
        };
        let runs = last
            .results
            .into_iter()
            .filter(|r| r.run.error.is_none())
            .filter_map(|r| {
                let key = (r.case, r.model, r.repeat);
                Some((key, (r.run.run_id?, r.run.agent_version?)))
            })
            .collect();
        Replays { runs }
    }

    /// The case's run replayed from its recording, when it has one and every request the
    /// replay sends is the recorded one.
    pub async fn replay(
        &self,
        host: &Host,
        agent: &str,
        prompt: &str,
        key: (&str, &str, u32),
        mut opts: RunOptions,
    ) -> Option<RunRecord> {
        let (case, model, repeat) = key;
        let (run_id, version) = self
            .runs
            .get(&(case.to_string(), model.to_string(), repeat))?;
        if agent_version(host, agent, &opts.overrides).as_ref() != Some(version) {
            return None;
        }
        let db = host.database()?;
        let scenario = kiln_testing::export::scenario_from_log(db, run_id).ok()?;
        // An edited case (another prompt) misses before anything runs: no tool runs for it.
        if !asks_first(&scenario, prompt) {
            return None;
        }
        let mut served: kiln_mock::scenario::Scenario =
            serde_json::from_value(scenario.clone()).ok()?;
        served.require_auth = false;
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let (local, serve) = kiln_mock::bind(served, addr).await.ok()?;
        let server = tokio::spawn(serve);
        opts.overrides = ProviderOverrides {
            provider: Some("openai".into()),
            model: opts.overrides.model.clone(),
            base_url: Some(format!("http://{local}/v1")),
            ..ProviderOverrides::default()
        };
        let started = Instant::now();
        let result = host.run(agent, prompt, opts).await;
        server.abort();
        let report = result.ok()?;
        let fits = same_requests(&scenario, &report.messages);
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        fits.then(|| RunRecord {
            agent_version: Some(version.clone()),
            ..record::of_run(&report, None, ms)
        })
    }
}

/// Whether the recording's first request asked `prompt`.
fn asks_first(scenario: &Value, prompt: &str) -> bool {
    let first = scenario["turns"][0]["expect"].as_array();
    first.is_some_and(|messages| {
        messages
            .iter()
            .any(|m| m["role"] == "user" && m["content"].as_str() == Some(prompt))
    })
}

/// Whether a replay sent exactly the recorded requests, and no more.
fn same_requests(scenario: &Value, messages: &[kiln_providers::Message]) -> bool {
    let messages: Vec<Value> = messages
        .iter()
        .map(|m| serde_json::to_value(m).unwrap_or(Value::Null))
        .collect();
    let sent = request_deltas(&messages);
    let turns = scenario["turns"].as_array().map_or(&[][..], Vec::as_slice);
    sent.len() == turns.len()
        && turns.iter().zip(&sent).all(|(turn, sent)| {
            let expected: Vec<Value> = turn["expect"]
                .as_array()
                .map(|a| a.iter().map(comparable_message).collect())
                .unwrap_or_default();
            &expected == sent
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recording_fits_only_the_prompt_it_asked() {
        let scenario = serde_json::json!({"turns": [
            {"text": "hi", "expect": [{"role": "user", "content": "Case #1: what is it?"}]}
        ]});
        assert!(asks_first(&scenario, "Case #1: what is it?"));
        assert!(!asks_first(&scenario, "Case #1: what is it now?"));
        assert!(!asks_first(&serde_json::json!({"turns": []}), "x"));
    }
}
