//! An agent's `.skills([...])` at load: each folder named (beside the script, inside its
//! folder) is a skill when it holds a `SKILL.md`, or a folder of skills, one per subfolder
//! holding one. Each `SKILL.md` is read now (watched like an import, so editing it reloads the
//! script) and checked as the Agent Skills format asks: YAML front matter with `name` (the
//! folder's name) and `description`, then the instructions. A problem is an error at the
//! `SKILL.md`'s line and column.

use kiln_core::error::{LoadError, SourceLoc};
use kiln_registry::agent_spec::skills::{Skill, valid_skill_name};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// The largest `SKILL.md` read.
const MAX_SKILL_MD_BYTES: u64 = 512 << 10;

/// How many files of a skill are listed to the model.
const MAX_LISTED_FILES: usize = 200;

/// The front matter, as the format defines it (other keys are an error: a typo would
/// otherwise go unseen).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
    #[allow(dead_code)]
    license: Option<String>,
    compatibility: Option<String>,
    #[allow(dead_code)]
    metadata: Option<BTreeMap<String, String>>,
    #[serde(rename = "allowed-tools")]
    #[allow(dead_code)]
    allowed_tools: Option<String>,
}

/// What loading an agent's skills found: the skills, the `SKILL.md` files to watch, and the
/// problems.
#[derive(Default)]
pub(crate) struct Loaded {
    pub(crate) skills: Vec<Arc<Skill>>,
    pub(crate) watched: Vec<PathBuf>,
    pub(crate) errors: Vec<LoadError>,
}

/// Loads the skills of `folders` (as written, each with where it was written), relative to
/// the script at `script`.
pub(crate) fn load(script: &str, folders: &[(String, SourceLoc)]) -> Loaded {
    let mut out = Loaded::default();
    let base = Path::new(script).parent().unwrap_or(Path::new(""));
    for (folder, at) in folders {
        let inside = Path::new(folder)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        let dir = base.join(folder);
        if folder.is_empty() || !inside || !dir.is_dir() {
            out.errors.push(LoadError::at(
                at.clone(),
                format!(".skills(...): \"{folder}\" must be a folder inside the script's folder (no .., not absolute)"),
            ));
            continue;
        }
        for skill_dir in skill_dirs(&dir) {
            match read_skill(&skill_dir) {
                Ok(skill) if out.skills.iter().any(|s| s.name == skill.name) => {
                    out.errors.push(LoadError::at(
                        skill.loc.clone(),
                        format!("skill \"{}\" is given twice", skill.name),
                    ));
                }
                Ok(skill) => out.skills.push(Arc::new(skill)),
                Err(e) => out.errors.push(e),
            }
            let md = skill_dir.join("SKILL.md");
            out.watched
                .push(crate::imports::canonical(&md).unwrap_or(md));
        }
    }
    out
}

/// `dir` itself when it holds a `SKILL.md`, else its subfolders that do (sorted).
fn skill_dirs(dir: &Path) -> Vec<PathBuf> {
    if dir.join("SKILL.md").is_file() {
        return vec![dir.to_path_buf()];
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.join("SKILL.md").is_file())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// Reads and checks one skill's `SKILL.md`.
fn read_skill(dir: &Path) -> Result<Skill, LoadError> {
    let md = dir.join("SKILL.md");
    let shown = md.display().to_string();
    let at =
        |line: usize, col: usize, m: String| LoadError::at(SourceLoc::new(&shown, line, col), m);
    let size = std::fs::metadata(&md).map(|m| m.len()).unwrap_or(0);
    if size > MAX_SKILL_MD_BYTES {
        return Err(at(
            1,
            1,
            format!("SKILL.md holds {size} bytes; at most {MAX_SKILL_MD_BYTES}"),
        ));
    }
    let text =
        std::fs::read_to_string(&md).map_err(|e| at(1, 1, format!("cannot read SKILL.md: {e}")))?;
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Err(at(
            1,
            1,
            "SKILL.md starts with YAML front matter between --- lines (name, description)".into(),
        ));
    };
    let Some(end) = rest.find("\n---") else {
        return Err(at(1, 1, "the front matter has no closing --- line".into()));
    };
    let (yaml, body) = (&rest[..end + 1], &rest[end + 4..]);
    let front: FrontMatter = serde_norway::from_str(yaml).map_err(|e| {
        let (line, col) = e.location().map_or((1, 1), |l| (l.line(), l.column()));
        // The front matter starts on the file's second line.
        at(line + 1, col, format!("front matter: {e}"))
    })?;
    let line_of = |key: &str| {
        yaml.lines()
            .position(|l| l.starts_with(&format!("{key}:")))
            .map_or(1, |i| i + 2)
    };
    let folder = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let name = front.name.unwrap_or_default();
    if !valid_skill_name(&name) {
        return Err(at(
            line_of("name"),
            1,
            format!(
                "name \"{name}\": 1 to 64 lowercase letters, digits and single hyphens, not first or last"
            ),
        ));
    }
    if name != folder {
        return Err(at(
            line_of("name"),
            1,
            format!("name \"{name}\" must be the skill's folder's name, \"{folder}\""),
        ));
    }
    let description = front.description.unwrap_or_default().trim().to_string();
    if description.is_empty() || description.chars().count() > 1024 {
        return Err(at(
            line_of("description"),
            1,
            "description: 1 to 1024 characters saying what the skill does and when to use it"
                .into(),
        ));
    }
    if front.compatibility.is_some_and(|c| c.chars().count() > 500) {
        return Err(at(
            line_of("compatibility"),
            1,
            "compatibility: at most 500 characters".into(),
        ));
    }
    Ok(Skill {
        name,
        description,
        dir: dir.to_path_buf(),
        instructions: body
            .trim_start_matches(['-', '\r', '\n'])
            .trim()
            .to_string(),
        files: files_of(dir),
        loc: SourceLoc::new(&shown, 1, 1),
    })
}

/// The files of a skill's folder but its `SKILL.md`, relative and sorted (at most
/// [`MAX_LISTED_FILES`]; links are not followed).
fn files_of(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file()
                && path != dir.join("SKILL.md")
                && let Ok(rel) = path.strip_prefix(dir)
            {
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    out.truncate(MAX_LISTED_FILES);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(files: &[(&str, &str)]) -> (tempfile::TempDir, Result<Skill, LoadError>) {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("brewing");
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
            std::fs::write(path, text).expect("file");
        }
        let read = read_skill(&dir);
        (root, read)
    }

    #[test]
    fn a_skill_reads_its_name_description_instructions_and_files() {
        let md = "---\nname: brewing\ndescription: Brews tea. Use when asked for tea.\nmetadata:\n  author: kiln\n---\n# Brewing\nSteep 3 minutes.\n";
        let (_root, read) = skill(&[("SKILL.md", md), ("references/ratios.md", "1:16")]);
        let s = read.expect("a skill");
        assert_eq!(s.name, "brewing");
        assert_eq!(s.description, "Brews tea. Use when asked for tea.");
        assert_eq!(s.instructions, "# Brewing\nSteep 3 minutes.");
        assert_eq!(s.files, ["references/ratios.md"]);
    }

    #[test]
    fn a_malformed_skill_is_reported_at_its_line() {
        let cases = [
            ("# no front matter\n", 1, "starts with YAML front matter"),
            ("---\nname: brewing\ndescription: x\n", 1, "no closing ---"),
            (
                "---\nname: brewing\ndescription: [unclosed\n---\n",
                3,
                "front matter:",
            ),
            ("---\nname: Brewing\ndescription: x\n---\n", 2, "lowercase"),
            ("---\nname: tea\ndescription: x\n---\n", 2, "folder's name"),
            ("---\nname: brewing\n---\n", 1, "description: 1 to 1024"),
            (
                "---\nname: brewing\ndescription: x\ncolour: red\n---\n",
                4,
                "unknown field",
            ),
        ];
        for (md, line, said) in cases {
            let (_root, read) = skill(&[("SKILL.md", md)]);
            let e = read.expect_err(md);
            assert!(e.message.contains(said), "{md}: {}", e.message);
            assert_eq!(e.loc.line, line, "{md}: {}", e.message);
        }
    }
}
