//! Byte offsets against LSP positions (0-based lines, UTF-16 columns) and kiln's 1-based
//! line and column (Rhai counts characters).

use lsp_types::{Position, Range};

/// The byte offset of an LSP position; past the end of a line is its end.
pub fn offset(text: &str, pos: Position) -> usize {
    let mut start = 0;
    for _ in 0..pos.line {
        match text[start..].find('\n') {
            Some(n) => start += n + 1,
            None => return text.len(),
        }
    }
    let line = text[start..].split('\n').next().unwrap_or_default();
    let mut units = 0;
    for (i, c) in line.char_indices() {
        if units >= pos.character as usize {
            return start + i;
        }
        units += c.len_utf16();
    }
    start + line.len()
}

/// The LSP position of a byte offset.
pub fn position(text: &str, offset: usize) -> Position {
    let offset = floor_char(text, offset.min(text.len()));
    let before = &text[..offset];
    let line = before.matches('\n').count();
    let line_start = before.rfind('\n').map_or(0, |n| n + 1);
    let character: usize = before[line_start..].chars().map(char::len_utf16).sum();
    Position::new(line as u32, character as u32)
}

/// The LSP range of a byte range.
pub fn range(text: &str, r: std::ops::Range<usize>) -> Range {
    Range::new(position(text, r.start), position(text, r.end))
}

/// The byte offset of kiln's 1-based line and column (0 meaning unknown: the start).
pub fn from_line_col(text: &str, line: usize, column: usize) -> usize {
    let mut start = 0;
    for _ in 1..line.max(1) {
        match text[start..].find('\n') {
            Some(n) => start += n + 1,
            None => return text.len(),
        }
    }
    let line_text = text[start..].split('\n').next().unwrap_or_default();
    match line_text.char_indices().nth(column.saturating_sub(1)) {
        Some((i, _)) => start + i,
        None => start + line_text.len(),
    }
}

fn floor_char(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_utf16_units_and_round_trip() {
        let text = "a\n\"é😀\" x\n";
        let x = text.find('x').unwrap_or_default();
        let pos = position(text, x);
        assert_eq!(pos, Position::new(1, 6));
        assert_eq!(offset(text, pos), x);
        assert_eq!(from_line_col(text, 2, 6), x);
        assert_eq!(offset(text, Position::new(9, 0)), text.len());
    }
}
