//! `run_agent(name, prompt, opts)` in tests: the agent runs through the real loop against an
//! in-process `kiln mock` serving the scripted turns (`opts.model`) or a scenario file
//! (`opts.scenario`); with `strict: true` the requests the replay sent must match the
//! recorded ones (`expect` of each turn), else the test fails naming the first difference.

use super::api::{RhaiResult, context_of, fail, grants_of};
use super::{diff, env};
use kiln_agent::{RunErrorKind, RunOptions, RunReport, connect::ProviderOverrides};
use kiln_mock::scenario::{Scenario, Turn};
use kiln_providers::Message;
use kiln_script::convert;
use rhai::{Dynamic, EvalAltResult, Map};
use serde_json::{Value, json};
use std::path::Path;

/// The scripted model of a run, if the options give one.
fn scenario_of(opts: &Map, dir: &Path) -> RhaiResult<Option<Scenario>> {
    if let Some(turns) = opts.get("model") {
        let v = convert::to_json(turns).map_err(|e| fail(format!("run_agent: opts.model: {e}")))?;
        let turns: Vec<Turn> = serde_json::from_value(v).map_err(|e| {
            fail(format!(
                "run_agent: opts.model must be a list of kiln mock turns (#{{ text }}, #{{ tool_calls: [#{{ name, args }}] }}, #{{ code }} for a code-mode agent, #{{ fault: #{{ status }} }}): {e}"
            ))
        })?;
        return Ok(Some(Scenario {
            turns,
            require_auth: false,
            ..Scenario::default()
        }));
    }
    let Some(file) = opts.get("scenario") else {
        return Ok(None);
    };
    let path = dir.join(file.to_string());
    let text = std::fs::read_to_string(&path)
        .map_err(|e| fail(format!("run_agent: cannot read {}: {e}", path.display())))?;
    let mut scenario: Scenario = serde_json::from_str(&text)
        .map_err(|e| fail(format!("run_agent: {}: {e}", path.display())))?;
    scenario.require_auth = false;
    Ok(Some(scenario))
}

/// A stable name for how a run failed (what `assert_err(run, kind)` compares).
fn kind_name(kind: &RunErrorKind) -> &'static str {
    kind.name()
}

/// The map a test sees: answer, tool calls with results, rounds, stop reason, usage, error.
fn result_map(report: &RunReport, error: Option<&RunErrorKind>) -> Value {
    let calls: Vec<Value> = report
        .tool_calls
        .iter()
        .map(|c| {
            let mut v =
                json!({"round": c.round, "name": c.name, "args": c.args, "is_error": c.is_error});
            if let Value::Object(o) = c.outcome.to_json() {
                for (k, x) in o {
                    v[k] = x;
                }
            }
            v
        })
        .collect();
    json!({
        "answer": report.answer,
        "tool_calls": calls,
        "rounds": report.rounds,
        "stop_reason": report.stop_reason,
        "usage": report.usage,
        "messages": report.messages,
        "error": error.map(|k| json!({"kind": kind_name(k), "message": k.to_string()})),
    })
}

/// A logged or replayed message as strict replays compare it: call ids differ between
/// providers and runs, so they are left out.
pub fn comparable_message(m: &Value) -> Value {
    let mut m = m.clone();
    if let Some(results) = m.get_mut("results").and_then(Value::as_array_mut) {
        for r in results {
            if let Value::Object(o) = r {
                o.remove("call_id");
            }
        }
    }
    if let Some(calls) = m.get_mut("tool_calls").and_then(Value::as_array_mut) {
        for c in calls {
            if let Value::Object(o) = c {
                o.remove("id");
            }
        }
    }
    m
}

/// The messages each request added since the previous reply, request by request.
pub fn request_deltas(messages: &[Value]) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    let mut pending = Vec::new();
    for m in messages {
        if m["role"] == "assistant" {
            out.push(std::mem::take(&mut pending));
        } else {
            pending.push(comparable_message(m));
        }
    }
    out
}

/// Compares a replay with the recording: the first request whose new messages differ.
fn strict_check(scenario: &Scenario, report: &RunReport) -> Result<(), String> {
    let messages: Vec<Value> = report
        .messages
        .iter()
        .map(|m: &Message| serde_json::to_value(m).unwrap_or(Value::Null))
        .collect();
    let sent = request_deltas(&messages);
    for (i, turn) in scenario.turns.iter().enumerate() {
        let Some(expected) = &turn.expect else {
            continue;
        };
        let Some(actual) = sent.get(i) else {
            return Err(format!(
                "strict replay: the recording has a model request {} but the replay made only {}",
                i + 1,
                sent.len()
            ));
        };
        let actual = Value::Array(actual.clone());
        let expected = Value::Array(
            expected
                .as_array()
                .map(|a| a.iter().map(comparable_message).collect())
                .unwrap_or_default(),
        );
        if let Some(d) = diff::first_difference(&expected, &actual) {
            let what = describe_spot(&expected, &actual, &d.path);
            return Err(format!(
                "strict replay: model request {} differs from the recording ({what})\nfirst difference {d}\n{}",
                i + 1,
                diff::explain(&expected, &actual)
                    .lines()
                    .skip(1)
                    .collect::<Vec<_>>()
                    .join("\n")
            ));
        }
    }
    for (i, turn) in scenario.turns.iter().enumerate() {
        if let Some(expected) = &turn.expect_calls {
            nested_check(i, expected, report)?;
        }
    }
    if sent.len() > scenario.turns.len() {
        return Err(format!(
            "strict replay: the replay made {} model requests; the recording has {}",
            sent.len(),
            scenario.turns.len()
        ));
    }
    Ok(())
}

/// Compares the calls the programs of reply `i` made with the recording's.
fn nested_check(i: usize, expected: &Value, report: &RunReport) -> Result<(), String> {
    let made: Vec<Value> = report
        .tool_calls
        .iter()
        .filter(|c| c.round as usize == i + 1)
        .flat_map(|c| c.nested.iter())
        .map(|c| serde_json::json!({"tool": c.name, "args": c.args}))
        .collect();
    let actual = Value::Array(made);
    match diff::first_difference(expected, &actual) {
        None => Ok(()),
        Some(d) => Err(format!(
            "strict replay: the calls made by the program of model reply {} differ from the recording's\nfirst difference {d}\n{}",
            i + 1,
            diff::explain(expected, &actual)
                .lines()
                .skip(1)
                .collect::<Vec<_>>()
                .join("\n")
        )),
    }
}

/// "the result of tool \"x\"" or "the user message", for the message a path points into.
fn describe_spot(expected: &Value, actual: &Value, path: &str) -> String {
    let index = path
        .strip_prefix("$[")
        .and_then(|r| r.split(']').next())
        .and_then(|n| n.parse::<usize>().ok());
    let Some(i) = index else {
        return "its messages".into();
    };
    let m = expected.get(i).or_else(|| actual.get(i));
    match m {
        Some(m) if m["role"] == "tool" => {
            let names: Vec<&str> = m["results"]
                .as_array()
                .map(|r| r.iter().filter_map(|x| x["name"].as_str()).collect())
                .unwrap_or_default();
            format!("the result of tool \"{}\"", names.join("\", \""))
        }
        Some(m) => format!("the {} message", m["role"].as_str().unwrap_or("?")),
        None => "its messages".into(),
    }
}

/// `run_agent(name, prompt, opts)`.
pub fn run_agent(name: &str, prompt: &str, opts: Map) -> RhaiResult<Dynamic> {
    let env = env::current("run_agent").map_err(fail)?;
    let agent = env
        .host
        .agent(name)
        .map_err(|e| fail(format!("run_agent: {e}")))?;
    let scenario = scenario_of(&opts, &env.dir)?;
    if scenario.is_none() && agent.provider != kiln_registry::agent_spec::ProviderKind::Script {
        return Err(fail(format!(
            "run_agent(\"{name}\"): agent \"{name}\" uses provider \"{}\"; tests never reach a real model: pass #{{ model: [turns...] }} or #{{ scenario: \"file.json\" }}",
            agent.provider
        )));
    }
    let strict = opts.get("strict").and_then(|s| s.as_bool().ok()) == Some(true);
    let mut run_opts = RunOptions {
        grants: grants_of("run_agent", &opts)?,
        context: context_of("run_agent", &opts)?,
        actor_id: opts.get("actor").map(|a| a.to_string()),
        timeout: Some(env.remaining()),
        ..RunOptions::default()
    };
    if let Some(n) = opts.get("max_iterations").and_then(|n| n.as_int().ok()) {
        run_opts.max_iterations = Some(n.clamp(0, u32::MAX as i64) as u32);
    }
    let host = env.host.clone();
    let (agent_name, prompt_text) = (name.to_string(), prompt.to_string());
    let served = scenario.clone();
    let task = env.runtime.spawn(async move {
        let mut server = None;
        if let Some(s) = served {
            let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
            let (local, serve) = kiln_mock::bind(s, addr)
                .await
                .map_err(|e| format!("run_agent: cannot start the scripted model: {e}"))?;
            server = Some(tokio::spawn(serve));
            run_opts.overrides = ProviderOverrides {
                provider: Some("openai".into()),
                base_url: Some(format!("http://{local}/v1")),
                ..ProviderOverrides::default()
            };
        }
        let result = kiln_agent::run(host.as_ref(), &agent_name, &prompt_text, run_opts).await;
        if let Some(s) = server {
            s.abort();
        }
        Ok::<_, String>(result)
    });
    let result = env
        .runtime
        .block_on(task)
        .map_err(|e| fail(format!("run_agent: the run stopped: {e}")))?
        .map_err(fail)?;
    let (report, error) = match &result {
        Ok(r) => (r, None),
        Err(e) => (e.report.as_ref(), Some(&e.kind)),
    };
    // The test's own deadline ended the run: stop the test there, as a hung script would be.
    if matches!(error, Some(RunErrorKind::Deadline)) && env.remaining().is_zero() {
        return Err(EvalAltResult::ErrorTerminated(
            kiln_script::sandbox::DEADLINE_TOKEN.into(),
            rhai::Position::NONE,
        )
        .into());
    }
    if strict && let Some(s) = &scenario {
        strict_check(s, report).map_err(fail)?;
    }
    Ok(convert::to_dynamic(&result_map(report, error)))
}

/// Registers `run_agent(name, prompt[, opts])`.
pub fn register(engine: &mut rhai::Engine) {
    engine.register_fn("run_agent", |name: &str, prompt: &str| {
        run_agent(name, prompt, Map::new())
    });
    engine.register_fn("run_agent", run_agent);
}
