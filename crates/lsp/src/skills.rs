//! Agent Skills in completion. Inside `.skills(["|"])` the folders beside the script that an
//! agent can name there: each folder holding a `SKILL.md` (a skill) and each folder of such
//! folders, with the skills' descriptions; where a scripted model calls `load_skill` or
//! `read_skill_file` (`#{ name: "load_skill", args: #{ name: "|" } }`), the skills' names.
//! Hovering such a string shows the skills it names. The folders are read from disk when
//! asked, within bounds (depth, entries, file size).

use kiln_registry::Registry;
use serde::Deserialize;
use std::path::Path;

/// How deep below the script's folder skills are looked for.
const MAX_DEPTH: usize = 4;
/// How many folder entries one completion reads at most.
const MAX_ENTRIES: usize = 2000;
/// The largest `SKILL.md` whose front matter is read.
const MAX_SKILL_MD: u64 = 512 << 10;

/// One skill: its name and description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// The front matter's `name` (else the folder's name).
    pub name: String,
    /// The front matter's `description` (empty when it has none).
    pub description: String,
}

/// A folder `.skills([...])` can name: the path as written there (relative to the script's
/// folder, `/`-separated) and the skills it gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Folder {
    /// The path relative to the script's folder.
    pub path: String,
    /// One skill when the folder holds a `SKILL.md`, else its subfolders' skills.
    pub skills: Vec<Skill>,
    /// Whether the folder is a skill itself (holds a `SKILL.md`).
    pub is_skill: bool,
}

/// The front matter's keys the completion shows (other keys are the loader's to check).
#[derive(Deserialize)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
}

/// The skill in `dir`, when it holds a readable `SKILL.md`.
fn read(dir: &Path) -> Option<Skill> {
    let md = dir.join("SKILL.md");
    if std::fs::metadata(&md).ok()?.len() > MAX_SKILL_MD {
        return None;
    }
    let text = std::fs::read_to_string(&md).ok()?;
    let folder = dir.file_name()?.to_string_lossy().to_string();
    let front = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .and_then(|rest| rest.find("\n---").map(|end| &rest[..end + 1]))
        .and_then(|yaml| serde_norway::from_str::<FrontMatter>(yaml).ok());
    let (name, description) = front.map_or((None, None), |f| (f.name, f.description));
    Some(Skill {
        name: name.unwrap_or(folder),
        description: description.unwrap_or_default().trim().to_string(),
    })
}

/// The folders under `root` (not `root` itself) that hold a skill or skills, sorted by path.
pub fn folders(root: &Path) -> Vec<Folder> {
    let mut out = Vec::new();
    let mut entries = 0;
    let mut queue = vec![(root.to_path_buf(), String::new(), 0)];
    while let Some((dir, rel, depth)) = queue.pop() {
        let Ok(read_dir) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut skills = Vec::new();
        for entry in read_dir.flatten() {
            entries += 1;
            if entries > MAX_ENTRIES {
                break;
            }
            let name = entry.file_name().to_string_lossy().to_string();
            let path = entry.path();
            if name.starts_with('.')
                || ["target", "node_modules"].contains(&name.as_str())
                || !path.is_dir()
            {
                continue;
            }
            let sub = match rel.is_empty() {
                true => name,
                false => format!("{rel}/{name}"),
            };
            match read(&path) {
                Some(skill) => {
                    skills.push(skill.clone());
                    out.push(Folder {
                        path: sub,
                        skills: vec![skill],
                        is_skill: true,
                    });
                }
                None if depth + 1 < MAX_DEPTH => queue.push((path, sub, depth + 1)),
                None => {}
            }
        }
        if !rel.is_empty() && !skills.is_empty() {
            skills.sort_by(|a, b| a.name.cmp(&b.name));
            out.push(Folder {
                path: rel,
                skills,
                is_skill: false,
            });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// Whether the string starting at byte `start` of `text` names a skill: the value of `name`
/// (or `skill`) in the `args` of a scripted `load_skill` / `read_skill_file` call.
pub fn names_a_skill(text: &str, start: usize) -> bool {
    let before = text[..start.saturating_sub(1).min(text.len())].trim_end();
    let Some(key) = before.strip_suffix(':') else {
        return false;
    };
    let key = key.trim_end();
    if !(key.ends_with("name") || key.ends_with("skill")) {
        return false;
    }
    // The call's map: from its last `#{` before the `args` map, at most a few lines back.
    let window_start = key.len().saturating_sub(300);
    let window = key.get(window_start..).unwrap_or(key);
    let Some(args) = window.rfind("args") else {
        return false;
    };
    let call = &window[..args];
    let map = call.rfind("#{").map_or(call, |m| &call[m..]);
    map.contains("\"load_skill\"") || map.contains("\"read_skill_file\"")
}

/// The skills the scripts' agents loaded (the registries) and those beside the script, by
/// name, once each.
pub fn known(regs: &[&Registry], dir: Option<&Path>) -> Vec<Skill> {
    let mut out: Vec<Skill> = regs
        .iter()
        .flat_map(|r| r.agents())
        .flat_map(|a| a.skills.iter())
        .map(|s| Skill {
            name: s.name.clone(),
            description: s.description.clone(),
        })
        .collect();
    if let Some(dir) = dir {
        out.extend(
            folders(dir)
                .into_iter()
                .filter(|f| f.is_skill)
                .flat_map(|f| f.skills),
        );
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|s| seen.insert(s.name.clone()));
    out
}

/// The skill or skills the folder `rel` (as `.skills([...])` names it) gives.
fn folder(dir: &Path, rel: &str) -> Option<Folder> {
    let rel = rel.trim_start_matches("./").trim_end_matches('/');
    let inside = Path::new(rel)
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    if rel.is_empty() || !inside {
        return None;
    }
    let path = dir.join(rel);
    if let Some(skill) = read(&path) {
        return Some(Folder {
            path: rel.to_string(),
            skills: vec![skill],
            is_skill: true,
        });
    }
    let mut skills: Vec<Skill> = std::fs::read_dir(&path)
        .ok()?
        .flatten()
        .take(MAX_ENTRIES)
        .filter_map(|e| read(&e.path()))
        .collect();
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    (!skills.is_empty()).then(|| Folder {
        path: rel.to_string(),
        skills,
        is_skill: false,
    })
}

/// Hover over a string naming skills (`token`, starting at byte `start` of `text`, a script
/// in folder `dir`): a `.skills([...])` folder's skills, or a scripted `load_skill`'s skill.
pub fn hover(
    text: &str,
    start: usize,
    token: &str,
    regs: &[&Registry],
    dir: Option<&Path>,
) -> Option<String> {
    if names_a_skill(text, start) {
        let skill = known(regs, dir).into_iter().find(|s| s.name == token)?;
        return Some(format!(
            "**skill** `{}`\n\n{}",
            skill.name, skill.description
        ));
    }
    if crate::scan::context(text, start).call() != Some(("skills", 0)) {
        return None;
    }
    let found = folder(dir?, token)?;
    let lines: Vec<String> = found
        .skills
        .iter()
        .map(|s| format!("- **{}**: {}", s.name, s.description))
        .collect();
    let head = match found.is_skill {
        true => "**skill**".to_string(),
        false => format!("**folder of {} skills**", found.skills.len()),
    };
    Some(format!("{head}\n\n{}", lines.join("\n")))
}

#[cfg(test)]
mod tests {
    use crate::skills::{Skill, folders, names_a_skill};

    fn write(root: &std::path::Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    #[test]
    fn folders_holding_skills_and_folders_of_skills_are_found() {
        let dir = tempfile::tempdir().expect("tempdir");
        let md =
            |name: &str, d: &str| format!("---\nname: {name}\ndescription: {d}\n---\nDo it.\n");
        write(
            dir.path(),
            "skills/pdf-forms/SKILL.md",
            &md("pdf-forms", "Fills PDF forms"),
        );
        write(
            dir.path(),
            "skills/ratios/SKILL.md",
            &md("ratios", "Reads financial ratios"),
        );
        write(
            dir.path(),
            "skills/ratios/references/SKILL.md",
            &md("no", "inside a skill"),
        );
        write(dir.path(), "other/notes.md", "not a skill");
        write(dir.path(), ".hidden/x/SKILL.md", &md("x", "hidden"));
        let found = folders(dir.path());
        let paths: Vec<(&str, bool)> = found
            .iter()
            .map(|f| (f.path.as_str(), f.is_skill))
            .collect();
        assert_eq!(
            paths,
            [
                ("skills", false),
                ("skills/pdf-forms", true),
                ("skills/ratios", true)
            ]
        );
        assert_eq!(
            found[1].skills,
            [Skill {
                name: "pdf-forms".into(),
                description: "Fills PDF forms".into()
            }]
        );
        assert_eq!(found[0].skills.len(), 2);
    }

    #[test]
    fn a_scripted_load_skill_call_names_a_skill() {
        let yes = "#{ tool_calls: [#{ name: \"load_skill\", args: #{ name: \"";
        assert!(names_a_skill(yes, yes.len()));
        let file = "#{ name: \"read_skill_file\",\n  args: #{ skill: \"";
        assert!(names_a_skill(file, file.len()));
        let other = "#{ name: \"search\", args: #{ name: \"";
        assert!(!names_a_skill(other, other.len()));
        let plain = "agent(\"a\").description(\"";
        assert!(!names_a_skill(plain, plain.len()));
    }
}
