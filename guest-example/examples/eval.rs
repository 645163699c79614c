//! Native evaluation of the ranking profiles on a catalog and labelled queries,
//! for working on the ranking without a wasm round trip:
//! `cargo run -p mcpw-guest-default --release --example eval -- CATALOG QUERIES [PROFILE] [--misses]`
//! Metrics as `mcpw plugin bench` (top 10). `--dump FILE` writes each query's
//! top 100 with scores as JSON, for offline score-fusion experiments.

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
}

impl Args {
    /// Reads the command line: `CATALOG QUERIES [PROFILE] [--misses] [--recall] [--dump FILE]`.
    fn parse() -> Args {
        let args: Vec<String> = std::env::args().skip(1).collect();
        Args {
            catalog: args[0].clone(),
            queries: args[1].clone(),
            profile: args.get(2).filter(|a| !a.starts_with("--")).cloned(),
            misses: args.iter().any(|a| a == "--misses"),
            recall: args.iter().any(|a| a == "--recall"),
            dump_to: args
                .iter()
                .position(|a| a == "--dump")
                .and_then(|i| args.get(i + 1).cloned()),
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

fn main() {
    let args = Args::parse();
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
        let rel: Vec<&str> = q["relevant"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
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
        add_metrics(&mut sums, &ranked, &rel);
        print_misses(&args, text, &ranked, &rel);
    }
    if let Some(path) = &args.dump_to {
        std::fs::write(path, serde_json::to_string(&dump).unwrap()).unwrap();
    }
    report(&sums, qs.len(), build_ms, times);
}
