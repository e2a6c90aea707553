//! Approvals in a durable run: a journaled step cannot stop in the middle to wait for a
//! person, so the approvals a call needs are found before its step (the needs-approval grants
//! its tool relies on, and the `needs_approval` of each call policy that applies), each is
//! waited for as a durable promise of the journal, and the step then runs with the decisions
//! already made.

use crate::journal::{Decided, StepJournal};
use crate::report::RunErrorKind;
use kiln_core::approval::grant_question;
use kiln_core::context::{Approver, CallContext};
use kiln_core::tool::Tool;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// What the call will ask, as `(label, question)`: a capability name or `policy:NAME`.
pub(crate) fn questions(tool: &Tool, args: &Value, ctx: &CallContext) -> Vec<(String, String)> {
    if ctx.run.services.assume_yes || !tool.violations(args).is_empty() {
        return Vec::new();
    }
    // The same grants `Tool::admit` asks for, with the same questions.
    let mut asked: Vec<(String, String)> = ctx
        .granted
        .grants
        .asking_for(&tool.requires)
        .into_iter()
        .map(|grant| {
            let question = grant_question(&tool.name, grant, &args.to_string());
            (grant.cap.name.clone(), question)
        })
        .collect();
    // The policies run once more when the call does; here they only say what they will ask.
    let recording = Arc::new(Recording::default());
    let mut dry = ctx.clone();
    dry.approval.approver = Some(recording.clone());
    let validate = |v: &Value| tool.violations(v);
    let _ = kiln_core::tool::policy::apply(&tool.name, &validate, args, &dry);
    asked.extend(recording.take());
    asked
}

/// Waits for each decision; the approver the call's step then runs with.
pub(crate) async fn decide(
    journal: &dyn StepJournal,
    questions: Vec<(String, String)>,
) -> Result<Arc<dyn Approver>, RunErrorKind> {
    let mut decided = BTreeMap::new();
    for (label, question) in questions {
        let decision = journal.approval(label.clone(), question).await?;
        decided.insert(label, decision);
    }
    Ok(Arc::new(Answered(decided)))
}

/// Answers every question with "yes", keeping them.
#[derive(Default)]
struct Recording(Mutex<Vec<(String, String)>>);

impl Recording {
    fn take(&self) -> Vec<(String, String)> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Approver for Recording {
    fn approve(&self, cap: &str, question: &str) -> Result<bool, String> {
        let mut asked = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if asked.iter().all(|(label, _)| label != cap) {
            asked.push((cap.to_string(), question.to_string()));
        }
        Ok(true)
    }
}

/// The decisions made before the step, by label.
struct Answered(BTreeMap<String, Decided>);

impl Approver for Answered {
    fn approve(&self, cap: &str, _question: &str) -> Result<bool, String> {
        match self.0.get(cap) {
            Some(Decided::Approved) => Ok(true),
            Some(Decided::Denied(reason)) if reason.is_empty() => Ok(false),
            Some(Decided::Denied(reason)) => Err(format!("it was denied: {reason}")),
            None => Err(
                "it was not asked before the call ran (a durable run asks a call's approvals before its step)"
                    .into(),
            ),
        }
    }
}
