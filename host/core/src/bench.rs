//! Search quality and speed, with the same metric definitions as the reference
//! evaluation (`eval.py` of the tool-search benchmark).
//!
//! Per query, with `relevant` the labelled tool ids (`server/tool`):
//! R@1 = a relevant tool is ranked first; R@5 = |relevant ∩ top 5| / min(5, |relevant|);
//! MRR@10 = 1 / rank of the first relevant tool in the top 10; nDCG@10 with binary gains.
//! Each is averaged over the queries.
//!
//! Per task, whose needs each list every tool that serves it: a need is met in
//! the top k when any of its tools is there; R@k = needs met in the top k /
//! min(k, needs), at most 1 (one tool may serve two needs); nDCG@10 with
//! binary gains, a hit counting only when it meets a need no hit above it
//! met, against the ideal of one new need met at each of the first
//! min(10, needs) ranks. Averaged over the tasks, and R@5 apart for the tasks
//! of one need and of several.

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

/// One labelled task: what an agent was given whole, and what it needs.
#[derive(Clone, Debug, Deserialize)]
pub struct Task {
    /// The task as the agent was given it.
    pub query: String,
    /// Each need: the ids (`server/tool`) of every tool that serves it.
    pub needs: Vec<Vec<String>>,
}

/// A labelled set: queries of one need, or tasks of several.
#[derive(Clone, Debug)]
pub enum Labelled {
    /// `[{"query", "relevant"}]`.
    Queries(Vec<Query>),
    /// `[{"query", "needs": [[...], ...]}]`.
    Tasks(Vec<Task>),
}

impl Labelled {
    /// How many queries or tasks.
    pub fn len(&self) -> usize {
        match self {
            Labelled::Queries(q) => q.len(),
            Labelled::Tasks(t) => t.len(),
        }
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// "queries" or "tasks".
    pub fn kind(&self) -> &'static str {
        match self {
            Labelled::Queries(_) => "queries",
            Labelled::Tasks(_) => "tasks",
        }
    }

    /// What is searched for, in order.
    fn texts(&self) -> Vec<&str> {
        match self {
            Labelled::Queries(q) => q.iter().map(|q| q.query.as_str()).collect(),
            Labelled::Tasks(t) => t.iter().map(|t| t.query.as_str()).collect(),
        }
    }
}

/// Reads a labelled file: tasks when its first item has `needs`, else
/// queries (`relevant`). The whole file is then read as that one kind, so
/// an item of the other kind is an error naming its line.
pub fn load_labelled(path: &Path) -> Result<Labelled, QueriesError> {
    let fail = |message: String| QueriesError {
        path: path.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    let at = |e: serde_json::Error| fail(format!("line {} column {}: {e}", e.line(), e.column()));
    let items: Vec<serde_json::Value> = serde_json::from_str(&text).map_err(at)?;
    if items.first().is_some_and(|i| i.get("needs").is_some()) {
        serde_json::from_str(&text).map(Labelled::Tasks).map_err(at)
    } else {
        serde_json::from_str(&text)
            .map(Labelled::Queries)
            .map_err(at)
    }
}

/// Checks a labelled set against the catalog it will run on, as its kind
/// asks (queries or tasks).
pub fn check_labelled(
    labelled: &Labelled,
    entries: &[crate::catalog::Entry],
) -> Result<Vec<String>, String> {
    match labelled {
        Labelled::Queries(q) => check_queries(q, entries),
        Labelled::Tasks(t) => check_tasks(t, entries),
    }
}

/// Checks labelled tasks as queries are checked: an empty
/// task, one without needs or a need without tools is an error; ids naming
/// no tool of the catalog are warnings.
fn check_tasks(tasks: &[Task], entries: &[crate::catalog::Entry]) -> Result<Vec<String>, String> {
    let ids: HashSet<String> = entries.iter().map(|e| e.tool.id()).collect();
    let mut warnings = Vec::new();
    for (i, t) in tasks.iter().enumerate() {
        if t.query.trim().is_empty() {
            return Err(format!("task {} is empty", i + 1));
        }
        if t.needs.is_empty() || t.needs.iter().any(Vec::is_empty) {
            return Err(format!(
                "task {} ({:?}) has no needs, or a need without tools",
                i + 1,
                t.query
            ));
        }
        let unknown: Vec<&str> = t
            .needs
            .iter()
            .flatten()
            .filter(|r| !ids.contains(*r))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            warnings.push(format!(
                "task {} ({:?}): not in the catalog: {}",
                i + 1,
                t.query,
                unknown.join(", ")
            ));
        }
    }
    Ok(warnings)
}

/// Checks labelled queries against the catalog they will run on: an empty
/// query or one with nothing relevant is an error (it would skew the means);
/// labels naming no tool of the catalog are returned as warnings.
fn check_queries(
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

/// Metrics of one ranked list against a task's needs (see the module's
/// documentation); MRR@10 is left at 0, it is not defined for tasks.
fn score_task(ranked: &[String], needs: &[Vec<String>]) -> Quality {
    if needs.is_empty() {
        return Quality::default();
    }
    let mut met = vec![false; needs.len()];
    // Needs met by the first i + 1 hits, and the DCG of the hits that met a new one.
    let mut met_by = Vec::with_capacity(10);
    let mut dcg = 0.0;
    for (i, id) in ranked.iter().take(10).enumerate() {
        let mut new = false;
        for (m, need) in met.iter_mut().zip(needs) {
            if !*m && need.contains(id) {
                *m = true;
                new = true;
            }
        }
        if new {
            dcg += 1.0 / (i as f64 + 2.0).log2();
        }
        met_by.push(met.iter().filter(|m| **m).count());
    }
    let recall = |k: usize| {
        let met = met_by.iter().take(k).next_back().copied().unwrap_or(0);
        (met as f64 / k.min(needs.len()) as f64).min(1.0)
    };
    let idcg: f64 = (0..needs.len().min(10))
        .map(|i| 1.0 / (i as f64 + 2.0).log2())
        .sum();
    Quality {
        r_at_1: recall(1),
        r_at_5: recall(5),
        mrr_at_10: 0.0,
        ndcg_at_10: dcg / idcg,
    }
}

/// Quality and speed of one ranking guest over a catalog and a labelled set.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// R@1.
    pub r_at_1: f64,
    /// R@5.
    pub r_at_5: f64,
    /// MRR@10, for queries of one need.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mrr_at_10: Option<f64>,
    /// nDCG@10.
    pub ndcg_at_10: f64,
    /// R@5 of the tasks of one need and of several, for tasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub r_at_5_by_needs: Option<ByNeeds>,
    /// Time to build the index, milliseconds.
    pub index_ms: f64,
    /// Median query time, microseconds (host call included).
    pub query_p50_us: f64,
    /// 99th-percentile query time, microseconds.
    pub query_p99_us: f64,
    /// The top 10 ids of each query or task, in the set's order.
    #[serde(skip)]
    pub ranked: Vec<Vec<String>>,
}

/// R@5 of tasks by how many needs they have.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ByNeeds {
    /// Tasks of one need.
    pub one_need: NeedsGroup,
    /// Tasks of two needs or more.
    pub two_or_more_needs: NeedsGroup,
}

/// Some tasks' count and mean R@5 (none when there is no such task).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct NeedsGroup {
    /// How many tasks.
    pub tasks: usize,
    /// Their mean R@5.
    pub r_at_5: Option<f64>,
}

/// Builds `ranker`'s index over `entries` and runs every query or task (top
/// 10) three times: quality from the first round, latency from all.
pub fn run(
    ranker: &std::sync::Arc<crate::plugin::Ranker>,
    entries: std::sync::Arc<[crate::catalog::Entry]>,
    labelled: &Labelled,
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
    let texts = labelled.texts();
    let mut ranked = Vec::with_capacity(texts.len());
    let mut times = Vec::with_capacity(texts.len() * 3);
    for round in 0..3 {
        for text in &texts {
            let t = Instant::now();
            let hits = index.search(text, &opts)?;
            times.push(t.elapsed().as_secs_f64() * 1e6);
            if round == 0 {
                ranked.push(hits.iter().map(|h| entries[h.index].tool.id()).collect());
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
    let mut report = quality(labelled, &ranked);
    report.index_ms = index_ms;
    report.query_p50_us = at(0.5);
    report.query_p99_us = at(0.99);
    report.ranked = ranked;
    Ok(report)
}

/// The quality part of a report: each query or task scored against its
/// ranked ids, averaged.
fn quality(labelled: &Labelled, ranked: &[Vec<String>]) -> BenchReport {
    let report = |r_at_1, r_at_5, mrr_at_10, ndcg_at_10, r_at_5_by_needs| BenchReport {
        r_at_1,
        r_at_5,
        mrr_at_10,
        ndcg_at_10,
        r_at_5_by_needs,
        index_ms: 0.0,
        query_p50_us: 0.0,
        query_p99_us: 0.0,
        ranked: Vec::new(),
    };
    match labelled {
        Labelled::Queries(queries) => {
            let per: Vec<Quality> = queries
                .iter()
                .zip(ranked)
                .map(|(q, ids)| score(ids, &q.relevant))
                .collect();
            let m = mean(&per);
            report(m.r_at_1, m.r_at_5, Some(m.mrr_at_10), m.ndcg_at_10, None)
        }
        Labelled::Tasks(tasks) => {
            let per: Vec<(usize, Quality)> = tasks
                .iter()
                .zip(ranked)
                .map(|(t, ids)| (t.needs.len(), score_task(ids, &t.needs)))
                .collect();
            let all: Vec<Quality> = per.iter().map(|(_, q)| *q).collect();
            let m = mean(&all);
            let group = |one: bool| {
                let r5: Vec<f64> = per
                    .iter()
                    .filter(|(n, _)| (*n == 1) == one)
                    .map(|(_, q)| q.r_at_5)
                    .collect();
                NeedsGroup {
                    tasks: r5.len(),
                    r_at_5: (!r5.is_empty()).then(|| r5.iter().sum::<f64>() / r5.len() as f64),
                }
            };
            let by_needs = ByNeeds {
                one_need: group(true),
                two_or_more_needs: group(false),
            };
            report(m.r_at_1, m.r_at_5, None, m.ndcg_at_10, Some(by_needs))
        }
    }
}

/// What a query or task missed in its top 5.
#[derive(Clone, Debug, Serialize)]
pub struct Miss {
    /// The query or task.
    pub query: String,
    /// Its R@5.
    pub r_at_5: f64,
    /// Its nDCG@10.
    pub ndcg_at_10: f64,
    /// For a task, each need none of whose tools is in the top 5; for a
    /// query, its relevant ids not there.
    pub missed: Vec<Vec<String>>,
    /// The top 5 ids.
    pub top_5: Vec<String>,
}

/// Every query or task whose R@5 is under 1, worst first (by R@5, then
/// nDCG@10; ties in the set's order): where a ranking falls short.
pub fn misses(labelled: &Labelled, ranked: &[Vec<String>]) -> Vec<Miss> {
    let top5 = |ids: &[String]| ids.iter().take(5).cloned().collect::<Vec<_>>();
    let mut out: Vec<Miss> = match labelled {
        Labelled::Queries(queries) => queries
            .iter()
            .zip(ranked)
            .map(|(q, ids)| {
                let top_5 = top5(ids);
                let s = score(ids, &q.relevant);
                Miss {
                    query: q.query.clone(),
                    r_at_5: s.r_at_5,
                    ndcg_at_10: s.ndcg_at_10,
                    missed: vec![
                        q.relevant
                            .iter()
                            .filter(|r| !top_5.contains(r))
                            .cloned()
                            .collect(),
                    ],
                    top_5,
                }
            })
            .collect(),
        Labelled::Tasks(tasks) => tasks
            .iter()
            .zip(ranked)
            .map(|(t, ids)| {
                let top_5 = top5(ids);
                let s = score_task(ids, &t.needs);
                Miss {
                    query: t.query.clone(),
                    r_at_5: s.r_at_5,
                    ndcg_at_10: s.ndcg_at_10,
                    missed: t
                        .needs
                        .iter()
                        .filter(|need| !need.iter().any(|id| top_5.contains(id)))
                        .cloned()
                        .collect(),
                    top_5,
                }
            })
            .collect(),
    };
    out.retain(|m| m.r_at_5 < 1.0);
    out.sort_by(|a, b| {
        a.r_at_5
            .total_cmp(&b.r_at_5)
            .then(a.ndcg_at_10.total_cmp(&b.ndcg_at_10))
    });
    out
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

#[cfg(test)]
mod tests;
