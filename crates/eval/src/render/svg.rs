//! The HTML report's charts as inline SVG (no script, no fonts to fetch): a bar chart of pass
//! rates and strip plots of run durations and costs, one row per model. Each scales to the
//! page's width through its `viewBox`.

use crate::render::escape::html as escape;
use crate::report::{ModelSummary, Report};
use crate::stats::percentile;
use std::fmt::Write;

const WIDTH: f64 = 600.0;
const ROW: f64 = 52.0;
const BAR: f64 = 16.0;
const PAD: f64 = 8.0;

/// The pass rate of each model as a horizontal bar, its percentage at the bar's end.
pub(crate) fn pass_rates(summary: &[ModelSummary]) -> String {
    if summary.is_empty() {
        return "<p class=\"note\">No models.</p>".into();
    }
    let height = ROW * summary.len() as f64 + PAD;
    let mut svg = open(height, "Pass rate per model");
    let span = WIDTH - 2.0 * PAD - 60.0;
    for (i, s) in summary.iter().enumerate() {
        let y = i as f64 * ROW + PAD;
        label(&mut svg, y, &s.model);
        let w = (s.pass_rate.clamp(0.0, 1.0) * span).max(1.0);
        let _ = write!(
            svg,
            "<rect class=\"track\" x=\"{PAD}\" y=\"{by}\" width=\"{span}\" height=\"{BAR}\"/>\
             <rect class=\"bar\" x=\"{PAD}\" y=\"{by}\" width=\"{w:.1}\" height=\"{BAR}\">\
             <title>{pct}</title></rect>\
             <text x=\"{tx:.1}\" y=\"{ty}\">{pct}</text>",
            by = y + 24.0,
            pct = format!("{:.1}%", s.pass_rate * 100.0),
            tx = PAD + span + 6.0,
            ty = y + 38.0,
        );
    }
    svg.push_str("</svg></figure>");
    svg
}

/// Each model's run durations as dots on a shared axis, with its median marked.
pub(crate) fn durations(report: &Report) -> String {
    let rows = per_model(report, |r| Some(r.run.duration_ms));
    strip(&rows, "Run duration per model", |v| format!("{v:.0} ms"))
}

/// Each model's run costs as dots on a shared axis (only priced runs), with its median.
pub(crate) fn costs(report: &Report) -> String {
    let rows = per_model(report, |r| r.run.usage.cost_usd);
    if rows.iter().all(|(_, v)| v.is_empty()) {
        return "<p class=\"note\">No run has a price.</p>".into();
    }
    strip(&rows, "Cost per run per model", |v| format!("${v:.4}"))
}

type Rows<'a> = Vec<(&'a str, Vec<f64>)>;

fn per_model(report: &Report, value: impl Fn(&crate::report::CaseRun) -> Option<f64>) -> Rows<'_> {
    report
        .models
        .iter()
        .map(|m| {
            let mut v: Vec<f64> = report
                .results
                .iter()
                .filter(|r| &r.model == m)
                .filter_map(&value)
                .filter(|v| v.is_finite())
                .collect();
            v.sort_by(f64::total_cmp);
            (m.as_str(), v)
        })
        .collect()
}

fn strip(rows: &Rows<'_>, title: &str, fmt: impl Fn(f64) -> String) -> String {
    if rows.iter().all(|(_, v)| v.is_empty()) {
        return "<p class=\"note\">No runs.</p>".into();
    }
    let max = rows
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(0.0_f64, f64::max);
    let max = if max > 0.0 { max } else { 1.0 };
    let span = WIDTH - 2.0 * PAD;
    let x = |v: f64| PAD + (v.max(0.0) / max) * span;
    let height = ROW * rows.len() as f64 + 30.0;
    let mut svg = open(height, title);
    for (i, (model, values)) in rows.iter().enumerate() {
        let y = i as f64 * ROW + PAD;
        let median = percentile(values, 50.0);
        let text = if values.is_empty() {
            format!("{model} · none")
        } else {
            format!("{model} · median {}", fmt(median))
        };
        label(&mut svg, y, &text);
        let cy = y + 32.0;
        let _ = write!(
            svg,
            "<line class=\"axis\" x1=\"{PAD}\" y1=\"{cy}\" x2=\"{:.1}\" y2=\"{cy}\"/>",
            PAD + span
        );
        for v in values {
            let _ = write!(
                svg,
                "<circle class=\"dot\" cx=\"{:.1}\" cy=\"{cy}\" r=\"4\"><title>{}</title></circle>",
                x(*v),
                escape(&fmt(*v))
            );
        }
        if !values.is_empty() {
            let mx = x(median);
            let _ = write!(
                svg,
                "<line class=\"median\" x1=\"{mx:.1}\" y1=\"{}\" x2=\"{mx:.1}\" y2=\"{}\"/>",
                cy - 8.0,
                cy + 8.0
            );
        }
    }
    let ay = ROW * rows.len() as f64 + 22.0;
    let _ = write!(
        svg,
        "<text x=\"{PAD}\" y=\"{ay}\">0</text><text x=\"{:.1}\" y=\"{ay}\" \
         text-anchor=\"end\">{}</text></svg></figure>",
        PAD + span,
        escape(&fmt(max))
    );
    svg
}

fn open(height: f64, title: &str) -> String {
    format!(
        "<figure><figcaption>{t}</figcaption><svg class=\"chart\" role=\"img\" \
         aria-label=\"{t}\" viewBox=\"0 0 {WIDTH} {height}\" \
         preserveAspectRatio=\"xMinYMin meet\">",
        t = escape(title)
    )
}

fn label(svg: &mut String, y: f64, text: &str) {
    let _ = write!(
        svg,
        "<text x=\"{PAD}\" y=\"{}\">{}</text>",
        y + 18.0,
        escape(text)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::sample_report;

    #[test]
    fn charts() {
        let report = sample_report();
        let bars = pass_rates(&report.summary);
        assert!(bars.contains("<text x=\"8\" y=\"26\">openai:gpt-x</text>"));
        assert!(bars.contains("<text x=\"538.0\" y=\"46\">75.0%</text>"));
        assert!(bars.contains("width=\"393.0\""), "{bars}"); // 0.75 × 524
        let d = durations(&report);
        assert_eq!(d.matches("<circle").count(), 8);
        assert!(d.contains("openai:gpt-x · median 120 ms"));
        let c = costs(&report);
        assert_eq!(c.matches("<circle").count(), 4); // mock:free is not priced
        assert!(c.contains(">mock:free · none</text>"));
        assert!(costs(&Report::default()).contains("No run has a price."));
        assert!(durations(&Report::default()).contains("No runs."));
        assert!(pass_rates(&[]).contains("No models."));
    }
}
