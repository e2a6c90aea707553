//! `ask` grants through the MCP client: before a tool whose capabilities are granted with
//! `--ask` runs, the person behind the client is asked once for the call — with
//! `elicitation/create` on a 2025-11-25 session, with an `input_required` result on the
//! 2026-07-28 revision (the client answers and retries the call). A yes turns those grants into
//! plain ones for this call only; a no, or a client that cannot ask, refuses the call with a
//! message saying how to grant the capability instead.
//!
//! The answer is only as trustworthy as the client, as with any elicitation: the client is the
//! one that shows the question to a person.

pub(crate) mod questions;
pub(crate) mod rounds;

use kiln_core::capability::{Capability, GrantMode, Grants};
use kiln_core::tool::Tool;
use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, ClientResult, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationSchema, InputRequest, InputRequests, InputRequiredResult,
    ServerRequest,
};
use rmcp::service::RequestContext;
use serde_json::json;

/// The key of kiln's question in an `input_required` round (echoed back by the client).
const INPUT_KEY: &str = "kiln_approval";
/// The boolean the approval form asks for.
const APPROVE: &str = "approve";

/// What to do with a call whose capabilities are granted with `ask`.
pub enum Approval {
    /// Go ahead with these grants (the asked ones now plain).
    Approved(Grants),
    /// Answer the call with this refusal.
    Refused(String),
    /// Answer with this question; the client retries the call with the answer (2026-07-28).
    InputRequired(InputRequiredResult),
    /// The client cannot be asked.
    CannotAsk(String),
}

/// The tool's requirements an `ask` grant covers (empty: nothing to ask).
pub fn asked(tool: &Tool, grants: &Grants) -> Vec<Capability> {
    // The one rule (`Grants::asking_for`, as `Tool::admit` asks it): asked here, before the
    // call, the door's way; the approved grants are then plain for the call.
    let asking = grants.asking_for(&tool.requires);
    tool.requires
        .iter()
        .filter(|r| asking.iter().any(|g| g.cap.name == r.name))
        .cloned()
        .collect()
}

/// Asks the client whether `tool` may use `caps` for this call.
pub async fn approve(
    tool: &str,
    caps: &[Capability],
    grants: &Grants,
    req: &CallToolRequestParams,
    cx: &RequestContext<RoleServer>,
) -> Approval {
    let question = question(tool, caps);
    let can_elicit = cx
        .client_capabilities()
        .is_some_and(|c| c.elicitation.is_some());
    let stateless = cx.protocol_version().is_some_and(|v| !v.has_initialize());
    if stateless {
        // 2026-07-28: stateless; the answer comes back in the retried request.
        if let Some(answer) = req.input_responses.as_ref().and_then(|r| r.get(INPUT_KEY)) {
            let answer = serde_json::from_value::<ElicitResult>(answer.clone());
            return decide(tool, caps, grants, answer.ok());
        }
        if !can_elicit {
            return Approval::CannotAsk(cannot_ask(tool, caps));
        }
        let mut requests = InputRequests::new();
        requests.insert(
            INPUT_KEY.to_string(),
            InputRequest::Elicitation(ElicitRequest::new(form(question))),
        );
        return Approval::InputRequired(InputRequiredResult::from_input_requests(requests));
    }
    if !can_elicit {
        return Approval::CannotAsk(cannot_ask(tool, caps));
    }
    let asked = cx
        .peer
        .send_request(ServerRequest::ElicitRequest(ElicitRequest::new(form(
            question,
        ))))
        .await;
    match asked {
        Ok(ClientResult::ElicitResult(answer)) => decide(tool, caps, grants, Some(answer)),
        Ok(_) => decide(tool, caps, grants, None),
        Err(e) => Approval::Refused(format!(
            "tool \"{tool}\" was refused: asking the MCP client to approve {} failed: {e}",
            kiln_core::capability::list(caps)
        )),
    }
}

/// The client's answer: accepted (and the box not unticked) approves.
fn decide(
    tool: &str,
    caps: &[Capability],
    grants: &Grants,
    answer: Option<ElicitResult>,
) -> Approval {
    let caps_list = kiln_core::capability::list(caps);
    let Some(answer) = answer else {
        return Approval::Refused(format!(
            "tool \"{tool}\" was refused: the client's answer to the approval of {caps_list} was not an elicitation result"
        ));
    };
    match answer.action {
        ElicitationAction::Accept if accepted(&answer) => {
            Approval::Approved(upgraded(grants, caps))
        }
        ElicitationAction::Accept | ElicitationAction::Decline => Approval::Refused(format!(
            "tool \"{tool}\" was refused: the use of {caps_list} was not approved"
        )),
        _ => Approval::Refused(format!(
            "tool \"{tool}\" was refused: the approval of {caps_list} was cancelled"
        )),
    }
}

/// Whether the answer approves: accepted, and the box not unticked.
fn accepted(answer: &ElicitResult) -> bool {
    let unticked = answer
        .content
        .as_ref()
        .and_then(|c| c.get(APPROVE))
        .is_some_and(|v| v == &json!(false));
    answer.action == ElicitationAction::Accept && !unticked
}

/// Asks the client from a running program's thread whether one of its calls may use an `ask`
/// grant: an elicitation for each use, while the `run_code` call waits. A client on the
/// 2026-07-28 revision answers only in a retried request, which a running program cannot
/// wait for, so there the use is refused saying how to grant it instead.
pub struct ClientApprover {
    peer: rmcp::service::Peer<RoleServer>,
    runtime: tokio::runtime::Handle,
    cannot: Option<String>,
}

impl ClientApprover {
    /// An approver through the client of `cx`; `None` when the client cannot ask and the
    /// operator's terminal can (it asks instead).
    pub fn new(cx: &RequestContext<RoleServer>, terminal: bool) -> Option<ClientApprover> {
        let can_elicit = cx
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some());
        let stateless = cx.protocol_version().is_some_and(|v| !v.has_initialize());
        let cannot = match (can_elicit, stateless) {
            (true, false) => None,
            _ if terminal => return None,
            (true, true) => Some(format!(
                "this MCP client answers approvals only in a retried request, which a running \
                 program cannot wait for; {OPERATOR_MAY}"
            )),
            (false, _) => Some(format!(
                "this MCP client cannot ask (it does not support elicitation); {OPERATOR_MAY}"
            )),
        };
        Some(ClientApprover {
            peer: cx.peer.clone(),
            runtime: tokio::runtime::Handle::current(),
            cannot,
        })
    }
}

impl kiln_core::context::Approver for ClientApprover {
    fn approve(&self, _cap: &str, question: &str) -> Result<bool, String> {
        if let Some(why) = &self.cannot {
            tracing::warn!(
                "a program's call needs approval and the MCP client cannot answer it: grant the capability with --caps instead of --ask, or pass --yes"
            );
            return Err(why.clone());
        }
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(form(format!(
            "kiln: {question}; allow it for this call?"
        ))));
        let (answered, answer) = std::sync::mpsc::sync_channel(1);
        let peer = self.peer.clone();
        // Sent from the runtime and awaited here: the program's thread is not the runtime's.
        self.runtime.spawn(async move {
            let _ = answered.send(peer.send_request(request).await);
        });
        match answer.recv() {
            Ok(Ok(ClientResult::ElicitResult(answer))) => Ok(accepted(&answer)),
            Ok(Ok(_)) => Err("the client's answer was not an elicitation result".into()),
            Ok(Err(e)) => Err(format!("asking the MCP client failed: {e}")),
            Err(_) => Err("the MCP session ended before the client answered".into()),
        }
    }
}

/// The grants with the `ask` grants these capabilities use made plain: an approval of
/// `store:notes` leaves an `ask` grant of `store:secrets` asking (a nested `call_tool` must not
/// inherit it); an unscoped requirement reaches every scope, so it makes them all plain.
fn upgraded(grants: &Grants, caps: &[Capability]) -> Grants {
    let mut out = grants.clone();
    for g in grants.iter() {
        let approved = caps
            .iter()
            .any(|c| c.name == g.cap.name && (c.scope.is_none() || c.scope == g.cap.scope));
        if g.mode == GrantMode::NeedsApproval && approved {
            out.add(g.cap.clone(), GrantMode::Allow);
        }
    }
    out
}

fn question(tool: &str, caps: &[Capability]) -> String {
    format!(
        "kiln: allow tool \"{tool}\" to use {} for this call?",
        kiln_core::capability::list(caps)
    )
}

/// A one-box form: accepting it approves.
fn form(message: String) -> ElicitRequestParams {
    let requested_schema = ElicitationSchema::builder()
        .required_bool_with(APPROVE, |b| {
            b.title("Approve")
                .description("Let the tool use these capabilities for this call")
                .with_default(true)
        })
        .build_unchecked();
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema,
    }
}

/// What the server's operator may do about a use nobody can approve, door-neutral (an MCP
/// client over HTTP reads it): the flags are in docs/mcp.md and the server's log.
const OPERATOR_MAY: &str =
    "the server's operator may grant it without asking, or approve every use";

fn cannot_ask(tool: &str, caps: &[Capability]) -> String {
    let caps = kiln_core::capability::list(caps);
    tracing::warn!(
        tool,
        "{caps} is granted with --ask and the MCP client cannot ask: grant it with --caps instead of --ask, or pass --yes to approve every use"
    );
    format!(
        "tool \"{tool}\" was refused: {caps} needs a person's approval and this MCP client cannot ask (it does not support elicitation); {OPERATOR_MAY}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grants() -> (Grants, Vec<Capability>) {
        let mut g = Grants::parse(&["store:notes", "net"]).expect("grants");
        g.mark_ask(&["store"]);
        (g, vec![Capability::parse("store:notes").expect("cap")])
    }

    #[test]
    fn an_accepted_answer_makes_only_the_asked_grants_plain() {
        let (g, caps) = grants();
        let answer =
            ElicitResult::new(ElicitationAction::Accept).with_content(json!({APPROVE: true}));
        let Approval::Approved(after) = decide("t", &caps, &g, Some(answer)) else {
            panic!("accepted");
        };
        assert!(after.iter().all(|g| g.mode == GrantMode::Allow));
        assert_eq!(after.list(), g.list(), "nothing granted beyond what was");
    }

    #[test]
    fn an_approval_of_one_scope_leaves_the_other_scopes_asking() {
        let mut g = Grants::parse(&["store:notes", "store:secrets"]).expect("grants");
        g.mark_ask(&["store"]);
        let caps = vec![Capability::parse("store:notes").expect("cap")];
        let answer =
            ElicitResult::new(ElicitationAction::Accept).with_content(json!({APPROVE: true}));
        let Approval::Approved(after) = decide("t", &caps, &g, Some(answer)) else {
            panic!("accepted");
        };
        let mode = |scope: &str| {
            after
                .iter()
                .find(|g| g.cap.scope.as_deref() == Some(scope))
                .map(|g| g.mode)
        };
        assert_eq!(mode("notes"), Some(GrantMode::Allow));
        assert_eq!(
            mode("secrets"),
            Some(GrantMode::NeedsApproval),
            "{}",
            after.list()
        );
    }

    #[test]
    fn an_unticked_box_a_decline_or_a_cancel_refuses() {
        let (g, caps) = grants();
        for answer in [
            ElicitResult::new(ElicitationAction::Accept).with_content(json!({APPROVE: false})),
            ElicitResult::new(ElicitationAction::Decline),
            ElicitResult::new(ElicitationAction::Cancel),
        ] {
            let Approval::Refused(msg) = decide("t", &caps, &g, Some(answer)) else {
                panic!("refused");
            };
            assert!(msg.starts_with("tool \"t\" was refused"), "{msg}");
            assert!(msg.contains("[store:notes]"), "{msg}");
        }
        assert!(matches!(decide("t", &caps, &g, None), Approval::Refused(_)));
    }
}
