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

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' | '\r' => out.push(c),
            // XML 1.0 forbids other control characters even escaped.
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
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
            escape(file),
            rs.len(),
            failures(&rs),
            secs(&rs)
        ));
        for r in rs {
            out.push_str(&format!(
                "    <testcase name=\"{}\" classname=\"{}\" file=\"{}\" line=\"{}\" time=\"{:.3}\"",
                escape(&r.name),
                escape(file.trim_end_matches(".test.rhai")),
                escape(file),
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
                    escape(m.lines().next().unwrap_or("")),
                    escape(m)
                ));
            }
            if !r.output.is_empty() {
                out.push_str(&format!(
                    "      <system-out>{}</system-out>\n",
                    escape(&r.output)
                ));
            }
            out.push_str("    </testcase>\n");
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}
