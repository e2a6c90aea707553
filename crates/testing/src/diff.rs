//! Comparing JSON values for assertions and strict replays: numbers compare by value (a Rhai
//! `3` equals a JSON `3.0`), and a difference is named by its path (`$.calls[0].args.a`).

use serde_json::Value;

/// Where two values first differ and what each side holds there.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// JSONPath-like location, `$` for the whole value.
    pub path: String,
    /// What was expected there (`None`: nothing was).
    pub expected: Option<Value>,
    /// What was found there (`None`: nothing was).
    pub actual: Option<Value>,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: &Option<Value>| v.as_ref().map_or("(nothing)".to_string(), short);
        write!(
            f,
            "at {}: expected {}, got {}",
            self.path,
            show(&self.expected),
            show(&self.actual)
        )
    }
}

fn short(v: &Value) -> String {
    kiln_providers::truncate(&v.to_string(), 300)
}

/// Equal, with numbers compared by value.
pub fn same(a: &Value, b: &Value) -> bool {
    first_difference(a, b).is_none()
}

/// The first place `actual` differs from `expected`, depth first in the expected order.
pub fn first_difference(expected: &Value, actual: &Value) -> Option<Difference> {
    walk("$".to_string(), expected, actual)
}

fn walk(path: String, e: &Value, a: &Value) -> Option<Difference> {
    let here = || {
        Some(Difference {
            path: path.clone(),
            expected: Some(e.clone()),
            actual: Some(a.clone()),
        })
    };
    match (e, a) {
        (Value::Number(x), Value::Number(y)) => (x.as_f64() != y.as_f64()).then(here).flatten(),
        (Value::Array(x), Value::Array(y)) => {
            for i in 0..x.len().max(y.len()) {
                let p = format!("{path}[{i}]");
                match (x.get(i), y.get(i)) {
                    (Some(ev), Some(av)) => {
                        if let Some(d) = walk(p, ev, av) {
                            return Some(d);
                        }
                    }
                    (ev, av) => {
                        return Some(Difference {
                            path: p,
                            expected: ev.cloned(),
                            actual: av.cloned(),
                        });
                    }
                }
            }
            None
        }
        (Value::Object(x), Value::Object(y)) => {
            for (k, ev) in x {
                let p = format!("{path}.{k}");
                match y.get(k) {
                    Some(av) => {
                        if let Some(d) = walk(p, ev, av) {
                            return Some(d);
                        }
                    }
                    None => {
                        return Some(Difference {
                            path: p,
                            expected: Some(ev.clone()),
                            actual: None,
                        });
                    }
                }
            }
            y.iter()
                .find(|(k, _)| !x.contains_key(*k))
                .map(|(k, av)| Difference {
                    path: format!("{path}.{k}"),
                    expected: None,
                    actual: Some(av.clone()),
                })
        }
        _ => (e != a).then(here).flatten(),
    }
}

/// A failure message for two values that differ: the first difference, then both values
/// (multi-line strings line by line, marking the first line that differs).
pub fn explain(expected: &Value, actual: &Value) -> String {
    let Some(d) = first_difference(expected, actual) else {
        return "the values are equal".into();
    };
    let mut out = format!("first difference {d}\n");
    if let (Value::String(e), Value::String(a)) = (expected, actual)
        && (e.contains('\n') || a.contains('\n'))
    {
        let (el, al): (Vec<&str>, Vec<&str>) = (e.lines().collect(), a.lines().collect());
        let at = (0..el.len().max(al.len()))
            .find(|&i| el.get(i) != al.get(i))
            .unwrap_or(0);
        out.push_str(&format!("first differing line {}:\n", at + 1));
        out.push_str(&format!(
            "  - {}\n",
            el.get(at).copied().unwrap_or("(no line)")
        ));
        out.push_str(&format!(
            "  + {}\n",
            al.get(at).copied().unwrap_or("(no line)")
        ));
        return out;
    }
    out.push_str(&format!("  - expected: {}\n", short(expected)));
    out.push_str(&format!("  + actual:   {}\n", short(actual)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_compare_by_value_and_paths_name_the_spot() {
        assert!(same(&json!({"a": 3}), &json!({"a": 3.0})));
        let d = first_difference(
            &json!({"calls": [{"args": {"a": 1}}]}),
            &json!({"calls": [{"args": {"a": 2}}]}),
        )
        .expect("differs");
        assert_eq!(d.path, "$.calls[0].args.a");
        assert_eq!(d.to_string(), "at $.calls[0].args.a: expected 1, got 2");
    }

    #[test]
    fn missing_and_extra_items_are_named() {
        let d = first_difference(&json!([1, 2]), &json!([1])).expect("differs");
        assert_eq!(d.to_string(), "at $[1]: expected 2, got (nothing)");
        let d = first_difference(&json!({"a": 1}), &json!({"a": 1, "b": 2})).expect("differs");
        assert_eq!(d.to_string(), "at $.b: expected (nothing), got 2");
    }

    #[test]
    fn multi_line_text_shows_the_first_differing_line() {
        let text = explain(&json!("a\nb\nc"), &json!("a\nB\nc"));
        assert!(text.contains("first differing line 2"), "{text}");
        assert!(text.contains("  - b\n  + B"), "{text}");
    }
}
