//! Every crate's modules depend on one another without cycles, at every
//! level: among the children of each module (the crate's root included), and
//! between a module's own items and its children (a parent that uses its
//! child while the child uses the parent's items back). A cycle makes two
//! concerns one, which no one meant; this test names the first file of each
//! edge of a new one. The crates are all the repository's, every target of
//! each (see [`workspace_code`]); test modules count, files are read past
//! their inline test module.

use crate::workspace_code::{self, Crate, lexing};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

mod knots;
mod paths;

use paths::paths;

/// The node that stands for a module's own items among its children.
const SELF: &str = "self";

/// The code of a file without comments, literals and inline test items.
fn code(text: &str) -> String {
    lexing::without_tests(&lexing::blanked(text))
}

/// The paths after each `crate::`, `super::`, `self::` and `child::` (a
/// child module of `module`, named relatively), every item of a `{…}`
/// group's, resolved against `module`.
fn references(module: &[String], children: &BTreeSet<String>, code: &str) -> Vec<Vec<String>> {
    let parent = module[..module.len().saturating_sub(1)].to_vec();
    let mut anchors = vec![
        ("crate::".to_string(), Vec::new()),
        ("super::".to_string(), parent),
        ("self::".to_string(), module.to_vec()),
    ];
    for child in children {
        let mut path = module.to_vec();
        path.push(child.clone());
        anchors.push((format!("{child}::"), path));
    }
    let mut out = Vec::new();
    for (anchor, base) in anchors {
        let mut from = 0;
        while let Some(at) = code[from..].find(&anchor) {
            let start = from + at;
            from = start + anchor.len();
            let before = code[..start].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '.') {
                continue;
            }
            let mut base = base.clone();
            let mut rest = &code[from..];
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            }
            for path in paths(rest) {
                let mut target = base.clone();
                target.extend(path);
                out.push(target);
            }
        }
    }
    out
}

/// Edges among the children of a module (and [`SELF`], its own items), each
/// with the first file that makes it.
type Graph = BTreeMap<String, BTreeMap<String, PathBuf>>;

/// The graph of each module's children in `krate`, by the module's path.
fn graphs(krate: &Crate) -> BTreeMap<Vec<String>, Graph> {
    let children: BTreeMap<&[String], &BTreeSet<String>> = krate
        .modules
        .iter()
        .map(|m| (m.path.as_slice(), &m.children))
        .collect();
    // A module's re-exports are its children's items under its name: a path
    // to one leads to the child, and re-exporting is no use of the child.
    let mut texts = Vec::new();
    let mut aliases = BTreeMap::new();
    for module in &krate.modules {
        let text = code(&std::fs::read_to_string(&module.file).unwrap());
        let (text, names) = paths::reexports(&module.children, &text);
        aliases.insert(module.path.clone(), names);
        texts.push(text);
    }
    let mut graphs: BTreeMap<Vec<String>, Graph> = BTreeMap::new();
    for (module, text) in krate.modules.iter().zip(texts) {
        let file = module.file.strip_prefix(workspace_code::root()).unwrap();
        for target in references(&module.path, &module.children, &text) {
            let is_child = |level: &[String], name: &String| {
                children.get(level).is_some_and(|c| c.contains(name))
            };
            let Some((level, from, to)) = edge(&module.path, &target, &is_child, &aliases) else {
                continue;
            };
            graphs
                .entry(level.to_vec())
                .or_default()
                .entry(from)
                .or_default()
                .entry(to)
                .or_insert_with(|| file.to_path_buf());
        }
    }
    graphs
}

/// Where the paths of `module` and of the `target` it refers to part, and
/// the edge there: between two children, or between a child and its
/// parent's own items ([`SELF`]); `None` within a module.
fn edge<'a>(
    module: &'a [String],
    target: &'a [String],
    is_child: &dyn Fn(&[String], &String) -> bool,
    aliases: &BTreeMap<Vec<String>, BTreeMap<String, String>>,
) -> Option<(&'a [String], String, String)> {
    let shared = module
        .iter()
        .zip(target)
        .take_while(|(a, b)| a == b)
        .count();
    let level = &module[..shared];
    let to = |name: &String| match is_child(level, name) {
        true => name.clone(),
        false => aliases[level]
            .get(name)
            .unwrap_or(&SELF.to_string())
            .clone(),
    };
    if shared == module.len() {
        let child = target.get(shared).filter(|c| is_child(level, c))?;
        Some((level, SELF.to_string(), child.clone()))
    } else if shared == target.len() {
        Some((level, module[shared].clone(), SELF.to_string()))
    } else {
        let to = to(&target[shared]);
        (to != module[shared]).then(|| (level, module[shared].clone(), to))
    }
}

/// A cycle through `graph`, if any, as the modules along it.
fn cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        graph: &Graph,
        node: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if !done.insert(node.to_string()) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flat_map(|e| e.keys()) {
            if let Some(c) = visit(graph, next, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(graph, n, &mut Vec::new(), &mut done))
}

/// `module` as written in a message: `crate` for the root.
fn named(module: &[String]) -> String {
    match module.is_empty() {
        true => "crate".into(),
        false => module.join("::"),
    }
}

/// The levels with a cycle among their children known today: (package,
/// module), why it stays. The list may only shrink.
const KNOWN_CYCLES: &[(&str, &str, &str)] = &[
    (
        "mcpw-core",
        "config",
        "model masks secrets with show's helpers, show prints model's types: one concern to merge or split by type",
    ),
    (
        "mcpw",
        "crate",
        "the end-to-end tests' gateway and host groups share fixtures both ways: to move into common",
    ),
    (
        "mcpw-host",
        "host",
        "call_path and calls each call the other's steps: to be one module or a shared one",
    ),
    (
        "mcpw-upstream",
        "upstream",
        "error names http's failures, http builds error's: the error type to move into http or apart",
    ),
];

/// The cycles among the children of each of `krate`'s modules: (package,
/// module, its edges) ([`SELF`] left out: [`knots`] are found apart).
fn cycles(krate: &Crate) -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    for (parent, mut graph) in graphs(krate) {
        graph.remove(SELF);
        graph.values_mut().for_each(|edges| {
            edges.remove(SELF);
        });
        if let Some(cycle) = cycle(&graph) {
            let edges: Vec<String> = cycle
                .windows(2)
                .map(|w| format!("{} -> {} ({})", w[0], w[1], graph[&w[0]][&w[1]].display()))
                .collect();
            found.push((krate.package.clone(), named(&parent), edges.join(", ")));
        }
    }
    found
}

#[test]
fn no_module_depends_on_itself_through_others() {
    let crates = workspace_code::crates();
    assert!(
        crates.len() >= 20,
        "the repository's crates: {}",
        crates.len()
    );
    let found: BTreeSet<(String, String, String)> = crates.iter().flat_map(cycles).collect();
    let known: BTreeSet<(&str, &str)> = KNOWN_CYCLES.iter().map(|(p, m, _)| (*p, *m)).collect();
    let new: Vec<String> = found
        .iter()
        .filter(|(p, m, _)| !known.contains(&(p.as_str(), m.as_str())))
        .map(|(p, m, edges)| format!("{p}, in {m}: {edges}"))
        .collect();
    assert!(new.is_empty(), "module cycles:\n{}", new.join("\n"));
    let gone: Vec<&(&str, &str)> = known
        .iter()
        .filter(|(p, m)| !found.iter().any(|f| f.0 == *p && f.1 == *m))
        .collect();
    assert!(
        gone.is_empty(),
        "cycles no longer there, to strike from KNOWN_CYCLES: {gone:?}"
    );
}

#[test]
fn the_check_resolves_paths_to_modules() {
    let module = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    let children = BTreeSet::from(["sink".to_string()]);
    let refs = references(
        &module("cache::writer"),
        &children,
        "use super::{team_state::apply, Change};\nlet x = crate::clock::now_ms();\nsink::flush(); self::sink::Sink; x.sink::<u8>(); other_sink::y();",
    );
    assert_eq!(
        refs,
        [
            module("clock::now_ms"),
            module("cache::team_state::apply"),
            module("cache::Change"),
            module("cache::writer::sink::Sink"),
            module("cache::writer::sink::flush"),
        ]
    );
}

#[test]
fn the_check_sees_a_cycle() {
    let mut graph = Graph::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        graph
            .entry(a.into())
            .or_default()
            .insert(b.into(), PathBuf::new());
    }
    assert_eq!(cycle(&graph).unwrap(), ["a", "b", "c", "a"]);
    graph.get_mut("c").unwrap().remove("a");
    assert_eq!(cycle(&graph), None);
}
