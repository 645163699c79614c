//! No function outside tests is over 80 lines, in any crate of the
//! repository, whatever its target (library, binaries, build scripts,
//! benches, examples, fuzz targets): a longer one does several things, and
//! reads as none of them. Tests (test targets, `tests` modules,
//! `#[cfg(test)]` items) are left out, and only they: a file is read past
//! its test module.

use crate::workspace_code::{self, lexing};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// The longest a function may be, its signature and closing brace included.
const MAX_LINES: usize = 80;

/// The files of the repository that hold code other than tests.
fn files() -> BTreeSet<PathBuf> {
    workspace_code::crates()
        .iter()
        .flat_map(|c| &c.modules)
        .filter(|m| !m.test)
        .map(|m| m.file.clone())
        .collect()
}

/// `text`'s code outside tests, comments and literals blanked.
fn code(text: &str) -> String {
    lexing::without_tests(&lexing::blanked(text))
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
        let Some(close) = lexing::matching(code, open) else {
            break;
        };
        let first = code[..start].matches('\n').count() + 1;
        let last = code[..close].matches('\n').count() + 1;
        found.push((name, first, last - first + 1));
    }
    found
}

/// The functions over [`MAX_LINES`] in `files`: `file:line name (n lines)`.
fn long_functions(files: &BTreeSet<PathBuf>) -> Vec<String> {
    let mut long = Vec::new();
    for file in files {
        for (name, line, lines) in functions(&code(&std::fs::read_to_string(file).unwrap())) {
            if lines > MAX_LINES {
                let file = file.strip_prefix(workspace_code::root()).unwrap_or(file);
                long.push(format!("{}:{line} {name} ({lines} lines)", file.display()));
            }
        }
    }
    long
}

#[test]
fn no_function_outside_tests_is_over_80_lines_in_any_crate() {
    let files = files();
    assert!(files.len() >= 300, "the repository's files: {files:?}");
    let long = long_functions(&files);
    assert!(
        long.is_empty(),
        "functions over {MAX_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_check_measures_functions_and_sees_past_strings_comments_and_tests() {
    let body = "    x();\n".repeat(81);
    let code = code(&format!(
        "// fn commented() {{\nfn short() {{ let s = \"}}\"; let c = '{{'; }}\nfn long<'a>(x: &'a str) {{\n{body}}}\ntrait T {{ fn declared(&self); }}\n#[cfg(test)]\nmod tests {{\n    fn in_tests() {{\n{body}    }}\n}}\nfn after_tests() {{\n{body}}}\n"
    ));
    let found = functions(&code);
    let names: Vec<(&str, usize, usize)> =
        found.iter().map(|(n, f, l)| (n.as_str(), *f, *l)).collect();
    assert_eq!(
        names,
        [("short", 2, 1), ("long", 3, 83), ("after_tests", 173, 83)]
    );
    let raw = lexing::blanked("let r = r#\"{ \"fn x() {\" }\"#; fn y() -> [u8; 2] { [0; 2] }");
    assert_eq!(functions(&raw), [("y".to_string(), 1, 1)]);
}

#[test]
fn the_check_reads_benches_build_scripts_and_fuzz_targets() {
    let files = files();
    for file in [
        "host/benches/calls.rs",
        "host/host/build.rs",
        "host/fuzz/fuzz_targets/config_file.rs",
        "tests/support/src/lib.rs",
        "host/src/cli.rs",
    ] {
        let file = workspace_code::root().join(file).canonicalize().unwrap();
        assert!(files.contains(&file), "{file:?} is not read");
    }
    let test = workspace_code::root()
        .join("tests/e2e/main.rs")
        .canonicalize()
        .unwrap();
    assert!(!files.contains(&test), "a test target is read");
}
