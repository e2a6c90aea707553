//! Agent Skills through the real binary against `kiln mock`: an agent's skills are listed to
//! its model by name and description (its system prompt), a skill's instructions come on
//! demand from `load_skill`, its file through `read_skill_file`, a path outside the skill is
//! refused, and `kiln check` reports a malformed `SKILL.md` at its line.

use crate::common::{Mock, Scripts, kiln_bin};
use serde_json::{Value, json};
use std::process::Command;

const SKILL: &str = "---
name: brewing
description: Brews tea the house way. Use when someone asks for tea.
license: MIT
---
# Brewing

Read references/ratios.md for how much leaf, then steep for 3 minutes.
";

fn project(mock: &Mock) -> Scripts {
    let scripts = Scripts::new(&[(
        "barista.rhai",
        &format!(
            r#"agent("barista").provider("openai").model("mock-model").base_url("{}/v1")
  .system("You make drinks.").skills(["skills/"]);"#,
            mock.url
        ),
    )]);
    let skill = scripts.path().join("skills/brewing");
    std::fs::create_dir_all(skill.join("references")).expect("skill folder");
    std::fs::write(skill.join("SKILL.md"), SKILL).expect("SKILL.md");
    std::fs::write(skill.join("references/ratios.md"), "2 g of leaf per 100 ml").expect("ratios");
    std::fs::write(scripts.path().join("secret.txt"), "the safe's code").expect("secret");
    scripts
}

fn scenario() -> Value {
    json!({"by_round": true, "turns": [
        {"tool_calls": [{"name": "load_skill", "args": {"name": "brewing"}}]},
        {"tool_calls": [
            {"name": "read_skill_file", "args": {"skill": "brewing", "path": "references/ratios.md"}},
            {"name": "read_skill_file", "args": {"skill": "brewing", "path": "../../secret.txt"}}
        ]},
        {"text": "Use 2 g of leaf per 100 ml and steep 3 minutes."}
    ]})
}

/// The text of every tool result a request carried.
fn tool_results(request: &Value) -> Vec<String> {
    let messages = request["body"]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect()
}

#[test]
fn an_agent_lists_its_skills_and_loads_one_when_it_needs_it() {
    let mock = Mock::start(&scenario());
    let scripts = project(&mock);
    let said = super::ask_ok(scripts.path(), "barista", "make me tea", &[]);
    assert!(said.contains("steep 3 minutes"), "{said}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "{requests:?}");
    let first = &requests[0]["body"];
    let system = first["messages"][0]["content"].to_string();
    assert!(system.contains("You make drinks."), "{system}");
    assert!(
        system.contains("brewing: Brews tea the house way. Use when someone asks for tea."),
        "the skill is listed by name and description: {system}"
    );
    assert!(
        !system.contains("steep for 3 minutes"),
        "instructions wait until loaded: {system}"
    );
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(tools, ["load_skill", "read_skill_file"], "{first}");

    let loaded = tool_results(&requests[1]);
    assert!(loaded[0].contains("steep for 3 minutes"), "{loaded:?}");
    assert!(loaded[0].contains("references/ratios.md"), "{loaded:?}");
    let read = tool_results(&requests[2]);
    assert!(read[1].contains("2 g of leaf per 100 ml"), "{read:?}");
    assert!(read[2].contains("is not a file of skill"), "{read:?}");
    assert!(!read[2].contains("safe's code"), "{read:?}");
}

/// What `kiln check` says of the project in `dir`, which must fail.
fn check(dir: &std::path::Path) -> String {
    let out = Command::new(kiln_bin())
        .args(["check", "--no-stdlib", "--scripts", "."])
        .current_dir(dir)
        .output()
        .expect("kiln check");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{said}");
    said
}

#[test]
fn kiln_check_reports_a_malformed_skill_at_its_line() {
    let mock = Mock::start(&scenario());
    let scripts = project(&mock);
    let md = scripts.path().join("skills/brewing/SKILL.md");
    std::fs::write(&md, "---\nname: brewing\ndescription: [never closed\n---\n").expect("SKILL.md");
    let said = check(scripts.path());
    assert!(said.contains("skills/brewing/SKILL.md:3:"), "{said}");
    std::fs::write(&md, "---\nname: Brewing\ndescription: x\n---\n").expect("SKILL.md");
    let said = check(scripts.path());
    assert!(
        said.contains("SKILL.md:2:1") && said.contains("lowercase"),
        "{said}"
    );
}

/// The names of the tools a request offered.
fn offered(request: &Value) -> Vec<String> {
    let tools = request["body"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    tools
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn a_tool_a_skill_declares_is_offered_once_the_skill_is_loaded_within_the_grants() {
    let mock = Mock::start(&json!({"by_round": true, "turns": [
        {"tool_calls": [{"name": "load_skill", "args": {"name": "brewing"}}]},
        {"tool_calls": [{"name": "leaf_grams", "args": {"ml": 300}}]},
        {"text": "Use 6 g of leaf."}
    ]}));
    let scripts = project(&mock);
    // The skill's code is a kiln tool in its folder; another one needs a grant the run lacks.
    std::fs::write(
        scripts.path().join("skills/brewing/measure.rhai"),
        r#"tool("leaf_grams").description("Grams of leaf for a volume").param("ml", "integer")
  .handler(|a| a.ml * 2 / 100);
tool("kettle_api").description("Boils water remotely").requires(["net:kettle.example"])
  .handler(|a| "boiled");"#,
    )
    .expect("skill tool");
    super::ask_ok(scripts.path(), "barista", "tea for 300 ml", &[]);
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "{requests:?}");
    assert_eq!(
        offered(&requests[0]),
        ["load_skill", "read_skill_file"],
        "withheld until loaded"
    );
    let loaded = tool_results(&requests[1]);
    assert!(
        loaded[0].contains("leaf_grams"),
        "load_skill names the skill's tools: {loaded:?}"
    );
    assert!(!loaded[0].contains("kettle_api"), "{loaded:?}");
    let now = offered(&requests[1]);
    assert!(now.contains(&"leaf_grams".to_string()), "{now:?}");
    assert!(
        !now.contains(&"kettle_api".to_string()),
        "outside the grants: {now:?}"
    );
    assert!(
        tool_results(&requests[2])[1].contains('6'),
        "{:?}",
        tool_results(&requests[2])
    );
}
