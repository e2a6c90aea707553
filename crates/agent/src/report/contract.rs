//! The agent's contract as the loop keeps it: the typed final answer (checked on the turn that
//! answers; a non-matching one is sent back with its violations, replacing the previous bad
//! answer so the repair never grows the context) and the budget (checked before each model
//! request and each round of tool calls).

use crate::report::{RunErrorKind, RunReport};
use kiln_registry::contract::{Budget, OutputContract, Price, Spend};

/// The contract of one run.
pub(crate) struct RunContract {
    output: Option<OutputContract>,
    budget: Budget,
    price: Option<Price>,
    /// Bad answers sent back so far.
    repairs: u32,
    /// Where the bad answer being repaired starts in the transcript.
    repairing: Option<usize>,
}

impl RunContract {
    /// The agent's contract, its budget narrowed by the request's.
    pub(crate) fn new(
        agent: &kiln_registry::agent_spec::AgentSpec,
        request: Option<&Budget>,
    ) -> Self {
        let c = &agent.contract;
        RunContract {
            output: c.output.clone(),
            budget: request.map_or_else(|| c.budget.clone(), |r| c.budget.within(r)),
            price: c.price,
            repairs: 0,
            repairing: None,
        }
    }

    /// What the run has spent so far.
    pub(crate) fn spend(&self, report: &RunReport) -> Spend {
        let (input, output) = (report.usage.input_tokens, report.usage.output_tokens);
        Spend {
            input_tokens: input,
            output_tokens: output,
            tool_calls: report
                .tool_calls
                .iter()
                .map(|c| 1 + c.nested.len() as u64)
                .sum(),
            cost_usd: self.price.map(|p| p.cost(input, output)),
        }
    }

    /// `Err` when the run may not make another model request, or `calls` more tool calls.
    pub(crate) fn check(&self, report: &RunReport, calls: u64) -> Result<(), RunErrorKind> {
        if self.budget.is_empty() {
            return Ok(());
        }
        match self.budget.exceeded(&self.spend(report), calls) {
            Some(e) => Err(RunErrorKind::Budget(e.to_string())),
            None => Ok(()),
        }
    }

    /// How many tool calls are left in the budget, if it limits them.
    pub(crate) fn calls_left(&self, report: &RunReport) -> Option<u64> {
        let allowed = self.budget.tool_calls?;
        Some(allowed.saturating_sub(self.spend(report).tool_calls))
    }

    /// What to do with the answer the model just gave (`report.answer`, the transcript's last
    /// message): `Done` when there is no contract or it matched (`report.output` is set),
    /// `Repair` to send it back, `Err` when the repairs are spent.
    pub(crate) fn answered(&mut self, report: &mut RunReport) -> Result<Verdict, RunErrorKind> {
        let Some(output) = &self.output else {
            return Ok(Verdict::Done);
        };
        let violations = match output.check(&report.answer) {
            Ok(value) => {
                report.output = Some(value);
                return Ok(Verdict::Done);
            }
            Err(v) => v,
        };
        self.repairs += 1;
        if self.repairs > output.retries {
            return Err(RunErrorKind::Output {
                attempts: self.repairs,
                violations,
            });
        }
        let last = report.messages.len().saturating_sub(1);
        // The previous bad answer and its repair give way to this one, which then starts there.
        let replace = self.repairing.map(|start| start..last);
        self.repairing = Some(replace.as_ref().map_or(last, |r| r.start));
        Ok(Verdict::Repair {
            replace,
            message: output.repair(&violations),
        })
    }
}

/// What the loop does with an answer.
pub(crate) enum Verdict {
    /// The run is done.
    Done,
    /// Drop the messages of `replace` (the previous bad answer and its repair), then send
    /// `message` and ask again.
    Repair {
        replace: Option<std::ops::Range<usize>>,
        message: String,
    },
}
