//! Gemma's calls: Python calls in a ```` ```tool_code ```` fence (Gemma 3's prompted form),
//! and `call:NAME{key:value,...}` between Gemma 4's `<|tool_call>` and `<tool_call|>` (strings
//! quoted `<|"|>`) or FunctionGemma's `<start_function_call>` and `<end_function_call>` (strings
//! quoted `<escape>`). Gemma 3's bare `[name(...)]` list is `python::whole_list`.

use super::call::{Found, Markers, TextCall, found, malformed};
use super::python;
use kiln_core::model::CallArgs;
use serde_json::{Map, Number, Value};

/// Each kind of block: its opening and closing markers, the quote of its strings (none for
/// Python), and how a call is written in it, for the model.
struct Block {
    open: &'static str,
    close: &'static str,
    quote: Option<&'static str>,
    example: &'static str,
}

const BLOCKS: [Block; 3] = [
    Block {
        open: "```tool_code",
        close: "```",
        quote: None,
        example: "```tool_code\nTOOL(arg=value)\n```",
    },
    Block {
        open: "<|tool_call>",
        close: "<tool_call|>",
        quote: Some("<|\"|>"),
        example: "<|tool_call>call:TOOL{arg:<|\"|>text<|\"|>,n:1}<tool_call|>",
    },
    Block {
        open: "<start_function_call>",
        close: "<end_function_call>",
        quote: Some("<escape>"),
        example: "<start_function_call>call:TOOL{arg:<escape>text<escape>}<end_function_call>",
    },
];
/// How deep objects and lists in an argument may nest.
const MAX_DEPTH: usize = 64;

/// Every Gemma call block in `text`, the text between them kept; nothing when there is none.
pub(crate) fn recover(text: &str) -> Found {
    const OPENS: [&str; 3] = [BLOCKS[0].open, BLOCKS[1].open, BLOCKS[2].open];
    let mut markers = Markers::new(text, &OPENS);
    let (mut kept, mut calls) = (String::new(), Vec::new());
    let mut at = 0;
    while let Some((start, which)) = markers.next_from(at) {
        let block = &BLOCKS[which];
        kept.push_str(&text[at..start]);
        let after = &text[start + block.open.len()..];
        // A reply cut before the closing marker still holds the call.
        let (body, used) = match after.find(block.close) {
            Some(end) => (&after[..end], end + block.close.len()),
            None => (after, after.len()),
        };
        let parsed = match block.quote {
            None => python::calls(body),
            Some(quote) => notation_calls(body, quote),
        };
        match parsed {
            Ok(mut c) => calls.append(&mut c),
            Err(problem) => return malformed(&problem, block.example),
        }
        at = start + block.open.len() + used;
    }
    kept.push_str(&text[at..]);
    found(&kept, calls)
}

/// `call:NAME{...}`, once or more.
fn notation_calls(body: &str, quote: &str) -> Result<Vec<TextCall>, String> {
    let mut calls = Vec::new();
    let mut rest = body.trim();
    while !rest.is_empty() {
        let after = rest
            .strip_prefix("call:")
            .ok_or_else(|| format!("expected call:NAME{{...}}, found `{}`", short(rest)))?;
        let open = after
            .find('{')
            .ok_or_else(|| format!("the call of \"{}\" has no {{...}}", after.trim()))?;
        let name = after[..open].trim();
        if name.is_empty() {
            return Err("a call names no function".into());
        }
        let mut p = Notation {
            s: &after[open + 1..],
            i: 0,
            quote,
        };
        let args = p.object(0)?;
        calls.push(TextCall {
            name: name.to_string(),
            args: CallArgs::parsed(Value::Object(args)),
        });
        rest = p.s[p.i..].trim();
    }
    if calls.is_empty() {
        return Err("no call was written".into());
    }
    Ok(calls)
}

fn short(text: &str) -> String {
    text.chars().take(20).collect()
}

/// Gemma's notation: `{key:value,...}` with bare keys, strings between `quote`s, bare numbers,
/// `true`, `false` and `null`, nested `{...}` and `[...]`.
struct Notation<'s> {
    s: &'s str,
    i: usize,
    quote: &'s str,
}

impl<'s> Notation<'s> {
    fn rest(&self) -> &'s str {
        &self.s[self.i..]
    }

    /// Skips whitespace and the commas between entries.
    fn gap(&mut self) {
        let rest = self.rest();
        let trimmed = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
        self.i += rest.len() - trimmed.len();
    }

    fn eat(&mut self, token: &str) -> bool {
        let hit = self.rest().starts_with(token);
        if hit {
            self.i += token.len();
        }
        hit
    }

    /// The entries up to the closing `}` (the opening one already read).
    fn object(&mut self, depth: usize) -> Result<Map<String, Value>, String> {
        if depth > MAX_DEPTH {
            return Err(format!("an argument nests deeper than {MAX_DEPTH} levels"));
        }
        let mut map = Map::new();
        loop {
            self.gap();
            if self.eat("}") {
                return Ok(map);
            }
            if self.rest().is_empty() {
                return Err("a {...} is not closed".into());
            }
            let key = if self.eat(self.quote) {
                self.quoted()?
            } else {
                let rest = self.rest();
                let end = rest
                    .find(':')
                    .ok_or("an argument has no `:` after its name")?;
                self.i += end;
                rest[..end].trim().to_string()
            };
            if !self.eat(":") {
                return Err(format!("expected `:` after \"{key}\""));
            }
            map.insert(key, self.value(depth)?);
        }
    }

    /// The items up to the closing `]` (the opening one already read).
    fn list(&mut self, depth: usize) -> Result<Vec<Value>, String> {
        let mut items = Vec::new();
        loop {
            self.gap();
            if self.eat("]") {
                return Ok(items);
            }
            if self.rest().is_empty() {
                return Err("a [...] is not closed".into());
            }
            items.push(self.value(depth)?);
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        self.i += self.rest().len() - self.rest().trim_start().len();
        if self.eat(self.quote) {
            return self.quoted().map(Value::String);
        }
        if self.eat("{") {
            return self.object(depth + 1).map(Value::Object);
        }
        if self.eat("[") {
            return self.list(depth + 1).map(Value::Array);
        }
        let rest = self.rest();
        let end = rest.find([',', '}', ']']).unwrap_or(rest.len());
        self.i += end;
        let bare = rest[..end].trim();
        Ok(match bare {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "null" => Value::Null,
            _ => bare
                .parse::<i64>()
                .map(Value::from)
                .ok()
                .or_else(|| {
                    bare.parse::<f64>()
                        .ok()
                        .and_then(Number::from_f64)
                        .map(Value::Number)
                })
                .unwrap_or_else(|| Value::String(bare.to_string())),
        })
    }

    /// The text up to the closing quote (the opening one already read).
    fn quoted(&mut self) -> Result<String, String> {
        let rest = self.rest();
        let end = rest
            .find(self.quote)
            .ok_or("a quoted string is not closed")?;
        self.i += end + self.quote.len();
        Ok(rest[..end].to_string())
    }
}
