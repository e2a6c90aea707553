//! `kiln eval --rescore ID`: the evaluation's current evaluators applied to the runs eval run
//! ID recorded, asking no model for the runs (a judge among the evaluators is still asked:
//! it is an evaluator).

use super::report::{CaseRun, Report, SCHEMA_VERSION};
use super::{run, scoring, stats};
use crate::score::judge::JudgeSettings;
use kiln_registry::eval_spec::{Case, EvalSpec};

/// A new report scoring `recorded`'s runs with `spec`'s evaluators.
pub async fn rescore(spec: &EvalSpec, recorded: &Report, judges: &JudgeSettings) -> Report {
    let mut results = Vec::with_capacity(recorded.results.len());
    for old in &recorded.results {
        let case = case_of(spec, recorded, &old.case);
        let scored = scoring::score(spec, &case, &old.run, judges).await;
        let passed = old.run.error.is_none() && scored.verdicts.iter().all(|v| v.verdict.passed);
        results.push(CaseRun {
            passed,
            score: if old.run.error.is_some() {
                0.0
            } else {
                scored.mean
            },
            verdicts: scored.verdicts,
            judge_usage: scored.judge_usage,
            ..old.clone()
        });
    }
    Report {
        schema_version: SCHEMA_VERSION,
        id: run::new_id(),
        eval: spec.name.clone(),
        target: recorded.target.clone(),
        started_at: kiln_script::math::now_iso(),
        finished_at: kiln_script::math::now_iso(),
        summary: stats::summarize(&recorded.models, recorded.repeat, &results),
        per_case: stats::per_case(&recorded.models, &results),
        models: recorded.models.clone(),
        repeat: recorded.repeat,
        evaluators: spec.evaluators.iter().map(|e| e.name.clone()).collect(),
        cases: recorded.cases.clone(),
        results,
        stopped: recorded.stopped.clone(),
        rescored_from: Some(recorded.id.clone()),
        comparison: None,
    }
}

/// The case as the script says it now (its expected answer may have been corrected), else as
/// recorded.
fn case_of(spec: &EvalSpec, recorded: &Report, name: &str) -> Case {
    spec.cases
        .iter()
        .chain(&recorded.cases)
        .find(|c| c.name == name)
        .cloned()
        .unwrap_or_else(|| Case {
            name: name.to_string(),
            input: serde_json::Value::Null,
            expected: None,
            metadata: serde_json::Value::Null,
            loc: Default::default(),
        })
}
