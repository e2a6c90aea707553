//! ARCHITECTURE.md stays true to the code: every crate is in its table, above every crate
//! that depends on it, with what it depends on stated; every source file of a crate is named in
//! its README's "Inside" section (the root crate's `src/` in ARCHITECTURE.md's); no crate has an
//! import circle between its files or top-level modules (circles.rs); kiln-core stays small.

mod circles;

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

/// The provider names (`ProviderKind::ALL`'s) that `text` does not name as a whole word
/// (`openai` is not named by `openai-responses`).
fn providers_missing(text: &str, leave_out: &[&str]) -> Vec<&'static str> {
    let words: BTreeSet<&str> = text
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
        .collect();
    kiln::model::ProviderKind::ALL
        .iter()
        .map(|k| k.name())
        .filter(|name| !leave_out.contains(name) && !words.contains(name))
        .collect()
}

#[test]
fn every_list_of_providers_names_them_all() {
    let help = |args: &[&str]| {
        let out = std::process::Command::new(crate::common::kiln_bin())
            .args(args)
            .output()
            .expect("kiln runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let read = |rel: &str| std::fs::read_to_string(repo().join(rel)).expect(rel);
    // `script` is no service: the mock and kiln.toml's [providers] tables leave it out.
    let places = [
        ("README.md", read("README.md"), &[][..]),
        ("src/lib.rs", read("src/lib.rs"), &[]),
        ("kiln --help", help(&["--help"]), &[]),
        ("kiln mock --help", help(&["mock", "--help"]), &["script"]),
        (
            "kiln init's hello.rhai",
            read("src/cli/authoring/init/hello.rhai"),
            &[],
        ),
        (
            "kiln init's kiln.toml",
            read("crates/project/src/template.rs"),
            &["script"],
        ),
    ];
    let drifted: Vec<String> = places
        .iter()
        .filter_map(|(place, text, leave_out)| {
            let missing = providers_missing(text, leave_out);
            (!missing.is_empty()).then(|| format!("{place} does not name {missing:?}"))
        })
        .collect();
    assert!(drifted.is_empty(), "{}", drifted.join("\n"));
}

#[test]
fn a_list_of_providers_that_drifted_is_found() {
    let old = "// anthropic | openai | ollama | script";
    assert_eq!(
        providers_missing(old, &[]),
        [
            "openai-responses",
            "azure",
            "azure-responses",
            "gemini",
            "bedrock"
        ]
    );
    // A name inside a longer one does not count.
    assert!(providers_missing("openai-responses azure-responses", &[]).contains(&"openai"));
}

/// The kiln crates a README's "May depend on:" paragraph names (notes in parentheses left
/// out: "(the run slots it shares with the server)"), or None when it has no such line.
fn readme_may_depend_on(readme: &str) -> Option<BTreeSet<String>> {
    let at = readme.find("May depend on:")?;
    let paragraph = readme[at..].split("\n\n").next().unwrap_or_default();
    let mut text = paragraph.to_string();
    while let (Some(open), Some(close)) = (text.find('('), text.find(')')) {
        if close < open {
            break;
        }
        text.replace_range(open..=close, "");
    }
    Some(
        text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .filter(|w| w.starts_with("kiln-"))
            .map(String::from)
            .collect(),
    )
}

#[test]
fn every_crate_readme_says_what_the_crate_depends_on() {
    let mut wrong = Vec::new();
    for (folder, (name, deps)) in crates() {
        let path = repo().join("crates").join(&folder).join("README.md");
        let Ok(readme) = std::fs::read_to_string(&path) else {
            wrong.push(format!("{name} has no README.md"));
            continue;
        };
        match readme_may_depend_on(&readme) {
            None => wrong.push(format!(
                "crates/{folder}/README.md has no \"May depend on:\" line"
            )),
            Some(said) if said != deps => wrong.push(format!(
                "crates/{folder}/README.md says {said:?}; Cargo.toml has {deps:?}"
            )),
            Some(_) => {}
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_readme_dependency_line_that_drifted_is_found() {
    let readme = "# kiln-x\n\nMay depend on: kiln-core, kiln-registry (and rmcp with\n`mcp`, not kiln-db).\n\nMore.";
    let said = readme_may_depend_on(readme).expect("a line");
    let said: Vec<&str> = said.iter().map(String::as_str).collect();
    assert_eq!(said, ["kiln-core", "kiln-registry"]);
    assert_eq!(
        readme_may_depend_on("May depend on: nothing of kiln."),
        Some(BTreeSet::new())
    );
    assert_eq!(readme_may_depend_on("# no line"), None);
}

/// The kiln crates `text` names in code (`kiln_db::...`, `use kiln_eval;`; not in `//`
/// comments), of `crates`.
fn crates_named(text: &str, crates: &BTreeSet<String>) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| crates.contains(*word))
        .map(String::from)
        .collect()
}

/// The command-only crates the binary may reach around the facade: they serve commands and
/// are not in an embedder's facade (ARCHITECTURE.md says so too).
const COMMAND_ONLY: [&str; 5] = [
    "kiln_lsp",
    "kiln_mock",
    "kiln_otel",
    "kiln_repl",
    "kiln_testing",
];

#[test]
fn the_binary_reaches_the_library_through_the_facade() {
    let kiln_crates: BTreeSet<String> = crates()
        .values()
        .map(|(name, _)| name.replace('-', "_"))
        .collect();
    let mut around = Vec::new();
    let cli = repo().join("src/cli");
    let mut files: Vec<(String, String)> = read_src(&cli)
        .into_iter()
        .map(|(rel, text)| (format!("src/cli/{rel}"), text))
        .collect();
    let main = std::fs::read_to_string(repo().join("src/main.rs")).expect("main.rs");
    files.push(("src/main.rs".into(), main));
    for (path, text) in files {
        for name in crates_named(&text, &kiln_crates) {
            if !COMMAND_ONLY.contains(&name.as_str()) {
                around.push(format!("{path} names {name}: reach it through `kiln::`"));
            }
        }
    }
    assert!(around.is_empty(), "{}", around.join("\n"));
    // The check can fail: a line reaching the run log around the facade is found.
    let found = crates_named("let db = kiln_db::Db::open(p)?;", &kiln_crates);
    assert!(found.contains("kiln_db"), "{found:?}");
}

/// The repository paths a page names in backticks: `crates/x/src/y.rs`, `benches/`,
/// `Cargo.toml` (a word with a `/`, or a file name with an extension kiln's tree uses).
fn paths_named(page: &str) -> Vec<String> {
    let file = |w: &str| {
        [".rs", ".md", ".toml", ".sh", ".py", ".rhai", ".json"]
            .iter()
            .any(|e| w.ends_with(e))
    };
    page.split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| !w.contains(' ') && !w.contains("::") && !w.starts_with('-'))
        .filter(|w| (w.contains('/') && !w.contains("://")) || file(w))
        .map(|w| w.trim_start_matches("./").to_string())
        .collect()
}

#[test]
fn every_path_a_recipe_names_exists() {
    let page = std::fs::read_to_string(repo().join("CONTRIBUTING.md")).expect("CONTRIBUTING.md");
    for recipe in [
        "## Add a provider",
        "## Add a DSL method",
        "## Add a host function",
        "## Add a door",
        "## Add a CLI command",
        "## Add a bar to BENCHMARKS.md",
    ] {
        assert!(
            page.contains(recipe),
            "CONTRIBUTING.md has no recipe \"{recipe}\""
        );
    }
    let paths = paths_named(&page);
    assert!(paths.len() > 40, "too few paths read: {paths:?}");
    let missing: Vec<&String> = paths
        .iter()
        .filter(|p| {
            // `../shared/...` is beside the repository, as the brief keeps it.
            !p.starts_with("../") && !repo().join(p.as_str()).exists()
        })
        .collect();
    assert!(
        missing.is_empty(),
        "CONTRIBUTING.md names paths that do not exist: {missing:?}"
    );
}

#[test]
fn a_recipe_path_that_drifted_is_found() {
    let page = "1. `crates/providers/src/openai_reply.rs`: the reply; `kiln::log`, `--help`.";
    let paths = paths_named(page);
    assert_eq!(paths, ["crates/providers/src/openai_reply.rs"]);
    assert!(
        !repo().join(&paths[0]).exists(),
        "moved to openai/chat/reply.rs"
    );
}

/// The folders under `root` (kiln's own: not `target`, `vendor`, `node_modules` or dot
/// folders) holding more than `most` source files (`.rs`, `.py`, `.sh`, `.js`) side by side.
fn crowded_folders(root: &Path, most: usize) -> Vec<String> {
    let mut crowded = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let mut sources = 0;
        for entry in std::fs::read_dir(&dir).expect("a folder").flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            if path.is_dir() {
                if !name.starts_with('.')
                    && !["target", "vendor", "node_modules"].contains(&name.as_str())
                {
                    dirs.push(path);
                }
            } else if ["rs", "py", "sh", "js"]
                .iter()
                .any(|e| name.ends_with(&format!(".{e}")))
            {
                sources += 1;
            }
        }
        if sources > most {
            let shown = dir.strip_prefix(root).unwrap_or(&dir).display().to_string();
            crowded.push(format!("{shown}: {sources} source files"));
        }
    }
    crowded.sort();
    crowded
}

#[test]
fn no_folder_holds_more_than_fifteen_source_files_side_by_side() {
    let crowded = crowded_folders(&repo(), 15);
    assert!(
        crowded.is_empty(),
        "group these by concern (CONTRIBUTING.md, ARCHITECTURE.md):\n{}",
        crowded.join("\n")
    );
    // The count can fail: a folder of sixteen files is found.
    let dir = tempfile::tempdir().expect("dir");
    for i in 0..16 {
        std::fs::write(dir.path().join(format!("f{i}.rs")), "").expect("write");
    }
    assert_eq!(crowded_folders(dir.path(), 15).len(), 1);
}
