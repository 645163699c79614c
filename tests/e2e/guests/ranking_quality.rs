//! Search quality through the embedded guest: the `seed` profile reproduces
//! the reference keyword scoring on the dev queries (`eval.py`, keyword row:
//! top 5 results), and the default profile must not fall below the level it
//! reached, on the dev queries and on the two held-out sets.

use super::default_guest::{bench_catalog, policy};
use crate::common::fixture;
use mcpw::bench::{Quality, load_queries, mean, score};
use mcpw::plugin::{IndexOptions, NamingOptions, SearchOptions};

/// Mean metrics of a profile on a query file, over `limit` results.
fn measure(file: &str, profile: Option<&str>, limit: u32) -> Quality {
    let entries: std::sync::Arc<[_]> = policy()
        .entries(&bench_catalog(), &NamingOptions::default())
        .unwrap()
        .into();
    let index = policy()
        .index(
            entries.clone(),
            IndexOptions {
                profile: profile.map(String::from),
                ..Default::default()
            },
        )
        .unwrap();
    let queries = load_queries(&fixture(file)).unwrap();
    let options = SearchOptions {
        limit,
        ..Default::default()
    };
    let per_query: Vec<_> = queries
        .iter()
        .map(|q| {
            let hits = index.search(&q.query, &options).unwrap();
            let ids: Vec<String> = hits.iter().map(|h| entries[h.index].tool.id()).collect();
            score(&ids, &q.relevant)
        })
        .collect();
    let m = mean(&per_query);
    eprintln!("{} profile, {file}: {m:?}", profile.unwrap_or("default"));
    m
}

#[test]
fn seed_scoring_matches_the_reference_dev_numbers() {
    let m = measure("queries_dev.json", Some("seed"), 5);
    let reference = [
        (m.r_at_1, 0.633),
        (m.r_at_5, 0.788),
        (m.mrr_at_10, 0.710),
        (m.ndcg_at_10, 0.706),
    ];
    for (got, want) in reference {
        assert!(
            (got - want).abs() <= 0.02,
            "got {m:?}, reference R@1 0.633 R@5 0.788 MRR 0.710 nDCG 0.706"
        );
    }
}

#[test]
fn the_default_ranking_keeps_its_level() {
    // (file, R@5 floor, R@1 floor), a little under the level reached.
    for (file, r5, r1) in [
        ("queries_dev.json", 0.95, 0.84),
        ("queries_holdout.json", 0.84, 0.73),
        ("queries_holdout2.json", 0.83, 0.64),
        ("queries_holdout3.json", 0.84, 0.70),
    ] {
        let m = measure(file, None, 10);
        assert!(
            m.r_at_5 >= r5 && m.r_at_1 >= r1,
            "{file}: quality fell to {m:?} (floors R@5 {r5}, R@1 {r1})"
        );
    }
}
