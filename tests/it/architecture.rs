//! ARCHITECTURE.md stays true to the code: every crate is in its table, above every crate
//! that depends on it, with what it depends on stated; every source file of a crate is named in
//! its README's "Inside" section (the root crate's `src/` in ARCHITECTURE.md's); no crate has an
//! import circle between its files or top-level modules (circles.rs); kiln-core stays small;
//! the docs and the layout cannot drift (drift.rs).

mod circles;
mod drift;

use crate::common::repo;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One row of the crates table: the crate and the kiln crates it says it may depend on.
struct Row {
    name: String,
    may_depend_on: BTreeSet<String>,
}

fn architecture() -> String {
    std::fs::read_to_string(repo().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md")
}

/// The crates table, in its order. "may depend on" names crates by their short names
/// (`core`, `providers`, ...), with notes in parentheses, `—` for none.
fn table(doc: &str) -> Vec<Row> {
    doc.lines()
        .filter(|l| l.starts_with("| `kiln-"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let name = cells[1].trim_matches('`').to_string();
            let mut column = cells.get(3).copied().unwrap_or_default().to_string();
            // Notes in parentheses ("(mcp)", "(export only)") are not crate names.
            while let (Some(open), Some(close)) = (column.find('('), column.find(')')) {
                if close < open {
                    break;
                }
                column.replace_range(open..=close, "");
            }
            let may_depend_on = column
                .split(',')
                .map(|c| c.trim().trim_matches('`'))
                .filter(|c| !c.is_empty() && *c != "—")
                .map(|c| format!("kiln-{}", c.trim_start_matches("kiln-")))
                .collect();
            Row {
                name,
                may_depend_on,
            }
        })
        .collect()
}

/// The crates under `crates/`: folder -> package name and its kiln dependencies (normal and
/// optional, not dev).
fn crates() -> BTreeMap<String, (String, BTreeSet<String>)> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(repo().join("crates")).expect("crates/") {
        let dir = entry.expect("entry").path();
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        let name = manifest
            .lines()
            .find_map(|l| l.strip_prefix("name = "))
            .expect("a package name")
            .trim_matches('"')
            .to_string();
        let mut deps = BTreeSet::new();
        let mut section = "";
        for line in manifest.lines() {
            let line = line.trim();
            if line.starts_with('[') {
                section = line;
            } else if section == "[dependencies]"
                && let Some(dep) = line.split(['=', '.', ' ']).next()
                && dep.starts_with("kiln-")
            {
                deps.insert(dep.to_string());
            }
        }
        let folder = dir.file_name().expect("name").to_string_lossy().to_string();
        out.insert(folder, (name, deps));
    }
    out
}

#[test]
fn every_crate_is_in_the_table_below_what_it_depends_on() {
    let doc = architecture();
    let rows = table(&doc);
    let order: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    let mut wrong = Vec::new();
    for (name, deps) in crates().values() {
        let Some(at) = order.iter().position(|n| n == name) else {
            wrong.push(format!("{name} is not in the crates table"));
            continue;
        };
        let row = &rows[at];
        for dep in deps {
            if !order[..at].contains(&dep.as_str()) {
                wrong.push(format!("{name} depends on {dep}, which is not above it"));
            }
            if !row.may_depend_on.contains(dep) {
                wrong.push(format!("{name} depends on {dep}; its row does not say so"));
            }
        }
        for said in &row.may_depend_on {
            if !deps.contains(said) {
                wrong.push(format!(
                    "{name}'s row says it depends on {said}; it does not"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "ARCHITECTURE.md:\n{}", wrong.join("\n"));
}

/// The files a crate's part of "Inside the crates" must name: every `.rs` under its `src/`
/// but the crate roots and the files that hold only tests, by its path under `src/` without
/// `.rs` (`anthropic`, `openai/chat/reply`).
fn named_files(src: &Path) -> Vec<String> {
    let mut out: Vec<String> = (read_src(src).keys())
        .filter_map(|rel| rel.strip_suffix(".rs").map(String::from))
        .filter(|path| {
            let stem = path.rsplit('/').next().unwrap_or(path);
            let only_tests = matches!(stem, "tests" | "props")
                || stem.ends_with("_tests")
                || stem.ends_with("_props");
            !matches!(stem, "lib" | "main" | "mod") && !only_tests
        })
        .map(|path| path.strip_suffix("/mod").unwrap_or(&path).to_string())
        .collect();
    out.sort();
    out
}

/// The text of the "## Inside" section's code block in `crates/{folder}/README.md`.
fn readme_inside(folder: &str) -> Option<String> {
    let readme =
        std::fs::read_to_string(repo().join("crates").join(folder).join("README.md")).ok()?;
    let section = &readme[readme.find("## Inside")?..];
    let open = section.find("```")?;
    let body = &section[open..];
    let body = &body[body.find('\n')? + 1..];
    Some(body[..body.find("```")?].to_string())
}

/// The text of the part of the "Inside the crates" block headed `head` (`crates/core/src/`,
/// `src/`), the head itself left out.
fn inside(doc: &str, head: &str) -> Option<String> {
    let start = doc.lines().position(|l| l.starts_with(head))?;
    let part: Vec<&str> = doc
        .lines()
        .skip(start)
        .enumerate()
        .take_while(|(i, l)| *i == 0 || l.starts_with(' '))
        .map(|(i, l)| if i == 0 { &l[head.len()..] } else { l })
        .collect();
    Some(part.join("\n"))
}

/// Whether `text` names the file `stem` (a path under `src/` without `.rs`) as an item of a
/// list: `stem.rs`, or `stem` as a whole word after the start of a line, `, `, `; `, `: `, `(`
/// or `+ ` and before `,`, `;`, ` (`, `/ (`, `)`, `:` or the end of a line (`run` is not named by `runner`, nor by
/// "what a run is", nor `reply` by `chat/reply`).
fn names(text: &str, stem: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    text.lines().map(str::trim).any(|line| {
        line.match_indices(stem).any(|(at, _)| {
            let (before, after) = (&line[..at], &line[at + stem.len()..]);
            if let Some(rest) = after.strip_prefix(".rs") {
                return !before.ends_with(word)
                    && !before.ends_with('/')
                    && !rest.starts_with(word);
            }
            let starts = before.is_empty() || before.ends_with('(');
            let starts = starts || [", ", "+ ", ": ", "; "].iter().any(|s| before.ends_with(s));
            // A folder is named as `name/ (` its files `)`.
            let ends = after.is_empty() || after.starts_with([',', ')', ':', ';']);
            let ends = ends || after.starts_with(" (") || after.starts_with("/ (");
            starts && ends
        })
    })
}

/// The `src/` folders checked, each with the head of its part of "Inside the crates":
/// every crate's under `crates/`, and the root crate's (the facade, the binary, its commands).
fn sources() -> Vec<(String, std::path::PathBuf)> {
    let mut out: Vec<_> = crates()
        .keys()
        .map(|folder| {
            let src = repo().join("crates").join(folder).join("src");
            (format!("crates/{folder}/src/"), src)
        })
        .collect();
    out.push(("src/".to_string(), repo().join("src")));
    out
}

#[test]
fn every_source_file_is_named_inside_its_crate() {
    let doc = architecture();
    let mut missing = Vec::new();
    for (head, src) in sources() {
        // A crate's files are listed in its README's "Inside" section; the root crate's in
        // ARCHITECTURE.md.
        let part = match head
            .strip_suffix("src/")
            .and_then(|c| c.strip_prefix("crates/"))
        {
            Some(folder) => readme_inside(folder),
            None => inside(&doc, &head),
        };
        let Some(part) = part else {
            missing.push(format!(
                "{head} has no \"Inside\" part (its README's, or ARCHITECTURE.md's)"
            ));
            continue;
        };
        for file in named_files(&src) {
            // A nested file is named by its path (from any of its folders down:
            // `authoring/test_cmd` for `cli/authoring/test_cmd`), or by its name in a part
            // that names its folder (`cli/ (… ask, …)`).
            let segments: Vec<&str> = file.split('/').collect();
            let by_path = (0..segments.len().saturating_sub(1))
                .any(|from| names(&part, &segments[from..].join("/")));
            let by_folder = file.rsplit_once('/').is_some_and(|(folder, stem)| {
                let last = folder.rsplit('/').next().unwrap_or(folder);
                part.contains(&format!("{last}/")) && names(&part, stem)
            });
            if !names(&part, &file) && !by_path && !by_folder {
                missing.push(format!("{head}: {file}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md does not name:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_reading_of_the_table_can_fail() {
    let doc = "| `kiln-a` | a | — |\n| `kiln-b` | b | a (tests), `kiln-c` |\n";
    let rows = table(doc);
    assert_eq!(rows.len(), 2);
    assert!(rows[0].may_depend_on.is_empty());
    let b: Vec<&str> = rows[1].may_depend_on.iter().map(String::as_str).collect();
    assert_eq!(b, ["kiln-a", "kiln-c"]);
    assert!(names("run (the loop), runner", "run"));
    assert!(names("a, run", "run") && names("x (+ run, b)", "run") && names("run.rs", "run"));
    assert!(names("loop (the loop), run: rounds", "run"));
    assert!(!names("runner, running", "run"));
    assert!(!names("a loop, what a run is, b", "run"));
    assert!(!names("a (the run, b)", "run") && !names("a, run and b", "run"));
    assert!(!names("prerun.rs, run_x.rs", "run"));
    assert!(names("doors/ (doors/chat, x)", "doors") && names("a: doors/chat; b", "doors/chat"));
    assert!(!names("openai/chat/reply, x", "chat/reply") && !names("chat/replying", "chat/reply"));
}

/// The `.rs` files under `src`, by path relative to it (`/`-separated), with their text.
fn read_src(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("src dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(src).expect("under src");
                let rel = rel.to_string_lossy().replace('\\', "/");
                out.insert(rel, std::fs::read_to_string(&path).expect("source"));
            }
        }
    }
    out
}

#[test]
fn no_crate_has_an_import_circle() {
    let mut found = Vec::new();
    for (head, src) in sources() {
        for circle in circles::report(&circles::edges(&read_src(&src))) {
            found.push(format!("{head}: {circle}"));
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

/// A crate's files from (path, text) pairs.
fn files(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect()
}

#[test]
fn the_search_for_circles_can_fail() {
    // A child using what its parent defines while the parent re-exports the child's items.
    let parent = files(&[
        ("lib.rs", "mod model;\npub use model::Message;"),
        (
            "model.rs",
            "mod local;\npub use local::Local;\npub enum Message { User }",
        ),
        (
            "model/local.rs",
            "use crate::Message;\npub struct Local(Message);",
        ),
    ]);
    let found = circles::report(&circles::edges(&parent));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("circle of files: model.rs, model/local.rs"),
        "{found:?}"
    );
    assert!(found[0].contains("pub use local::Local"), "{found:?}");
    // Through a group and a glob re-export, across top-level modules.
    let across = files(&[
        ("lib.rs", "mod a;\nmod b;\npub use a::*;"),
        ("a.rs", "use crate::{b::{self, B}};\npub struct A(b::B);"),
        ("b.rs", "pub struct B(crate::A);"),
    ]);
    let found = circles::report(&circles::edges(&across));
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[1].contains("circle of top-level modules: a, b"),
        "{found:?}"
    );
    // The same uses with the message in a file of its own, or only in tests, comments and
    // strings, are no circle; nor is a parent naming its own child.
    let apart = files(&[
        ("lib.rs", "mod model;\npub use model::Message;"),
        (
            "model.rs",
            "mod local;\nmod message;\npub use local::Local;\npub use message::*;",
        ),
        (
            "model/message.rs",
            "pub enum Message { User }\n// use crate::local::Local;",
        ),
        (
            "model/local.rs",
            "use crate::Message;\npub struct Local(Message);",
        ),
        (
            "b.rs",
            "#[cfg(test)]\nmod tests {\n    use crate::model::Local;\n}\nconst X: &str = \"crate::model::Local\";",
        ),
        ("b_tests.rs", "use crate::model::Local;"),
    ]);
    assert!(circles::report(&circles::edges(&apart)).is_empty());
}

#[test]
fn kiln_core_stays_under_6000_lines() {
    let files = read_src(&repo().join("crates/core/src"));
    let lines: usize = files.values().map(|t| t.matches('\n').count()).sum();
    assert!(
        lines < 6000,
        "kiln-core's sources hold {lines} lines (fewer than 6,000 wanted)"
    );
}
