//! Every crate's modules depend on one another without cycles, at every level:
//! among the top-level modules, and among the children of each module. A
//! cycle makes two concerns one, which no one meant; this test names the
//! first file of each edge of a new one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path (`["cache", "writer"]`) of a source file under `src`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into()).collect();
    match parts.as_slice() {
        [only] if only == "lib" || only == "main" => Vec::new(),
        _ => parts,
    }
}

/// The code of a file without comments and its unit tests.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests {") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(at) => &l[..at],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first one or two path segments after each `crate::` and `super::`
/// (every item of a `{…}` group), resolved against `module`.
fn references(module: &[String], code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for anchor in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(anchor) {
            let start = from + at;
            from = start + anchor.len();
            let before = code[..start].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let mut base: Vec<String> = if anchor == "crate::" {
                Vec::new()
            } else {
                module[..module.len().saturating_sub(1)].to_vec()
            };
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

/// The leading paths of `rest`: one, or each of a `{…}` group's.
fn paths(rest: &str) -> Vec<Vec<String>> {
    let segments = |s: &str| -> Vec<String> {
        s.split("::")
            .take(2)
            .map(|p| {
                p.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .take_while(|p| !p.is_empty())
            .collect()
    };
    let Some(group) = rest.strip_prefix('{') else {
        return vec![segments(rest)];
    };
    let (mut depth, mut item, mut items) = (0, String::new(), Vec::new());
    for c in group.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut item));
                continue;
            }
            _ => {}
        }
        item.push(c);
    }
    items.push(item);
    items.iter().map(|i| segments(i.trim())).collect()
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Edges among the children of `parent`, each with the first file that makes it.
type Graph = BTreeMap<String, BTreeMap<String, PathBuf>>;

fn graphs(src: &Path) -> BTreeMap<Vec<String>, Graph> {
    let mut files = Vec::new();
    sources(src, &mut files);
    files.sort();
    let mut graphs: BTreeMap<Vec<String>, Graph> = BTreeMap::new();
    for file in files {
        let module = module_of(src, &file);
        let text = code(&std::fs::read_to_string(&file).unwrap());
        for target in references(&module, &text) {
            // The level where the two paths part: siblings under `parent`.
            let shared = module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            let (Some(a), Some(b)) = (module.get(shared), target.get(shared)) else {
                continue;
            };
            let rel = file.strip_prefix(src).unwrap().to_path_buf();
            graphs
                .entry(module[..shared].to_vec())
                .or_default()
                .entry(a.clone())
                .or_default()
                .entry(b.clone())
                .or_insert(rel);
        }
    }
    graphs
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

/// The cycles among `src`'s modules, each as its edges.
fn cycles(src: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for (parent, graph) in graphs(src) {
        if let Some(cycle) = cycle(&graph) {
            let edges: Vec<String> = cycle
                .windows(2)
                .map(|w| format!("{} -> {} ({})", w[0], w[1], graph[&w[0]][&w[1]].display()))
                .collect();
            let level = if parent.is_empty() {
                "crate".into()
            } else {
                parent.join("::")
            };
            found.push(format!(
                "{}, in {level}: {}",
                src.display(),
                edges.join(", ")
            ));
        }
    }
    found
}

#[test]
fn no_module_depends_on_itself_through_others() {
    let sources = crate::function_length::workspace_sources();
    assert!(sources.len() >= 5, "the workspace's crates: {sources:?}");
    let found: Vec<String> = sources.iter().flat_map(|src| cycles(src)).collect();
    assert!(found.is_empty(), "module cycles:\n{}", found.join("\n"));
}

#[test]
fn the_check_sees_a_cycle_and_its_paths() {
    let module = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    let refs = references(
        &module("cache::writer"),
        "use super::{team_state::apply, Change};\nlet x = crate::clock::now_ms();",
    );
    assert_eq!(
        refs,
        [
            module("clock::now_ms"),
            module("cache::team_state::apply"),
            module("cache::Change")
        ]
    );
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
