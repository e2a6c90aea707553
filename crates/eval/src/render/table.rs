//! The report as plain text for a terminal: a header, one aligned row per model, the failing
//! runs with their reasons, and the comparison with the baseline. No colour codes, so it
//! reads the same in a pipe, a CI log and a file.

use crate::report::{CaseDelta, Change, ModelSummary, Report, Usage, counted};
use std::fmt::Write;

/// The whole report as text (lines end with `\n`). Repeats are numbered as in the JSON
/// (from 0).
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    out.push_str(&header(report));
    out.push('\n');
    if let Some(why) = &report.stopped {
        let _ = writeln!(out, "stopped early: {why}");
    }
    if let Some(from) = &report.rescored_from {
        let _ = writeln!(out, "rescored from {from}");
    }
    out.push('\n');
    out.push_str(&summary_table(&report.summary));
    out.push_str(&flaky(report));
    out.push_str(&failing(report));
    out.push_str(&comparison(report));
    out
}

/// The cases that passed some of their repeats but not all: where pass@k and pass^k part.
fn flaky(report: &Report) -> String {
    let rows: Vec<String> = (report.per_case.iter())
        .filter(|c| c.pass_at_k > 0.0 && c.pass_all_k == 0.0)
        .map(|c| {
            format!(
                "  {} · {}  {}/{} passed\n",
                c.case, c.model, c.passed, c.runs
            )
        })
        .collect();
    match rows.is_empty() {
        true => String::new(),
        false => format!(
            "\nflaky ({}): passed some repeats, not all\n{}",
            rows.len(),
            rows.concat()
        ),
    }
}

fn header(report: &Report) -> String {
    format!(
        "eval {} · {} · {} · {}",
        report.eval,
        report.id,
        report.target_label(),
        report.shape()
    )
}

/// `$0.0123`, or `-` when not priced.
pub(crate) fn dollars(cost: Option<f64>) -> String {
    match cost {
        Some(c) => format!("${c:.4}"),
        None => "-".into(),
    }
}

/// `0.5` as `50.0%`.
pub(crate) fn percent(rate: f64) -> String {
    format!("{:.1}%", rate * 100.0)
}

fn summary_table(rows: &[ModelSummary]) -> String {
    let judged = rows.iter().any(|r| r.judge_usage != Usage::default());
    let mut head = vec![
        "model",
        "runs",
        "pass",
        "pass@k",
        "pass^k",
        "score",
        "tokens in/out",
        "cost",
        "p50 ms",
        "p95 ms",
    ];
    if judged {
        head.extend(["judge tokens", "judge cost"]);
    }
    let mut table = vec![head.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
    for r in rows {
        let mut row = vec![
            r.model.clone(),
            r.runs.to_string(),
            percent(r.pass_rate),
            percent(r.pass_at_k),
            percent(r.pass_all_k),
            format!("{:.2}", r.mean_score),
            format!("{}/{}", r.usage.input_tokens, r.usage.output_tokens),
            dollars(r.usage.cost_usd),
            format!("{:.0}", r.p50_ms),
            format!("{:.0}", r.p95_ms),
        ];
        if judged {
            row.push(r.judge_usage.tokens().to_string());
            row.push(dollars(r.judge_usage.cost_usd));
        }
        table.push(row);
    }
    aligned(&table)
}

/// Rows as columns padded to their widest cell (the first column left-aligned, numbers
/// right-aligned), two spaces apart, trailing spaces trimmed.
fn aligned(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c > 0 {
                line.push_str("  ");
            }
            let pad = " ".repeat(widths[c] - cell.chars().count());
            if c == 0 {
                line.push_str(cell);
                line.push_str(&pad);
            } else {
                line.push_str(&pad);
                line.push_str(cell);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The failing runs with their reasons; repeats of a case that failed alike are one entry
/// (`repeats 0, 1, 2`), so a deterministic failure is not listed once per repeat.
fn failing(report: &Report) -> String {
    let fails: Vec<_> = report.results.iter().filter(|r| !r.passed).collect();
    if fails.is_empty() {
        return String::new();
    }
    // (case, model, reasons) in first-seen order, with the repeats that failed so.
    let mut groups: Vec<(&str, &str, Vec<String>, Vec<u32>)> = Vec::new();
    for r in &fails {
        let mut reasons = Vec::new();
        if let Some(err) = &r.run.error {
            reasons.push(format!("error: {}", one_line(err)));
        }
        for v in r.verdicts.iter().filter(|v| !v.verdict.passed) {
            reasons.push(format!("{}: {}", v.evaluator, one_line(&v.verdict.reason)));
        }
        let same = |g: &&mut (&str, &str, Vec<String>, Vec<u32>)| {
            g.0 == r.case && g.1 == r.model && g.2 == reasons
        };
        match groups.iter_mut().find(same) {
            Some(g) => g.3.push(r.repeat),
            None => groups.push((&r.case, &r.model, reasons, vec![r.repeat])),
        }
    }
    let mut out = format!("\nfailing ({})\n", fails.len());
    for (case, model, reasons, repeats) in groups {
        let which: Vec<String> = repeats.iter().map(u32::to_string).collect();
        let word = if repeats.len() == 1 {
            "repeat"
        } else {
            "repeats"
        };
        let _ = writeln!(out, "  {case} · {model} · {word} {}", which.join(", "));
        for reason in reasons {
            let _ = writeln!(out, "    {reason}");
        }
    }
    out
}

/// A reason on one line (a model's words may hold newlines), its control characters shown as
/// `�`, so a model's answer cannot send escape sequences to the terminal.
fn one_line(s: &str) -> String {
    let words: Vec<&str> = s.split_whitespace().collect();
    (words.join(" ").chars())
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect()
}

fn comparison(report: &Report) -> String {
    let Some(c) = &report.comparison else {
        return String::new();
    };
    let mut out = format!(
        "\nagainst baseline {} ({}), tolerance {}\n",
        c.baseline,
        c.baseline_id,
        percent(c.tolerance)
    );
    let moved = |change: Change| c.cases.iter().filter(move |d| d.change == change);
    for (change, word) in [(Change::Regression, "regression"), (Change::Fix, "fix")] {
        for d in moved(change) {
            let _ = writeln!(out, "  {word:<10}  {}", delta_line(d));
        }
    }
    let same = c.cases.len() as u32 - c.regressions.min(c.cases.len() as u32);
    let same = same.saturating_sub(c.fixes);
    let _ = writeln!(
        out,
        "{}, {}, {} same",
        counted(c.regressions as usize, "regression"),
        if c.fixes == 1 {
            "1 fix".to_string()
        } else {
            format!("{} fixes", c.fixes)
        },
        same
    );
    out
}

fn delta_line(d: &CaseDelta) -> String {
    let mut s = format!(
        "{} · {}  {} → {}  score {:+.2}",
        d.case,
        d.model,
        percent(d.before_pass_rate),
        percent(d.after_pass_rate),
        d.score_delta
    );
    if let Some(cost) = d.cost_delta {
        let _ = write!(
            s,
            "  cost {}{}",
            if cost < 0.0 { "-" } else { "+" },
            dollars(Some(cost.abs()))
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::sample_report;

    #[test]
    fn sample_lines() {
        let text = render(&sample_report());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "eval support · ev_1 · agent helpdesk · 2 models × 2 cases × 2 repeats"
        );
        assert_eq!(lines[1], "stopped early: budget of $1.00 reached");
        assert_eq!(
            lines[3..6],
            [
                "model         runs   pass  pass@k  pass^k  score  tokens in/out     cost  \
                 p50 ms  p95 ms  judge tokens  judge cost",
                "openai:gpt-x     4  75.0%  100.0%   50.0%   0.75         400/80  $0.0400     \
                 120     400            28     $0.0030",
                "mock:free        4  50.0%   50.0%   50.0%   0.50         400/80        -     \
                 100     100             0           -",
            ]
        );
        assert!(text.contains(
            "\nfailing (3)\n  refund · openai:gpt-x · repeat 1\n    error: timeout: no answer \
             in 30s\n    mentions_policy: answer lacks \"policy\"\n"
        ));
        assert!(
            text.contains("  greet · mock:free · repeats 0, 1\n"),
            "{text}"
        );
        assert!(text.contains("\nagainst baseline main (ev_0), tolerance 10.0%\n"));
        assert!(text.contains(
            "  regression  refund · openai:gpt-x  100.0% → 50.0%  score -0.50  cost +$0.0050\n"
        ));
        assert!(text.contains("  fix         refund · mock:free  0.0% → 100.0%  score +1.00\n"));
        assert!(text.ends_with("1 regression, 1 fix, 0 same\n"));
    }

    #[test]
    fn a_models_escape_sequences_never_reach_the_terminal() {
        assert_eq!(
            one_line("red \u{1b}[31mtext\n next"),
            "red \u{fffd}[31mtext next"
        );
    }

    #[test]
    fn empty_report() {
        let text = render(&Report::default());
        assert_eq!(
            text,
            "eval  ·  · - · 0 models × 0 cases × 0 repeats\n\nmodel  runs  pass  pass@k  \
             pass^k  score  tokens in/out  cost  p50 ms  p95 ms\n"
        );
    }
}
