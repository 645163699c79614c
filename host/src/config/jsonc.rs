//! JSON with comments: `//` and `/* */` comments and trailing commas are blanked
//! out in place, so serde_json's line and column numbers still point at the
//! user's text.

/// Returns `text` with comments, trailing commas and a leading BOM replaced by spaces.
pub fn strip(text: &str) -> String {
    let text = text
        .strip_prefix('\u{feff}')
        .map(|t| format!(" {t}"))
        .unwrap_or_else(|| text.to_string());
    let mut out: Vec<char> = text.chars().collect();
    let n = out.len();
    let mut i = 0;
    let mut in_string = false;
    while i < n {
        let c = out[i];
        if in_string {
            match c {
                '\\' => i += 1,
                '"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match (c, out.get(i + 1).copied()) {
            ('"', _) => in_string = true,
            ('/', Some('/')) => {
                while i < n && out[i] != '\n' {
                    out[i] = ' ';
                    i += 1;
                }
                continue;
            }
            ('/', Some('*')) => {
                let mut j = i;
                while j < n && !(out[j] == '*' && out.get(j + 1) == Some(&'/') && j > i + 1) {
                    j += 1;
                }
                let end = (j + 2).min(n);
                for ch in &mut out[i..end] {
                    if *ch != '\n' {
                        *ch = ' ';
                    }
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    blank_trailing_commas(&mut out);
    out.into_iter().collect()
}

/// Blanks a `,` whose next significant character closes an array or object.
/// Runs after comments are gone, so only strings need skipping.
fn blank_trailing_commas(chars: &mut [char]) {
    let mut in_string = false;
    let mut pending_comma: Option<usize> = None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if in_string {
            match c {
                '\\' => i += 1,
                '"' => in_string = false,
                _ => {}
            }
        } else if !c.is_whitespace() {
            if let Some(at) = pending_comma.take()
                && (c == ']' || c == '}')
            {
                chars[at] = ' ';
            }
            match c {
                ',' => pending_comma = Some(i),
                '"' => in_string = true,
                _ => {}
            }
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> serde_json::Value {
        serde_json::from_str(&strip(text)).unwrap()
    }

    #[test]
    fn strips_comments_and_trailing_commas() {
        let v =
            parse("{\n // line\n \"a\": [1, 2,], /* block\n over lines */ \"b\": {\"c\": 1,},\n}");
        assert_eq!(v, serde_json::json!({"a": [1, 2], "b": {"c": 1}}));
    }

    #[test]
    fn leaves_strings_alone() {
        let v = parse(r#"{"url": "http://x//y", "s": "a /* b */ c,]", "q": "\"//\""}"#);
        assert_eq!(v["url"], "http://x//y");
        assert_eq!(v["s"], "a /* b */ c,]");
        assert_eq!(v["q"], "\"//\"");
    }

    #[test]
    fn keeps_line_and_column_of_errors() {
        let text = "{\n  // comment\n  \"a\": 1,\n  \"b\": nope\n}";
        let without = "{\n\n  \"a\": 1,\n  \"b\": nope\n}";
        let err = serde_json::from_str::<serde_json::Value>(&strip(text)).unwrap_err();
        let reference = serde_json::from_str::<serde_json::Value>(without).unwrap_err();
        assert_eq!(
            (err.line(), err.column()),
            (reference.line(), reference.column())
        );
        assert_eq!(err.line(), 4);
    }

    #[test]
    fn strips_bom_and_handles_unterminated_block_comment() {
        assert_eq!(parse("\u{feff}{\"a\": 1}"), serde_json::json!({"a": 1}));
        assert!(serde_json::from_str::<serde_json::Value>(&strip("{\"a\": 1 /* open")).is_err());
    }
}
