//! Calls in Python's syntax, as Gemma 3 and Llama 3.2 and 4 write them:
//! `name(arg=value, ...)`, several in a `[...]` list, one a line or `;` between them, a
//! `print(...)` around one dropped; the values Python literals (strings, numbers, `True`,
//! `None`, lists, tuples, dicts). Nothing is evaluated: anything else is an error.

use super::call::{Found, Offered, TextCall, found, is_offered, malformed};
use kiln_core::model::CallArgs;
use serde_json::{Map, Number, Value};

const EXAMPLE: &str = "[TOOL(arg=value, ...)]";
/// How deep lists and dicts in an argument may nest.
const MAX_DEPTH: usize = 64;

/// The calls written in `body`.
pub(crate) fn calls(body: &str) -> Result<Vec<TextCall>, String> {
    let mut p = Parser { s: body, i: 0 };
    let mut calls = Vec::new();
    p.ws();
    if p.eat('[') {
        loop {
            p.ws();
            if p.eat(']') {
                break;
            }
            calls.push(p.call()?);
            p.ws();
            if !p.eat(',') {
                p.expect(']', "after the calls")?;
                break;
            }
        }
        p.ws();
        if !p.done() {
            return Err("there is text after the list of calls".into());
        }
    } else {
        while !p.done() {
            calls.push(p.call()?);
            p.ws();
            while p.eat(';') || p.eat(',') {
                p.ws();
            }
        }
    }
    if calls.is_empty() {
        return Err("no call was written".into());
    }
    Ok(calls)
}

/// A reply that is nothing but a `[name(...), ...]` list whose first call names an offered
/// tool (Gemma 3's and Llama 3.2's documented form, no markup around it).
pub(crate) fn whole_list(text: &str, tools: &[Offered]) -> Found {
    let body = super::call::strip_ends(text.trim());
    let Some(inner) = body.strip_prefix('[') else {
        return Found::Nothing;
    };
    if !body.ends_with(']') {
        return Found::Nothing;
    }
    let inner = inner.trim_start();
    let name_end = inner
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
        .unwrap_or(inner.len());
    let opens_call = inner[name_end..].trim_start().starts_with('(');
    if !opens_call || !is_offered(tools, &inner[..name_end]) {
        return Found::Nothing;
    }
    match calls(body) {
        Ok(calls) => found("", calls),
        Err(problem) => malformed(&problem, EXAMPLE),
    }
}

struct Parser<'s> {
    s: &'s str,
    i: usize,
}

impl<'s> Parser<'s> {
    fn rest(&self) -> &'s str {
        &self.s[self.i..]
    }

    fn done(&self) -> bool {
        self.i >= self.s.len()
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn ws(&mut self) {
        let rest = self.rest();
        self.i += rest.len() - rest.trim_start().len();
    }

    fn eat(&mut self, c: char) -> bool {
        let hit = self.rest().starts_with(c);
        if hit {
            self.i += c.len_utf8();
        }
        hit
    }

    fn expect(&mut self, c: char, context: &str) -> Result<(), String> {
        self.ws();
        if self.eat(c) {
            return Ok(());
        }
        Err(format!("expected `{c}` {context}, found {}", self.shown()))
    }

    /// What comes next, shortened, for an error.
    fn shown(&self) -> String {
        let rest: String = self.rest().chars().take(20).collect();
        if rest.is_empty() {
            "the end".into()
        } else {
            format!("`{rest}`")
        }
    }

    /// A name: letters, digits and `_`, with `.` between parts (`module.func`).
    fn ident(&mut self) -> Option<&'s str> {
        let rest = self.rest();
        let first = rest.chars().next()?;
        if !(first.is_alphabetic() || first == '_') {
            return None;
        }
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(rest.len());
        self.i += end;
        Some(&rest[..end])
    }

    /// `name(key=value, ...)`, or `print(name(...))`.
    fn call(&mut self) -> Result<TextCall, String> {
        self.ws();
        let name = self
            .ident()
            .ok_or_else(|| format!("expected a function's name, found {}", self.shown()))?;
        self.expect('(', &format!("after \"{name}\""))?;
        if name == "print" {
            let inner = self.call()?;
            self.expect(')', "closing print(...)")?;
            return Ok(inner);
        }
        let mut args = Map::new();
        loop {
            self.ws();
            if self.eat(')') {
                break;
            }
            let key = self.ident().filter(|_| {
                let rest = self.rest().trim_start();
                rest.starts_with('=') && !rest.starts_with("==")
            });
            let Some(key) = key else {
                return Err(format!(
                    "the arguments of \"{name}\" must be named: {name}(arg=value)"
                ));
            };
            self.expect('=', "after an argument's name")?;
            args.insert(key.to_string(), self.value(0)?);
            self.ws();
            if !self.eat(',') {
                self.expect(')', &format!("after the arguments of \"{name}\""))?;
                break;
            }
        }
        Ok(TextCall {
            name: name.to_string(),
            args: CallArgs::parsed(Value::Object(args)),
        })
    }

    /// A Python literal as JSON.
    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(format!("an argument nests deeper than {MAX_DEPTH} levels"));
        }
        self.ws();
        match self.peek() {
            Some(q @ ('"' | '\'')) => self.string(q).map(Value::String),
            Some('[') => self.items(']', depth).map(Value::Array),
            Some('(') => self.items(')', depth).map(Value::Array),
            Some('{') => self.dict(depth),
            Some(c) if c.is_ascii_digit() || matches!(c, '-' | '+' | '.') => self.number(),
            _ => match self.ident() {
                Some("True" | "true") => Ok(Value::Bool(true)),
                Some("False" | "false") => Ok(Value::Bool(false)),
                Some("None" | "null") => Ok(Value::Null),
                Some(other) => Err(format!("`{other}` is not a literal value")),
                None => Err(format!("expected a value, found {}", self.shown())),
            },
        }
    }

    /// `[a, b]` or `(a, b)` (the opening bracket next).
    fn items(&mut self, close: char, depth: usize) -> Result<Vec<Value>, String> {
        self.i += 1;
        let mut items = Vec::new();
        loop {
            self.ws();
            if self.eat(close) {
                return Ok(items);
            }
            items.push(self.value(depth + 1)?);
            self.ws();
            if !self.eat(',') {
                self.expect(close, "after a list's items")?;
                return Ok(items);
            }
        }
    }

    /// `{"key": value, ...}` (the brace next); keys are strings or numbers.
    fn dict(&mut self, depth: usize) -> Result<Value, String> {
        self.i += 1;
        let mut map = Map::new();
        loop {
            self.ws();
            if self.eat('}') {
                return Ok(Value::Object(map));
            }
            let key = match self.value(depth + 1)? {
                Value::String(s) => s,
                Value::Number(n) => n.to_string(),
                other => return Err(format!("a dict key must be a string, not {other}")),
            };
            self.expect(':', "after a dict key")?;
            map.insert(key, self.value(depth + 1)?);
            self.ws();
            if !self.eat(',') {
                self.expect('}', "after a dict's entries")?;
                return Ok(Value::Object(map));
            }
        }
    }

    fn number(&mut self) -> Result<Value, String> {
        let rest = self.rest();
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '_')))
            .unwrap_or(rest.len());
        let text = rest[..end].replace('_', "");
        self.i += end;
        let text = text.strip_prefix('+').unwrap_or(&text);
        if let Ok(n) = text.parse::<i64>() {
            return Ok(Value::Number(n.into()));
        }
        text.parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| format!("`{text}` is not a number"))
    }

    /// A quoted string, `'...'`, `"..."` or tripled, with Python's escapes.
    fn string(&mut self, quote: char) -> Result<String, String> {
        let triple: String = [quote; 3].iter().collect();
        let close = if self.rest().starts_with(&triple) {
            self.i += 3;
            triple
        } else {
            self.i += 1;
            quote.to_string()
        };
        let (body, mut out) = (self.rest(), String::new());
        let mut chars = body.char_indices();
        while let Some((at, c)) = chars.next() {
            if body[at..].starts_with(&close) {
                self.i += at + close.len();
                return Ok(out);
            }
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.next().map(|(_, e)| e) {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('0') => out.push('\0'),
                Some(e @ ('\\' | '\'' | '"')) => out.push(e),
                Some(e @ ('x' | 'u')) => {
                    let len = if e == 'x' { 2 } else { 4 };
                    let hex: String = chars.by_ref().take(len).map(|(_, h)| h).collect();
                    let code = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32);
                    out.push(code.ok_or(format!("`\\{e}{hex}` is not a character"))?);
                }
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => break,
            }
        }
        Err("a string is not closed".into())
    }
}
