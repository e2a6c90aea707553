//! Compaction in the loop (`.compact(...)`, kiln-registry's `agent_spec::compact`): a request
//! whose transcript passes the budget sends, instead of the part before its last `keep_last`
//! messages (the cut moved back to a person's message, so a tool call keeps its results), a
//! summary of it or its trimmed form. The new beginning is a journaled step (`compact-ROUND`):
//! a replay reads it back instead of asking again. The run, its log and a session keep the
//! whole transcript; the beginning is remembered (`cache`) so later turns reuse it.

mod cache;
pub mod on_request;

use crate::journal::{StepValue, StepWork, decode};
use crate::report::RunErrorKind;
use crate::run::Setup;
use kiln_core::model::{AnsweredBy, Message, ModelRequest, Usage};
use kiln_providers::Provider;
use kiln_registry::agent_spec::compact::{
    CompactWith, Compaction, SUMMARY_PROMPT, estimate_tokens,
};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// How long a tool result stays when a transcript is trimmed.
const TRIMMED_RESULT_CHARS: usize = 200;

/// The step name of round `round`'s compaction.
pub(super) fn compact_step(round: u32) -> String {
    format!("compact-{round}")
}

/// A compaction step's value: the new beginning, and what its summary request used (none
/// for a trim), which the run's usage counts.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Compacted {
    head: Vec<Message>,
    /// The summary request's tokens and milliseconds; `None` for a trim.
    #[serde(default)]
    asked: Option<(Usage, f64)>,
    /// The model that wrote the summary, when not the run's own (`.compact(#{ model })`).
    #[serde(default)]
    by: Option<AnsweredBy>,
}

/// A compaction step as a journal holds it: this kiln's, or the bare beginning an earlier
/// version journaled (a durable run replayed across the upgrade).
#[derive(Deserialize)]
#[serde(untagged)]
enum Journaled {
    Now(Compacted),
    Before(Vec<Message>),
}

impl From<Journaled> for Compacted {
    fn from(j: Journaled) -> Compacted {
        match j {
            Journaled::Now(c) => c,
            Journaled::Before(head) => Compacted {
                head,
                asked: None,
                by: None,
            },
        }
    }
}

/// What a request sends instead of the transcript, and what making it cost.
pub(super) struct View {
    /// The compacted beginning and the rest.
    pub messages: Vec<Message>,
    /// The summary request's tokens and duration, when this request compacted with one (or
    /// replayed such a compaction).
    pub asked: Option<(Usage, std::time::Duration)>,
    /// The model that wrote the summary, when not the run's own.
    pub by: Option<AnsweredBy>,
}

/// The bytes of a transcript as text (what its size is estimated from).
pub(crate) fn bytes_of(messages: &[Message]) -> usize {
    messages
        .iter()
        .map(|m| match m {
            Message::User { content, .. } => content.len(),
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                content.len()
                    + tool_calls
                        .iter()
                        .map(|c| c.name.len() + c.args.to_value().to_string().len())
                        .sum::<usize>()
            }
            Message::Tool { results } => results.iter().map(|r| r.content.len()).sum(),
        })
        .sum()
}

/// Where the older part ends: `keep_last` from the end, moved back to a person's message (a
/// tool call is never parted from its results); 0 when nothing can go.
pub(crate) fn cut_point(messages: &[Message], keep_last: usize) -> usize {
    let mut cut = messages.len().saturating_sub(keep_last.max(1));
    while cut > 0 && !matches!(messages[cut], Message::User { .. }) {
        cut -= 1;
    }
    cut
}

/// What a request sends instead of `messages` when they pass the budget: the compacted
/// beginning and the rest, or `None` when they fit (and nothing was compacted before). `counted` is the provider's count of the
/// last request. The largest beginning compacted before (in this process) is reused, so a long
/// session asks for a summary only when what follows the last one outgrows the budget.
pub(super) async fn view(
    setup: &Setup<'_>,
    messages: &[Message],
    round: u32,
    counted: Option<u64>,
) -> Result<Option<View>, RunErrorKind> {
    let Some(c) = setup.agent.compaction.clone() else {
        return Ok(None);
    };
    // The system prompt goes with every request: it counts against the budget too.
    let system = setup
        .opts
        .overrides
        .system(&setup.agent)
        .map_or(0, |s| s.len());
    let over = |m: &[Message], counted: Option<u64>| {
        estimate_tokens(system + bytes_of(m)).max(counted.unwrap_or(0)) > c.at
    };
    let known = cache::known(setup, messages, round).await?;
    let mut view: Vec<Message> = match &known {
        Some((len, head)) => head
            .iter()
            .cloned()
            .chain(messages[*len..].iter().cloned())
            .collect(),
        None => messages.to_vec(),
    };
    // The provider's count describes the whole transcript only when nothing was compacted.
    let reused = |messages: Vec<Message>| {
        known.as_ref().map(|_| View {
            messages,
            asked: None,
            by: None,
        })
    };
    if !over(&view, counted.filter(|_| known.is_none())) {
        return Ok(reused(view));
    }
    let cut = cut_point(&view, c.keep_last);
    if cut == 0 {
        return Ok(reused(view));
    }
    let head_len = known.as_ref().map_or(0, |(_, head)| head.len());
    // How much of the run's own transcript the new beginning stands for.
    let covered = known.as_ref().map_or(0, |(len, _)| *len) + cut.saturating_sub(head_len);
    let older: Vec<Message> = view.drain(..cut).collect();
    let step = compact_step(round);
    let work: StepWork = match c.with {
        CompactWith::Trim => {
            let head = trim(older, &c, system + bytes_of(&view));
            Box::pin(async move {
                Ok(StepValue::Typed(Box::new(Compacted {
                    head,
                    asked: None,
                    by: None,
                })))
            })
        }
        CompactWith::Summary => summary_work(setup, older, &c)?,
    };
    let recalled = setup.journal.step(step.clone(), work).await?;
    let Compacted { head, asked, by } = match recalled.value {
        typed @ StepValue::Typed(_) => decode::<Compacted>(&step, typed)?,
        json => decode::<Journaled>(&step, json)?.into(),
    };
    tracing::info!(round, covered, "compacted the transcript");
    cache::remember(&setup.agent.name, &messages[..covered], head.clone());
    Ok(Some(View {
        messages: head.into_iter().chain(view).collect(),
        asked: asked.map(|(u, ms)| (u, std::time::Duration::from_secs_f64(ms.max(0.0) / 1000.0))),
        by,
    }))
}

/// The older part trimmed: tool results shortened first; if the transcript (with `rest` bytes
/// after it) is still over the budget, the older part goes, with a note saying so.
pub(crate) fn trim(mut older: Vec<Message>, c: &Compaction, rest: usize) -> Vec<Message> {
    for m in &mut older {
        if let Message::Tool { results } = m {
            for r in results {
                if r.content.chars().count() > TRIMMED_RESULT_CHARS {
                    let kept: String = r.content.chars().take(TRIMMED_RESULT_CHARS).collect();
                    r.content = format!("{kept}… [shortened to keep within the context budget]");
                }
            }
        }
    }
    if estimate_tokens(bytes_of(&older) + rest) <= c.at {
        return older;
    }
    vec![Message::user(format!(
        "[{} earlier messages of this conversation were dropped to keep within the context budget.]",
        older.len()
    ))]
}

/// The older part as one summary: the journaled step's work (see [`summarize`]), by the
/// compaction's own model when it names one.
fn summary_work(
    setup: &Setup<'_>,
    older: Vec<Message>,
    c: &Compaction,
) -> Result<StepWork, RunErrorKind> {
    let limit = (c.at as usize).saturating_mul(8);
    let (provider, model, by) = match &c.model {
        Some(m) => {
            let defaults = setup.host.provider_defaults();
            let (provider, model) =
                crate::connect::connect_model(&setup.agent, &setup.opts.overrides, &defaults, m)?;
            let by = AnsweredBy {
                provider: provider.name().to_string(),
                model: model.clone(),
            };
            (std::sync::Arc::new(provider), model, Some(by))
        }
        None => (setup.provider.clone(), setup.model.clone(), None),
    };
    let cancel = setup.opts.cancel.clone();
    Ok(Box::pin(async move {
        let started = std::time::Instant::now();
        let (summary, usage) = summarize(&provider, &model, &older, limit, &cancel).await?;
        let took_ms = started.elapsed().as_secs_f64() * 1000.0;
        let head = vec![summary];
        let asked = Some((usage, took_ms));
        Ok(StepValue::Typed(Box::new(Compacted { head, asked, by })))
    }))
}

/// `older` as one user message summarizing it: a request to `model` with [`SUMMARY_PROMPT`],
/// the messages as text (at most `limit` bytes, the latest kept), no tools. Also what the
/// request used.
pub(crate) async fn summarize(
    provider: &Provider,
    model: &str,
    older: &[Message],
    limit: usize,
    cancel: &CancellationToken,
) -> Result<(Message, Usage), RunErrorKind> {
    let request = ModelRequest {
        model: model.to_string(),
        system: Some(SUMMARY_PROMPT.to_string()),
        messages: vec![Message::user(render(older, limit))].into(),
        tools: Vec::new(),
        temperature: None,
        max_tokens: 2_000,
        stream: false,
        unchanged_prefix: 0,
        output: None,
        tool_choice: kiln_core::model::ToolChoice::Auto,
        parallel_tool_calls: None,
    };
    let prepared = provider.prepare(&request);
    let sink: kiln_core::model::TextSink = std::sync::Arc::new(|_: &str| {});
    let reply = tokio::select! {
        r = provider.send(prepared, &sink) => r.map_err(RunErrorKind::from)?,
        _ = cancel.cancelled() => return Err(RunErrorKind::Cancelled),
    };
    let summary = Message::user(format!("{SUMMARY_HEADING}\n{}", reply.text.trim()));
    Ok((summary, reply.usage))
}

/// How a summary message begins.
pub(crate) const SUMMARY_HEADING: &str =
    "Summary of the earlier conversation (compacted to keep within the context budget):";

/// Messages as plain text, one paragraph each, for the summary request: at most `limit`
/// bytes, the latest kept (a history compacted in another process is summarized from its end).
fn render(messages: &[Message], limit: usize) -> String {
    let mut out = String::new();
    for m in messages {
        match m {
            Message::User { content, .. } => out.push_str(&format!("\nUser: {content}\n")),
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                if !content.is_empty() {
                    out.push_str(&format!("\nAssistant: {content}\n"));
                }
                for call in tool_calls {
                    out.push_str(&format!(
                        "\nAssistant called {}({})\n",
                        call.name,
                        call.args.to_value()
                    ));
                }
            }
            Message::Tool { results } => {
                for r in results {
                    out.push_str(&format!("\nResult of {}: {}\n", r.name, r.content));
                }
            }
        }
    }
    if out.len() > limit {
        let mut from = out.len() - limit;
        while !out.is_char_boundary(from) {
            from += 1;
        }
        out = format!("[the oldest part is left out]\n{}", &out[from..]);
    }
    format!("The conversation so far:\n{out}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_core::model::{ToolCall, ToolResult};

    fn turn(n: usize) -> Vec<Message> {
        vec![
            Message::user(format!("question {n}")),
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: format!("c{n}"),
                    name: "lookup".into(),
                    args: kiln_core::model::CallArgs::parsed(serde_json::json!({"n": n})),
                }],
                replay: None,
            },
            Message::Tool {
                results: vec![ToolResult {
                    call_id: format!("c{n}"),
                    name: "lookup".into(),
                    content: "x".repeat(1000),
                    is_error: false,
                }],
            },
            Message::Assistant {
                content: format!("answer {n}"),
                tool_calls: Vec::new(),
                replay: None,
            },
        ]
    }

    #[test]
    fn a_compaction_step_journaled_by_an_earlier_kiln_reads_back() {
        let head = vec![Message::user("Summary of the earlier conversation: x")];
        let before = serde_json::to_value(&head).expect("json");
        let read: Compacted = serde_json::from_value::<Journaled>(before)
            .expect("the bare beginning")
            .into();
        assert_eq!((read.head, read.asked), (head.clone(), None));
        let now = Compacted {
            head: head.clone(),
            asked: Some((kiln_core::model::Usage::new(5, 2), 12.0)),
            by: None,
        };
        let read: Compacted =
            serde_json::from_value::<Journaled>(serde_json::to_value(&now).expect("json"))
                .expect("this kiln's")
                .into();
        assert_eq!(read.asked.map(|(u, _)| u.input_tokens), Some(5));
    }

    #[test]
    fn the_cut_falls_before_a_persons_message_never_inside_a_call() {
        let messages: Vec<Message> = (0..5).flat_map(turn).collect();
        for keep in 1..=20 {
            let cut = cut_point(&messages, keep);
            assert!(
                cut == 0 || matches!(messages[cut], Message::User { .. }),
                "keep {keep}: {cut}"
            );
            assert!(messages.len() - cut >= keep.min(messages.len()) || cut == 0);
        }
        assert_eq!(cut_point(&turn(0), 2), 0, "one turn: nothing to compact");
    }

    #[test]
    fn trimming_shortens_tool_results_first_then_drops_the_oldest() {
        let older: Vec<Message> = (0..3).flat_map(turn).collect();
        let roomy = Compaction {
            at: 1_000,
            keep_last: 4,
            with: CompactWith::Trim,
            model: None,
        };
        let kept = trim(older.clone(), &roomy, 0);
        assert_eq!(kept.len(), older.len(), "shortened is enough");
        assert!(bytes_of(&kept) < bytes_of(&older) / 3);
        let tight = Compaction { at: 50, ..roomy };
        let dropped = trim(older, &tight, 0);
        assert_eq!(dropped.len(), 1);
        assert!(
            matches!(&dropped[0], Message::User { content, .. } if content.contains("12 earlier messages"))
        );
    }
}
