//! Test results for machines: a JSON document and JUnit XML (the shape CI dashboards read).

use super::{Outcome, TestResult};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// `N passed, M failed`.
pub fn summary(results: &[TestResult]) -> String {
    let passed = results.iter().filter(|r| r.passed()).count();
    format!("{passed} passed, {} failed", results.len() - passed)
}

/// `{"passed", "failed", "tests": [{name, file, line, ok, duration_ms, message, output}]}`.
pub fn json(results: &[TestResult]) -> Value {
    let passed = results.iter().filter(|r| r.passed()).count();
    let tests: Vec<Value> = results
        .iter()
        .map(|r| {
            json!({
                "name": r.name,
                "file": r.file,
                "line": r.line,
                "ok": r.passed(),
                "duration_ms": (r.duration.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0,
                "message": match &r.outcome { Outcome::Failed(m) => Value::String(m.clone()), Outcome::Passed => Value::Null },
                "output": r.output,
            })
        })
        .collect();
    json!({"passed": passed, "failed": results.len() - passed, "tests": tests})
}

/// Text safe in XML 1.0 content and attributes (JUnit reports): the five markup characters
/// as entities, tab, newline and carriage return as character references (so attributes keep
/// them), and the characters XML 1.0 cannot hold at all (other C0 controls, U+FFFE, U+FFFF)
/// written out as `\u{..}` so the document still parses and the reader still sees them.
pub fn xml_escape(text: &str) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// JUnit XML: one `<testsuite>` per test file, one `<testcase>` per test, `<failure>` with the
/// message, `<system-out>` with what the test printed.
pub fn junit(results: &[TestResult]) -> String {
    let mut by_file: BTreeMap<&str, Vec<&TestResult>> = BTreeMap::new();
    for r in results {
        by_file.entry(r.file.as_str()).or_default().push(r);
    }
    let secs = |rs: &[&TestResult]| rs.iter().map(|r| r.duration.as_secs_f64()).sum::<f64>();
    let failures = |rs: &[&TestResult]| rs.iter().filter(|r| !r.passed()).count();
    let all: Vec<&TestResult> = results.iter().collect();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"kiln test\" tests=\"{}\" failures=\"{}\" errors=\"0\" time=\"{:.3}\">\n",
        all.len(),
        failures(&all),
        secs(&all)
    ));
    for (file, rs) in by_file {
        out.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\" time=\"{:.3}\">\n",
            xml_escape(file),
            rs.len(),
            failures(&rs),
            secs(&rs)
        ));
        for r in rs {
            out.push_str(&format!(
                "    <testcase name=\"{}\" classname=\"{}\" file=\"{}\" line=\"{}\" time=\"{:.3}\"",
                xml_escape(&r.name),
                xml_escape(file.trim_end_matches(".test.rhai")),
                xml_escape(file),
                r.line,
                r.duration.as_secs_f64()
            ));
            if r.passed() && r.output.is_empty() {
                out.push_str("/>\n");
                continue;
            }
            out.push_str(">\n");
            if let Outcome::Failed(m) = &r.outcome {
                out.push_str(&format!(
                    "      <failure message=\"{}\" type=\"failure\">{}</failure>\n",
                    xml_escape(m.lines().next().unwrap_or("")),
                    xml_escape(m)
                ));
            }
            if !r.output.is_empty() {
                out.push_str(&format!(
                    "      <system-out>{}</system-out>\n",
                    xml_escape(&r.output)
                ));
            }
            out.push_str("    </testcase>\n");
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}
