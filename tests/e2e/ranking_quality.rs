//! Search quality on the benchmark's dev queries, through the embedded guest:
//! the `seed` profile reproduces the reference keyword scoring (`eval.py`,
//! keyword row: top 5 results), and the default profile must not fall below
//! the level it reached.

use crate::common::fixture;
use crate::default_guest::{bench_catalog, policy};
use mcpw::bench::{load_queries, mean, score};
use mcpw::plugin::{IndexOptions, NamingOptions, SearchOptions};

#[test]
fn seed_scoring_matches_the_reference_dev_numbers() {
    let entries: std::sync::Arc<[_]> = policy()
        .entries(&bench_catalog(), &NamingOptions::default())
        .unwrap()
        .into();
    let index = policy()
        .index(
            entries.clone(),
            IndexOptions {
                profile: Some("seed".into()),
                ..Default::default()
            },
        )
        .unwrap();
    let queries = load_queries(&fixture("queries_dev.json")).unwrap();
    assert_eq!(queries.len(), 150);
    let per_query: Vec<_> = queries
        .iter()
        .map(|q| {
            let hits = index.search(&q.query, &SearchOptions::default()).unwrap();
            let ids: Vec<String> = hits.iter().map(|h| entries[h.index].tool.id()).collect();
            score(&ids, &q.relevant)
        })
        .collect();
    let m = mean(&per_query);
    eprintln!("seed profile, dev queries: {m:?}");
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
    let entries: std::sync::Arc<[_]> = policy()
        .entries(&bench_catalog(), &NamingOptions::default())
        .unwrap()
        .into();
    let index = policy()
        .index(entries.clone(), IndexOptions::default())
        .unwrap();
    let queries = load_queries(&fixture("queries_dev.json")).unwrap();
    let per_query: Vec<_> = queries
        .iter()
        .map(|q| {
            let hits = index
                .search(
                    &q.query,
                    &SearchOptions {
                        limit: 10,
                        ..Default::default()
                    },
                )
                .unwrap();
            let ids: Vec<String> = hits.iter().map(|h| entries[h.index].tool.id()).collect();
            score(&ids, &q.relevant)
        })
        .collect();
    let m = mean(&per_query);
    eprintln!("default profile, dev queries: {m:?}");
    assert!(
        m.r_at_5 >= 0.95 && m.r_at_1 >= 0.84,
        "dev quality fell: {m:?} (level: R@5 0.954, R@1 0.847)"
    );
}
