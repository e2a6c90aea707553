//! The summary row of each model: pass rates (plain, pass@k, pass^k), mean score, tokens and
//! dollars, and run-duration percentiles.

use crate::report::{CaseRun, CaseSummary, ModelSummary, Usage};

/// One row per model of `models`, in that order, from the runs of `results` on it.
///
/// `repeat` is k of pass@k and pass^k; the rates themselves count the runs each case really
/// has (a budget may stop an eval before every repeat ran), so only cases with at least one
/// run on a model count for its pass@k and pass^k. A model without runs gets a row of zeros.
pub fn summarize(models: &[String], _repeat: u32, results: &[CaseRun]) -> Vec<ModelSummary> {
    models
        .iter()
        .map(|model| {
            let runs: Vec<&CaseRun> = results.iter().filter(|r| &r.model == model).collect();
            summarize_one(model, &runs)
        })
        .collect()
}

/// One row per case and model, in the models' then the cases' order of the results.
pub fn per_case(models: &[String], results: &[CaseRun]) -> Vec<CaseSummary> {
    let mut out: Vec<CaseSummary> = Vec::new();
    for model in models {
        for r in results.iter().filter(|r| &r.model == model) {
            let i = match out
                .iter()
                .position(|c| &c.model == model && c.case == r.case)
            {
                Some(i) => i,
                None => {
                    out.push(CaseSummary {
                        case: r.case.clone(),
                        model: model.clone(),
                        ..CaseSummary::default()
                    });
                    out.len() - 1
                }
            };
            let row = &mut out[i];
            row.runs += 1;
            row.passed += u32::from(r.passed);
            row.mean_score += r.score;
        }
    }
    for row in &mut out {
        let runs = row.runs.max(1) as f64;
        row.mean_score /= runs;
        row.pass_rate = f64::from(row.passed) / runs;
        row.pass_at_k = if row.passed > 0 { 1.0 } else { 0.0 };
        row.pass_all_k = if row.passed == row.runs { 1.0 } else { 0.0 };
    }
    out
}

fn summarize_one(model: &str, runs: &[&CaseRun]) -> ModelSummary {
    let mut usage = Usage::default();
    let mut judge_usage = Usage::default();
    for r in runs {
        usage.add(&r.run.usage);
        judge_usage.add(&r.judge_usage);
    }
    let passed = runs.iter().filter(|r| r.passed).count();
    // Cases in first-seen order, with (runs, passes).
    let mut cases: Vec<(&str, usize, usize)> = Vec::new();
    for r in runs {
        let pass = usize::from(r.passed);
        match cases.iter_mut().find(|(c, _, _)| *c == r.case) {
            Some(entry) => {
                entry.1 += 1;
                entry.2 += pass;
            }
            None => cases.push((&r.case, 1, pass)),
        }
    }
    let any = cases.iter().filter(|(_, _, p)| *p > 0).count();
    let all = cases.iter().filter(|(_, n, p)| p == n).count();
    let mut durations: Vec<f64> = runs.iter().map(|r| r.run.duration_ms).collect();
    durations.sort_by(f64::total_cmp);
    ModelSummary {
        model: model.to_string(),
        runs: runs.len() as u32,
        passed: passed as u32,
        pass_rate: ratio(passed, runs.len()),
        pass_at_k: ratio(any, cases.len()),
        pass_all_k: ratio(all, cases.len()),
        mean_score: mean(runs.iter().map(|r| r.score)),
        usage,
        judge_usage,
        p50_ms: percentile(&durations, 50.0),
        p95_ms: percentile(&durations, 95.0),
    }
}

/// `part / whole`, 0 when `whole` is 0 (no NaN in a report).
pub fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The mean of `values`, 0 when there are none.
pub fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 { 0.0 } else { sum / n as f64 }
}

/// The nearest-rank percentile `p` (0..=100) of `sorted` (ascending): the value at rank
/// `ceil(p / 100 × n)` (1-based, at least 1), so it is always one of the values, never an
/// interpolation. 0 for no values.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let n = sorted.len();
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    sorted[rank.clamp(1, n) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::RunRecord;

    fn run(model: &str, case: usize, repeat: u32, passed: bool, ms: f64) -> CaseRun {
        CaseRun {
            case: format!("c{case}"),
            model: model.into(),
            repeat,
            passed,
            score: if passed { 1.0 } else { 0.25 },
            run: RunRecord {
                duration_ms: ms,
                usage: Usage {
                    input_tokens: 10,
                    output_tokens: 2,
                    cost_usd: Some(0.5),
                },
                ..RunRecord::default()
            },
            judge_usage: Usage {
                input_tokens: 1,
                output_tokens: 1,
                cost_usd: None,
            },
            ..CaseRun::default()
        }
    }

    #[test]
    fn ten_cases_three_repeats() {
        // c0..c6 pass every time; c7 fails once; c8 fails twice; c9 fails always.
        let mut results = Vec::new();
        let mut ms = 0.0;
        for case in 0..10 {
            for rep in 0..3 {
                let fails = match case {
                    7 => rep == 0,
                    8 => rep < 2,
                    9 => true,
                    _ => false,
                };
                ms += 10.0;
                results.push(run("m", case, rep, !fails, ms));
            }
        }
        results.push(run("other", 0, 0, false, 5.0));
        let s = summarize(&["m".into(), "none".into()], 3, &results);
        let m = &s[0];
        assert_eq!(m.model, "m");
        assert_eq!(m.runs, 30);
        assert_eq!(m.passed, 24);
        assert_eq!(m.pass_rate, 0.8);
        assert_eq!(m.pass_at_k, 0.9); // all but c9
        assert_eq!(m.pass_all_k, 0.7); // c0..c6
        assert!((m.mean_score - (24.0 + 6.0 * 0.25) / 30.0).abs() < 1e-12);
        assert_eq!(m.usage.input_tokens, 300);
        assert_eq!(m.usage.output_tokens, 60);
        assert_eq!(m.usage.cost_usd, Some(15.0));
        assert_eq!(m.judge_usage.tokens(), 60);
        assert_eq!(m.judge_usage.cost_usd, None);
        // Durations 10, 20, ..., 300: rank ceil(.5*30)=15 → 150; ceil(.95*30)=29 → 290.
        assert_eq!(m.p50_ms, 150.0);
        assert_eq!(m.p95_ms, 290.0);
        let none = &s[1];
        assert_eq!(none.model, "none");
        assert_eq!(none.runs, 0);
        assert_eq!(none.pass_rate, 0.0);
        assert_eq!(none.pass_at_k, 0.0);
        assert_eq!(none.mean_score, 0.0);
        assert_eq!(none.p95_ms, 0.0);
        assert_eq!(none.usage, Usage::default());
    }

    #[test]
    fn nearest_rank() {
        assert_eq!(percentile(&[], 50.0), 0.0);
        assert_eq!(percentile(&[7.0], 95.0), 7.0);
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 50.0), 2.0);
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 95.0), 4.0);
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 0.0), 1.0);
    }
}

#[cfg(test)]
mod per_case_tests {
    use super::*;

    fn run(case: &str, model: &str, passed: bool) -> CaseRun {
        CaseRun {
            case: case.into(),
            model: model.into(),
            passed,
            score: if passed { 1.0 } else { 0.0 },
            ..CaseRun::default()
        }
    }

    #[test]
    fn a_case_that_passed_some_repeats_has_pass_at_k_but_not_pass_all_k() {
        let results = [
            run("a", "m", true),
            run("a", "m", false),
            run("a", "m", true),
            run("b", "m", true),
        ];
        let rows = per_case(&["m".into()], &results);
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].runs, rows[0].passed), (3, 2));
        assert!((rows[0].pass_rate - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!((rows[0].pass_at_k, rows[0].pass_all_k), (1.0, 0.0));
        assert_eq!((rows[1].pass_at_k, rows[1].pass_all_k), (1.0, 1.0));
    }
}
