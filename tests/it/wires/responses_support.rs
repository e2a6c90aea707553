//! Support for the tests of `kiln serve`'s `POST /v1/responses`: OpenAI's schemas for what it
//! answers (tests/specs/openai/openapi.yaml, parsed once per test process by `crate::scripts::spec`),
//! the SSE events of a streamed answer, and a served fixture: `kiln serve` over agents that
//! talk to `kiln mock`.
//!
//! The spec's unions (`OutputItem`, `ItemResource`, `ResponseStreamEvent`) carry an OpenAPI
//! `discriminator`, which a JSON Schema validator ignores. It need not act on it: the branches
//! exclude each other by their `type` enums (and `role` for the two `message` items), so `oneOf`
//! holds for a valid item. For readable failures each event is checked against the schema its
//! `type` names, and a Response that fails has each output item checked the same way.

use crate::common::{Mock, Scripts};
use crate::doors::serve::Serve;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The schemas the Responses API's answers reach (from `Response`, `ResponseItemList`, the
/// stream events, the item unions and `ErrorResponse`, through every `$ref`), as a document.
fn responses_doc() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let all = &crate::scripts::spec::openai_spec()["components"]["schemas"];
        let mut kept = serde_json::Map::new();
        let mut todo: Vec<String> = [
            "Response",
            "ResponseItemList",
            "ResponseStreamEvent",
            "OutputItem",
            "ItemResource",
            "ErrorResponse",
            "CompactResource",
        ]
        .map(String::from)
        .to_vec();
        while let Some(name) = todo.pop() {
            if kept.contains_key(&name) {
                continue;
            }
            let schema = all.get(&name).unwrap_or_else(|| panic!("no schema {name}"));
            collect_refs(schema, &mut todo);
            kept.insert(name, schema.clone());
        }
        json!({"components": {"schemas": kept}})
    })
}

/// Pushes the schema names of every `#/components/schemas/...` reference under `v`.
fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                match (k.as_str(), child.as_str()) {
                    ("$ref", Some(r)) => {
                        let name = r.strip_prefix("#/components/schemas/");
                        out.extend(name.map(String::from));
                    }
                    _ => collect_refs(child, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|c| collect_refs(c, out)),
        _ => {}
    }
}

/// A validator for `#/components/schemas/NAME`, built once per test process.
pub fn validator(name: &str) -> Arc<jsonschema::Validator> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<jsonschema::Validator>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(v) = cache.lock().expect("cache").get(name) {
        return v.clone();
    }
    // Built outside the lock, on the part of the spec the Responses API reaches (a tenth of
    // it: a tenth of the time to index it for each schema).
    let mut root = responses_doc().clone();
    root["$ref"] = json!(format!("#/components/schemas/{name}"));
    let built = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&root)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let built = Arc::new(built);
    let mut map = cache.lock().expect("cache");
    map.entry(name.to_string()).or_insert(built).clone()
}

/// Every violation of `instance` against schema `name` (`path: message`); empty when valid.
pub fn violations(name: &str, instance: &Value) -> Vec<String> {
    validator(name)
        .iter_errors(instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// The values a schema's `type` property can take, through `allOf` and `$ref`.
fn type_values(schema: &Value, depth: usize) -> Vec<String> {
    let schemas = &crate::scripts::spec::openai_spec()["components"]["schemas"];
    let schema = match schema["$ref"].as_str() {
        Some(r) if depth < 8 => &schemas[r.rsplit('/').next().unwrap_or(r)],
        _ => schema,
    };
    let ty = &schema["properties"]["type"];
    let mut values: Vec<String> = (ty["enum"].as_array().into_iter().flatten())
        .chain(ty.get("const"))
        .filter_map(|v| v.as_str().map(String::from))
        .collect();
    for part in schema["allOf"].as_array().into_iter().flatten() {
        if depth < 8 {
            values.extend(type_values(part, depth + 1));
        }
    }
    values
}

/// A union's branches: `type` → the names of the schemas that carry it.
pub type Branches = HashMap<String, Vec<String>>;

/// The branches of union schema `union` by the `type` they carry.
pub fn branches(union: &str) -> &'static Branches {
    static CACHE: OnceLock<Mutex<HashMap<String, &'static Branches>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut cache = cache.lock().expect("cache");
    cache.entry(union.to_string()).or_insert_with(|| {
        let schema = &crate::scripts::spec::openai_spec()["components"]["schemas"][union];
        let mut map = Branches::new();
        let refs = ["oneOf", "anyOf"]
            .iter()
            .filter_map(|k| schema[*k].as_array());
        for branch in refs.flatten() {
            let Some(name) = branch["$ref"].as_str().and_then(|r| r.rsplit('/').next()) else {
                continue;
            };
            for ty in type_values(branch, 0) {
                map.entry(ty).or_default().push(name.to_string());
            }
        }
        assert!(!map.is_empty(), "{union} is not a union of typed schemas");
        Box::leak(Box::new(map))
    })
}

/// Adds why `item` fails each branch of `union` its `type` names to `errors` (for failure
/// messages); nothing when it passes them.
fn explain(union: &str, item: &Value, errors: &mut Vec<String>) {
    let ty = item["type"].as_str().unwrap_or("<no type>");
    let Some(names) = branches(union).get(ty) else {
        errors.push(format!("  {ty}: no branch of {union} has this type"));
        return;
    };
    for name in names {
        for v in violations(name, item) {
            errors.push(format!("  as {name}: {v}"));
        }
    }
}

/// The violations of a Response (with each output item's, by its type, when any).
pub fn response_violations(response: &Value) -> Vec<String> {
    let mut errors = violations("Response", response);
    if !errors.is_empty() {
        for item in response["output"].as_array().into_iter().flatten() {
            explain("OutputItem", item, &mut errors);
        }
    }
    errors
}

/// Panics with every violation when `response` is not a valid `Response`.
pub fn assert_response(response: &Value) {
    let errors = response_violations(response);
    assert!(
        errors.is_empty(),
        "Response violations:\n{}\ninstance: {response:#}",
        errors.join("\n")
    );
}

/// The violations of one streamed event: against the event schema its `type` names (the
/// union `ResponseStreamEvent` has none of that type: a violation too).
pub fn event_violations(event: &Value) -> Vec<String> {
    let ty = event["type"].as_str().unwrap_or("<no type>");
    let Some(names) = branches("ResponseStreamEvent").get(ty) else {
        return vec![format!("{ty}: not an event type of ResponseStreamEvent")];
    };
    let mut errors: Vec<String> = names.iter().flat_map(|n| violations(n, event)).collect();
    if !errors.is_empty() {
        if event.get("item").is_some() {
            explain("OutputItem", &event["item"], &mut errors);
        }
        for item in event["response"]["output"].as_array().into_iter().flatten() {
            explain("OutputItem", item, &mut errors);
        }
    }
    errors
}

/// Panics with every violation when `event` is not a valid stream event.
pub fn assert_event(event: &Value) {
    let errors = event_violations(event);
    assert!(
        errors.is_empty(),
        "ResponseStreamEvent violations:\n{}\nevent: {event:#}",
        errors.join("\n")
    );
}

/// The violations of an input-items list (with each item's, by its type, when any).
pub fn item_list_violations(list: &Value) -> Vec<String> {
    let mut errors = violations("ResponseItemList", list);
    if !errors.is_empty() {
        for item in list["data"].as_array().into_iter().flatten() {
            explain("ItemResource", item, &mut errors);
        }
    }
    errors
}

/// Panics with every violation when `list` is not a valid `ResponseItemList`.
pub fn assert_item_list(list: &Value) {
    let errors = item_list_violations(list);
    assert!(
        errors.is_empty(),
        "ResponseItemList violations:\n{}\ninstance: {list:#}",
        errors.join("\n")
    );
}

/// The events of an SSE body: `(event name, data as JSON)`, in order (a closing `[DONE]`
/// left out).
pub fn sse_events(body: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for block in body.replace("\r\n", "\n").split("\n\n") {
        let mut name = String::new();
        let mut data = String::new();
        for line in block.lines() {
            if let Some(n) = line.strip_prefix("event:") {
                name = n.trim().to_string();
            } else if let Some(d) = line.strip_prefix("data:") {
                data.push_str(d.strip_prefix(' ').unwrap_or(d));
            }
        }
        // `[DONE]` ends a chat completions stream: not an event.
        if !data.is_empty() && data != "[DONE]" {
            let v = serde_json::from_str(&data).unwrap_or_else(|e| panic!("{e}: {data}"));
            out.push((name, v));
        }
    }
    out
}

/// What the fixture's agents answer; the tests assert these came through.
pub const HELLO: &str = "Hello from kiln.";
/// `shop`'s answer after its `lookup` (a kiln tool).
pub const SHOP_ANSWER: &str = "SKU-1 costs 4.50.";
/// `clerk`'s answer after the client's `discount` function returned.
pub const CLERK_ANSWER: &str = "With the discount, SKU-1 costs 4.05.";
/// `mixed`'s answer after both tools.
pub const MIXED_ANSWER: &str = "SKU-1 costs 4.50; with 10% off it is 4.05.";

/// The scripted model turns of each agent (every conversation gets its agent's whole list).
fn scenarios() -> [(&'static str, Value); 5] {
    let lookup = json!({"tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}]});
    let discount = json!({"tool_calls": [{"name": "discount", "args": {"sku": "SKU-1"}}]});
    [
        (
            "greeter",
            json!([{"text": HELLO, "usage": {"input_tokens": 7, "output_tokens": 4}}]),
        ),
        ("shop", json!([lookup, {"text": SHOP_ANSWER}])),
        ("clerk", json!([discount, {"text": CLERK_ANSWER}])),
        ("mixed", json!([lookup, discount, {"text": MIXED_ANSWER}])),
        ("slow", json!([{"text": "too late", "delay_ms": 4000}])),
    ]
}

/// `kiln serve` over five agents, each talking to its own `kiln mock`: `greeter` answers,
/// `shop` calls its kiln tool `lookup` then answers, `clerk` calls the client's `discount`
/// then answers, `mixed` does both, `slow` answers after 4 s.
pub struct Door {
    /// The running server (its `url` is the base, without `/v1`).
    pub serve: Serve,
    mocks: HashMap<&'static str, Mock>,
    _scripts: Scripts,
}

impl Door {
    /// Starts the mocks and the server.
    pub fn start() -> Door {
        let mut mocks = HashMap::new();
        let mut src = String::from(
            r#"tool("lookup").description("Price of a SKU").param("sku", "string").handler(|a| #{ sku: a.sku, price: 4.5 });
"#,
        );
        for (agent, turns) in scenarios() {
            // The greeter answers any round (a compacted conversation goes on at a late one).
            let repeat = agent == "greeter";
            let mock = Mock::start(&json!({"by_round": true, "loop": repeat, "turns": turns}));
            let tools = if matches!(agent, "shop" | "mixed") {
                r#".tools(["lookup"])"#
            } else {
                ""
            };
            src.push_str(&format!(
                "agent(\"{agent}\").provider(\"openai\").model(\"mock-model\").base_url(\"{}/v1\"){tools};\n",
                mock.url
            ));
            mocks.insert(agent, mock);
        }
        let scripts = Scripts::new(&[("door.rhai", &src)]);
        let serve = Serve::start(scripts.path(), &scripts.path().join("kiln.db"), &[], &[]);
        Door {
            serve,
            mocks,
            _scripts: scripts,
        }
    }

    /// `http://127.0.0.1:PORT/v1/responses` + `rest`.
    pub fn url(&self, rest: &str) -> String {
        format!("{}/v1/responses{rest}", self.serve.url)
    }

    /// Every request agent `agent`'s model received.
    pub fn model_requests(&self, agent: &str) -> Vec<Value> {
        self.mocks[agent].requests()
    }
}

/// The client's function tool the fixture's `clerk` and `mixed` agents are told to call.
pub fn discount_tool() -> Value {
    json!({"type": "function", "name": "discount", "description": "The discount on a SKU",
           "strict": false, "parameters": {"type": "object", "properties": {"sku": {"type": "string"}},
                                            "required": ["sku"]}})
}
