//! Where the cursor is in a script, read the way the DSL is written: inside which call and
//! which of its arguments, inside a string or a map, and which builder a `.` continues. A
//! forward scan of the text up to the cursor, so strings, comments and brackets are read
//! right even in a file that does not parse yet.

/// The builders a statement can start with.
pub const CONSTRUCTORS: &[(&str, &str)] = &[
    ("tool", "ToolBuilder"),
    ("agent", "AgentBuilder"),
    ("pipeline", "PipelineBuilder"),
    ("mcp_server", "McpServerBuilder"),
    ("policy", "PolicyBuilder"),
    ("prompt", "PromptBuilder"),
    ("resource", "ResourceBuilder"),
    ("resource_template", "ResourceBuilder"),
    ("evaluation", "EvalBuilder"),
];

/// An open bracket the cursor is inside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Open {
    /// A call's parentheses: the function or method name and which argument (0-based).
    Call { name: String, arg: usize },
    /// An array literal.
    Array,
    /// A map literal (`#{`) or a block.
    Brace { map: bool },
}

/// What surrounds the cursor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// The brackets open at the cursor, outermost first.
    pub open: Vec<Open>,
    /// The string the cursor is in: its text up to the cursor, and its byte offset of start
    /// (after the quote).
    pub string: Option<(String, usize)>,
    /// The builder type of the statement the cursor is in at its top level (`ToolBuilder`),
    /// when the statement started with one of [`CONSTRUCTORS`].
    pub builder: Option<&'static str>,
    /// The identifier being typed just before the cursor (may be empty).
    pub word: String,
    /// Whether that identifier follows a `.` (a method).
    pub after_dot: bool,
    /// Whether the cursor is in a comment.
    pub comment: bool,
}

impl Context {
    /// The innermost call the cursor is an argument of, looking through an array literal
    /// (`.tools(["a", |])` is in `tools`), with the argument index.
    pub fn call(&self) -> Option<(&str, usize)> {
        let mut it = self.open.iter().rev();
        let mut first = it.next()?;
        if *first == Open::Array {
            first = it.next()?;
        }
        match first {
            Open::Call { name, arg } => Some((name, *arg)),
            _ => None,
        }
    }

    /// Whether the cursor is directly inside a map literal that is argument `arg`+ of `call`.
    pub fn in_map_of(&self, call: &str, from_arg: usize) -> bool {
        let n = self.open.len();
        n >= 2
            && self.open[n - 1] == Open::Brace { map: true }
            && matches!(&self.open[n - 2], Open::Call { name, arg } if name == call && *arg >= from_arg)
    }
}

fn ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The identifier that ends at `end` in `text`.
fn ident_before(text: &[u8], end: usize) -> &str {
    let mut start = end;
    while start > 0 && ident_char(text[start - 1]) {
        start -= 1;
    }
    std::str::from_utf8(&text[start..end]).unwrap_or_default()
}

/// Reads `text` up to byte offset `cursor`.
pub fn context(text: &str, cursor: usize) -> Context {
    let b = text.as_bytes();
    let cursor = cursor.min(b.len());
    let mut cx = Context::default();
    let mut builder: Option<&'static str> = None;
    let mut i = 0;
    while i < cursor {
        let c = b[i];
        match c {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < cursor && b[i] != b'\n' {
                    i += 1;
                }
                cx.comment = i >= cursor;
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < cursor && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                cx.comment = i >= cursor;
                i += 2;
                continue;
            }
            b'"' | b'`' => {
                let start = i + 1;
                i += 1;
                while i < cursor && b[i] != c {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                if i >= cursor {
                    let upto = &text[start.min(cursor)..cursor];
                    cx.string = Some((upto.to_string(), start));
                    break;
                }
            }
            b'\'' => {
                i += 1;
                while i < cursor && b[i] != b'\'' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'(' => {
                let mut end = i;
                while end > 0 && b[end - 1].is_ascii_whitespace() {
                    end -= 1;
                }
                let name = ident_before(b, end).to_string();
                if cx.open.is_empty() && builder.is_none() {
                    builder = CONSTRUCTORS
                        .iter()
                        .find(|(n, _)| *n == name)
                        .map(|(_, ty)| *ty);
                }
                cx.open.push(Open::Call { name, arg: 0 });
            }
            b'[' => cx.open.push(Open::Array),
            b'{' => {
                let map = i > 0 && b[i - 1] == b'#';
                cx.open.push(Open::Brace { map });
            }
            b')' | b']' | b'}' => {
                cx.open.pop();
            }
            b',' => {
                if let Some(Open::Call { arg, .. }) = cx.open.last_mut() {
                    *arg += 1;
                }
            }
            b';' if cx.open.is_empty() => builder = None,
            _ => {}
        }
        i += 1;
    }
    if cx.string.is_none() && !cx.comment {
        let mut start = cursor;
        while start > 0 && ident_char(b[start - 1]) {
            start -= 1;
        }
        cx.word = text[start..cursor].to_string();
        let mut before = start;
        while before > 0 && b[before - 1].is_ascii_whitespace() {
            before -= 1;
        }
        cx.after_dot = before > 0 && b[before - 1] == b'.';
    }
    cx.builder = if cx.open.is_empty() { builder } else { None };
    cx
}

/// The string literal or identifier around byte offset `at`: its text and byte range, and
/// whether it is a string.
pub fn token_at(text: &str, at: usize) -> Option<(String, std::ops::Range<usize>, bool)> {
    let b = text.as_bytes();
    let at = at.min(b.len());
    let cx = context(text, at);
    if let Some((_, start)) = cx.string {
        let mut end = at;
        while end < b.len() && b[end] != b'"' && b[end] != b'`' && b[end] != b'\n' {
            end += 1;
        }
        return Some((text[start..end].to_string(), start..end, true));
    }
    let mut start = at;
    while start > 0 && ident_char(b[start - 1]) {
        start -= 1;
    }
    let mut end = at;
    while end < b.len() && ident_char(b[end]) {
        end += 1;
    }
    (start < end).then(|| (text[start..end].to_string(), start..end, false))
}

/// A declaration found in a file's text: `tool("name")` and the like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// `tool`, `agent`, `pipeline`...
    pub kind: &'static str,
    /// The declared name.
    pub name: String,
    /// Byte range of the name (inside its quotes).
    pub range: std::ops::Range<usize>,
}

/// Every `tool("..")`, `agent("..")`, `pipeline("..")`... at the start of a statement.
pub fn declarations(text: &str) -> Vec<Declared> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    for &(kind, _) in CONSTRUCTORS {
        let mut from = 0;
        while let Some(found) = text[from..].find(kind) {
            let at = from + found;
            from = at + kind.len();
            if at > 0 && (ident_char(b[at - 1]) || b[at - 1] == b'.') {
                continue;
            }
            let rest = &text[from..];
            let trimmed = rest.trim_start();
            let Some(after) = trimmed.strip_prefix('(') else {
                continue;
            };
            let Some(quoted) = after.trim_start().strip_prefix('"') else {
                continue;
            };
            let Some(len) = quoted.find('"') else {
                continue;
            };
            let start = text.len() - quoted.len();
            let cx = context(text, at);
            if !cx.open.is_empty() || cx.string.is_some() || cx.comment {
                continue;
            }
            out.push(Declared {
                kind,
                name: quoted[..len].to_string(),
                range: start..start + len,
            });
        }
    }
    out.sort_by_key(|d| d.range.start);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_end(text: &str) -> Context {
        context(text, text.len())
    }

    #[test]
    fn a_param_type_is_the_second_argument_of_param_in_a_string() {
        let cx = at_end("tool(\"w\")\n  .param(\"x\", \"str");
        assert_eq!(cx.call(), Some(("param", 1)));
        assert_eq!(cx.string.as_ref().map(|s| s.0.as_str()), Some("str"));
    }

    #[test]
    fn a_dot_continues_the_statement_s_builder_but_not_inside_its_handler() {
        let cx = at_end("agent(\"a\").tools([\"x\"])\n  .mo");
        assert_eq!(cx.builder, Some("AgentBuilder"));
        assert!(cx.after_dot);
        assert_eq!(cx.word, "mo");
        let cx = at_end("tool(\"t\").handler(|args| { args.");
        assert_eq!(cx.builder, None);
        let cx = at_end("tool(\"t\");\nlet x = 1;\nx.");
        assert_eq!(cx.builder, None);
    }

    #[test]
    fn arrays_maps_comments_and_strings_are_read_as_rhai_reads_them() {
        let cx = at_end("agent(\"a\").tools([\"calc\", \"we");
        assert_eq!(cx.call(), Some(("tools", 0)));
        let cx = at_end("tool(\"t\").param(\"n\", \"integer\", #{ mi");
        assert!(cx.in_map_of("param", 2));
        assert_eq!(cx.word, "mi");
        let cx = at_end("// tool(\"x\")\n\"a(b\"; call_tool(\"");
        assert_eq!(cx.call(), Some(("call_tool", 0)));
    }

    #[test]
    fn declarations_are_found_with_the_range_of_their_names() {
        let text = "tool(\"a\").handler(|x| call_tool(\"b\", #{}));\nagent( \"bot\" );\n// pipeline(\"no\")";
        let found = declarations(text);
        let names: Vec<_> = found.iter().map(|d| (d.kind, d.name.as_str())).collect();
        assert_eq!(names, [("tool", "a"), ("agent", "bot")]);
        assert_eq!(&text[found[1].range.clone()], "bot");
    }

    #[test]
    fn the_token_at_a_position_is_a_whole_string_or_identifier() {
        let text = "agent(\"a\").tools([\"calculator\"]);";
        let at = text.find("calc").unwrap_or_default() + 2;
        let (tok, _, string) = token_at(text, at).expect("a token");
        assert_eq!((tok.as_str(), string), ("calculator", true));
        let (tok, _, string) = token_at(text, 12).expect("a token");
        assert_eq!((tok.as_str(), string), ("tools", false));
    }
}
