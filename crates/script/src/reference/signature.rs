//! A signature as the table writes it, `param(name: string, type: string[, options: string |
//! map])`, perhaps followed by what a call returns (`image(data: string, mime: string) ->
//! Content`): the parameters it names, with their types, the lists of arguments a call may
//! pass (each bracketed group may be left out), and the return type.

/// One parameter of a signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// Its name (`options`).
    pub name: String,
    /// Its type as the table writes it: `string`, `int`, `float`, `number`, `bool`, `map`,
    /// `array`, `fn`, `any`, or alternatives joined by ` | `.
    pub ty: String,
    /// Whether a call may leave it out.
    pub optional: bool,
}

/// A parameter or an optional group of them.
#[derive(Debug, Clone)]
enum Item {
    Param(String, String),
    Optional(Vec<Item>),
}

/// The parameter types the table uses; a parameter's type is one of them or several joined by
/// ` | `.
pub const TYPES: &[&str] = &[
    "string",
    "int",
    "float",
    "number",
    "bool",
    "map",
    "array",
    "fn",
    "any",
    "Evaluator",
];

/// What a call returns where the table says (`-> T` after the parameters): a parameter type
/// (`string`, `map`...), `()`, `Content` (a content block) or a builder's type.
pub fn returns(signature: &str) -> Option<&str> {
    let rest = &signature[close(signature)..];
    let ty = rest.strip_prefix(')')?.trim().strip_prefix("->")?.trim();
    (!ty.is_empty()).then_some(ty)
}

/// Whether a parameter the table types `table` takes what Rhai names `reg` (in its
/// definitions or metadata: `string`, `i64`, `map`, `?`...).
pub fn accepts(table: &str, reg: &str) -> bool {
    matches!(reg, "any" | "?")
        || table.split('|').map(str::trim).any(|t| match t {
            "any" => true,
            "string" => matches!(reg, "string" | "str" | "ImmutableString" | "String"),
            "int" => matches!(reg, "i64" | "INT" | "int"),
            "float" => matches!(reg, "f64" | "FLOAT" | "float"),
            "number" => matches!(
                reg,
                "i64" | "f64" | "INT" | "FLOAT" | "number" | "int" | "float"
            ),
            "fn" => matches!(reg, "Fn" | "FnPtr"),
            other => other == reg,
        })
}

/// The parameters between the parentheses of `signature`, in order.
pub fn params(signature: &str) -> Vec<Param> {
    let mut out = Vec::new();
    flatten(&items(signature), false, &mut out);
    out
}

/// Every list of parameters a call may pass, shortest first.
pub fn expansions(signature: &str) -> Vec<Vec<Param>> {
    let mut all = expand(&items(signature));
    all.sort_by_key(Vec::len);
    all
}

/// `signature` without its types (and return type): the call as a person writes it
/// (`param(name, type[, options])`).
pub fn untyped(signature: &str) -> String {
    let mut out = String::with_capacity(signature.len());
    let mut in_type = false;
    let end = (close(signature) + 1).min(signature.len());
    for c in signature[..end].chars() {
        match c {
            ':' => in_type = true,
            ',' | '[' | ']' | ')' => {
                in_type = false;
                out.push(c);
            }
            _ if !in_type => out.push(c),
            _ => {}
        }
    }
    out
}

/// The byte offset of the parenthesis closing a signature's parameters (no type has one), or
/// its length.
fn close(signature: &str) -> usize {
    let start = signature.find('(').unwrap_or(signature.len());
    signature[start..]
        .find(')')
        .map_or(signature.len(), |i| start + i)
}

/// The text between the parentheses of a signature.
fn inner(signature: &str) -> &str {
    let start = signature.find('(').map_or(signature.len(), |i| i + 1);
    let end = close(signature).max(start);
    &signature[start..end]
}

fn items(signature: &str) -> Vec<Item> {
    let chars: Vec<char> = inner(signature).chars().collect();
    let mut at = 0;
    sequence(&chars, &mut at)
}

/// Items up to the `]` closing the group (or the end).
fn sequence(chars: &[char], at: &mut usize) -> Vec<Item> {
    let mut out = Vec::new();
    while *at < chars.len() {
        match chars[*at] {
            ']' => {
                *at += 1;
                break;
            }
            '[' => {
                *at += 1;
                out.push(Item::Optional(sequence(chars, at)));
            }
            c if c == ',' || c.is_whitespace() => *at += 1,
            _ => {
                let start = *at;
                while *at < chars.len() && !matches!(chars[*at], ',' | '[' | ']') {
                    *at += 1;
                }
                let text: String = chars[start..*at].iter().collect();
                let (name, ty) = text.split_once(':').unwrap_or((&text, "any"));
                out.push(Item::Param(name.trim().to_string(), ty.trim().to_string()));
            }
        }
    }
    out
}

fn flatten(items: &[Item], optional: bool, out: &mut Vec<Param>) {
    for item in items {
        match item {
            Item::Param(name, ty) => out.push(Param {
                name: name.clone(),
                ty: ty.clone(),
                optional,
            }),
            Item::Optional(group) => flatten(group, true, out),
        }
    }
}

fn expand(items: &[Item]) -> Vec<Vec<Param>> {
    let mut all: Vec<Vec<Param>> = vec![Vec::new()];
    for item in items {
        all = match item {
            Item::Param(name, ty) => all
                .into_iter()
                .map(|mut e| {
                    e.push(Param {
                        name: name.clone(),
                        ty: ty.clone(),
                        optional: false,
                    });
                    e
                })
                .collect(),
            Item::Optional(group) => {
                let tails = expand(group);
                let mut next = all.clone();
                for e in &all {
                    for tail in &tails {
                        let mut with = e.clone();
                        with.extend(tail.iter().map(|p| Param {
                            optional: true,
                            ..p.clone()
                        }));
                        next.push(with);
                    }
                }
                next
            }
        };
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arities(sig: &str) -> Vec<usize> {
        expansions(sig).iter().map(Vec::len).collect()
    }

    #[test]
    fn optional_groups_nest_and_follow_each_other() {
        assert_eq!(arities("exclusive()"), [0]);
        assert_eq!(arities("code_mode([options: map])"), [0, 1]);
        assert_eq!(
            arities("progress(done: number[, total: number[, message: string]])"),
            [1, 2, 3]
        );
        assert_eq!(
            arities("input(name: string, type: string[, desc: string][, options: map])"),
            [2, 3, 3, 4]
        );
        let p = params("param(name: string, type: string[, options: string | map])");
        assert_eq!(p.len(), 3);
        assert_eq!(
            (p[2].name.as_str(), p[2].ty.as_str()),
            ("options", "string | map")
        );
        assert!(p[2].optional && !p[0].optional);
    }

    #[test]
    fn the_untyped_call_is_what_a_person_writes() {
        assert_eq!(
            untyped("param(name: string, type: string[, options: string | map])"),
            "param(name, type[, options])"
        );
        assert_eq!(untyped("roots()"), "roots()");
        assert_eq!(params("log(level: string, message)")[1].ty, "any");
        assert_eq!(
            untyped("image(data: string, mime: string) -> Content"),
            "image(data, mime)"
        );
    }

    #[test]
    fn a_return_type_follows_the_parameters() {
        let sig = "progress(done: number[, total: number[, message: string]]) -> ()";
        assert_eq!(returns(sig), Some("()"));
        assert_eq!(arities(sig), [1, 2, 3]);
        assert_eq!(params(sig)[2].ty, "string");
        assert_eq!(
            returns("image(data: string, mime: string) -> Content"),
            Some("Content")
        );
        assert_eq!(returns("roots()"), None);
        assert!(accepts("number", "int") && accepts("string | map", "map"));
        assert!(!accepts("string", "map") && accepts("string", "?"));
    }
}
