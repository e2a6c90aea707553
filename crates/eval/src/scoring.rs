//! Every evaluator of an evaluation on one run: the built-ins and scripts' closures (on the
//! blocking pool: a closure runs Rhai) and the judges (a model request each), with what the
//! judges spent.

use super::report::{NamedVerdict, RunRecord, Usage};
use super::score;
use crate::score::judge::{self, JudgeSettings};
use kiln_registry::eval_spec::{Case, Check, EvalSpec, Verdict};

/// The verdicts of one run.
pub struct Scored {
    /// Each evaluator's, in order.
    pub verdicts: Vec<NamedVerdict>,
    /// The mean of their scores (1 with no evaluator).
    pub mean: f64,
    /// What the judges spent.
    pub judge_usage: Usage,
}

/// Applies every evaluator of `spec` to `run`.
pub async fn score(
    spec: &EvalSpec,
    case: &Case,
    run: &RunRecord,
    judges: &JudgeSettings,
) -> Scored {
    let mut verdicts = Vec::with_capacity(spec.evaluators.len());
    let mut judge_usage = Usage::default();
    for e in &spec.evaluators {
        let verdict = match &e.check {
            Check::Judge(j) => match judge::grade(j, case, run, judges).await {
                Ok(graded) => {
                    judge_usage.add(&graded.usage);
                    graded.verdict
                }
                Err(err) => {
                    judge_usage.add(&err.usage());
                    Verdict::of(false, format!("the judge failed: {err}"))
                }
            },
            Check::Custom(_) => {
                let (check, case, run) = (e.check.clone(), case.clone(), run.clone());
                tokio::task::spawn_blocking(move || score::apply(&check, &case, &run))
                    .await
                    .unwrap_or_else(|e| Verdict::of(false, format!("the evaluator stopped: {e}")))
            }
            check => score::apply(check, case, run),
        };
        verdicts.push(NamedVerdict {
            evaluator: e.name.clone(),
            verdict,
        });
    }
    let mean = match verdicts.len() {
        0 => 1.0,
        n => verdicts.iter().map(|v| v.verdict.score).sum::<f64>() / n as f64,
    };
    Scored {
        verdicts,
        mean,
        judge_usage,
    }
}
