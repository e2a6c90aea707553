//! ARCHITECTURE.md stays true to the code: every crate is in its table, above every crate
//! that depends on it, with what it depends on stated; and every source file of a crate is
//! named in the crate's part of "Inside the crates".

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
/// but the crate roots and the files that hold only tests.
fn named_files(src: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("src dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let stem = path.file_stem().unwrap_or_default().to_string_lossy();
            let only_tests = matches!(stem.as_ref(), "tests" | "props")
                || stem.ends_with("_tests")
                || stem.ends_with("_props");
            if path.extension().is_some_and(|e| e == "rs")
                && !matches!(stem.as_ref(), "lib" | "main" | "mod")
                && !only_tests
            {
                out.push(stem.to_string());
            }
        }
    }
    out.sort();
    out
}

/// The text of `crates/<folder>/src/`'s part of the "Inside the crates" block.
fn inside(doc: &str, folder: &str) -> Option<String> {
    let head = format!("crates/{folder}/src/");
    let start = doc.lines().position(|l| l.starts_with(&head))?;
    let part: Vec<&str> = doc
        .lines()
        .skip(start)
        .enumerate()
        .take_while(|(i, l)| *i == 0 || l.starts_with(' '))
        .map(|(_, l)| l)
        .collect();
    Some(part.join("\n"))
}

/// Whether `text` names `word` as a word of its own (`run` is not named by `runner`).
fn names(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let edge = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        edge(before) && edge(after)
    })
}

#[test]
fn every_source_file_is_named_inside_its_crate() {
    let doc = architecture();
    let mut missing = Vec::new();
    for folder in crates().keys() {
        let Some(part) = inside(&doc, folder) else {
            missing.push(format!(
                "crates/{folder}/src/ has no part in \"Inside the crates\""
            ));
            continue;
        };
        for file in named_files(&repo().join("crates").join(folder).join("src")) {
            if !names(&part, &file) {
                missing.push(format!("crates/{folder}/src: {file}"));
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
    assert!(!names("runner, running", "run"));
}
