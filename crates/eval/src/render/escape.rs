//! Escaping of report text for HTML, where a model's answer or an evaluator's reason may hold
//! markup (XML for JUnit is kiln-testing's `report::xml_escape`, shared with `kiln test`).

/// Text safe in HTML content and attribute values. A control character other than a tab or a
/// line break (a NUL in a model's answer) cannot stand in HTML, not even as a character
/// reference (`&#0;` reads as U+FFFD): it is shown as its escape, `\u0000`.
pub(crate) fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn control_characters_are_shown_as_escapes() {
        let page = super::html("a\u{0}b\u{1b}[31m\u{7f}\u{85}\tc\nd <&>");
        assert_eq!(
            page,
            "a\\u0000b\\u001b[31m\\u007f\\u0085\tc\nd &lt;&amp;&gt;"
        );
        assert!(!page.contains('\0'));
    }
}
