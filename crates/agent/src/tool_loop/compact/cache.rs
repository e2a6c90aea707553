//! The compacted beginnings this process made, by agent and by the transcript they stand for
//! (a hash of its messages): a later turn of the same session finds the longest one its
//! transcript starts with and compacts only what came after. Bounded; a restart forgets it.
//! A durable run reads it through its journal ([`known`]), so a replay on any worker starts
//! from the beginning the first attempt started from.

use crate::journal::{StepValue, StepWork, decode};
use crate::report::RunErrorKind;
use crate::run::Setup;
use kiln_core::model::Message;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{LazyLock, Mutex};

/// How many beginnings are remembered (the oldest go first).
const KEPT: usize = 512;

type Key = (String, usize, u64);

/// The beginnings by key, and their keys oldest first.
type Kept = (HashMap<Key, Vec<Message>>, Vec<Key>);

static BEGINNINGS: LazyLock<Mutex<Kept>> = LazyLock::new(Mutex::default);

fn digest(messages: &[Message]) -> u64 {
    let mut h = DefaultHasher::new();
    serde_json::to_string(messages)
        .unwrap_or_default()
        .hash(&mut h);
    h.finish()
}

/// Remembers that `agent`'s transcript beginning with `covered` compacts to `head`.
pub(super) fn remember(agent: &str, covered: &[Message], head: Vec<Message>) {
    let key = (agent.to_string(), covered.len(), digest(covered));
    let mut kept = BEGINNINGS.lock().unwrap_or_else(|e| e.into_inner());
    let (map, order) = &mut *kept;
    if map.insert(key.clone(), head).is_none() {
        order.push(key);
    }
    while order.len() > KEPT {
        let old = order.remove(0);
        map.remove(&old);
    }
}

/// The longest remembered beginning of `messages` for `agent`: how many messages it stands
/// for, and what it compacts to.
pub(super) fn longest(agent: &str, messages: &[Message]) -> Option<(usize, Vec<Message>)> {
    let kept = BEGINNINGS.lock().unwrap_or_else(|e| e.into_inner());
    let mut lens: Vec<usize> = kept
        .1
        .iter()
        .filter(|(a, len, _)| a == agent && *len <= messages.len())
        .map(|(_, len, _)| *len)
        .collect();
    lens.sort_unstable_by(|a, b| b.cmp(a));
    lens.dedup();
    // The latest few: a session's newest beginning is its longest.
    lens.into_iter().take(8).find_map(|len| {
        let key = (agent.to_string(), len, digest(&messages[..len]));
        kept.0.get(&key).map(|head| (len, head.clone()))
    })
}

/// The beginning a request of round `round` starts from ([`longest`]). Where steps outlive the
/// process (a durable run), what this process remembered is a journaled step
/// (`compact-known-ROUND`): a replay, here or on another worker, gets the same beginning back
/// (and remembers it from then on) instead of compacting again or diverging from its journal.
pub(super) async fn known(
    setup: &Setup<'_>,
    messages: &[Message],
    round: u32,
) -> Result<Option<(usize, Vec<Message>)>, RunErrorKind> {
    let agent = &setup.agent.name;
    let found = longest(agent, messages);
    if !setup.journal.keeps_steps() {
        return Ok(found);
    }
    let step = format!("compact-known-{round}");
    let work: StepWork = Box::pin(async move { Ok(StepValue::Typed(Box::new(found))) });
    let recalled = setup.journal.step(step.clone(), work).await?;
    let known = decode::<Option<(usize, Vec<Message>)>>(&step, recalled.value)?;
    match &known {
        Some((len, _)) if *len > messages.len() => Err(RunErrorKind::Journal(format!(
            "step {step} covers {len} messages of {}",
            messages.len()
        ))),
        Some((len, head)) if recalled.replayed => {
            remember(agent, &messages[..*len], head.clone());
            Ok(known)
        }
        _ => Ok(known),
    }
}
