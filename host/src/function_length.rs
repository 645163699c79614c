//! No function outside tests is over 80 lines, in any crate of the
//! workspace: a longer one does several things, and reads as none of them.
//! Tests (`tests.rs`, `tests/`, `#[cfg(test)]` modules) are left out.

use std::path::{Path, PathBuf};

/// The longest a function may be, its signature and closing brace included.
const MAX_LINES: usize = 80;

/// The `src` folders of the workspace's crates (its `members`).
pub(crate) fn workspace_sources() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members = manifest
        .split("members = [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .expect("the workspace lists its members");
    members
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(|m| root.join(m).join("src"))
        .filter(|src| src.is_dir())
        .collect()
}

/// Every `.rs` file under `dir`, tests left out.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            if name != "tests" {
                files(&path, out);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" {
            out.push(path);
        }
    }
}

/// `text` with comments, strings and character literals blanked (their
/// line breaks kept), so that braces and `fn` are only code's.
fn blanked(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < chars.len() {
        let rest = &chars[i..];
        let next = |n: usize| rest.get(n).copied();
        let end = if rest.starts_with(&['/', '/']) {
            rest.iter().position(|&c| c == '\n').unwrap_or(rest.len())
        } else if rest.starts_with(&['/', '*']) {
            block_comment(rest)
        } else if next(0) == Some('"') || (next(0) == Some('b') && next(1) == Some('"')) {
            let open = usize::from(next(0) == Some('b')) + 1;
            open + string_end(&rest[open..])
        } else if let Some(len) = raw_string(rest) {
            len
        } else if next(0) == Some('\'') {
            char_literal(rest).unwrap_or(1)
        } else {
            0
        };
        if end == 0 {
            out.push(chars[i]);
            i += 1;
        } else {
            out.extend(rest[..end].iter().map(|&c| blank(c)));
            i += end;
        }
    }
    out
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
fn without_tests(code: &str) -> String {
    let mut out = code.to_string();
    while let Some(at) = out.find("#[cfg(test)]") {
        let after = at + "#[cfg(test)]".len();
        let item_end = match (out[after..].find('{'), out[after..].find(';')) {
            (Some(b), Some(s)) if s < b => after + s + 1,
            (Some(b), _) => matching(&out, after + b).map_or(out.len(), |e| e + 1),
            (None, Some(s)) => after + s + 1,
            (None, None) => out.len(),
        };
        let kept_lines = out[at..item_end].matches('\n').count();
        out.replace_range(at..item_end, &"\n".repeat(kept_lines));
    }
    out
}

/// The index of the brace closing the one at `open`.
fn matching(code: &str, open: usize) -> Option<usize> {
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

/// Where the signature starting at `from` ends: its body's `{` or its `;`.
fn body_or_end(code: &str, from: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in code[from..].char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            '{' | ';' if depth == 0 => return Some(from + i),
            _ => {}
        }
    }
    None
}

/// Each function of `code` with a body: (its name, its first line, its lines).
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(at) = code[from..].find("fn ") {
        let start = from + at;
        from = start + 3;
        let word_start =
            start == 0 || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        if !word_start {
            continue;
        }
        let name: String = code[from..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue;
        }
        // The body's brace, or the `;` of a declaration without one (outside
        // brackets: `[u8; 4]` is a type).
        let Some(open) = body_or_end(code, from) else {
            break;
        };
        if bytes[open] == b';' {
            continue;
        }
        let Some(close) = matching(code, open) else {
            break;
        };
        let first = code[..start].matches('\n').count() + 1;
        let last = code[..close].matches('\n').count() + 1;
        found.push((name, first, last - first + 1));
    }
    found
}

/// The functions over [`MAX_LINES`] in `src`'s files: `file:line name (n lines)`.
fn long_functions(src: &Path) -> Vec<String> {
    let mut all = Vec::new();
    files(src, &mut all);
    all.sort();
    let mut long = Vec::new();
    for file in all {
        let code = without_tests(&blanked(&std::fs::read_to_string(&file).unwrap()));
        for (name, line, lines) in functions(&code) {
            if lines > MAX_LINES {
                long.push(format!("{}:{line} {name} ({lines} lines)", file.display()));
            }
        }
    }
    long
}

#[test]
fn no_function_outside_tests_is_over_80_lines_in_any_crate() {
    let sources = workspace_sources();
    assert!(sources.len() >= 5, "the workspace's crates: {sources:?}");
    let long: Vec<String> = sources.iter().flat_map(|s| long_functions(s)).collect();
    assert!(
        long.is_empty(),
        "functions over {MAX_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_check_measures_functions_and_sees_past_strings_comments_and_tests() {
    let body = "    x();\n".repeat(81);
    let code = format!(
        "// fn commented() {{\nfn short() {{ let s = \"}}\"; let c = '{{'; }}\nfn long<'a>(x: &'a str) {{\n{body}}}\ntrait T {{ fn declared(&self); }}\n#[cfg(test)]\nmod tests {{\n    fn in_tests() {{\n{body}    }}\n}}\n"
    );
    let found = functions(&without_tests(&blanked(&code)));
    let names: Vec<(&str, usize)> = found.iter().map(|(n, _, l)| (n.as_str(), *l)).collect();
    assert_eq!(names, [("short", 1), ("long", 83)]);
    let raw = blanked("let r = r#\"{ \"fn x() {\" }\"#; fn y() -> [u8; 2] { [0; 2] }");
    assert_eq!(functions(&raw), [("y".to_string(), 1, 1)]);
}
