//! `evaluation("name").agent("support").add_case(#{ input, expected }).cases("cases.jsonl")
//! .evaluator(answer_contains())...`: datasets and their evaluators in scripts.
//!
//! The built-in evaluators are values made by functions (`answer_contains()`,
//! `called("lookup_order")`, `judge(#{ rubric, model })`...); a script's own is a closure
//! `|case, run| ...` given with a name: `.evaluator("polite", |c, run| ...)` (`case` is a reserved word of
//! Rhai, as `eval` is). What a closure
//! returns says how the run did: `true`/`false`, a score in 0..1 (passing from 0.5), a label
//! (a string: it informs, never fails), or `#{ pass, score, label, reason }`.

pub(crate) mod cases;
pub(crate) mod checks;

use crate::dsl::{collect_draft, lock, strings};
use crate::{ScriptUnit, convert, sandbox};
use checks::EvaluatorValue;
use kiln_core::error::{LoadError, SourceLoc};
use kiln_registry::eval_spec::{Case, CaseCheck, Check, EvalSpec, EvalTarget, Evaluator, Verdict};
use rhai::{Array, Dynamic, Engine, EvalAltResult, FnPtr, Map, NativeCallContext, Position};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a script's evaluator may take on one run.
const CHECK_DEADLINE: Duration = Duration::from_secs(5);

/// What a script said about one eval.
#[derive(Debug, Default)]
pub struct EvalDraft {
    name: String,
    pos: Position,
    description: Option<String>,
    targets: Vec<(EvalTarget, Position)>,
    cases: Vec<(Map, Position)>,
    case_files: Vec<(String, Position)>,
    evaluators: Vec<(Given, Position)>,
    models: Vec<String>,
    repeat: Option<u32>,
    concurrency: Option<usize>,
    errors: Vec<(Position, String)>,
}

/// An evaluator as `.evaluator(...)` was given it, in declaration order.
#[derive(Debug)]
enum Given {
    /// A built-in (`answer_contains()`), under its own name or the one given.
    Value(EvaluatorValue),
    /// A script's closure with its name.
    Closure(String, FnPtr),
}

/// Handle to an eval draft.
#[derive(Clone)]
pub struct EvalBuilder(Arc<Mutex<EvalDraft>>);

impl EvalBuilder {
    fn with(&mut self, f: impl FnOnce(&mut EvalDraft)) -> EvalBuilder {
        f(&mut lock(&self.0));
        self.clone()
    }
}

/// A closure of a script scoring runs.
struct ScriptCheck {
    f: FnPtr,
    unit: Arc<ScriptUnit>,
}

impl std::fmt::Debug for ScriptCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ScriptCheck({} in {})", self.f.fn_name(), self.unit.path)
    }
}

impl CaseCheck for ScriptCheck {
    fn check(&self, case: &Value, run: &Value) -> Result<Verdict, String> {
        let (case, run) = (convert::to_dynamic(case), convert::to_dynamic(run));
        let deadline = Some(Instant::now() + CHECK_DEADLINE);
        let unit = &self.unit;
        let out = sandbox::with_watch(deadline, None, || {
            self.f.call::<Dynamic>(&unit.engine, &unit.ast, (case, run))
        })
        .map_err(|e| crate::failure::describe(&e, &unit.path))?;
        verdict_of(out)
    }
}

/// What a closure's value says about a run.
fn verdict_of(v: Dynamic) -> Result<Verdict, String> {
    if let Some(b) = v.clone().try_cast::<bool>() {
        return Ok(Verdict::of(b, ""));
    }
    if let Some(score) = number(&v) {
        return score_verdict(score, None, String::new());
    }
    if v.is_string() {
        return Ok(Verdict {
            passed: true,
            score: 1.0,
            label: Some(v.to_string()),
            reason: String::new(),
        });
    }
    let Some(m) = v.clone().try_cast::<Map>() else {
        return Err(format!(
            "an evaluator returns true/false, a score in 0..1, a label or #{{ pass, score, label, reason }}; this one returned a {}",
            v.type_name()
        ));
    };
    let reason = m.get("reason").map(|r| r.to_string()).unwrap_or_default();
    let label = m.get("label").map(|l| l.to_string());
    let pass = m.get("pass").and_then(|p| p.as_bool().ok());
    match (m.get("score").and_then(number), pass) {
        (Some(score), pass) => {
            let mut out = score_verdict(score, label, reason)?;
            out.passed = pass.unwrap_or(out.passed);
            Ok(out)
        }
        (None, Some(pass)) => Ok(Verdict {
            label,
            ..Verdict::of(pass, reason)
        }),
        (None, None) if label.is_some() => Ok(Verdict {
            label,
            ..Verdict::of(true, reason)
        }),
        (None, None) => Err("the evaluator's map has none of pass, score, label".into()),
    }
}

fn number(v: &Dynamic) -> Option<f64> {
    v.as_float()
        .ok()
        .or_else(|| v.as_int().ok().map(|i| i as f64))
}

fn score_verdict(score: f64, label: Option<String>, reason: String) -> Result<Verdict, String> {
    if !(0.0..=1.0).contains(&score) {
        return Err(format!("the evaluator's score {score} is not in 0..1"));
    }
    Ok(Verdict {
        passed: score >= 0.5,
        score,
        label,
        reason,
    })
}

/// Turns a draft into an eval of `unit`, reading its cases files.
pub fn finish(d: EvalDraft, unit: &Arc<ScriptUnit>) -> Result<EvalSpec, Vec<LoadError>> {
    let at = |pos: Position| crate::loc(&unit.path, pos);
    let what = format!("evaluation \"{}\"", d.name);
    let mut errors: Vec<LoadError> = d
        .errors
        .iter()
        .map(|(p, m)| LoadError::at(at(*p), format!("{what}: {m}")))
        .collect();
    let mut fail = |pos: Position, m: String| errors.push(LoadError::at(at(pos), m));
    let target = match d.targets.as_slice() {
        [(t, _)] => Some(t.clone()),
        [] => {
            fail(
                d.pos,
                format!(
                    "{what} names nothing to run: add .agent(name), .tool(name) or .pipeline(name)"
                ),
            );
            None
        }
        [_, (_, pos), ..] => {
            fail(*pos, format!("{what} runs one thing; it already names one"));
            None
        }
    };
    let (cases, case_files) = cases(&d, unit, &what, &mut fail);
    if cases.is_empty() && d.case_files.is_empty() {
        fail(
            d.pos,
            format!(
                "{what} has no cases: add .add_case(#{{ input, expected }}) or .cases(\"file.jsonl\")"
            ),
        );
    }
    let evaluators = evaluators(&d, unit, &what, &mut fail);
    if evaluators.is_empty() && d.evaluators.is_empty() {
        fail(
            d.pos,
            format!("{what} has no evaluators: add .evaluator(answer_contains()) or another"),
        );
    }
    match target {
        Some(target) if errors.is_empty() => Ok(EvalSpec {
            name: d.name,
            description: d.description,
            target,
            cases,
            evaluators,
            models: d.models,
            repeat: d.repeat,
            concurrency: d.concurrency,
            case_files,
            loc: at(d.pos),
        }),
        _ => Err(errors),
    }
}

/// The script's cases, then each file's; a name used twice is an error at the second.
fn cases(
    d: &EvalDraft,
    unit: &ScriptUnit,
    what: &str,
    fail: &mut impl FnMut(Position, String),
) -> (Vec<Case>, Vec<std::path::PathBuf>) {
    let mut out: Vec<Case> = Vec::new();
    for (i, (map, pos)) in d.cases.iter().enumerate() {
        match case_of(map, i + 1, crate::loc(&unit.path, *pos)) {
            Ok(c) => out.push(c),
            Err(e) => fail(*pos, format!("{what}: case: {e}")),
        }
    }
    let mut files = Vec::new();
    for (file, pos) in &d.case_files {
        let read = cases::resolve(&unit.path, file).and_then(|p| {
            files.push(std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone()));
            cases::read(&p)
        });
        match read {
            Ok(cases) => out.extend(cases),
            Err(e) => match e.loc {
                Some(loc) => fail_at_file(fail, *pos, &loc, what, &e.message),
                None => fail(*pos, format!("{what}: {}", e.message)),
            },
        }
    }
    let mut seen = std::collections::HashSet::new();
    for c in &out {
        if !seen.insert(c.name.clone()) {
            fail(
                d.pos,
                format!(
                    "{what}: two cases are named \"{}\" (the second at {})",
                    c.name, c.loc
                ),
            );
        }
    }
    (out, files)
}

/// A mistake inside a cases file is reported at the file's line and column; the script's
/// call is named too.
fn fail_at_file(
    fail: &mut impl FnMut(Position, String),
    pos: Position,
    loc: &SourceLoc,
    what: &str,
    message: &str,
) {
    fail(pos, format!("{what}: {loc}: {message}"));
}

fn case_of(map: &Map, n: usize, loc: SourceLoc) -> Result<Case, String> {
    let v = convert::to_json(&Dynamic::from_map(map.clone()))?;
    let Value::Object(mut o) = v else {
        return Err("expected a map".into());
    };
    for key in o.keys() {
        if !matches!(key.as_str(), "name" | "input" | "expected" | "metadata") {
            return Err(format!(
                "unknown key \"{key}\" (name, input, expected, metadata)"
            ));
        }
    }
    let input = o.remove("input").ok_or("a case needs an `input`")?;
    let name = match o.remove("name") {
        Some(Value::String(s)) => s,
        None => format!("case {n}"),
        Some(other) => return Err(format!("`name` must be a string, found {other}")),
    };
    Ok(Case {
        name,
        input,
        expected: o.remove("expected"),
        metadata: o.remove("metadata").unwrap_or(Value::Null),
        loc,
    })
}

/// The evaluators in declaration order; two of one name are an error at the second (reports
/// and baselines tell verdicts apart by name).
fn evaluators(
    d: &EvalDraft,
    unit: &Arc<ScriptUnit>,
    what: &str,
    fail: &mut impl FnMut(Position, String),
) -> Vec<Evaluator> {
    let mut out: Vec<Evaluator> = Vec::new();
    for (given, pos) in &d.evaluators {
        let made = match given {
            Given::Value(e) => (e.check.clone())
                .map(|check| (e.name.clone(), check))
                .map_err(|m| format!("{}: {m}", e.name)),
            Given::Closure(name, f) => closure(name, f, unit).map(|check| (name.clone(), check)),
        };
        match made {
            Ok((name, _)) if out.iter().any(|e| e.name == name) => fail(
                *pos,
                format!(
                    "{what}: two evaluators are named \"{name}\": name this one, .evaluator(\"NAME\", ...)"
                ),
            ),
            Ok((name, check)) => out.push(Evaluator {
                name,
                check,
                loc: crate::loc(&unit.path, *pos),
            }),
            Err(m) => fail(*pos, format!("{what}: {m}")),
        }
    }
    out
}

/// A script's closure as an evaluator, if it takes the case and the run.
fn closure(name: &str, f: &FnPtr, unit: &Arc<ScriptUnit>) -> Result<Check, String> {
    match crate::handler_arity(&unit.ast, f) {
        Some(2) => Ok(Check::Custom(Arc::new(ScriptCheck {
            f: f.clone(),
            unit: unit.clone(),
        }))),
        Some(n) => Err(format!(
            "evaluator \"{name}\" takes {n} parameters; expected |c, run| (the case, the run)"
        )),
        None => Err(format!(
            "evaluator \"{name}\": function \"{}\" is not defined in this file",
            f.fn_name()
        )),
    }
}

fn new_eval(ctx: NativeCallContext, name: &str) -> Result<EvalBuilder, Box<EvalAltResult>> {
    let pos = ctx.call_position();
    let draft = Arc::new(Mutex::new(EvalDraft {
        name: name.to_string(),
        pos,
        ..EvalDraft::default()
    }));
    collect_draft(&draft, "evaluation", pos)?;
    Ok(EvalBuilder(draft))
}

/// Registers `eval(...)`, its methods and the built-in evaluators.
pub fn register(engine: &mut Engine) {
    engine.register_type_with_name::<EvalBuilder>("EvalBuilder");
    engine.register_type_with_name::<EvaluatorValue>("Evaluator");
    engine.register_fn("evaluation", new_eval);
    engine.register_fn("description", |b: &mut EvalBuilder, text: &str| {
        b.with(|d| d.description = Some(text.to_string()))
    });
    for (method, kind) in [("agent", 0), ("tool", 1), ("pipeline", 2)] {
        engine.register_fn(
            method,
            move |ctx: NativeCallContext, b: &mut EvalBuilder, name: &str| {
                let target = match kind {
                    0 => EvalTarget::Agent(name.to_string()),
                    1 => EvalTarget::Tool(name.to_string()),
                    _ => EvalTarget::Pipeline(name.to_string()),
                };
                let pos = ctx.call_position();
                b.with(|d| d.targets.push((target, pos)))
            },
        );
    }
    engine.register_fn(
        "add_case",
        |ctx: NativeCallContext, b: &mut EvalBuilder, case: Map| {
            let pos = ctx.call_position();
            b.with(|d| d.cases.push((case, pos)))
        },
    );
    engine.register_fn(
        "cases",
        |ctx: NativeCallContext, b: &mut EvalBuilder, file: &str| {
            let pos = ctx.call_position();
            b.with(|d| d.case_files.push((file.to_string(), pos)))
        },
    );
    engine.register_fn(
        "cases",
        |ctx: NativeCallContext, b: &mut EvalBuilder, list: Array| {
            let pos = ctx.call_position();
            b.with(|d| {
                for item in list {
                    match item.try_cast::<Map>() {
                        Some(m) => d.cases.push((m, pos)),
                        None => d.errors.push((
                            pos,
                            "cases([...]): each case is a map #{ input, expected }".into(),
                        )),
                    }
                }
            })
        },
    );
    register_settings(engine);
    engine.register_fn(
        "evaluator",
        |ctx: NativeCallContext, b: &mut EvalBuilder, e: EvaluatorValue| {
            let pos = ctx.call_position();
            b.with(|d| d.evaluators.push((Given::Value(e), pos)))
        },
    );
    engine.register_fn(
        "evaluator",
        |ctx: NativeCallContext, b: &mut EvalBuilder, name: &str, f: FnPtr| {
            let pos = ctx.call_position();
            b.with(|d| {
                d.evaluators
                    .push((Given::Closure(name.to_string(), f), pos))
            })
        },
    );
    engine.register_fn(
        "evaluator",
        |ctx: NativeCallContext, b: &mut EvalBuilder, name: &str, e: EvaluatorValue| {
            let pos = ctx.call_position();
            let named = EvaluatorValue {
                name: name.to_string(),
                ..e
            };
            b.with(|d| d.evaluators.push((Given::Value(named), pos)))
        },
    );
    checks::register(engine);
}

fn register_settings(engine: &mut Engine) {
    engine.register_fn(
        "models",
        |ctx: NativeCallContext, b: &mut EvalBuilder, list: Array| {
            let pos = ctx.call_position();
            b.with(|d| match strings(&list) {
                Ok(l) if l.iter().all(|m| !m.trim().is_empty()) => d.models = l,
                Ok(_) => d.errors.push((
                    pos,
                    "models: a model is named `provider:model`, never empty".into(),
                )),
                Err(e) => d.errors.push((pos, format!("models: {e}"))),
            })
        },
    );
    engine.register_fn(
        "repeat",
        |ctx: NativeCallContext, b: &mut EvalBuilder, n: i64| {
            let pos = ctx.call_position();
            b.with(|d| match u32::try_from(n) {
                Ok(n) if (1..=1000).contains(&n) => d.repeat = Some(n),
                _ => d
                    .errors
                    .push((pos, format!("repeat: {n} is not in 1..=1000"))),
            })
        },
    );
    engine.register_fn(
        "concurrency",
        |ctx: NativeCallContext, b: &mut EvalBuilder, n: i64| {
            let pos = ctx.call_position();
            b.with(|d| match usize::try_from(n) {
                Ok(n) if (1..=256).contains(&n) => d.concurrency = Some(n),
                _ => d
                    .errors
                    .push((pos, format!("concurrency: {n} is not in 1..=256"))),
            })
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_closure_returns_is_a_verdict() {
        assert!(verdict_of(Dynamic::from(true)).unwrap().passed);
        assert!(!verdict_of(Dynamic::from(false)).unwrap().passed);
        let v = verdict_of(Dynamic::from(0.25_f64)).unwrap();
        assert_eq!((v.passed, v.score), (false, 0.25));
        let v = verdict_of(Dynamic::from("friendly")).unwrap();
        assert_eq!((v.passed, v.label.as_deref()), (true, Some("friendly")));
        let mut m = Map::new();
        m.insert("score".into(), Dynamic::from(0.9_f64));
        m.insert("pass".into(), Dynamic::from(false));
        m.insert("reason".into(), "too long".into());
        let v = verdict_of(Dynamic::from_map(m)).unwrap();
        assert_eq!(
            (v.passed, v.score, v.reason.as_str()),
            (false, 0.9, "too long")
        );
        assert!(
            verdict_of(Dynamic::from(3_i64))
                .unwrap_err()
                .contains("not in 0..1")
        );
        assert!(
            verdict_of(Dynamic::UNIT)
                .unwrap_err()
                .contains("returned a ()")
        );
    }
}
