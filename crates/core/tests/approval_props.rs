//! Approvals as one rule, as a property: over grant sets (each capability a tool requires
//! granted `allow`, `ask`, both, or not at all), a call policy that asks or not, and doors (nobody to ask, a terminal, an asker
//! such as an MCP client or `kiln serve`'s approvals, `--yes`), each answering yes, no, or
//! failing to ask, the handler never runs where a grant says `ask` without a yes, runs exactly
//! once with one, and every `ask` is asked once per call, before the handler.

use kiln_core::capability::{Capability, GrantMode, Grants};
use kiln_core::context::{Approver, CallContext, Policy, Reachable, Tools, Verdict};
use kiln_core::error::SourceLoc;
use kiln_core::failure::{FailureKind, ToolFailure};
use kiln_core::services::Services;
use kiln_core::tool::parts::ToolParts;
use kiln_core::tool::{Handler, Tool};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Counts its runs and, like a gated host function, asks again for each capability it uses
/// (answered without a question when the call was approved for it).
struct Counting {
    runs: Arc<AtomicUsize>,
    uses: Vec<String>,
}

impl Handler for Counting {
    fn call(
        &self,
        _: &Tool,
        _: &Value,
        ctx: &CallContext,
        _: Instant,
    ) -> Result<Value, ToolFailure> {
        for cap in &self.uses {
            let ask = ctx
                .granted
                .grants
                .grant_covering(cap, |_| true)
                .is_some_and(|g| g.mode == GrantMode::NeedsApproval);
            if ask
                && !matches!(
                    kiln_core::approval::ask_person(ctx, "vault_read", None, cap, "inside"),
                    Ok(true)
                )
            {
                return Err(ToolFailure::visible(FailureKind::Denied, "refused inside"));
            }
        }
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(json!("ran"))
    }
}

/// How a door answers.
#[derive(Debug, Clone, Copy)]
enum Answer {
    Yes,
    No,
    CannotAsk,
}

/// Answers every question the same way, keeping them.
struct Door {
    answer: Answer,
    asked: Mutex<Vec<String>>,
}

impl Approver for Door {
    fn approve(&self, cap: &str, _question: &str) -> Result<bool, String> {
        self.asked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(cap.to_string());
        match self.answer {
            Answer::Yes => Ok(true),
            Answer::No => Ok(false),
            Answer::CannotAsk => Err("this client cannot ask".into()),
        }
    }
}

/// Who answers at the door.
#[derive(Debug, Clone, Copy)]
enum Who {
    Nobody,
    Terminal(Answer),
    Asker(Answer),
    AssumeYes,
}

fn tool(requires: &[&str], runs: Arc<AtomicUsize>) -> Arc<Tool> {
    let parts = ToolParts {
        name: "vault_read".into(),
        description: "Read a secret".into(),
        requires: requires.iter().map(|c| c.to_string()).collect(),
        schema: json!({"type": "object"}),
        output_schema: None,
        exclusive: false,
        timeout: Duration::from_secs(10),
        retries: 0,
        rate_limit: None,
        loc: SourceLoc::new("props.rs", 1, 1),
        title: None,
        hints: Default::default(),
        task: None,
        handler: Arc::new(Counting {
            runs,
            // Like `write_file`, it asks again for what it touches; `vault` is the tool's alone.
            uses: requires
                .iter()
                .filter(|c| **c != "vault")
                .map(|c| c.to_string())
                .collect(),
        }),
    };
    Arc::new(parts.build().expect("tool"))
}

const CAPS: [&str; 3] = ["vault", "store", "fs.write"];

/// A snapshot holding one call policy that asks before every call.
struct Careful(SourceLoc);

impl Policy for Careful {
    fn name(&self) -> &str {
        "careful"
    }
    fn applies_to(&self, _tool: &str) -> bool {
        true
    }
    fn check(&self, _tool: &str, _args: &Value, _ctx: &CallContext) -> Verdict {
        Verdict::NeedsApproval("reading secrets is logged".into())
    }
    fn loc(&self) -> &SourceLoc {
        &self.0
    }
}

impl Tools for Careful {
    fn reach(&self, _name: &str) -> Option<Arc<dyn Reachable>> {
        None
    }
    fn policies(&self) -> Vec<Arc<dyn Policy>> {
        vec![Arc::new(Careful(SourceLoc::new("careful.rhai", 1, 1)))]
    }
}

proptest! {
    #[test]
    fn the_handler_runs_once_with_every_yes_and_never_without(
        modes in proptest::collection::vec(0u8..4, CAPS.len()),
        needed in proptest::collection::vec(any::<bool>(), CAPS.len()),
        policy_asks in any::<bool>(),
        who in prop_oneof![
            Just(Who::Nobody),
            Just(Who::AssumeYes),
            prop_oneof![Just(Answer::Yes), Just(Answer::No)].prop_map(Who::Terminal),
            prop_oneof![Just(Answer::Yes), Just(Answer::No), Just(Answer::CannotAsk)].prop_map(Who::Asker),
        ],
    ) {
        // 0: not granted, 1: allow, 2: ask, 3: allow and ask.
        let mut grants = Grants::default();
        for (cap, mode) in CAPS.iter().zip(&modes) {
            let parsed = || Capability::parse(cap).expect("cap");
            if matches!(mode, 1 | 3) {
                grants.add(parsed(), GrantMode::Allow);
            }
            if matches!(mode, 2 | 3) {
                grants.add(parsed(), GrantMode::NeedsApproval);
            }
        }
        let requires: Vec<&str> = CAPS.iter().zip(&needed).filter(|(_, n)| **n).map(|(c, _)| *c).collect();
        let granted = requires.iter().all(|c| modes[CAPS.iter().position(|x| x == c).unwrap_or(0)] != 0);
        let mut asking: Vec<&str> = requires
            .iter()
            .copied()
            .filter(|c| matches!(modes[CAPS.iter().position(|x| x == c).unwrap_or(0)], 2 | 3))
            .collect();
        if policy_asks {
            asking.push("policy:careful");
        }

        let mut services = Services::new(".".into());
        let door = Arc::new(Door { answer: Answer::Yes, asked: Mutex::new(Vec::new()) });
        let terminal_asked = Arc::new(Mutex::new(Vec::new()));
        let mut asker: Option<Arc<Door>> = None;
        let yes = match who {
            Who::Nobody => false,
            Who::AssumeYes => {
                services.assume_yes = true;
                true
            }
            Who::Terminal(answer) => {
                let asked = terminal_asked.clone();
                services.approver = Some(Box::new(move |cap: &str, _q: &str| {
                    asked.lock().unwrap_or_else(|e| e.into_inner()).push(cap.to_string());
                    matches!(answer, Answer::Yes)
                }));
                matches!(answer, Answer::Yes)
            }
            Who::Asker(answer) => {
                asker = Some(Arc::new(Door { answer, asked: Mutex::new(Vec::new()) }));
                matches!(answer, Answer::Yes)
            }
        };
        drop(door);
        let mut ctx = CallContext::new(grants, Arc::new(services));
        ctx.approval.approver = asker.clone().map(|a| a as Arc<dyn Approver>);
        if policy_asks {
            ctx.run.registry = Some(Arc::new(Careful(SourceLoc::new("careful.rhai", 1, 1))));
        }
        let runs = Arc::new(AtomicUsize::new(0));
        let outcome = tool(&requires, runs.clone()).execute(&json!({}), &ctx);

        let should_run = granted && (asking.is_empty() || yes);
        prop_assert_eq!(runs.load(Ordering::SeqCst), usize::from(should_run), "{:?}", outcome);
        prop_assert_eq!(outcome.result.is_ok(), should_run, "{:?}", outcome);
        if granted && !should_run {
            let failure = outcome.result.as_ref().err().map(|f| (f.kind, f.message.clone()));
            prop_assert!(matches!(&failure, Some((FailureKind::Denied, m)) if m.contains("needs approval") || m.contains("(not approved)")), "{:?}", failure);
        }
        // Each `ask` was asked at most once for the call, and only where a grant says `ask`.
        let asked: Vec<String> = match who {
            Who::Terminal(_) => terminal_asked.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            Who::Asker(_) => asker.map(|a| a.asked.lock().unwrap_or_else(|e| e.into_inner()).clone()).unwrap_or_default(),
            _ => Vec::new(),
        };
        for cap in &asked {
            prop_assert!(asking.contains(&cap.as_str()), "asked {} without an ask grant", cap);
            prop_assert_eq!(asked.iter().filter(|c| *c == cap).count(), 1, "asked {} twice", cap);
        }
        if granted && yes && !matches!(who, Who::AssumeYes) {
            prop_assert_eq!(asked.len(), asking.len(), "every ask asked before the handler");
        }
    }
}
