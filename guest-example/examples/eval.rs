//! Native evaluation of the ranking profiles on a catalog and labelled queries,
//! for working on the ranking without a wasm round trip:
//! `cargo run -p mcpw-guest-default --release --example eval -- CATALOG QUERIES [PROFILE] [--misses]`
//! Metrics as `mcpw plugin bench` (top 10); QUERIES may be tasks of several
//! needs (`{"query", "needs": [[…], …]}`), scored by needs met. `--dump FILE` writes each query's
//! top 100 with scores as JSON, for offline score-fusion experiments.
//!
//! Search by meaning: `--vectors FILE` (a JSON object, text → vector) gives
//! the vectors of tool texts and queries; the texts it lacks are written to
//! `FILE.todo.json` for `cargo run -p mcpw --release --example embed_texts --
//! MODEL_DIR FILE.todo.json FILE` to embed. `--weight W` sets the weight of
//! meaning; `--cv K` picks it by K-fold cross-validation over the queries
//! (each fold's weight chosen on the other folds, by MRR@10, which rewards
//! both a right first hit and a right tool high up, then R@5) and
//! reports the held-out metrics.

use mcpw_guest_default::model::{Entry, Tool};
use mcpw_guest_default::ranking::{Hit, Index, IndexOptions, SearchOptions};
use serde_json::Value;
use std::time::Instant;

/// The command line: what to evaluate and what to print besides the metrics.
struct Args {
    catalog: String,
    queries: String,
    profile: Option<String>,
    /// Print the queries whose first hit is not relevant.
    misses: bool,
    /// Print the queries that miss a relevant tool in the top 5.
    recall: bool,
    dump_to: Option<String>,
    vectors: Option<String>,
    weight: Option<f32>,
    cv: Option<usize>,
}

impl Args {
    /// Reads the command line: `CATALOG QUERIES [PROFILE] [--misses] [--recall] [--dump FILE]`.
    fn parse() -> Args {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let value = |flag: &str| {
            args.iter()
                .position(|a| a == flag)
                .and_then(|i| args.get(i + 1).cloned())
        };
        Args {
            catalog: args[0].clone(),
            queries: args[1].clone(),
            profile: args.get(2).filter(|a| !a.starts_with("--")).cloned(),
            misses: args.iter().any(|a| a == "--misses"),
            recall: args.iter().any(|a| a == "--recall"),
            dump_to: value("--dump"),
            vectors: value("--vectors"),
            weight: value("--weight").map(|w| w.parse().expect("--weight: a number")),
            cv: value("--cv").map(|k| k.parse().expect("--cv: a number of folds")),
        }
    }
}

/// Metric sums over the queries (divided by their number when reported).
#[derive(Default)]
struct Sums {
    r1: f64,
    r5: f64,
    mrr: f64,
    ndcg: f64,
}

/// Reads a JSON file.
fn read_json(path: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The catalog's tools as index entries, named `server__tool`.
fn entries(catalog: &Value) -> Vec<Entry> {
    let mut entries = Vec::new();
    for s in catalog["servers"].as_array().unwrap() {
        let server = s["name"].as_str().unwrap();
        for t in s["tools"].as_array().unwrap() {
            let name = t["name"].as_str().unwrap();
            let mut tool = Tool::new(server, name, t["description"].as_str().unwrap_or(""));
            tool.input_schema = t
                .get("inputSchema")
                .map(|v| v.to_string())
                .unwrap_or_else(|| "{}".into());
            entries.push(Entry {
                name: format!("{}__{}", server.replace('-', "_"), name),
                tool,
            });
        }
    }
    entries
}

/// Adds one query's metrics, over its top 10 `ranked` ids, to `sums`.
fn add_metrics(sums: &mut Sums, ranked: &[&str], rel: &[&str]) {
    let is_rel = |id: &&str| rel.contains(id);
    sums.r1 += ranked.first().is_some_and(&is_rel) as u8 as f64;
    sums.r5 += ranked.iter().take(5).filter(|d| is_rel(d)).count() as f64 / rel.len().min(5) as f64;
    sums.mrr += ranked
        .iter()
        .position(&is_rel)
        .map_or(0.0, |p| 1.0 / (p as f64 + 1.0));
    let dcg: f64 = ranked
        .iter()
        .enumerate()
        .filter(|(_, d)| is_rel(d))
        .map(|(i, _)| 1.0 / (i as f64 + 2.0).log2())
        .sum();
    let idcg: f64 = (0..rel.len().min(10))
        .map(|i| 1.0 / (i as f64 + 2.0).log2())
        .sum();
    sums.ndcg += dcg / idcg;
}

/// The strings of a JSON array.
fn strs(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect()
}

/// Adds one task's metrics, over its top 10 `ranked` ids, to `sums`: a need
/// is met by any of its tools; R@k = needs met in the top k / min(k, needs);
/// nDCG@10 gains for a hit that meets a need not met above it.
fn add_task_metrics(sums: &mut Sums, ranked: &[&str], needs: &[Vec<&str>]) {
    let met_by = |k: usize| {
        needs
            .iter()
            .filter(|n| ranked.iter().take(k).any(|d| n.contains(d)))
            .count() as f64
    };
    sums.r1 += met_by(1) / needs.len().min(1) as f64;
    sums.r5 += met_by(5) / needs.len().min(5) as f64;
    let mut met = vec![false; needs.len()];
    let mut dcg = 0.0;
    for (i, d) in ranked.iter().take(10).enumerate() {
        if let Some(n) = (0..needs.len()).find(|&n| !met[n] && needs[n].contains(d)) {
            met[n] = true;
            dcg += 1.0 / (i as f64 + 2.0).log2();
        }
    }
    let idcg: f64 = (0..needs.len().min(10))
        .map(|i| 1.0 / (i as f64 + 2.0).log2())
        .sum();
    sums.ndcg += dcg / idcg;
}

/// Prints what the query missed: with `recall`, the relevant tools not in the
/// top 5; with `misses`, a query whose first hit is not relevant.
fn print_misses(args: &Args, text: &str, ranked: &[&str], rel: &[&str]) {
    let is_rel = |id: &&str| rel.contains(id);
    let this_r5 =
        ranked.iter().take(5).filter(|d| is_rel(d)).count() as f64 / rel.len().min(5) as f64;
    if args.recall && this_r5 < 1.0 {
        let missing: Vec<&&str> = rel
            .iter()
            .filter(|r| !ranked.iter().take(5).any(|d| d == *r))
            .collect();
        println!(
            "R@5 {this_r5:.2}  {text:<50} missing {missing:?}  top5 {:?}",
            &ranked[..ranked.len().min(5)]
        );
    }
    if args.misses && !ranked.first().is_some_and(&is_rel) {
        let found = ranked
            .iter()
            .position(&is_rel)
            .map_or("--".to_string(), |p| (p + 1).to_string());
        println!(
            "{found:>3}  {text:<50} want {:?}  got {:?}",
            &rel[..rel.len().min(2)],
            &ranked[..ranked.len().min(3)]
        );
    }
}

/// Answers one query (its top 100 when dumping, else its top 10), timing it in µs.
fn timed_search(index: &Index, text: &str, dumping: bool, times: &mut Vec<f64>) -> Vec<Hit> {
    let t = Instant::now();
    let hits = index
        .search(
            text,
            &SearchOptions {
                limit: if dumping { 100 } else { 10 },
                ..Default::default()
            },
        )
        .unwrap();
    times.push(t.elapsed().as_secs_f64() * 1e6);
    hits
}

/// Prints the mean metrics, the build time and the query latency percentiles.
fn report(sums: &Sums, queries: usize, build_ms: f64, mut times: Vec<f64>) {
    let n = queries as f64;
    times.sort_by(f64::total_cmp);
    println!(
        "R@1 {:.3}  R@5 {:.3}  MRR@10 {:.3}  nDCG@10 {:.3}   build {build_ms:.1} ms  query p50 {:.0} µs p99 {:.0} µs",
        sums.r1 / n,
        sums.r5 / n,
        sums.mrr / n,
        sums.ndcg / n,
        times[times.len() / 2],
        times[(times.len() as f64 * 0.99) as usize]
    );
}

/// The vectors of `texts` from the file, or `None` after writing those it
/// lacks to `<file>.todo.json`.
fn vectors_of(path: &str, texts: &[String]) -> Option<Vec<Vec<f32>>> {
    let known: std::collections::HashMap<String, Vec<f32>> = std::fs::read_to_string(path)
        .ok()
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or_default();
    let todo: Vec<&String> = texts.iter().filter(|t| !known.contains_key(*t)).collect();
    if !todo.is_empty() {
        let out = format!("{path}.todo.json");
        std::fs::write(&out, serde_json::to_string(&todo).unwrap()).unwrap();
        eprintln!(
            "{} texts have no vector: embed {out} into {path} (example embed_texts of mcpw)",
            todo.len()
        );
        return None;
    }
    Some(texts.iter().map(|t| known[t].clone()).collect())
}

/// One query's R@1, R@5 and reciprocal rank (top 10).
fn quality(ranked: &[&str], rel: &[&str]) -> [f64; 3] {
    let mut sums = Sums::default();
    add_metrics(&mut sums, ranked, rel);
    [sums.r1, sums.r5, sums.mrr]
}

/// Per weight of meaning, each query's quality.
fn sweep(
    args: &Args,
    index: &mut Index,
    qs: &[(String, Vec<String>, Vec<f32>)],
    ids: &[String],
    weights: &[f32],
) -> Vec<Vec<[f64; 3]>> {
    weights
        .iter()
        .map(|&w| {
            index.set_weight(w);
            qs.iter()
                .map(|(text, rel, v)| {
                    let opts = SearchOptions {
                        limit: 10,
                        ..Default::default()
                    };
                    let hits = index.search_with(text, &opts, Some(v)).unwrap();
                    let ranked: Vec<&str> = hits
                        .iter()
                        .map(|h| ids[h.index as usize].as_str())
                        .collect();
                    let rel: Vec<&str> = rel.iter().map(String::as_str).collect();
                    if weights.len() == 1 {
                        print_misses(args, text, &ranked, &rel);
                    }
                    quality(&ranked, &rel)
                })
                .collect()
        })
        .collect()
}

/// K-fold cross-validation of the weight of meaning: prints each fold's
/// pick and the held-out R@1, R@5 and MRR@10.
fn cross_validate(per_weight: &[Vec<[f64; 3]>], weights: &[f32], k: usize) {
    let n = per_weight[0].len();
    let mean = |w: usize, keep: &dyn Fn(usize) -> bool, m: usize| {
        let (s, c) = (0..n)
            .filter(|&i| keep(i))
            .fold((0.0, 0), |(s, c), i| (s + per_weight[w][i][m], c + 1));
        s / c.max(1) as f64
    };
    let mut held = [0.0f64; 3];
    let mut picks = Vec::new();
    for fold in 0..k {
        let train = |i: usize| i % k != fold;
        let best = (0..weights.len())
            .max_by(|&a, &b| {
                (mean(a, &train, 2), mean(a, &train, 1))
                    .partial_cmp(&(mean(b, &train, 2), mean(b, &train, 1)))
                    .unwrap()
                    // Ties go to the smaller weight.
                    .then(b.cmp(&a))
            })
            .unwrap();
        picks.push(weights[best]);
        for (m, h) in held.iter_mut().enumerate() {
            *h += (0..n)
                .filter(|&i| i % k == fold)
                .map(|i| per_weight[best][i][m])
                .sum::<f64>();
        }
    }
    println!(
        "cross-validated ({k} folds): R@1 {:.3}  R@5 {:.3}  MRR@10 {:.3}   weights picked {picks:?}",
        held[0] / n as f64,
        held[1] / n as f64,
        held[2] / n as f64
    );
    for (w, per) in weights.iter().zip(per_weight) {
        let all = |m: usize| per.iter().map(|q| q[m]).sum::<f64>() / n as f64;
        println!(
            "  w {w:.2}: R@1 {:.3}  R@5 {:.3}  MRR@10 {:.3}",
            all(0),
            all(1),
            all(2)
        );
    }
}

fn main() {
    let args = Args::parse();
    if let Some(path) = &args.vectors {
        return with_vectors(&args, path);
    }
    let catalog = read_json(&args.catalog);
    let queries = read_json(&args.queries);
    let mut dump = Vec::new();
    let entries = entries(&catalog);
    let ids: Vec<String> = entries
        .iter()
        .map(|e| format!("{}/{}", e.tool.server, e.tool.name))
        .collect();
    let t = Instant::now();
    let index = Index::build(
        entries,
        IndexOptions {
            profile: args.profile.clone(),
            ..Default::default()
        },
    )
    .unwrap();
    let build_ms = t.elapsed().as_secs_f64() * 1000.0;
    let mut sums = Sums::default();
    let qs = queries.as_array().unwrap();
    let mut times = Vec::new();
    for q in qs {
        let text = q["query"].as_str().unwrap();
        let needs: Option<Vec<Vec<&str>>> = q
            .get("needs")
            .map(|n| n.as_array().unwrap().iter().map(strs).collect());
        let rel: Vec<&str> = match &needs {
            Some(needs) => needs.concat(),
            None => strs(&q["relevant"]),
        };
        let hits = timed_search(&index, text, args.dump_to.is_some(), &mut times);
        if args.dump_to.is_some() {
            let top: Vec<Value> = hits
                .iter()
                .map(|h| serde_json::json!([ids[h.index as usize], h.score]))
                .collect();
            dump.push(serde_json::json!({"query": text, "hits": top}));
        }
        let hits = &hits[..hits.len().min(10)];
        let ranked: Vec<&str> = hits
            .iter()
            .map(|h| ids[h.index as usize].as_str())
            .collect();
        match &needs {
            Some(needs) => add_task_metrics(&mut sums, &ranked, needs),
            None => add_metrics(&mut sums, &ranked, &rel),
        }
        print_misses(&args, text, &ranked, &rel);
    }
    if let Some(path) = &args.dump_to {
        std::fs::write(path, serde_json::to_string(&dump).unwrap()).unwrap();
    }
    report(&sums, qs.len(), build_ms, times);
}

/// The evaluation with vectors: at `--weight` (default the guest's), or
/// cross-validated with `--cv`.
fn with_vectors(args: &Args, path: &str) {
    let catalog = read_json(&args.catalog);
    let queries = read_json(&args.queries);
    let entries = entries(&catalog);
    let ids: Vec<String> = entries
        .iter()
        .map(|e| format!("{}/{}", e.tool.server, e.tool.name))
        .collect();
    let mut index = Index::build(
        entries,
        IndexOptions {
            profile: args.profile.clone(),
            ..Default::default()
        },
    )
    .unwrap();
    let Some(tool_texts) = index.texts_to_embed() else {
        panic!("this profile does not use meaning");
    };
    let qs: Vec<(String, Vec<String>)> = queries
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            let rel = q["relevant"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r.as_str().unwrap().to_string())
                .collect();
            (q["query"].as_str().unwrap().to_string(), rel)
        })
        .collect();
    let mut texts = tool_texts.clone();
    texts.extend(qs.iter().map(|(q, _)| q.clone()));
    let Some(mut vectors) = vectors_of(path, &texts) else {
        std::process::exit(2);
    };
    let query_vectors = vectors.split_off(tool_texts.len());
    assert!(index.set_vectors(vectors), "the vectors fit the catalog");
    let qs: Vec<(String, Vec<String>, Vec<f32>)> = qs
        .into_iter()
        .zip(query_vectors)
        .map(|((q, r), v)| (q, r, v))
        .collect();
    let weights: Vec<f32> = match (args.cv, args.weight) {
        (Some(_), _) => (0..=16).map(|i| i as f32 * 0.05).collect(),
        (None, Some(w)) => vec![w],
        (None, None) => vec![mcpw_guest_default::ranking::meaning::WEIGHT],
    };
    let per_weight = sweep(args, &mut index, &qs, &ids, &weights);
    match args.cv {
        Some(k) => cross_validate(&per_weight, &weights, k),
        None => {
            let n = qs.len() as f64;
            let all = |m: usize| per_weight[0].iter().map(|q| q[m]).sum::<f64>() / n;
            println!(
                "w {:.2}: R@1 {:.3}  R@5 {:.3}  MRR@10 {:.3}",
                weights[0],
                all(0),
                all(1),
                all(2)
            );
        }
    }
}
