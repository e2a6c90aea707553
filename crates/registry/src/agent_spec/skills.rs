//! Agent Skills (the open format: a folder with a `SKILL.md` whose YAML front matter names the
//! skill and says when to use it). An agent's skills are listed to its model by name and
//! description only; `load_skill(name)` gives a skill's instructions and the files beside
//! them, and `read_skill_file(skill, path)` reads one of those files — a path inside that
//! skill's folder, nothing else (the tools are kiln-agent's). No file of a skill runs.

use kiln_core::error::SourceLoc;
use kiln_core::failure::{FailureKind, ToolFailure};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// The tool that gives a skill's instructions.
pub const LOAD_SKILL: &str = "load_skill";

/// The tool that reads a file of a skill.
pub const READ_SKILL_FILE: &str = "read_skill_file";

/// The largest skill file `read_skill_file` gives.
pub const MAX_SKILL_FILE_BYTES: u64 = 256 << 10;

/// One skill, as its `SKILL.md` declares it.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// `name`: lowercase letters, digits and single hyphens, the folder's name.
    pub name: String,
    /// `description`: what it does and when to use it (what the model reads up front).
    pub description: String,
    /// The skill's folder.
    pub dir: PathBuf,
    /// The instructions: `SKILL.md` after its front matter.
    pub instructions: String,
    /// The other files of the folder, relative to it (`references/ratios.md`).
    pub files: Vec<String>,
    /// Where its `SKILL.md` is.
    pub loc: SourceLoc,
}

/// Whether `name` is a skill name as the format allows: 1–64 lowercase letters, digits and
/// hyphens, no hyphen first, last or twice in a row.
pub fn valid_skill_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// What the model is told up front: each skill's name and description, and how to load one.
pub fn listing(skills: &[Arc<Skill>]) -> String {
    let mut out = format!(
        "Skills you can use (call {LOAD_SKILL} with a skill's name for its instructions when a task needs it; {READ_SKILL_FILE} reads the files it names):"
    );
    for skill in skills {
        out.push_str(&format!("\n- {}: {}", skill.name, skill.description));
    }
    out
}

/// A skill tool's failure, for the model to read.
pub fn failed(message: String) -> ToolFailure {
    ToolFailure::visible(FailureKind::ToolError, message)
}

/// The skill named `name`, or a failure naming the skills there are.
pub fn named<'a>(skills: &'a [Arc<Skill>], name: &str) -> Result<&'a Arc<Skill>, ToolFailure> {
    skills.iter().find(|s| s.name == name).ok_or_else(|| {
        let known: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        failed(format!(
            "no skill \"{name}\" (the skills: {})",
            known.join(", ")
        ))
    })
}

/// Reads `path` of `skill`: a relative path to one of its files, never out of its folder (no
/// `..`, no absolute path, no link leading out).
pub fn read_in(skill: &Skill, path: &str) -> Result<String, ToolFailure> {
    let relative = Path::new(path);
    let plain = relative
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    let outside = || {
        failed(format!(
            "\"{path}\" is not a file of skill \"{}\" (its files: {})",
            skill.name,
            skill.files.join(", ")
        ))
    };
    if path.is_empty() || !plain {
        return Err(outside());
    }
    let joined = skill.dir.join(relative);
    let (Ok(real), Ok(root)) = (joined.canonicalize(), skill.dir.canonicalize()) else {
        return Err(outside());
    };
    if !real.starts_with(&root) || !real.is_file() {
        return Err(outside());
    }
    let size = std::fs::metadata(&real).map(|m| m.len()).unwrap_or(0);
    if size > MAX_SKILL_FILE_BYTES {
        return Err(failed(format!(
            "{path} holds {size} bytes; a skill file read here holds at most {MAX_SKILL_FILE_BYTES}"
        )));
    }
    let bytes = std::fs::read(&real).map_err(|e| failed(format!("cannot read {path}: {e}")))?;
    String::from_utf8(bytes).map_err(|_| failed(format!("{path} is not text")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_format() {
        for ok in ["a", "pdf-processing", "v2-notes"] {
            assert!(valid_skill_name(ok), "{ok}");
        }
        for bad in [
            "",
            "PDF",
            "-pdf",
            "pdf-",
            "pdf--x",
            "pdf x",
            "pdf_x",
            &"a".repeat(65),
        ] {
            assert!(!valid_skill_name(bad), "{bad}");
        }
    }

    #[test]
    fn a_skill_file_is_read_inside_its_folder_only() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("brewing");
        std::fs::create_dir_all(dir.join("references")).expect("dirs");
        std::fs::write(dir.join("references/ratios.md"), "1:16").expect("file");
        std::fs::write(root.path().join("secret.txt"), "no").expect("secret");
        let skill = Skill {
            name: "brewing".into(),
            description: "d".into(),
            dir: dir.clone(),
            instructions: String::new(),
            files: vec!["references/ratios.md".into()],
            loc: SourceLoc::new("SKILL.md", 1, 1),
        };
        assert_eq!(
            read_in(&skill, "references/ratios.md").ok().as_deref(),
            Some("1:16")
        );
        for outside in [
            "../secret.txt",
            "/etc/passwd",
            "",
            "references/../../secret.txt",
            "references",
        ] {
            assert!(read_in(&skill, outside).is_err(), "{outside}");
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(root.path().join("secret.txt"), dir.join("link.txt"))
                .expect("symlink");
            assert!(
                read_in(&skill, "link.txt").is_err(),
                "a link out of the folder"
            );
        }
    }
}
