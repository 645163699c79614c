//! Text put before the user for approval, with every character that hides
//! or changes what they see written out (`\u{200b}`): control characters
//! and escape sequences (which can erase a line and print another),
//! zero-width and bidirectional marks (which reorder or join what is
//! read), Unicode tag characters (an instruction spelled invisibly, still
//! read by models) and other characters a terminal shows as nothing. What
//! the user approves is then what they saw.

/// Whether `c` hides or changes what is shown of the text around it.
pub fn hides(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{00AD}'                      // soft hyphen
            | '\u{034F}'                    // combining grapheme joiner
            | '\u{061C}'                    // Arabic letter mark
            | '\u{115F}' | '\u{1160}'       // Hangul fillers
            | '\u{17B4}' | '\u{17B5}'       // Khmer inherent vowels
            | '\u{180B}'..='\u{180F}'       // Mongolian selectors and vowel separator
            | '\u{200B}'..='\u{200F}'       // zero-width space, joiners, marks
            | '\u{2028}'..='\u{202E}'       // separators, bidirectional embeddings
            | '\u{2060}'..='\u{206F}'       // word joiner, invisible operators, isolates
            | '\u{3164}'                    // Hangul filler
            | '\u{FE00}'..='\u{FE0F}'       // variation selectors
            | '\u{FEFF}'                    // zero-width no-break space
            | '\u{FFA0}'                    // halfwidth Hangul filler
            | '\u{FFF9}'..='\u{FFFB}'       // interlinear annotation
            | '\u{1D173}'..='\u{1D17A}'     // musical formatting
            | '\u{E0000}'..='\u{E0FFF}'     // tags, variation selectors supplement
        )
}

/// Whether `text` carries any character [`hides`] finds.
fn carries_hidden(text: &str) -> bool {
    text.chars().any(hides)
}

/// `text` with each character that [`hides`] written as `\u{…}`, and a
/// backslash before `\u{` already there, so that no text can pass for an
/// escape.
pub fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if hides(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else if rest.starts_with("\\u{") {
            out.push('\\');
            out.push(c);
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// `text` as shown for approval: [`escaped`], and followed by a warning
/// when it carries hidden characters.
pub fn shown(text: &str) -> String {
    if carries_hidden(text) {
        format!(
            "{} [warning: carries hidden or control characters, shown as \\u{{…}}]",
            escaped(text)
        )
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_hides_is_written_out_and_said() {
        let erase = "npx safe\u{1b}[2K\r";
        assert_eq!(escaped(erase), "npx safe\\u{1b}[2K\\u{d}");
        let tagged = "Reads a file.\u{E0049}\u{E0067}";
        assert!(carries_hidden(tagged));
        assert_eq!(escaped(tagged), "Reads a file.\\u{e0049}\\u{e0067}");
        assert!(shown(tagged).contains("carries hidden or control characters"));
        for c in [
            '\u{200b}', '\u{202e}', '\u{2066}', '\u{feff}', '\u{7f}', '\u{9b}',
        ] {
            assert!(hides(c), "{c:?}");
        }
        // Two texts that print alike are shown apart.
        assert_ne!(escaped("a\u{200b}b"), escaped("ab"));
    }

    #[test]
    fn plain_text_stays_as_it_is_and_cannot_pass_for_an_escape() {
        for plain in ["Reads a file.", "héllo wörld", "名前", "emoji 🙂", "a\\b"] {
            assert!(!carries_hidden(plain), "{plain}");
            assert_eq!(shown(plain), plain);
        }
        assert_eq!(escaped("\\u{200b}"), "\\\\u{200b}");
        assert_ne!(escaped("\\u{200b}"), escaped("\u{200b}"));
    }
}
