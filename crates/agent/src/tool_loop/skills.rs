//! An agent's Agent Skills as tools of its model: `load_skill` gives a skill's instructions and
//! the names of its files, `read_skill_file` one of those files (inside the skill's folder
//! only, through kiln-registry's `read_in`). Validated and run like any tool.

use kiln_core::tool::Tool;
use kiln_registry::agent_spec::skills::{LOAD_SKILL, READ_SKILL_FILE, Skill, named, read_in};
use kiln_registry::native::NativeTool;
use serde_json::{Value, json};
use std::sync::Arc;

/// The two tools an agent with skills offers its model: `load_skill` and `read_skill_file`.
pub(super) fn tools(skills: &[Arc<Skill>]) -> Vec<Arc<Tool>> {
    if skills.is_empty() {
        return Vec::new();
    }
    let all: Arc<Vec<Arc<Skill>>> = Arc::new(skills.to_vec());
    let names: Vec<Value> = skills.iter().map(|s| json!(s.name)).collect();
    let pick = json!({"enum": names, "description": "the skill's name"});
    let (load_from, read_from) = (all.clone(), all);
    let load = NativeTool::new(
        LOAD_SKILL,
        move |args: Value, _ctx: &kiln_core::context::CallContext| {
            let found = named(&load_from, args["name"].as_str().unwrap_or_default())
                .map(|s| json!({"name": s.name, "instructions": s.instructions, "files": s.files}));
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
