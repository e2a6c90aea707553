//! Compaction asked for by a person or a client, outside a run: `kiln sessions compact NAME`
//! and `POST /v1/responses/compact` make a transcript's older part into a summary (or trim it)
//! the way an agent's `.compact(...)` does before a request over its budget, whatever the
//! transcript's size. The latest `keep_last` messages stay as they are; a tool call keeps its
//! results.

use crate::connect::{ProviderDefaults, ProviderOverrides, connect, connect_model};
use crate::report::RunErrorKind;
use crate::tool_loop::compact::{SUMMARY_HEADING, bytes_of, cut_point, summarize, trim};
use kiln_core::model::{Message, Usage};
use kiln_registry::agent_spec::AgentSpec;
use kiln_registry::agent_spec::compact::{CompactWith, Compaction};
use tokio_util::sync::CancellationToken;

/// How to compact: the agent's `.compact(...)` settings, or these defaults, overridden.
#[derive(Debug, Clone, Default)]
pub struct CompactRequest {
    /// Messages kept as they are (default: the agent's `keep_last`, else 8).
    pub keep_last: Option<usize>,
    /// Summary or trim (default: the agent's, else a summary).
    pub with: Option<CompactWith>,
}

/// A compacted transcript.
#[derive(Debug, Clone)]
pub struct CompactedTranscript {
    /// The new beginning: one summary message, or the trimmed older messages; empty when
    /// nothing could be compacted (the transcript is no longer than what is kept).
    pub head: Vec<Message>,
    /// How many of the original messages the head stands for.
    pub covered: usize,
    /// The messages kept as they were (the original's tail from `covered`).
    pub kept: Vec<Message>,
    /// The summary request's tokens (zero for a trim).
    pub usage: Usage,
    /// The model that wrote the summary.
    pub model: String,
}

impl CompactedTranscript {
    /// The compacted transcript: head, then what was kept.
    pub fn messages(&self) -> Vec<Message> {
        self.head.iter().chain(&self.kept).cloned().collect()
    }

    /// The compaction as a finished run for the run log (`compact:AGENT`): what it stood for
    /// as its prompt, the summary as its answer, the summary request's tokens.
    pub fn report(&self, agent: &AgentSpec, actor: Option<String>) -> crate::RunReport {
        let prompt = format!(
            "compact {} messages, keep the latest {}",
            self.covered,
            self.kept.len()
        );
        let mut run = crate::RunReport::new(&format!("compact:{}", agent.name), Vec::new());
        run.messages = vec![Message::user(prompt)];
        run.answer = self.summary().map_or_else(
            || format!("trimmed to {} messages", self.head.len()),
            str::to_string,
        );
        run.messages.push(Message::Assistant {
            content: run.answer.clone(),
            tool_calls: Vec::new(),
            replay: None,
        });
        run.provider = agent.provider.name().to_string();
        run.model = self.model.clone();
        run.usage = self.usage;
        run.rounds = u32::from(!self.model.is_empty());
        run.actor = actor;
        run
    }

    /// The summary's text, when the head is a summary.
    pub fn summary(&self) -> Option<&str> {
        match self.head.as_slice() {
            [Message::User { content, .. }] => content
                .strip_prefix(SUMMARY_HEADING)
                .map(|s| s.trim_start_matches('\n')),
            _ => None,
        }
    }
}

/// Compacts `messages` for `agent` now: the part before the latest `keep_last` (moved back
/// to a person's message) summarized by the agent's model (its provider connected as a run
/// would be) or trimmed to the agent's budget.
pub async fn compact_transcript(
    agent: &AgentSpec,
    overrides: &ProviderOverrides,
    defaults: &ProviderDefaults,
    messages: &[Message],
    request: &CompactRequest,
    cancel: &CancellationToken,
) -> Result<CompactedTranscript, RunErrorKind> {
    let settings = agent.compaction.clone().unwrap_or_default();
    let keep_last = request.keep_last.unwrap_or(settings.keep_last);
    let with = request.with.unwrap_or(settings.with);
    let cut = cut_point(messages, keep_last);
    let kept = messages[cut..].to_vec();
    let mut done = CompactedTranscript {
        head: Vec::new(),
        covered: cut,
        kept,
        usage: Usage::default(),
        model: String::new(),
    };
    if cut == 0 {
        return Ok(done);
    }
    let older = &messages[..cut];
    done.head = match with {
        CompactWith::Trim => {
            let c = Compaction { with, ..settings };
            trim(older.to_vec(), &c, bytes_of(&done.kept))
        }
        CompactWith::Summary => {
            let (provider, model) = match &settings.model {
                Some(m) => connect_model(agent, overrides, defaults, m)?,
                None => connect(agent, overrides, defaults)?,
            };
            let limit = (settings.at as usize).saturating_mul(8);
            let (summary, usage) = summarize(&provider, &model, older, limit, cancel).await?;
            done.usage = usage;
            done.model = model;
            vec![summary]
        }
    };
    Ok(done)
}
