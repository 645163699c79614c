//! Every `pub` item is used where its `pub` is needed: each fn, struct,
//! enum, trait, type alias, const and static declared `pub` (in any form:
//! `pub`, `pub(crate)`, `pub(super)`, `pub(in …)`) outside tests, in any
//! crate of the repository, has its name used in another file, or shown in
//! the interface of another `pub` item or field of its own file (a type a
//! `pub` fn returns must be as visible as the fn). Otherwise nothing uses
//! it (remove it) or only its file does (make it private). rustc's dead-code
//! lint cannot see this for what a library exports: a `pub` item of a
//! public module may be for another crate. Items of tests are left to it:
//! nothing outside a test crate can reach them.
//!
//! A use is the name as a word anywhere but in comments and in these: its
//! declaration, a `pub use` (a re-export is a name, not a use), and the
//! self type of an `impl` header (implementing for a type does not use it;
//! a trait implemented is used). An intra-doc link is a use too, and shows
//! what it links to like a signature does: public docs may not link to a
//! private item. Strings count (`#[serde(default = "name")]`,
//! `format!("{NAME}")`), and so do tests, benches, examples and fuzz
//! targets. Trait methods and their impls carry no `pub`, so a method a
//! trait requires is never flagged. Names are matched, not resolved: of two
//! items with one name, neither is flagged while either is used elsewhere,
//! so the check misses some items rather than flag a used one.
//!
//! Left out: the `mcpw-guest` crate, the API guests are written with
//! (`Entry::search_text` among it), whatever the repository uses of it; and
//! [`KNOWN`], each with its reason, a list that may only shrink (a listed
//! item that is used or gone fails).

mod items;

use crate::workspace_code::{self, lexing};
use items::{
    Declaration, declarations, doc_links, inline_modules, interfaces, is_name, not_uses, tokens,
};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::PathBuf;

/// Items kept `pub` though no other file uses them: (file, name, why).
const KNOWN: &[(&str, &str, &str)] = &[];

/// The crates whose items are kept whatever uses them.
const KEPT_CRATES: [&str; 1] = ["mcpw-guest"];

/// A file of the repository: its path from the root, its text, and whether
/// it holds code outside tests of a crate whose items are checked.
struct Source {
    path: String,
    text: String,
    declares: bool,
}

/// A `pub` item that needs no `pub`.
#[derive(Debug, PartialEq)]
struct Finding {
    file: String,
    line: usize,
    kind: &'static str,
    name: String,
    /// Its own file uses it (else nothing does).
    local: bool,
}

/// The repository's Rust files.
fn sources() -> Vec<Source> {
    let mut files: BTreeMap<PathBuf, bool> = BTreeMap::new();
    for krate in workspace_code::crates() {
        let kept = KEPT_CRATES.contains(&krate.package.as_str());
        for module in &krate.modules {
            *files.entry(module.file.clone()).or_default() |= !module.test && !kept;
        }
    }
    files
        .into_iter()
        .map(|(file, declares)| Source {
            path: file
                .strip_prefix(workspace_code::root())
                .unwrap_or(&file)
                .display()
                .to_string(),
            text: std::fs::read_to_string(&file).unwrap(),
            declares,
        })
        .collect()
}

/// What the check knows of one file.
struct Read {
    /// The words used in it, with their offsets.
    uses: Vec<(usize, String)>,
    /// The words its `pub` items and fields show.
    shown: BTreeSet<String>,
    /// The bodies of its inline modules.
    modules: Vec<Range<usize>>,
    /// Its `pub` items outside tests.
    declared: Vec<Declaration>,
}

fn read(source: &Source) -> Read {
    let code = lexing::blanked(&source.text);
    let mut text = lexing::uncommented(&source.text);
    for range in not_uses(&code) {
        text.replace_range(range.clone(), &" ".repeat(range.len()));
    }
    let links = doc_links(&source.text);
    let uses = (tokens(&text).into_iter().chain(links.iter().copied()))
        .filter(|(_, word)| is_name(word))
        .map(|(at, word)| (at, word.to_string()))
        .collect();
    let shown = interfaces(&code)
        .into_iter()
        .flat_map(|range| tokens(&code[range]).into_iter().map(|(_, w)| w.to_string()))
        .chain(links.iter().map(|(_, w)| w.to_string()))
        .collect();
    let declared = match source.declares {
        true => declarations(&lexing::without_tests(&code)),
        false => Vec::new(),
    };
    Read {
        uses,
        shown,
        modules: inline_modules(&code),
        declared,
    }
}

/// The `pub` items of `sources` that nothing beyond their module uses (no
/// other file, nor the rest of their file for one in an inline module), and
/// that no `pub` item of their file shows.
fn findings(sources: &[Source]) -> Vec<Finding> {
    let read: Vec<Read> = sources.iter().map(read).collect();
    let mut everywhere: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, word) in read.iter().flat_map(|file| &file.uses) {
        *everywhere.entry(word).or_default() += 1;
    }
    let mut found = Vec::new();
    for (source, file) in sources.iter().zip(&read) {
        for item in &file.declared {
            // Its module's text: the innermost inline module around it, or its file.
            let module = (file.modules.iter())
                .filter(|m| m.contains(&item.offset))
                .min_by_key(|m| m.len())
                .map_or(0..usize::MAX, Clone::clone);
            let in_module = |at: &usize| module.contains(at);
            let here = (file.uses.iter())
                .filter(|(at, word)| *word == item.name && in_module(at))
                .count();
            if everywhere[item.name.as_str()] > here || file.shown.contains(&item.name) {
                continue;
            }
            // Each declaration of the name there is one of its words.
            let declarations = (file.declared.iter())
                .filter(|d| d.name == item.name && in_module(&d.offset))
                .count();
            found.push(Finding {
                file: source.path.clone(),
                line: source.text[..item.offset].matches('\n').count() + 1,
                kind: item.kind,
                name: item.name.clone(),
                local: here > declarations,
            });
        }
    }
    found
}

#[test]
fn every_pub_item_is_used_beyond_its_file_or_known() {
    let sources = sources();
    assert!(
        sources.len() >= 300,
        "the repository's files: {}",
        sources.len()
    );
    let findings = findings(&sources);
    let known = |file: &str, name: &str| KNOWN.iter().any(|k| (k.0, k.1) == (file, name));
    let new: Vec<String> = findings
        .iter()
        .filter(|f| !known(&f.file, &f.name))
        .map(|f| {
            let why = match f.local {
                true => "only its file uses it: make it private",
                false => "nothing uses it: remove it",
            };
            format!("{}:{} {} {}: {why}", f.file, f.line, f.kind, f.name)
        })
        .collect();
    let gone: Vec<String> = KNOWN
        .iter()
        .filter(|k| {
            !findings
                .iter()
                .any(|f| (f.file.as_str(), f.name.as_str()) == (k.0, k.1))
        })
        .map(|k| format!("{} {}", k.0, k.1))
        .collect();
    assert!(
        new.is_empty(),
        "pub items that need no pub:\n{}",
        new.join("\n")
    );
    assert!(
        gone.is_empty(),
        "listed in KNOWN but now used elsewhere or gone (take them off):\n{}",
        gone.join("\n")
    );
}

#[test]
fn the_check_finds_items_past_comments_reexports_impls_interfaces_and_tests() {
    let lib = "\
pub fn used() {}
pub(crate) async fn unused_fn() {}
pub const unsafe fn in_a_string() {}
pub const LIMIT: usize = 3;
pub static mut COUNTER: u8 = 0;
pub(in crate::a) struct Alone<T>(T);
impl<T: Clone> Alone<T> { pub fn new() {} }
impl<'a, T> std::fmt::Display for Alone<T> where T: Fn() -> u8 { }
pub trait Shown {}
impl Shown for u8 {}
pub enum Kind { A }
pub type Reexported = u8;
pub use self::Reexported as Again;
pub extern \"C\" fn called_from_c() {}
// pub fn in_a_comment() {}
const S: &str = \"pub fn in_a_literal() {}\";
#[cfg(test)]
mod tests { pub fn in_tests() { super::Local::new(); } }
pub trait Taken {}
pub struct Local;
pub struct Returned;
pub struct InAField;
pub enum InAVariant {}
pub fn returns() -> Returned { Returned }
pub struct Holder { pub field: Vec<InAField>, private: Local }
pub enum Variants { A(InAVariant) }
mod inline { pub fn called_from_its_file() {} pub fn only_inside() {} fn f() { only_inside() } }
fn g() { inline::called_from_its_file() }
pub struct Linked;
pub struct Remote;
pub struct Bare;
/// Like [`Linked`], unlike [the other](crate::Remote), as [Bare] [is not].
pub struct Associated;
pub struct Aliased;
pub struct InATraitFn;
type Alias = Option<Aliased>;
impl Iterator for Holder { type Item = Associated; fn f(&self, _: InATraitFn) {} }
";
    let other = "\
/// used() in a comment is no use: `Kind`
fn main() { used(); format!(\"{LIMIT}\"); returns(); }
#[serde(default = \"in_a_string\")]
struct S(Holder, Variants);
fn takes(_: impl Taken) -> impl Iterator<Item = u8> { [].into_iter() }
";
    let sources = [
        Source {
            path: "lib.rs".into(),
            text: lib.into(),
            declares: true,
        },
        Source {
            path: "main.rs".into(),
            text: other.into(),
            declares: false,
        },
    ];
    let found: Vec<(usize, &str, String, bool)> = findings(&sources)
        .into_iter()
        .map(|f| (f.line, f.kind, f.name, f.local))
        .collect();
    let expected: Vec<(usize, &str, String, bool)> = [
        (2, "fn", "unused_fn", false),
        (5, "static", "COUNTER", false),
        (6, "struct", "Alone", false),
        (7, "fn", "new", true),
        (9, "trait", "Shown", true),
        (11, "enum", "Kind", false),
        (12, "type", "Reexported", false),
        (20, "struct", "Local", true),
        (27, "fn", "only_inside", true),
    ]
    .into_iter()
    .map(|(l, k, n, local)| (l, k, n.to_string(), local))
    .collect();
    assert_eq!(found, expected);
}
