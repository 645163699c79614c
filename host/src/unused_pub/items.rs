//! What the check reads of a file's code (comments and literals blanked):
//! its words, the `pub` items it declares, the types its `pub` items show
//! (their interfaces), and the words that are no use of a name.

use std::ops::Range;

/// The kinds of item the check covers.
const KINDS: [&str; 7] = ["fn", "struct", "enum", "trait", "type", "const", "static"];

/// A word or punctuation character, with its offset.
pub(super) type Token<'a> = (usize, &'a str);

/// A `pub` item a file declares.
pub(super) struct Declaration {
    /// The offset of its `pub`.
    pub(super) offset: usize,
    pub(super) kind: &'static str,
    pub(super) name: String,
}

/// The words and punctuation of `code`, with their offsets.
pub(super) fn tokens(code: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut chars = code.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        let mut end = start + c.len_utf8();
        if is_word(c) {
            while let Some(&(i, d)) = chars.peek().filter(|(_, d)| is_word(*d)) {
                end = i + d.len_utf8();
                chars.next();
            }
        } else if c.is_whitespace() {
            continue;
        }
        out.push((start, &code[start..end]));
    }
    out
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A name an item can have (not `_`, not a number, not `$name` in a macro).
pub(super) fn is_name(word: &str) -> bool {
    word != "_" && word.starts_with(|c: char| c.is_alphabetic() || c == '_')
}

/// The `pub` at `at`, read as far as its item's name: the name's index and
/// the item's kind, if it is an item the check covers. An `extern` fn is
/// not: it is called from outside Rust.
fn item(tokens: &[Token], at: usize) -> Option<(usize, &'static str)> {
    let word = |i: usize| tokens.get(i).map_or("", |t| t.1);
    let mut i = past_visibility(tokens, at);
    let mut external = false;
    loop {
        match word(i) {
            "async" | "unsafe" | "safe" => i += 1,
            "extern" => (external, i) = (true, i + 1),
            "const" if matches!(word(i + 1), "fn" | "async" | "unsafe" | "extern") => i += 1,
            _ => break,
        }
    }
    let kind = *KINDS.iter().find(|k| **k == word(i))?;
    i += 1;
    if kind == "static" && word(i) == "mut" {
        i += 1;
    }
    (is_name(word(i)) && !(external && kind == "fn")).then_some((i, kind))
}

/// The index past a `pub` at `at` and its `(crate)`, `(super)`, `(in …)`.
fn past_visibility(tokens: &[Token], at: usize) -> usize {
    let mut i = at + 1;
    if tokens.get(i).is_some_and(|t| t.1 == "(") {
        while tokens.get(i).is_some_and(|t| t.1 != ")") {
            i += 1;
        }
        i += 1;
    }
    i
}

/// The `pub` items `code` declares.
pub(super) fn declarations(code: &str) -> Vec<Declaration> {
    let tokens = tokens(code);
    let mut found = Vec::new();
    for (at, &(offset, word)) in tokens.iter().enumerate() {
        if let ("pub", Some((name, kind))) = (word, item(&tokens, at)) {
            let name = tokens[name].1.to_string();
            found.push(Declaration { offset, kind, name });
        }
    }
    found
}

/// What the `pub` items and fields of `code` show to whoever may use them:
/// a fn's signature, a struct's generics and tuple fields, an enum's and a
/// trait's body, an alias's type, a const's or static's type, a `pub`
/// field's type (each past its own name). A type named there must be as
/// visible as the item, whoever else uses it. So must one named by a trait
/// impl (its header, its associated types, its fns' signatures), and by
/// any type alias, which a signature may show in its stead.
pub(super) fn interfaces(code: &str) -> Vec<Range<usize>> {
    let tokens = tokens(code);
    let mut found = Vec::new();
    for (at, &(_, word)) in tokens.iter().enumerate() {
        let shown = match word {
            "pub" => shown_by_pub(&tokens, at),
            "type" if item_start(&tokens[..at]) => Some((at + 2, &[";"][..])),
            "impl" if item_start(&tokens[..at]) => {
                found.extend(trait_impl(code, &tokens, at));
                None
            }
            _ => None,
        };
        let Some((from, stops)) = shown else {
            continue;
        };
        let Some(&(start, _)) = tokens.get(from) else {
            continue;
        };
        let end = match stops {
            [] => body_end(code, &tokens[from..]),
            stops => top_level(&tokens[from..], stops),
        };
        found.push(start..end.unwrap_or(code.len()));
    }
    found
}

/// What the `pub` at `at` shows: the index it starts at, and the tokens
/// that end it (none: the end of its body).
fn shown_by_pub(tokens: &[Token], at: usize) -> Option<(usize, &'static [&'static str])> {
    let word = |i: usize| tokens.get(i).map_or("", |t| t.1);
    Some(match item(tokens, at) {
        Some((name, "enum" | "trait")) => (name + 1, &[]),
        Some((name, "fn" | "struct")) => (name + 1, &["{", ";"]),
        Some((name, "type")) => (name + 1, &[";"]),
        Some((name, _)) => (name + 1, &["=", ";"]),
        None => {
            let field = past_visibility(tokens, at);
            if !(is_name(word(field)) && word(field + 1) == ":" && word(field + 2) != ":") {
                return None;
            }
            (field + 2, &[",", "}", ")"])
        }
    })
}

/// What the `impl` at `at` shows if it implements a trait: the generics
/// and the trait's arguments in its header (not the trait, nor the type it
/// is for), and its fns' signatures (its associated types are aliases).
fn trait_impl(code: &str, tokens: &[Token], at: usize) -> Vec<Range<usize>> {
    let Some(open) = (at..tokens.len()).find(|&i| tokens[i].1 == "{") else {
        return Vec::new();
    };
    let Some(header) = (at..open).find(|&i| tokens[i].1 == "for") else {
        return Vec::new();
    };
    let close = crate::workspace_code::lexing::matching(code, tokens[open].0);
    let close = close.unwrap_or(code.len());
    let mut found = Vec::new();
    let mut depth = 0i32;
    for i in at + 1..header {
        let (offset, word) = tokens[i];
        match word {
            "<" => depth += 1,
            ">" if tokens[i - 1].1 != "-" => depth -= 1,
            _ if depth > 0 => found.push(offset..offset + word.len()),
            _ => {}
        }
    }
    for i in open + 1..tokens.len() {
        if tokens[i].0 >= close {
            break;
        }
        if tokens[i].1 == "fn"
            && let Some(end) = top_level(&tokens[i + 1..], &["{", ";"])
        {
            found.push(tokens[i].0..end);
        }
    }
    found
}

/// The offset of the first of `stops` outside brackets in `tokens`.
fn top_level(tokens: &[Token], stops: &[&str]) -> Option<usize> {
    let mut depth = 0i32;
    for (i, &(offset, word)) in tokens.iter().enumerate() {
        let arrow = word == ">" && i > 0 && tokens[i - 1].1 == "-";
        match word {
            _ if depth == 0 && stops.contains(&word) => return Some(offset),
            "(" | "[" | "<" => depth += 1,
            ")" | "]" => depth -= 1,
            ">" if !arrow => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The offset of the brace that closes the body `tokens` lead to (or of
/// the `;` that ends an item without one).
fn body_end(code: &str, tokens: &[Token]) -> Option<usize> {
    let &(open, word) = tokens.iter().find(|t| t.1 == "{" || t.1 == ";")?;
    match word {
        ";" => Some(open),
        _ => crate::workspace_code::lexing::matching(code, open),
    }
}

/// The words of the intra-doc links in `text`'s doc comments (`[`Name`]`,
/// `[text](path::Name)`), with their offsets: a link is a use, and what
/// public docs link to must stay as visible as they are.
pub(super) fn doc_links(text: &str) -> Vec<Token<'_>> {
    let mut found = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with("///") || trimmed.starts_with("//!") {
            let at = offset + line.len() - trimmed.len();
            for (start, end) in link_spans(trimmed) {
                let words = tokens(&trimmed[start..end]).into_iter();
                found.extend(words.map(|(i, w)| (at + start + i, w)));
            }
        }
        offset += line.len();
    }
    found
}

/// The spans of a doc line that name a link's target: inside ``[`…`]``,
/// inside the `(…)` after a `]`, and inside a `[…]` that holds a path.
fn link_spans(line: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    for (open, close) in [("[`", "`]"), ("](", ")"), ("[", "]")] {
        let mut from = 0;
        while let Some(start) = line[from..].find(open).map(|i| from + i + open.len()) {
            let Some(end) = line[start..].find(close).map(|i| start + i) else {
                break;
            };
            let path = |c: char| is_word(c) || c == ':';
            if open != "[" || (is_name(&line[start..end]) && line[start..end].chars().all(path)) {
                spans.push((start, end));
            }
            from = end;
        }
    }
    spans
}

/// The bodies of the inline modules of `code` (`mod name { … }`): an item
/// in one is used beyond its module when the rest of its file uses it.
pub(super) fn inline_modules(code: &str) -> Vec<Range<usize>> {
    let tokens = tokens(code);
    let word = |i: usize| tokens.get(i).map_or("", |t| t.1);
    let mut found = Vec::new();
    for (at, &(_, mod_word)) in tokens.iter().enumerate() {
        if mod_word == "mod" && is_name(word(at + 1)) && word(at + 2) == "{" {
            let open = tokens[at + 2].0;
            let close = crate::workspace_code::lexing::matching(code, open);
            found.push(open..close.unwrap_or(code.len()));
        }
    }
    found
}

/// The byte ranges of `code` that are no use of a name: each `pub use`
/// statement (a re-export), and the self type's name in each `impl` header
/// (implementing for a type does not use it; the trait implemented is used).
pub(super) fn not_uses(code: &str) -> Vec<Range<usize>> {
    let tokens = tokens(code);
    let mut ranges = Vec::new();
    for (at, &(offset, word)) in tokens.iter().enumerate() {
        if word == "pub" {
            let i = past_visibility(&tokens, at);
            if tokens.get(i).is_some_and(|t| t.1 == "use") {
                let end = code[offset..].find(';').map_or(code.len(), |e| offset + e);
                ranges.push(offset..end);
            }
        } else if word == "impl"
            && item_start(&tokens[..at])
            && let Some((start, name)) = self_type(&tokens[at + 1..])
        {
            ranges.push(start..start + name.len());
        }
    }
    ranges
}

/// Whether an item may start after `before` (so an `impl` there is an
/// item's, not an `impl Trait` type's).
fn item_start(before: &[Token]) -> bool {
    matches!(
        before.last().map(|t| t.1),
        None | Some("}" | ";" | "{" | "]" | "unsafe")
    )
}

/// The self type's name in the `impl` header that `tokens` start after:
/// the last word at the top level of `impl<…> Type<…>` or of `impl<…> Trait
/// for Type<…>`, before its `{` or `where`.
fn self_type<'a>(tokens: &[Token<'a>]) -> Option<Token<'a>> {
    let mut depth = 0i32;
    let mut found = None;
    for (i, &(offset, word)) in tokens.iter().enumerate() {
        let arrow = word == ">" && i > 0 && tokens[i - 1].1 == "-";
        match word {
            "<" => depth += 1,
            ">" if !arrow => depth -= 1,
            "{" | ";" | "where" if depth == 0 => return found,
            "for" if depth == 0 => found = None,
            _ if depth == 0 && is_name(word) && !matches!(word, "dyn" | "mut") => {
                found = Some((offset, word));
            }
            _ => {}
        }
    }
    None
}
