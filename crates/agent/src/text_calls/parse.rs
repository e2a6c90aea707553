//! Tool calls a model wrote as text. A local model served without a tool-call parser
//! (llama.cpp without its template's tool support, vLLM without `--tool-call-parser`, many
//! Ollama templates) answers with the call in its reply's text, in its chat template's own
//! markup or as plain JSON. An agent that opts in (`.text_tool_calls("auto")`) has such calls
//! recovered here, then validated and run like any structured call; a call that cannot be read
//! is reported (the loop tells the model what was wrong), never taken for a final answer.
//!
//! The shapes, by setting: `hermes` (`<tool_call>`, `<tools>`, `<function=NAME>`: `hermes`),
//! `mistral` (`[TOOL_CALLS]`: `markers`), `llama` (`<|python_tag|>`, `<|python_start|>`:
//! `markers`), `deepseek` (`<｜tool▁calls▁begin｜>`: `markers`), `gemma` (```` ```tool_code ````,
//! `<|tool_call>call:...`, `<start_function_call>`: `gemma`). With no markup, a call must name
//! an offered tool: a JSON call object or list that is the whole reply (`llama`, `gemma`,
//! `json`), in a fence or on lines of its own (`json`: `json_text`), a `[name(arg=value)]`
//! list that is the whole reply (`llama`, `gemma`: `python`). `qwen` is `hermes` and `json`.

pub use super::call::{Found, Offered};
use super::{gemma, hermes, json_text, markers, python};
use kiln_registry::agent_spec::TextCallFormat as F;

/// Searches `text` for calls in the shapes `format` allows. `tools` are the tools offered:
/// a call with no markup around it counts only when it names one of them; a marked call with
/// an unknown name is kept, for the loop's usual unknown-tool result.
pub fn recover(text: &str, format: F, tools: &[Offered]) -> Found {
    if format == F::Off {
        return Found::Nothing;
    }
    // Markup first: it says a call is there, so one that cannot be read is malformed.
    if format.covers(F::Hermes) && hermes::present(text) {
        return hermes::recover(text, tools);
    }
    if format.covers(F::Mistral)
        && let Some(at) = text.find(markers::MISTRAL_TAG)
    {
        return markers::mistral(&text[..at], &text[at + markers::MISTRAL_TAG.len()..]);
    }
    if format.covers(F::Llama)
        && let Some(found) = markers::llama(text)
    {
        return found;
    }
    if format.covers(F::DeepSeek)
        && let Some(found) = markers::deepseek(text)
    {
        return found;
    }
    if format.covers(F::Gemma) {
        let found = gemma::recover(text);
        if found != Found::Nothing {
            return found;
        }
    }
    // No markup: JSON or Python calls naming offered tools.
    let found = if format.covers(F::Json) {
        json_text::recover(text, tools)
    } else if format.covers(F::Llama) || format.covers(F::Gemma) {
        json_text::whole(text, tools)
    } else {
        Found::Nothing
    };
    if found != Found::Nothing || !(format.covers(F::Llama) || format.covers(F::Gemma)) {
        return found;
    }
    python::whole_list(text, tools)
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "template_tests.rs"]
mod template_tests;
