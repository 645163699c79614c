//! The README and the book (`docs/src`) stay true.
//!
//! Every fenced code block carries one marker after its language, separated by
//! a space (```` ```sh ci ````, ```` ```jsonc parse ````, ```` ```sh show ````);
//! mdBook and GitHub take the first word as the language and ignore the rest.
//! - `ci`: each line runs with the `mcpw` just built first on `PATH`, in the
//!   repository root, with a `HOME` of its own and a deadline; it must exit 0.
//! - `parse`: JSON with comments parses as the config files do, and every
//!   config it makes (a fragment such as `"serve": {…}` or `"name": {…}` is
//!   read as part of one) loads with no error; TOML parses; shell passes
//!   `bash -n`.
//! - `show`: nothing runs but each line that starts with `mcpw`, with `--help`
//!   added, so its subcommands and options must exist.
//!
//! Inline `mcpw …` commands must name real subcommands too; relative links
//! resolve (anchors to headings, by GitHub's and mdBook's slugs); SUMMARY.md
//! lists every chapter. The chapter on the layout documents the markers.

use crate::common::{ConfigDirs, workspace};
use mcpw::config::Severity;
use mcpw_test_support::isolated_mcpw;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MARKERS: [&str; 3] = ["ci", "parse", "show"];

/// Seconds a `ci` line may take: each is meant to be quick.
const DEADLINE_SECS: &str = "60";

/// A fenced code block.
struct Block {
    /// `README.md:12`, for messages.
    at: String,
    /// What follows the opening fence: `sh ci`.
    info: String,
    lang: String,
    /// The markers after the language (exactly one when well marked).
    markers: Vec<String>,
    body: String,
}

/// `README.md` and every Markdown file under `docs/src`.
fn doc_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut files = vec![workspace().join("README.md")];
    walk(&workspace().join("docs/src"), &mut files);
    files.sort();
    files
}

fn shown(file: &Path) -> String {
    file.strip_prefix(workspace())
        .unwrap_or(file)
        .display()
        .to_string()
}

/// The fenced blocks of `text`, and the text with their lines blanked (so
/// line numbers and prose stay where they were).
fn split_fences(file: &Path, text: &str) -> (Vec<Block>, String) {
    let mut blocks = Vec::new();
    let mut prose = String::new();
    // (indent, fence, first line, info) of the block being read.
    let mut open: Option<(usize, String, usize, String)> = None;
    let mut body = String::new();
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let mark = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
        let run = mark.map_or(0, |c| trimmed.len() - trimmed.trim_start_matches(c).len());
        match &open {
            // A backtick fence's info has no backtick: ```` ```sh ```` is inline code.
            None if run >= 3 && !(mark == Some('`') && trimmed[run..].contains('`')) => {
                let info = trimmed[run..].trim().to_string();
                open = Some((indent, trimmed[..run].to_string(), n + 1, info));
                body.clear();
            }
            None => prose.push_str(line),
            Some((_, fence, ..)) if trimmed.trim_end() == fence => {
                let (_, _, first, info) = open.take().unwrap();
                let mut words = info.split_whitespace().map(String::from);
                blocks.push(Block {
                    at: format!("{}:{first}", shown(file)),
                    lang: words.next().unwrap_or_default(),
                    markers: words.collect(),
                    info,
                    body: std::mem::take(&mut body),
                });
            }
            Some((indent, ..)) => {
                // Blocks inside list items are indented with the item.
                let cut = line.len() - line.trim_start().len();
                body.push_str(&line[cut.min(*indent)..]);
                body.push('\n');
            }
        }
        prose.push('\n');
    }
    assert!(
        open.is_none(),
        "{}: a code block is never closed",
        shown(file)
    );
    (blocks, prose)
}

/// Every block of the README and the book, and each file's prose.
fn read_docs() -> (Vec<Block>, Vec<(PathBuf, String)>) {
    let mut blocks = Vec::new();
    let mut prose = Vec::new();
    for file in doc_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let (b, p) = split_fences(&file, &text);
        blocks.extend(b);
        prose.push((file, p));
    }
    (blocks, prose)
}

/// The one marker of a block, or why not.
fn marker(block: &Block) -> Result<&str, String> {
    match block.markers.as_slice() {
        [m] if MARKERS.contains(&m.as_str()) => Ok(m),
        _ => Err(format!(
            "{}: ```{} carries no single marker: add one of {MARKERS:?} after the language",
            block.at, block.info
        )),
    }
}

/// A block's lines as a shell reads them: continuations joined, comments and
/// blank lines left out.
fn shell_lines(body: &str) -> Vec<String> {
    body.replace("\\\n", " ")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect()
}

/// The config file a JSON snippet makes, if it is one: a whole config, its
/// top-level fields, or server definitions (`"name": {"command": …}`). The
/// text keeps its comments, as a config file may.
fn as_config(text: &str) -> Result<(Value, Option<String>), String> {
    let path = Path::new("snippet.json");
    let parsed = mcpw::config::parse_json(text, path);
    let (value, file) = match parsed {
        Ok(v) => (v, text.to_string()),
        Err(whole) => {
            let wrapped = format!("{{\n{text}\n}}");
            let value = mcpw::config::parse_json(&wrapped, path).map_err(|_| whole.detail())?;
            (value, wrapped)
        }
    };
    let Some(object) = value.as_object() else {
        return Ok((value, None));
    };
    let config_keys = ["mcpServers", "settings", "serve", "imports"];
    if object.keys().any(|k| config_keys.contains(&k.as_str())) {
        return Ok((value, Some(file)));
    }
    let server = |v: &Value| {
        ["command", "url", "component"]
            .iter()
            .any(|k| v.get(k).is_some())
    };
    if !object.is_empty() && object.values().all(server) {
        let file = format!("{{\"mcpServers\": {file}\n}}");
        return Ok((value, Some(file)));
    }
    Ok((value, None))
}

/// What a snippet expects of the reader's machine: the variables it names
/// (`${VAR}`, `tokenEnv`) and the guests it loads by a relative path.
fn expected(value: &Value, vars: &mut Vec<String>, files: &mut Vec<String>) {
    match value {
        Value::String(s) => {
            for part in s.split("${").skip(1) {
                let name = part.split(['}', ':']).next().unwrap_or("");
                vars.push(name.to_string());
            }
            if s.ends_with(".wasm") && !s.starts_with('/') && !s.contains("://") {
                files.push(s.clone());
            }
        }
        Value::Object(map) => {
            for (key, v) in map {
                if let (true, Some(name)) = (key.ends_with("Env"), v.as_str()) {
                    vars.push(name.to_string());
                }
                expected(v, vars, files);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| expected(v, vars, files)),
        _ => {}
    }
}

/// Loads `file` as the user's config with mcpw's own loader, on a machine
/// that has what it expects: its errors.
fn config_errors(value: &Value, file: &str) -> Vec<String> {
    let mut dirs = ConfigDirs::new();
    let written = dirs.user(file);
    let (mut vars, mut files) = (Vec::new(), Vec::new());
    expected(value, &mut vars, &mut files);
    for rel in files {
        let path = written.parent().unwrap().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"").unwrap();
    }
    let home = dirs.home().display().to_string();
    let set = vars.into_iter().map(|v| (v, "set".to_string()));
    let hub = ("HF_ENDPOINT".into(), mcpw_test_support::OFFLINE_HUB.into());
    dirs.env = mcpw::paths::Environment::from_pairs(set.chain([("HOME".into(), home), hub]));
    let config = dirs.load();
    config
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.to_string())
        .collect()
}

/// Checks a `parse` block; the problems found.
fn check_parse(block: &Block) -> Vec<String> {
    let at = &block.at;
    match block.lang.as_str() {
        "json" | "jsonc" => match as_config(&block.body) {
            Err(e) => vec![format!("{at}: does not parse: {e}")],
            Ok((_, None)) => vec![],
            Ok((value, Some(file))) => config_errors(&value, &file)
                .into_iter()
                .map(|e| format!("{at}: mcpw's config loader says {e}"))
                .collect(),
        },
        "toml" => match toml::from_str::<toml::Table>(&block.body) {
            Ok(_) => vec![],
            Err(e) => vec![format!("{at}: does not parse as TOML: {e}")],
        },
        "sh" | "bash" | "shell" => bash_syntax(block).into_iter().collect(),
        other => vec![format!("{at}: no parser for `{other}`: mark it `show`")],
    }
}

/// `bash -n` on a shell block.
fn bash_syntax(block: &Block) -> Option<String> {
    let out = Command::new("bash")
        .args(["-n", "-c", &block.body])
        .output()
        .unwrap();
    (!out.status.success()).then(|| format!("{}: bash -n: {}", block.at, stderr(&out)))
}

fn stderr(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = text.lines().rev().take(8).collect();
    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
}

/// `mcpw` as the docs name it: the binary under test, in a home of the
/// test's own, with nothing of the developer's config or shared state.
fn shell(home: &Path) -> Command {
    let bin = Path::new(env!("CARGO_BIN_EXE_mcpw"));
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![bin.parent().unwrap().to_path_buf()];
    dirs.extend(std::env::split_paths(&path));
    let mut cmd = isolated_mcpw("timeout", home);
    cmd.args(["-k", "5", DEADLINE_SECS, "bash", "-c"])
        .current_dir(workspace())
        .env("PATH", std::env::join_paths(dirs).unwrap())
        .env("MCPW_BIN", bin);
    for name in ["MCPW_SHARED_STATE", "MCPW_SHARED_STATE_KEY", "MCPW_IMPORT"] {
        cmd.env_remove(name);
    }
    cmd
}

/// Runs each line of a `ci` block; the problems found.
fn run_ci(block: &Block) -> Vec<String> {
    if !["sh", "bash", "shell"].contains(&block.lang.as_str()) {
        return vec![format!("{}: only shell blocks can be `ci`", block.at)];
    }
    let home = tempfile::tempdir().unwrap();
    let mut problems = Vec::new();
    for line in shell_lines(&block.body) {
        let out = shell(home.path()).arg(&line).output().unwrap();
        if !out.status.success() {
            let why = stderr(&out);
            problems.push(format!(
                "{}: `{line}` failed ({}):\n{why}",
                block.at, out.status
            ));
        }
    }
    problems
}

/// The first command word of a shell line, past `VAR=value` assignments.
fn command_word(line: &str) -> Option<&str> {
    line.split_whitespace().find(|w| {
        let name = w.split('=').next().unwrap();
        !(w.contains('=')
            && !name.is_empty()
            && name.chars().all(|c| c.is_alphanumeric() || c == '_'))
    })
}

/// Each `mcpw …` line of a `show` block, with `--help` added, must parse.
fn check_show(block: &Block) -> Vec<String> {
    if !["sh", "bash", "shell"].contains(&block.lang.as_str()) {
        return vec![];
    }
    let mut problems: Vec<String> = bash_syntax(block).into_iter().collect();
    let home = tempfile::tempdir().unwrap();
    // A function, so that bash still reads the quotes, assignments and comments.
    let help = "mcpw() { \"$MCPW_BIN\" \"$@\" --help >/dev/null; }\n";
    for line in shell_lines(&block.body) {
        if command_word(&line) != Some("mcpw") {
            continue;
        }
        let out = shell(home.path())
            .arg(format!("{help}{line}"))
            .output()
            .unwrap();
        if !out.status.success() {
            let why = stderr(&out);
            problems.push(format!("{}: `{line} --help` fails:\n{why}", block.at));
        }
    }
    problems
}

/// Every block carries one marker, and what it says of the block holds.
#[test]
fn every_block_is_marked_and_holds() {
    let (blocks, _) = read_docs();
    let mut problems = Vec::new();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for block in &blocks {
        let found = match marker(block) {
            Err(e) => vec![e],
            Ok(m) => {
                *counts.entry(m).or_default() += 1;
                match m {
                    "ci" => run_ci(block),
                    "parse" => check_parse(block),
                    _ => check_show(block),
                }
            }
        };
        problems.extend(found);
    }
    eprintln!("docs: {} blocks, {counts:?}", blocks.len());
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
    // Each kind of check ran at least once: the fences were read.
    assert!(
        counts.len() == MARKERS.len(),
        "every marker in use: {counts:?}"
    );
}

/// The byte ranges of the inline code spans of `prose` (fences already
/// blanked), backticks included; a span does not cross a blank line.
fn code_ranges(prose: &str) -> Vec<std::ops::Range<usize>> {
    let bytes = prose.as_bytes();
    let run_at = |i: usize| bytes[i..].iter().take_while(|&&b| b == b'`').count();
    let mut ranges = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let run = run_at(i);
        let mut j = i + run;
        let close = loop {
            match bytes.get(j) {
                None => break None,
                Some(b'`') if run_at(j) == run => break Some(j),
                Some(b'`') => j += run_at(j),
                Some(_) => j += 1,
            }
        };
        match close {
            Some(j) if !prose[i..j].contains("\n\n") => {
                ranges.push(i..j + run);
                i = j + run;
            }
            _ => i += run,
        }
    }
    ranges
}

/// Inline code spans of `prose`, with their line.
fn code_spans(prose: &str) -> Vec<(usize, String)> {
    code_ranges(prose)
        .into_iter()
        .map(|r| {
            let line = prose[..r.start].matches('\n').count() + 1;
            let span = prose[r].trim_matches('`').replace('\n', " ");
            (line, span.trim().to_string())
        })
        .collect()
}

/// The subcommand words an inline `mcpw …` names (`["auth", "login"]`), past
/// the global options; placeholders and arguments end them.
fn subcommand(span: &str) -> Vec<&str> {
    let mut words = span.split_whitespace().skip(1);
    let mut path = Vec::new();
    while let Some(w) = words.next() {
        if ["--config", "--import", "--shared-state"].contains(&w) {
            words.next();
        } else if w.starts_with('-') {
            if !path.is_empty() {
                break;
            }
        } else if path.len() < 2 && w.chars().all(|c| c.is_ascii_lowercase() || c == '-') {
            path.push(w);
        } else {
            break;
        }
    }
    path
}

/// Inline commands (`mcpw auth login SERVER`) name subcommands that exist.
#[test]
fn inline_commands_name_real_subcommands() {
    let (_, prose) = read_docs();
    let mut known: HashMap<Vec<String>, bool> = HashMap::new();
    let mut problems = Vec::new();
    for (file, text) in &prose {
        for (line, span) in code_spans(text) {
            if !span.starts_with("mcpw ") {
                continue;
            }
            let path: Vec<String> = subcommand(&span).into_iter().map(String::from).collect();
            if path.is_empty() {
                continue;
            }
            let ok = *known.entry(path.clone()).or_insert_with(|| {
                let out = Command::new(env!("CARGO_BIN_EXE_mcpw"))
                    .args(&path)
                    .arg("--help")
                    .output()
                    .unwrap();
                out.status.success()
            });
            if !ok {
                let at = shown(file);
                problems.push(format!(
                    "{at}:{line}: `{span}`: no `mcpw {}`",
                    path.join(" ")
                ));
            }
        }
    }
    eprintln!("docs: {} inline subcommands checked", known.len());
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// A heading's anchor, as GitHub and mdBook make it: lowercase, spaces to
/// `-`, punctuation other than `-` and `_` dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Every anchor a Markdown file's headings make (repeats get `-1`, `-2`).
fn anchors(file: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let (_, prose) = split_fences(file, &text);
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeSet::new();
    for line in prose.lines().filter(|l| l.starts_with('#')) {
        let base = slug(line.trim_start_matches('#'));
        let n = seen.entry(base.clone()).or_default();
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// The targets of the Markdown links and images of `prose`, with their line
/// (inline code left out: a `](` there is not a link).
fn links(prose: &str) -> Vec<(usize, String)> {
    let mut text = prose.to_string();
    for r in code_ranges(prose) {
        // Same length in bytes, so the ranges after it still hold.
        let blank: String = prose[r.clone()]
            .chars()
            .map(|c| {
                if c == '\n' {
                    "\n".into()
                } else {
                    " ".repeat(c.len_utf8())
                }
            })
            .collect();
        text.replace_range(r, &blank);
    }
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let tail = &rest[i + 2..];
            let end = tail.find(')').unwrap_or(tail.len());
            out.push((n + 1, tail[..end].to_string()));
            rest = &tail[end..];
        }
    }
    out
}

/// Where a relative link of `file` leads, or why it leads nowhere.
fn check_link(file: &Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
    let to = if path.is_empty() {
        file.to_path_buf()
    } else {
        file.parent().unwrap().join(path)
    };
    if !to.exists() {
        return Some(format!("`{target}`: no such file"));
    }
    let is_md = to.extension().is_some_and(|e| e == "md");
    let found = anchor.is_empty() || (is_md && anchors(&to).contains(anchor));
    if !found {
        return Some(format!("`{target}`: no heading makes `#{anchor}`"));
    }
    None
}

/// SUMMARY.md lists every chapter of `docs/src`, and only them.
fn summary_problems() -> Vec<String> {
    let src = workspace().join("docs/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    let listed: BTreeSet<PathBuf> = links(&summary)
        .into_iter()
        .map(|(_, t)| src.join(t))
        .collect();
    let chapters: BTreeSet<PathBuf> = doc_files()
        .into_iter()
        .filter(|f| f.starts_with(&src) && !f.ends_with("SUMMARY.md"))
        .collect();
    let missing = chapters
        .difference(&listed)
        .map(|f| format!("{}: not in SUMMARY.md", shown(f)));
    let extra = listed
        .difference(&chapters)
        .map(|f| format!("SUMMARY.md lists {}, no chapter", shown(f)));
    missing.chain(extra).collect()
}

/// Every relative link resolves; SUMMARY.md lists every chapter, and only them.
#[test]
fn links_resolve_and_the_summary_lists_every_chapter() {
    let (_, prose) = read_docs();
    let mut problems = Vec::new();
    let mut count = 0;
    for (file, text) in &prose {
        for (line, target) in links(text) {
            count += 1;
            if let Some(why) = check_link(file, &target) {
                problems.push(format!("{}:{line}: {why}", shown(file)));
            }
        }
    }
    eprintln!("docs: {count} links checked");
    problems.extend(summary_problems());
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
    let book = std::fs::read_to_string(workspace().join("docs/book.toml")).unwrap();
    let book: toml::Table = toml::from_str(&book).unwrap();
    assert_eq!(
        book["book"].get("src").and_then(|s| s.as_str()),
        Some("src")
    );
}
