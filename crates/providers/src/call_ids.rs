//! Tool-call ids as each wire accepts them. A transcript's ids come from whichever model wrote
//! each call (a fallback chain's members, a scripted model, a service that sends odd ids), and
//! every wire renders the whole transcript, so an id one service wrote may be one the next
//! refuses: Anthropic takes `^[a-zA-Z0-9_-]+$`, Bedrock's `toolUseId` the same in at most 64
//! characters, OpenAI's Chat Completions at most 40 characters, its Responses API at most 64.
//!
//! A wire encodes every id, the call's and its result's alike, through its [`IdRule`]: an id
//! the wire accepts is sent as it is; any other becomes its accepted characters (the rest as
//! `_`), shortened to fit, then `_k` and 16 hex digits of its SHA-256. The mapping is a pure
//! function of the id, so a call and its result always agree, every round and every member
//! render the same id alike, and two ids never meet: a kept id never ends in the mapped form's
//! suffix (an id that does is mapped too), and two mapped ones differ in their digest. The
//! transcript, the run log and the tools keep the original ids: a mapped id lives only in
//! the request body, and a reply's calls carry the ids the wire itself wrote.

#[cfg(test)]
mod wire_tests;

use sha2::{Digest, Sha256};
use std::borrow::Cow;

/// The ids one wire accepts: a character set and a length in characters.
#[derive(Debug, Clone, Copy)]
pub struct IdRule {
    /// The most characters an id may have.
    pub max_chars: usize,
    /// Whether the wire takes this character in an id.
    pub allows: fn(char) -> bool,
}

/// Hex digits of the digest in a mapped id.
const DIGEST_HEX: usize = 16;
/// What stands between a mapped id's characters and its digest.
const MARK: &str = "_k";

fn word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn not_control(c: char) -> bool {
    !c.is_control()
}

impl IdRule {
    /// Anthropic's Messages API: `^[a-zA-Z0-9_-]+$` (kept to 64 characters, as its names are).
    pub const ANTHROPIC: IdRule = IdRule {
        max_chars: 64,
        allows: word_char,
    };
    /// Bedrock Converse's `toolUseId`: `[a-zA-Z0-9_-]+`, 1 to 64 characters.
    pub const BEDROCK: IdRule = IdRule {
        max_chars: 64,
        allows: word_char,
    };
    /// OpenAI's Chat Completions (and Azure's): a call's `id` of at most 40 characters.
    pub const OPENAI: IdRule = IdRule {
        max_chars: 40,
        allows: not_control,
    };
    /// OpenAI's Responses API (and Azure's): a `call_id` of at most 64 characters.
    pub const RESPONSES: IdRule = IdRule {
        max_chars: 64,
        allows: not_control,
    };
    /// Gemini's `functionCall.id` (no documented bound; kept printable and short).
    pub const GEMINI: IdRule = IdRule {
        max_chars: 64,
        allows: not_control,
    };
    /// Ollama's `tool_call_id` (no documented bound; kept printable and short).
    pub const OLLAMA: IdRule = IdRule {
        max_chars: 64,
        allows: not_control,
    };

    /// Whether the wire takes `id` as it is, and it cannot be taken for a mapped id.
    pub fn accepts(&self, id: &str) -> bool {
        !id.is_empty()
            && id.chars().count() <= self.max_chars
            && id.chars().all(self.allows)
            && !looks_mapped(id)
    }

    /// `id` as this wire sends it: unchanged when the wire [accepts](IdRule::accepts) it,
    /// otherwise its accepted characters (the rest as `_`), shortened, then `_k` and 16 hex
    /// digits of its SHA-256.
    pub fn wire_id<'a>(&self, id: &'a str) -> Cow<'a, str> {
        if self.accepts(id) {
            return Cow::Borrowed(id);
        }
        let room = self.max_chars.saturating_sub(MARK.len() + DIGEST_HEX);
        let mut out: String = id
            .chars()
            .take(room)
            .map(|c| if word_char(c) { c } else { '_' })
            .collect();
        out.push_str(MARK);
        let digest = Sha256::digest(id.as_bytes());
        for byte in &digest[..DIGEST_HEX / 2] {
            out.push_str(&format!("{byte:02x}"));
        }
        Cow::Owned(out)
    }
}

/// Whether `id` ends as a mapped id does: `_k` and 16 lowercase hex digits.
fn looks_mapped(id: &str) -> bool {
    let Some(digits) = id.len().checked_sub(DIGEST_HEX).and_then(|at| id.get(at..)) else {
        return false;
    };
    let head = &id[..id.len() - DIGEST_HEX];
    head.ends_with(MARK)
        && digits
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    const WEIRD: &str = "weird id/../\u{0}";

    fn anthropic_pattern(id: &str) -> bool {
        !id.is_empty() && id.chars().all(word_char)
    }

    #[test]
    fn an_accepted_id_is_kept_and_any_other_is_mapped_into_the_rule() {
        for rule in [IdRule::ANTHROPIC, IdRule::BEDROCK] {
            assert_eq!(rule.wire_id("toolu_01A9-x"), "toolu_01A9-x");
            let mapped = rule.wire_id(WEIRD);
            assert!(anthropic_pattern(&mapped), "{mapped:?}");
            assert!(mapped.starts_with("weird_id______k"), "{mapped:?}");
            assert!(mapped.chars().count() <= rule.max_chars);
        }
        assert_eq!(IdRule::OPENAI.wire_id("call abc.1:x"), "call abc.1:x");
        for rule in [
            IdRule::OPENAI,
            IdRule::RESPONSES,
            IdRule::GEMINI,
            IdRule::OLLAMA,
        ] {
            let mapped = rule.wire_id(WEIRD);
            assert!(!mapped.contains('\0') && mapped.chars().count() <= rule.max_chars);
        }
    }

    #[test]
    fn long_ids_fit_the_wire_and_stay_apart() {
        let a = "x".repeat(100);
        let b = format!("{}y", "x".repeat(99));
        for rule in [IdRule::OPENAI, IdRule::BEDROCK, IdRule::RESPONSES] {
            let (ma, mb) = (rule.wire_id(&a), rule.wire_id(&b));
            assert!(ma.chars().count() <= rule.max_chars, "{ma}");
            assert_ne!(ma, mb, "ids sharing their first characters stay apart");
        }
        assert_eq!(IdRule::OPENAI.wire_id(&a).len(), 40);
    }

    #[test]
    fn the_mapping_is_deterministic_and_never_meets_a_kept_id() {
        let mapped = IdRule::ANTHROPIC.wire_id(WEIRD).into_owned();
        assert_eq!(
            IdRule::ANTHROPIC.wire_id(WEIRD),
            mapped,
            "the same every time"
        );
        // A valid id spelled as another's mapped form is mapped itself, so the two differ.
        let again = IdRule::ANTHROPIC.wire_id(&mapped);
        assert_ne!(again, mapped);
        assert!(looks_mapped(&again));
        // Empty ids and multi-byte characters are mapped without panicking.
        assert!(anthropic_pattern(&IdRule::ANTHROPIC.wire_id("")));
        assert!(anthropic_pattern(&IdRule::ANTHROPIC.wire_id("é€😀")));
        assert!(!looks_mapped("€€€€€€€€€€€€€€€€€€"));
    }
}
