//! The report as JUnit XML for CI test views: one `<testsuite>` per model, one `<testcase>`
//! per run, a `<failure>` naming each failed evaluator with its reason.

use crate::report::{CaseRun, Report};
use kiln_testing::report::xml_escape as escape;
use std::fmt::Write;

/// The report as a JUnit XML document: `<testsuites>` holding `<testsuite name="EVAL ·
/// MODEL">` per model (in matrix order) with `<testcase classname="EVAL.MODEL" name="CASE
/// #REPEAT">` per run (repeats from 0, as in the JSON); times are in seconds.
pub fn render(report: &Report) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let total = report.results.len();
    let failures = report.results.iter().filter(|r| !r.passed).count();
    let _ = writeln!(
        out,
        "<testsuites name=\"{}\" tests=\"{total}\" failures=\"{failures}\" time=\"{}\">",
        escape(&report.eval),
        seconds(report.results.iter())
    );
    for model in &report.models {
        let runs: Vec<&CaseRun> = report
            .results
            .iter()
            .filter(|r| &r.model == model)
            .collect();
        suite(&mut out, report, model, &runs);
    }
    out.push_str("</testsuites>\n");
    out
}

fn suite(out: &mut String, report: &Report, model: &str, runs: &[&CaseRun]) {
    let failures = runs.iter().filter(|r| !r.passed).count();
    let _ = writeln!(
        out,
        "  <testsuite name=\"{} · {}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" \
         skipped=\"0\" time=\"{}\">",
        escape(&report.eval),
        escape(model),
        runs.len(),
        seconds(runs.iter().copied())
    );
    let class = escape(&format!("{}.{}", report.eval, model));
    for r in runs {
        let _ = write!(
            out,
            "    <testcase classname=\"{class}\" name=\"{} #{}\" time=\"{}\"",
            escape(&r.case),
            r.repeat,
            seconds(std::iter::once(*r))
        );
        if r.passed {
            out.push_str("/>\n");
            continue;
        }
        let lines = failure_lines(r);
        let _ = writeln!(
            out,
            ">\n      <failure message=\"{}\" type=\"eval\">{}</failure>\n    </testcase>",
            escape(&lines.join("; ")),
            escape(&lines.join("\n"))
        );
    }
    out.push_str("  </testsuite>\n");
}

/// `error: ...` for a failed run, then `evaluator: reason` for each failed verdict.
fn failure_lines(r: &CaseRun) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(err) = &r.run.error {
        lines.push(format!("error: {err}"));
    }
    for v in r.verdicts.iter().filter(|v| !v.verdict.passed) {
        lines.push(format!("{}: {}", v.evaluator, v.verdict.reason));
    }
    if lines.is_empty() {
        lines.push("failed".into());
    }
    lines
}

fn seconds<'a>(runs: impl Iterator<Item = &'a CaseRun>) -> String {
    // A fold from +0.0: an empty f64 sum is -0.0.
    let ms = runs.fold(0.0, |sum, r| sum + r.run.duration_ms.max(0.0));
    format!("{:.3}", ms / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::sample_report;

    #[test]
    fn sample_document() {
        let mut report = sample_report();
        report.results[6].verdicts[0].verdict.reason = "bad \u{1} <x> & \"q\"\nnext".into();
        let xml = render(&report);
        assert!(xml.starts_with(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"support\" \
             tests=\"8\" failures=\"3\" time=\"1.130\">\n"
        ));
        assert!(xml.contains(
            "  <testsuite name=\"support · openai:gpt-x\" tests=\"4\" failures=\"1\" \
             errors=\"0\" skipped=\"0\" time=\"0.730\">\n"
        ));
        assert!(xml.contains(
            "    <testcase classname=\"support.openai:gpt-x\" name=\"refund #0\" \
             time=\"0.080\"/>\n"
        ));
        assert!(xml.contains(
            "    <testcase classname=\"support.openai:gpt-x\" name=\"refund #1\" \
             time=\"0.120\">\n      <failure message=\"error: timeout: no answer in 30s; \
             mentions_policy: answer lacks &quot;policy&quot;; judge: grounded in the \
             policy\" type=\"eval\">error: timeout: no answer in 30s&#10;"
        ));
        assert!(xml.contains(
            "<failure message=\"mentions_policy: bad \\u{1} &lt;x&gt; &amp; \
             &quot;q&quot;&#10;next; judge: grounded in the policy\""
        ));
        assert!(!xml.contains('\u{1}'));
        assert!(xml.ends_with("  </testsuite>\n</testsuites>\n"));
    }

    #[test]
    fn empty() {
        assert_eq!(
            render(&crate::report::Report::default()),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"\" tests=\"0\" \
             failures=\"0\" time=\"0.000\">\n</testsuites>\n"
        );
    }
}
