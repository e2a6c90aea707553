//! A run against a baseline: per model and case, the pass rate over its repeats then and now,
//! and whether it moved beyond the tolerance.

use crate::report::{CaseDelta, CaseRun, Change, Comparison, Report};
use crate::stats::{mean, ratio};

/// Compares `now` with `baseline` (saved as `baseline_name`) for every (model, case) that
/// has runs in both, in `now`'s order (models, then cases).
///
/// A pair is a regression when its pass rate now is below the baseline's by more than
/// `tolerance` (a drop of exactly `tolerance` is not one), a fix when it is above by more,
/// and the same otherwise. The cost delta is given only when every run on both sides is
/// priced.
pub fn compare(now: &Report, baseline: &Report, baseline_name: &str, tolerance: f64) -> Comparison {
    let mut cases = Vec::new();
    for model in &now.models {
        for case in &now.cases {
            let after = runs_of(now, model, &case.name);
            let before = runs_of(baseline, model, &case.name);
            if after.is_empty() || before.is_empty() {
                continue;
            }
            cases.push(delta(&case.name, model, &before, &after, tolerance));
        }
    }
    let count = |c: Change| cases.iter().filter(|d: &&CaseDelta| d.change == c).count() as u32;
    Comparison {
        baseline: baseline_name.to_string(),
        baseline_id: baseline.id.clone(),
        tolerance,
        regressions: count(Change::Regression),
        fixes: count(Change::Fix),
        cases,
    }
}

/// Whether the comparison found a regression (`kiln eval --baseline` then exits non-zero).
pub fn regressed(c: &Comparison) -> bool {
    c.regressions > 0
}

fn runs_of<'a>(report: &'a Report, model: &str, case: &str) -> Vec<&'a CaseRun> {
    report
        .results
        .iter()
        .filter(|r| r.model == model && r.case == case)
        .collect()
}

fn pass_rate(runs: &[&CaseRun]) -> f64 {
    ratio(runs.iter().filter(|r| r.passed).count(), runs.len())
}

/// Mean dollars per run, when every run is priced.
fn mean_cost(runs: &[&CaseRun]) -> Option<f64> {
    let costs: Option<Vec<f64>> = runs.iter().map(|r| r.run.usage.cost_usd).collect();
    costs.map(|c| mean(c.into_iter()))
}

fn delta(
    case: &str,
    model: &str,
    before: &[&CaseRun],
    after: &[&CaseRun],
    tolerance: f64,
) -> CaseDelta {
    let before_pass_rate = pass_rate(before);
    let after_pass_rate = pass_rate(after);
    let change = if after_pass_rate < before_pass_rate - tolerance {
        Change::Regression
    } else if after_pass_rate > before_pass_rate + tolerance {
        Change::Fix
    } else {
        Change::Same
    };
    let score = |runs: &[&CaseRun]| mean(runs.iter().map(|r| r.score));
    let cost_delta = match (mean_cost(before), mean_cost(after)) {
        (Some(b), Some(a)) => Some(a - b),
        _ => None,
    };
    CaseDelta {
        case: case.to_string(),
        model: model.to_string(),
        before_pass_rate,
        after_pass_rate,
        score_delta: score(after) - score(before),
        cost_delta,
        change,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{RunRecord, Usage};
    use kiln_registry::eval_spec::Case;
    use serde_json::Value;

    fn report(id: &str, runs: &[(&str, &str, &[bool])], cost: Option<f64>) -> Report {
        let mut r = Report {
            id: id.into(),
            repeat: 4,
            ..Report::default()
        };
        for (model, case, passes) in runs {
            if !r.models.iter().any(|m| m == model) {
                r.models.push(model.to_string());
            }
            if !r.cases.iter().any(|c| c.name == *case) {
                r.cases.push(Case {
                    name: case.to_string(),
                    input: Value::Null,
                    expected: None,
                    metadata: Value::Null,
                    loc: Default::default(),
                });
            }
            for (i, p) in passes.iter().enumerate() {
                r.results.push(CaseRun {
                    case: case.to_string(),
                    model: model.to_string(),
                    repeat: i as u32,
                    passed: *p,
                    score: if *p { 1.0 } else { 0.0 },
                    run: RunRecord {
                        usage: Usage {
                            cost_usd: cost,
                            ..Usage::default()
                        },
                        ..RunRecord::default()
                    },
                    ..CaseRun::default()
                });
            }
        }
        r
    }

    const T: bool = true;
    const F: bool = false;

    #[test]
    fn regressions_fixes_and_tolerance() {
        let base = report(
            "ev_base",
            &[
                ("m", "a", &[T, T, T, T]),
                ("m", "b", &[F, F, F, F]),
                ("m", "c", &[T, T, T, T]),
                ("m", "d", &[T, T, T, T]),
                ("m", "gone", &[T]),
            ],
            Some(0.25),
        );
        let now = report(
            "ev_now",
            &[
                ("m", "a", &[T, F, F, T]), // 1.0 → 0.5: regression
                ("m", "b", &[T, T, T, F]), // 0.0 → 0.75: fix
                ("m", "c", &[T, T, T, F]), // 1.0 → 0.75: exactly the tolerance, same
                ("m", "d", &[T, T, T, T]), // same
                ("m", "new", &[F]),        // not in the baseline
                ("x", "a", &[F]),          // model not in the baseline
            ],
            Some(0.5),
        );
        let c = compare(&now, &base, "main", 0.25);
        assert_eq!(c.baseline, "main");
        assert_eq!(c.baseline_id, "ev_base");
        assert_eq!(c.tolerance, 0.25);
        let got: Vec<(&str, f64, f64, Change)> = c
            .cases
            .iter()
            .map(|d| {
                (
                    d.case.as_str(),
                    d.before_pass_rate,
                    d.after_pass_rate,
                    d.change,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("a", 1.0, 0.5, Change::Regression),
                ("b", 0.0, 0.75, Change::Fix),
                ("c", 1.0, 0.75, Change::Same),
                ("d", 1.0, 1.0, Change::Same),
            ]
        );
        assert_eq!(c.cases[0].score_delta, -0.5);
        assert_eq!(c.cases[0].cost_delta, Some(0.25));
        assert_eq!((c.regressions, c.fixes), (1, 1));
        assert!(regressed(&c));
    }

    #[test]
    fn unpriced_and_empty() {
        let base = report("b", &[("m", "a", &[T])], None);
        let now = report("n", &[("m", "a", &[T])], Some(1.0));
        let c = compare(&now, &base, "b", 0.0);
        assert_eq!(c.cases[0].cost_delta, None);
        assert_eq!(c.cases[0].change, Change::Same);
        assert!(!regressed(&c));
        let empty = compare(&Report::default(), &base, "b", 0.0);
        assert!(empty.cases.is_empty());
        assert_eq!((empty.regressions, empty.fixes), (0, 0));
    }
}
