//! Actor names: who a request acts for, in namespaces that never meet. An OAuth user is
//! `oauth:SUB`, an OAuth client acting for itself (no `sub`, or its `client_id` as `sub`) `oauth-client:CLIENT_ID`, an MCP
//! client known only by the name it introduced itself with `mcp:NAME`; a static token's actor
//! takes none of these prefixes. Every name is visible text: none empty, none with control or
//! invisible characters (a zero-width space would make a second `ann` that looks like the
//! first), no space at either end, at most [`MAX_LEN`] bytes.

/// The namespace of an OAuth user: `oauth:SUB`.
pub const USER: &str = "oauth:";
/// The namespace of an OAuth client acting for itself: `oauth-client:CLIENT_ID`.
pub const CLIENT: &str = "oauth-client:";
/// The namespace of an MCP client known by the name it gave: `mcp:NAME`.
pub const MCP_CLIENT: &str = "mcp:";
/// The longest actor name, in bytes.
pub const MAX_LEN: usize = 256;

/// The namespaces only kiln gives out: a static token may not name an actor in them.
const RESERVED: [&str; 3] = [USER, CLIENT, MCP_CLIENT];

/// The reserved namespace `name` is in (compared without case), if any.
pub fn reserved_prefix(name: &str) -> Option<&'static str> {
    RESERVED.into_iter().find(|p| {
        name.get(..p.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(p))
    })
}

/// Whether `name` is an actor's name as people can read it; the error says what is wrong
/// ("has an invisible character (U+200B)").
pub fn check_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err(match name.is_empty() {
            true => "is empty".into(),
            false => "is only spaces".into(),
        });
    }
    if name.len() > MAX_LEN {
        return Err(format!("is longer than {MAX_LEN} bytes"));
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(format!("has a control character (U+{:04X})", c as u32));
    }
    if let Some(c) = name.chars().find(|&c| is_invisible(c)) {
        return Err(format!("has an invisible character (U+{:04X})", c as u32));
    }
    if name.trim() != name {
        return Err("starts or ends with a space".into());
    }
    Ok(())
}

/// Characters that show nothing, or a blank that is not a plain space: Unicode's format
/// characters (zero-width spaces and joiners, bidirectional controls, the byte order mark,
/// tags), fillers and blanks that render empty, variation selectors, and every space but
/// U+0020.
fn is_invisible(c: char) -> bool {
    (c.is_whitespace() && c != ' ')
        || matches!(c,
            '\u{ad}' | '\u{34f}' | '\u{61c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}'
            | '\u{180b}'..='\u{180f}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}' | '\u{2800}' | '\u{3164}' | '\u{fe00}'..='\u{fe0f}'
            | '\u{feff}' | '\u{ffa0}' | '\u{fff0}'..='\u{fffb}' | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0000}'..='\u{e0fff}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_visible_text() {
        for ok in ["ann", "Ann Lee", "ann@example.com", "用户", "a:b"] {
            assert_eq!(check_name(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            " ",
            "\u{200b}",
            "ann\u{200b}",
            "\u{2060}\u{feff}",
            "ann\u{0}",
            " ann",
            "ann\u{a0}",
            "\u{3164}",
            "\u{e0041}",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_name(&"a".repeat(MAX_LEN + 1)).is_err());
    }

    #[test]
    fn kilns_namespaces_are_reserved() {
        assert_eq!(reserved_prefix("oauth:ann"), Some(USER));
        assert_eq!(reserved_prefix("OAuth:ann"), Some(USER));
        assert_eq!(reserved_prefix("oauth-client:app"), Some(CLIENT));
        assert_eq!(reserved_prefix("mcp:claude"), Some(MCP_CLIENT));
        assert_eq!(reserved_prefix("ann"), None);
        assert_eq!(reserved_prefix("oauth"), None);
    }
}
