//! Enough of Rust's lexical grammar for the workspace's own checks: comments,
//! strings and character literals blanked (so that braces, `fn` and paths
//! are only code's), and `#[cfg(test)]` items cut out by brace matching.

/// `text` with comments, strings and character literals blanked (their
/// line breaks kept), so that braces and `fn` are only code's. Each blanked
/// character keeps its byte length, so offsets into the result are offsets
/// into `text` (an attribute's string can be read back from it).
pub(crate) fn blanked(text: &str) -> String {
    blank(text, true)
}

/// `text` with only its comments blanked: strings stay, since a name in one
/// can be a use (`#[serde(default = "name")]`, `format!("{NAME}")`).
pub(crate) fn uncommented(text: &str) -> String {
    blank(text, false)
}

fn blank(text: &str, literals: bool) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let (end, comment) = token(&chars[i..]);
        if end == 0 || !(comment || literals) {
            out.extend(&chars[i..i + end.max(1)]);
            i += end.max(1);
            continue;
        }
        for &c in &chars[i..i + end] {
            match c {
                '\n' => out.push('\n'),
                _ => out.extend(std::iter::repeat_n(' ', c.len_utf8())),
            }
        }
        i += end;
    }
    out
}

/// The length of the comment or literal at the start of `rest` (0 for
/// anything else), and whether it is a comment.
fn token(rest: &[char]) -> (usize, bool) {
    let next = |n: usize| rest.get(n).copied();
    if rest.starts_with(&['/', '/']) {
        let end = rest.iter().position(|&c| c == '\n').unwrap_or(rest.len());
        (end, true)
    } else if rest.starts_with(&['/', '*']) {
        (block_comment(rest), true)
    } else if next(0) == Some('"') || (next(0) == Some('b') && next(1) == Some('"')) {
        let open = usize::from(next(0) == Some('b')) + 1;
        (open + string_end(&rest[open..]), false)
    } else if let Some(len) = raw_string(rest) {
        (len, false)
    } else if next(0) == Some('\'') {
        (char_literal(rest).unwrap_or(0), false)
    } else {
        (0, false)
    }
}

/// The length of a (nested) block comment at the start of `s`.
fn block_comment(s: &[char]) -> usize {
    let (mut depth, mut i) = (0, 0);
    while i < s.len() {
        if s[i..].starts_with(&['/', '*']) {
            depth += 1;
            i += 2;
        } else if s[i..].starts_with(&['*', '/']) {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    s.len()
}

/// The length of a string's rest, its closing quote included (`s` starts
/// after the opening one).
fn string_end(s: &[char]) -> usize {
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    s.len()
}

/// The length of a raw string (`r"…"`, `r#"…"#`, `br#"…"#`) at the start of `s`.
fn raw_string(s: &[char]) -> Option<usize> {
    let start = match s {
        ['r', ..] => 1,
        ['b', 'r', ..] => 2,
        _ => return None,
    };
    let hashes = s[start..].iter().take_while(|&&c| c == '#').count();
    if s.get(start + hashes) != Some(&'"') {
        return None;
    }
    let body = start + hashes + 1;
    let close: Vec<char> = std::iter::once('"')
        .chain(std::iter::repeat_n('#', hashes))
        .collect();
    let at = (body..s.len()).find(|&i| s[i..].starts_with(&close))?;
    Some(at + close.len())
}

/// The length of a character literal at the start of `s` (`'x'`, `'\n'`,
/// `'\u{1F600}'`); `None` for a lifetime or label.
fn char_literal(s: &[char]) -> Option<usize> {
    match s.get(1)? {
        '\\' => s[2..].iter().position(|&c| c == '\'').map(|p| p + 3),
        _ if s.get(2) == Some(&'\'') => Some(3),
        _ => None,
    }
}

/// The code outside `#[cfg(test)]` items.
pub(crate) fn without_tests(code: &str) -> String {
    let mut out = code.to_string();
    while let Some(at) = out.find("#[cfg(test)]") {
        let after = at + "#[cfg(test)]".len();
        let item_end = match (out[after..].find('{'), out[after..].find(';')) {
            (Some(b), Some(s)) if s < b => after + s + 1,
            (Some(b), _) => matching(&out, after + b).map_or(out.len(), |e| e + 1),
            (None, Some(s)) => after + s + 1,
            (None, None) => out.len(),
        };
        // Blanked, not removed: line numbers and offsets stay the file's.
        let blank: String = out[at..item_end]
            .chars()
            .map(|c| {
                if c == '\n' {
                    "\n".into()
                } else {
                    " ".repeat(c.len_utf8())
                }
            })
            .collect();
        out.replace_range(at..item_end, &blank);
    }
    out
}

/// The index of the brace closing the one at `open`.
pub(crate) fn matching(code: &str, open: usize) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in code[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}
