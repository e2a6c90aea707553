//! Input-required rounds (the 2026-07-28 revision, SEP-2322): a tool, prompt or resource
//! whose handler asks the client something stops, and the answer to the request is an
//! `InputRequiredResult` carrying the questions and a sealed `requestState`. The client retries
//! with the answers (`inputResponses`) and the state echoed; the handler runs again from the
//! top and finds its questions answered. The state holds every answer of earlier rounds,
//! sealed (HMAC, bound to the request's method and name, with an expiry) by a key of this
//! process or of `KILN_MCP_STATE_KEY`, so a tampered or foreign state is refused.

// Sampling and roots are deprecated by SEP-2577 (after 2026-07-28), which still asks for them.
#![allow(deprecated)]

use crate::ask::questions::{self, Askable};
use kiln_core::context::call_events::{Answer, AskError, ClientAsk};
use rmcp::ErrorData;
use rmcp::model::{
    CreateMessageRequest, ElicitRequest, InputRequest, InputRequests, InputRequiredResult,
    InputResponses, ListRootsRequest, RequestStateCodec, SealOptions,
};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

/// How long a sealed state stays good: a person may take a while to fill a form.
const STATE_TTL: Duration = Duration::from_secs(3600);

/// The key material: `KILN_MCP_STATE_KEY` (so several kiln processes behind one address accept
/// each other's states), else random bytes of this process.
pub fn codec() -> RequestStateCodec {
    let key = match std::env::var("KILN_MCP_STATE_KEY") {
        Ok(k) if k.len() >= 32 => k.into_bytes(),
        _ => {
            let mut key = vec![0u8; 32];
            let random = ring::rand::SystemRandom::new();
            if ring::rand::SecureRandom::fill(&random, &mut key).is_err() {
                // No system randomness: a state then only survives within this process's
                // lifetime anyway; the time and address make the key unguessable enough.
                let seed = format!("{:?}{:p}", std::time::SystemTime::now(), &key);
                key = seed.into_bytes();
            }
            key
        }
    };
    RequestStateCodec::new_unchecked(key)
}

/// One request's round: the answers known so far and the questions still open.
pub struct Rounds {
    known: Map<String, Value>,
    askable: Askable,
    pending: Mutex<BTreeMap<String, InputRequest>>,
    /// The client capability a question needed and the client did not declare.
    missing: Mutex<Option<&'static str>>,
    binding: String,
}

impl Rounds {
    /// The round of a retried (or first) request: the answers in its sealed state and its
    /// `inputResponses`. `binding` names the request (`tools/call:NAME`); a state sealed for
    /// another request, expired or changed is refused.
    pub fn open(
        codec: &RequestStateCodec,
        state: Option<&str>,
        responses: Option<&InputResponses>,
        binding: String,
        askable: Askable,
    ) -> Result<Rounds, ErrorData> {
        let mut known = match state {
            None => Map::new(),
            Some(sealed) => codec
                .open_json_with::<Map<String, Value>>(sealed, binding.as_bytes())
                .map_err(|e| {
                    ErrorData::invalid_params(
                        format!("requestState failed its integrity check ({e}): send back the state kiln gave, unchanged"),
                        None,
                    )
                })?,
        };
        for (key, value) in responses.into_iter().flatten() {
            known.insert(key.clone(), value.clone());
        }
        Ok(Rounds {
            known,
            askable,
            pending: Mutex::new(BTreeMap::new()),
            missing: Mutex::new(None),
            binding,
        })
    }

    /// Answers from what is known; the first unknown question (of a kind the client offers)
    /// stops the handler, and every unknown one of this ask goes out in the next round.
    pub fn answer(
        &self,
        asks: &[(String, ClientAsk)],
        lenient: bool,
    ) -> Result<Vec<Answer>, AskError> {
        let mut answers = Vec::with_capacity(asks.len());
        let mut missing = BTreeMap::new();
        for (key, ask) in asks {
            if let Some(why) = self.askable.why_not(ask) {
                if !lenient {
                    if let Ok(mut m) = self.missing.lock() {
                        *m = Some(ask.capability());
                    }
                    return Err(AskError::MissingCapability(ask.capability()));
                }
                answers.push(Answer::Unsupported(why.clone()));
                continue;
            }
            // An answer that is not one (a number for a form, say) is asked again.
            match self.known.get(key).and_then(|v| decode(ask, v).ok()) {
                Some(v) => answers.push(Answer::Value(v)),
                None => {
                    let request = input_request(ask).map_err(AskError::Refused)?;
                    missing.insert(key.clone(), request);
                }
            }
        }
        if missing.is_empty() {
            return Ok(answers);
        }
        if let Ok(mut pending) = self.pending.lock() {
            pending.extend(missing);
        }
        Err(AskError::InputRequired)
    }

    /// The answer to send instead of the result when the handler stopped for questions: the
    /// questions and the sealed state of every answer so far.
    pub fn input_required(&self, codec: &RequestStateCodec) -> Option<InputRequiredResult> {
        let pending = std::mem::take(&mut *self.pending.lock().ok()?);
        if pending.is_empty() {
            return None;
        }
        let options = SealOptions::new()
            .associated_data(self.binding.as_bytes())
            .ttl(STATE_TTL);
        let mut result = InputRequiredResult::from_input_requests(pending as InputRequests);
        result.request_state = codec.seal_json_with(&self.known, &options).ok();
        Some(result)
    }
}

impl Rounds {
    /// The error to answer with when a question needed a capability the client did not
    /// declare: `MissingRequiredClientCapabilityError` (-32021) naming it.
    pub fn missing_capability(&self) -> Option<ErrorData> {
        let cap = (*self.missing.lock().ok()?)?;
        Some(ErrorData::new(
            rmcp::model::ErrorCode(-32021),
            format!(
                "this call needs the client capability \"{cap}\", which the request's clientCapabilities do not declare"
            ),
            Some(serde_json::json!({ "requiredCapabilities": { cap: {} } })),
        ))
    }
}

/// A client's answer as the script sees it: a form's `{action, content}`, the model's text,
/// the list of roots.
pub(crate) fn decode(ask: &ClientAsk, v: &Value) -> Result<Value, String> {
    match ask {
        ClientAsk::Form(_) => {
            let action = v["action"]
                .as_str()
                .ok_or("the form's answer has no action")?;
            Ok(serde_json::json!({ "action": action, "content": v.get("content").cloned() }))
        }
        ClientAsk::Sample(_) => {
            let content = &v["content"];
            let blocks: Vec<&Value> = match content {
                Value::Array(items) => items.iter().collect(),
                other => vec![other],
            };
            let text: Vec<&str> = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
            if text.is_empty() {
                return Err("the client's model answered without text".into());
            }
            Ok(Value::String(text.join("\n")))
        }
        ClientAsk::Roots => match v.get("roots") {
            Some(roots @ Value::Array(_)) => Ok(roots.clone()),
            _ => Err("the client's answer has no list of roots".into()),
        },
    }
}

/// The MCP request a question goes out as.
pub(crate) fn input_request(ask: &ClientAsk) -> Result<InputRequest, String> {
    Ok(match ask {
        ClientAsk::Form(form) => {
            InputRequest::Elicitation(ElicitRequest::new(questions::form_params(form.clone())?))
        }
        ClientAsk::Sample(sample) => InputRequest::CreateMessage(CreateMessageRequest::new(
            questions::sample_params(sample.clone()),
        )),
        ClientAsk::Roots => InputRequest::ListRoots(ListRootsRequest::default()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_core::context::call_events::FormRequest;
    use serde_json::json;

    fn name_form() -> ClientAsk {
        ClientAsk::Form(FormRequest {
            message: "What is your name?".into(),
            schema: json!({"type": "object", "properties": {"name": {"type": "string"}}}),
        })
    }

    fn open(
        codec: &RequestStateCodec,
        state: Option<&str>,
        responses: Value,
    ) -> Result<Rounds, ErrorData> {
        let responses: InputResponses = serde_json::from_value(responses).expect("responses");
        Rounds::open(
            codec,
            state,
            Some(&responses),
            "tools/call:t".into(),
            Askable::default(),
        )
    }

    #[test]
    fn questions_go_out_sealed_and_come_back_answered_over_two_rounds() {
        let codec = codec();
        let first = open(&codec, None, json!({})).expect("round 1");
        let asks = [("step1".to_string(), name_form())];
        assert_eq!(first.answer(&asks, false), Err(AskError::InputRequired));
        let out = first.input_required(&codec).expect("questions");
        let requests = serde_json::to_value(&out.input_requests).expect("json");
        assert_eq!(requests["step1"]["method"], "elicitation/create");
        assert_eq!(requests["step1"]["params"]["message"], "What is your name?");
        let state = out.request_state.expect("a sealed state");

        // Round 2: step1 answered; a second question goes out with step1 kept in the state.
        let answer = json!({"step1": {"action": "accept", "content": {"name": "Ada"}}});
        let second = open(&codec, Some(&state), answer).expect("round 2");
        let got = second.answer(&asks, false).expect("step1 is known");
        assert_eq!(
            got,
            [Answer::Value(
                json!({"action": "accept", "content": {"name": "Ada"}})
            )]
        );
        let more = [("step2".to_string(), name_form())];
        assert_eq!(second.answer(&more, false), Err(AskError::InputRequired));
        let state = second
            .input_required(&codec)
            .and_then(|r| r.request_state)
            .expect("state");
        let third = open(
            &codec,
            Some(&state),
            json!({"step2": {"action": "decline"}}),
        )
        .expect("round 3");
        assert!(
            third.answer(&asks, false).is_ok(),
            "step1 came back in the state"
        );
        assert!(third.answer(&more, false).is_ok());
    }

    #[test]
    fn a_changed_or_foreign_state_is_refused_and_a_bad_answer_asked_again() {
        let codec = codec();
        let first = open(&codec, None, json!({})).expect("round 1");
        let _ = first.answer(&[("q".to_string(), name_form())], false);
        let state = first
            .input_required(&codec)
            .and_then(|r| r.request_state)
            .expect("state");
        let mut tampered = state.clone();
        tampered.push('x');
        let refused = open(&codec, Some(&tampered), json!({}))
            .err()
            .expect("refused");
        assert!(
            refused
                .message
                .contains("requestState failed its integrity check")
        );
        let other = Rounds::open(
            &codec,
            Some(&state),
            None,
            "tools/call:other".into(),
            Askable::default(),
        );
        assert!(other.is_err(), "bound to the request it was sealed for");
        let bad = open(&codec, Some(&state), json!({"q": 42})).expect("opens");
        assert_eq!(
            bad.answer(&[("q".to_string(), name_form())], false),
            Err(AskError::InputRequired),
            "a number is no form answer: asked again"
        );
    }
}
