//! The docs and the layout cannot drift from the code: every provider list names every
//! provider, each crate README says what the crate depends on, every path a recipe in
//! CONTRIBUTING.md names exists, the binary reaches the library through its facade, and no
//! folder crowds more than fifteen source files. Each check is shown failing on a drifted case.

use super::{crates, read_src};
use crate::common::repo;
use std::collections::BTreeSet;
use std::path::Path;

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
const COMMAND_ONLY: [&str; 6] = [
    "kiln_acp",
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
