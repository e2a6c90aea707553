//! Docs that cannot rot: every ```rhai block of README.md and docs/**/*.md loads with the real
//! loader (`kiln check`, and `kiln test` for test files), every ```sh runnable block runs
//! offline, the links between the docs resolve, and the README keeps its first two commands and
//! stays short. The block conventions are written down in docs/README.md ("About these docs").

use crate::common::{kiln_bin, repo};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A fenced code block of a Markdown file.
#[derive(Debug, Clone, PartialEq)]
struct Block {
    /// The info string's first word (`rhai`, `sh`, ...), empty when there is none.
    lang: String,
    /// Its other words: `fragment`, `runnable`, `test`, `file=NAME`, `with=DIRS`.
    attrs: Vec<String>,
    /// The line of the opening fence (1-based).
    line: usize,
    /// What is between the fences, the fence's indentation taken off.
    text: String,
}

impl Block {
    fn has(&self, word: &str) -> bool {
        self.attrs.iter().any(|a| a == word)
    }

    /// The value of a `key=value` attribute.
    fn value(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find_map(|a| a.strip_prefix(key)?.strip_prefix('='))
    }

    /// The repository folders of `with=a,b`.
    fn with(&self) -> Vec<String> {
        self.value("with")
            .map(|w| w.split(',').map(str::to_string).collect())
            .unwrap_or_default()
    }
}

/// A Markdown file's fenced blocks, and its lines outside them (number, text).
fn scan(markdown: &str) -> (Vec<Block>, Vec<(usize, String)>) {
    let mut blocks = Vec::new();
    let mut prose = Vec::new();
    // The open fence: its character, its length, its indentation, and the block so far.
    let mut open: Option<(char, usize, usize, Block)> = None;
    for (i, line) in markdown.lines().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let fence = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
        let run = fence.map_or(0, |c| trimmed.chars().take_while(|x| *x == c).count());
        match open.take() {
            Some((c, len, _, block))
                if fence == Some(c) && run >= len && trimmed[run..].trim().is_empty() =>
            {
                blocks.push(block);
            }
            Some((c, len, ind, mut block)) => {
                let cut = line.len() - line.trim_start_matches(' ').len();
                block.text.push_str(&line[cut.min(ind)..]);
                block.text.push('\n');
                open = Some((c, len, ind, block));
            }
            None if run >= 3 && indent < 4 => {
                let mut words = trimmed[run..].split_whitespace().map(str::to_string);
                let block = Block {
                    lang: words.next().unwrap_or_default(),
                    attrs: words.collect(),
                    line: i + 1,
                    text: String::new(),
                };
                open = Some((fence.unwrap_or('`'), run, indent, block));
            }
            None => prose.push((i + 1, line.to_string())),
        }
    }
    (blocks, prose)
}

/// README.md and every Markdown file under docs/, as paths relative to the repository.
fn markdown_files() -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("read docs/")
            .map(|e| e.expect("entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut paths = vec![repo().join("README.md")];
    walk(&repo().join("docs"), &mut paths);
    paths
        .iter()
        .map(|p| {
            let rel = p.strip_prefix(repo()).expect("inside the repository");
            rel.display().to_string()
        })
        .collect()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// One scripts folder the loader gets: files from one or more blocks.
#[derive(Debug, Default)]
struct Load {
    /// Where the blocks are (`docs/tools.md:12`), for messages.
    places: Vec<String>,
    /// File name and text.
    files: Vec<(String, String)>,
    /// Repository folders loaded beside it.
    with: Vec<String>,
    /// Whether it holds a test file to run with `kiln test`.
    test: bool,
}

impl Load {
    fn add(&mut self, place: String, block: &Block, name: &str) {
        self.places.push(place);
        match self.files.iter_mut().find(|(n, _)| n == name) {
            Some((_, text)) => text.push_str(&block.text),
            None => self.files.push((name.to_string(), block.text.clone())),
        }
        for w in block.with() {
            if !self.with.contains(&w) {
                self.with.push(w);
            }
        }
        self.test |= block.has("test");
    }
}

/// The loads the rhai blocks of one Markdown file make, and how many blocks are fragments.
fn loads(rel: &str, blocks: &[Block]) -> (Vec<Load>, usize) {
    let mut out = Vec::new();
    let mut shared = Load::default();
    let mut fragments = 0;
    for b in blocks.iter().filter(|b| b.lang == "rhai") {
        let place = format!("{rel}:{}", b.line);
        if b.has("fragment") {
            fragments += 1;
            continue;
        }
        let test = b.has("test");
        match b.value("file") {
            Some(name) => {
                assert_eq!(
                    name.ends_with(".test.rhai"),
                    test,
                    "{place}: a test block's file= ends with .test.rhai, and only a test block's"
                );
                assert!(
                    name.ends_with(".rhai"),
                    "{place}: file={name} is not a .rhai file"
                );
                shared.add(place, b, name);
            }
            None => {
                let mut load = Load::default();
                let name = if test { "doc.test.rhai" } else { "doc.rhai" };
                load.add(place, b, name);
                out.push(load);
            }
        }
    }
    if !shared.files.is_empty() {
        out.push(shared);
    }
    (out, fragments)
}

/// Loads one folder with `kiln --scripts DIR check` (and `kiln test` for its test files): what
/// failed, with the blocks' places.
fn run_load(load: &Load) -> Result<(), String> {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, text) in &load.files {
        std::fs::write(dir.path().join(name), text).expect("write the block");
    }
    let mut scripts = vec!["--scripts".to_string(), dir.path().display().to_string()];
    for w in &load.with {
        scripts.push("--scripts".into());
        scripts.push(repo().join(w).display().to_string());
    }
    let mut runs = vec![vec!["check".to_string()]];
    if load.test {
        runs.push(vec!["test".into(), dir.path().display().to_string()]);
    }
    for args in runs {
        let out = Command::new(kiln_bin())
            .args(&scripts)
            .args(&args)
            .current_dir(dir.path())
            .env("NO_COLOR", "1")
            .env_remove("KILN_LOG")
            .env_remove("KILN_DB")
            .output()
            .expect("run kiln");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // A warning is a failure too: an example shows code as it should be written.
        if !out.status.success() || text.contains("warning:") {
            return Err(format!(
                "{}: `kiln {}` failed ({}):\n{text}",
                load.places.join(", "),
                args[0],
                out.status
            ));
        }
    }
    Ok(())
}

/// The commands of a runnable sh block: blank and `#` lines skipped, `\` lines joined.
fn commands(block: &Block) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in block.text.lines() {
        let t = line.trim();
        if current.is_empty() && (t.is_empty() || t.starts_with('#')) {
            continue;
        }
        match t.strip_suffix('\\') {
            Some(head) => {
                current.push_str(head);
                current.push(' ');
            }
            None => {
                current.push_str(t);
                out.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.trim().is_empty() {
        out.push(current);
    }
    out
}

/// Runs one command line with `sh -c` from the repository root, the built kiln first on PATH
/// and `cargo run --quiet --` replaced by it; its output, or why it failed.
fn run_command(line: &str, db: &Path, logs: &Path) -> Result<String, String> {
    let bin = kiln_bin();
    let script = line.replace("cargo run --quiet --", &format!("'{}'", bin.display()));
    let bin_dir = bin.parent().expect("the binary's folder");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (out_path, err_path) = (logs.join("stdout"), logs.join("stderr"));
    let mut child = Command::new("sh")
        .args(["-c", &script])
        .current_dir(repo())
        .env("PATH", path)
        .env("KILN_DB", db)
        .env("NO_COLOR", "1")
        .env_remove("KILN_LOG")
        // Offline means no model: a command that needs one fails instead of reaching out.
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("OLLAMA_HOST")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).expect("stdout file"))
        .stderr(std::fs::File::create(&err_path).expect("stderr file"))
        .spawn()
        .expect("run sh");
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = format!(
        "{}{}",
        std::fs::read_to_string(&out_path).unwrap_or_default(),
        std::fs::read_to_string(&err_path).unwrap_or_default()
    );
    match status {
        Some(s) if s.success() => Ok(output),
        Some(s) => Err(format!("{s}:\n{output}")),
        None => Err(format!("still running after 120 s:\n{output}")),
    }
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (a repeated one gets `-1`, `-2`, ... as on GitHub).
fn anchors(markdown: &str) -> Vec<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for (_, line) in scan(markdown).1 {
        let Some(title) = line.strip_prefix('#') else {
            continue;
        };
        let title = title.trim_start_matches('#');
        if !title.starts_with(' ') {
            continue;
        }
        let base = slug(title);
        let n = seen.entry(base.clone()).or_default();
        out.push(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// The targets of a line's Markdown links: `[text](target)`.
fn link_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        match after.find(')') {
            Some(end) => {
                out.push(after[..end].to_string());
                rest = &after[end..];
            }
            None => break,
        }
    }
    out
}

#[test]
fn blocks_are_found_with_their_kind_place_and_text() {
    let md = "# Title\n\
        \n\
        ```rhai\n\
        tool(\"a\");\n\
        ```\n\
        text with ```inline``` fences\n\
        ```rhai fragment\n\
        .param(\"x\", \"string\")\n\
        ```\n\
        - a list item:\n\
        \x20 ```sh runnable\n\
        \x20 kiln check \\\n\
        \x20   --scripts examples/demo\n\
        \x20 # a comment\n\
        \x20 kiln tools\n\
        \x20 ```\n\
        ~~~rhai file=a.rhai with=examples/catalog,examples/demo\n\
        ```\n\
        ~~~\n\
        ```\n\
        unclosed\n";
    let (blocks, prose) = scan(md);
    let kinds: Vec<(&str, Vec<&str>, usize)> = blocks
        .iter()
        .map(|b| {
            let attrs = b.attrs.iter().map(String::as_str).collect();
            (b.lang.as_str(), attrs, b.line)
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("rhai", vec![], 3),
            ("rhai", vec!["fragment"], 7),
            ("sh", vec!["runnable"], 11),
            (
                "rhai",
                vec!["file=a.rhai", "with=examples/catalog,examples/demo"],
                17
            ),
        ],
        "an unclosed block at the end is not a block"
    );
    assert_eq!(blocks[0].text, "tool(\"a\");\n");
    assert_eq!(
        blocks[3].text, "```\n",
        "a backtick line inside a tilde fence is text"
    );
    assert_eq!(
        commands(&blocks[2]),
        vec!["kiln check  --scripts examples/demo", "kiln tools"]
    );
    assert_eq!(blocks[3].value("file"), Some("a.rhai"));
    assert_eq!(blocks[3].with(), vec!["examples/catalog", "examples/demo"]);
    assert!(prose.iter().any(|(n, l)| *n == 6 && l.contains("inline")));
    assert!(!prose.iter().any(|(_, l)| l.contains("tool(")));

    // Plain blocks load alone, file= blocks together, fragments not at all.
    let (loads, fragments) = loads("x.md", &blocks);
    assert_eq!(fragments, 1);
    let places: Vec<_> = loads.iter().map(|l| l.places.join(" ")).collect();
    assert_eq!(places, vec!["x.md:3", "x.md:17"]);
    assert_eq!(loads[1].with, vec!["examples/catalog", "examples/demo"]);
}

#[test]
fn a_broken_block_fails_with_its_place() {
    let (blocks, _) = scan(
        "```rhai\ntool(\"a\").handler(|x| x);\n```\n\n```rhai\ntool(\"b\").nonsense(1);\n```\n",
    );
    let (loads, _) = loads("broken.md", &blocks);
    assert!(run_load(&loads[0]).is_ok());
    let err = run_load(&loads[1]).expect_err("an unknown method does not load");
    assert!(err.starts_with("broken.md:5: `kiln check` failed"), "{err}");
}

#[test]
fn rhai_blocks_load_with_the_real_loader() {
    let mut all = Vec::new();
    let mut fragments = 0;
    for rel in markdown_files() {
        let (blocks, _) = scan(&read(&rel));
        let (l, f) = loads(&rel, &blocks);
        all.extend(l);
        fragments += f;
    }
    let blocks: usize = all.iter().map(|l| l.places.len()).sum();
    // The docs have many; none found means the scan is broken, not that all is well.
    assert!(blocks >= 10, "only {blocks} rhai blocks found");
    let failures: Vec<String> = std::thread::scope(|s| {
        let jobs: Vec<_> = all.iter().map(|l| s.spawn(|| run_load(l))).collect();
        jobs.into_iter()
            .filter_map(|j| j.join().expect("load thread").err())
            .collect()
    });
    eprintln!(
        "docs: {blocks} rhai blocks loaded in {} folders, {fragments} fragments skipped",
        all.len()
    );
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}

#[test]
fn runnable_sh_blocks_run_offline() {
    let files: Vec<(String, Vec<Block>)> = markdown_files()
        .into_iter()
        .map(|rel| {
            let blocks = scan(&read(&rel)).0;
            let runnable = blocks
                .into_iter()
                .filter(|b| b.lang == "sh" && b.has("runnable"))
                .collect();
            (rel, runnable)
        })
        .collect();
    let count: usize = files.iter().map(|(_, b)| b.len()).sum();
    assert!(count >= 5, "only {count} runnable sh blocks found");
    // The blocks of one file run in order on one database; the files run at the same time.
    let results: Vec<(usize, Vec<String>)> = std::thread::scope(|s| {
        let jobs: Vec<_> = files
            .iter()
            .map(|(rel, blocks)| {
                s.spawn(move || {
                    let tmp = tempfile::tempdir().expect("tempdir");
                    let db = tmp.path().join("kiln.db");
                    let mut failures = Vec::new();
                    let mut ran = 0;
                    for b in blocks {
                        for line in commands(b) {
                            assert!(
                                !line.contains("cargo test"),
                                "{rel}:{}: `cargo test` is not runnable here",
                                b.line
                            );
                            ran += 1;
                            if let Err(e) = run_command(&line, &db, tmp.path()) {
                                failures.push(format!("{rel}:{}: `{line}` failed: {e}", b.line));
                            }
                        }
                    }
                    (ran, failures)
                })
            })
            .collect();
        jobs.into_iter()
            .map(|j| j.join().expect("block thread"))
            .collect()
    });
    let commands: usize = results.iter().map(|(n, _)| n).sum();
    eprintln!("docs: {count} runnable sh blocks, {commands} commands run");
    let failures: Vec<String> = results.into_iter().flat_map(|(_, f)| f).collect();
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}

#[test]
fn the_readme_is_short_and_starts_with_the_two_commands() {
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(
        lines < 200,
        "README.md has {lines} lines: move detail to docs/"
    );
    let start = "# kiln\n\n```sh\n\
        cargo run --quiet -- ask demo \"What is 17% of 240, in upper case words?\" --scripts examples/demo\n\
        cargo test --workspace --all-targets\n```\n";
    assert!(
        readme.starts_with(start),
        "README.md must start with:\n{start}"
    );
}

#[test]
fn links_between_the_docs_resolve() {
    let mut broken = Vec::new();
    for rel in markdown_files() {
        let dir = Path::new(&rel)
            .parent()
            .unwrap_or(Path::new(""))
            .to_path_buf();
        for (n, line) in scan(&read(&rel)).1 {
            for target in link_targets(&line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
                let file = if path.is_empty() {
                    PathBuf::from(&rel)
                } else {
                    dir.join(path)
                };
                if !repo().join(&file).exists() {
                    broken.push(format!("{rel}:{n}: {target}: no {}", file.display()));
                    continue;
                }
                let md = file.extension().is_some_and(|e| e == "md");
                if !anchor.is_empty() && md {
                    let text = std::fs::read_to_string(repo().join(&file)).expect("read target");
                    if !anchors(&text).iter().any(|a| a == anchor) {
                        broken.push(format!("{rel}:{n}: {target}: no heading #{anchor}"));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "\n{}", broken.join("\n"));
}
