//! Escaping of report text for HTML, where a model's answer or an evaluator's reason may hold
//! markup (XML for JUnit is kiln-testing's `report::xml_escape`, shared with `kiln test`).

/// Text safe in HTML content and attribute values.
pub(crate) fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
