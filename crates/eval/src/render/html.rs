//! The report as one self-contained HTML page: inline CSS, inline SVG charts, `<details>` to
//! expand, and nothing fetched and no script, so it opens from a CI artifact or a mail as it
//! is. Every string from the report is escaped (a model's answer may hold markup).
//!
//! Ids for tools and browser tests: the matrix is `#matrix`, each case's detail
//! `#case-<slug>`, each model's block in it `#case-<slug>-m<i>` (i: the model's index);
//! failed verdicts and run errors have the class `fail`.

use crate::render::escape::html as escape;
use crate::render::svg;
use crate::render::table::{dollars, percent};
use crate::report::{CallRecord, CaseRun, Change, Comparison, Report};
use std::fmt::Write;

const STYLE: &str = "\
:root{--ok:#1a7f37;--bad:#cf222e;--part:#9a6700;--fg:#1f2328;--mute:#59636e;--line:#d1d9e0}
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:var(--fg);margin:0 auto;
max-width:1100px;padding:12px}
h1{font-size:1.4em;margin:.2em 0}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid var(--line)}
h3{font-size:1.05em;margin:1.2em 0 .4em}.meta,.note{color:var(--mute)}
.scroll{overflow-x:auto}table{border-collapse:collapse}
td,th{border:1px solid var(--line);padding:4px 8px;text-align:right;white-space:nowrap}
td:first-child,th:first-child{text-align:left}
#matrix a.cell{display:block;text-decoration:none;font-weight:600;color:#fff;border-radius:3px;padding:0 6px}
.all{background:var(--ok)}.some{background:var(--part)}.none{background:var(--bad)}
.fail{color:var(--bad)}.ok{color:var(--ok)}.stopped{color:var(--bad);font-weight:600}
tr.regression td{background:#ffebe9}tr.fix td{background:#dafbe1}
figure{margin:1em 0}svg.chart{width:100%;height:auto;max-width:700px;font-size:20px}
.track{fill:#eef1f4}.bar{fill:var(--ok)}.dot{fill:#0969da;fill-opacity:.6}
.axis{stroke:var(--line)}.median{stroke:var(--fg);stroke-width:2}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:6px;margin:.3em 0}
details{border:1px solid var(--line);border-radius:4px;padding:4px 8px;margin:.4em 0}
summary{cursor:pointer;font-weight:600}.run{border-top:1px dashed var(--line);margin-top:.5em}
ul{padding-left:1.2em;margin:.3em 0}
";

/// The whole report as one HTML page (no script, no external resource).
pub fn render(report: &Report) -> String {
    let slugs = slugs(report);
    let mut out =
        String::from("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    let _ = write!(
        out,
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>eval {} · {}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n",
        escape(&report.eval),
        escape(&report.id)
    );
    out.push_str(&header(report));
    out.push_str(&summary(report));
    out.push_str(&matrix(report, &slugs));
    out.push_str("<h2>Charts</h2>\n");
    out.push_str(&svg::pass_rates(&report.summary));
    out.push_str(&svg::durations(report));
    out.push_str(&svg::costs(report));
    if let Some(c) = &report.comparison {
        out.push_str(&comparison(c, report, &slugs));
    }
    out.push_str("<h2>Cases</h2>\n");
    for (case, slug) in report.cases.iter().zip(&slugs) {
        out.push_str(&case_detail(report, case, slug));
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// Each case's id part: its name lowercased, runs of other characters than ASCII letters and
/// digits as `-`; a repeated slug gets `-2`, `-3`, ... so ids stay unique.
fn slugs(report: &Report) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for case in &report.cases {
        let mut slug = String::new();
        for c in case.name.chars() {
            if c.is_ascii_alphanumeric() {
                slug.push(c.to_ascii_lowercase());
            } else if !slug.ends_with('-') {
                slug.push('-');
            }
        }
        let base = slug.trim_matches('-').to_string();
        let base = if base.is_empty() {
            "case".to_string()
        } else {
            base
        };
        let mut slug = base.clone();
        let mut n = 2;
        while seen.contains(&slug) {
            slug = format!("{base}-{n}");
            n += 1;
        }
        seen.push(slug);
    }
    seen
}

fn slug_of<'a>(report: &Report, slugs: &'a [String], case: &str) -> Option<&'a str> {
    let i = report.cases.iter().position(|c| c.name == case)?;
    slugs.get(i).map(String::as_str)
}

fn header(report: &Report) -> String {
    let mut out = format!(
        "<h1>eval {}</h1>\n<p class=\"meta\">{} · {} · {} → {} · {}</p>\n",
        escape(&report.eval),
        escape(&report.id),
        escape(&report.target_label()),
        escape(&report.started_at),
        escape(&report.finished_at),
        report.shape()
    );
    if let Some(why) = &report.stopped {
        let _ = writeln!(
            out,
            "<p class=\"stopped\">Stopped early: {}</p>",
            escape(why)
        );
    }
    if let Some(from) = &report.rescored_from {
        let _ = writeln!(out, "<p class=\"meta\">Re-scored from {}</p>", escape(from));
    }
    out
}

fn summary(report: &Report) -> String {
    let judged = report.summary.iter().any(|s| s.judge_usage.tokens() > 0);
    let mut out = String::from(
        "<h2>Summary</h2>\n<div class=\"scroll\"><table class=\"summary\">\n<tr><th>model</th>\
         <th>runs</th><th>pass</th><th>pass@k</th><th>pass^k</th><th>score</th><th>tokens \
         in/out</th><th>cost</th><th>p50 ms</th><th>p95 ms</th>",
    );
    if judged {
        out.push_str("<th>judge tokens</th><th>judge cost</th>");
    }
    out.push_str("</tr>\n");
    for s in &report.summary {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td>\
             <td>{}/{}</td><td>{}</td><td>{:.0}</td><td>{:.0}</td>",
            escape(&s.model),
            s.runs,
            percent(s.pass_rate),
            percent(s.pass_at_k),
            percent(s.pass_all_k),
            s.mean_score,
            s.usage.input_tokens,
            s.usage.output_tokens,
            escape(&dollars(s.usage.cost_usd)),
            s.p50_ms,
            s.p95_ms
        );
        if judged {
            let _ = write!(
                out,
                "<td>{}</td><td>{}</td>",
                s.judge_usage.tokens(),
                escape(&dollars(s.judge_usage.cost_usd))
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table></div>\n");
    out
}

fn runs_of<'a>(report: &'a Report, case: &str, model: &str) -> Vec<&'a CaseRun> {
    report
        .results
        .iter()
        .filter(|r| r.case == case && r.model == model)
        .collect()
}

fn matrix(report: &Report, slugs: &[String]) -> String {
    let mut out = String::from(
        "<h2>Matrix</h2>\n<div class=\"scroll\"><table id=\"matrix\">\n<tr><th>case</th>",
    );
    for m in &report.models {
        let _ = write!(out, "<th>{}</th>", escape(m));
    }
    out.push_str("</tr>\n");
    for (case, slug) in report.cases.iter().zip(slugs) {
        let _ = write!(
            out,
            "<tr><td><a href=\"#case-{slug}\">{}</a></td>",
            escape(&case.name)
        );
        for (i, m) in report.models.iter().enumerate() {
            let runs = runs_of(report, &case.name, m);
            let passed = runs.iter().filter(|r| r.passed).count();
            let class = match passed {
                _ if runs.is_empty() => {
                    out.push_str("<td>-</td>");
                    continue;
                }
                p if p == runs.len() => "all",
                0 => "none",
                _ => "some",
            };
            let _ = write!(
                out,
                "<td><a class=\"cell {class}\" href=\"#case-{slug}-m{i}\" \
                 title=\"{}\">{passed}/{}</a></td>",
                escape(&format!("{} on {m}", case.name)),
                runs.len()
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table></div>\n");
    out
}

fn comparison(c: &Comparison, report: &Report, slugs: &[String]) -> String {
    let mut out = format!(
        "<h2>Against baseline {}</h2>\n<p class=\"meta\">{} · tolerance {} · {} regressions · \
         {} fixes</p>\n<div class=\"scroll\"><table class=\"comparison\">\n<tr><th>case</th>\
         <th>model</th><th>before</th><th>after</th><th>score Δ</th><th>cost Δ</th><th>change\
         </th></tr>\n",
        escape(&c.baseline),
        escape(&c.baseline_id),
        percent(c.tolerance),
        c.regressions,
        c.fixes
    );
    for d in &c.cases {
        let (class, word) = match d.change {
            Change::Regression => ("regression", "regression"),
            Change::Fix => ("fix", "fix"),
            Change::Same => ("same", "same"),
        };
        let case = match slug_of(report, slugs, &d.case) {
            Some(slug) => format!("<a href=\"#case-{slug}\">{}</a>", escape(&d.case)),
            None => escape(&d.case),
        };
        let cost = d
            .cost_delta
            .map(|v| format!("{v:+.4}"))
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(
            out,
            "<tr class=\"{class}\"><td>{case}</td><td>{}</td><td>{}</td><td>{}</td><td>{:+.2}</td>\
             <td>{cost}</td><td>{word}</td></tr>",
            escape(&d.model),
            percent(d.before_pass_rate),
            percent(d.after_pass_rate),
            d.score_delta
        );
    }
    out.push_str("</table></div>\n");
    out
}

fn case_detail(report: &Report, case: &kiln_registry::eval_spec::Case, slug: &str) -> String {
    let mut out = format!(
        "<section id=\"case-{slug}\">\n<h3>{}</h3>\n<div>input</div><pre>{}</pre>\n",
        escape(&case.name),
        escape(&pretty(&case.input))
    );
    if let Some(expected) = &case.expected {
        let _ = writeln!(
            out,
            "<div>expected</div><pre>{}</pre>",
            escape(&pretty(expected))
        );
    }
    if !case.metadata.is_null() {
        let _ = writeln!(
            out,
            "<div>metadata</div><pre>{}</pre>",
            escape(&pretty(&case.metadata))
        );
    }
    for (i, model) in report.models.iter().enumerate() {
        let runs = runs_of(report, &case.name, model);
        if runs.is_empty() {
            continue;
        }
        let passed = runs.iter().filter(|r| r.passed).count();
        // Open where something failed, so the reason is in view without a click.
        let open = if passed < runs.len() { " open" } else { "" };
        let _ = writeln!(
            out,
            "<details id=\"case-{slug}-m{i}\"{open}><summary>{} · {passed}/{} passed</summary>",
            escape(model),
            runs.len()
        );
        for r in runs {
            out.push_str(&run_detail(r));
        }
        out.push_str("</details>\n");
    }
    out.push_str("</section>\n");
    out
}

fn run_detail(r: &CaseRun) -> String {
    let (class, mark) = if r.passed {
        ("ok", "passed")
    } else {
        ("fail", "failed")
    };
    let mut out = format!(
        "<div class=\"run\"><p><b>repeat {}</b> · <span class=\"{class}\">{mark}</span> · score \
         {:.2} · {:.0} ms · {} rounds · {} tokens · {}{}</p>\n",
        r.repeat,
        r.score,
        r.run.duration_ms,
        r.run.rounds,
        r.run.usage.tokens(),
        escape(&dollars(r.run.usage.cost_usd)),
        if r.cached { " · cached" } else { "" }
    );
    if let Some(id) = &r.run.run_id {
        let _ = writeln!(out, "<p class=\"meta\">run {}</p>", escape(id));
    }
    if let Some(err) = &r.run.error {
        let _ = writeln!(out, "<p class=\"fail\">error: {}</p>", escape(err));
    }
    let _ = writeln!(out, "<div>answer</div><pre>{}</pre>", escape(&r.run.answer));
    if let Some(output) = &r.run.output {
        let _ = writeln!(
            out,
            "<div>output</div><pre>{}</pre>",
            escape(&pretty(output))
        );
    }
    if !r.run.tool_calls.is_empty() {
        out.push_str("<div>tool calls</div>\n");
        out.push_str(&calls(&r.run.tool_calls));
    }
    out.push_str("<ul class=\"verdicts\">\n");
    for v in &r.verdicts {
        let class = if v.verdict.passed { "ok" } else { "fail" };
        let label = v
            .verdict
            .label
            .as_deref()
            .map(|l| format!(" [{}]", escape(l)));
        let _ = writeln!(
            out,
            "<li class=\"{class}\"><b>{}</b> {} ({:.2}){}: {}</li>",
            escape(&v.evaluator),
            if v.verdict.passed { "passed" } else { "failed" },
            v.verdict.score,
            label.unwrap_or_default(),
            escape(&v.verdict.reason)
        );
    }
    out.push_str("</ul></div>\n");
    out
}

/// Tool calls as a nested list: name, arguments, and the result or error.
fn calls(list: &[CallRecord]) -> String {
    let mut out = String::from("<ul class=\"calls\">\n");
    for c in list {
        let _ = write!(
            out,
            "<li><code>{}</code>({})",
            escape(&c.name),
            escape(&compact(&c.args))
        );
        if c.is_error {
            let _ = write!(
                out,
                " <span class=\"fail\">error: {}</span>",
                escape(&text(&c.result))
            );
        } else if !c.result.is_null() {
            let _ = write!(out, " → {}", escape(&text(&c.result)));
        }
        if !c.nested.is_empty() {
            out.push_str(&calls(&c.nested));
        }
        out.push_str("</li>\n");
    }
    out.push_str("</ul>\n");
    out
}

fn pretty(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        v => serde_json::to_string_pretty(v).unwrap_or_default(),
    }
}

fn compact(v: &serde_json::Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        v => compact(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::sample_report;

    #[test]
    fn escaped_and_self_contained() {
        let page = render(&sample_report());
        assert!(page.contains("<pre>&lt;script&gt;alert(1)&lt;/script&gt;</pre>"));
        assert!(!page.contains("<script"));
        assert!(!page.to_lowercase().contains("<script"));
        for attr in ["src=", "href="] {
            for scheme in ["\"http://", "\"https://", "'http", "\"//"] {
                assert!(!page.contains(&format!("{attr}{scheme}")), "{attr}{scheme}");
            }
        }
        assert!(!page.contains("@import") && !page.contains("url("));
        assert!(page.contains("<table id=\"matrix\">"));
        assert!(page.contains(
            "<td><a class=\"cell some\" href=\"#case-refund-m0\" title=\"refund on \
             openai:gpt-x\">1/2</a></td><td><a class=\"cell all\" href=\"#case-refund-m1\" \
             title=\"refund on mock:free\">2/2</a></td>"
        ));
        assert!(page.contains("<section id=\"case-refund\">"));
        assert!(
            page.contains("<details id=\"case-greet-m1\" open><summary>mock:free · 0/2 passed")
        );
        assert!(page.contains("<details id=\"case-greet-m0\"><summary>"));
        assert!(page.contains(
            "<li class=\"fail\"><b>mentions_policy</b> failed (0.00): answer lacks \
             &quot;policy&quot;</li>"
        ));
        assert!(page.contains("<p class=\"fail\">error: timeout: no answer in 30s</p>"));
        assert!(page.contains(
            "<li><code>run_program</code>({&quot;code&quot;:&quot;lookup(\\&quot;order\\&quot;) \
             &lt; 3&quot;}) <span class=\"fail\">error: boom: &lt;lookup&gt; failed</span>\
             <ul class=\"calls\">\n<li><code>lookup</code>({&quot;id&quot;:&quot;A&amp;B&quot;})"
        ));
        assert!(page.contains("<tr class=\"regression\"><td><a href=\"#case-refund\">refund</a>"));
        assert!(page.contains("<p class=\"stopped\">Stopped early: budget of $1.00 reached</p>"));
        assert_eq!(page.matches("<svg").count(), 3);
    }

    #[test]
    fn empty_and_unpriced() {
        let page = render(&Report::default());
        assert!(page.contains("<table id=\"matrix\">"));
        assert!(page.contains("No run has a price."));
        assert!(page.ends_with("</body>\n</html>\n"));
    }

    #[test]
    fn slugs_are_unique() {
        let mut report = sample_report();
        report.cases[1].name = "Refund!".into();
        report.cases.push(report.cases[0].clone());
        report.cases[2].name = "<>".into();
        assert_eq!(slugs(&report), ["refund", "refund-2", "case"]);
    }
}
