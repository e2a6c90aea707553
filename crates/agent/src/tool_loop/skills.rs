//! An agent's Agent Skills as tools of its model: `load_skill` gives a skill's instructions,
//! the names of its files and of the tools its folder declares, `read_skill_file` one of
//! those files (inside the skill's folder only, through kiln-registry's `read_in`). Validated
//! and run like any tool. No file of a skill runs: a skill's code is a kiln tool declared by a
//! script in its folder, offered once the skill is loaded, under the run's grants.

use kiln_core::context::CallContext;
use kiln_core::model::Message;
use kiln_core::tool::Tool;
use kiln_registry::Registry;
use kiln_registry::agent_spec::skills::{LOAD_SKILL, READ_SKILL_FILE, Skill, named, read_in};
use kiln_registry::native::NativeTool;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;

/// The skills this run's model loaded: the names its `load_skill` calls gave.
pub(super) fn loaded(messages: &[Message]) -> Vec<String> {
    let calls = messages.iter().flat_map(|m| match m {
        Message::Assistant { tool_calls, .. } => tool_calls.as_slice(),
        _ => &[],
    });
    calls
        .filter(|c| c.name == LOAD_SKILL)
        .filter_map(|c| c.args.to_value()["name"].as_str().map(str::to_string))
        .collect()
}

/// The tools, within the run's grants, that scripts inside the skills' folders declare, each
/// with its skill's name.
pub(super) fn declared_tools(
    registry: &Registry,
    skills: &[Arc<Skill>],
    ctx: &CallContext,
) -> Vec<(String, Arc<Tool>)> {
    if skills.is_empty() {
        return Vec::new();
    }
    let folders: Vec<(&str, std::path::PathBuf)> = skills
        .iter()
        .filter_map(|s| Some((s.name.as_str(), s.dir.canonicalize().ok()?)))
        .collect();
    registry
        .available(None, ctx)
        .into_iter()
        .filter_map(|t| {
            let file = std::path::Path::new(&t.loc.path).canonicalize().ok()?;
            let (skill, _) = folders.iter().find(|(_, dir)| file.starts_with(dir))?;
            Some((skill.to_string(), t))
        })
        .collect()
}

/// The names of the declared tools whose skill is not loaded (`None`: every skill is).
pub(super) fn withheld(
    declared: &[(String, Arc<Tool>)],
    loaded: Option<&[String]>,
) -> HashSet<String> {
    let Some(loaded) = loaded else {
        return HashSet::new();
    };
    declared
        .iter()
        .filter(|(skill, _)| !loaded.contains(skill))
        .map(|(_, t)| t.name.clone())
        .collect()
}

/// The two tools an agent with skills offers its model: `load_skill` (which names the tools a
/// skill's folder declares) and `read_skill_file`.
pub(super) fn tools(skills: &[Arc<Skill>], declared: &[(String, Arc<Tool>)]) -> Vec<Arc<Tool>> {
    if skills.is_empty() {
        return Vec::new();
    }
    let tools_of: Vec<(String, String)> = declared
        .iter()
        .map(|(skill, t)| (skill.clone(), t.name.clone()))
        .collect();
    let all: Arc<Vec<Arc<Skill>>> = Arc::new(skills.to_vec());
    let names: Vec<Value> = skills.iter().map(|s| json!(s.name)).collect();
    let pick = json!({"enum": names, "description": "the skill's name"});
    let (load_from, read_from) = (all.clone(), all);
    let load = NativeTool::new(
        LOAD_SKILL,
        move |args: Value, _ctx: &kiln_core::context::CallContext| {
            let found = named(&load_from, args["name"].as_str().unwrap_or_default()).map(|s| {
                let tools: Vec<&str> = (tools_of.iter())
                    .filter(|(skill, _)| *skill == s.name)
                    .map(|(_, t)| t.as_str())
                    .collect();
                json!({"name": s.name, "instructions": s.instructions, "files": s.files, "tools": tools})
            });
            async move { found }
        },
    )
    .description("Gives a skill's instructions and the names of its files")
    .param("name", "string", pick.clone());
    let read = NativeTool::new(
        READ_SKILL_FILE,
        move |args: Value, _ctx: &kiln_core::context::CallContext| {
            let path = args["path"].as_str().unwrap_or_default().to_string();
            let text = named(&read_from, args["skill"].as_str().unwrap_or_default())
                .and_then(|s| read_in(s, &path))
                .map(Value::String);
            async move { text }
        },
    )
    .description("Reads a file of a skill (a path its instructions or load_skill name)")
    .param("skill", "string", pick)
    .param(
        "path",
        "string",
        json!({"description": "the file's path inside the skill"}),
    );
    [load, read]
        .into_iter()
        .filter_map(|t| t.into_tool().ok().map(Arc::new))
        .collect()
}
