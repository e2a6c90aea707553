//! Cases files of an eval (`.cases("cases.jsonl")`): JSON Lines, JSON, YAML or CSV beside the
//! script, read when the script loads, so a mistake in one is a load error at its file, line
//! and column.
//!
//! Every format holds the same case: `name` (optional: the file's name and the case's line),
//! `input`, `expected` and `metadata` (optional). A CSV file's header names its columns: `input`
//! is required, `name` and `expected` are read as such, any other column goes to `metadata`.

use kiln_core::error::SourceLoc;
use kiln_registry::eval_spec::Case;
use serde::Deserialize;
use serde_json::Value;
use std::path::{Component, Path, PathBuf};

/// A case as a file writes it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    #[serde(default)]
    name: Option<String>,
    input: Value,
    #[serde(default)]
    expected: Option<Value>,
    #[serde(default)]
    metadata: Value,
}

/// A JSON or YAML file written as a map: `{ "cases": [...] }` (else it is the list itself).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wrapped {
    cases: Vec<RawCase>,
}

/// Whether a JSON or YAML text is a map at its top (`{`, or a YAML key) rather than a list.
fn is_map(text: &str) -> bool {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#') && *l != "---");
    first.is_some_and(|l| !l.starts_with('[') && !l.starts_with('-'))
}

/// What went wrong reading a cases file: where, and what.
#[derive(Debug)]
pub struct CasesError {
    /// The file, line and column (the script's call when the file cannot be found).
    pub loc: Option<SourceLoc>,
    /// What was wrong.
    pub message: String,
}

impl CasesError {
    fn at(path: &str, line: usize, column: usize, message: impl Into<String>) -> CasesError {
        CasesError {
            loc: Some(SourceLoc::new(path, line, column)),
            message: message.into(),
        }
    }

    fn here(message: impl Into<String>) -> CasesError {
        CasesError {
            loc: None,
            message: message.into(),
        }
    }
}

/// Where `file` (as the script names it) is: beside the script, never outside its folder, not
/// even through a symlink (the file, or a folder on its way, linking out is refused). A file
/// that does not exist is left to [`read`] to say so.
pub fn resolve(script: &str, file: &str) -> Result<PathBuf, CasesError> {
    let rel = Path::new(file);
    let escapes = rel.is_absolute()
        || rel
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)));
    if escapes {
        return Err(CasesError::here(format!(
            "cases file \"{file}\" must be a path inside the script's folder (no `..`, not absolute)"
        )));
    }
    let dir = match Path::new(script).parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let path = dir.join(rel);
    if let (Ok(real), Ok(root)) = (path.canonicalize(), dir.canonicalize())
        && !real.starts_with(&root)
    {
        return Err(CasesError::here(format!(
            "cases file \"{file}\" is a symlink out of the script's folder {} (to {}); \
             copy the file into the folder instead",
            root.display(),
            real.display()
        )));
    }
    Ok(path)
}

/// Reads the cases of `path` (its extension says the format).
pub fn read(path: &Path) -> Result<Vec<Case>, CasesError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| CasesError::here(format!("cannot read cases file {shown}: {e}")))?;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let raw: Vec<(RawCase, usize)> = match ext.as_str() {
        "jsonl" | "ndjson" => jsonl(&shown, &text)?,
        "json" => numbered(json_file(&shown, &text)?),
        "yaml" | "yml" => numbered(yaml_file(&shown, &text)?),
        "csv" => csv_cases(&shown, &text)?,
        other => {
            return Err(CasesError::here(format!(
                "cases file {shown}: unknown format \"{other}\" (jsonl, json, yaml, yml or csv)"
            )));
        }
    };
    Ok(raw
        .into_iter()
        .map(|(c, n)| Case {
            name: c.name.unwrap_or_else(|| format!("{stem}:{n}")),
            input: c.input,
            expected: c.expected,
            metadata: c.metadata,
            loc: SourceLoc::new(
                &shown,
                if ext == "jsonl" || ext == "csv" { n } else { 0 },
                0,
            ),
        })
        .collect())
}

/// JSON and YAML cases are numbered by their place in the list (from 1).
fn numbered(cases: Vec<RawCase>) -> Vec<(RawCase, usize)> {
    cases.into_iter().zip(1..).collect()
}

fn json_file(path: &str, text: &str) -> Result<Vec<RawCase>, CasesError> {
    let parsed = match is_map(text) {
        true => serde_json::from_str::<Wrapped>(text).map(|w| w.cases),
        false => serde_json::from_str::<Vec<RawCase>>(text),
    };
    parsed.map_err(|e| CasesError::at(path, e.line(), e.column(), strip_location(&e.to_string())))
}

fn yaml_file(path: &str, text: &str) -> Result<Vec<RawCase>, CasesError> {
    let parsed = match is_map(text) {
        true => serde_norway::from_str::<Wrapped>(text).map(|w| w.cases),
        false => serde_norway::from_str::<Vec<RawCase>>(text),
    };
    parsed.map_err(|e| {
        let (line, col) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
        CasesError::at(path, line, col, strip_location(&e.to_string()))
    })
}

/// serde's message without its trailing ` at line L column C` (the location is shown apart).
fn strip_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// One case per non-empty line, numbered by line.
fn jsonl(path: &str, text: &str) -> Result<Vec<(RawCase, usize)>, CasesError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let case = serde_json::from_str::<RawCase>(line)
            .map_err(|e| CasesError::at(path, i + 1, e.column(), strip_location(&e.to_string())))?;
        out.push((case, i + 1));
    }
    Ok(out)
}

/// A CSV file with a header row; each record is a case, numbered by its line.
fn csv_cases(path: &str, text: &str) -> Result<Vec<(RawCase, usize)>, CasesError> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(false)
        .from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| csv_error(path, &e))?
        .iter()
        .map(|h| h.trim().to_string())
        .collect();
    if !header.iter().any(|h| h == "input") {
        return Err(CasesError::at(
            path,
            1,
            1,
            format!(
                "the header has no `input` column (it has: {})",
                header.join(", ")
            ),
        ));
    }
    let mut out = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| csv_error(path, &e))?;
        let line = record.position().map_or(0, |p| p.line() as usize);
        let mut case = RawCase {
            name: None,
            input: Value::Null,
            expected: None,
            metadata: Value::Null,
        };
        let mut metadata = serde_json::Map::new();
        for (key, value) in header.iter().zip(record.iter()) {
            match key.as_str() {
                "name" if !value.is_empty() => case.name = Some(value.to_string()),
                "input" => case.input = Value::String(value.to_string()),
                "expected" if !value.is_empty() => {
                    case.expected = Some(Value::String(value.to_string()));
                }
                "name" | "expected" => {}
                other => {
                    metadata.insert(other.to_string(), Value::String(value.to_string()));
                }
            }
        }
        if !metadata.is_empty() {
            case.metadata = Value::Object(metadata);
        }
        out.push((case, line));
    }
    Ok(out)
}

fn csv_error(path: &str, e: &csv::Error) -> CasesError {
    let line = e.position().map_or(0, |p| p.line() as usize);
    let message = match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("this row has {len} fields; the header has {expected_len}"),
        _ => e.to_string(),
    };
    CasesError::at(path, line, 1, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_symlink_out_of_the_scripts_folder_is_refused_and_one_inside_is_read() {
        let outside = tempfile::tempdir().unwrap();
        let target = write(outside.path(), "secret.jsonl", "{\"input\":\"x\"}\n");
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("evals.rhai").display().to_string();
        std::os::unix::fs::symlink(&target, dir.path().join("cases.jsonl")).unwrap();
        let err = resolve(&script, "cases.jsonl").unwrap_err();
        assert!(
            err.message
                .contains("cases file \"cases.jsonl\" is a symlink out of"),
            "{}",
            err.message
        );
        std::fs::create_dir(dir.path().join("data")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("data/out")).unwrap();
        assert!(
            resolve(&script, "data/out/secret.jsonl").is_err(),
            "a folder linking out"
        );
        let inside = write(dir.path(), "real.jsonl", "{\"input\":\"y\"}\n");
        std::os::unix::fs::symlink(&inside, dir.path().join("data/alias.jsonl")).unwrap();
        let p = resolve(&script, "data/alias.jsonl").unwrap();
        assert_eq!(
            read(&p).unwrap().len(),
            1,
            "a link inside the folder is read"
        );
        assert!(
            resolve(&script, "missing.jsonl").is_ok(),
            "left to read to report"
        );
    }

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn every_format_reads_the_same_cases() {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            write(
                dir.path(),
                "a.jsonl",
                "{\"name\":\"one\",\"input\":\"hi\",\"expected\":\"hello\"}\n\n{\"input\":\"bye\"}\n",
            ),
            write(
                dir.path(),
                "a.json",
                "[{\"name\":\"one\",\"input\":\"hi\",\"expected\":\"hello\"},{\"input\":\"bye\"}]",
            ),
            write(
                dir.path(),
                "a.yaml",
                "cases:\n  - name: one\n    input: hi\n    expected: hello\n  - input: bye\n",
            ),
            write(
                dir.path(),
                "a.csv",
                "name,input,expected\none,hi,hello\n,bye,\n",
            ),
        ];
        for f in &files {
            let cases = read(f).unwrap();
            assert_eq!(cases.len(), 2, "{}", f.display());
            assert_eq!(cases[0].name, "one");
            assert_eq!(cases[0].input, "hi");
            assert_eq!(cases[0].expected, Some(Value::from("hello")));
            assert_eq!(cases[1].input, "bye");
            assert_eq!(cases[1].expected, None);
        }
        assert_eq!(read(&files[0]).unwrap()[1].name, "a:3");
        assert_eq!(read(&files[3]).unwrap()[1].name, "a:3");
    }

    #[test]
    fn csv_columns_beyond_the_three_are_metadata() {
        let dir = tempfile::tempdir().unwrap();
        let f = write(dir.path(), "c.csv", "input,topic\nhi,greeting\n");
        let cases = read(&f).unwrap();
        assert_eq!(cases[0].metadata, serde_json::json!({"topic": "greeting"}));
    }

    #[test]
    fn mistakes_name_their_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let f = write(
            dir.path(),
            "b.jsonl",
            "{\"input\":\"ok\"}\n{\"input\": \"x\", \"expect\": 1}\n",
        );
        let e = read(&f).unwrap_err();
        let loc = e.loc.unwrap();
        assert_eq!((loc.line, loc.path.ends_with("b.jsonl")), (2, true));
        assert!(
            e.message.contains("unknown field `expect`"),
            "{}",
            e.message
        );
        let f = write(dir.path(), "b.yaml", "- input: ok\n- name: [\n");
        let loc = read(&f).unwrap_err().loc.unwrap();
        assert!(loc.line >= 2, "{loc:?}");
        let f = write(dir.path(), "b.csv", "input,expected\nhi,hello\nbye\n");
        let e = read(&f).unwrap_err();
        assert_eq!(e.loc.unwrap().line, 3);
        assert!(
            e.message.contains("1 fields; the header has 2"),
            "{}",
            e.message
        );
        let f = write(dir.path(), "c.csv", "question,answer\nhi,hello\n");
        assert!(read(&f).unwrap_err().message.contains("no `input` column"));
        let f = write(
            dir.path(),
            "b.json",
            "[{\"input\": 1},\n {\"name\": \"x\"}]",
        );
        let e = read(&f).unwrap_err();
        assert_eq!(e.loc.unwrap().line, 2, "{}", e.message);
    }

    #[test]
    fn a_cases_file_stays_beside_its_script() {
        assert!(resolve("s/evals.rhai", "../secrets.jsonl").is_err());
        assert!(resolve("s/evals.rhai", "/etc/passwd").is_err());
        assert_eq!(
            resolve("s/evals.rhai", "data/c.jsonl").unwrap(),
            Path::new("s/data/c.jsonl")
        );
    }
}
