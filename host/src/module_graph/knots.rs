//! Knots: a module's own items and one of its children that depend on each
//! other (the parent uses the child, the child uses the parent's items
//! back, directly or through siblings). The fix is to move what they share
//! down into the child or into a small sibling module. The knots known today
//! are listed with why they stay; the list may only shrink.

use super::{Graph, SELF, graphs, named};
use crate::workspace_code;
use std::collections::BTreeSet;

/// The knots known today: (package, the child in a knot with its parent),
/// and why it stays for now. Most are a parent that holds what its
/// children share (types, helpers) and uses them back; each is undone by
/// moving the shared part down into a sibling module.
const KNOWN: &[(&str, &str, &str)] = &[
    ("mcpw-upstream", "auth::store", SHARED),
    ("mcpw-upstream", "auth::store::file", SHARED),
    ("mcpw-upstream", "auth::store::file::private", SHARED),
    ("mcpw-upstream", "auth::store::keyring", SHARED),
    ("mcpw-upstream", "auth::store::team_state", SHARED),
    ("mcpw-host", "cache::team_state", SHARED),
    ("mcpw", "cli::add_cmd", SHARED),
    ("mcpw", "cli::catalog_cmd", SHARED),
    ("mcpw", "cli::config_cmd", SHARED),
    ("mcpw", "cli::demo_cmd::tour", SHARED),
    ("mcpw", "cli::doctor_cmd", SHARED),
    ("mcpw", "cli::plugin_cmd", SHARED),
    ("mcpw", "cli::serve_cmd", SHARED),
    ("mcpw", "cli::trust_cmd", SHARED),
    ("mcpw-upstream", "components::engine", SHARED),
    ("mcpw-upstream", "components::keyvalue", SHARED),
    ("mcpw-upstream", "components::proxy", SHARED),
    ("mcpw-core", "config::model", SHARED),
    ("mcpw-core", "config::results", SHARED),
    ("mcpw-core", "config::show", SHARED),
    ("mcpw-core", "config::trust", SHARED),
    ("mcpw-core", "config::validate::oauth", SHARED),
    ("mcpw-gateway", "gateway::http::body", SHARED),
    ("mcpw-gateway", "gateway::http::clients", SHARED),
    ("mcpw-gateway", "gateway::proxy::install", SHARED),
    ("mcpw-gateway", "gateway::proxy::search", SHARED),
    ("mcpw-gateway", "gateway::proxy::tool", SHARED),
    ("mcpw-gateway", "gateway::tool_search::outline", SHARED),
    ("mcpw-host", "host::call_path", SHARED),
    ("mcpw-host", "host::calls", SHARED),
    ("mcpw-host", "host::explain", SHARED),
    ("mcpw-host", "host::guards", SHARED),
    ("mcpw-host", "host::pipeline", SHARED),
    ("mcpw-host", "host::rate_limits", SHARED),
    ("mcpw-host", "host::resources", SHARED),
    ("mcpw-host", "host::scripts", SHARED),
    ("mcpw-host", "host::services", SHARED),
    ("mcpw-host", "host::snapshot", SHARED),
    ("mcpw-host", "install::from_registry", SHARED),
    ("mcpw-host", "lifecycle::reload", SHARED),
    ("mcpw-host", "pins::team_state", SHARED),
    ("mcpw-core", "plugin::conformance::guard", SHARED),
    ("mcpw-core", "plugin::conformance::ranking", SHARED),
    ("mcpw-core", "plugin::conformance::script", SHARED),
    ("mcpw-core", "plugin::state::toolbox", SHARED),
    ("mcpw-host", "results::encode::csv", SHARED),
    ("mcpw-host", "stats::team_state", SHARED),
    ("mcpw-upstream", "upstream::beside", SHARED),
    ("mcpw-upstream", "upstream::error", SHARED),
    ("mcpw-upstream", "upstream::handler", SHARED),
    ("mcpw-upstream", "upstream::http", SHARED),
    ("mcpw-upstream", "upstream::listen", SHARED),
    ("mcpw-upstream", "upstream::npx", SHARED),
    ("mcpw-upstream", "upstream::origin", SHARED),
    ("mcpw-upstream", "upstream::progress", SHARED),
    ("mcpw-upstream", "upstream::sse", SHARED),
    ("mcpw-upstream", "upstream::stdio", SHARED),
    ("mcpw-upstream", "upstream::stdio::watch", SHARED),
    ("mcpw-encoder", "linear::avx2", SHARED),
    ("mcpw-encoder", "linear::portable", SHARED),
    ("mcpw-guest", "guard", SHARED),
    ("mcpw-guest", "model", SHARED),
    ("mcpw-guest", "script", SHARED),
    ("mcpw-guest", "worlds", SHARED),
    ("mcpw-guest-default", "ranking::hybrid", SHARED),
    ("mcpw-guest-default", "ranking::meaning", SHARED),
    ("mcpw-guest-default", "ranking::pattern", SHARED),
    ("mcpw-guest-default", "ranking::seed", SHARED),
    ("mcpw-guest-default", "ranking::select", SHARED),
];

/// Why most knots stay: the parent holds what its children share.
const SHARED: &str = "the parent holds what its children share; to move into a sibling";

/// The nodes `from` reaches in `graph`.
fn reach(graph: &Graph, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_string()];
    while let Some(node) = stack.pop() {
        for next in graph.get(&node).into_iter().flat_map(|e| e.keys()) {
            if seen.insert(next.clone()) {
                stack.push(next.clone());
            }
        }
    }
    seen
}

/// The children of `graph`'s module in a knot with its own items.
fn knotted(graph: &Graph) -> Vec<String> {
    reach(graph, SELF)
        .into_iter()
        .filter(|child| child != SELF && reach(graph, child).contains(SELF))
        .collect()
}

/// Every knot of the repository: `package child` (the child's path), with
/// the files of its direct edges.
fn knots() -> BTreeSet<(String, String)> {
    let mut found = BTreeSet::new();
    for krate in workspace_code::crates() {
        for (parent, graph) in graphs(krate) {
            for child in knotted(&graph) {
                let mut path = parent.clone();
                path.push(child.clone());
                let edge = |a: &str, b: &str| graph.get(a).and_then(|e| e.get(b)).cloned();
                let why = format!(
                    "{} <-> {} (uses it in {:?}, used back in {:?})",
                    named(&parent),
                    named(&path),
                    edge(SELF, &child),
                    edge(&child, SELF),
                );
                found.insert((format!("{} {}", krate.package, path.join("::")), why));
            }
        }
    }
    found
}

#[test]
fn no_module_and_its_child_depend_on_each_other_beyond_the_known() {
    let found = knots();
    let known: BTreeSet<String> = KNOWN.iter().map(|(p, m, _)| format!("{p} {m}")).collect();
    let new: Vec<String> = found
        .iter()
        .filter(|(key, _)| !known.contains(key))
        .map(|(key, why)| format!("{key}: {why}"))
        .collect();
    assert!(new.is_empty(), "parent-child knots:\n{}", new.join("\n"));
    let keys: BTreeSet<&String> = found.iter().map(|(key, _)| key).collect();
    let gone: Vec<&String> = known.iter().filter(|k| !keys.contains(k)).collect();
    assert!(
        gone.is_empty(),
        "knots no longer there, to strike from KNOWN: {gone:?}"
    );
}

#[test]
fn the_check_sees_a_knot_through_a_sibling() {
    let mut graph = Graph::new();
    for (a, b) in [
        (SELF, "a"),
        ("a", "b"),
        ("b", SELF),
        ("c", SELF),
        (SELF, "d"),
    ] {
        graph
            .entry(a.into())
            .or_default()
            .insert(b.into(), Default::default());
    }
    assert_eq!(knotted(&graph), ["a", "b"]);
}
