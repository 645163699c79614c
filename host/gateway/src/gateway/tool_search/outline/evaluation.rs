//! How much of the bench catalog (101 servers, 1,287 tools) each form of
//! the outline shows within a budget, and how often that is what a query of
//! the search benchmark needs. No agent is in the loop: what is measured is
//! whether a query's relevant server is named, its tool named, or one of the
//! query's words shown for its server (the words an agent would see the
//! server covers its task by). Run with
//! `cargo test -p mcpw --lib outline::evaluation -- --ignored --nocapture`.

use super::words::{split, stem};
use super::*;
use crate::catalog::{Tool, load_catalog};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

const QUERY_FILES: [&str; 4] = [
    "queries_dev.json",
    "queries_holdout.json",
    "queries_holdout2.json",
    "queries_holdout3.json",
];

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

/// Tokens as the repo counts them: bytes / 4.
fn tokens(bytes: usize) -> usize {
    bytes.div_ceil(crate::results::CHARS_PER_TOKEN)
}

/// What one form shows of each server: words, or tool names.
struct Shown {
    bytes: usize,
    servers: HashMap<String, BTreeSet<String>>,
    tools: BTreeSet<String>,
}

struct Query {
    words: BTreeSet<String>,
    relevant: Vec<(String, String)>,
}

fn queries(file: &str) -> Vec<Query> {
    let text = std::fs::read_to_string(fixture(file)).unwrap();
    let list: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    list.iter()
        .map(|q| Query {
            words: split(q["query"].as_str().unwrap())
                .filter(|w| w.len() >= 3)
                .map(|w| stem(&w))
                .collect(),
            relevant: q["relevant"]
                .as_array()
                .unwrap()
                .iter()
                .map(|id| {
                    let (s, t) = id.as_str().unwrap().split_once('/').unwrap();
                    (s.to_string(), t.to_string())
                })
                .collect(),
        })
        .collect()
}

/// Queries whose server is named, whose tool is named, and with a word shown
/// for their server (server name words count as shown).
fn score(shown: &Shown, queries: &[Query]) -> (f64, f64, f64) {
    let (mut server, mut tool, mut word) = (0, 0, 0);
    for q in queries {
        let servers: Vec<&BTreeSet<String>> = q
            .relevant
            .iter()
            .filter_map(|(s, _)| shown.servers.get(s))
            .collect();
        server += usize::from(!servers.is_empty());
        tool += usize::from(q.relevant.iter().any(|(_, t)| shown.tools.contains(t)));
        word += usize::from(servers.iter().any(|w| !w.is_disjoint(&q.words)));
    }
    let n = queries.len() as f64;
    (server as f64 / n, tool as f64 / n, word as f64 / n)
}

fn words_of(texts: &[&str]) -> BTreeSet<String> {
    texts
        .iter()
        .flat_map(|t| split(t))
        .map(|w| stem(&w))
        .collect()
}

fn shown_of(groups: &[Group<'_>], fitted: &Fitted, names: bool) -> Shown {
    let mut shown = Shown {
        bytes: fitted.text.len(),
        servers: HashMap::new(),
        tools: BTreeSet::new(),
    };
    for (g, s) in groups.iter().zip(&fitted.shown) {
        let Some(said) = s else { continue };
        let mut texts: Vec<&str> = vec![g.server];
        if names {
            texts.extend(g.tools.iter().map(|e| e.tool.name.as_str()));
            shown
                .tools
                .extend(g.tools.iter().map(|e| e.tool.name.clone()));
        } else {
            texts.extend(said.iter().map(String::as_str));
        }
        shown.servers.insert(g.server.to_string(), words_of(&texts));
    }
    shown
}

/// Server names with their tool counts, most tools first, as many as fit.
fn counted(groups: &[Group<'_>], room: usize) -> Shown {
    let mut order: Vec<&Group<'_>> = groups.iter().collect();
    order.sort_by_key(|g| std::cmp::Reverse(g.tools.len()));
    let mut shown = Shown {
        bytes: 0,
        servers: HashMap::new(),
        tools: BTreeSet::new(),
    };
    for g in order {
        let entry = format!("{} ({}); ", g.server, g.tools.len());
        if shown.bytes + entry.len() > room {
            break;
        }
        shown.bytes += entry.len();
        shown
            .servers
            .insert(g.server.to_string(), words_of(&[g.server]));
    }
    shown
}

#[test]
#[ignore = "an evaluation: prints figures"]
fn forms_on_the_bench_catalog() {
    let tools = load_catalog(&fixture("catalog.json")).unwrap();
    let entries: Vec<Entry> = tools
        .into_iter()
        .map(|t: Tool| Entry {
            name: format!("{}__{}", t.server.replace('-', "_"), t.name),
            tool: Arc::new(t),
        })
        .collect();
    let mut groups: Vec<Group<'_>> = Vec::new();
    for e in &entries {
        match groups.last_mut() {
            Some(g) if g.server == e.tool.server => g.tools.push(e),
            _ => groups.push(Group {
                server: &e.tool.server,
                keywords: &[],
                tools: vec![e],
            }),
        }
    }
    let said = said_of(&groups);
    let sets: Vec<(&str, Vec<Query>)> = QUERY_FILES.iter().map(|f| (*f, queries(f))).collect();
    let report = |name: &str, shown: &Shown| {
        let cells: Vec<String> = sets
            .iter()
            .map(|(_, q)| {
                let (s, t, w) = score(shown, q);
                format!("{s:.2} / {t:.2} / {w:.2}")
            })
            .collect();
        println!(
            "| {name} | {} | {} | {} |",
            tokens(shown.bytes),
            shown.servers.len(),
            cells.join(" | ")
        );
    };
    println!(
        "Outline forms, bench catalog; per query set: server named / tool named / a query word shown for its server"
    );
    println!("| form | tokens | servers | {} |", QUERY_FILES.join(" | "));
    let whole = usize::MAX;
    report(
        "(a) every name, grouped by server (whole)",
        &shown_of(&groups, &names(&groups, whole), true),
    );
    report(
        "(b) servers, words, counts (whole)",
        &shown_of(&groups, &servers(&groups, whole, &said), false),
    );
    for budget in [300, 400, 500] {
        // The room the description leaves the outline: what its intro does not take.
        let intro = super::super::intro(entries.len(), groups.len()).len();
        let room = budget * crate::results::CHARS_PER_TOKEN - intro;
        report(
            &format!("(a) names grouped by server, {budget}-token description"),
            &shown_of(&groups, &names(&groups, room), true),
        );
        report(
            &format!("(b) servers with tool counts, {budget}"),
            &counted(&groups, room),
        );
        report(
            &format!("(b) servers with words, {budget}"),
            &shown_of(&groups, &servers(&groups, room, &said), false),
        );
    }
}
