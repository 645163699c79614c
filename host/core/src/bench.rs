//! Search quality and speed, with the same metric definitions as the reference
//! evaluation (`eval.py` of the tool-search benchmark).
//!
//! Per query, with `relevant` the labelled tool ids (`server/tool`):
//! R@1 = a relevant tool is ranked first; R@5 = |relevant ∩ top 5| / min(5, |relevant|);
//! MRR@10 = 1 / rank of the first relevant tool in the top 10; nDCG@10 with binary gains.
//! Each is averaged over the queries.

use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// One labelled query.
#[derive(Clone, Debug, Deserialize)]
pub struct Query {
    /// What the agent asks.
    pub query: String,
    /// Ids (`server/tool`) of every tool that answers it.
    pub relevant: Vec<String>,
}

/// A queries file that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read queries {path}: {message}")]
pub struct QueriesError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub message: String,
}

/// Reads a queries file (`[{"query", "relevant": [...]}]`).
pub fn load_queries(path: &Path) -> Result<Vec<Query>, QueriesError> {
    let fail = |message: String| QueriesError {
        path: path.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    serde_json::from_str(&text)
        .map_err(|e| fail(format!("line {} column {}: {e}", e.line(), e.column())))
}

/// Checks labelled queries against the catalog they will run on: an empty
/// query or one with nothing relevant is an error (it would skew the means);
/// labels naming no tool of the catalog are returned as warnings.
pub fn check_queries(
    queries: &[Query],
    entries: &[crate::catalog::Entry],
) -> Result<Vec<String>, String> {
    let ids: HashSet<String> = entries.iter().map(|e| e.tool.id()).collect();
    let mut warnings = Vec::new();
    for (i, q) in queries.iter().enumerate() {
        if q.query.trim().is_empty() {
            return Err(format!("query {} is empty", i + 1));
        }
        if q.relevant.is_empty() {
            return Err(format!(
                "query {} ({:?}) lists no relevant tool",
                i + 1,
                q.query
            ));
        }
        let unknown: Vec<&str> = q
            .relevant
            .iter()
            .filter(|r| !ids.contains(*r))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            warnings.push(format!(
                "query {} ({:?}): not in the catalog: {}",
                i + 1,
                q.query,
                unknown.join(", ")
            ));
        }
    }
    Ok(warnings)
}

/// Averaged quality metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Quality {
    /// Recall at 1.
    pub r_at_1: f64,
    /// Recall at 5 (normalised by min(5, |relevant|)).
    pub r_at_5: f64,
    /// Mean reciprocal rank within the top 10.
    pub mrr_at_10: f64,
    /// nDCG at 10, binary gains.
    pub ndcg_at_10: f64,
}

/// Metrics of one ranked list of ids against the relevant ids.
pub fn score(ranked: &[String], relevant: &[String]) -> Quality {
    let rel: HashSet<&str> = relevant.iter().map(String::as_str).collect();
    if rel.is_empty() {
        return Quality::default();
    }
    let hits_in = |k: usize| {
        ranked
            .iter()
            .take(k)
            .filter(|id| rel.contains(id.as_str()))
            .count() as f64
    };
    let mrr = ranked
        .iter()
        .take(10)
        .position(|id| rel.contains(id.as_str()))
        .map(|i| 1.0 / (i as f64 + 1.0))
        .unwrap_or(0.0);
    let dcg: f64 = ranked
        .iter()
        .take(10)
        .enumerate()
        .filter(|(_, id)| rel.contains(id.as_str()))
        .map(|(i, _)| 1.0 / (i as f64 + 2.0).log2())
        .sum();
    let idcg: f64 = (0..rel.len().min(10))
        .map(|i| 1.0 / (i as f64 + 2.0).log2())
        .sum();
    Quality {
        r_at_1: hits_in(1),
        r_at_5: hits_in(5) / rel.len().min(5) as f64,
        mrr_at_10: mrr,
        ndcg_at_10: dcg / idcg,
    }
}

/// The mean of per-query metrics.
pub fn mean(per_query: &[Quality]) -> Quality {
    let n = per_query.len().max(1) as f64;
    let sum = per_query.iter().fold(Quality::default(), |a, q| Quality {
        r_at_1: a.r_at_1 + q.r_at_1,
        r_at_5: a.r_at_5 + q.r_at_5,
        mrr_at_10: a.mrr_at_10 + q.mrr_at_10,
        ndcg_at_10: a.ndcg_at_10 + q.ndcg_at_10,
    });
    Quality {
        r_at_1: sum.r_at_1 / n,
        r_at_5: sum.r_at_5 / n,
        mrr_at_10: sum.mrr_at_10 / n,
        ndcg_at_10: sum.ndcg_at_10 / n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn metrics_match_the_reference_definitions() {
        let q = score(&ids(&["x", "a", "y", "b"]), &ids(&["a", "b"]));
        assert_eq!(q.r_at_1, 0.0);
        assert_eq!(q.r_at_5, 1.0);
        assert_eq!(q.mrr_at_10, 0.5);
        let dcg = 1.0 / 3f64.log2() + 1.0 / 5f64.log2();
        let idcg = 1.0 + 1.0 / 3f64.log2();
        assert!((q.ndcg_at_10 - dcg / idcg).abs() < 1e-12);
    }

    #[test]
    fn recall_at_5_is_normalised_by_min_5_relevant() {
        let relevant = ids(&["1", "2", "3", "4", "5", "6", "7"]);
        let q = score(&ids(&["1", "2", "3", "x", "y"]), &relevant);
        assert!((q.r_at_5 - 3.0 / 5.0).abs() < 1e-12);
    }

    #[test]
    fn nothing_found_scores_zero() {
        assert_eq!(score(&[], &ids(&["a"])), Quality::default());
        assert_eq!(mean(&[]), Quality::default());
    }
}

/// Quality and speed of one ranking guest over a catalog and labelled queries.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct BenchReport {
    /// R@1.
    pub r_at_1: f64,
    /// R@5.
    pub r_at_5: f64,
    /// MRR@10.
    pub mrr_at_10: f64,
    /// nDCG@10.
    pub ndcg_at_10: f64,
    /// Time to build the index, milliseconds.
    pub index_ms: f64,
    /// Median query time, microseconds (host call included).
    pub query_p50_us: f64,
    /// 99th-percentile query time, microseconds.
    pub query_p99_us: f64,
}

/// Builds `ranker`'s index over `entries` and runs every query (top 10) three
/// times: quality from the first round, latency from all.
pub fn run(
    ranker: &std::sync::Arc<crate::plugin::Ranker>,
    entries: std::sync::Arc<[crate::catalog::Entry]>,
    queries: &[Query],
    options: crate::plugin::IndexOptions,
) -> Result<BenchReport, crate::plugin::PluginError> {
    use crate::plugin::SearchOptions;
    use std::time::Instant;
    let started = Instant::now();
    let index = ranker.index(entries.clone(), options)?;
    let index_ms = started.elapsed().as_secs_f64() * 1000.0;
    let opts = SearchOptions {
        limit: 10,
        ..Default::default()
    };
    let mut per_query = Vec::with_capacity(queries.len());
    let mut times = Vec::with_capacity(queries.len() * 3);
    for round in 0..3 {
        for q in queries {
            let t = Instant::now();
            let hits = index.search(&q.query, &opts)?;
            times.push(t.elapsed().as_secs_f64() * 1e6);
            if round == 0 {
                let ids: Vec<String> = hits.iter().map(|h| entries[h.index].tool.id()).collect();
                per_query.push(score(&ids, &q.relevant));
            }
        }
    }
    times.sort_by(f64::total_cmp);
    let at = |p: f64| {
        times
            .get(((times.len().max(1) - 1) as f64 * p).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let m = mean(&per_query);
    Ok(BenchReport {
        r_at_1: m.r_at_1,
        r_at_5: m.r_at_5,
        mrr_at_10: m.mrr_at_10,
        ndcg_at_10: m.ndcg_at_10,
        index_ms,
        query_p50_us: at(0.5),
        query_p99_us: at(0.99),
    })
}

/// The catalog `copies` times over, servers renamed `<server>-copyN` after the
/// first (for speed at scale; relevance labels keep pointing at the originals).
pub fn scale(tools: &[crate::catalog::Tool], copies: usize) -> Vec<crate::catalog::Tool> {
    (0..copies.max(1))
        .flat_map(|k| {
            tools.iter().map(move |t| {
                let mut t = t.clone();
                if k > 0 {
                    t.server = format!("{}-copy{k}", t.server);
                }
                t
            })
        })
        .collect()
}
