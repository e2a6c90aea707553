//! Deferred tools (`.defer_loading([...])`) through `kiln ask` against `kiln mock`: with 122
//! tools, the deferred agent's first request offers its search instead of every schema (a
//! tenth of the size or less), a task needing two of the tools completes in both modes, and a
//! tool is offered only after a search found it.

use crate::common::{Mock, Scripts};
use serde_json::{Value, json};

/// 122 tools in `names`: 120 inventory tools, `weather_lookup` and `unit_convert` (the task
/// needs those two).
pub(crate) const TOOLS: &str = r#"let names = [];
for i in 0..120 {
    let name = `inventory_tool_${i}`;
    tool(name).description(`Looks up shelf ${i} of the warehouse inventory by aisle and bin`)
      .param("aisle", "string", "the aisle").param("bin", "integer", "the bin")
      .handler(|a| `shelf contents`);
    names.push(name);
}
tool("weather_lookup").description("Current weather of a city").param("city", "string")
  .handler(|a| #{ city: a.city, celsius: 21 });
tool("unit_convert").description("Converts a temperature to fahrenheit").param("celsius", "number")
  .handler(|a| #{ fahrenheit: a.celsius * 1.8 + 32.0 });
names.push("weather_lookup");
names.push("unit_convert");
"#;

/// What `.defer_loading` names: every one of [`TOOLS`].
pub(crate) const DEFERRED: &str =
    r#".defer_loading(["inventory_tool_*", "weather_lookup", "unit_convert"])"#;

fn project(mock: &Mock) -> Scripts {
    let url = &mock.url;
    let agents = format!(
        r#"agent("full").provider("openai").model("full-model").base_url("{url}/v1").tools(names);
agent("lean").provider("openai").model("lean-model").base_url("{url}/v1").tools(names){DEFERRED};"#
    );
    Scripts::new(&[("many.rhai", &format!("{TOOLS}{agents}"))])
}

fn scenario() -> Value {
    let call = |name: &str, args: Value| json!({"name": name, "args": args});
    json!({"by_round": true, "turns": [
        {"model": "full-model", "tool_calls": [call("weather_lookup", json!({"city": "Paris"}))]},
        {"model": "full-model", "tool_calls": [call("unit_convert", json!({"celsius": 21}))]},
        {"model": "full-model", "text": "Paris is 69.8 F."},
        {"model": "lean-model", "tool_calls": [call("search_tools", json!({"query": "weather of a city"}))]},
        {"model": "lean-model", "tool_calls": [call("weather_lookup", json!({"city": "Paris"})),
                                              call("search_tools", json!({"query": "convert temperature fahrenheit"}))]},
        {"model": "lean-model", "tool_calls": [call("unit_convert", json!({"celsius": 21}))]},
        {"model": "lean-model", "text": "Paris is 69.8 F."}
    ]})
}

fn offered(request: &Value) -> Vec<String> {
    request["body"]["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn deferred_tools_shrink_the_request_and_the_task_still_completes() {
    let mock = Mock::start(&scenario());
    let scripts = project(&mock);
    for agent in ["full", "lean"] {
        let said = super::ask_ok(scripts.path(), agent, "How warm is Paris in F?", &[]);
        assert!(said.contains("69.8"), "{agent}: {said}");
    }
    let requests = mock.requests();
    let of = |model: &str| -> Vec<&Value> {
        requests
            .iter()
            .filter(|r| r["body"]["model"] == model)
            .collect()
    };
    let (full, lean) = (of("full-model"), of("lean-model"));
    assert_eq!((full.len(), lean.len()), (3, 4));
    let size = |r: &Value| r["body"].to_string().len();
    assert_eq!(offered(full[0]).len(), 122);
    assert_eq!(offered(lean[0]), ["search_tools"]);
    assert!(
        size(lean[0]) * 10 <= size(full[0]),
        "the deferred request is {} bytes, the full one {}",
        size(lean[0]),
        size(full[0])
    );
    assert!(
        offered(lean[1]).contains(&"weather_lookup".to_string()),
        "{:?}",
        offered(lean[1])
    );
    assert!(
        !offered(lean[1]).contains(&"unit_convert".to_string()),
        "not found yet"
    );
    assert!(
        offered(lean[2]).contains(&"unit_convert".to_string()),
        "{:?}",
        offered(lean[2])
    );
    // The tools' results reached the model in both modes.
    let last_results = |r: &Value| r["body"]["messages"].to_string();
    assert!(last_results(full[2]).contains("69.8"));
    assert!(last_results(lean[3]).contains("69.8"));
    println!(
        "request bytes: full {} / deferred {}",
        size(full[0]),
        size(lean[0])
    );
}
