//! A range of a kept result's text, counted in characters, with what comes
//! after it.

/// A range of characters read from a text.
#[derive(Debug, Clone, PartialEq)]
pub struct Range {
    /// The characters read.
    pub text: String,
    /// The first character's position.
    pub offset: usize,
    /// The position after the last one read.
    pub end: usize,
    /// The characters in the whole text.
    pub total: usize,
}

impl Range {
    /// Whether the text goes on after this range.
    pub fn more(&self) -> bool {
        self.end < self.total
    }
}

/// At most `limit` characters of `text` from character `offset` on.
pub fn read_range(text: &str, offset: usize, limit: usize) -> Range {
    // Most results are ASCII: characters are bytes, and a range a slice.
    if text.is_ascii() {
        let start = offset.min(text.len());
        let end = start.saturating_add(limit).min(text.len());
        return Range {
            text: text[start..end].to_string(),
            offset: start,
            end,
            total: text.len(),
        };
    }
    let mut chars = text.char_indices().map(|(i, _)| i);
    let start = chars.nth(offset);
    let (text_part, end) = match start {
        None => (String::new(), offset),
        Some(start) => {
            let stop = if limit == 0 {
                Some(start)
            } else {
                chars.nth(limit - 1)
            };
            let stop = stop.unwrap_or(text.len());
            let read = text[start..stop].chars().count();
            (text[start..stop].to_string(), offset + read)
        }
    };
    let total = text.chars().count();
    Range {
        text: text_part,
        offset: offset.min(total),
        end: end.min(total),
        total,
    }
}
